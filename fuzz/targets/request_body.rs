//! Bytes as a render that may be a hosted API's request body: `analyse::request_body::parse`
//! (the span-keeping JSON reader) against serde_json, then `request_body::read` (blocks,
//! `cache_control` marks, `prompt_cache_key`) with the embedded tokenizer.

use prefixlint::analyse::request_body::{self, Node, Value};
use prefixlint::render::instrument::OriginTable;
use prefixlint::render::Render;
use prefixlint::tokenize::HfTokenizer;
use std::ops::Range;
use std::sync::OnceLock;

fn engine() -> &'static HfTokenizer {
    static ENGINE: OnceLock<HfTokenizer> = OnceLock::new();
    ENGINE.get_or_init(|| HfTokenizer::builtin().expect("embedded tokenizer"))
}

/// Every span lies inside its parent's, on character boundaries, and a string's text is a
/// JSON string.
fn check_spans(text: &str, node: &Node, within: Range<usize>) {
    assert!(within.start <= node.span.start && node.span.end <= within.end);
    assert!(text.is_char_boundary(node.span.start) && text.is_char_boundary(node.span.end));
    match &node.value {
        Value::Object(fields) => {
            for field in fields {
                let key = &text[field.key_span.clone()];
                assert_eq!(
                    serde_json::from_str::<String>(key).ok().as_deref(),
                    Some(field.key.as_str())
                );
                check_spans(text, &field.value, node.span.clone());
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|item| check_spans(text, item, node.span.clone())),
        Value::String => assert!(node.string(text).is_some()),
        Value::Other => {}
    }
}

fn depth(value: &serde_json::Value) -> usize {
    match value {
        serde_json::Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        serde_json::Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = request_body::parse(text);
    let reference = serde_json::from_str::<serde_json::Value>(text);
    match (&parsed, &reference) {
        (Some(node), Ok(_)) => check_spans(text, node, 0..text.len()),
        (Some(_), Err(e)) => panic!("read as JSON, which serde_json rejects: {e}"),
        (None, Ok(value)) => assert!(
            depth(value) > 64,
            "serde_json reads it, the reader does not"
        ),
        (None, Err(_)) => {}
    }
    let render = Render {
        text: text.to_owned(),
        map: None,
    };
    if let Ok(Some(body)) =
        request_body::read(&render, engine(), &OriginTable::default(), "fuzz.j2")
    {
        for block in &body.blocks {
            assert!(!block.path.is_empty());
        }
    }
}
