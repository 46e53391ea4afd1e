//! PL009 unused-suppression: docs in `rules/PL009-unused-suppression.yaml`.
//!
//! A code in a suppression comment that suppressed nothing (`suppress` finds them while
//! it honours the comments). Its fix takes the code, or the comment, out.

use super::suppression_comment::comment_codes;
use super::{meta, Finding, FixAvailability, FixContext, Reads, Rule, RuleCode, RuleMeta};
use crate::edit::jinja;
use crate::edit::{Edit, Fix, FixKind, Safety};
use std::ops::Range;

pub struct UnusedSuppression;

impl Rule for UnusedSuppression {
    fn code(&self) -> RuleCode {
        RuleCode::UnusedSuppression
    }

    fn reads(&self) -> Reads {
        Reads::Suppressions
    }

    fn fix_availability(&self) -> FixAvailability {
        FixAvailability::Repair
    }

    fn fix(&self, ctx: &FixContext) -> Result<Vec<Fix>, String> {
        remove_unused(ctx)
    }
}

/// The finding for `written`, a code of the comment at `span` that suppressed nothing:
/// `rule` is the rule it names (`None`: no rule has that code or name); `whole_file` for
/// an `ignore-file` comment.
pub fn finding(
    span: Range<usize>,
    written: &str,
    rule: Option<&RuleMeta>,
    whole_file: bool,
) -> Finding {
    // `unused_code` reads the code back from these messages.
    let (message, help, label) = match rule {
        Some(rule) => (
            format!(
                "unused suppression: {} ({}) did not fire {}",
                rule.code,
                rule.name,
                if whole_file {
                    "in this file"
                } else {
                    "on this line or the next"
                }
            ),
            "remove the code from the comment, or move the comment onto the finding's line or the line before it",
            "suppresses nothing",
        ),
        None => (
            format!("unused suppression: there is no rule `{written}`"),
            "`prefixlint rules` lists the codes and names",
            "unknown rule",
        ),
    };
    let rule = meta(RuleCode::UnusedSuppression);
    Finding {
        saving: None,
        cadence: None,
        rule,
        severity: rule.severity,
        message,
        help: help.to_owned(),
        span,
        label: label.to_owned(),
        related: Vec::new(),
    }
}

/// The code a PL009 finding says suppressed nothing, as written in the comment (read back
/// from the message [`finding`] writes).
pub fn unused_code(message: &str) -> Option<&str> {
    if let Some(rest) = message.strip_prefix("unused suppression: there is no rule `") {
        return rest.strip_suffix('`');
    }
    let rest = message.strip_prefix("unused suppression: ")?;
    rest.split_once(" (").map(|(code, _)| code)
}

/// PL009: the unused code out of the comment, or the comment when it was the only code
/// (with its line when nothing else is on it, else or when that would take a line out of
/// the renders, the comment alone).
fn remove_unused(ctx: &FixContext) -> Result<Vec<Fix>, String> {
    let (source, finding) = (ctx.source, ctx.finding);
    let span = finding.span.clone();
    let comment = &source[span.clone()];
    let unused =
        unused_code(&finding.message).ok_or("cannot tell which code suppressed nothing")?;
    let (codes_range, _) = comment_codes(comment).ok_or("not an inline suppression comment")?;
    let codes: Vec<&str> = comment[codes_range.clone()]
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    let kept: Vec<&str> = codes.iter().copied().filter(|c| *c != unused).collect();
    if kept.len() == codes.len() {
        return Err(format!("`{unused}` is not in the comment"));
    }
    let fix =
        |title: &str, edit| ctx.fix(Safety::Safe, FixKind::Rewrite, title.to_owned(), vec![edit]);
    if !kept.is_empty() {
        let range = span.start + codes_range.start..span.start + codes_range.end;
        return Ok(vec![fix(
            &format!("Remove `{unused}` from the suppression comment"),
            Edit {
                range,
                replacement: kept.join(", "),
            },
        )]);
    }
    let line = jinja::full_line(source, span.start);
    let before = &source[line.start..span.start];
    let after = &source[span.end..line.end];
    let mut fixes = Vec::new();
    if before.trim().is_empty() && after.trim().is_empty() {
        fixes.push(fix(
            "Remove the unused suppression comment and its line",
            Edit::delete(line),
        ));
    }
    // The space that separated the comment from what precedes it goes too.
    let spaces = before.len() - before.trim_end_matches([' ', '\t']).len();
    let spaces = if after.trim().is_empty() { spaces } else { 0 };
    fixes.push(fix(
        "Remove the unused suppression comment",
        Edit::delete(span.start - spaces..span.end),
    ));
    Ok(fixes)
}
