//! A logged `messages` list kept as its JSON text until the request is built.
//!
//! Most requests of a session repeat the previous one's messages and add a turn or two. The
//! log's parse ([`parse_keeping`]) therefore keeps each message as text, checked as the whole
//! parse checks it but not made into a `serde_json::Value`; the request's build
//! ([`super::server_view::ServerView::apply_sharing`]) takes a message whose text equals the
//! session's previous request's message at the same place over from that request (parsed,
//! in the server's view: the same text gives the same messages) and parses the others.
//!
//! Exact by construction: a line the kept parse does not take as the whole parse would (a
//! message nested deeper than [`MAX_DEPTH`], a duplicate key on the path, anything
//! `serde_json` refuses) returns `None`, and the caller parses it whole.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value as Json};
use std::fmt;
use std::ops::Range;

/// A logged `messages` list as text: each message's span in `text`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawMessages {
    text: Box<str>,
    spans: Vec<Range<usize>>,
    /// Once the body is built: where each message's chat messages start in the body's
    /// `messages`, and one more entry, the end of the last (empty before the build).
    pub(crate) first: Vec<usize>,
}

impl RawMessages {
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Message `i`'s JSON text.
    pub fn message(&self, i: usize) -> &str {
        &self.text[self.spans[i].clone()]
    }

    /// A list read by [`super::doc::read_record`]: each message's text.
    pub(crate) fn of_list(list: &[&str]) -> RawMessages {
        let mut text = String::with_capacity(list.iter().map(|m| m.len()).sum());
        let mut spans = Vec::with_capacity(list.len());
        for message in list {
            spans.push(text.len()..text.len() + message.len());
            text.push_str(message);
        }
        RawMessages {
            text: text.into_boxed_str(),
            spans,
            first: Vec::new(),
        }
    }

    /// The chat messages message `i` became in the built body (`None` before the build).
    pub(crate) fn built(&self, i: usize) -> Option<Range<usize>> {
        Some(*self.first.get(i)?..*self.first.get(i + 1)?)
    }
}

/// Parses a record, keeping the list at `path` (`["request", "messages"]`) as text: the
/// record without that key, and the list. `Some((record, None))`: nothing to keep (no list
/// there: the record is whole). `None`: parse the line whole instead (see the module).
pub fn parse_keeping(line: &[u8], path: &[&str]) -> Option<(Json, Option<RawMessages>)> {
    if path.is_empty() || line.first() != Some(&b'{') {
        return None;
    }
    let mut found: Option<Vec<&RawValue>> = None;
    let mut de = serde_json::Deserializer::from_slice(line);
    let record = Path {
        rest: path,
        found: &mut found,
    }
    .deserialize(&mut de)
    .ok()?;
    de.end().ok()?;
    let Some(list) = found else {
        return Some((record, None));
    };
    let mut text = String::with_capacity(list.iter().map(|m| m.get().len()).sum());
    let mut spans = Vec::with_capacity(list.len());
    for message in &list {
        let message = message.get();
        match scan(message.as_bytes()) {
            Scan::Plain => {}
            Scan::Check => serde_json::from_str::<Checked>(message).ok().map(|_| ())?,
            Scan::Whole => return None,
        }
        spans.push(text.len()..text.len() + message.len());
        text.push_str(message);
    }
    Some((
        record,
        Some(RawMessages {
            text: text.into_boxed_str(),
            spans,
            first: Vec::new(),
        }),
    ))
}

/// What a message's text needs before it is kept (it is JSON: the raw capture read it).
#[derive(Debug, PartialEq)]
enum Scan {
    /// Nothing: `serde_json` reads it into a `Value`, at the line's depth and alone.
    Plain,
    /// The exact check ([`Checked`]): a `\u` escape of a surrogate (refused unpaired), a
    /// number with an exponent or very long (refused out of range).
    Check,
    /// The whole parse: nested deeper than [`MAX_DEPTH`].
    Whole,
}

/// Nesting a kept message may have: with the line's own (at most three levels around it),
/// far below `serde_json`'s recursion limit (128), so both parses accept it.
const MAX_DEPTH: usize = 64;

/// Walks a message's structure, skipping strings to their escapes and ends (`memchr`).
fn scan(text: &[u8]) -> Scan {
    let (mut depth, mut i, mut check) = (0usize, 0, false);
    while i < text.len() {
        match text[i] {
            b'"' => {
                i += 1;
                loop {
                    let Some(at) = memchr::memchr2(b'"', b'\\', &text[i..]) else {
                        return Scan::Whole;
                    };
                    i += at;
                    if text[i] == b'"' {
                        break;
                    }
                    if text.get(i + 1) == Some(&b'u') {
                        let surrogate = matches!(text.get(i + 2), Some(b'd' | b'D'))
                            && matches!(
                                text.get(i + 3),
                                Some(b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
                            );
                        check |= surrogate;
                        i += 6;
                    } else {
                        i += 2;
                    }
                }
                i += 1;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Scan::Whole;
                }
                i += 1;
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b't' | b'n' => i += 4,
            b'f' => i += 5,
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < text.len()
                    && matches!(text[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
                {
                    check |= matches!(text[i], b'e' | b'E');
                    i += 1;
                }
                check |= i - start > 300;
            }
            _ => i += 1,
        }
    }
    if check {
        Scan::Check
    } else {
        Scan::Plain
    }
}

/// A value on the way to the kept list: an object is read key by key (the key next on the
/// path read on, the others as `Value`s); anything else as `serde_json`'s `Value`.
struct Path<'p, 'f, 'de> {
    rest: &'p [&'p str],
    found: &'f mut Option<Vec<&'de RawValue>>,
}

impl<'de> DeserializeSeed<'de> for Path<'_, '_, 'de> {
    type Value = Json;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Json, D::Error> {
        d.deserialize_any(self)
    }
}

/// Duplicate keys on the path: the whole parse settles them (the last wins).
fn duplicate<E: de::Error>() -> E {
    E::custom("a duplicate key on the kept path")
}

impl<'de> Visitor<'de> for Path<'_, '_, 'de> {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if key != self.rest[0] {
                let value: Json = map.next_value()?;
                out.insert(key, value);
                continue;
            }
            if self.found.is_some() || out.contains_key(&key) {
                return Err(duplicate());
            }
            if self.rest.len() == 1 {
                if let Some(value) = map.next_value_seed(List {
                    found: &mut *self.found,
                })? {
                    out.insert(key, value);
                }
            } else {
                let value = map.next_value_seed(Path {
                    rest: &self.rest[1..],
                    found: &mut *self.found,
                })?;
                out.insert(key, value);
            }
        }
        Ok(Json::Object(out))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut out = Vec::new();
        while let Some(value) = seq.next_element::<Json>()? {
            out.push(value);
        }
        Ok(Json::Array(out))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
        Ok(Number::from_f64(v).map_or(Json::Null, Json::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
}

/// The value at the end of the path: a list is kept as its messages' texts (`None`: not in
/// the record); anything else is read as a `Value` and stays in the record.
struct List<'f, 'de> {
    found: &'f mut Option<Vec<&'de RawValue>>,
}

impl<'de> DeserializeSeed<'de> for List<'_, 'de> {
    type Value = Option<Json>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Json>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for List<'_, 'de> {
    type Value = Option<Json>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<Json>, A::Error> {
        let mut list = Vec::new();
        while let Some(message) = seq.next_element::<&'de RawValue>()? {
            list.push(message);
        }
        *self.found = Some(list);
        Ok(None)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Option<Json>, A::Error> {
        serde::Deserialize::deserialize(de::value::MapAccessDeserializer::new(map)).map(Some)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Option<Json>, E> {
        Ok(Some(Json::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Option<Json>, E> {
        Ok(Some(Json::Number(v.into())))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Option<Json>, E> {
        Ok(Some(Json::Number(v.into())))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Option<Json>, E> {
        Ok(Some(Number::from_f64(v).map_or(Json::Null, Json::Number)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Option<Json>, E> {
        Ok(Some(Json::String(v.to_owned())))
    }
    fn visit_unit<E>(self) -> Result<Option<Json>, E> {
        Ok(Some(Json::Null))
    }
}

/// A value read as `serde_json` reads it into a `Value` (every string unescaped and checked,
/// every number converted), with nothing kept: what the kept list's messages go through, so
/// a message the whole parse refuses sends its line to the whole parse.
struct Checked;

impl<'de> serde::Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Checked, D::Error> {
        d.deserialize_any(CheckedVisitor)
    }
}

struct CheckedVisitor;

impl<'de> Visitor<'de> for CheckedVisitor {
    type Value = Checked;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        while map.next_key::<Checked>()?.is_some() {
            map.next_value::<Checked>()?;
        }
        Ok(Checked)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kept parse: the record as the whole parse makes it, less the kept list, and the
    /// list's messages as the whole parse makes them.
    fn same_as_whole(line: &str, path: &[&str]) {
        let whole: Json = serde_json::from_str(line).unwrap();
        let (mut record, raw) = parse_keeping(line.as_bytes(), path).expect("kept");
        let raw = raw.expect("a list");
        let messages: Vec<Json> = (0..raw.len())
            .map(|i| serde_json::from_str(raw.message(i)).unwrap())
            .collect();
        let mut at = &mut record;
        for key in &path[..path.len() - 1] {
            at = at.get_mut(*key).unwrap();
        }
        at.as_object_mut()
            .unwrap()
            .insert(path[path.len() - 1].into(), Json::Array(messages));
        // Key order aside (the list goes last here): the same values.
        assert_eq!(record, whole, "{line}");
    }

    #[test]
    fn kept_lists_read_back_as_the_whole_parse() {
        same_as_whole(
            r#"{"request": {"model": "m", "messages": [{"role": "user", "content": "a\u00e9\ud83d\ude00"}, {"role": "assistant", "content": null, "tool_calls": [{"id": 1}]}], "n": 1.5e3}, "metadata": {"x": [1, -2, true]}}"#,
            &["request", "messages"],
        );
        same_as_whole(
            r#"{"messages": [ {"role": "user", "content": [ {"type": "text", "text": "x"} ] } ] }"#,
            &["messages"],
        );
        let (record, raw) = parse_keeping(br#"{"messages": []}"#, &["messages"]).unwrap();
        assert_eq!(record, serde_json::json!({}));
        assert!(raw.unwrap().is_empty());
    }

    #[test]
    fn the_scan_sends_only_surrogates_exponents_and_depth_further() {
        assert_eq!(
            scan(br#"{"a": "x\"y\\", "b": [1, -2.5, true, null, false]}"#),
            Scan::Plain
        );
        assert_eq!(scan(br#"{"a": "\u00e9\\ud800"}"#), Scan::Plain);
        assert_eq!(scan(br#"{"a": "\ud83d\ude00"}"#), Scan::Check);
        assert_eq!(scan(br#"{"a": "e", "n": 1e5}"#), Scan::Check);
        assert_eq!(scan(br#"{"a": "[[[[{{{{"}"#), Scan::Plain);
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(scan(deep.as_bytes()), Scan::Whole);
        // Paired surrogates and exponents in range are kept.
        let line = r#"{"messages": [{"content": "\ud83d\ude00", "n": 1.5e3}]}"#;
        let (_, raw) = parse_keeping(line.as_bytes(), &["messages"]).unwrap();
        assert_eq!(raw.unwrap().len(), 1);
    }

    #[test]
    fn no_list_on_the_path_leaves_the_record_whole() {
        for line in [
            r#"{"request": {"messages": "text"}}"#,
            r#"{"request": {"messages": {"a": [1]}}}"#,
            r#"{"request": "no object"}"#,
            r#"{"request": [1, 2]}"#,
            r#"{"other": 1}"#,
        ] {
            let whole: Json = serde_json::from_str(line).unwrap();
            let (record, raw) = parse_keeping(line.as_bytes(), &["request", "messages"]).unwrap();
            assert_eq!((record, raw), (whole, None), "{line}");
        }
    }

    #[test]
    fn what_the_whole_parse_decides_goes_to_it() {
        let deep = format!(
            r#"{{"messages": [{}1{}]}}"#,
            "[".repeat(MAX_DEPTH + 1),
            "]".repeat(MAX_DEPTH + 1)
        );
        for line in [
            // Refused by serde_json's `Value` parse, not by its raw capture.
            r#"{"messages": [{"content": "\ud800"}]}"#,
            r#"{"messages": [{"content": "\udc00x"}]}"#,
            r#"{"messages": [{"n": 1e999}]}"#,
            r#"{"messages": [{"n": [true, false, null, -1E+999]}]}"#,
            // Duplicates on the path, not JSON, not an object.
            r#"{"messages": [], "messages": []}"#,
            r#"{"messages": "a", "messages": []}"#,
            r#"{"messages": [{"role": "user"}"#,
            r#"[{"messages": []}]"#,
            deep.as_str(),
        ] {
            assert!(
                parse_keeping(line.as_bytes(), &["messages"]).is_none(),
                "{line}"
            );
        }
        // A request's duplicate is settled by the whole parse too.
        let line = r#"{"request": {"messages": []}, "request": {"messages": []}}"#;
        assert!(parse_keeping(line.as_bytes(), &["request", "messages"]).is_none());
    }
}
