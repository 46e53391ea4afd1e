//! The replay: requests arrive at their logged times (or at `--rate`), a router picks a
//! replica, the replica admits the request when its blocks are free (else it waits, first
//! come first served), the request holds them for its run, and finishing gives them back.
//! Completions due at or before an arrival happen first. Each request's outcome is decided
//! when it is admitted; outcomes are handed on in log order.

use super::block_pool::Gone;
use super::prepare::Prepared;
use super::replica::{cacheable_blocks, Admitted, Fit, Replica, Running};
use serde::Serialize;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

/// `--router`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Router {
    /// Round robin, request by request.
    Rr,
    /// A session always goes to the same replica (by a hash of its id; without a session,
    /// of its first block).
    Affinity,
    /// The replica with the longest cached prefix for the request; ties to the one running
    /// fewest requests.
    Prefix,
}

/// How long requests run.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// `--rate`: requests per second, replacing the logged times.
    pub rate: Option<f64>,
    /// Tokens per second a request generates, where its duration is not logged.
    pub decode_rate: f64,
    pub ttl: Option<f64>,
    /// `--sequential`: one request at a time in log order, each arriving when the one
    /// before has finished.
    pub sequential: bool,
}

/// Why part of a prompt was not served from the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    NeverShared,
    Evicted,
    Routed,
    Expired,
}

impl Reason {
    pub fn name(self) -> &'static str {
        match self {
            Reason::NeverShared => "never-shared",
            Reason::Evicted => "evicted",
            Reason::Routed => "routed",
            Reason::Expired => "expired",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Uncached {
    pub tokens: usize,
    pub reason: Reason,
    /// `evicted`: the blocks the replica evicted after this prefix left it (the pressure:
    /// a cache that much larger would still have held it, under the same traffic).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evicted_since_blocks: Option<u64>,
}

/// One request's outcome. Field names are the JSON contract.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub file: String,
    pub line: usize,
    pub session: Option<String>,
    pub replica: usize,
    pub prompt_tokens: usize,
    pub predicted_cached_tokens: usize,
    pub uncached: Vec<Uncached>,
    /// What the server reported, where the log says: a check of the model on real traffic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logged_cached_tokens: Option<usize>,
    /// Seconds it waited for free blocks (or a slot) after it arrived.
    pub queued_seconds: f64,
}

/// The figures over the whole replay. Field names are the JSON contract.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub requests: usize,
    pub prompt_tokens: usize,
    pub predicted_cached_tokens: usize,
    pub hit_rate: f64,
    pub evicted_blocks: u64,
    pub peak_running: usize,
    pub uncached_tokens_by_reason: BTreeMap<&'static str, usize>,
    /// Requests that waited for free blocks, and the longest wait.
    pub queued_requests: usize,
    pub max_queued_seconds: f64,
    /// Requests larger than one replica's whole cache: not replayed.
    pub too_large: usize,
    /// Over the requests whose log has the server's cached tokens: how many, the tokens it
    /// reported, and on how many the prediction is the same.
    pub requests_with_logged_cache: usize,
    pub logged_cached_tokens: usize,
    pub requests_predicted_as_logged: usize,
    /// The hit rate with unbounded memory, in the same replay order (vLLM's block lookup
    /// over every request read); none for the token-granular caches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub infinite_cache_hit_rate: Option<f64>,
    /// Requests logged in the same whole second as the request before them: their order
    /// in time is unknown, and they are replayed as if sent together.
    pub same_second_requests: usize,
}

struct Finish {
    at: f64,
    seq: u64,
    replica: usize,
    running: Running,
}

impl PartialEq for Finish {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Finish {}
impl PartialOrd for Finish {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Finish {
    // A min-heap on (time, admission order).
    fn cmp(&self, other: &Self) -> Ordering {
        other.at.total_cmp(&self.at).then(other.seq.cmp(&self.seq))
    }
}

struct Waiting {
    index: u64,
    arrived: f64,
    request: Prepared,
}

pub struct Fleet {
    pub replicas: Vec<Replica>,
    router: Router,
    timing: Timing,
    block: usize,
    finishing: BinaryHeap<Finish>,
    waiting: Vec<VecDeque<Waiting>>,
    /// Outcomes decided, waiting for the earlier ones to be handed on.
    decided: BTreeMap<u64, Option<Outcome>>,
    next_out: u64,
    next_in: u64,
    admissions: u64,
    clock: f64,
    rr: usize,
    pub summary: Summary,
    running: usize,
}

impl Fleet {
    pub fn new(replicas: Vec<Replica>, router: Router, timing: Timing, block: usize) -> Fleet {
        let n = replicas.len();
        Fleet {
            replicas,
            router,
            timing,
            block,
            finishing: BinaryHeap::new(),
            waiting: (0..n).map(|_| VecDeque::new()).collect(),
            decided: BTreeMap::new(),
            next_out: 0,
            next_in: 0,
            admissions: 0,
            clock: f64::NEG_INFINITY,
            rr: 0,
            summary: Summary::default(),
            running: 0,
        }
    }

    /// The arrival time of the next request: its logged time (kept in log order: an
    /// earlier time than the previous request's counts as the same time), else `--rate`;
    /// with `--sequential`, when every request before it has finished.
    pub fn arrival(&self, request: &Prepared) -> Option<f64> {
        if self.timing.sequential {
            let quiet = self
                .finishing
                .iter()
                .map(|f| f.at)
                .fold(self.clock.max(0.0), f64::max);
            return Some(quiet);
        }
        let at = match self.timing.rate {
            Some(rate) => self.next_in as f64 / rate,
            None => request.time?,
        };
        Some(at.max(self.clock))
    }

    /// One request arrives at `at` (from [`Fleet::arrival`]); outcomes now decided in log
    /// order go to `out`.
    pub fn arrive(&mut self, request: Prepared, at: f64, out: &mut impl FnMut(Outcome)) {
        self.advance(at);
        self.clock = at;
        let index = self.next_in;
        self.next_in += 1;
        if let Some(ttl) = self.timing.ttl {
            for r in &mut self.replicas {
                r.expire(at - ttl);
            }
        }
        let replica = self.route(&request);
        if let Fit::Never(_) = self.replicas[replica].fits(&request) {
            self.summary.too_large += 1;
            self.decided.insert(index, None);
        } else if self.waiting[replica].is_empty() {
            if !self.try_admit(replica, index, at, &request, at) {
                self.waiting[replica].push_back(Waiting {
                    index,
                    arrived: at,
                    request,
                });
            }
        } else {
            self.waiting[replica].push_back(Waiting {
                index,
                arrived: at,
                request,
            });
        }
        self.hand_on(out);
    }

    /// Runs every request to its end.
    pub fn finish(&mut self, out: &mut impl FnMut(Outcome)) {
        self.advance(f64::INFINITY);
        self.hand_on(out);
        let s = &mut self.summary;
        s.evicted_blocks = self.replicas.iter().map(|r| r.evicted_blocks).sum();
        s.hit_rate = if s.prompt_tokens == 0 {
            0.0
        } else {
            s.predicted_cached_tokens as f64 / s.prompt_tokens as f64
        };
    }

    /// Completions due by `until`, each letting waiting requests in.
    fn advance(&mut self, until: f64) {
        while self.finishing.peek().is_some_and(|f| f.at <= until) {
            let f = self.finishing.pop().expect("peeked");
            self.replicas[f.replica].release(f.running, f.at);
            self.running -= 1;
            if let Some(ttl) = self.timing.ttl {
                self.replicas[f.replica].expire(f.at - ttl);
            }
            while let Some(w) = self.waiting[f.replica].pop_front() {
                if !self.try_admit(f.replica, w.index, w.arrived, &w.request, f.at) {
                    self.waiting[f.replica].push_front(w);
                    break;
                }
            }
        }
    }

    fn route(&mut self, request: &Prepared) -> usize {
        let n = self.replicas.len();
        if n == 1 {
            return 0;
        }
        match self.router {
            Router::Rr => {
                let r = self.rr % n;
                self.rr += 1;
                r
            }
            Router::Affinity => {
                let key = match &request.session {
                    Some(s) => super::block_pool::block_hash(
                        0,
                        &s.bytes().map(u32::from).collect::<Vec<_>>(),
                    ),
                    None => request.hashes.first().copied().unwrap_or(0),
                };
                (key % n as u64) as usize
            }
            Router::Prefix => (0..n)
                .max_by_key(|&i| {
                    let r = &self.replicas[i];
                    (
                        r.would_hit(request),
                        std::cmp::Reverse(r.running + self.waiting[i].len()),
                        std::cmp::Reverse(i),
                    )
                })
                .unwrap_or(0),
        }
    }

    fn try_admit(
        &mut self,
        replica: usize,
        index: u64,
        arrived: f64,
        request: &Prepared,
        now: f64,
    ) -> bool {
        let Some(admitted) = self.replicas[replica].admit(request) else {
            return false;
        };
        let outcome = self.outcome(replica, request, &admitted, now - arrived);
        let duration = request
            .duration
            .unwrap_or(request.generated as f64 / self.timing.decode_rate);
        self.admissions += 1;
        self.finishing.push(Finish {
            at: now + duration.max(0.0),
            seq: self.admissions,
            replica,
            running: admitted.running,
        });
        self.running += 1;
        self.summary.peak_running = self.summary.peak_running.max(self.running);
        self.decided.insert(index, Some(outcome));
        true
    }

    /// The cached tokens and, for the rest, why: block by block after the hit, routed (a
    /// replica not chosen holds it), evicted or expired (it left this one), else never
    /// shared; the partial last block and the last token are never shared. A hit that ends
    /// inside a block (SGLang's tree, llama.cpp's slots) gives that block's rest the block's
    /// reason.
    fn outcome(
        &mut self,
        replica: usize,
        r: &Prepared,
        admitted: &Admitted,
        queued: f64,
    ) -> Outcome {
        let block = self.block;
        let cached = admitted.cached_tokens;
        let mut uncached: Vec<Uncached> = Vec::new();
        let mut push = |tokens: usize, reason: Reason, since: Option<u64>| {
            if tokens == 0 {
                return;
            }
            match uncached.last_mut() {
                Some(last) if last.reason == reason => {
                    last.tokens += tokens;
                    if let (Some(a), Some(b)) = (last.evicted_since_blocks, since) {
                        last.evicted_since_blocks = Some(a.min(b));
                    }
                }
                _ => uncached.push(Uncached {
                    tokens,
                    reason,
                    evicted_since_blocks: since,
                }),
            }
        };
        let cacheable = cacheable_blocks(r.prompt_tokens, block).min(r.hashes.len());
        let first = cached / block;
        let mut covered = cached;
        if first < cacheable {
            // The token-granular caches answer "held elsewhere" by a prefix length, asked
            // once per request.
            let prefix_elsewhere = if self.replicas.len() > 1 {
                self.replicas
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| i != replica)
                    .map(|(_, other)| other.holds_prefix(r))
                    .max()
                    .unwrap_or(0)
            } else {
                0
            };
            for (index, &hash) in r.hashes[..cacheable].iter().enumerate().skip(first) {
                let elsewhere = prefix_elsewhere >= (index + 1) * block
                    || self
                        .replicas
                        .iter()
                        .enumerate()
                        .any(|(i, other)| i != replica && other.holds(hash));
                let (reason, since) = if elsewhere {
                    (Reason::Routed, None)
                } else {
                    match self.replicas[replica].gone(hash) {
                        Some((Gone::Evicted, since)) => (Reason::Evicted, Some(since)),
                        Some((Gone::Expired, _)) => (Reason::Expired, None),
                        None => (Reason::NeverShared, None),
                    }
                };
                let end = (index + 1) * block;
                push(end - covered, reason, since);
                covered = end;
            }
        }
        push(
            r.prompt_tokens.saturating_sub(covered),
            Reason::NeverShared,
            None,
        );
        let s = &mut self.summary;
        s.requests += 1;
        s.prompt_tokens += r.prompt_tokens;
        s.predicted_cached_tokens += cached;
        for u in &uncached {
            *s.uncached_tokens_by_reason
                .entry(u.reason.name())
                .or_default() += u.tokens;
        }
        if let Some(logged) = r.logged_cached_tokens {
            s.requests_with_logged_cache += 1;
            s.logged_cached_tokens += logged;
            s.requests_predicted_as_logged += usize::from(logged == cached);
        }
        if queued > 0.0 {
            s.queued_requests += 1;
            s.max_queued_seconds = s.max_queued_seconds.max(queued);
        }
        Outcome {
            file: r.file.to_string(),
            line: r.line,
            session: r.session.clone(),
            replica,
            prompt_tokens: r.prompt_tokens,
            predicted_cached_tokens: cached,
            uncached,
            logged_cached_tokens: r.logged_cached_tokens,
            queued_seconds: queued,
        }
    }

    fn hand_on(&mut self, out: &mut impl FnMut(Outcome)) {
        while let Some(entry) = self.decided.first_entry() {
            if *entry.key() != self.next_out {
                break;
            }
            if let Some(o) = entry.remove() {
                out(o);
            }
            self.next_out += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate::block_pool::prompt_hashes;
    use std::sync::Arc;

    const BLOCK: usize = 4;

    /// A request of `ids` (a prompt), generating `generated` tokens, arriving at `time`.
    fn request(line: usize, session: &str, ids: &[u32], generated: usize, time: f64) -> Prepared {
        Prepared {
            file: Arc::from("log"),
            line,
            session: Some(session.into()),
            prompt_tokens: ids.len(),
            hashes: prompt_hashes(ids, BLOCK),
            ids: Some(ids.to_vec()),
            generated,
            time: Some(time),
            duration: None,
            logged_cached_tokens: None,
        }
    }

    fn fleet(replicas: usize, blocks: usize, router: Router, ttl: Option<f64>) -> Fleet {
        Fleet::new(
            (0..replicas)
                .map(|_| Replica::vllm(blocks, BLOCK, ttl.is_some()))
                .collect(),
            router,
            Timing {
                rate: None,
                decode_rate: 1.0,
                ttl,
                sequential: false,
            },
            BLOCK,
        )
    }

    fn replay(fleet: &mut Fleet, requests: Vec<Prepared>) -> Vec<Outcome> {
        let mut out = Vec::new();
        for r in requests {
            let at = fleet.arrival(&r).unwrap();
            fleet.arrive(r, at, &mut |o| out.push(o));
        }
        fleet.finish(&mut |o| out.push(o));
        out
    }

    fn reasons(o: &Outcome) -> Vec<(usize, &'static str)> {
        o.uncached
            .iter()
            .map(|u| (u.tokens, u.reason.name()))
            .collect()
    }

    const SHARED: [u32; 13] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13];

    #[test]
    fn a_repeat_hits_whole_blocks_and_never_its_last_token() {
        let mut f = fleet(1, 20, Router::Rr, None);
        let out = replay(
            &mut f,
            vec![
                request(1, "a", &SHARED, 0, 0.0),
                request(2, "a", &SHARED, 0, 10.0),
            ],
        );
        assert_eq!(out[0].predicted_cached_tokens, 0);
        assert_eq!(reasons(&out[0]), [(13, "never-shared")]);
        assert_eq!(out[1].predicted_cached_tokens, 12);
        assert_eq!(reasons(&out[1]), [(1, "never-shared")]);
        assert_eq!(f.summary.prompt_tokens, 26);
        assert_eq!(f.summary.predicted_cached_tokens, 12);
    }

    #[test]
    fn round_robin_sends_the_repeat_elsewhere() {
        // vLLM's block pool, SGLang's tree and llama.cpp's slots alike.
        let fleets = [
            ("vllm", fleet(2, 20, Router::Rr, None)),
            ("sglang", token_fleet(2, Some(100))),
            ("llama.cpp", token_fleet(2, None)),
        ];
        for (engine, mut f) in fleets {
            let out = replay(
                &mut f,
                vec![
                    request(1, "a", &SHARED, 0, 0.0),
                    request(2, "a", &SHARED, 0, 10.0),
                ],
            );
            assert_eq!(out[1].replica, 1, "{engine}");
            assert_eq!(out[1].predicted_cached_tokens, 0, "{engine}");
            assert_eq!(
                reasons(&out[1]),
                [(12, "routed"), (1, "never-shared")],
                "{engine}"
            );
            assert_eq!(f.summary.evicted_blocks, 0, "{engine}");
        }
        // The prefix router and session affinity keep it where it is cached.
        for router in [Router::Prefix, Router::Affinity] {
            let mut f = fleet(2, 20, router, None);
            let out = replay(
                &mut f,
                vec![
                    request(1, "a", &SHARED, 0, 0.0),
                    request(2, "a", &SHARED, 0, 10.0),
                ],
            );
            assert_eq!(out[1].predicted_cached_tokens, 12, "{router:?}");
        }
    }

    #[test]
    fn an_evicted_prefix_says_so_and_how_much_was_evicted_after_it() {
        // 5 usable blocks: the 13-token prompt takes 4; another 4-block prompt evicts 3 of
        // them, tail first (the partial block and one unused block go first).
        let mut f = fleet(1, 6, Router::Rr, None);
        let other: Vec<u32> = (100..116).collect();
        let out = replay(
            &mut f,
            vec![
                request(1, "a", &SHARED, 0, 0.0),
                request(2, "b", &other, 0, 10.0),
                request(3, "a", &SHARED, 0, 20.0),
            ],
        );
        let third = &out[2];
        assert_eq!(third.predicted_cached_tokens, 4, "{third:?}");
        assert_eq!(reasons(third), [(8, "evicted"), (1, "never-shared")]);
        assert!(third.uncached[0].evicted_since_blocks.is_some());
        // Two of its blocks, then three of the other prompt's for the third request.
        assert_eq!(f.summary.evicted_blocks, 5);
    }

    /// A fleet of SGLang trees of `tokens` each, or of llama.cpp replicas of one slot.
    fn token_fleet(replicas: usize, tokens: Option<usize>) -> Fleet {
        Fleet::new(
            (0..replicas)
                .map(|_| match tokens {
                    Some(t) => Replica::radix(t, BLOCK),
                    None => Replica::slots(1, None, 0.0, BLOCK),
                })
                .collect(),
            Router::Rr,
            Timing {
                rate: None,
                decode_rate: 1.0,
                ttl: None,
                sequential: false,
            },
            BLOCK,
        )
    }

    /// Shares `SHARED`'s first 6 tokens (a hit that ends inside the second block).
    const FORK: [u32; 16] = [1, 2, 3, 4, 5, 6, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59];

    #[test]
    fn an_evicted_radix_leaf_says_evicted_from_the_block_the_hit_ends_in() {
        // 24 tokens: the fork splits SHARED's node at 6; the third prompt (7 new tokens)
        // evicts the least recent leaf, SHARED's tokens 6..13 (blocks 1 and 2), and the
        // repeat evicts the fork's 10 tokens.
        let mut f = token_fleet(1, Some(24));
        let other: Vec<u32> = (200..207).collect();
        let out = replay(
            &mut f,
            vec![
                request(1, "a", &SHARED, 0, 0.0),
                request(2, "b", &FORK, 0, 10.0),
                request(3, "c", &other, 0, 20.0),
                request(4, "a", &SHARED, 0, 30.0),
            ],
        );
        assert_eq!(reasons(&out[2]), [(7, "never-shared")]);
        let repeat = &out[3];
        assert_eq!(repeat.predicted_cached_tokens, 6, "{repeat:?}");
        // The hit ends inside block 1: its 2 other tokens and block 2 were evicted.
        assert_eq!(reasons(repeat), [(6, "evicted"), (1, "never-shared")]);
        // 7 tokens (1 block) evicted with it, 10 more (17: 4 blocks) since.
        assert_eq!(repeat.uncached[0].evicted_since_blocks, Some(3));
        assert_eq!(f.summary.evicted_blocks, 17 / BLOCK as u64);
        assert_eq!(f.summary.uncached_tokens_by_reason["evicted"], 6);
    }

    #[test]
    fn a_slot_given_to_another_request_evicts_its_tokens_after_the_common_prefix() {
        // One slot: the fork keeps SHARED's first 6 tokens and overwrites 7; the repeat
        // reuses 6 and overwrites the fork's other 10.
        let mut f = token_fleet(1, None);
        let out = replay(
            &mut f,
            vec![
                request(1, "a", &SHARED, 0, 0.0),
                request(2, "b", &FORK, 0, 10.0),
                request(3, "a", &SHARED, 0, 20.0),
            ],
        );
        assert_eq!(out[1].predicted_cached_tokens, 6);
        // The fork's own blocks were never here.
        assert_eq!(reasons(&out[1]), [(10, "never-shared")]);
        let repeat = &out[2];
        assert_eq!(repeat.predicted_cached_tokens, 6, "{repeat:?}");
        assert_eq!(reasons(repeat), [(6, "evicted"), (1, "never-shared")]);
        assert_eq!(repeat.uncached[0].evicted_since_blocks, Some(3));
        assert_eq!(f.summary.evicted_blocks, 17 / BLOCK as u64);
    }

    #[test]
    fn ttl_expires_an_unused_prefix() {
        let mut f = fleet(1, 20, Router::Rr, Some(5.0));
        let out = replay(
            &mut f,
            vec![
                request(1, "a", &SHARED, 0, 0.0),
                request(2, "a", &SHARED, 0, 100.0),
            ],
        );
        assert_eq!(out[1].predicted_cached_tokens, 0);
        assert_eq!(reasons(&out[1]), [(12, "expired"), (1, "never-shared")]);
    }

    #[test]
    fn a_request_waits_for_blocks_and_overlapping_requests_count_as_running() {
        // 5 usable blocks; each request holds 4 (13 prompt + 2 generated − 1 = 14 tokens)
        // for 2 s at one token per second.
        let mut f = fleet(1, 6, Router::Rr, None);
        let other: Vec<u32> = (100..113).collect();
        let out = replay(
            &mut f,
            vec![
                request(1, "a", &SHARED, 2, 0.0),
                request(2, "b", &other, 2, 1.0),
            ],
        );
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].queued_seconds, 1.0);
        assert_eq!(f.summary.peak_running, 1);
        assert_eq!(f.summary.queued_requests, 1);
        // With room for both, they overlap.
        let mut f = fleet(1, 20, Router::Rr, None);
        replay(
            &mut f,
            vec![
                request(1, "a", &SHARED, 2, 0.0),
                request(2, "b", &other, 2, 1.0),
            ],
        );
        assert_eq!(f.summary.peak_running, 2);
    }

    #[test]
    fn a_request_larger_than_the_cache_is_not_replayed() {
        let mut f = fleet(1, 3, Router::Rr, None);
        let out = replay(&mut f, vec![request(1, "a", &SHARED, 0, 0.0)]);
        assert!(out.is_empty());
        assert_eq!(f.summary.too_large, 1);
    }
}
