//! JSON Pointer lookups (`/usage/prompt_tokens_details/cached_tokens`) without allocating.
//!
//! `serde_json::Value::pointer` unescapes every token into a new `String` (two `replace`s)
//! before each lookup; the log's reader looks up a dozen pointers per record, most of them
//! absent, and that was 7% of `audit`'s instructions. The same lookup, borrowing the tokens
//! that need no unescaping (all of ours), in a `Value` or a record read as it is looked into
//! ([`super::doc::Node`]).

use super::doc::Doc;

/// `value.pointer(pointer)`, the same result.
pub fn pointer<'a, D: Doc>(value: &'a D, pointer: &str) -> Option<&'a D> {
    if pointer.is_empty() {
        return Some(value);
    }
    let mut rest = pointer.strip_prefix('/')?;
    let mut target = value;
    // A byte loop splits a short text faster than a `char` pattern's searcher.
    loop {
        let end = rest.bytes().position(|b| b == b'/').unwrap_or(rest.len());
        let token = &rest[..end];
        target = if token.as_bytes().contains(&b'~') {
            let token = token.replace("~1", "/").replace("~0", "~");
            step(target, &token)?
        } else {
            step(target, token)?
        };
        if end == rest.len() {
            return Some(target);
        }
        rest = &rest[end + 1..];
    }
}

fn step<'a, D: Doc>(target: &'a D, token: &str) -> Option<&'a D> {
    if target.is_object() {
        return target.get(token);
    }
    target.at(index(token)?)
}

/// An array index as RFC 6901 writes it: no sign, no leading zero.
fn index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return None;
    }
    token.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_what_serde_json_finds() {
        let value = json!({
            "usage": {"prompt_tokens_details": {"cached_tokens": 3}},
            "choices": [{"message": {"content": "hi"}}, 7],
            "a/b": {"m~n": 1}, "": {"": 2}, "01": 4
        });
        for p in [
            "",
            "/",
            "//",
            "/usage/prompt_tokens_details/cached_tokens",
            "/usage/missing",
            "/choices/0/message/content",
            "/choices/1",
            "/choices/01",
            "/choices/+1",
            "/choices/2",
            "/choices/-",
            "/a~1b/m~0n",
            "/a~1b/m~n",
            "/01",
            "usage",
            "/usage/prompt_tokens_details/cached_tokens/x",
        ] {
            assert_eq!(pointer(&value, p), value.pointer(p), "{p}");
            let text = value.to_string();
            let node = super::super::doc::read(&text).unwrap();
            let found = pointer(&node, p).map(|n| n.json().into_owned());
            assert_eq!(found.as_ref(), value.pointer(p), "{p}");
        }
    }
}
