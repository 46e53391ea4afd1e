//! PL003 unstable-serialization: docs in `rules/PL003-unstable-serialization.yaml`.
//!
//! The "equal as data" test itself lives in [`crate::analyse::same_data`]: analysis and
//! PL002 use it too, so that PL002 stays quiet where this rule explains the break.

use super::breakpoint::Breakpoint;
use super::{meta, Finding, Rule, RuleContext};
use crate::analyse::same_data::canonical;
use crate::fmt::thousands;
use serde_json::Value;

pub struct UnstableSerialization;

impl Rule for UnstableSerialization {
    fn code(&self) -> &'static str {
        "PL003"
    }

    fn check(&self, ctx: &RuleContext) -> Vec<Finding> {
        let Some(bp) = Breakpoint::find(ctx) else {
            return Vec::new();
        };
        if !bp.same_json {
            return Vec::new();
        }
        let rule = meta(self.code());
        let lost = ctx.analysis.recoverable_tokens;
        let gain = if lost > 0 {
            format!("; {} tokens would become cacheable", thousands(lost))
        } else {
            String::new()
        };
        vec![Finding {
            cadence: None,
            rule,
            severity: rule.severity,
            message: format!(
                "{} renders the same JSON data with a different key order, list order or spacing: the shared prefix ends at token {}",
                bp.subject(),
                thousands(ctx.analysis.shared_prefix_tokens),
            ),
            help: format!(
                "serialize it canonically: sorted keys (`| tojson` sorts them), lists in a fixed order (e.g. tools sorted by name) and one fixed spacing{gain}"
            ),
            span: bp.span.clone(),
            label: "same data, different bytes".into(),
            related: bp.related,
        }]
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
    (0..head.len())
        .rev()
        .filter(|&i| matches!(head[i], b'{' | b'['))
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
    use crate::analyse::same_data::same_data_different_text;

    #[test]
    fn key_order_list_order_and_spacing_are_same_data() {
        let same = |a: &str, b: &str| same_data_different_text(&[a.into(), b.into()]);
        assert!(same(r#"{"a": 1, "b": 2}"#, r#"{"b": 2, "a": 1}"#));
        assert!(same(
            r#"[{"n": "x"}, {"n": "y"}]"#,
            r#"[{"n": "y"}, {"n": "x"}]"#
        ));
        assert!(same(r#"{"a":[1,2]}"#, r#"{"a": [2, 1]}"#));
        assert!(!same(r#"{"a": 1}"#, r#"{"a": 1}"#));
        assert!(!same(r#"[1, 1, 2]"#, r#"[1, 2, 2]"#));
        assert!(!same(r#"{"a": 1}"#, r#"{"a": 2}"#));
        assert!(!same("x", "y"));
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
