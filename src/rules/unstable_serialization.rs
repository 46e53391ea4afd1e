//! PL003 unstable-serialization: docs in `rules/PL003-unstable-serialization.yaml`.
//!
//! The "equal as data" test itself lives in [`crate::analyse::same_data`]: analysis and
//! PL002 use it too, so that PL002 stays quiet where this rule explains the break.

use super::breakpoint::Breakpoint;
use super::{meta, Finding, Rule, RuleContext};
use crate::fmt::thousands;

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
