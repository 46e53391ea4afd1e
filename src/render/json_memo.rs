//! `tojson` of a value it has written before, by the value's identity.
//!
//! A logged session sends the same tools with every request, and the audit hands each
//! request the template value of the previous one's tools when they are the same JSON
//! (`audit::request::ChatValues`): every render of the session then writes the same
//! tools again. minijinja's plain maps and lists are immutable behind their `Arc`, so a
//! value made only of them (and of strings, numbers, booleans and none) always writes the
//! same text; such a value's text is kept here, with the value itself so its address is not
//! reused while the entry lives. Anything else (the mutable lists and dicts of
//! [`super::mutable`], other objects) is written every time.

use indexmap::IndexMap;
use minijinja::value::{Value, ValueKind};
use std::cell::RefCell;
use std::collections::HashMap;

/// Entries per thread before the memo is emptied (memory stays bounded).
const ENTRIES: usize = 4096;

/// Values nested deeper than this are not kept (they are written every time).
const DEPTH: usize = 32;

#[derive(Default)]
struct Memo {
    /// Keyed by the address of the value's map or list and which `tojson` wrote it.
    entries: HashMap<(usize, u8), (Value, Value)>,
}

thread_local! {
    static MEMO: RefCell<Memo> = RefCell::default();
}

/// The address of a plain map's or list's contents, which live as long as the value.
fn identity(value: &Value) -> Option<usize> {
    if let Some(map) = value.downcast_object_ref::<IndexMap<Value, Value>>() {
        return Some(map as *const _ as usize);
    }
    value
        .downcast_object_ref::<Vec<Value>>()
        .map(|list| list as *const _ as usize)
}

/// Whether `value` is made only of plain maps and lists, strings, numbers, booleans and
/// none: then it never changes.
fn frozen(value: &Value, depth: usize) -> bool {
    match value.kind() {
        ValueKind::Undefined | ValueKind::None | ValueKind::Bool | ValueKind::Number => true,
        ValueKind::String => true,
        ValueKind::Map if depth < DEPTH => value
            .downcast_object_ref::<IndexMap<Value, Value>>()
            .is_some_and(|map| {
                map.iter()
                    .all(|(k, v)| frozen(k, depth + 1) && frozen(v, depth + 1))
            }),
        ValueKind::Seq if depth < DEPTH => value
            .downcast_object_ref::<Vec<Value>>()
            .is_some_and(|list| list.iter().all(|v| frozen(v, depth + 1))),
        _ => false,
    }
}

/// `write(value)`, or the text it gave for this same value before (`flavour` tells apart
/// the `tojson`s whose options differ).
pub fn written<E>(
    value: &Value,
    flavour: u8,
    write: impl FnOnce(&Value) -> Result<Value, E>,
) -> Result<Value, E> {
    let Some(at) = identity(value) else {
        return write(value);
    };
    let key = (at, flavour);
    if let Some(text) = MEMO.with(|memo| memo.borrow().entries.get(&key).map(|e| e.1.clone())) {
        return Ok(text);
    }
    let text = write(value)?;
    if frozen(value, 0) {
        MEMO.with(|memo| {
            let mut memo = memo.borrow_mut();
            if memo.entries.len() >= ENTRIES {
                memo.entries.clear();
            }
            memo.entries.insert(key, (value.clone(), text.clone()));
        });
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn a_plain_value_is_written_once_and_others_every_time() {
        let tool = crate::chat::json_value(&serde_json::json!({"name": "f", "n": [1, 2.5, null]}));
        let calls = Cell::new(0);
        let write = |v: &Value| -> Result<Value, ()> {
            calls.set(calls.get() + 1);
            Ok(Value::from(v.to_string()))
        };
        let first = written(&tool, 0, write).unwrap();
        assert_eq!(written(&tool.clone(), 0, write).unwrap(), first);
        assert_eq!(calls.get(), 1);
        // Another flavour of `tojson`, and an equal value that is another object.
        written(&tool, 1, write).unwrap();
        let twin = crate::chat::json_value(&serde_json::json!({"name": "f", "n": [1, 2.5, null]}));
        written(&twin, 0, write).unwrap();
        assert_eq!(calls.get(), 3);
        // A map holding something that may change is written every time.
        let holder = Value::from_iter([(Value::from("x"), Value::from_object(Counter))]);
        written(&holder, 0, write).unwrap();
        written(&holder, 0, write).unwrap();
        assert_eq!(calls.get(), 5);
    }

    #[derive(Debug)]
    struct Counter;
    impl minijinja::value::Object for Counter {}
}
