//! stdio framing (`Content-Length` headers, JSON bodies) that survives bad input.
//! `lsp-server`'s own stdio transport stops reading at the first malformed message, which
//! would end the server; here a message that does not parse is answered with JSON-RPC's
//! ParseError or InvalidRequest and the next one is read. Only the end of input (the client
//! hung up) stops the reader.

use crossbeam_channel::{Receiver, Sender};
use lsp_server::{Connection, Message};
use serde_json::{json, Value};
use std::io::{self, BufRead, Read, Write};
use std::thread::JoinHandle;

/// The largest message read: far above any prompt template, small enough to hold.
const MAX_BODY_BYTES: usize = 64 << 20;
/// The longest header line read.
const MAX_HEADER_BYTES: u64 = 8 << 10;

pub struct IoThreads {
    reader: JoinHandle<()>,
    writer: JoinHandle<()>,
}

impl IoThreads {
    /// Waits for the writer to flush. The reader may still be blocked on stdin when the
    /// client keeps it open after `exit`; it ends with the process.
    pub fn join(self) {
        let _ = self.writer.join();
        if self.reader.is_finished() {
            let _ = self.reader.join();
        }
    }
}

pub fn stdio() -> (Connection, IoThreads) {
    let (to_loop, receiver) = crossbeam_channel::bounded::<Message>(0);
    let (sender, from_loop) = crossbeam_channel::unbounded::<Message>();
    let reader = std::thread::Builder::new()
        .name("prefixlint-reader".into())
        .spawn(move || read_loop(to_loop))
        .expect("cannot start the reader thread");
    let writer = std::thread::Builder::new()
        .name("prefixlint-writer".into())
        .spawn(move || write_loop(from_loop))
        .expect("cannot start the writer thread");
    (
        Connection { sender, receiver },
        IoThreads { reader, writer },
    )
}

fn write_loop(messages: Receiver<Message>) {
    for message in messages {
        let mut stdout = io::stdout().lock();
        if message.write(&mut stdout).is_err() {
            // The client is gone; the reader sees the end of input.
            return;
        }
    }
}

/// Writes a JSON-RPC error reply that `lsp-server` cannot express (its ids are never null),
/// in one write so that it never interleaves with the writer thread's messages.
fn reply_error(replies: &mut impl Write, id: Value, code: i32, message: &str) {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        .to_string();
    let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
    let _ = replies.write_all(frame.as_bytes());
    let _ = replies.flush();
}

enum Frame {
    Body(Vec<u8>),
    /// A frame without a usable `Content-Length`, or too large: skipped.
    Bad(String),
    End,
}

fn read_loop(to_loop: Sender<Message>) {
    let stdin = io::stdin();
    read_messages(&mut stdin.lock(), &mut io::stdout(), |message| {
        to_loop.send(message).is_ok()
    });
}

/// Reads framed messages from `input` until it ends, handing each to `deliver` (which
/// returns false to stop) and answering each malformed one on `replies`.
pub fn read_messages(
    input: &mut impl BufRead,
    replies: &mut impl Write,
    mut deliver: impl FnMut(Message) -> bool,
) {
    loop {
        let body = match read_frame(input) {
            Frame::Body(body) => body,
            Frame::Bad(why) => {
                reply_error(
                    replies,
                    Value::Null,
                    lsp_server::ErrorCode::ParseError as i32,
                    &why,
                );
                continue;
            }
            Frame::End => return,
        };
        // Not UTF-8: read it with replacement characters rather than drop the message.
        let text = String::from_utf8_lossy(&body);
        let value: Value = match serde_json::from_str(&text) {
            Ok(value) => value,
            Err(e) => {
                reply_error(
                    replies,
                    Value::Null,
                    lsp_server::ErrorCode::ParseError as i32,
                    &format!("the message is not JSON: {e}"),
                );
                continue;
            }
        };
        let id = value.get("id").cloned();
        // `lsp-server` would read `{"id": 1, "method": 5}` as a response; JSON-RPC says
        // it is an invalid request.
        let shaped = value.is_object() && value.get("method").is_none_or(Value::is_string);
        let parsed = if shaped {
            serde_json::from_value::<Message>(value).map_err(|e| e.to_string())
        } else {
            Err("`method` must be a string".to_owned())
        };
        match parsed {
            Ok(message) => {
                if !deliver(message) {
                    return;
                }
            }
            // A malformed notification gets no reply; anything with an id (or no object
            // at all) does.
            Err(e) => {
                if let Some(id) = id.or((!shaped).then_some(Value::Null)) {
                    let id = if id.is_number() || id.is_string() {
                        id
                    } else {
                        Value::Null
                    };
                    reply_error(
                        replies,
                        id,
                        lsp_server::ErrorCode::InvalidRequest as i32,
                        &format!("not a JSON-RPC request, response or notification: {e}"),
                    );
                }
            }
        }
    }
}

fn read_frame(input: &mut impl BufRead) -> Frame {
    let mut length: Option<Result<usize, String>> = None;
    let mut saw_header = false;
    loop {
        let mut line = Vec::new();
        match input
            .by_ref()
            .take(MAX_HEADER_BYTES)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => return Frame::End,
            Ok(_) => {}
        }
        let line = String::from_utf8_lossy(&line);
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            if !saw_header {
                continue; // stray blank lines between messages
            }
            break;
        }
        saw_header = true;
        if let Some((name, value)) = line.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = Some(
                    value
                        .trim()
                        .parse::<usize>()
                        .map_err(|_| format!("invalid Content-Length `{}`", value.trim())),
                );
            }
        }
    }
    let length = match length {
        Some(Ok(length)) => length,
        Some(Err(why)) => return Frame::Bad(why),
        None => return Frame::Bad("a message without a Content-Length header".into()),
    };
    if length > MAX_BODY_BYTES {
        // Read past it without holding it.
        let skipped = io::copy(&mut input.by_ref().take(length as u64), &mut io::sink());
        return match skipped {
            Ok(n) if n as usize == length => Frame::Bad(format!(
                "a message of {length} bytes is over the limit of {MAX_BODY_BYTES}"
            )),
            _ => Frame::End,
        };
    }
    let mut body = vec![0; length];
    match input.read_exact(&mut body) {
        Ok(()) => Frame::Body(body),
        Err(_) => Frame::End, // the client hung up mid-message
    }
}
