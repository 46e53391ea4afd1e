//! The second phase of a partitioned audit: the engine's cache model replayed over compact
//! cache keys, for the hits one session gets from another.
//!
//! A partitioned audit ([`super::group`]) audits each session on its own, in parallel: its
//! breaks, missed hits and losses need only the session. What the engine serves from its
//! cache does not: one session's system prompt serves the next session, and llama.cpp's slot
//! holds whatever came last. So each request also yields a [`CacheKey`]: the chained hashes of
//! its prompt's blocks (and of the reply the engine keeps after it) with its time, and
//! [`Replay`] runs the cache model of [`super::predict`] over the keys of the whole log in log
//! order, exactly as `prefixlint audit` does over the requests: the session's previous request
//! (at most [`MAX_SESSIONS`](super::session::MAX_SESSIONS) remembered, least recently used
//! out), the [`WINDOW`] most recent ones, the profile's TTL, and after a request that could not
//! be audited, nothing.
//!
//! Blocks are the profile's unit (vLLM's block, a hosted API's step; one token for
//! token-level engines): the profile caches whole units, so the number of leading blocks two
//! keys share is all it needs of their common prefix. The hashes chain (each block's hash
//! covers every token before it), so equal block `k` means equal first `(k + 1) × unit`
//! tokens.

use super::session::{Sessions, WINDOW};
use super::{RequestAudit, Seen};
use crate::cache_profile::{CacheProfile, CacheProfileKind};
use crate::error::{Error, Result};
use std::collections::VecDeque;
use std::sync::Arc;

/// One logged request as the replay needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheKey {
    pub file: String,
    pub line: usize,
    pub session: Option<String>,
    /// `None` for a request that could not be audited (the engine holds a prompt the model
    /// cannot build, so the next one is compared with nothing).
    pub blocks: Option<Arc<Blocks>>,
}

/// What the engine's cache holds after a request, as chained block hashes.
#[derive(Debug, Clone, PartialEq)]
pub struct Blocks {
    pub unit: usize,
    pub prompt_tokens: usize,
    /// Seconds since the epoch, when the log says.
    pub time: Option<f64>,
    /// The model the log names (a hosted API keeps a cache per model).
    pub model: Option<String>,
    /// How long the longest-lived entry its response wrote lives (a TTL tier), where the log
    /// says.
    pub written_ttl: Option<f64>,
    /// The cached tokens the log reports for this request, which the cost bills where the log
    /// has them (else the prediction), as a single-process audit does.
    pub logged_cached_tokens: Option<usize>,
    /// One hash per whole block of the prompt.
    pub prompt: Vec<u64>,
    /// The hashes of the blocks after those, over the prompt followed by the reply tokens
    /// the engine keeps.
    pub reply: Vec<u64>,
}

/// FNV-1a, 64 bits: stable across processes and builds (the keys travel between workers).
fn mix(mut hash: u64, token: u32) -> u64 {
    for byte in token.to_le_bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

const SEED: u64 = 0xcbf2_9ce4_8422_2325;

/// The chained hashes of the whole blocks of `tokens`, from `from` (a multiple of `unit`)
/// on, the chain carried in from the block before.
fn chain(unit: usize, tokens: impl Iterator<Item = u32>, mut hash: u64, out: &mut Vec<u64>) {
    let mut in_block = 0;
    for token in tokens {
        hash = mix(hash, token);
        in_block += 1;
        if in_block == unit {
            out.push(hash);
            in_block = 0;
        }
    }
}

impl Blocks {
    pub fn of(unit: usize, prompt: &[u32], reply: &[u32], time: Option<f64>) -> Blocks {
        let unit = unit.max(1);
        let whole = prompt.len() / unit * unit;
        let mut prompt_blocks = Vec::with_capacity(prompt.len() / unit);
        chain(
            unit,
            prompt[..whole].iter().copied(),
            SEED,
            &mut prompt_blocks,
        );
        let mut reply_blocks = Vec::new();
        let carried = prompt_blocks.last().copied().unwrap_or(SEED);
        chain(
            unit,
            prompt[whole..].iter().chain(reply).copied(),
            carried,
            &mut reply_blocks,
        );
        Blocks {
            unit,
            prompt_tokens: prompt.len(),
            time,
            model: None,
            written_ttl: None,
            logged_cached_tokens: None,
            prompt: prompt_blocks,
            reply: reply_blocks,
        }
    }

    /// Whole blocks of `this` prompt the cache holds after `self`: its prompt, then the
    /// reply it kept.
    fn shared_blocks(&self, this: &Blocks) -> usize {
        self.prompt
            .iter()
            .chain(&self.reply)
            .zip(&this.prompt)
            .take_while(|(a, b)| a == b)
            .count()
    }
}

impl CacheKey {
    pub(crate) fn audited(unit: usize, audit: &RequestAudit, seen: &Seen) -> CacheKey {
        let mut blocks = Blocks::of(unit, &seen.ids, &seen.reply_ids, seen.time);
        blocks.model = seen.model.as_deref().map(str::to_owned);
        blocks.written_ttl = seen.written_ttl;
        blocks.logged_cached_tokens = audit.logged_cached_tokens;
        CacheKey {
            file: audit.file.clone(),
            line: audit.line,
            session: audit.session.clone(),
            blocks: Some(Arc::new(blocks)),
        }
    }

    pub(crate) fn not_audited(file: &str, line: usize, session: Option<String>) -> CacheKey {
        CacheKey {
            file: file.to_owned(),
            line,
            session,
            blocks: None,
        }
    }

    /// The key as bytes, to travel between workers ([`Self::from_bytes`] reads them).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.push(FORMAT);
        put_str(&mut out, &self.file);
        out.extend((self.line as u64).to_le_bytes());
        match &self.session {
            Some(s) => {
                out.push(1);
                put_str(&mut out, s);
            }
            None => out.push(0),
        }
        let Some(b) = &self.blocks else {
            out.push(0);
            return out;
        };
        out.push(1);
        for value in [b.time, b.written_ttl] {
            match value {
                Some(t) => {
                    out.push(1);
                    out.extend(t.to_le_bytes());
                }
                None => out.push(0),
            }
        }
        match &b.model {
            Some(m) => {
                out.push(1);
                put_str(&mut out, m);
            }
            None => out.push(0),
        }
        match b.logged_cached_tokens {
            Some(n) => {
                out.push(1);
                out.extend((n as u64).to_le_bytes());
            }
            None => out.push(0),
        }
        out.extend((b.unit as u64).to_le_bytes());
        out.extend((b.prompt_tokens as u64).to_le_bytes());
        for list in [&b.prompt, &b.reply] {
            out.extend((list.len() as u64).to_le_bytes());
            for h in list {
                out.extend(h.to_le_bytes());
            }
        }
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<CacheKey> {
        let mut r = Reader(bytes);
        if r.byte()? != FORMAT {
            return Err(bad_key("an unknown format"));
        }
        let file = r.string()?;
        let line = r.number()?;
        let session = match r.byte()? {
            0 => None,
            _ => Some(r.string()?),
        };
        let blocks = match r.byte()? {
            0 => None,
            _ => {
                let mut times = [None, None];
                for t in &mut times {
                    *t = match r.byte()? {
                        0 => None,
                        _ => Some(f64::from_le_bytes(r.take(8)?.try_into().expect("8 bytes"))),
                    };
                }
                let [time, written_ttl] = times;
                let model = match r.byte()? {
                    0 => None,
                    _ => Some(r.string()?),
                };
                let logged_cached_tokens = match r.byte()? {
                    0 => None,
                    _ => Some(r.number()?),
                };
                let unit = r.number()?;
                let prompt_tokens = r.number()?;
                let mut lists = [Vec::new(), Vec::new()];
                for list in &mut lists {
                    let n = r.number()?;
                    if n > r.0.len() / 8 {
                        return Err(bad_key("a list longer than the key"));
                    }
                    *list = (0..n).map(|_| r.hash()).collect::<Result<_>>()?;
                }
                let [prompt, reply] = lists;
                if unit == 0 || prompt.len() != prompt_tokens / unit {
                    return Err(bad_key("blocks that do not match its prompt"));
                }
                Some(Arc::new(Blocks {
                    unit,
                    prompt_tokens,
                    time,
                    model,
                    written_ttl,
                    logged_cached_tokens,
                    prompt,
                    reply,
                }))
            }
        };
        if !r.0.is_empty() {
            return Err(bad_key("bytes after its end"));
        }
        Ok(CacheKey {
            file,
            line,
            session,
            blocks,
        })
    }
}

/// The first byte of a key's bytes: changes with their layout.
const FORMAT: u8 = 2;

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u64).to_le_bytes());
    out.extend(s.as_bytes());
}

fn bad_key(why: &str) -> Error {
    Error::input(format!("audit: a cache key does not read back: {why}"))
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.0.len() < n {
            return Err(bad_key("it ends early"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn byte(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn number(&mut self) -> Result<usize> {
        let n = u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes"));
        usize::try_from(n).map_err(|_| bad_key("a number out of range"))
    }
    fn hash(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn string(&mut self) -> Result<String> {
        let n = self.number()?;
        let bytes = self.take(n)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| bad_key("text that is not UTF-8"))
    }
}

/// The engine's cache model over the keys of a whole log, fed in log order.
pub struct Replay {
    profile: CacheProfile,
    /// Each session's last request (`None` after one that could not be audited).
    sessions: Sessions<Option<Arc<Blocks>>>,
    window: VecDeque<Arc<Blocks>>,
    /// llama.cpp's one slot: the last request audited.
    slot: Option<Arc<Blocks>>,
    predicted_cached_tokens: usize,
    /// The cached tokens the cost bills: logged where the log says, else predicted.
    billed_cached_tokens: usize,
}

impl Replay {
    pub fn new(profile: CacheProfile) -> Replay {
        Replay {
            profile,
            sessions: Sessions::default(),
            window: VecDeque::new(),
            slot: None,
            predicted_cached_tokens: 0,
            billed_cached_tokens: 0,
        }
    }

    /// Takes the next key in log order; the request's predicted cached tokens (`None` for one
    /// that was not audited).
    pub fn feed(&mut self, key: &CacheKey) -> Result<Option<usize>> {
        let Some(this) = &key.blocks else {
            self.slot = None;
            if let Some(seen) = key
                .session
                .as_deref()
                .and_then(|s| self.sessions.get_mut(s))
            {
                *seen = None;
            }
            return Ok(None);
        };
        let unit = self.profile.unit_tokens.max(1);
        if this.unit != unit {
            return Err(Error::input(format!(
                "{}:{}: its cache key has {}-token blocks, the engine profile {unit}: audit and replay under the same engine",
                key.file, key.line, this.unit
            )));
        }
        let shared_blocks = if self.profile.kind == CacheProfileKind::LlamaCpp {
            self.slot.as_ref().map_or(0, |s| s.shared_blocks(this))
        } else {
            // Without a session, the earlier request is one of the window's.
            let earlier = key
                .session
                .as_deref()
                .and_then(|s| self.sessions.get(s).cloned().flatten());
            earlier
                .iter()
                .chain(&self.window)
                .filter(|s| !expired(&self.profile, s, this.time))
                // A hosted API keeps a cache per model.
                .filter(|s| match (s.model.as_deref(), this.model.as_deref()) {
                    (Some(a), Some(b)) => a == b,
                    _ => true,
                })
                .map(|s| s.shared_blocks(this))
                .max()
                .unwrap_or(0)
        };
        let predicted = self
            .profile
            .cached_tokens(shared_blocks * unit, this.prompt_tokens);
        self.predicted_cached_tokens += predicted;
        self.billed_cached_tokens += this
            .logged_cached_tokens
            .unwrap_or(predicted)
            .min(this.prompt_tokens);
        if let Some(s) = &key.session {
            self.sessions.insert(s.clone(), Some(this.clone()));
        }
        self.window.push_back(this.clone());
        if self.window.len() > WINDOW {
            self.window.pop_front();
        }
        self.slot = Some(this.clone());
        Ok(Some(predicted))
    }

    /// The summary's `predicted_cached_tokens` over the keys fed so far.
    pub fn predicted_cached_tokens(&self) -> usize {
        self.predicted_cached_tokens
    }

    /// The summary's `cost` at the profile's prices, with the replay's cached tokens: the
    /// parts' costs were billed on what each session group saw alone.
    pub fn cost(
        &self,
        prompt_tokens: usize,
        lost_by_cause: &std::collections::BTreeMap<String, usize>,
    ) -> Option<crate::cost::AuditCost> {
        crate::cost::audit_cost(
            &self.profile,
            prompt_tokens,
            self.billed_cached_tokens,
            lost_by_cause,
        )
    }
}

/// Whether what `seen` wrote is gone by `now`, as [`super::predict::seen_expired`] says.
fn expired(profile: &CacheProfile, seen: &Blocks, now: Option<f64>) -> bool {
    use super::predict;
    match (
        predict::ttl_seconds(profile),
        seen.written_ttl,
        seen.time,
        now,
    ) {
        (Some(ttl), Some(tier), Some(then), Some(now)) => now - then > ttl.max(tier),
        _ => predict::expired(profile, seen.time, now),
    }
}

/// Log order: by file, then line (a log split into shards sorts when the shards' names do).
pub fn log_order(keys: &mut [CacheKey]) {
    keys.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(line: usize, session: Option<&str>, prompt: &[u32], reply: &[u32]) -> CacheKey {
        CacheKey {
            file: "log.jsonl".into(),
            line,
            session: session.map(str::to_owned),
            blocks: Some(Arc::new(Blocks::of(4, prompt, reply, Some(line as f64)))),
        }
    }

    #[test]
    fn shared_blocks_are_the_whole_blocks_of_the_common_prefix() {
        let a = Blocks::of(4, &[1, 2, 3, 4, 5, 6, 7, 8, 9], &[10, 11, 12], None);
        // 9 prompt tokens: 2 whole blocks; the reply completes the third.
        assert_eq!((a.prompt.len(), a.reply.len()), (2, 1));
        let same_then_reply =
            Blocks::of(4, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13], &[], None);
        assert_eq!(a.shared_blocks(&same_then_reply), 3);
        let differs_in_second = Blocks::of(4, &[1, 2, 3, 4, 5, 0, 7, 8, 9, 10, 11, 12], &[], None);
        assert_eq!(a.shared_blocks(&differs_in_second), 1);
        let short = Blocks::of(4, &[1, 2, 3], &[], None);
        assert_eq!(a.shared_blocks(&short), 0);
    }

    #[test]
    fn keys_read_back_and_bad_bytes_are_an_error() {
        for k in [
            key(7, Some("s\u{e9}"), &[1, 2, 3, 4, 5], &[6, 7, 8]),
            key(8, None, &[], &[]),
            CacheKey::not_audited("a.jsonl", 3, None),
        ] {
            let bytes = k.to_bytes();
            assert_eq!(CacheKey::from_bytes(&bytes).unwrap(), k);
            for cut in 0..bytes.len() {
                assert!(CacheKey::from_bytes(&bytes[..cut]).is_err(), "cut at {cut}");
            }
        }
    }

    #[test]
    fn the_replay_serves_one_session_from_another_and_forgets_after_a_failure() {
        let profile = CacheProfile::from_config(
            &crate::cache_profile::CacheProfileConfig::parse_cli("vllm:block_size=4").unwrap(),
            "--engine",
        )
        .unwrap();
        let mut replay = Replay::new(profile);
        let system = [1, 2, 3, 4, 5, 6, 7, 8];
        let a1 = key(1, Some("a"), &[&system[..], &[20, 21]].concat(), &[]);
        let b1 = key(
            2,
            Some("b"),
            &[&system[..], &[30, 31, 32, 33, 34]].concat(),
            &[],
        );
        assert_eq!(replay.feed(&a1).unwrap(), Some(0));
        // Another session's system prompt: two blocks, at most n − 1.
        assert_eq!(replay.feed(&b1).unwrap(), Some(8));
        let failed = CacheKey::not_audited("log.jsonl", 3, Some("b".into()));
        assert_eq!(replay.feed(&failed).unwrap(), None);
        assert_eq!(replay.predicted_cached_tokens(), 8);
    }
}
