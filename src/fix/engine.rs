//! Fixing one template: check it, take its findings one at a time, try each finding's
//! candidate fixes in order, and keep the first the verifier accepts; the template checked
//! with that fix becomes the new "before". It stops when no finding has a fix left to
//! try, so a second run over its output has nothing to do.

use super::verify::{verify, Checked};
use super::{apply, FixRecord, Safety};
use crate::rules::{Finding, FixAvailability, RuleCode};
use std::collections::HashSet;

/// Why an unsafe fix was not applied.
const UNSAFE: &str = "unsafe: it changes what the model reads; apply it with `--unsafe-fixes`";

/// More rounds than any template has fixable findings; a bound all the same.
const MAX_ROUNDS: usize = 64;

#[derive(Debug, Clone, Default)]
pub struct FixOptions {
    /// Apply the fixes that change what the model reads (`--unsafe-fixes`).
    pub unsafe_fixes: bool,
    /// Only these rules' findings (`--select`); all when `None`.
    pub select: Option<Vec<String>>,
}

impl FixOptions {
    pub fn selects(&self, code: &str) -> bool {
        self.select
            .as_ref()
            .is_none_or(|codes| codes.iter().any(|c| c == code))
    }
}

/// A template after its fixes.
pub struct Fixed {
    pub text: String,
    pub records: Vec<FixRecord>,
    pub shared_prefix_tokens_before: usize,
    pub shared_prefix_tokens_after: usize,
}

/// What identifies a finding across fixes that move text: its rule, what its span holds,
/// and the line around it.
fn identity(text: &str, finding: &Finding) -> (RuleCode, String, String) {
    let span = text.get(finding.span.clone()).unwrap_or("").to_owned();
    let line = super::jinja::full_line(text, finding.span.start);
    (finding.rule.code, span, text[line].trim().to_owned())
}

/// Fixes `original` with `check` (the template's text → its checked form); `None` when the
/// original does not check (its error is the report's to show).
pub fn fix_template(
    check: &dyn Fn(&str) -> Result<Checked, String>,
    original: &str,
    options: &FixOptions,
) -> Option<Fixed> {
    let mut text = original.to_owned();
    let mut current = check(&text).ok()?;
    let start = current.shared_prefix_tokens();
    let mut records = Vec::new();
    let mut settled = HashSet::new();
    for _ in 0..MAX_ROUNDS {
        let next = current.report.findings.iter().find(|f| {
            super::fixable(f)
                && options.selects(f.rule.code.as_str())
                && !settled.contains(&identity(&text, f))
        });
        let Some(finding) = next else { break };
        settled.insert(identity(&text, finding));
        let line = crate::source::line_col(&text, finding.span.start).0;
        let prefix = current.shared_prefix_tokens();
        let not_applied = |rule: &str, safety, title: String, reason: String| FixRecord {
            rule: rule.to_owned(),
            safety,
            title,
            line,
            applied: false,
            reason: Some(reason),
            shared_prefix_tokens_before: prefix,
            shared_prefix_tokens_after: prefix,
        };
        let code = finding.rule.code.as_str();
        let candidates =
            match super::turns::candidates(&text, finding, &current.inspection, &current.turns) {
                Ok(candidates) => candidates,
                Err(reason) => {
                    // No candidate at all for a rule about the prefix: what was refused is the
                    // move, and a move is unsafe.
                    let safety = if finding.rule.code.rule().fix_availability()
                        == FixAvailability::RepairOrMove
                    {
                        Safety::Unsafe
                    } else {
                        Safety::Safe
                    };
                    records.push(not_applied(code, safety, "no fix".into(), reason));
                    continue;
                }
            };
        let mut refused: Vec<(super::Fix, String)> = Vec::new();
        let mut accepted = None;
        for fix in candidates {
            if fix.safety == Safety::Unsafe && !options.unsafe_fixes {
                refused.push((fix, UNSAFE.into()));
                continue;
            }
            let Some(fixed) = apply(&text, &fix.edits) else {
                refused.push((fix, "its edits overlap".into()));
                continue;
            };
            let after = check(&fixed);
            match verify(&fix, &current, after.as_ref().map_err(String::as_str)) {
                Ok(()) => {
                    accepted = after.ok().map(|after| (fix, fixed, after));
                    break;
                }
                Err(reason) => refused.push((fix, reason)),
            }
        }
        match accepted {
            Some((fix, fixed, after)) => {
                records.push(FixRecord {
                    rule: code.to_owned(),
                    safety: fix.safety,
                    title: fix.title,
                    line,
                    applied: true,
                    reason: None,
                    shared_prefix_tokens_before: prefix,
                    shared_prefix_tokens_after: after.shared_prefix_tokens(),
                });
                text = fixed;
                current = after;
            }
            None => {
                // The best candidate stands for the finding; the reasons say why each
                // failed, and an unsafe one left out says so once.
                if let Some((first, _)) = refused.first() {
                    let tried: Vec<String> = refused
                        .iter()
                        .filter(|(_, reason)| reason != UNSAFE)
                        .map(|(fix, reason)| format!("{}: {reason}", fix.title))
                        .collect();
                    let skipped_unsafe = refused.iter().any(|(_, reason)| reason == UNSAFE);
                    let reason = match (tried.len(), skipped_unsafe) {
                        (0, _) => UNSAFE.to_owned(),
                        (1, false) => refused[0].1.clone(),
                        (_, false) => tried.join("; "),
                        (_, true) => format!(
                            "{}; an unsafe fix is left: apply it with `--unsafe-fixes`",
                            tried.join("; ")
                        ),
                    };
                    records.push(not_applied(code, first.safety, first.title.clone(), reason));
                }
            }
        }
    }
    let end = current.shared_prefix_tokens();
    Some(Fixed {
        text,
        records,
        shared_prefix_tokens_before: start,
        shared_prefix_tokens_after: end,
    })
}

/// The fixes the editor offers for `finding` in `text` (checked as `current`): of its
/// candidates, the first safe one and the first unsafe one that the verifier accepts, as
/// `check --fix` would apply them.
pub fn verified_fixes(
    check: &dyn Fn(&str) -> Result<Checked, String>,
    text: &str,
    current: &Checked,
    finding: &Finding,
) -> Vec<super::Fix> {
    let Ok(candidates) =
        super::turns::candidates(text, finding, &current.inspection, &current.turns)
    else {
        return Vec::new();
    };
    let mut offered: Vec<super::Fix> = Vec::new();
    for fix in candidates {
        if offered.iter().any(|f| f.safety == fix.safety) {
            continue;
        }
        let Some(fixed) = apply(text, &fix.edits) else {
            continue;
        };
        let after = check(&fixed);
        if verify(&fix, current, after.as_ref().map_err(String::as_str)).is_ok() {
            offered.push(fix);
        }
    }
    offered
}
