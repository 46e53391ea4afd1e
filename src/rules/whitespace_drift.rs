//! PL004 whitespace-drift: docs in `rules/PL004-whitespace-drift.yaml`.

use super::breakpoint::Breakpoint;
use super::text_difference::Drift;
use super::{meta, Finding, FixAvailability, FixContext, Reads, Rule, RuleCode, RuleContext};
use crate::edit::producers::add_filter;
use crate::edit::{Fix, FixKind, Safety};
use crate::fmt::thousands;

pub struct WhitespaceDrift;

impl Rule for WhitespaceDrift {
    fn code(&self) -> RuleCode {
        RuleCode::WhitespaceDrift
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
        let Some(drift) = bp.drift else {
            return Vec::new();
        };
        let rule = meta(self.code());
        let lost = ctx.analysis.recoverable_tokens;
        let gain = if lost > 0 {
            format!("; {} tokens would become cacheable", thousands(lost))
        } else {
            String::new()
        };
        let (what, help, label) = match drift {
            Drift::LineEndings => (
                "in line endings only (CRLF in one render, LF in another)",
                format!(
                    "normalize line endings to LF where this text comes from (the file, the samples or the caller), or with `| replace('\\r\\n', '\\n')`{gain}"
                ),
                "CRLF vs LF",
            ),
            Drift::TrailingWhitespace => (
                "in trailing whitespace only",
                format!(
                    "strip trailing whitespace where this text comes from, or with `| trim` or `{{%-`/`-%}}` whitespace control{gain}"
                ),
                "trailing whitespace differs",
            ),
        };
        vec![Finding {
            saving: None,
            cadence: None,
            rule,
            severity: rule.severity,
            message: format!(
                "the renders of {} differ {what}: the shared prefix ends at token {}",
                bp.subject(),
                thousands(ctx.analysis.shared_prefix_tokens),
            ),
            help,
            span: bp.span.clone(),
            label: label.into(),
            related: bp.related,
        }]
    }

    /// The expression that writes the whitespace, filtered so every render writes the same.
    fn fix(&self, ctx: &FixContext) -> Result<Vec<Fix>, String> {
        let filter = match ctx.finding.label.as_str() {
            "CRLF vs LF" => Some((r#"replace("\r\n", "\n")"#, "Normalize line endings")),
            "trailing whitespace differs" => Some(("trim", "Strip the whitespace around it")),
            _ => None,
        };
        let mut fixes = Vec::new();
        if let (Some((filter, what)), Some(tag)) = (filter, ctx.expression()) {
            if let Some(edits) = add_filter(ctx.source, tag, filter) {
                fixes.push(ctx.fix(
                    Safety::Safe,
                    FixKind::Rewrite,
                    format!("{what}: add `| {filter}`"),
                    edits,
                ));
            }
        }
        Ok(fixes)
    }
}
