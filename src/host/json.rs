//! Prompt templates inside JSON values: a framework's JSON of prompt strings, chat
//! messages saved as JSON, recognized by their keys and shape as YAML values are (the
//! JSON is read into the same tree, so [`super::yaml`]'s recognition decides).
//!
//! The reader keeps where every string sits: a value's text maps back to the host through
//! its escapes. Comments (`//`, `/* */`, as JSONC files have them) are skipped, so a
//! `// prefixlint: ignore[PL001] reason` comment can sit on the key's line. Nesting is
//! bounded ([`MAX_DEPTH`]) and nothing recurses deeper than that.

use super::yaml::{self, scalar::Style, Node, Scalar};
use super::{Extracted, HostKind};
use std::path::Path;

/// Deeper documents are refused (no prompt file nests this deep).
const MAX_DEPTH: usize = 128;

/// A JSON file that does not parse, at this byte offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonSyntaxError {
    pub message: String,
    pub offset: usize,
}

/// The templates in a JSON host file. `keys` are the config's key patterns for it.
pub fn extract(
    path: &Path,
    source: &str,
    recognize: bool,
    keys: &[String],
) -> Result<Extracted, JsonSyntaxError> {
    let recognize = recognize && !quiet_by_name(path);
    if !recognize && keys.is_empty() {
        return Ok(Extracted::default());
    }
    let document = parse(source)?;
    Ok(yaml::extract_documents(
        HostKind::Json,
        source,
        std::slice::from_ref(&document),
        recognize,
        keys,
        yaml::text_and_map,
    ))
}

/// JSON files that are tools' settings and manifests, never prompts.
fn quiet_by_name(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    matches!(
        name.as_str(),
        "package.json"
            | "package-lock.json"
            | "composer.json"
            | "composer.lock"
            | "tsconfig.json"
            | "jsconfig.json"
            | "deno.json"
            | "renovate.json"
            | "lerna.json"
            | "app.json"
            | "manifest.json"
            | "launch.json"
            | "settings.json"
            | "extensions.json"
            | "tasks.json"
            | "devcontainer.json"
            | ".devcontainer.json"
            // Semantic Kernel's prompt config: read for the format of `skprompt.txt` beside it.
            | "config.json"
    ) || name.ends_with(".schema.json")
        || name.starts_with("tsconfig.")
        || name.starts_with(".eslintrc")
        || name.starts_with(".babelrc")
        || name.ends_with(".ipynb")
}

/// Parses one JSON document (comments allowed) into the extractor's tree.
pub fn parse(source: &str) -> Result<Node, JsonSyntaxError> {
    let mut reader = Reader {
        source,
        bytes: source.as_bytes(),
        at: 0,
        line_starts: std::iter::once(0)
            .chain(source.match_indices('\n').map(|(i, _)| i + 1))
            .collect(),
    };
    reader.skip_space()?;
    let node = reader.value(0)?;
    reader.skip_space()?;
    if reader.at < reader.bytes.len() {
        return Err(reader.error("unexpected text after the JSON value"));
    }
    Ok(node)
}

struct Reader<'s> {
    source: &'s str,
    bytes: &'s [u8],
    at: usize,
    line_starts: Vec<usize>,
}

impl Reader<'_> {
    fn error(&self, message: &str) -> JsonSyntaxError {
        JsonSyntaxError {
            message: message.to_owned(),
            offset: self.at.min(self.bytes.len()),
        }
    }

    fn skip_space(&mut self) -> Result<(), JsonSyntaxError> {
        loop {
            match self.bytes.get(self.at) {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.at += 1,
                Some(b'/') if self.bytes.get(self.at + 1) == Some(&b'/') => {
                    self.at = memchr::memchr(b'\n', &self.bytes[self.at..])
                        .map_or(self.bytes.len(), |i| self.at + i);
                }
                Some(b'/') if self.bytes.get(self.at + 1) == Some(&b'*') => {
                    let end = memchr::memmem::find(&self.bytes[self.at + 2..], b"*/")
                        .ok_or_else(|| self.error("a comment that is not closed"))?;
                    self.at += 2 + end + 2;
                }
                _ => return Ok(()),
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, JsonSyntaxError> {
        match self.bytes.get(self.at) {
            Some(b'{') | Some(b'[') if depth >= MAX_DEPTH => {
                Err(self.error(&format!("nested deeper than {MAX_DEPTH} levels")))
            }
            Some(b'{') => {
                self.at += 1;
                let mut entries = Vec::new();
                self.skip_space()?;
                if self.bytes.get(self.at) == Some(&b'}') {
                    self.at += 1;
                    return Ok(Node::Mapping(entries));
                }
                loop {
                    self.skip_space()?;
                    if self.bytes.get(self.at) != Some(&b'"') {
                        return Err(self.error("expected a string key"));
                    }
                    let key = self.string()?;
                    self.skip_space()?;
                    if self.bytes.get(self.at) != Some(&b':') {
                        return Err(self.error("expected `:`"));
                    }
                    self.at += 1;
                    self.skip_space()?;
                    let value = self.value(depth + 1)?;
                    entries.push((key, value));
                    self.skip_space()?;
                    match self.bytes.get(self.at) {
                        Some(b',') => {
                            self.at += 1;
                            self.skip_space()?;
                            // A trailing comma, as JSONC allows.
                            if self.bytes.get(self.at) == Some(&b'}') {
                                self.at += 1;
                                return Ok(Node::Mapping(entries));
                            }
                        }
                        Some(b'}') => {
                            self.at += 1;
                            return Ok(Node::Mapping(entries));
                        }
                        _ => return Err(self.error("expected `,` or `}`")),
                    }
                }
            }
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                self.skip_space()?;
                if self.bytes.get(self.at) == Some(&b']') {
                    self.at += 1;
                    return Ok(Node::Sequence(items));
                }
                loop {
                    self.skip_space()?;
                    items.push(self.value(depth + 1)?);
                    self.skip_space()?;
                    match self.bytes.get(self.at) {
                        Some(b',') => {
                            self.at += 1;
                            self.skip_space()?;
                            if self.bytes.get(self.at) == Some(&b']') {
                                self.at += 1;
                                return Ok(Node::Sequence(items));
                            }
                        }
                        Some(b']') => {
                            self.at += 1;
                            return Ok(Node::Sequence(items));
                        }
                        _ => return Err(self.error("expected `,` or `]`")),
                    }
                }
            }
            Some(b'"') => Ok(Node::Scalar(self.string()?)),
            Some(b't' | b'f' | b'n' | b'-' | b'0'..=b'9') => {
                let start = self.at;
                while self
                    .bytes
                    .get(self.at)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.'))
                {
                    self.at += 1;
                }
                let word = &self.source[start..self.at];
                let number = word.parse::<f64>().is_ok()
                    && word
                        .bytes()
                        .next()
                        .is_some_and(|b| b == b'-' || b.is_ascii_digit());
                if matches!(word, "true" | "false" | "null") || number {
                    Ok(Node::Other)
                } else {
                    self.at = start;
                    Err(self.error("expected a JSON value"))
                }
            }
            _ => Err(self.error("expected a JSON value")),
        }
    }

    /// A string at `self.at` (its opening quote), decoded, with where it sits.
    fn string(&mut self) -> Result<Scalar, JsonSyntaxError> {
        let start = self.at;
        self.at += 1;
        let mut value = String::new();
        let mut run = self.at;
        loop {
            let Some(offset) = memchr::memchr3(b'"', b'\\', b'\n', &self.bytes[self.at..]) else {
                self.at = start;
                return Err(self.error("a string that is not closed"));
            };
            self.at += offset;
            match self.bytes[self.at] {
                b'"' => {
                    value.push_str(&self.source[run..self.at]);
                    self.at += 1;
                    break;
                }
                b'\n' => return Err(self.error("a line break inside a string")),
                _ => {
                    value.push_str(&self.source[run..self.at]);
                    let (ch, len) = self.escape()?;
                    value.push(ch);
                    self.at += len;
                    run = self.at;
                }
            }
        }
        let line = self.line_starts.partition_point(|&s| s <= start);
        Ok(Scalar {
            value,
            style: Style::DoubleQuoted,
            start,
            end: self.at,
            line,
            line_indent: 0,
        })
    }

    /// The escape at `self.at` (its backslash): the character and the escape's length.
    fn escape(&self) -> Result<(char, usize), JsonSyntaxError> {
        let next = self.bytes.get(self.at + 1).copied();
        let simple = match next {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                let unit = |at: usize| {
                    self.source
                        .get(at..at + 4)
                        .and_then(|hex| u16::from_str_radix(hex, 16).ok())
                };
                let high = unit(self.at + 2).ok_or_else(|| self.error("a bad `\\u` escape"))?;
                if (0xD800..0xDC00).contains(&high)
                    && self.source.get(self.at + 6..self.at + 8) == Some("\\u")
                {
                    if let Some(low) = unit(self.at + 8).filter(|l| (0xDC00..0xE000).contains(l)) {
                        let code = 0x10000
                            + ((u32::from(high) - 0xD800) << 10)
                            + (u32::from(low) - 0xDC00);
                        let ch = char::from_u32(code).unwrap_or('\u{fffd}');
                        return Ok((ch, 12));
                    }
                }
                // A lone surrogate, as Python's json reads it, becomes U+FFFD here.
                return Ok((char::from_u32(u32::from(high)).unwrap_or('\u{fffd}'), 6));
            }
            _ => return Err(self.error("an unknown escape in a string")),
        };
        Ok((simple, 2))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::TemplateFormat;

    fn found(path: &str, source: &str) -> Vec<(String, TemplateFormat, usize)> {
        extract(Path::new(path), source, true, &[])
            .unwrap()
            .templates
            .into_iter()
            .map(|t| (t.key, t.format, t.anchor_line))
            .collect()
    }

    #[test]
    fn prompt_strings_are_found_by_key_and_shape_in_their_format() {
        let source = r#"{
  "extraction": {
    "system_prompt": "You are a memory extractor. Today is {current_date}. Return the facts below as JSON: {{\"facts\": []}}",
    "max_tokens": 300
  },
  "messages": [
    {"role": "system", "content": "You answer questions about {{ product }}. Be brief and cite the manual."}
  ],
  "log_format": "{time} {level} {message}"
}
"#;
        assert_eq!(
            found("prompts.json", source),
            [
                (
                    "extraction.system_prompt".to_owned(),
                    TemplateFormat::Format,
                    3
                ),
                ("messages[0].content".to_owned(), TemplateFormat::Jinja, 7),
            ]
        );
    }

    #[test]
    fn text_maps_back_through_escapes() {
        let source = "{\"prompt\": \"You are a helpful assistant for our store.\\nAnswer the user's question below in two short sentences: {question}\"}";
        let template = extract(Path::new("p.json"), source, true, &[])
            .unwrap()
            .templates
            .remove(0);
        assert!(template.text.contains("store.\nAnswer"));
        let at = template.text.find("{question}").unwrap();
        assert!(source[template.map.host_offset(at)..].starts_with("{question}"));
    }

    #[test]
    fn manifests_and_bad_json_stay_quiet_or_fail_with_a_place() {
        let manifest = "{\"name\": \"x\", \"description\": \"You are a tool. Given the input below, return {result} as JSON output.\"}";
        assert!(found("package.json", manifest).is_empty());
        assert_eq!(parse("{\"a\": [1, 2,, 3]}").unwrap_err().offset, 12);
        assert!(parse(&"[".repeat(1000)).is_err());
        // Comments and trailing commas, as JSONC has them.
        assert!(parse("{\n  // a note\n  \"a\": 1, /* x */\n}").is_ok());
    }
}
