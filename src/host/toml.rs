//! Prompt templates inside TOML values: tables of prompts such as
//! `[pr_review_prompt] system = """..."""`, each string value its own template at its key's
//! line (never the file rendered whole, section headers and all).
//!
//! `toml_edit` parses the file and says where every key and value sits; the tables become
//! the tree [`super::yaml`]'s recognition reads (keys, shape, `template_format`), and each
//! string's text is decoded again here from its host bytes (basic, literal and multi-line
//! strings, escapes, line-ending backslashes), so every byte maps back to the file. Where
//! that decoding disagrees with the parser's value, the parser's value is kept with a
//! coarse map.

use super::yaml::{self, scalar::Style, Node, Scalar};
use super::{Extracted, HostKind, HostMap, Segment};
use std::path::Path;
use toml_edit::{Item, Table, Value};

/// Deeper documents are refused (no prompt file nests this deep).
const MAX_DEPTH: usize = 64;

/// A TOML file that does not parse, at this byte offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TomlSyntaxError {
    pub message: String,
    pub offset: usize,
}

/// The templates in a TOML host file. `keys` are the config's key patterns for it.
pub fn extract(
    path: &Path,
    source: &str,
    recognize: bool,
    keys: &[String],
) -> Result<Extracted, TomlSyntaxError> {
    let recognize = recognize && !quiet_by_name(path);
    if !recognize && keys.is_empty() {
        return Ok(Extracted::default());
    }
    let document = parse(source)?;
    Ok(yaml::extract_documents(
        HostKind::Toml,
        source,
        std::slice::from_ref(&document),
        recognize,
        keys,
        text_and_map,
    ))
}

/// Build and tool settings, never prompts.
fn quiet_by_name(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    matches!(
        name.as_str(),
        "cargo.toml"
            | "pyproject.toml"
            | "rustfmt.toml"
            | ".rustfmt.toml"
            | "clippy.toml"
            | "deny.toml"
            | "rust-toolchain.toml"
            | "ruff.toml"
            | ".ruff.toml"
            | "taplo.toml"
            | "netlify.toml"
            | "fly.toml"
            | "wrangler.toml"
            | "config.toml"
            | "hugo.toml"
            | "dprint.toml"
            | "typos.toml"
            | "_typos.toml"
            | "uv.toml"
            | "pixi.toml"
    )
}

/// Parses a TOML document into the extractor's tree.
pub fn parse(source: &str) -> Result<Node, TomlSyntaxError> {
    let document = toml_edit::ImDocument::parse(source).map_err(|e| TomlSyntaxError {
        message: e.message().trim().to_owned(),
        offset: e.span().map_or(0, |span| span.start),
    })?;
    let lines = Lines::new(source);
    Ok(table(document.as_table(), source, &lines, 0))
}

struct Lines(Vec<usize>);

impl Lines {
    fn new(source: &str) -> Lines {
        Lines(
            std::iter::once(0)
                .chain(source.match_indices('\n').map(|(i, _)| i + 1))
                .collect(),
        )
    }

    fn of(&self, offset: usize) -> usize {
        self.0.partition_point(|&s| s <= offset)
    }
}

fn key_scalar(name: &str, span: Option<std::ops::Range<usize>>, lines: &Lines) -> Scalar {
    let start = span.as_ref().map_or(0, |s| s.start);
    Scalar {
        value: name.to_owned(),
        style: Style::Plain,
        start,
        end: span.map_or(0, |s| s.end),
        line: lines.of(start),
        line_indent: 0,
    }
}

fn table(table: &Table, source: &str, lines: &Lines, depth: usize) -> Node {
    if depth > MAX_DEPTH {
        return Node::Other;
    }
    let entries = table
        .iter()
        .filter_map(|(name, item)| {
            let (key, _) = table.get_key_value(name)?;
            let node = item_node(item, source, lines, depth + 1);
            Some((key_scalar(name, key.span(), lines), node))
        })
        .collect();
    Node::Mapping(entries)
}

fn item_node(item: &Item, source: &str, lines: &Lines, depth: usize) -> Node {
    if depth > MAX_DEPTH {
        return Node::Other;
    }
    match item {
        Item::Value(value) => value_node(value, source, lines, depth),
        Item::Table(inner) => table(inner, source, lines, depth),
        Item::ArrayOfTables(tables) => Node::Sequence(
            tables
                .iter()
                .map(|inner| table(inner, source, lines, depth + 1))
                .collect(),
        ),
        Item::None => Node::Other,
    }
}

fn value_node(value: &Value, source: &str, lines: &Lines, depth: usize) -> Node {
    if depth > MAX_DEPTH {
        return Node::Other;
    }
    match value {
        Value::String(string) => match string.span() {
            Some(span) if span.end <= source.len() => Node::Scalar(Scalar {
                value: string.value().clone(),
                style: Style::DoubleQuoted,
                start: span.start,
                end: span.end,
                line: lines.of(span.start),
                line_indent: 0,
            }),
            _ => Node::Other,
        },
        Value::Array(array) => Node::Sequence(
            array
                .iter()
                .map(|item| value_node(item, source, lines, depth + 1))
                .collect(),
        ),
        Value::InlineTable(inline) => Node::Mapping(
            inline
                .iter()
                .filter_map(|(name, item)| {
                    let (key, _) = inline.get_key_value(name)?;
                    Some((
                        key_scalar(name, key.span(), lines),
                        value_node(item, source, lines, depth + 1),
                    ))
                })
                .collect(),
        ),
        _ => Node::Other,
    }
}

/// A TOML string's text and its map to the host: exact where decoding the host bytes again
/// gives the parser's value, else every byte at the string's start.
pub fn text_and_map(source: &str, scalar: &Scalar) -> (String, HostMap) {
    let raw = &source[scalar.start..scalar.end.min(source.len())];
    if let Some((text, segments)) = decode(raw, scalar.start) {
        if text == scalar.value {
            return (text, HostMap::new(segments));
        }
    }
    let coarse = HostMap::new(vec![Segment {
        text_start: 0,
        text_len: scalar.value.len(),
        host_start: scalar.start,
        host_len: raw.len().max(1),
    }]);
    (scalar.value.clone(), coarse)
}

/// Decodes a string token (quotes included) at host offset `base`.
fn decode(raw: &str, base: usize) -> Option<(String, Vec<Segment>)> {
    let (quote, literal) = if raw.starts_with("\"\"\"") {
        (3, false)
    } else if raw.starts_with("'''") {
        (3, true)
    } else if raw.starts_with('"') {
        (1, false)
    } else if raw.starts_with('\'') {
        (1, true)
    } else {
        return None;
    };
    if raw.len() < 2 * quote {
        return None;
    }
    let mut start = quote;
    let end = raw.len() - quote;
    // A multi-line string drops the line break right after its opening quotes.
    if quote == 3 {
        if raw[start..].starts_with("\r\n") {
            start += 2;
        } else if raw[start..].starts_with('\n') {
            start += 1;
        }
    }
    let body = raw.get(start..end)?;
    let mut out = Decoder::default();
    if literal {
        out.verbatim(body, base + start);
        return Some((out.text, out.segments));
    }
    let bytes = body.as_bytes();
    let mut run = 0;
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'\\' {
            at += 1;
            continue;
        }
        out.verbatim(&body[run..at], base + start + run);
        let next = *bytes.get(at + 1)?;
        let (decoded, len): (Option<char>, usize) = match next {
            b'b' => (Some('\u{8}'), 2),
            b't' => (Some('\t'), 2),
            b'n' => (Some('\n'), 2),
            b'f' => (Some('\u{c}'), 2),
            b'r' => (Some('\r'), 2),
            b'e' => (Some('\u{1b}'), 2),
            b'"' => (Some('"'), 2),
            b'\\' => (Some('\\'), 2),
            b'x' | b'u' | b'U' => {
                let digits = match next {
                    b'x' => 2,
                    b'u' => 4,
                    _ => 8,
                };
                let hex = body.get(at + 2..at + 2 + digits)?;
                let code = u32::from_str_radix(hex, 16).ok()?;
                (Some(char::from_u32(code)?), 2 + digits)
            }
            // A line-ending backslash: the whitespace and line breaks after it go.
            b' ' | b'\t' | b'\r' | b'\n' if quote == 3 => {
                let rest = &body[at + 1..];
                let line_end = rest.find('\n')?;
                if !rest[..line_end].trim_end_matches('\r').trim().is_empty() {
                    return None;
                }
                let skipped = rest.len() - rest.trim_start().len();
                (None, 1 + skipped)
            }
            _ => return None,
        };
        if let Some(ch) = decoded {
            out.decoded(ch, base + start + at, len);
        }
        at += len;
        run = at;
    }
    out.verbatim(&body[run..], base + start + run);
    Some((out.text, out.segments))
}

#[derive(Default)]
struct Decoder {
    text: String,
    segments: Vec<Segment>,
}

impl Decoder {
    fn verbatim(&mut self, text: &str, host_start: usize) {
        if text.is_empty() {
            return;
        }
        self.segments.push(Segment {
            text_start: self.text.len(),
            text_len: text.len(),
            host_start,
            host_len: text.len(),
        });
        self.text.push_str(text);
    }

    fn decoded(&mut self, ch: char, host_start: usize, host_len: usize) {
        self.segments.push(Segment {
            text_start: self.text.len(),
            text_len: ch.len_utf8(),
            host_start,
            host_len,
        });
        self.text.push(ch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::TemplateFormat;

    const PROMPTS: &str = r#"# Prompts of a PR reviewer.
[pr_review_prompt]
system = """
You are a meticulous code reviewer. Review the pull request below and answer in YAML.
{%- if extra_instructions %}
Extra instructions from the user: {{ extra_instructions }}
{%- endif %}
"""
user = """
PR title: '{{ title }}'
Diff:
{{ diff|trim }}
"""

[summary]
system = "You are a release-notes writer. Today is {date}. Summarize the changes below in three bullet points.\nBe concise."
temperature = 0.2
"#;

    #[test]
    fn each_value_is_its_own_template_at_its_key_line() {
        let found = extract(Path::new("pr_prompts.toml"), PROMPTS, true, &[])
            .unwrap()
            .templates;
        let got: Vec<(&str, TemplateFormat, usize)> = found
            .iter()
            .map(|t| (t.key.as_str(), t.format, t.anchor_line))
            .collect();
        assert_eq!(
            got,
            [
                ("pr_review_prompt.system", TemplateFormat::Jinja, 3),
                ("pr_review_prompt.user", TemplateFormat::Jinja, 9),
                ("summary.system", TemplateFormat::Format, 16),
            ]
        );
        // No section header in any template, and every byte maps back.
        for template in &found {
            assert!(!template.text.contains("[pr_review_prompt]"));
            for (at, _) in template.text.match_indices('{') {
                assert_eq!(&PROMPTS[template.map.host_offset(at)..][..1], "{");
            }
        }
        assert!(found[0].text.starts_with("You are a meticulous"));
        let at = found[2].text.find("Be concise").unwrap();
        assert!(PROMPTS[found[2].map.host_offset(at)..].starts_with("Be concise"));
    }

    #[test]
    fn strings_decode_as_toml_does() {
        for raw in [
            r#""a\tb\u00e9\"""#,
            "'C:\\path'",
            "\"\"\"\nline one \\\n    continued\n\"\"\"",
            "'''\nraw {x}\n'''",
        ] {
            let source = format!("k = {raw}\n");
            let parsed = toml_edit::ImDocument::parse(source.as_str()).unwrap();
            let value = parsed["k"].as_str().unwrap().to_owned();
            let (text, _) = decode(raw, 4).unwrap();
            assert_eq!(text, value, "{raw}");
        }
    }

    #[test]
    fn tool_settings_and_bad_toml() {
        let pyproject =
            "[tool.x]\nprompt = \"You are a bot. Answer the user's question below briefly: {q}\"\n";
        assert!(extract(Path::new("pyproject.toml"), pyproject, true, &[])
            .unwrap()
            .templates
            .is_empty());
        assert!(parse("a = \n").is_err());
    }
}
