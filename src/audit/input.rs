//! Request logs in the formats users already have, read as a stream of [`Logged`] requests.
//!
//! Each file is read line by line (gzip or plain, or stdin for `-`), with a cap on the
//! length of a line: a longer line is skipped unread and counted, as is a line that is not
//! JSON or not a request. The format is detected on a file's first usable line, unless
//! `--input-format` forces one.

use super::doc::{self, Doc, Node};
use super::pointer::pointer;
use super::raw_messages::RawMessages;
use super::session::{Kept, SessionKey};
use super::usage::{self, Usage};
use crate::error::{Error, Result};
use rayon::prelude::*;
use serde_json::{json, Map, Value as Json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;

/// The longest line read; a longer one is skipped and counted.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum InputFormat {
    /// `{"request": BODY, "response": BODY_OR_USAGE, "metadata": {...}}` a line.
    Records,
    /// Bare request bodies: Chat Completions, Completions, Responses or Anthropic Messages.
    Body,
    /// OpenAI Batch input lines: `{"custom_id", "method", "url", "body"}`.
    Batch,
    /// LiteLLM's standard logging payload, as a logging callback writes it.
    Litellm,
    /// OpenTelemetry GenAI spans exported as OTLP JSON (`resourceSpans`).
    Otlp,
}

/// A chat message, shared by the requests of a session that repeat it.
pub type Message = Arc<Json>;

/// A request as the server received it: the chat it renders (or a completions prompt).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RequestBody {
    /// As read: the messages before the logged `messages` list where that is still text
    /// (`raw_messages`); in the server's view, all of them.
    pub messages: Vec<Message>,
    /// Where each message came from in the logged body: `messages[3]`, `system`, `input[0]`.
    pub message_paths: Vec<String>,
    /// In the chat-completions shape (`{"type": "function", "function": {...}}`); shared by
    /// a session's requests that send the same tools.
    pub tools: Option<Arc<Json>>,
    /// A completions `prompt`: sent as is, no chat template.
    pub prompt: Option<String>,
    /// The logged `messages` list as text, where the log's parse kept it so
    /// ([`raw_messages`](super::raw_messages)): before the server's view, the messages
    /// after `messages`; after it, what the session's next request is compared with.
    #[serde(skip)]
    pub raw_messages: Option<RawMessages>,
    /// The logged `tools` value as text, where the log's parse kept it so (with
    /// `raw_messages`): before the server's view, `tools` is made from it; after it, what the
    /// session's next request is compared with.
    #[serde(skip)]
    pub raw_tools: Option<Box<str>>,
}

/// One logged request with what the log says about it.
#[derive(Debug, Clone)]
pub struct Logged {
    pub line: usize,
    pub body: RequestBody,
    pub session: Option<String>,
    pub logged_cached_tokens: Option<usize>,
    pub logged_prompt_tokens: Option<usize>,
    /// Seconds since the epoch, when the record says when it was sent.
    pub time: Option<f64>,
    /// When its response was complete (seconds since the epoch), where the record says.
    pub done: Option<f64>,
    /// Seconds from sent to the last token, where the record says so as a duration
    /// (`metadata.duration` or `metadata.latency`, in seconds); see also `done`.
    pub duration: Option<f64>,
    /// The tokens generated, where the log's usage says (with or without the reply).
    pub completion_tokens: Option<usize>,
    /// The reply, where the log has the response.
    pub reply: Option<Reply>,
    /// All the response says about the cache (`logged_cached_tokens` and
    /// `logged_prompt_tokens` are its `read` and `prompt`).
    pub usage: Usage,
    /// The model the request names (`model`, Bedrock's `modelId`).
    pub model: Option<String>,
}

/// A logged reply: what the client received (and should send back as the next assistant
/// message), and what the server generated (what its cache keeps). They differ only where
/// something between them rewrote the reply: a proxy records the server's own response in
/// `metadata.server_response`.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// `{"role": "assistant", "content", "tool_calls"?}` as the client got it.
    pub message: Json,
    /// The generated text (without the tool calls a server parsed out of it).
    pub generated_text: String,
    /// The generated token ids, where the response has them (`logprobs.content[].id`).
    pub generated_ids: Option<Vec<u32>>,
    pub completion_tokens: Option<usize>,
}

/// A line that was not used, and why.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Skipped {
    pub file: String,
    pub line: usize,
    pub reason: String,
}

/// Lines skipped: all counted, the first few kept to show.
#[derive(Debug, Default)]
pub struct SkipLog {
    pub count: usize,
    pub first: Vec<Skipped>,
}

impl SkipLog {
    pub const KEPT: usize = 20;
    pub fn push(&mut self, skipped: Skipped) {
        self.count += 1;
        if self.first.len() < Self::KEPT {
            self.first.push(skipped);
        }
    }
}

/// Reads every file in turn, calling `each` per request; returns the skipped lines.
pub fn read_all(
    files: &[String],
    forced: Option<InputFormat>,
    key: &SessionKey,
    max_line_bytes: usize,
    mut each: impl FnMut(&str, Logged) -> Result<()>,
) -> Result<SkipLog> {
    let mut skipped = SkipLog::default();
    for file in files {
        let reader = open(file)?;
        read_file(
            file,
            reader,
            forced,
            key,
            max_line_bytes,
            &mut skipped,
            &mut each,
        )?;
    }
    Ok(skipped)
}

/// Requests as a reader hands them over: the file each came from (one shared name per file)
/// and the request.
pub type Batch = Vec<(Arc<str>, Logged)>;

/// Runs `read` (a log reader such as [`read_all`]) on its own thread, `batch` requests ahead
/// of `flush`, which gets them in log order a batch at a time. Each batch goes through
/// `prepare` first (the per-request work that needs no state of `flush`: building the
/// prompts on the rayon pool), on a third thread. So three things overlap: the reader's
/// serial work and its parse of the next lines (on the pool), `prepare`'s build of the batch
/// before (on the pool too: the pool has the parse's lines to take while the build's last
/// chains finish, and the reverse), and `flush`'s serial work on the batch before that. A
/// bounded channel between each two stages keeps at most [`READ_AHEAD`] batches waiting in
/// each. An error of `flush` stops the others (`who`, the command, names it in the reader's
/// own error, which is not reported) and is returned; else the reader's result (the skipped
/// lines).
pub fn read_ahead<T: Send>(
    who: &str,
    batch: usize,
    read: impl FnOnce(&mut dyn FnMut(&str, Logged) -> Result<()>) -> Result<SkipLog> + Send,
    mut prepare: impl FnMut(Batch) -> T + Send,
    mut flush: impl FnMut(T) -> Result<()>,
) -> Result<SkipLog> {
    let _pool = tracing::info_span!(target: crate::profile::THREAD, "pool").entered();
    let _flush = tracing::info_span!(target: crate::profile::THREAD, "thread", label = %format!("{who} flush")).entered();
    std::thread::scope(|scope| -> Result<SkipLog> {
        let (send_read, receive_read) = crossbeam_channel::bounded::<Batch>(READ_AHEAD);
        let (send, receive) = crossbeam_channel::bounded::<T>(READ_AHEAD);
        let builder = scope.spawn(move || {
            let _clock = tracing::info_span!(target: crate::profile::THREAD, "thread", label = %format!("{who} prepare")).entered();
            for pending in receive_read.iter() {
                let prepared = {
                    let _span = tracing::info_span!(target: crate::profile::TIMELINE, "prepare").entered();
                    prepare(pending)
                };
                // The receiver is gone only when `flush` failed; its error is reported.
                if send.send(prepared).is_err() {
                    break;
                }
            }
        });
        let reader = scope.spawn(move || {
            let _clock = tracing::info_span!(target: crate::profile::THREAD, "thread", label = %format!("{who} parse")).entered();
            let mut pending = Vec::with_capacity(batch);
            let mut name: Option<Arc<str>> = None;
            let read = read(&mut |file, logged| {
                let file = match &name {
                    Some(n) if &**n == file => n.clone(),
                    _ => name.insert(Arc::from(file)).clone(),
                };
                pending.push((file, logged));
                if pending.len() >= batch {
                    let full = std::mem::replace(&mut pending, Vec::with_capacity(batch));
                    // Gone only when `prepare`'s thread stopped, after `flush` failed.
                    send_read
                        .send(full)
                        .map_err(|_| Error::input(format!("{who} stopped reading")))?;
                }
                Ok(())
            });
            if read.is_ok() && !pending.is_empty() {
                let _ = send_read.send(pending);
            }
            read
        });
        let mut flushed = Ok(());
        for prepared in receive.iter() {
            let _span = tracing::info_span!(target: crate::profile::TIMELINE, "flush").entered();
            flushed = flush(prepared);
            if flushed.is_err() {
                break;
            }
        }
        drop(receive);
        let read = reader
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        builder
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        flushed?;
        read
    })
}

/// Batches waiting between two stages of [`read_ahead`]: enough that a stage rarely waits
/// for the one before, few enough that memory stays a few batches.
const READ_AHEAD: usize = 2;

/// Builds a batch's requests on the rayon pool and returns them in log order. A session's
/// requests are built one after another, each after the newest request of its session built
/// so far (`newest` says which results are built requests), the first after the one `last`
/// keeps; the chains run in parallel. Each request's body moves to `build`. A session that
/// built a request in this batch has its newest kept in `last`, weighing `bytes` of it.
pub fn build_in_chains<E: Send + Sync, T: Send>(
    pending: &mut Batch,
    last: &mut Kept<Arc<E>>,
    newest: impl Fn(&T) -> Option<&Arc<E>> + Sync,
    build: impl Fn(Option<&Arc<E>>, &Logged, RequestBody) -> T + Sync,
    bytes: impl Fn(&E) -> usize,
) -> Vec<T> {
    // A session's request before this batch, and its requests in it (index, body).
    type Chain<E> = (Option<Arc<E>>, Vec<(usize, RequestBody)>);
    let mut chains: Vec<Chain<E>> = Vec::new();
    let mut keys: Vec<Option<String>> = Vec::new();
    {
        let mut chain_of: HashMap<&str, usize> = HashMap::new();
        for (i, (_, logged)) in pending.iter_mut().enumerate() {
            let body = std::mem::take(&mut logged.body);
            let Some(s) = logged.session.as_deref() else {
                chains.push((None, vec![(i, body)]));
                keys.push(None);
                continue;
            };
            let chain = *chain_of.entry(s).or_insert_with(|| {
                chains.push((last.get(s).cloned(), Vec::new()));
                keys.push(Some(s.to_owned()));
                chains.len() - 1
            });
            chains[chain].1.push((i, body));
        }
    }
    let order: Vec<Vec<usize>> = chains
        .iter()
        .map(|(_, chain)| chain.iter().map(|(i, _)| *i).collect())
        .collect();
    let pending: &Batch = pending;
    let built: Vec<(Vec<T>, Option<Arc<E>>)> = chains
        .into_par_iter()
        .map(|(before, chain)| {
            let mut earlier = before;
            let mut built_here = None;
            let mut out = Vec::with_capacity(chain.len());
            for (i, body) in chain {
                let result = build(earlier.as_ref(), &pending[i].1, body);
                if let Some(e) = newest(&result) {
                    earlier = Some(e.clone());
                    built_here = earlier.clone();
                }
                out.push(result);
            }
            (out, built_here)
        })
        .collect();
    let mut results: Vec<Option<T>> = (0..pending.len()).map(|_| None).collect();
    for ((chain, (out, built_here)), key) in order.iter().zip(built).zip(keys) {
        if let (Some(key), Some(built_here)) = (key, built_here) {
            let weighs = bytes(&built_here);
            last.insert(key, built_here, weighs);
        }
        for (&i, result) in chain.iter().zip(out) {
            results[i] = Some(result);
        }
    }
    results
        .into_iter()
        .map(|r| r.expect("every pending request is in one chain"))
        .collect()
}

/// Reads one log held in memory (named `name`, gzip or plain) as [`read_all`] reads a file:
/// for callers that have the bytes, and the fuzz target.
pub fn read_bytes(
    name: &str,
    bytes: &[u8],
    forced: Option<InputFormat>,
    key: &SessionKey,
    max_line_bytes: usize,
    mut each: impl FnMut(&str, Logged) -> Result<()>,
) -> Result<SkipLog> {
    let mut skipped = SkipLog::default();
    let reader = buffered(name, Box::new(std::io::Cursor::new(bytes.to_vec())))?;
    read_file(
        name,
        reader,
        forced,
        key,
        max_line_bytes,
        &mut skipped,
        &mut each,
    )?;
    Ok(skipped)
}

/// Opens a log (`-`: stdin), gzip or plain.
pub fn open(file: &str) -> Result<Box<dyn BufRead + Send>> {
    let raw: Box<dyn Read + Send> = if file == "-" {
        Box::new(std::io::stdin())
    } else {
        let path = Path::new(file);
        Box::new(std::fs::File::open(path).map_err(|e| Error::io(path, e))?)
    };
    buffered(file, raw)
}

fn buffered(file: &str, raw: Box<dyn Read + Send>) -> Result<Box<dyn BufRead + Send>> {
    let mut buffered = BufReader::with_capacity(1 << 16, raw);
    let head = buffered.fill_buf().map_err(|e| Error::io(file, e))?;
    // gzip by its magic bytes, so `-` and misnamed files work too.
    if head.starts_with(&[0x1f, 0x8b]) {
        let decoder = flate2::bufread::MultiGzDecoder::new(buffered);
        return Ok(Box::new(BufReader::with_capacity(1 << 16, decoder)));
    }
    Ok(Box::new(buffered))
}

/// Reads one line into `buf` (without its newline); `Ok(None)` at the end. A line over
/// `cap` bytes is consumed without being kept: `Ok(Some(false))`.
fn next_line(
    reader: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<Option<bool>> {
    buf.clear();
    let mut seen_any = false;
    let mut too_long = false;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(seen_any.then_some(!too_long));
        }
        seen_any = true;
        let (take, done) = match memchr::memchr(b'\n', chunk) {
            Some(at) => (at, true),
            None => (chunk.len(), false),
        };
        if !too_long {
            if buf.len() + take > cap {
                too_long = true;
                // What was read of it is let go: memory is not held at the cap afterwards.
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

/// Lines parsed together on the rayon pool: at most this many, and no more once this many
/// bytes are read (a longer line still goes whole, alone).
const CHUNK_LINES: usize = 512;
const CHUNK_BYTES: usize = 4 << 20;

/// Chunks read ahead of the one being parsed (each at most [`CHUNK_BYTES`], or one line up to
/// the cap): enough that the parse rarely waits for the reading.
const CHUNKS_AHEAD: usize = 2;

/// A run of a file's lines read ahead of parsing: each non-blank line's number and its
/// trimmed text in `bytes` (`None`: longer than the cap, not read); then, where the reading
/// stopped after them, why (an error, or the end).
#[derive(Default)]
struct Chunk {
    bytes: Vec<u8>,
    lines: Vec<(usize, Option<std::ops::Range<usize>>)>,
    failed: Option<Error>,
    ended: bool,
}

impl Chunk {
    /// Reads the next lines of `reader` into this chunk (emptied first), numbering them on
    /// from `line`.
    fn fill(
        &mut self,
        file: &str,
        reader: &mut dyn BufRead,
        buf: &mut Vec<u8>,
        cap: usize,
        line: &mut usize,
    ) {
        self.bytes.clear();
        self.lines.clear();
        // After a long line, memory is not held at its length for the rest of the file.
        self.bytes.shrink_to(2 * CHUNK_BYTES);
        while self.lines.len() < CHUNK_LINES && self.bytes.len() < CHUNK_BYTES {
            *line += 1;
            match next_line(reader, buf, cap) {
                Err(e) => {
                    let why = if e.kind() == std::io::ErrorKind::UnexpectedEof {
                        "the gzip stream ends early (a truncated file?)".to_owned()
                    } else {
                        e.to_string()
                    };
                    self.failed = Some(Error::input(format!(
                        "{file}:{line}: cannot read on: {why}"
                    )));
                    return;
                }
                Ok(None) => {
                    self.ended = true;
                    return;
                }
                Ok(Some(false)) => self.lines.push((*line, None)),
                Ok(Some(true)) => {
                    let text = trim_ascii(buf);
                    if !text.is_empty() {
                        let start = self.bytes.len();
                        self.bytes.extend_from_slice(text);
                        self.lines.push((*line, Some(start..self.bytes.len())));
                    }
                }
            }
        }
    }
}

/// What one line gives: its requests, in the format it was read in, or why it was skipped.
enum LineOutcome {
    Requests(InputFormat, Vec<Logged>),
    Skipped(String),
}

/// Reads `file` a chunk of lines at a time: the lines are read in order (decompressed and
/// split on a thread of their own, [`CHUNKS_AHEAD`] chunks ahead), parsed in parallel (they
/// are independent: the parse of a line is a pure function of its text and the format),
/// then handed to `each` and the skip log in log order. The format is detected line by
/// line, in order, until one line reads as a request; the lines after it are read in that
/// format (as a serial reader would).
#[allow(clippy::too_many_arguments)]
fn read_file(
    file: &str,
    mut reader: Box<dyn BufRead + Send>,
    forced: Option<InputFormat>,
    key: &SessionKey,
    cap: usize,
    skipped: &mut SkipLog,
    each: &mut impl FnMut(&str, Logged) -> Result<()>,
) -> Result<()> {
    std::thread::scope(|scope| {
        let (send, receive) = crossbeam_channel::bounded::<Chunk>(CHUNKS_AHEAD);
        // Parsed chunks come back to be filled again (at most CHUNKS_AHEAD + 2 exist).
        let (give_back, reuse) = crossbeam_channel::unbounded::<Chunk>();
        scope.spawn(move || {
            let _clock =
                tracing::info_span!(target: crate::profile::THREAD, "thread", label = "read lines")
                    .entered();
            let mut buf = Vec::new();
            let mut line = 0;
            loop {
                let mut chunk = reuse.try_recv().unwrap_or_default();
                {
                    let _span = tracing::info_span!(target: crate::profile::TIMELINE, "read lines")
                        .entered();
                    chunk.fill(file, &mut *reader, &mut buf, cap, &mut line);
                }
                let last = chunk.failed.is_some() || chunk.ended;
                // The receiver is gone when `each` failed: that error is reported.
                if send.send(chunk).is_err() || last {
                    return;
                }
            }
        });
        let mut format = forced;
        for mut chunk in receive.iter() {
            let outcomes = {
                let _span =
                    tracing::info_span!(target: crate::profile::TIMELINE, "parse lines").entered();
                let parse_at =
                    |(line, range): &(usize, Option<std::ops::Range<usize>>),
                     format: Option<InputFormat>| match range {
                        None => {
                            LineOutcome::Skipped(format!("line longer than {cap} bytes, not read"))
                        }
                        Some(range) => parse_line(&chunk.bytes[range.clone()], format, *line, key),
                    };
                let mut outcomes = Vec::with_capacity(chunk.lines.len());
                let mut rest = &chunk.lines[..];
                while format.is_none() {
                    let Some((first, after)) = rest.split_first() else {
                        break;
                    };
                    let outcome = parse_at(first, None);
                    if let LineOutcome::Requests(found, _) = &outcome {
                        format = Some(*found);
                    }
                    outcomes.push(outcome);
                    rest = after;
                }
                outcomes.par_extend(rest.par_iter().map(|at| parse_at(at, format)));
                outcomes
            };
            let _span =
                tracing::info_span!(target: crate::profile::TIMELINE, "hand over").entered();
            for ((line, _), outcome) in chunk.lines.iter().zip(outcomes) {
                match outcome {
                    LineOutcome::Requests(_, requests) => {
                        for request in requests {
                            each(file, request)?;
                        }
                    }
                    LineOutcome::Skipped(reason) => skipped.push(Skipped {
                        file: file.to_owned(),
                        line: *line,
                        reason,
                    }),
                }
            }
            if let Some(e) = chunk.failed.take() {
                return Err(e);
            }
            if chunk.ended {
                return Ok(());
            }
            let _ = give_back.send(chunk);
        }
        Ok(())
    })
}

/// One line's requests in `format` (detected from the line where `None`), or why it is
/// skipped.
fn parse_line(
    text: &[u8],
    format: Option<InputFormat>,
    line: usize,
    key: &SessionKey,
) -> LineOutcome {
    if let Some(outcome) = format.and_then(|f| parse_borrowed(text, f, line, key)) {
        return outcome;
    }
    let record: Json = match serde_json::from_slice(text) {
        Ok(record) => record,
        Err(e) => {
            // serde_json says "invalid unicode code point"; name the real problem.
            return LineOutcome::Skipped(match std::str::from_utf8(text) {
                Err(bad) => format!(
                    "not UTF-8 text (an invalid byte at column {})",
                    bad.valid_up_to() + 1
                ),
                Ok(_) => format!("not JSON: {e}"),
            });
        }
    };
    let Some(this) = format.or_else(|| detect(&record)) else {
        return LineOutcome::Skipped("not a request in a known log format".into());
    };
    match parse(this, record, line, key) {
        Ok(requests) => LineOutcome::Requests(this, requests),
        Err(reason) => LineOutcome::Skipped(reason),
    }
}

/// The log's fast path: a record read without a `Value` of what is not looked at ([`doc`]),
/// its `messages` list kept as text. The request [`parse`] makes of the line, or `None`
/// where this read does not make it; the line then goes to `serde_json` whole (a line
/// skipped, one the reader refuses, a body without a `messages` list, the formats whose
/// messages are not a chat list as sent, a session key that points into the messages).
fn parse_borrowed(
    text: &[u8],
    format: InputFormat,
    line: usize,
    key: &SessionKey,
) -> Option<LineOutcome> {
    if let SessionKey::Pointer(p) = key {
        if p.split('/').any(|token| token == "messages") {
            return None;
        }
    }
    let body_at = match format {
        InputFormat::Records => Some("request"),
        InputFormat::Body => None,
        InputFormat::Batch => Some("body"),
        InputFormat::Litellm | InputFormat::Otlp => return None,
    };
    let text = std::str::from_utf8(text).ok()?;
    // A session key may point into the tools, or name them.
    let tools_looked_into = match key {
        SessionKey::Pointer(_) => true,
        SessionKey::Name(name) => name == "tools",
        SessionKey::Defaults => false,
    };
    let record = doc::read_record(text, body_at, tools_looked_into)?;
    let (root, body) = (&record.root, record.body());
    let (response, metadata) = match format {
        InputFormat::Batch => (None, None),
        _ => (root.get("response"), root.get("metadata")),
    };
    let parsed = borrowed_body(body, &record)?;
    let mut logged = logged_of(
        key,
        line,
        root,
        body,
        response,
        metadata,
        times_of(metadata),
    );
    logged.body = parsed;
    Some(LineOutcome::Requests(format, vec![logged]))
}

/// [`parse_body_owned`] of a body read by [`doc::read_record`] (of `record`): its
/// `messages` list and its `tools` kept as text. `None` where it is refused (the whole parse
/// says why).
fn borrowed_body(body: &Node<'_>, record: &doc::Record<'_>) -> Option<RequestBody> {
    let mut out = Vec::new();
    let mut message_paths = Vec::new();
    if let Some(system) = body.get("system").map(Node::json).filter(|s| !s.is_null()) {
        out.push(json!({"role": "system", "content": text_of(&system)}));
        message_paths.push("system".to_owned());
    }
    if let Some(instructions) = body.get("instructions").map(Node::json) {
        if let Some(instructions) = instructions.as_str() {
            out.push(json!({"role": "system", "content": instructions}));
            message_paths.push("instructions".to_owned());
        }
    }
    for key in ["systemInstruction", "system_instruction"] {
        if let Some(system) = body.get(key).map(Node::json).filter(|s| !s.is_null()) {
            out.push(json!({"role": "system", "content": gemini_text(&system)}));
            message_paths.push(key.to_owned());
        }
    }
    let (tools, raw_tools) = match record.tools {
        Some(text) => (None, Some(Box::from(text))),
        None => {
            let tools = body.get("toolConfig").and_then(|c| c.get("tools"));
            let tools = tools.map(Node::json).filter(|t| !t.is_null());
            (tools.map(|t| Arc::new(chat_tools(&t))), None)
        }
    };
    let raw = RawMessages::of_list(&record.messages);
    if out.is_empty() && raw.is_empty() {
        return None;
    }
    Some(RequestBody {
        messages: out.into_iter().map(Arc::new).collect(),
        message_paths,
        tools,
        prompt: None,
        raw_messages: Some(raw),
        raw_tools,
    })
}

fn trim_ascii(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &bytes[start..end]
}

/// The format a record is in, by the keys only that format has.
pub fn detect(record: &Json) -> Option<InputFormat> {
    let object = record.as_object()?;
    if object.contains_key("resourceSpans") {
        Some(InputFormat::Otlp)
    } else if object.get("request").is_some_and(Json::is_object) {
        Some(InputFormat::Records)
    } else if object.contains_key("custom_id") && object.contains_key("body") {
        Some(InputFormat::Batch)
    } else if object.contains_key("messages")
        && (object.contains_key("model_parameters") || object.contains_key("call_type"))
    {
        Some(InputFormat::Litellm)
    } else if ["messages", "prompt", "input", "contents"]
        .iter()
        .any(|k| object.contains_key(*k))
    {
        Some(InputFormat::Body)
    } else {
        None
    }
}

type Parsed = std::result::Result<Vec<Logged>, String>;

/// Reads a record in `format`. The request's body is parsed last, taking its messages over
/// from the record (which is dropped after).
fn parse(format: InputFormat, mut record: Json, line: usize, key: &SessionKey) -> Parsed {
    let body_at: fn(&mut Json) -> Option<&mut Json> = match format {
        InputFormat::Records => |r| r.get_mut("request"),
        InputFormat::Body => |r| Some(r),
        InputFormat::Batch => |r| r.get_mut("body"),
        InputFormat::Litellm | InputFormat::Otlp => {
            return parse_by_ref(format, &record, line, key)
        }
    };
    let mut parsed = parse_by_ref(format, &record, line, key)?;
    if let (Some(request), Some(body)) = (parsed.first_mut(), body_at(&mut record)) {
        request.body = parse_body_owned(body)?;
    }
    Ok(parsed)
}

/// [`parse`] of a borrowed record: every format's fields, and the body (copied) except in
/// the formats [`parse`] takes it from (left empty here).
fn parse_by_ref(format: InputFormat, record: &Json, line: usize, key: &SessionKey) -> Parsed {
    let by_ref = matches!(format, InputFormat::Litellm | InputFormat::Otlp);
    let one = |body: &Json,
               response: Option<&Json>,
               metadata: Option<&Json>,
               times: (Option<f64>, Option<f64>)| {
        let parsed = match by_ref {
            true => parse_body(body)?,
            false => RequestBody::default(),
        };
        let mut logged = logged_of(key, line, record, body, response, metadata, times);
        logged.body = parsed;
        Ok(vec![logged])
    };
    match format {
        InputFormat::Records => {
            let body = record.get("request").ok_or("no `request` in the record")?;
            let metadata = record.get("metadata");
            one(body, record.get("response"), metadata, times_of(metadata))
        }
        InputFormat::Body => {
            let metadata = record.get("metadata");
            one(record, record.get("response"), metadata, times_of(metadata))
        }
        InputFormat::Batch => {
            let body = record.get("body").ok_or("no `body` in the batch line")?;
            one(body, None, None, (None, None))
        }
        InputFormat::Litellm => {
            let record = record.get("standard_logging_object").unwrap_or(record);
            let mut body = Map::new();
            body.insert("messages".into(), record["messages"].clone());
            if let Some(tools) = pointer(record, "/model_parameters/tools") {
                body.insert("tools".into(), tools.clone());
            }
            let body = Json::Object(body);
            let times = (
                record.get("startTime").and_then(number),
                record.get("endTime").and_then(number),
            );
            let mut parsed = one(&body, record.get("response"), record.get("metadata"), times)?;
            if let Some(request) = parsed.first_mut() {
                // The payload's own session field; `litellm_session_id` lands in `trace_id`,
                // which is otherwise a UUID minted per call; then the end user.
                let minted = |s: &&str| s.len() == 36 && s.matches('-').count() == 4;
                request.session = request.session.take().or_else(|| {
                    let field = |k: &str| record.get(k)?.as_str().filter(|s| !s.is_empty());
                    field("session_id")
                        .or_else(|| field("trace_id").filter(|s| !minted(s)))
                        .or_else(|| field("end_user"))
                        .map(str::to_owned)
                });
            }
            Ok(parsed)
        }
        InputFormat::Otlp => parse_otlp(record, line),
    }
}

/// A record's request (its body left empty) from the record, its request body, response
/// and metadata, and the times the format gives.
fn logged_of<D: Doc>(
    key: &SessionKey,
    line: usize,
    record: &D,
    body: &D,
    response: Option<&D>,
    metadata: Option<&D>,
    (time, done): (Option<f64>, Option<f64>),
) -> Logged {
    let server_response = metadata.and_then(|m| m.get("server_response"));
    // The server's own usage where a proxy kept it, else the response's.
    let usage = server_response
        .or(response)
        .map(usage::of_response)
        .unwrap_or_default();
    let time = time.or_else(|| response.and_then(|r| number(&r.get("created")?.json())));
    // Bedrock's Converse reports its latency.
    let latency = response
        .and_then(|r| number(&pointer(r, "/metrics/latencyMs")?.json()))
        .map(|ms| ms / 1000.0);
    let done = done.or_else(|| Some(time? + latency?));
    Logged {
        reply: response.and_then(|r| reply_of(r, server_response)),
        line,
        body: RequestBody::default(),
        session: key.find(record, body, metadata),
        logged_cached_tokens: usage.read,
        logged_prompt_tokens: usage.prompt,
        time,
        done,
        usage,
        model: body
            .get("model")
            .or_else(|| body.get("modelId"))
            .and_then(|m| Some(m.json().as_str()?.to_owned())),
        completion_tokens: server_response.or(response).and_then(completion_tokens_of),
        duration: metadata
            .and_then(|m| m.get("duration").or_else(|| m.get("latency")))
            .and_then(|d| number(&d.json()))
            .filter(|d| d.is_finite() && *d >= 0.0),
    }
}

/// Turns a logged request body into messages and tools, whatever API it was sent to.
pub fn parse_body(body: &Json) -> std::result::Result<RequestBody, String> {
    parse_body_with(body, None, None)
}

/// [`parse_body`], moving the body's `messages` out of it instead of copying them, and its
/// `tools` where they are already in the chat-completions shape.
pub fn parse_body_owned(body: &mut Json) -> std::result::Result<RequestBody, String> {
    let taken = match body.get_mut("messages") {
        Some(list @ Json::Array(_)) => Some(list.take()),
        _ => None,
    };
    let tools = match body.get_mut("tools") {
        Some(list @ Json::Array(_)) if in_chat_shape(list) => Some(Arc::new(list.take())),
        _ => None,
    };
    parse_body_with(body, taken, tools)
}

/// The tools of a body's logged `tools` value (`null`: none), in the chat-completions shape.
pub(crate) fn logged_tools(tools: Json) -> Option<Json> {
    match tools {
        Json::Null => None,
        list if in_chat_shape(&list) => Some(list),
        other => Some(chat_tools(&other)),
    }
}

/// Whether [`chat_tools`] gives `tools` back as they are: a list of tools each with its
/// `function`, none grouped, wrapped or a cache point.
fn in_chat_shape(tools: &Json) -> bool {
    tools.as_array().is_some_and(|list| {
        list.iter().all(|tool| {
            tool.get("function").is_some()
                && [
                    "functionDeclarations",
                    "function_declarations",
                    "toolSpec",
                    "cachePoint",
                ]
                .iter()
                .all(|k| tool.get(*k).is_none())
        })
    })
}

/// [`parse_body`], with the `messages` list taken out of `body` (left `null` there) and
/// the `tools` list where [`in_chat_shape`] (left `null` there too).
fn parse_body_with(
    body: &Json,
    taken: Option<Json>,
    taken_tools: Option<Arc<Json>>,
) -> std::result::Result<RequestBody, String> {
    let object = body
        .as_object()
        .ok_or("the request body is not a JSON object")?;
    let mut messages = Vec::new();
    let mut message_paths = Vec::new();
    if let Some(system) = object.get("system").filter(|s| !s.is_null()) {
        // Anthropic Messages: the system prompt beside the messages.
        messages.push(json!({"role": "system", "content": text_of(system)}));
        message_paths.push("system".to_owned());
    }
    if let Some(instructions) = object.get("instructions").and_then(Json::as_str) {
        messages.push(json!({"role": "system", "content": instructions}));
        message_paths.push("instructions".to_owned());
    }
    // Gemini's system instruction, in the REST (camelCase) or the SDK's (snake_case) spelling.
    for key in ["systemInstruction", "system_instruction"] {
        if let Some(system) = object.get(key).filter(|s| !s.is_null()) {
            messages.push(json!({"role": "system", "content": gemini_text(system)}));
            message_paths.push(key.to_owned());
        }
    }
    // Bedrock Converse keeps its tools in `toolConfig.tools`.
    let tools = taken_tools.or_else(|| {
        object
            .get("tools")
            .or_else(|| object.get("toolConfig")?.get("tools"))
            .filter(|t| !t.is_null())
            .map(|t| Arc::new(chat_tools(t)))
    });
    if let Some(Json::Array(list)) = taken {
        for (i, message) in list.into_iter().enumerate() {
            let rewritten = match rewrites(&message) {
                true => chat_messages(&message),
                false => vec![message],
            };
            for m in rewritten {
                messages.push(m);
                message_paths.push(message_path(i));
            }
        }
    } else if let Some(list) = object.get("messages") {
        let list = list.as_array().ok_or("`messages` is not a list")?;
        for (i, message) in list.iter().enumerate() {
            for m in chat_messages(message) {
                messages.push(m);
                message_paths.push(message_path(i));
            }
        }
    } else if let Some(list) = object.get("contents") {
        // Gemini generateContent.
        let list = list.as_array().ok_or("`contents` is not a list")?;
        for (i, content) in list.iter().enumerate() {
            for m in gemini_content(content) {
                messages.push(m);
                message_paths.push(format!("contents[{i}]"));
            }
        }
    } else if let Some(input) = object.get("input") {
        match input {
            Json::String(text) => {
                messages.push(json!({"role": "user", "content": text}));
                message_paths.push("input".to_owned());
            }
            Json::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    for m in responses_item(item) {
                        messages.push(m);
                        message_paths.push(format!("input[{i}]"));
                    }
                }
            }
            _ => return Err("`input` is neither text nor a list".into()),
        }
    } else if let Some(prompt) = object.get("prompt") {
        let prompt = match prompt {
            Json::String(s) => s.clone(),
            Json::Array(list) if list.len() == 1 && list[0].is_string() => {
                list[0].as_str().unwrap_or_default().to_owned()
            }
            _ => return Err("`prompt` is not one text".into()),
        };
        return Ok(RequestBody {
            messages: messages.into_iter().map(Arc::new).collect(),
            message_paths,
            tools,
            prompt: Some(prompt),
            raw_messages: None,
            raw_tools: None,
        });
    } else {
        return Err("no `messages`, `contents`, `input` or `prompt` in the request".into());
    }
    if messages.is_empty() {
        return Err("the request has no messages".into());
    }
    Ok(RequestBody {
        messages: messages.into_iter().map(Arc::new).collect(),
        message_paths,
        tools,
        prompt: None,
        raw_messages: None,
        raw_tools: None,
    })
}

/// `messages[i]`, the path of a logged message (without `format!`'s machinery: it is made
/// for every message of every request).
pub(crate) fn message_path(i: usize) -> String {
    let mut digits = [0u8; 20];
    let (mut n, mut at) = (i, digits.len());
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let digits = std::str::from_utf8(&digits[at..]).expect("ASCII digits");
    let mut path = String::with_capacity("messages[]".len() + digits.len());
    path.push_str("messages[");
    path.push_str(digits);
    path.push(']');
    path
}

/// The chat messages a logged message becomes ([`chat_messages`], taking it over where it
/// stays as it is).
pub(crate) fn logged_message(message: Json) -> Vec<Json> {
    match rewrites(&message) {
        true => chat_messages(&message),
        false => vec![message],
    }
}

/// A message as a chat template reads it: content parts and blocks joined into text, Anthropic
/// `tool_use` / `tool_result` blocks as tool calls and tool messages.
fn chat_messages(message: &Json) -> Vec<Json> {
    if !rewrites(message) {
        return vec![message.clone()];
    }
    let Some(Json::Array(blocks)) = message.get("content") else {
        return vec![message.clone()];
    };
    let object = message.as_object().expect("checked by `rewrites`");
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Json::as_str) {
            Some("tool_use") => calls.push(json!({
                "id": block.get("id"), "type": "function",
                "function": {"name": block.get("name"), "arguments": block.get("input").map(Json::to_string)}
            })),
            Some("tool_result") => results.push(json!({
                "role": "tool", "tool_call_id": block.get("tool_use_id"),
                "content": block.get("content").map(text_of).unwrap_or_default()
            })),
            _ => match (block.get("toolUse"), block.get("toolResult")) {
                // Bedrock Converse's blocks.
                (Some(call), _) => calls.push(json!({
                    "id": call.get("toolUseId"), "type": "function",
                    "function": {"name": call.get("name"), "arguments": call.get("input").map(Json::to_string)}
                })),
                (_, Some(result)) => results.push(json!({
                    "role": "tool", "tool_call_id": result.get("toolUseId"),
                    "content": result.get("content").map(converse_text).unwrap_or_default()
                })),
                _ => text.push_str(&text_of(block)),
            },
        }
    }
    let mut out = Vec::new();
    if !text.is_empty() || !calls.is_empty() || results.is_empty() {
        let mut m = object.clone();
        m.insert("content".into(), Json::String(text));
        if !calls.is_empty() {
            m.insert("tool_calls".into(), Json::Array(calls));
        }
        out.push(Json::Object(m));
    }
    out.extend(results);
    out
}

/// Whether [`chat_messages`] rewrites a message: one whose content blocks hold Anthropic's or
/// Bedrock's tool calls or results. (Content parts stay a list: each engine joins them its
/// own way, `server_view`.)
fn rewrites(message: &Json) -> bool {
    let Some(Json::Array(blocks)) = message.get("content") else {
        return false;
    };
    let anthropic = |b: &Json| {
        matches!(
            b.get("type").and_then(Json::as_str),
            Some("tool_use" | "tool_result")
        ) || b.get("toolUse").is_some()
            || b.get("toolResult").is_some()
    };
    blocks.iter().any(anthropic)
}

/// Text of a string, a content part, or a list of them.
fn text_of(value: &Json) -> String {
    match value {
        Json::String(s) => s.clone(),
        Json::Array(parts) => parts.iter().map(text_of).collect(),
        Json::Object(part) => part
            .get("text")
            .or_else(|| part.get("content"))
            .map(text_of)
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// Text of a Converse tool result's content blocks (`text`, or `json` written out).
fn converse_text(content: &Json) -> String {
    match content {
        Json::Array(blocks) => blocks
            .iter()
            .map(|b| match b.get("json") {
                Some(value) => value.to_string(),
                None => text_of(b),
            })
            .collect(),
        other => text_of(other),
    }
}

/// Text of a Gemini `Content` (`{"parts": [{"text"}]}`), or of a bare text.
fn gemini_text(content: &Json) -> String {
    match content.get("parts") {
        Some(parts) => parts
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("text").and_then(Json::as_str))
            .collect(),
        None => text_of(content),
    }
}

/// A Gemini `Content` as chat messages: `model` is the assistant, `functionCall` parts are
/// tool calls and `functionResponse` parts tool messages.
fn gemini_content(content: &Json) -> Vec<Json> {
    let role = match content.get("role").and_then(Json::as_str) {
        Some("model") => "assistant",
        Some(other) => other,
        None => "user",
    };
    let parts = content
        .get("parts")
        .and_then(Json::as_array)
        .cloned()
        .unwrap_or_default();
    let field = |p: &Json, camel: &str, snake: &str| p.get(camel).or_else(|| p.get(snake)).cloned();
    let responses: Vec<Json> = parts
        .iter()
        .filter_map(|p| field(p, "functionResponse", "function_response"))
        .map(|r| {
            json!({"role": "tool", "tool_call_id": r.get("id").or_else(|| r.get("name")),
                   "content": r.get("response").map(Json::to_string).unwrap_or_default()})
        })
        .collect();
    if !responses.is_empty() {
        return responses;
    }
    let calls: Vec<Json> = parts
        .iter()
        .filter_map(|p| field(p, "functionCall", "function_call"))
        .map(|c| {
            json!({"id": c.get("id").or_else(|| c.get("name")), "type": "function",
                   "function": {"name": c.get("name"),
                                "arguments": c.get("args").map(Json::to_string).unwrap_or_else(|| "{}".into())}})
        })
        .collect();
    let mut out = Map::new();
    out.insert("role".into(), json!(role));
    out.insert("content".into(), json!(gemini_text(content)));
    if !calls.is_empty() {
        out.insert("tool_calls".into(), Json::Array(calls));
    }
    vec![Json::Object(out)]
}

/// A Responses API input item as chat messages.
fn responses_item(item: &Json) -> Vec<Json> {
    match item.get("type").and_then(Json::as_str) {
        Some("function_call") => vec![json!({"role": "assistant", "content": "", "tool_calls": [{
            "id": item.get("call_id"), "type": "function",
            "function": {"name": item.get("name"), "arguments": item.get("arguments")}
        }]})],
        Some("function_call_output") => vec![json!({
            "role": "tool", "tool_call_id": item.get("call_id"),
            "content": item.get("output").map(text_of).unwrap_or_default()
        })],
        _ => vec![json!({
            "role": item.get("role").and_then(Json::as_str).unwrap_or("user"),
            "content": item.get("content").map(text_of).unwrap_or_default()
        })],
    }
}

/// Tools in the chat-completions shape, from that shape, the Responses shape
/// (`{"type": "function", "name", "parameters"}`) or Anthropic's (`input_schema`).
fn chat_tools(tools: &Json) -> Json {
    let Some(list) = tools.as_array() else {
        return tools.clone();
    };
    // Gemini groups its functions (`functionDeclarations`); Converse wraps each in `toolSpec`
    // and marks cache points between them.
    let list: Vec<&Json> = list
        .iter()
        .flat_map(|tool| {
            match tool
                .get("functionDeclarations")
                .or_else(|| tool.get("function_declarations"))
                .and_then(Json::as_array)
            {
                Some(functions) => functions.iter().collect(),
                None => vec![tool.get("toolSpec").unwrap_or(tool)],
            }
        })
        .filter(|tool| tool.get("cachePoint").is_none())
        .collect();
    Json::Array(
        list.into_iter()
            .map(|tool| {
                if tool.get("function").is_some() {
                    return tool.clone();
                }
                let Some(name) = tool.get("name") else {
                    return tool.clone();
                };
                let mut function = Map::new();
                function.insert("name".into(), name.clone());
                if let Some(d) = tool.get("description") {
                    function.insert("description".into(), d.clone());
                }
                let converse_schema = tool.get("inputSchema").map(|s| s.get("json").unwrap_or(s));
                if let Some(p) = tool
                    .get("parameters")
                    .or_else(|| tool.get("input_schema"))
                    .or(converse_schema)
                {
                    function.insert("parameters".into(), p.clone());
                }
                json!({"type": "function", "function": function})
            })
            .collect(),
    )
}

/// The reply of a chat-completions response (`choices[0]`); `server`: the response the
/// server itself returned, where it differs.
fn reply_of<D: Doc>(response: &D, server: Option<&D>) -> Option<Reply> {
    fn choice<D: Doc>(r: &D) -> Option<&D> {
        pointer(r, "/choices/0")
    }
    let sent = choice(response)?;
    let message = sent.get("message")?;
    let mut client = serde_json::Map::new();
    client.insert("role".into(), json!("assistant"));
    client.insert(
        "content".into(),
        message
            .get("content")
            .map_or(Json::Null, |c| c.json().into_owned()),
    );
    if let Some(calls) = message
        .get("tool_calls")
        .filter(|c| c.elements().is_some_and(|a| !a.is_empty()))
    {
        client.insert("tool_calls".into(), calls.json().into_owned());
    }
    let generated = server.and_then(choice).unwrap_or(sent);
    let generated_text = pointer(generated, "/message/content")
        .and_then(|c| Some(c.json().as_str()?.to_owned()))
        .unwrap_or_default();
    let generated_ids = pointer(generated, "/logprobs/content")
        .and_then(D::elements)
        .and_then(|tokens| {
            tokens
                .iter()
                .map(|t| t.get("id")?.json().as_u64().map(|id| id as u32))
                .collect::<Option<Vec<u32>>>()
        });
    let completion_tokens = pointer(server.unwrap_or(response), "/usage/completion_tokens")
        .and_then(|n| n.json().as_u64())
        .map(|n| n as usize);
    Some(Reply {
        message: Json::Object(client),
        generated_text,
        generated_ids,
        completion_tokens,
    })
}

/// (cached tokens, prompt tokens) from a response, its `usage`, or a bare usage object.
pub fn usage_of(response: &Json) -> (Option<usize>, Option<usize>) {
    let usage = usage::of_response(response);
    (usage.read, usage.prompt)
}

/// When a record's request was sent and its response complete: `metadata.timestamp` (or
/// `start_time`), and `metadata.end_time`, else the start plus `duration_ms`.
fn times_of<D: Doc>(metadata: Option<&D>) -> (Option<f64>, Option<f64>) {
    let Some(m) = metadata else {
        return (None, None);
    };
    let sent = ["timestamp", "start_time"]
        .iter()
        .find_map(|k| time_of(&m.get(k)?.json()));
    let done = m
        .get("end_time")
        .and_then(|t| time_of(&t.json()))
        .or_else(|| {
            let ms = number(&m.get("duration_ms")?.json())?;
            Some(sent? + ms / 1000.0)
        });
    (sent, done)
}

/// Generated tokens from a response, its `usage`, or a bare usage object.
fn completion_tokens_of<D: Doc>(response: &D) -> Option<usize> {
    let usage = response
        .get("usage")
        .or_else(|| response.get("usageMetadata"))
        .unwrap_or(response);
    ["completion_tokens", "output_tokens", "candidatesTokenCount"]
        .iter()
        .find_map(|k| usage.get(k)?.json().as_u64())
        .map(|n| n as usize)
}

fn number(value: &Json) -> Option<f64> {
    match value {
        Json::Number(n) => n.as_f64(),
        Json::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// Seconds since the epoch from a number or an ISO-8601 text.
fn time_of(value: &Json) -> Option<f64> {
    number(value).or_else(|| {
        let text = value.as_str()?;
        let at = chrono::DateTime::parse_from_rfc3339(text).ok()?;
        Some(at.timestamp() as f64 + f64::from(at.timestamp_subsec_nanos()) / 1e9)
    })
}

/// The GenAI spans of one OTLP JSON export, in start-time order.
fn parse_otlp(record: &Json, line: usize) -> Parsed {
    let mut out: Vec<(f64, Logged)> = Vec::new();
    let spans = record["resourceSpans"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|r| r["scopeSpans"].as_array().into_iter().flatten())
        .flat_map(|s| s["spans"].as_array().into_iter().flatten());
    for span in spans {
        let mut attributes = Map::new();
        for a in span["attributes"].as_array().into_iter().flatten() {
            if let (Some(k), Some(v)) = (a["key"].as_str(), a.get("value")) {
                attributes.insert(k.to_owned(), otlp_value(v));
            }
        }
        let Some((messages, paths)) =
            genai_input(&attributes)?.or_else(|| openinference_input(&attributes))
        else {
            continue;
        };
        let tools = attributes
            .get("gen_ai.tool.definitions")
            .and_then(Json::as_str)
            .and_then(|s| serde_json::from_str::<Json>(s).ok())
            .map(|t| chat_tools(&t))
            .or_else(|| openinference_tools(&attributes));
        let session = ["session.id", "gen_ai.conversation.id"]
            .iter()
            .find_map(|k| attributes.get(*k)?.as_str())
            .map(str::to_owned);
        let nanos = |k: &str| span.get(k).and_then(number).unwrap_or(0.0) / 1e9;
        let (start, end) = (nanos("startTimeUnixNano"), nanos("endTimeUnixNano"));
        let usage = usage::of_span(&attributes);
        let model = ["gen_ai.request.model", "llm.model_name"]
            .iter()
            .find_map(|k| attributes.get(*k)?.as_str())
            .map(str::to_owned);
        out.push((
            start,
            Logged {
                line,
                body: RequestBody {
                    messages: messages.into_iter().map(Arc::new).collect(),
                    message_paths: paths,
                    tools: tools.map(Arc::new),
                    prompt: None,
                    raw_messages: None,
                    raw_tools: None,
                },
                session,
                logged_cached_tokens: usage.read,
                logged_prompt_tokens: usage.prompt,
                time: (start > 0.0).then_some(start),
                done: (end > 0.0).then_some(end),
                reply: openinference_reply(&attributes),
                usage,
                model,
                completion_tokens: ["gen_ai.usage.output_tokens", "llm.token_count.completion"]
                    .iter()
                    .find_map(|k| attributes.get(*k).and_then(number))
                    .map(|n| n as usize),
                // `done` has the span's end.
                duration: None,
            },
        ));
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    Ok(out.into_iter().map(|(_, l)| l).collect())
}

type SpanMessages = (Vec<Json>, Vec<String>);

/// The chat of a GenAI span: `gen_ai.system_instructions` and `gen_ai.input.messages`.
fn genai_input(
    attributes: &Map<String, Json>,
) -> std::result::Result<Option<SpanMessages>, String> {
    let Some(input) = attributes
        .get("gen_ai.input.messages")
        .and_then(Json::as_str)
    else {
        return Ok(None);
    };
    let input: Json = serde_json::from_str(input)
        .map_err(|e| format!("gen_ai.input.messages is not JSON: {e}"))?;
    let mut messages = Vec::new();
    let mut paths = Vec::new();
    if let Some(system) = attributes
        .get("gen_ai.system_instructions")
        .and_then(Json::as_str)
        .and_then(|s| serde_json::from_str::<Json>(s).ok())
    {
        messages.push(json!({"role": "system", "content": parts_text(&system)}));
        paths.push("gen_ai.system_instructions".to_owned());
    }
    for (i, m) in input.as_array().into_iter().flatten().enumerate() {
        for converted in genai_message(m) {
            messages.push(converted);
            paths.push(format!("gen_ai.input.messages[{i}]"));
        }
    }
    Ok(Some((messages, paths)))
}

/// The chat of an OpenInference span, flattened into attributes:
/// `llm.input_messages.{i}.message.role` / `.content` (or `.contents.{j}.message_content.text`),
/// `.tool_calls.{j}.tool_call.{id,function.name,function.arguments}` and `.tool_call_id`.
fn openinference_input(attributes: &Map<String, Json>) -> Option<SpanMessages> {
    let text = |k: String| attributes.get(&k).and_then(Json::as_str);
    let mut messages = Vec::new();
    let mut paths = Vec::new();
    for i in 0.. {
        let base = format!("llm.input_messages.{i}.message");
        let Some(role) = text(format!("{base}.role")) else {
            break;
        };
        let content = match text(format!("{base}.content")) {
            Some(c) => c.to_owned(),
            None => (0..)
                .map_while(|j| text(format!("{base}.contents.{j}.message_content.text")))
                .collect(),
        };
        let mut message = Map::new();
        message.insert("role".into(), json!(role));
        message.insert("content".into(), json!(content));
        let calls: Vec<Json> = (0..)
            .map_while(|j| {
                let call = format!("{base}.tool_calls.{j}.tool_call");
                let name = text(format!("{call}.function.name"))?;
                let arguments = text(format!("{call}.function.arguments")).unwrap_or("{}");
                Some(json!({"id": text(format!("{call}.id")), "type": "function",
                            "function": {"name": name, "arguments": arguments}}))
            })
            .collect();
        if !calls.is_empty() {
            message.insert("tool_calls".into(), Json::Array(calls));
        }
        if let Some(id) = text(format!("{base}.tool_call_id")) {
            message.insert("tool_call_id".into(), json!(id));
        }
        messages.push(Json::Object(message));
        paths.push(format!("llm.input_messages[{i}]"));
    }
    (!messages.is_empty()).then_some((messages, paths))
}

/// OpenInference's reply: `llm.output_messages.0.message.content`, with
/// `llm.token_count.completion`.
fn openinference_reply(attributes: &Map<String, Json>) -> Option<Reply> {
    let text = attributes
        .get("llm.output_messages.0.message.content")?
        .as_str()?;
    Some(Reply {
        message: json!({"role": "assistant", "content": text}),
        generated_text: text.to_owned(),
        generated_ids: None,
        completion_tokens: attributes
            .get("llm.token_count.completion")
            .and_then(number)
            .map(|n| n as usize),
    })
}

/// OpenInference's tools: `llm.tools.{i}.tool.json_schema`, each a JSON text.
fn openinference_tools(attributes: &Map<String, Json>) -> Option<Json> {
    let tools: Vec<Json> = (0..)
        .map_while(|i| {
            attributes
                .get(&format!("llm.tools.{i}.tool.json_schema"))
                .and_then(Json::as_str)
        })
        .filter_map(|s| serde_json::from_str(s).ok())
        .collect();
    (!tools.is_empty()).then(|| chat_tools(&Json::Array(tools)))
}

/// An OTLP `AnyValue` as plain JSON (int64s arrive as strings in OTLP JSON).
fn otlp_value(value: &Json) -> Json {
    if let Some(s) = value.get("stringValue") {
        return s.clone();
    }
    if let Some(i) = value.get("intValue") {
        return number(i).map_or(Json::Null, |n| json!(n as i64));
    }
    if let Some(d) = value.get("doubleValue") {
        return d.clone();
    }
    if let Some(b) = value.get("boolValue") {
        return b.clone();
    }
    if let Some(values) = pointer(value, "/arrayValue/values").and_then(Json::as_array) {
        return Json::Array(values.iter().map(otlp_value).collect());
    }
    Json::Null
}

fn parts_text(parts: &Json) -> String {
    parts
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p.get("type").and_then(Json::as_str) == Some("text"))
        .filter_map(|p| p.get("content").and_then(Json::as_str))
        .collect()
}

/// A GenAI semantic-conventions message (`{"role", "parts": [...]}`) as chat messages.
fn genai_message(message: &Json) -> Vec<Json> {
    let role = message.get("role").and_then(Json::as_str).unwrap_or("user");
    let parts = message.get("parts").cloned().unwrap_or(Json::Null);
    let parts = parts.as_array().cloned().unwrap_or_default();
    let responses: Vec<Json> = parts
        .iter()
        .filter(|p| p.get("type").and_then(Json::as_str) == Some("tool_call_response"))
        .map(|p| {
            let response = match p.get("response") {
                Some(Json::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            json!({"role": "tool", "tool_call_id": p.get("id"), "content": response})
        })
        .collect();
    if !responses.is_empty() {
        return responses;
    }
    let calls: Vec<Json> = parts
        .iter()
        .filter(|p| p.get("type").and_then(Json::as_str) == Some("tool_call"))
        .map(|p| {
            let arguments = match p.get("arguments") {
                Some(Json::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => "{}".into(),
            };
            json!({"id": p.get("id"), "type": "function",
                   "function": {"name": p.get("name"), "arguments": arguments}})
        })
        .collect();
    let mut out = Map::new();
    out.insert("role".into(), json!(role));
    out.insert("content".into(), json!(parts_text(&Json::Array(parts))));
    if !calls.is_empty() {
        out.insert("tool_calls".into(), Json::Array(calls));
    }
    vec![Json::Object(out)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_skipped_whole_and_the_next_line_reads() {
        let data = format!("{}\nshort\n", "x".repeat(100));
        let mut reader: Box<dyn BufRead> = Box::new(BufReader::with_capacity(8, data.as_bytes()));
        let mut buf = Vec::new();
        assert_eq!(next_line(&mut *reader, &mut buf, 10).unwrap(), Some(false));
        assert_eq!(next_line(&mut *reader, &mut buf, 10).unwrap(), Some(true));
        assert_eq!(buf, b"short");
        assert_eq!(next_line(&mut *reader, &mut buf, 10).unwrap(), None);
    }

    #[test]
    fn chunks_parse_in_parallel_and_hand_over_in_log_order() {
        // Past a chunk of not-JSON lines, the first record fixes the format; a bare body
        // after it is then not a record (as a serial reader reads it), in every chunk.
        let record = |i: usize| {
            json!({"request": {"messages": [{"role": "user", "content": format!("q{i}")}]},
                   "metadata": {"session_id": format!("s{}", i % 7)}})
            .to_string()
        };
        let mut log = String::new();
        for i in 1..=3 * CHUNK_LINES {
            let line = match i {
                _ if i < 600 => "not json".to_owned(),
                _ if i % 97 == 0 => {
                    json!({"messages": [{"role": "user", "content": "x"}]}).to_string()
                }
                _ if i % 89 == 0 => String::new(),
                _ => record(i),
            };
            log.push_str(&line);
            log.push('\n');
        }
        let mut seen = Vec::new();
        let skipped = read_bytes(
            "log",
            log.as_bytes(),
            None,
            &SessionKey::Defaults,
            1 << 20,
            |_, r| {
                // The messages are kept as text until the server's view parses them.
                let body = super::super::server_view::ServerView::AsSent
                    .apply(&r.body)
                    .unwrap();
                seen.push((
                    r.line,
                    r.session.clone(),
                    body.messages[0]["content"].clone(),
                ));
                Ok(())
            },
        )
        .unwrap();
        let expected: Vec<_> = (600..=3 * CHUNK_LINES)
            .filter(|i| i % 97 != 0 && i % 89 != 0)
            .map(|i| (i, Some(format!("s{}", i % 7)), json!(format!("q{i}"))))
            .collect();
        assert_eq!(seen, expected);
        let bodies = (600..=3 * CHUNK_LINES).filter(|i| i % 97 == 0).count();
        assert_eq!(skipped.count, 599 + bodies);
        let lines: Vec<usize> = skipped.first.iter().map(|s| s.line).collect();
        assert_eq!(lines, (1..=SkipLog::KEPT).collect::<Vec<_>>());
    }

    /// A log of `n` records over 7 sessions, one a line.
    fn records(n: usize) -> String {
        (1..=n)
            .map(|i| {
                json!({"request": {"messages": [{"role": "user", "content": format!("q{i}")}]},
                       "metadata": {"session_id": format!("s{}", i % 7)}})
                .to_string()
                    + "\n"
            })
            .collect()
    }

    /// Reads `log` (plain text in memory) as `read_all` reads a file, with the defaults.
    fn read_log(log: &str, each: &mut dyn FnMut(&str, Logged) -> Result<()>) -> Result<SkipLog> {
        read_bytes(
            "log",
            log.as_bytes(),
            None,
            &SessionKey::Defaults,
            1 << 20,
            each,
        )
    }

    #[test]
    fn read_ahead_hands_over_in_log_order_through_its_three_stages() {
        let log = records(3 * CHUNK_LINES + 5);
        let mut flushed = Vec::new();
        let skipped = read_ahead(
            "test",
            10,
            |each| read_log(&log, each),
            |batch: Batch| batch.iter().map(|(_, r)| r.line).collect::<Vec<_>>(),
            |lines| {
                assert!(lines.len() <= 10);
                flushed.extend(lines);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(skipped.count, 0);
        assert_eq!(flushed, (1..=3 * CHUNK_LINES + 5).collect::<Vec<_>>());
    }

    #[test]
    fn a_failing_flush_stops_the_reader_and_is_the_error() {
        let log = records(20 * CHUNK_LINES);
        let mut calls = 0;
        let error = read_ahead(
            "test",
            4,
            |each| read_log(&log, each),
            |batch: Batch| batch.len(),
            |_| {
                calls += 1;
                match calls {
                    3 => Err(Error::input("the output is full")),
                    _ => Ok(()),
                }
            },
        )
        .unwrap_err();
        assert!(error.to_string().contains("the output is full"), "{error}");
        assert_eq!(calls, 3);
    }

    #[test]
    fn a_truncated_gzip_hands_over_what_it_read_then_names_the_line() {
        use std::io::Write;
        let log = records(2 * CHUNK_LINES);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(log.as_bytes()).unwrap();
        let bytes = gz.finish().unwrap();
        let cut = &bytes[..bytes.len() * 3 / 4];
        let mut lines = Vec::new();
        let error = read_bytes(
            "log.gz",
            cut,
            None,
            &SessionKey::Defaults,
            1 << 20,
            |_, r| {
                lines.push(r.line);
                Ok(())
            },
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("log.gz:") && error.contains("truncated"),
            "{error}"
        );
        assert!(lines.len() > CHUNK_LINES, "{}", lines.len());
        assert_eq!(lines, (1..=lines.len()).collect::<Vec<_>>());
    }

    #[test]
    fn anthropic_bodies_become_chat_messages() {
        let body = json!({"system": [{"type": "text", "text": "S", "cache_control": {"type": "ephemeral"}}],
            "tools": [{"name": "f", "input_schema": {"type": "object"}}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]});
        let parsed = parse_body(&body).unwrap();
        assert_eq!(
            *parsed.messages[0],
            json!({"role": "system", "content": "S"})
        );
        assert_eq!(parsed.message_paths, ["system", "messages[0]"]);
        assert_eq!(parsed.tools.unwrap()[0]["function"]["name"], "f");
    }

    #[test]
    fn message_paths_are_written_as_format_writes_them() {
        for i in [0, 1, 9, 10, 99, 12345, usize::MAX] {
            assert_eq!(message_path(i), format!("messages[{i}]"));
        }
    }

    #[test]
    fn cached_token_fields_of_each_engine() {
        for (usage, cached) in [
            (
                json!({"usage": {"prompt_tokens_details": {"cached_tokens": 5}}}),
                5,
            ),
            (
                json!({"usage": {"cache_read_input_tokens": 6, "input_tokens": 1}}),
                6,
            ),
            (json!({"usage": {"prompt_cache_hit_tokens": 7}}), 7),
            (json!({"usageMetadata": {"cachedContentTokenCount": 8}}), 8),
            (json!({"timings": {"cache_n": 9}}), 9),
        ] {
            assert_eq!(usage_of(&usage).0, Some(cached));
        }
    }

    /// The fast path ([`parse_borrowed`]) and its fallback (`serde_json` whole) make the same
    /// request of a line; a line the one-pass reader refuses (nested past its depth, a
    /// duplicate key on the way to the messages, a surrogate it leaves to `serde_json`) or
    /// that has no `messages` list goes to the fallback, and a line neither takes is skipped.
    #[test]
    fn the_fast_path_and_its_fallback_make_the_same_request() {
        let deep = format!("{}1{}", "[".repeat(70), "]".repeat(70));
        let lines = [
            (r#"{"request": {"model": "m", "messages": [{"role": "system", "content": "s\u00e9\ud83d\ude00"}, {"role": "user", "content": "q"}], "tools": [{"type": "function", "function": {"name": "f"}}]}, "response": {"usage": {"prompt_tokens": 9, "prompt_tokens_details": {"cached_tokens": 4}}}, "metadata": {"session_id": "a", "n": 1.5e3}}"#.to_owned(), true),
            (format!(r#"{{"request": {{"messages": [{{"role": "user", "content": "q", "x": {deep}}}]}}, "metadata": {{"session_id": "b"}}}}"#), false),
            (r#"{"request": {"messages": [{"role": "user", "content": "q"}], "messages": [{"role": "user", "content": "r"}]}}"#.to_owned(), false),
            (r#"{"request": {"input": "a Responses body", "model": "m"}, "metadata": {"session_id": "c"}}"#.to_owned(), false),
            (r#"{"request": {"messages": [{"role": "user", "content": "\ud800"}]}}"#.to_owned(), false),
            (r#"{"request": {"messages": [{"role": "user", "content": "q"}]}"#.to_owned(), false),
        ];
        let key = SessionKey::Defaults;
        let (mut requests, mut skipped) = (0, 0);
        for (line, fast) in &lines {
            let text = line.as_bytes();
            let format = Some(InputFormat::Records);
            assert_eq!(
                parse_borrowed(text, InputFormat::Records, 1, &key).is_some(),
                *fast,
                "{line}"
            );
            let read = parse_line(text, format, 1, &key);
            let whole = match serde_json::from_slice(text) {
                Ok(record) => match parse(InputFormat::Records, record, 1, &key) {
                    Ok(requests) => LineOutcome::Requests(InputFormat::Records, requests),
                    Err(reason) => LineOutcome::Skipped(reason),
                },
                Err(e) => LineOutcome::Skipped(format!("not JSON: {e}")),
            };
            match (read, whole) {
                (LineOutcome::Requests(_, read), LineOutcome::Requests(_, whole)) => {
                    requests += 1;
                    assert_eq!(read.len(), whole.len());
                    for (a, b) in read.iter().zip(&whole) {
                        let summary = |r: &Logged| {
                            (
                                r.session.clone(),
                                r.logged_cached_tokens,
                                r.logged_prompt_tokens,
                                r.model.clone(),
                            )
                        };
                        assert_eq!(summary(a), summary(b), "{line}");
                        let view = |r: &Logged| {
                            let body = super::super::server_view::ServerView::AsSent
                                .apply(&r.body)
                                .unwrap();
                            (body.messages, body.message_paths, body.tools, body.prompt)
                        };
                        assert_eq!(view(a), view(b), "{line}");
                    }
                }
                (LineOutcome::Skipped(a), LineOutcome::Skipped(b)) => {
                    skipped += 1;
                    assert_eq!(a, b, "{line}");
                }
                _ => panic!("one path read what the other skipped: {line}"),
            }
        }
        assert_eq!((requests, skipped), (4, 2));
    }
}
