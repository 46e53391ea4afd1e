//! CrewAI's interpolation of `agents.yaml` / `tasks.yaml` values (`interpolate_only` in
//! `crewai/utilities/string_utils.py`, crewai 1.15): only `{name}` where the name matches
//! `[A-Za-z_][A-Za-z0-9_\-]*` is a field; every other brace (JSON examples, `{{`, `{a.b}`)
//! is text, left as written. It never fails to parse.

use super::python_format::{Field, FieldName, Piece, Template};

/// Reads `text` as CrewAI does: fields where its pattern matches, text elsewhere.
pub fn parse(text: &str) -> Template {
    let mut pieces = Vec::new();
    let bytes = text.as_bytes();
    let mut text_start = 0;
    let mut at = 0;
    while let Some(found) = memchr::memchr(b'{', &bytes[at..]) {
        let open = at + found;
        at = open + 1;
        let Some(len) = variable_len(&bytes[open + 1..]) else {
            continue;
        };
        let close = open + 1 + len;
        if bytes.get(close) != Some(&b'}') {
            continue;
        }
        if open > text_start {
            pieces.push(Piece::Text {
                span: text_start..open,
                text: text[text_start..open].to_owned(),
            });
        }
        pieces.push(Piece::Field(Field {
            span: open..close + 1,
            name: FieldName {
                root: text[open + 1..close].to_owned(),
                accessors: Vec::new(),
            },
            conversion: None,
            spec: Vec::new(),
        }));
        text_start = close + 1;
        at = close + 1;
    }
    if text_start < text.len() {
        pieces.push(Piece::Text {
            span: text_start..text.len(),
            text: text[text_start..].to_owned(),
        });
    }
    Template { pieces }
}

/// The length of `[A-Za-z_][A-Za-z0-9_\-]*` at the start of `bytes`.
fn variable_len(bytes: &[u8]) -> Option<usize> {
    let first = *bytes.first()?;
    if !(first.is_ascii_alphabetic() || first == b'_') {
        return None;
    }
    Some(
        1 + bytes[1..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
            .count(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_names_are_fields() {
        let t = parse(r#"Topic {topic}; JSON {"a": 1} {{x}} {a.b} {my-var}{_x9}"#);
        let names: Vec<&str> = t.fields().map(|f| f.name.root.as_str()).collect();
        // `{{x}}` holds `{x}`, which CrewAI's pattern finds inside the doubled braces.
        assert_eq!(names, ["topic", "x", "my-var", "_x9"]);
        let text: String = t
            .pieces
            .iter()
            .map(|p| match p {
                Piece::Text { text, .. } => text.clone(),
                Piece::Field(f) => format!("<{}>", f.name.root),
            })
            .collect();
        assert_eq!(
            text,
            r#"Topic <topic>; JSON {"a": 1} {<x>} {a.b} <my-var><_x9>"#
        );
    }
}
