//! PL010 suppression-without-reason: docs in `rules/PL010-suppression-without-reason.yaml`.
//!
//! A suppression comment without a reason is not honoured (`suppress` finds them while it
//! reads the comments). Its fix adds a placeholder reason for the author to replace.

use super::suppression_comment::comment_codes;
use super::{meta, Finding, FixAvailability, FixContext, Reads, Rule, RuleCode};
use crate::edit::{Edit, Fix, FixKind, Safety};
use std::ops::Range;

/// The reason a new suppression comment carries until its author writes the real one (the
/// editor's "add a suppression" action, this rule's fix): a comment without one is not
/// honoured.
pub const REASON_PLACEHOLDER: &str = "reason: explain why this is acceptable";

pub struct SuppressionWithoutReason;

impl Rule for SuppressionWithoutReason {
    fn code(&self) -> RuleCode {
        RuleCode::SuppressionWithoutReason
    }

    fn reads(&self) -> Reads {
        Reads::Suppressions
    }

    fn fix_availability(&self) -> FixAvailability {
        FixAvailability::Repair
    }

    fn fix(&self, ctx: &FixContext) -> Result<Vec<Fix>, String> {
        reason_placeholder(ctx).map(|fix| vec![fix])
    }
}

/// The finding for the comment at `span`, which gives no reason.
pub fn finding(span: Range<usize>) -> Finding {
    let rule = meta(RuleCode::SuppressionWithoutReason);
    Finding {
        saving: None,
        cadence: None,
        rule,
        severity: rule.severity,
        message: "this suppression gives no reason, so it is not honoured".into(),
        help: "write why the finding is acceptable after the codes: {# prefixlint: ignore[PL001] changes once a day #}".into(),
        span,
        label: "no reason after the codes".into(),
        related: Vec::new(),
    }
}

/// The placeholder reason after the codes, for the author to replace.
fn reason_placeholder(ctx: &FixContext) -> Result<Fix, String> {
    let span = ctx.span();
    let comment = &ctx.source[span.clone()];
    let (_, after_codes) = comment_codes(comment).ok_or("not an inline suppression comment")?;
    Ok(ctx.fix(
        Safety::Safe,
        FixKind::Rewrite,
        format!("Add the reason placeholder `{REASON_PLACEHOLDER}`"),
        vec![Edit::insert(
            span.start + after_codes,
            format!(" {REASON_PLACEHOLDER}"),
        )],
    ))
}
