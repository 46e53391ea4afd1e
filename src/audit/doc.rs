//! A log record read in one pass, without a `serde_json::Value` of what is not looked at.
//!
//! A record's response, metadata and headers are small, but a `Value` of them costs a map
//! per object (SipHash-keyed: `preserve_order`) and the reader's lookups (a dozen usage
//! fields, most absent) a hash each; its `messages` and `tools` are large and only compared
//! as text. [`read_record`] reads a record of the kept formats ([`super::input`]'s records,
//! bodies, batch lines) into a [`Node`] tree that borrows its keys and strings from the line:
//! the body's `messages` list as its messages' texts (left out of the tree: they become a
//! [`super::raw_messages::RawMessages`]), the body's `tools` as their text. The
//! functions that read a record ([`super::usage::of_response`], `input`'s reply and times,
//! [`super::session::SessionKey::find`]) are written once over [`Doc`], which a `Value` and
//! a [`Node`] both are.
//!
//! Exact by refusal: the reader takes a strict part of what `serde_json` reads into a
//! `Value` (the same grammar, whitespace and escapes; surrogate escapes only paired; a number
//! other than a short plain integer is handed to `serde_json` itself; nesting at most
//! [`MAX_DEPTH`]; no object whose first key is `serde_json`'s raw-value token, which its
//! `Value` reads otherwise), and a value it builds is the one `serde_json` makes of the
//! same text. Anything else returns `None`, and the caller parses the line with
//! `serde_json` whole (the fallback, which also says why a line is not read).

use serde_json::{Map, Number, Value as Json};
use std::borrow::Cow;

/// A JSON value as the log's reader looks into it.
pub trait Doc: Sized {
    /// The value of `key` in an object (the last of duplicates, as `serde_json` keeps it).
    fn get(&self, key: &str) -> Option<&Self>;
    /// Element `i` of an array.
    fn at(&self, i: usize) -> Option<&Self>;
    /// An array's elements; `None` for anything else.
    fn elements(&self) -> Option<Vec<&Self>>;
    fn is_object(&self) -> bool;
    /// The value as `serde_json`'s `Value` (made where it is not one).
    fn json(&self) -> Cow<'_, Json>;
}

impl Doc for Json {
    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(map) => map.get(key),
            _ => None,
        }
    }
    fn at(&self, i: usize) -> Option<&Json> {
        self.as_array()?.get(i)
    }
    fn elements(&self) -> Option<Vec<&Json>> {
        self.as_array().map(|list| list.iter().collect())
    }
    fn is_object(&self) -> bool {
        Json::is_object(self)
    }
    fn json(&self) -> Cow<'_, Json> {
        Cow::Borrowed(self)
    }
}

/// A JSON value read by [`read_record`], borrowing from the line.
#[derive(Debug, Clone, PartialEq)]
pub enum Node<'a> {
    Null,
    Bool(bool),
    Number(Number),
    Str(Cow<'a, str>),
    Array(Vec<Node<'a>>),
    /// In the order of the text, duplicates included.
    Object(Vec<(Cow<'a, str>, Node<'a>)>),
    /// A value kept as its text only (the body's `tools`): nothing is looked up in it.
    Text(&'a str),
}

impl Doc for Node<'_> {
    fn get(&self, key: &str) -> Option<&Self> {
        match self {
            Node::Object(entries) => entries.iter().rev().find(|(k, _)| k == key).map(|e| &e.1),
            _ => None,
        }
    }
    fn at(&self, i: usize) -> Option<&Self> {
        match self {
            Node::Array(list) => list.get(i),
            _ => None,
        }
    }
    fn elements(&self) -> Option<Vec<&Self>> {
        match self {
            Node::Array(list) => Some(list.iter().collect()),
            _ => None,
        }
    }
    fn is_object(&self) -> bool {
        matches!(self, Node::Object(_))
    }
    fn json(&self) -> Cow<'_, Json> {
        Cow::Owned(self.to_json())
    }
}

impl Node<'_> {
    fn to_json(&self) -> Json {
        match self {
            Node::Null => Json::Null,
            Node::Bool(b) => Json::Bool(*b),
            Node::Number(n) => Json::Number(n.clone()),
            Node::Str(s) => Json::String(s.to_string()),
            Node::Array(list) => Json::Array(list.iter().map(Node::to_json).collect()),
            Node::Object(entries) => {
                // Inserted in order: a duplicate keeps its first place and its last value, as
                // `serde_json`'s map does.
                let mut map = Map::new();
                for (k, v) in entries {
                    map.insert(k.to_string(), v.to_json());
                }
                Json::Object(map)
            }
            Node::Text(text) => serde_json::from_str(text).unwrap_or(Json::Null),
        }
    }
}

/// A record read by [`read_record`].
#[derive(Debug)]
pub struct Record<'a> {
    /// The record (an object), less the body's `messages`.
    pub root: Node<'a>,
    /// The body's `messages` list: each message's text.
    pub messages: Vec<&'a str>,
    /// The body's `tools` value as text (the last, where the key comes twice).
    pub tools: Option<&'a str>,
    body_at: Option<&'static str>,
}

impl<'a> Record<'a> {
    /// The request body: the record, or its object at `body_at`.
    pub fn body(&self) -> &Node<'a> {
        match self.body_at {
            None => &self.root,
            Some(key) => self.root.get(key).unwrap_or(&Node::Null),
        }
    }
}

/// Nesting the reader takes (`serde_json` refuses past 128).
pub const MAX_DEPTH: usize = 64;

/// `serde_json`'s `Value` reads an object whose first key is this as a raw value's text.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// Reads `line`, a record whose request body is the record (`body_at` `None`) or its object
/// at `body_at` (`request`, `body`), down to the body's `messages` list; the body's `tools`
/// as a tree too where `tools_looked_into` (a session key may point into them), else as
/// [`Node::Text`]. `None` where the reader refuses the line (see the module), the body is not
/// an object or has no `messages` list, or the body's key or `messages` comes twice (the
/// whole parse settles those).
pub fn read_record<'a>(
    line: &'a str,
    body_at: Option<&'static str>,
    tools_looked_into: bool,
) -> Option<Record<'a>> {
    let mut reader = Reader::new(line, tools_looked_into);
    reader.ws();
    if reader.peek()? != b'{' {
        return None;
    }
    let level = match body_at {
        Some(key) => Level::Record(key),
        None => Level::Body,
    };
    let root = reader.object(level, true)?;
    reader.ws();
    if reader.at != reader.bytes.len() {
        return None;
    }
    Some(Record {
        root,
        messages: reader.messages?,
        tools: reader.tools,
        body_at,
    })
}

/// A whole JSON text as a [`Node`] (`None` where the reader refuses it: see the module).
pub fn read(text: &str) -> Option<Node<'_>> {
    let mut reader = Reader::new(text, false);
    reader.ws();
    let node = reader.value(true)?;
    reader.ws();
    (reader.at == text.len()).then_some(node)
}

/// What an object is on the way to the body's `messages`.
#[derive(Clone, Copy)]
enum Level {
    /// The record, whose body is at this key.
    Record(&'static str),
    /// The body: its `messages` kept as texts, its `tools` as text.
    Body,
    /// Any other object.
    Plain,
}

struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    depth: usize,
    messages: Option<Vec<&'a str>>,
    tools: Option<&'a str>,
    tools_looked_into: bool,
}

impl<'a> Reader<'a> {
    fn new(text: &'a str, tools_looked_into: bool) -> Reader<'a> {
        Reader {
            text,
            bytes: text.as_bytes(),
            at: 0,
            depth: 0,
            messages: None,
            tools: None,
            tools_looked_into,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    /// A value; `build`: as a [`Node`] (else checked only, and `Node::Null` returned).
    fn value(&mut self, build: bool) -> Option<Node<'a>> {
        match self.peek()? {
            b'{' => self.object(Level::Plain, build),
            b'[' => self.array(build),
            b'"' => {
                let s = self.string(build)?;
                Some(if build { Node::Str(s) } else { Node::Null })
            }
            b't' => self.literal(b"true", Node::Bool(true)),
            b'f' => self.literal(b"false", Node::Bool(false)),
            b'n' => self.literal(b"null", Node::Null),
            b'-' | b'0'..=b'9' => self.number(build),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8], node: Node<'a>) -> Option<Node<'a>> {
        let end = self.at + word.len();
        (self.bytes.get(self.at..end)? == word).then(|| {
            self.at = end;
            node
        })
    }

    /// A number: a plain integer of up to 19 digits read here, any other handed to
    /// `serde_json` (its `Value` refuses some, and rounds the others its own way).
    fn number(&mut self, build: bool) -> Option<Node<'a>> {
        let (b, start) = (self.bytes, self.at);
        let digits = |mut i: usize| {
            while let Some(b'0'..=b'9') = b.get(i) {
                i += 1;
            }
            i
        };
        let negative = b[start] == b'-';
        let mut i = start + usize::from(negative);
        i = match b.get(i)? {
            b'0' => i + 1,
            b'1'..=b'9' => digits(i),
            _ => return None,
        };
        let integer_end = i;
        if b.get(i) == Some(&b'.') {
            let end = digits(i + 1);
            if end == i + 1 {
                return None;
            }
            i = end;
        }
        if let Some(b'e' | b'E') = b.get(i) {
            i += 1;
            if let Some(b'+' | b'-') = b.get(i) {
                i += 1;
            }
            let end = digits(i);
            if end == i {
                return None;
            }
            i = end;
        }
        self.at = i;
        let token = &self.text[start..i];
        if !negative && i == integer_end && i - start <= 19 {
            return Some(match build {
                true => Node::Number(token.parse::<u64>().ok()?.into()),
                false => Node::Null,
            });
        }
        match serde_json::from_str::<Json>(token).ok()? {
            Json::Number(n) => Some(Node::Number(n)),
            _ => None,
        }
    }

    /// A string at its opening quote: borrowed where it has no escape (`build` false: checked
    /// only, nothing made).
    fn string(&mut self, build: bool) -> Option<Cow<'a, str>> {
        self.at += 1;
        let start = self.at;
        let mut owned: Option<String> = None;
        let mut run = start;
        loop {
            let i = special(self.bytes, self.at);
            match *self.bytes.get(i)? {
                b'"' => {
                    self.at = i + 1;
                    return Some(match owned {
                        None => Cow::Borrowed(&self.text[start..i]),
                        Some(mut s) => {
                            s.push_str(&self.text[run..i]);
                            Cow::Owned(s)
                        }
                    });
                }
                b'\\' => {
                    self.at = i + 1;
                    let c = self.escape()?;
                    if build {
                        let s = owned.get_or_insert_with(String::new);
                        s.push_str(&self.text[run..i]);
                        s.push(c);
                    }
                    run = self.at;
                }
                // A control character, which JSON strings escape.
                _ => return None,
            }
        }
    }

    /// The character of an escape, after its backslash (as `serde_json` reads it into a
    /// string: a surrogate only as the first of a pair).
    fn escape(&mut self) -> Option<char> {
        Some(match self.next()? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\x08',
            b'f' => '\x0c',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let n = self.hex4()?;
                match n {
                    0xD800..=0xDBFF => {
                        if self.bytes.get(self.at..self.at + 2)? != b"\\u" {
                            return None;
                        }
                        self.at += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return None;
                        }
                        let high = u32::from(n - 0xD800) << 10;
                        char::from_u32((high | u32::from(low - 0xDC00)) + 0x1_0000)?
                    }
                    0xDC00..=0xDFFF => return None,
                    n => char::from_u32(u32::from(n))?,
                }
            }
            _ => return None,
        })
    }

    fn hex4(&mut self) -> Option<u16> {
        let digits = self.bytes.get(self.at..self.at + 4)?;
        let mut n = 0u16;
        for &d in digits {
            n = n * 16 + char::from(d).to_digit(16)? as u16;
        }
        self.at += 4;
        Some(n)
    }

    fn array(&mut self, build: bool) -> Option<Node<'a>> {
        self.enter()?;
        self.at += 1;
        self.ws();
        let mut list = Vec::new();
        if self.peek()? == b']' {
            self.at += 1;
        } else {
            loop {
                let value = self.value(build)?;
                if build {
                    list.push(value);
                }
                self.ws();
                match self.next()? {
                    b',' => self.ws(),
                    b']' => break,
                    _ => return None,
                }
            }
        }
        self.depth -= 1;
        Some(Node::Array(list))
    }

    /// The body's `messages` list at its `[`: each message's text.
    fn texts(&mut self) -> Option<Vec<&'a str>> {
        self.enter()?;
        self.at += 1;
        self.ws();
        let mut texts = Vec::new();
        if self.peek()? == b']' {
            self.at += 1;
        } else {
            loop {
                let start = self.at;
                self.value(false)?;
                texts.push(&self.text[start..self.at]);
                self.ws();
                match self.next()? {
                    b',' => self.ws(),
                    b']' => break,
                    _ => return None,
                }
            }
        }
        self.depth -= 1;
        Some(texts)
    }

    fn object(&mut self, level: Level, build: bool) -> Option<Node<'a>> {
        self.enter()?;
        self.at += 1;
        self.ws();
        let mut entries = Vec::new();
        let mut first = true;
        if self.peek()? == b'}' {
            self.at += 1;
        } else {
            loop {
                if self.peek()? != b'"' {
                    return None;
                }
                let key = self.string(build)?;
                self.ws();
                if self.next()? != b':' {
                    return None;
                }
                self.ws();
                match level {
                    Level::Plain => {
                        if build && first && key == RAW_VALUE_TOKEN {
                            return None;
                        }
                        let value = self.value(build)?;
                        if build {
                            entries.push((key, value));
                        }
                    }
                    Level::Record(body_at) if key == body_at => {
                        if self.peek()? != b'{' || entries.iter().any(|(k, _)| k == body_at) {
                            return None;
                        }
                        let body = self.object(Level::Body, true)?;
                        entries.push((key, body));
                    }
                    Level::Body if key == "messages" => {
                        if self.peek()? != b'[' || self.messages.is_some() {
                            return None;
                        }
                        self.messages = Some(self.texts()?);
                    }
                    Level::Body if key == "tools" => {
                        let start = self.at;
                        let value = self.value(self.tools_looked_into)?;
                        let text = &self.text[start..self.at];
                        self.tools = Some(text);
                        let value = match self.tools_looked_into {
                            true => value,
                            false => Node::Text(text),
                        };
                        entries.push((key, value));
                    }
                    Level::Record(_) | Level::Body => {
                        let value = self.value(true)?;
                        entries.push((key, value));
                    }
                }
                first = false;
                self.ws();
                match self.next()? {
                    b',' => self.ws(),
                    b'}' => break,
                    _ => return None,
                }
            }
        }
        self.depth -= 1;
        Some(Node::Object(entries))
    }
}

/// The first byte at or after `from` that ends a string's plain run: a quote, a backslash or
/// a control character, eight bytes a step, as `serde_json` looks for them. (An SSE2 scan of
/// sixteen bytes a step saved 0.25% of `audit`'s CPU on the bench log: `bench/string_scan.rs`.)
fn special(bytes: &[u8], from: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut i = from;
    while let Some(chunk) = bytes.get(i..i + 8) {
        let chunk = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let quote = chunk ^ (ONES * u64::from(b'"'));
        let backslash = chunk ^ (ONES * u64::from(b'\\'));
        // A byte is zero in `x` where `x - ONES` borrows into its high bit; the lowest such
        // byte is exact (a borrow only runs upward).
        let found = (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (chunk.wrapping_sub(ONES * 0x20) & !chunk);
        let found = found & HIGH;
        if found != 0 {
            return i + (found.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&b) = bytes.get(i) {
        if b == b'"' || b == b'\\' || b < 0x20 {
            return i;
        }
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value the reader reads whole: `Some(the Value it makes)`, or `None` where it refuses.
    fn read_value(text: &str) -> Option<Json> {
        let built = read(text).map(|node| node.to_json());
        // Checked without building: the same answer.
        let mut checked = Reader::new(text, false);
        checked.ws();
        let whole = checked.value(false).is_some() && {
            checked.ws();
            checked.at == text.len()
        };
        // (A raw-value token is left to `serde_json` only where the value is built.)
        if !text.contains(RAW_VALUE_TOKEN) {
            assert_eq!(whole, built.is_some(), "{text}");
        }
        built
    }

    /// Whatever the reader takes, `serde_json` takes, and makes the same `Value` of.
    fn agrees(text: &str) -> bool {
        let ours = read_value(text);
        if let Some(ours) = &ours {
            let theirs: Json = serde_json::from_str(text).unwrap_or_else(|e| {
                panic!("serde_json refuses what the reader took: {text:?}: {e}")
            });
            assert_eq!(*ours, theirs, "{text:?}");
            // Key order too.
            assert_eq!(ours.to_string(), theirs.to_string(), "{text:?}");
        }
        ours.is_some()
    }

    #[test]
    fn what_it_reads_is_what_serde_json_reads() {
        for text in [
            r#"{"a": 1, "b": [true, false, null], "c": {"d": "e"}}"#,
            r#"  {"k\"ey": "v\\al\/ue\b\f\n\r\t", "u": "\u00e9\u20AC\ud83d\ude00"}  "#,
            r#"{"dup": 1, "x": 2, "dup": {"y": 3}}"#,
            r#"[0, -0, 1.5, -2, 18446744073709551615, 18446744073709551616, 1e3, 2.5E-3, -1e+2]"#,
            r#"[12345678901234567890123, 0.1, 123456789.123456789, 1234567890123456789]"#,
            r#"{"$serde_json::private::RawValue": 1}"#,
            r#"{"a": {"$serde_json::private::RawValue": "[1]"}}"#,
            r#"{"a": {"b": 1, "$serde_json::private::RawValue": "[1]"}}"#,
            "{}",
            "[]",
            "[[], {}, [[]]]",
            "\"\"",
            "0",
            "\"é ü 😀 \\u0000\"",
        ] {
            agrees(text);
        }
        // Refused: what serde_json refuses, and what the reader leaves to it.
        for text in [
            "",
            "nul",
            "[1,]",
            "{\"a\": 1,}",
            "{\"a\" 1}",
            "{a: 1}",
            "[01]",
            "[1.]",
            "[.5]",
            "[-]",
            "[1e]",
            "[1e999]",
            "[-1E+999]",
            "\"\\ud800\"",
            "\"\\udc00\"",
            "\"\\ud83d\\u0041\"",
            "\"\\ud83d\\n\"",
            "\"\\x\"",
            "\"\\u12\"",
            "\"a\tb\"",
            "\"open",
            "[1 2]",
            "{\"a\": {\"$serde_json::private::RawValue\": \"[1]\"}}",
        ] {
            if read_value(text).is_some() {
                // Only where serde_json takes it too.
                assert!(serde_json::from_str::<Json>(text).is_ok(), "{text:?}");
            }
        }
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(read_value(&deep), None);
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(agrees(&deep));
    }

    #[test]
    fn mutated_texts_are_read_as_serde_json_reads_them_or_refused() {
        let seeds = [
            r#"{"request": {"model": "m", "messages": [{"role": "user", "content": "h\u00e9\"i\n"}], "tools": [{"type": "function"}]}, "response": {"usage": {"prompt_tokens": 12, "x": [1.5, -3, 1e2]}}, "metadata": {"session_id": "s\ud83d\ude00", "t": 1764460800}}"#,
            r#"[null, true, false, 0, -0.0, "\\\/\b\f\n\r\t\u0041", {"a": [], "b": {}}]"#,
        ];
        let alphabet = b"{}[]\":,\\u0123456789abcdefDEnrtlsux.-+eE \t\n/\x01\xc3\xa9";
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut random = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let (mut taken, mut tried) = (0, 0);
        for seed in seeds {
            for _ in 0..4000 {
                let mut bytes = seed.as_bytes().to_vec();
                for _ in 0..1 + random(3) {
                    let at = random(bytes.len() + 1);
                    match random(3) {
                        0 if at < bytes.len() => {
                            bytes.remove(at);
                        }
                        1 => bytes.insert(at, alphabet[random(alphabet.len())]),
                        _ if at < bytes.len() => bytes[at] = alphabet[random(alphabet.len())],
                        _ => {}
                    }
                }
                let Ok(text) = std::str::from_utf8(&bytes) else {
                    continue;
                };
                tried += 1;
                taken += usize::from(agrees(text));
            }
        }
        // Both kinds were tried.
        assert!(taken > 100 && taken < tried, "{taken} of {tried}");
    }

    #[test]
    fn special_finds_the_first_quote_backslash_or_control() {
        for (text, at) in [
            ("abcdefghij\"", 10),
            ("\"", 0),
            ("abcdefgh\\", 8),
            ("ab\x01cdefghijk\"", 2),
            ("\x7f\u{e9}abcdefgh\x1f", 11),
            ("abcdefghijklmnop", 16),
            ("", 0),
            ("abcdefghijklmnopqrstuvwxyz0123456789\"", 36),
            ("abcdefghijklmnopq\x1frstuv", 17),
            (
                "\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\x7fab\\",
                23,
            ),
        ] {
            assert_eq!(special(text.as_bytes(), 0), at, "{text:?}");
        }
    }

    #[test]
    fn records_read_down_to_the_messages_list() {
        let line = r#"{"request": {"model": "m", "messages": [{"role": "user", "content": "hi"}, {}], "tools": [1]}, "metadata": {"session_id": "s"}, "x": 1, "x": 2}"#;
        let record = read_record(line, Some("request"), false).unwrap();
        assert_eq!(
            record.messages,
            [r#"{"role": "user", "content": "hi"}"#, "{}"]
        );
        assert_eq!(record.tools, Some("[1]"));
        let body = record.body();
        assert_eq!(body.get("messages"), None);
        assert_eq!(body.get("tools"), Some(&Node::Text("[1]")));
        assert_eq!(record.root.get("x"), Some(&Node::Number(2.into())));
        // The record as the whole parse makes it, less the list.
        let mut whole: Json = serde_json::from_str(line).unwrap();
        whole["request"].as_object_mut().unwrap().remove("messages");
        assert_eq!(record.root.json().to_string(), whole.to_string());
        let looked_into = read_record(line, Some("request"), true).unwrap();
        assert_eq!(
            looked_into.body().get("tools").and_then(|t| t.at(0)),
            Some(&Node::Number(1.into()))
        );
        for refused in [
            r#"{"request": {"messages": {}}}"#,
            r#"{"request": {"messages": [], "messages": []}}"#,
            r#"{"request": {"model": "m"}}"#,
            r#"{"request": "text"}"#,
            r#"{"request": {"messages": []}, "request": {"messages": []}}"#,
            r#"{"request": {"messages": []}} x"#,
            r#"{"request": {"messages": [}"#,
            r#"{"other": 1}"#,
            r#"[{"request": {"messages": []}}]"#,
        ] {
            assert!(
                read_record(refused, Some("request"), false).is_none(),
                "{refused}"
            );
        }
        let body = read_record(r#" {"messages": [], "metadata": {"a": 1}} "#, None, false).unwrap();
        assert!(body.messages.is_empty());
        assert!(body.body().get("metadata").is_some());
    }
}
