//! A render that is a hosted API's JSON request body: an Anthropic Messages request
//! (`{"tools": [...], "system": [...], "messages": [...]}` with `cache_control` marks) or an
//! OpenAI Chat Completions / Responses request (`prompt_cache_key`). What the cache rules
//! need of it: the content blocks in the order the API caches them (tools → system →
//! messages), each block's tokens and identity, the `cache_control` marks with the template
//! place that wrote each, and the routing key.
//!
//! Token counts are the selected tokenizer's count of each block's text (a tool or a
//! non-text block: its compact JSON without `cache_control`); Anthropic's tokenizer is not
//! public, so they approximate what the API counts.

use crate::error::Result;
use crate::render::instrument::{MarkEvent, OriginKind, OriginTable};
use crate::render::Render;
use crate::tokenize::TokenEngine;
use serde_json::Value as Json;
use std::hash::{Hash, Hasher};
use std::ops::Range;

/// Which API's request body a render is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyApi {
    /// Has `cache_control`, an `anthropic_version`, or a `claude-*` model.
    Anthropic,
    /// Has `prompt_cache_key`, `input` (Responses), or a `gpt-*`/`o*` model.
    Openai,
    /// `messages` and nothing that tells: the selected engine decides.
    Either,
}

/// `cache_control: {"type": "ephemeral", "ttl": "1h"}` or the default 5 minutes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Ttl {
    OneHour,
    FiveMinutes,
}

impl Ttl {
    pub fn name(self) -> &'static str {
        match self {
            Ttl::OneHour => "1h",
            Ttl::FiveMinutes => "5m",
        }
    }
}

/// A `cache_control` mark on a block.
#[derive(Debug, Clone)]
pub struct Mark {
    pub ttl: Ttl,
    /// Where the checked template writes it (the `"cache_control"` key), when the render's
    /// source map says so.
    pub span: Option<Range<usize>>,
    /// Its place among the render's `"cache_control"` keys, in text order: where the render
    /// has no source map (a `{% set %}` block captured marked output), the checked template's
    /// key of the same rank, when it writes as many.
    pub ordinal: usize,
}

/// One content block, in cache order.
#[derive(Debug, Clone)]
pub struct Block {
    /// `tools[-1]`, `system[0]`, `messages[3].content[-1]`; `system` and
    /// `messages[0].content` for plain strings.
    pub path: String,
    /// The block's content with its place and role, hashed: equal across renders means the
    /// same block.
    pub identity: u64,
    pub tokens: usize,
    /// `tool`, `system`, or the message's role.
    pub role: String,
    /// A plain-string `system` or `content` takes no `cache_control` until it is written
    /// as a list of blocks.
    pub takes_mark: bool,
    /// The block is in `tools` or `system` (what every conversation shares).
    pub preamble: bool,
    pub mark: Option<Mark>,
    /// The block object's closing `}` (where a `cache_control` member goes).
    pub close: Option<Close>,
}

/// Where a block object's closing `}` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Close {
    /// Its byte offset in the render.
    pub render: usize,
    /// The checked template's literal byte that wrote it, when the render's source map
    /// says so.
    pub template: Option<usize>,
}

/// A render read as a request body.
#[derive(Debug, Clone)]
pub struct RequestBody {
    pub api: BodyApi,
    pub model: Option<String>,
    pub blocks: Vec<Block>,
    /// A top-level `cache_control` (automatic caching: the last block is the breakpoint).
    pub automatic: Option<Mark>,
    /// `prompt_cache_key`'s value, and where the template writes it.
    pub prompt_cache_key: Option<String>,
    pub prompt_cache_key_origin: Option<KeyOrigin>,
}

/// What wrote the `prompt_cache_key` value in the checked template.
#[derive(Debug, Clone)]
pub struct KeyOrigin {
    pub span: Range<usize>,
    /// The template source there (`{{ request_id }}`).
    pub text: String,
    pub expression: bool,
}

/// Reads every render as a request body; empty unless all of them are one.
pub fn read_all(
    renders: &[Render],
    engine: &dyn TokenEngine,
    origins: &OriginTable,
    template: &str,
) -> Result<Vec<RequestBody>> {
    // A cheap test first: most templates are prose.
    if renders.is_empty()
        || !renders.iter().all(|r| {
            r.text.trim_start().starts_with('{')
                && (r.text.contains("\"messages\"") || r.text.contains("\"input\""))
        })
    {
        return Ok(Vec::new());
    }
    let mut bodies = Vec::with_capacity(renders.len());
    for render in renders {
        match read(render, engine, origins, template)? {
            Some(body) => bodies.push(body),
            None => return Ok(Vec::new()),
        }
    }
    Ok(bodies)
}

/// One render as a request body, `None` when it is not one.
pub fn read(
    render: &Render,
    engine: &dyn TokenEngine,
    origins: &OriginTable,
    template: &str,
) -> Result<Option<RequestBody>> {
    let text = render.text.as_str();
    let Some(root) = parse(text) else {
        return Ok(None);
    };
    let Some(fields) = root.object() else {
        return Ok(None);
    };
    let field = |name: &str| fields.iter().find(|f| f.key == name).map(|f| &f.value);
    let Some(messages) = field("messages")
        .or_else(|| field("input"))
        .and_then(Node::array)
    else {
        return Ok(None);
    };
    let model = field("model").and_then(|m| m.string(text));
    let place = |offset: usize| place_in_template(render, origins, template, offset);
    let mark_of = |key: &Field| Mark {
        ttl: ttl_of(text, &key.value),
        span: place(key.key_span.start).map(|p| p.span),
        ordinal: text[..key.key_span.start]
            .matches(CACHE_CONTROL_KEY)
            .count(),
    };
    let mut blocks = Vec::new();
    let mut block = |path: String, node: &Node, role: &str, takes_mark: bool, preamble| {
        let (tokens_of, canonical) = block_text(text, node);
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (&path, role, &canonical).hash(&mut hasher);
        let mark = node
            .object()
            .and_then(|fields| fields.iter().find(|f| f.key == "cache_control"))
            .map(mark_of);
        let tokens = engine.encode(&tokens_of)?.len();
        let close = match node.value {
            Value::Object(_) => Some(Close {
                render: node.span.end - 1,
                template: literal_byte(render, origins, template, node.span.end - 1),
            }),
            _ => None,
        };
        blocks.push(Block {
            path,
            identity: hasher.finish(),
            tokens,
            role: role.to_owned(),
            takes_mark,
            preamble,
            mark,
            close,
        });
        Result::Ok(())
    };
    if let Some(tools) = field("tools").and_then(Node::array) {
        for (i, tool) in tools.iter().enumerate() {
            block(
                index_path("tools", i, tools.len()),
                tool,
                "tool",
                true,
                true,
            )?;
        }
    }
    // Responses' `instructions` is its system prompt.
    let system = ["system", "instructions"]
        .into_iter()
        .find_map(|name| Some((name, field(name)?)));
    match system {
        Some((
            name,
            node @ Node {
                value: Value::String,
                ..
            },
        )) => block(name.into(), node, "system", false, true)?,
        Some((name, node)) => {
            for (i, part) in node.array().unwrap_or_default().iter().enumerate() {
                block(format!("{name}[{i}]"), part, "system", true, true)?;
            }
        }
        None => {}
    }
    let list = if field("messages").is_some() {
        "messages"
    } else {
        "input"
    };
    for (m, message) in messages.iter().enumerate() {
        let message_fields = message.object().unwrap_or_default();
        let of = |name: &str| {
            message_fields
                .iter()
                .find(|f| f.key == name)
                .map(|f| &f.value)
        };
        let role = of("role").and_then(|r| r.string(text)).unwrap_or_default();
        match of("content") {
            Some(Node {
                value: Value::Array(parts),
                ..
            }) => {
                for (j, part) in parts.iter().enumerate() {
                    let path = format!("{list}[{m}].{}", index_path("content", j, parts.len()));
                    block(path, part, &role, true, false)?;
                }
            }
            Some(node) => block(format!("{list}[{m}].content"), node, &role, false, false)?,
            None => block(format!("{list}[{m}]"), message, &role, true, false)?,
        }
    }
    let automatic = fields
        .iter()
        .find(|f| f.key == "cache_control")
        .map(mark_of);
    let key = field("prompt_cache_key");
    let prompt_cache_key = key.and_then(|k| k.string(text));
    let prompt_cache_key_origin = key
        .and_then(|k| place(k.span.start + 1))
        .map(|p| KeyOrigin {
            span: p.span,
            text: p.text,
            expression: p.expression,
        });
    let has_mark = automatic.is_some() || blocks.iter().any(|b| b.mark.is_some());
    let api = if has_mark
        || field("anthropic_version").is_some()
        || model.as_deref().is_some_and(|m| m.starts_with("claude"))
    {
        BodyApi::Anthropic
    } else if key.is_some()
        || list == "input"
        || model.as_deref().is_some_and(|m| {
            m.starts_with("gpt")
                || m.starts_with("chatgpt")
                || (m.starts_with('o') && m[1..].starts_with(|c: char| c.is_ascii_digit()))
        })
    {
        BodyApi::Openai
    } else {
        BodyApi::Either
    };
    Ok(Some(RequestBody {
        api,
        model,
        blocks,
        automatic,
        prompt_cache_key,
        prompt_cache_key_origin,
    }))
}

/// A `cache_control` key as JSON writes it; inside a string it would read `\"cache_control\"`.
pub const CACHE_CONTROL_KEY: &str = "\"cache_control\"";

/// `tools[-1]` for the last of a list, `tools[2]` otherwise (`name[i]` of `len`).
fn index_path(name: &str, i: usize, len: usize) -> String {
    if i + 1 == len && len > 1 {
        format!("{name}[-1]")
    } else {
        format!("{name}[{i}]")
    }
}

/// The text a block's tokens are counted on, and its canonical JSON without
/// `cache_control` (its identity).
fn block_text(text: &str, node: &Node) -> (String, String) {
    let mut value: Json = serde_json::from_str(&text[node.span.clone()]).unwrap_or(Json::Null);
    if let Json::Object(map) = &mut value {
        map.shift_remove("cache_control");
    }
    let canonical = value.to_string();
    let counted = match &value {
        Json::String(s) => s.clone(),
        Json::Object(map) if map.get("type").and_then(Json::as_str) == Some("text") => map
            .get("text")
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_owned(),
        _ => canonical.clone(),
    };
    (counted, canonical)
}

fn ttl_of(text: &str, node: &Node) -> Ttl {
    let ttl = node
        .object()
        .and_then(|f| f.iter().find(|f| f.key == "ttl"))
        .and_then(|f| f.value.string(text));
    match ttl.as_deref() {
        Some("1h") => Ttl::OneHour,
        _ => Ttl::FiveMinutes,
    }
}

/// The checked template's literal byte that wrote the render's byte at `offset`: `None`
/// when an expression wrote it (one that ends just before it included: the byte is then
/// the text run's), another template did, or there is no source map.
fn literal_byte(
    render: &Render,
    origins: &OriginTable,
    template: &str,
    offset: usize,
) -> Option<usize> {
    let map = render.map.as_ref()?;
    let mut open: Vec<u32> = Vec::new();
    let mut text: Option<(u32, usize)> = None;
    for &(at, event) in map.events.iter().take_while(|(at, _)| *at <= offset) {
        match event {
            MarkEvent::Open(id) => open.push(id),
            MarkEvent::Close(id) => {
                if let Some(pos) = open.iter().rposition(|&o| o == id) {
                    open.truncate(pos);
                }
                text = None;
            }
            MarkEvent::Text(id) => text = Some((id, at)),
        }
    }
    let (id, start) = text.filter(|_| open.is_empty())?;
    let origin = origins.get(id as usize)?;
    if origin.template.as_ref() != template || origin.kind == OriginKind::Expression {
        return None;
    }
    let within = offset - start;
    let byte = render.text.as_bytes().get(offset)?;
    if origin.text.as_bytes().get(within) != Some(byte) {
        return None;
    }
    Some(origin.span.start + within)
}

struct Place {
    span: Range<usize>,
    text: String,
    expression: bool,
}

/// The place of the checked template that wrote the render's byte at `offset`: the
/// expression, or inside a text run the exact byte (`"cache_control"` written literally).
fn place_in_template(
    render: &Render,
    origins: &OriginTable,
    template: &str,
    offset: usize,
) -> Option<Place> {
    let map = render.map.as_ref()?;
    let (event, _) = map.origin_at(offset)?;
    let id = match event {
        MarkEvent::Open(id) | MarkEvent::Close(id) | MarkEvent::Text(id) => id,
    };
    let origin = origins.get(id as usize)?;
    if origin.template.as_ref() != template {
        return None;
    }
    if origin.kind == OriginKind::Expression {
        return Some(Place {
            span: origin.span.clone(),
            text: origin.text.to_string(),
            expression: true,
        });
    }
    // Where this text run starts in the render: its last start at or before `offset`.
    let run_start = map
        .events
        .iter()
        .take_while(|(at, _)| *at <= offset)
        .filter(|(_, e)| *e == MarkEvent::Text(id))
        .map(|(at, _)| *at)
        .last()?;
    let within = offset - run_start;
    let wanted = &render.text[offset..];
    let run = origin.text.as_ref();
    let start = if run.get(within..).is_some_and(|rest| {
        let n = rest.len().min(wanted.len()).min(16);
        rest.as_bytes()[..n] == wanted.as_bytes()[..n]
    }) {
        within
    } else {
        let needle: String = wanted.chars().take(15).collect();
        run.find(&needle).unwrap_or(0)
    };
    let length = render.text[offset..]
        .find(['\n', ','])
        .unwrap_or(0)
        .min(run.len().saturating_sub(start));
    let span_start = origin.span.start + start;
    Some(Place {
        span: span_start..span_start + length.max(1),
        text: run[start..start + length].to_string(),
        expression: false,
    })
}

// A JSON reader that keeps byte spans, which serde_json does not.

/// A JSON value with its byte span in the text.
#[derive(Debug)]
pub struct Node {
    pub span: Range<usize>,
    pub value: Value,
}

#[derive(Debug)]
pub enum Value {
    Object(Vec<Field>),
    Array(Vec<Node>),
    String,
    Other,
}

#[derive(Debug)]
pub struct Field {
    pub key: String,
    pub key_span: Range<usize>,
    pub value: Node,
}

impl Node {
    pub fn object(&self) -> Option<&[Field]> {
        match &self.value {
            Value::Object(fields) => Some(fields),
            _ => None,
        }
    }

    pub fn array(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    /// A string value, decoded.
    pub fn string(&self, text: &str) -> Option<String> {
        match self.value {
            Value::String => serde_json::from_str(&text[self.span.clone()]).ok(),
            _ => None,
        }
    }
}

/// Nesting deeper than this is not a request body (and would only cost stack).
const MAX_DEPTH: usize = 64;

/// The whole text as one JSON value (surrounding whitespace allowed), `None` if it is not.
pub fn parse(text: &str) -> Option<Node> {
    let mut reader = Reader {
        bytes: text.as_bytes(),
        at: 0,
    };
    let node = reader.value(0)?;
    reader.space();
    (reader.at == text.len()).then_some(node)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn space(&mut self) {
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| b" \t\r\n".contains(b))
        {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.space();
        if self.bytes.get(self.at) == Some(&byte) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Option<Node> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.space();
        let start = self.at;
        let value = match *self.bytes.get(self.at)? {
            b'{' => {
                self.at += 1;
                let mut fields = Vec::new();
                if !self.eat(b'}') {
                    loop {
                        self.space();
                        let key_start = self.at;
                        self.string()?;
                        let key_span = key_start..self.at;
                        let key = std::str::from_utf8(&self.bytes[key_span.clone()]).ok()?;
                        let key: String = serde_json::from_str(key).ok()?;
                        if !self.eat(b':') {
                            return None;
                        }
                        let value = self.value(depth + 1)?;
                        fields.push(Field {
                            key,
                            key_span,
                            value,
                        });
                        if self.eat(b'}') {
                            break;
                        }
                        if !self.eat(b',') {
                            return None;
                        }
                    }
                }
                Value::Object(fields)
            }
            b'[' => {
                self.at += 1;
                let mut items = Vec::new();
                if !self.eat(b']') {
                    loop {
                        items.push(self.value(depth + 1)?);
                        if self.eat(b']') {
                            break;
                        }
                        if !self.eat(b',') {
                            return None;
                        }
                    }
                }
                Value::Array(items)
            }
            b'"' => {
                self.string()?;
                // Escapes must be JSON's own (`\u00e9`, not `\x`).
                let literal = std::str::from_utf8(&self.bytes[start..self.at]).ok()?;
                serde_json::from_str::<String>(literal).ok()?;
                Value::String
            }
            _ => {
                while self
                    .bytes
                    .get(self.at)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || b"+-.".contains(b))
                {
                    self.at += 1;
                }
                let literal = std::str::from_utf8(&self.bytes[start..self.at]).ok()?;
                serde_json::from_str::<Json>(literal).ok()?;
                Value::Other
            }
        };
        Some(Node {
            span: start..self.at,
            value,
        })
    }

    /// Skips one string, escapes included; the reader stands after its closing quote.
    fn string(&mut self) -> Option<()> {
        if self.bytes.get(self.at) != Some(&b'"') {
            return None;
        }
        self.at += 1;
        loop {
            match *self.bytes.get(self.at)? {
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                b'\\' => self.at += 2,
                b if b < 0x20 => return None,
                _ => self.at += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_point_at_values_and_keys() {
        let text = r#" {"a": [1, "x\"y", {"b": null}], "c": true} "#;
        let node = parse(text).unwrap();
        let fields = node.object().unwrap();
        assert_eq!(fields[0].key, "a");
        assert_eq!(&text[fields[0].key_span.clone()], "\"a\"");
        let items = fields[0].value.array().unwrap();
        assert_eq!(&text[items[1].span.clone()], r#""x\"y""#);
        assert_eq!(items[1].string(text).as_deref(), Some("x\"y"));
        assert_eq!(&text[fields[1].value.span.clone()], "true");
    }

    #[test]
    fn not_json_is_none() {
        for text in [
            "",
            "{",
            "{\"a\" 1}",
            "{\"a\": 1,}",
            "[1 2]",
            "{\"a\": tru}",
            "\"\\",
            "{} x",
        ] {
            assert!(parse(text).is_none(), "{text}");
        }
        let deep = "[".repeat(10_000);
        assert!(parse(&deep).is_none());
    }
}
