//! How two renders differ where their shared prefix ends, read from the raw text: only in
//! whitespace ([`drift_at`], PL004) or in how the same JSON data is written
//! ([`same_json_at`], PL003). `breakpoint` asks both for every break; the rules read the
//! answers from its `Breakpoint`.

use crate::analyse::same_data::canonical;
use serde_json::Value;

/// How two renders differ where their shared prefix ends, when only whitespace differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drift {
    /// CRLF in one render, LF in the other.
    LineEndings,
    /// Spaces or tabs at the end of the line, or a missing final newline.
    TrailingWhitespace,
}

/// Whether renders `a` and `b`, which first differ at byte `offset`, differ on that line
/// only in line endings or trailing whitespace.
pub fn drift_at(a: &str, b: &str, offset: usize) -> Option<Drift> {
    let offset = offset.min(a.len()).min(b.len());
    let line_start = a.get(..offset)?.rfind('\n').map_or(0, |i| i + 1);
    let line = |text: &'_ str| -> Option<(String, bool)> {
        let rest = text.get(line_start..)?;
        let line = match rest.find('\n') {
            Some(i) => &rest[..i],
            None => rest,
        };
        let crlf = line.ends_with('\r');
        Some((line.trim_end_matches('\r').to_owned(), crlf))
    };
    let ((text_a, crlf_a), (text_b, crlf_b)) = (line(a)?, line(b)?);
    if text_a == text_b && crlf_a != crlf_b {
        Some(Drift::LineEndings)
    } else if text_a.trim_end() == text_b.trim_end() {
        Some(Drift::TrailingWhitespace)
    } else {
        None
    }
}

/// Renders `a` and `b` first differ at `offset` inside JSON that holds the same data in
/// both: one object or array, or a run of them (one tool per line, say) holding the same
/// multiset. Found from the raw text, for breaks that no single expression wrote, such
/// as a loop over tools in another order.
pub fn same_json_at(a: &str, b: &str, offset: usize) -> bool {
    let Some((start, _)) = json_around(a, offset) else {
        return false;
    };
    let (mut run_a, end_a) = json_run(a, start);
    let (mut run_b, end_b) = json_run(b, start);
    let first_same = matches!((run_a.first(), run_b.first()), (Some(x), Some(y)) if x == y);
    run_a.sort_unstable();
    run_b.sort_unstable();
    (first_same || run_a == run_b) && a[start..end_a] != b[start..end_b]
}

/// The JSON objects and arrays that follow each other from `start`, separated only by
/// whitespace or commas, in canonical form; and where the run ends.
fn json_run(text: &str, start: usize) -> (Vec<String>, usize) {
    let mut values = Vec::new();
    let mut end = start;
    loop {
        let rest = &text[end..];
        let at = end
            + (rest.len()
                - rest
                    .trim_start_matches(|c: char| c.is_whitespace() || c == ',')
                    .len());
        match json_value_at(text, at) {
            Some((value, value_end)) => {
                values.push(canonical(&value));
                end = value_end;
            }
            None => break,
        }
    }
    (values, end)
}

/// The outermost JSON object or array in `text` that starts at or before `offset` and
/// ends after it, as a byte range.
fn json_around(text: &str, offset: usize) -> Option<(usize, usize)> {
    // Bounded: JSON blocks in prompts are tools and schemas, not megabytes.
    const MAX_CANDIDATES: usize = 512;
    let head = &text.as_bytes()[..(offset + 1).min(text.len())];
    // Last to first, found a word at a time rather than a byte at a time.
    memchr::memrchr2_iter(b'{', b'[', head)
        .take(MAX_CANDIDATES)
        .filter_map(|start| {
            let (_, end) = json_value_at(text, start)?;
            (end > offset).then_some((start, end))
        })
        .last()
}

/// The JSON value that starts at byte `start`, and where it ends.
fn json_value_at(text: &str, start: usize) -> Option<(Value, usize)> {
    let rest = text.get(start..)?;
    let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
    let value = stream.next()?.ok()?;
    if !(value.is_object() || value.is_array()) {
        return None;
    }
    Some((value, start + stream.byte_offset()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(a: &str, b: &str) -> Option<Drift> {
        let offset = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
        drift_at(a, b, offset)
    }

    #[test]
    fn line_endings() {
        assert_eq!(at("x\r\ny", "x\ny"), Some(Drift::LineEndings));
        assert_eq!(at("a\nb\r\nc", "a\nb\nc"), Some(Drift::LineEndings));
    }

    #[test]
    fn trailing_whitespace() {
        assert_eq!(at("x  \ny", "x\ny"), Some(Drift::TrailingWhitespace));
        assert_eq!(at("x\t\ny", "x \ny"), Some(Drift::TrailingWhitespace));
        assert_eq!(at("x\n", "x"), Some(Drift::TrailingWhitespace));
    }

    #[test]
    fn real_differences_are_not_drift() {
        assert_eq!(at("Hello Ann\nrules", "Hello Bob\nrules"), None);
        assert_eq!(at("x y\n", "x\ny\n"), None);
    }

    #[test]
    fn finds_the_enclosing_json_in_raw_text() {
        let a = "Tools:\n[{\"name\": \"a\"}, {\"name\": \"b\"}]\nRules follow.";
        let b = "Tools:\n[{\"name\": \"b\"}, {\"name\": \"a\"}]\nRules follow.";
        let offset = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
        assert!(same_json_at(a, b, offset));
        let c = "Tools:\n[{\"name\": \"a\"}, {\"name\": \"c\"}]\nRules follow.";
        let offset = a.bytes().zip(c.bytes()).take_while(|(x, y)| x == y).count();
        assert!(!same_json_at(a, c, offset));
        assert!(!same_json_at("plain {text", "plain {test", 9));
    }

    #[test]
    fn finds_reordered_json_lines() {
        let a = "Tools:\n{\"name\": \"a\"}\n{\"name\": \"b\"}\nRules follow.";
        let b = "Tools:\n{\"name\": \"b\"}\n{\"name\": \"a\"}\nRules follow.";
        let offset = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
        assert!(same_json_at(a, b, offset));
        let c = "Tools:\n{\"name\": \"b\"}\nRules follow.";
        let offset = a.bytes().zip(c.bytes()).take_while(|(x, y)| x == y).count();
        assert!(!same_json_at(a, c, offset));
    }
}
