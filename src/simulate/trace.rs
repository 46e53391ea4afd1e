//! Block-hash traces: the field's shared traffic, which carries no text, only a hash per
//! block of prompt tokens (docs/simulate.md, "Block-hash traces").
//!
//! - Mooncake (`{"timestamp" ms, "input_length", "output_length", "hash_ids"}` a line; 512
//!   tokens a hash unless `--trace-block-size` says otherwise);
//! - Qwen-Bailian (the same fields, `timestamp` in seconds, `chat_id`, `parent_chat_id`,
//!   `turn`, `type`; 16 tokens a hash);
//! - SemiAnalysis's Claude Code sessions (one row a session: `requests[{t, model, in, out,
//!   hash_ids, api_time}]`, subagents' requests nested; the row's `block_size`, else 64).
//!
//! Each request becomes a [`Prepared`] whose hashes are the engine's blocks ([`engine_hashes`]):
//! an engine block's key chains every trace hash up to the one holding its last token, so a
//! block is shared only when its whole prefix is. The file is read and parsed on its own
//! thread, a batch ahead of the replay; memory holds a batch of requests (ids, not tokens).

use super::block_pool::block_hash;
use super::prepare::Prepared;
use crate::audit::input::{self, SkipLog, Skipped};
use crate::error::{Error, Result};
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use std::collections::HashMap;
use std::io::BufRead;
use std::sync::Arc;

/// A block-hash trace format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TraceFormat {
    Mooncake,
    Bailian,
    Semianalysis,
}

impl TraceFormat {
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Mooncake => "mooncake",
            TraceFormat::Bailian => "bailian",
            TraceFormat::Semianalysis => "semianalysis",
        }
    }

    /// Tokens a hash covers where neither the row nor `--trace-block-size` says.
    pub fn default_block_size(self) -> usize {
        match self {
            TraceFormat::Mooncake => 512,
            TraceFormat::Bailian => 16,
            TraceFormat::Semianalysis => 64,
        }
    }
}

/// What a file's first line looks like: a block-hash trace of a format, or not one (a
/// request log, read as `audit` reads it).
pub fn detect_line(line: &[u8]) -> Option<TraceFormat> {
    let value: serde_json::Value = serde_json::from_slice(line).ok()?;
    let object = value.as_object()?;
    if object.contains_key("hash_ids") && object.contains_key("input_length") {
        let bailian = ["chat_id", "parent_chat_id", "turn"]
            .iter()
            .any(|k| object.contains_key(*k));
        return Some(if bailian {
            TraceFormat::Bailian
        } else {
            TraceFormat::Mooncake
        });
    }
    let requests = object.get("requests")?.as_array()?;
    requests
        .iter()
        .any(|r| r.get("hash_ids").is_some() || r.get("requests").is_some())
        .then_some(TraceFormat::Semianalysis)
}

/// How many bytes of a file are looked at to tell its format: a session row of a
/// SemiAnalysis trace is often longer, and is then told by its opening keys.
const SNIFF_BYTES: usize = 1 << 16;

/// The trace format of `file` (gzip or plain), or `None` for a request log. Stdin is not
/// looked into (it cannot be read twice): `--input-format` names a trace there.
pub fn detect_file(file: &str) -> Result<Option<TraceFormat>> {
    if file == "-" {
        return Ok(None);
    }
    let mut reader = input::open(file)?;
    let mut head = Vec::with_capacity(4096);
    loop {
        let chunk = reader.fill_buf().map_err(|e| Error::io(file, e))?;
        if chunk.is_empty() {
            break;
        }
        let take = chunk.len().min(SNIFF_BYTES - head.len());
        head.extend_from_slice(&chunk[..take]);
        reader.consume(take);
        if head.len() >= SNIFF_BYTES || memchr::memchr(b'\n', &head).is_some() {
            break;
        }
    }
    let text = head.trim_ascii_start();
    match memchr::memchr(b'\n', text) {
        Some(end) => Ok(detect_line(&text[..end])),
        None if text.len() < SNIFF_BYTES => Ok(detect_line(text)),
        // A first line longer than the window: a session row opens with its keys.
        None => Ok((memchr::memmem::find(text, b"\"requests\"").is_some()
            && memchr::memmem::find(text, b"\"hash_ids\"").is_some())
        .then_some(TraceFormat::Semianalysis)),
    }
}

/// How a trace is read.
#[derive(Debug, Clone)]
pub struct TraceReading<'a> {
    pub inputs: &'a [String],
    pub format: TraceFormat,
    /// `--trace-block-size`: tokens a hash covers, where the format (or row) does not say.
    pub trace_block_size: Option<usize>,
    /// The engine's block size.
    pub block_size: usize,
    pub max_line_bytes: usize,
}

/// The most engine blocks one request may have (a guard against a line that claims a
/// prompt far longer than any cache): 4M blocks, 32 MiB of hashes.
const MAX_REQUEST_BLOCKS: usize = 1 << 22;

/// The longest prompt or reply a trace line may claim, in tokens.
const MAX_TOKENS: u64 = 1 << 40;

/// The engine's block keys for a prompt of `tokens` tokens that the trace describes with
/// `ids`, a hash per `trace_block` tokens (the last may cover a partial block), for blocks
/// of `block` tokens, appended to `out`.
///
/// Engine block `j` holds tokens `[j·block, (j+1)·block)`. Its key chains (from
/// `namespace`) every trace hash up to `m`, the trace block holding its last token, then
/// the number of that block's tokens it covers. So two prompts share engine block `j` when
/// they share trace blocks `0..=m`; when `block` does not divide the trace's blocks, a
/// block that ends inside trace block `m` is shared only if all of `m` is (the trace says
/// nothing finer): a lower bound. Only full engine blocks get keys (vLLM hashes full blocks
/// only), and only those the trace's hashes cover.
pub fn engine_hashes(
    ids: &[u64],
    tokens: usize,
    trace_block: usize,
    block: usize,
    namespace: u64,
    out: &mut Vec<u64>,
) {
    let covered = tokens.min(ids.len().saturating_mul(trace_block));
    let full = covered / block;
    let mut chain = namespace;
    let mut chained = 0;
    out.reserve(full);
    for j in 0..full {
        let end = (j + 1) * block;
        let m = (end - 1) / trace_block;
        while chained <= m {
            let id = ids[chained];
            chain = block_hash(chain, &[id as u32, (id >> 32) as u32]);
            chained += 1;
        }
        out.push(block_hash(chain, &[(end - m * trace_block) as u32]));
    }
}

/// The engine blocks a request of `tokens` prompt tokens has, capped by what `ids` cover.
fn engine_blocks(ids: usize, tokens: usize, trace_block: usize, block: usize) -> usize {
    tokens.min(ids.saturating_mul(trace_block)) / block
}

/// A hash id as traces write it: an integer (signed or not), or a string (hashed).
struct HashId(u64);

impl<'de> Deserialize<'de> for HashId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = HashId;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a hash id (an integer or a string)")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<HashId, E> {
                Ok(HashId(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<HashId, E> {
                Ok(HashId(v as u64))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<HashId, E> {
                Ok(HashId(text_id(v)))
            }
        }
        d.deserialize_any(V)
    }
}

/// A list of hash ids, read straight into `u64`s.
struct HashIds(Vec<u64>);

impl<'de> Deserialize<'de> for HashIds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = HashIds;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of hash ids")
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<HashIds, A::Error> {
                let mut ids = Vec::with_capacity(seq.size_hint().unwrap_or(16));
                while let Some(HashId(id)) = seq.next_element()? {
                    ids.push(id);
                }
                Ok(HashIds(ids))
            }
        }
        d.deserialize_seq(V)
    }
}

/// A string id's 64 bits.
fn text_id(text: &str) -> u64 {
    let units: Vec<u32> = text.bytes().map(u32::from).collect();
    block_hash(0x5EED, &units)
}

#[derive(Deserialize)]
struct FlatLine {
    timestamp: Option<f64>,
    input_length: u64,
    #[serde(default)]
    output_length: u64,
    hash_ids: HashIds,
    chat_id: Option<HashId>,
    parent_chat_id: Option<HashId>,
}

#[derive(Deserialize)]
struct SessionRow {
    id: Option<serde_json::Value>,
    block_size: Option<usize>,
    hash_id_scope: Option<String>,
    requests: Vec<SessionEntry>,
}

/// A request of a session, or a subagent holding requests of its own.
#[derive(Deserialize)]
struct SessionEntry {
    t: Option<f64>,
    model: Option<String>,
    #[serde(rename = "in")]
    input: Option<u64>,
    out: Option<u64>,
    hash_ids: Option<HashIds>,
    api_time: Option<f64>,
    requests: Option<Vec<SessionEntry>>,
}

/// Reads the traces and hands every request to `each` in file order (a session's requests
/// in the order of their `t`); returns the skipped lines.
pub fn read(
    reading: &TraceReading<'_>,
    mut each: impl FnMut(Prepared) -> Result<()>,
) -> Result<SkipLog> {
    std::thread::scope(|scope| -> Result<SkipLog> {
        let (send, receive) = crossbeam_channel::bounded::<Vec<Prepared>>(4);
        let reader = scope.spawn(move || -> Result<SkipLog> {
            let mut skipped = SkipLog::default();
            let mut batch = Vec::with_capacity(BATCH);
            let mut parser = Parser::new(reading);
            for file in reading.inputs {
                let name: Arc<str> = Arc::from(file.as_str());
                let mut reader = input::open(file)?;
                let mut line = Vec::new();
                let mut number = 0;
                loop {
                    number += 1;
                    let read = read_line(&mut reader, &mut line, reading.max_line_bytes)
                        .map_err(|e| Error::io(file, e))?;
                    let Some(whole) = read else { break };
                    if !whole {
                        skipped.push(Skipped {
                            file: file.clone(),
                            line: number,
                            reason: format!(
                                "longer than --max-line-bytes {}",
                                reading.max_line_bytes
                            ),
                        });
                        continue;
                    }
                    let text = line.trim_ascii();
                    if text.is_empty() {
                        continue;
                    }
                    if let Err(reason) = parser.line(&name, number, text, &mut batch) {
                        skipped.push(Skipped {
                            file: file.clone(),
                            line: number,
                            reason,
                        });
                    }
                    if batch.len() >= BATCH {
                        let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                        if send.send(full).is_err() {
                            // The replay stopped; its error is reported.
                            return Ok(skipped);
                        }
                    }
                }
            }
            if !batch.is_empty() {
                let _ = send.send(batch);
            }
            Ok(skipped)
        });
        let mut replayed = Ok(());
        for batch in receive.iter() {
            for request in batch {
                replayed = each(request);
                if replayed.is_err() {
                    break;
                }
            }
            if replayed.is_err() {
                break;
            }
        }
        drop(receive);
        let skipped = reader
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        replayed?;
        skipped
    })
}

const BATCH: usize = 1024;

/// Reads one line into `buf` (without its newline); `Ok(None)` at the end, `Ok(Some(false))`
/// for a line over `cap` bytes (consumed, not kept).
fn read_line(
    reader: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<Option<bool>> {
    buf.clear();
    let mut seen = false;
    let mut too_long = false;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(seen.then_some(!too_long));
        }
        seen = true;
        let (take, done) = match memchr::memchr(b'\n', chunk) {
            Some(at) => (at, true),
            None => (chunk.len(), false),
        };
        if !too_long {
            if buf.len() + take > cap {
                too_long = true;
                buf.clear();
                buf.shrink_to(1 << 16);
            } else {
                buf.extend_from_slice(&chunk[..take]);
            }
        }
        reader.consume(take + usize::from(done));
        if done {
            return Ok(Some(!too_long));
        }
    }
}

/// Turns trace lines into requests.
struct Parser<'a> {
    reading: &'a TraceReading<'a>,
    /// Bailian: each chat's session (the root of its `parent_chat_id` chain).
    roots: HashMap<u64, u64>,
    /// SemiAnalysis: where the next session starts (seconds): sessions run one after
    /// another, each from the previous one's last request.
    session_start: f64,
}

impl<'a> Parser<'a> {
    fn new(reading: &'a TraceReading<'a>) -> Parser<'a> {
        Parser {
            reading,
            roots: HashMap::new(),
            session_start: 0.0,
        }
    }

    fn line(
        &mut self,
        file: &Arc<str>,
        number: usize,
        text: &[u8],
        out: &mut Vec<Prepared>,
    ) -> std::result::Result<(), String> {
        match self.reading.format {
            TraceFormat::Mooncake | TraceFormat::Bailian => {
                let line: FlatLine = serde_json::from_slice(text)
                    .map_err(|e| format!("not a {} trace line: {e}", self.reading.format.name()))?;
                out.push(self.flat(file, number, line)?);
                Ok(())
            }
            TraceFormat::Semianalysis => {
                let row: SessionRow = serde_json::from_slice(text)
                    .map_err(|e| format!("not a SemiAnalysis session row: {e}"))?;
                self.session(file, number, row, out)
            }
        }
    }

    fn flat(
        &mut self,
        file: &Arc<str>,
        number: usize,
        line: FlatLine,
    ) -> std::result::Result<Prepared, String> {
        let format = self.reading.format;
        let trace_block = self
            .reading
            .trace_block_size
            .unwrap_or(format.default_block_size());
        let time = match line.timestamp {
            Some(t) if !t.is_finite() || t < 0.0 => {
                return Err(format!("timestamp {t} is not a time"));
            }
            // Mooncake's are milliseconds from the first request; Bailian's seconds.
            Some(t) if format == TraceFormat::Mooncake => Some(t / 1000.0),
            other => other,
        };
        let session = match format {
            TraceFormat::Bailian => line.chat_id.map(|HashId(chat)| {
                let root = match line.parent_chat_id {
                    Some(HashId(parent)) if parent as i64 != -1 => {
                        self.roots.get(&parent).copied().unwrap_or(parent)
                    }
                    _ => chat,
                };
                self.roots.insert(chat, root);
                root.to_string()
            }),
            _ => None,
        };
        self.request(
            file,
            number,
            Request {
                session,
                input: line.input_length,
                output: line.output_length,
                ids: &line.hash_ids.0,
                trace_block,
                namespace: 0,
                time,
                duration: None,
            },
        )
    }

    fn session(
        &mut self,
        file: &Arc<str>,
        number: usize,
        row: SessionRow,
        out: &mut Vec<Prepared>,
    ) -> std::result::Result<(), String> {
        let trace_block = match row.block_size {
            Some(0) => return Err("block_size 0".into()),
            Some(n) => n,
            None => self
                .reading
                .trace_block_size
                .unwrap_or(TraceFormat::Semianalysis.default_block_size()),
        };
        let id = match &row.id {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => format!("{file}:{number}"),
        };
        // Local ids name blocks within this session only; ids of different models never
        // name the same KV.
        let local = row.hash_id_scope.as_deref() != Some("global");
        let mut flat = Vec::new();
        flatten(&row.requests, &mut flat, 0)?;
        flat.sort_by(|a, b| a.t.unwrap_or(0.0).total_cmp(&b.t.unwrap_or(0.0)));
        let start = self.session_start;
        let mut last = start;
        for entry in flat {
            let (Some(input), Some(ids)) = (entry.input, &entry.hash_ids) else {
                continue;
            };
            let t = entry.t.unwrap_or(0.0);
            if !t.is_finite() || t < 0.0 {
                return Err(format!("session {id}: t {t} is not a time"));
            }
            let scope = format!(
                "{}\u{0}{}",
                if local { id.as_str() } else { "" },
                entry.model.as_deref().unwrap_or("")
            );
            let at = start + t;
            last = last.max(at);
            out.push(self.request(
                file,
                number,
                Request {
                    session: Some(id.clone()),
                    input,
                    output: entry.out.unwrap_or(0),
                    ids: &ids.0,
                    trace_block,
                    namespace: text_id(&scope),
                    time: Some(at),
                    duration: entry.api_time.filter(|d| d.is_finite() && *d >= 0.0),
                },
            )?);
        }
        self.session_start = last;
        Ok(())
    }

    fn request(
        &self,
        file: &Arc<str>,
        number: usize,
        r: Request<'_>,
    ) -> std::result::Result<Prepared, String> {
        if r.input > MAX_TOKENS || r.output > MAX_TOKENS {
            return Err(format!(
                "{} prompt and {} generated tokens: more than a trace request can hold",
                r.input, r.output
            ));
        }
        let (input, output) = (r.input as usize, r.output as usize);
        let block = self.reading.block_size;
        let blocks = engine_blocks(r.ids.len(), input, r.trace_block, block);
        if blocks > MAX_REQUEST_BLOCKS {
            return Err(format!(
                "{input} prompt tokens make {blocks} blocks of {block}: more than {MAX_REQUEST_BLOCKS}"
            ));
        }
        let mut hashes = Vec::new();
        engine_hashes(r.ids, input, r.trace_block, block, r.namespace, &mut hashes);
        Ok(Prepared {
            file: file.clone(),
            line: number,
            session: r.session,
            prompt_tokens: input,
            hashes,
            ids: None,
            generated: output,
            time: r.time,
            duration: r.duration,
            logged_cached_tokens: None,
        })
    }
}

struct Request<'a> {
    session: Option<String>,
    input: u64,
    output: u64,
    ids: &'a [u64],
    trace_block: usize,
    namespace: u64,
    time: Option<f64>,
    duration: Option<f64>,
}

/// A session's requests and its subagents' requests, in one list.
fn flatten<'e>(
    entries: &'e [SessionEntry],
    out: &mut Vec<&'e SessionEntry>,
    depth: usize,
) -> std::result::Result<(), String> {
    if depth > 32 {
        return Err("subagents nested more than 32 deep".into());
    }
    for entry in entries {
        if let Some(inner) = &entry.requests {
            flatten(inner, out, depth + 1)?;
        }
        if entry.hash_ids.is_some() {
            out.push(entry);
        }
    }
    Ok(())
}

/// Reads a whole trace held in memory as [`read`] reads a file, for the fuzz target and
/// tests: the requests and the skipped lines.
pub fn read_bytes(
    name: &str,
    bytes: &[u8],
    reading: &TraceReading<'_>,
) -> (Vec<Prepared>, SkipLog) {
    let mut parser = Parser::new(reading);
    let mut skipped = SkipLog::default();
    let mut out = Vec::new();
    let file: Arc<str> = Arc::from(name);
    let mut reader = std::io::BufReader::new(bytes);
    let mut line = Vec::new();
    let mut number = 0;
    while let Ok(Some(whole)) = read_line(&mut reader, &mut line, reading.max_line_bytes) {
        number += 1;
        let text = line.trim_ascii();
        if !whole || text.is_empty() {
            continue;
        }
        if let Err(reason) = parser.line(&file, number, text, &mut out) {
            skipped.push(Skipped {
                file: name.to_string(),
                line: number,
                reason,
            });
        }
    }
    (out, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(ids: &[u64], tokens: usize, trace_block: usize, block: usize) -> Vec<u64> {
        let mut out = Vec::new();
        engine_hashes(ids, tokens, trace_block, block, 0, &mut out);
        out
    }

    #[test]
    fn a_trace_block_splits_into_engine_blocks_that_share_its_prefix() {
        // 512-token trace blocks, 16-token engine blocks: 1,100 tokens are 2 full trace
        // blocks and 76 tokens of a third; 68 full engine blocks.
        let a = keys(&[1, 2, 3], 1100, 512, 16);
        assert_eq!(a.len(), 1100 / 16);
        // Another prompt with the same first block and a different second.
        let b = keys(&[1, 9, 3], 1100, 512, 16);
        assert_eq!(a[..32], b[..32]);
        assert!(a[32..].iter().zip(&b[32..]).all(|(x, y)| x != y));
        // The same blocks, shorter: the partial third block's engine blocks are its own.
        let c = keys(&[1, 2, 3], 1060, 512, 16);
        assert_eq!(a[..c.len()], c[..]);
    }

    #[test]
    fn engine_blocks_larger_than_the_trace_chain_several_trace_blocks() {
        // 16-token trace blocks, 64-token engine blocks: 4 trace blocks each.
        let a = keys(&[1, 2, 3, 4, 5, 6, 7, 8, 9], 140, 16, 64);
        assert_eq!(a.len(), 2);
        let b = keys(&[1, 2, 3, 4, 5, 6, 7, 0, 9], 140, 16, 64);
        assert_eq!(a[0], b[0]);
        assert_ne!(a[1], b[1]);
    }

    #[test]
    fn an_engine_block_that_ends_inside_a_trace_block_needs_all_of_it() {
        // 512 / 100: engine block 5 (tokens 500..600) ends in trace block 1.
        let a = keys(&[1, 2], 1024, 512, 100);
        let b = keys(&[1, 3], 1024, 512, 100);
        assert_eq!(a.len(), 10);
        assert_eq!(a[..5], b[..5]);
        assert_ne!(a[5], b[5]);
    }

    #[test]
    fn blocks_the_hashes_do_not_cover_get_no_key() {
        // 3 ids of 16 cover 48 tokens of the 100.
        assert_eq!(keys(&[1, 2, 3], 100, 16, 16).len(), 3);
        assert!(keys(&[], 100, 16, 16).is_empty());
    }

    fn reading(format: TraceFormat, block: usize) -> TraceReading<'static> {
        TraceReading {
            inputs: &[],
            format,
            trace_block_size: None,
            block_size: block,
            max_line_bytes: 1 << 20,
        }
    }

    #[test]
    fn mooncake_lines_become_requests_in_seconds() {
        let text = b"{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 7, \"hash_ids\": [0, 1, 2]}\n\
                     {\"timestamp\": 2500, \"input_length\": 600, \"output_length\": 3, \"hash_ids\": [0, 4]}\n\
                     not json\n";
        let (requests, skipped) = read_bytes("t.jsonl", text, &reading(TraceFormat::Mooncake, 512));
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[1].time, Some(2.5));
        assert_eq!(requests[0].generated, 7);
        assert_eq!(requests[0].hashes.len(), 2);
        assert_eq!(requests[0].hashes[0], requests[1].hashes[0]);
        assert_eq!(skipped.count, 1);
        assert_eq!(skipped.first[0].line, 3);
    }

    #[test]
    fn bailian_turns_name_their_root_chat_as_the_session() {
        let text = b"{\"chat_id\": 5, \"parent_chat_id\": -1, \"timestamp\": 1.5, \"input_length\": 40, \"output_length\": 2, \"hash_ids\": [7, 8, 9], \"turn\": 1, \"type\": \"text\"}\n\
                     {\"chat_id\": 6, \"parent_chat_id\": 5, \"timestamp\": 3.0, \"input_length\": 60, \"output_length\": 2, \"hash_ids\": [7, 8, 9, 10], \"turn\": 2, \"type\": \"text\"}\n\
                     {\"chat_id\": 7, \"parent_chat_id\": 6, \"timestamp\": 4.0, \"input_length\": 70, \"output_length\": 2, \"hash_ids\": [7, 8, 9, 10, 11], \"turn\": 3, \"type\": \"text\"}\n";
        let (requests, _) = read_bytes("b.jsonl", text, &reading(TraceFormat::Bailian, 16));
        let sessions: Vec<_> = requests
            .iter()
            .map(|r| r.session.clone().unwrap())
            .collect();
        assert_eq!(sessions, ["5", "5", "5"]);
        assert_eq!(requests[0].time, Some(1.5));
        assert_eq!(requests[0].hashes.len(), 2);
        assert_eq!(requests[1].hashes[..2], requests[0].hashes[..]);
    }

    #[test]
    fn a_session_row_flattens_its_subagents_in_time_and_scopes_local_ids() {
        let text = r#"{"id": "s1", "block_size": 64, "hash_id_scope": "local", "requests": [
            {"t": 0, "model": "m", "in": 130, "out": 5, "hash_ids": [1, 2, 3], "api_time": 2},
            {"t": 3, "type": "subagent", "requests": [
                {"t": 1, "model": "m", "in": 64, "out": 1, "hash_ids": [1], "api_time": 0.5}]},
            {"t": 4, "model": "m", "in": 200, "out": 5, "hash_ids": [1, 2, 3, 4], "api_time": 1}]}
{"id": "s2", "requests": [{"t": 0, "model": "m", "in": 130, "out": 5, "hash_ids": [1, 2, 3]}]}
"#
        .replace('\n', " ")
        .replace("]} {", "]}\n{");
        let (requests, skipped) = read_bytes(
            "s.jsonl",
            text.as_bytes(),
            &reading(TraceFormat::Semianalysis, 64),
        );
        assert_eq!(skipped.count, 0, "{:?}", skipped.first);
        let times: Vec<_> = requests.iter().map(|r| r.time.unwrap()).collect();
        // s1 in time order (the subagent's request at t=1), then s2 from s1's last request.
        assert_eq!(times, [0.0, 1.0, 4.0, 4.0]);
        assert_eq!(requests[0].duration, Some(2.0));
        assert_eq!(requests[1].hashes[0], requests[0].hashes[0]);
        // Local ids: s2's block 1 is not s1's.
        assert_ne!(requests[3].hashes[0], requests[0].hashes[0]);
    }

    #[test]
    fn detection_reads_the_first_line() {
        assert_eq!(
            detect_line(
                br#"{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1]}"#
            ),
            Some(TraceFormat::Mooncake)
        );
        assert_eq!(
            detect_line(br#"{"chat_id": 1, "input_length": 5, "hash_ids": [1]}"#),
            Some(TraceFormat::Bailian)
        );
        assert_eq!(
            detect_line(br#"{"id": "x", "requests": [{"in": 1, "hash_ids": [1]}]}"#),
            Some(TraceFormat::Semianalysis)
        );
        assert_eq!(
            detect_line(br#"{"request": {"messages": []}, "metadata": {}}"#),
            None
        );
    }
}
