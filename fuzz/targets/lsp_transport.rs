//! Arbitrary bytes as what an editor sends the language server on stdin: the framing
//! (`Content-Length` headers) and JSON-RPC parsing of `server::transport`. No panic, no
//! hang; every malformed message is answered with a well-framed JSON-RPC error; and reading
//! the same bytes one at a time gives the same messages and replies.

use prefixlint::server::transport::read_messages;
use std::io::BufReader;

pub fn run(data: &[u8]) {
    let (messages, replies) = read(&mut &data[..]);
    let (slow_messages, slow_replies) = read(&mut BufReader::with_capacity(1, data));
    assert_eq!(messages, slow_messages, "buffering changed the messages");
    assert_eq!(replies, slow_replies, "buffering changed the replies");
    check_replies(&replies);
}

/// The messages read (as JSON, to compare) and the reply bytes written.
fn read(input: &mut impl std::io::BufRead) -> (Vec<String>, Vec<u8>) {
    let mut messages = Vec::new();
    let mut replies = Vec::new();
    read_messages(input, &mut replies, |message| {
        messages.push(serde_json::to_string(&message).expect("a message serializes"));
        true
    });
    (messages, replies)
}

/// Each reply is `Content-Length: N\r\n\r\n` and N bytes of a JSON-RPC error object.
fn check_replies(mut replies: &[u8]) {
    while !replies.is_empty() {
        let header_end = replies
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("a reply header ends with a blank line");
        let header = std::str::from_utf8(&replies[..header_end]).expect("an ASCII header");
        let length: usize = header
            .strip_prefix("Content-Length: ")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("bad reply header {header:?}"));
        let body = &replies[header_end + 4..header_end + 4 + length];
        let reply: serde_json::Value = serde_json::from_slice(body).expect("a JSON reply");
        assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
        assert!(reply["error"]["code"].is_i64(), "{reply}");
        replies = &replies[header_end + 4 + length..];
    }
}
