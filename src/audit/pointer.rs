//! JSON Pointer lookups (`/usage/prompt_tokens_details/cached_tokens`) without allocating.
//!
//! `serde_json::Value::pointer` unescapes every token into a new `String` (two `replace`s)
//! before each lookup; the log's reader looks up a dozen pointers per record, most of them
//! absent, and that was 7% of `audit`'s instructions. The same lookup, borrowing the tokens
//! that need no unescaping (all of ours).

use serde_json::Value as Json;

/// `value.pointer(pointer)`, the same result.
pub fn pointer<'a>(value: &'a Json, pointer: &str) -> Option<&'a Json> {
    if pointer.is_empty() {
        return Some(value);
    }
    let rest = pointer.strip_prefix('/')?;
    rest.split('/').try_fold(value, |target, token| {
        if token.contains('~') {
            let token = token.replace("~1", "/").replace("~0", "~");
            step(target, &token)
        } else {
            step(target, token)
        }
    })
}

fn step<'a>(target: &'a Json, token: &str) -> Option<&'a Json> {
    match target {
        Json::Object(map) => map.get(token),
        Json::Array(list) => index(token).and_then(|i| list.get(i)),
        _ => None,
    }
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
        }
    }
}
