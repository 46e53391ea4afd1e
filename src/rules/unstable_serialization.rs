//! PL003 unstable-serialization: docs in `rules/PL003-unstable-serialization.yaml`.
//!
//! The "equal as data" test itself lives in [`crate::analyse::same_data`]: analysis and
//! PL002 use it too, so that PL002 stays quiet where this rule explains the break.

use super::breakpoint::Breakpoint;
use super::{meta, Finding, FixAvailability, FixContext, Reads, Rule, RuleCode, RuleContext};
use crate::edit::jinja::{self, Block, Tag};
use crate::edit::producers::{add_filter, innermost};
use crate::edit::{Edit, Fix, FixKind, Safety};
use crate::fmt::thousands;

pub struct UnstableSerialization;

impl Rule for UnstableSerialization {
    fn code(&self) -> RuleCode {
        RuleCode::UnstableSerialization
    }

    fn reads(&self) -> Reads {
        Reads::Analysis
    }

    fn fix_availability(&self) -> FixAvailability {
        FixAvailability::RepairOrMove
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
            saving: None,
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

    fn fix(&self, ctx: &FixContext) -> Result<Vec<Fix>, String> {
        Ok(serialization_fixes(ctx))
    }
}

/// The repairs of a value that differs between renders but may be the same data written
/// differently (PL003's, and PL002's where the data is not known to be equal): Python's
/// `str()` of a mapping, or a mapping's items or a list in the order they came.
pub(super) fn serialization_fixes(ctx: &FixContext) -> Vec<Fix> {
    let (source, span) = (ctx.source, ctx.span());
    let expression = ctx.expression();
    let mut fixes = Vec::new();
    if let Some(tag) = expression {
        if let Some(edits) = python_repr_to_json(ctx, tag) {
            fixes.push(ctx.fix(
                Safety::Safe,
                FixKind::Rewrite,
                "Serialize canonically: add `| tojson` (sorted keys)".into(),
                edits,
            ));
        }
    }
    if let Some(block) = innermost(ctx.blocks, &span, "for") {
        fixes.extend(
            stable_loop_order(source, block)
                .into_iter()
                .map(|(safety, title, edit)| ctx.fix(safety, FixKind::Rewrite, title, vec![edit])),
        );
    } else if let Some(tag) = expression {
        for (title, edit) in sorted_before_tojson(source, tag) {
            fixes.push(ctx.fix(Safety::Unsafe, FixKind::Rewrite, title, vec![edit]));
        }
    }
    fixes
}

/// PL003 on a mapping or list written with its Python `str()` (not JSON, which `tojson`
/// would quote as a string): `| tojson` keeps its data, in canonical JSON with sorted keys.
fn python_repr_to_json(ctx: &FixContext, tag: &Tag) -> Option<Vec<Edit>> {
    let source = ctx.source;
    let written = ctx.written_at(tag.range.start)?;
    let python_repr = |value: &str| {
        let value = value.trim();
        (value.starts_with('{') || value.starts_with('['))
            && serde_json::from_str::<serde_json::Value>(value).is_err()
    };
    if written.is_empty() || !written.iter().all(|value| python_repr(value)) {
        return None;
    }
    if source[tag.inner.clone()].contains("tojson") {
        return None;
    }
    add_filter(source, tag, "tojson")
}

/// The orders a loop can take whatever order its input comes in: a mapping's items sorted
/// by key (safe: a mapping has no order of its own), or a list sorted (unsafe: a list's
/// order may mean something), by `name` first, as tool lists are.
fn stable_loop_order(source: &str, block: &Block) -> Vec<(Safety, String, Edit)> {
    let inner = block.open.inner.clone();
    let statement = &source[inner.clone()];
    let Some(in_at) = statement.find(" in ") else {
        return Vec::new();
    };
    let iterable_start = in_at + 4;
    let rest = &statement[iterable_start..];
    // The iterable ends before a loop filter (`if …`) or `recursive`.
    let iterable_len = [" if ", " recursive"]
        .iter()
        .filter_map(|k| rest.find(k))
        .min()
        .unwrap_or(rest.trim_end().len());
    let iterable = rest[..iterable_len].trim();
    let range = inner.start + iterable_start + (rest.len() - rest.trim_start().len())
        ..inner.start + iterable_start + iterable_len.min(rest.trim_end().len());
    if iterable.is_empty() || iterable.contains("sort") {
        return Vec::new();
    }
    if let Some(mapping) = iterable.strip_suffix(".items()") {
        return vec![(
            Safety::Safe,
            "Iterate the mapping in key order: `| dictsort`".into(),
            Edit {
                range,
                replacement: format!("{mapping} | dictsort"),
            },
        )];
    }
    let head = if jinja::filter_binds_whole(iterable) {
        iterable.to_owned()
    } else {
        format!("({iterable})")
    };
    [r#"sort(attribute="name")"#, "sort"]
        .iter()
        .map(|filter| {
            (
                Safety::Unsafe,
                format!("Iterate in a stable order: `| {filter}`"),
                Edit {
                    range: range.clone(),
                    replacement: format!("{head} | {filter}"),
                },
            )
        })
        .collect()
}

/// `{{ tools | tojson }}` whose list comes in different orders: sorted before it is
/// serialized (unsafe, as any list reordering).
fn sorted_before_tojson(source: &str, tag: &Tag) -> Vec<(String, Edit)> {
    let inner = &source[tag.inner.clone()];
    let Some(pipe) = inner.rfind('|') else {
        return Vec::new();
    };
    if !inner[pipe + 1..].trim_start().starts_with("tojson") || inner.contains("sort") {
        return Vec::new();
    }
    let head = inner[..pipe].trim();
    if head.is_empty() {
        return Vec::new();
    }
    let head_start = tag.inner.start + (inner.len() - inner.trim_start().len());
    let head_range = head_start..head_start + head.len();
    let head = if jinja::filter_binds_whole(head) {
        head.to_owned()
    } else {
        format!("({head})")
    };
    [r#"sort(attribute="name")"#, "sort"]
        .iter()
        .map(|filter| {
            (
                format!("Serialize the list in a stable order: `| {filter}` before `| tojson`"),
                Edit {
                    range: head_range.clone(),
                    replacement: format!("{head} | {filter}"),
                },
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
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
}
