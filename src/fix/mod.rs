//! Fixes: the edits that repair a finding, as ruff makes them. One implementation with two
//! front ends: `check --fix`/`--diff` (`commands::check`) and the editor server's code
//! actions (`server::actions`).
//!
//! A fix is a set of [`Edit`]s (byte ranges of the template's source and their new text)
//! with a [`Safety`]: safe fixes keep what the model reads (canonical JSON, whitespace,
//! suppression comments), unsafe ones change it (a line moved to the end). Each rule makes
//! the candidate fixes of its findings (`rules::Rule::fix`, [`candidates`]); `engine` applies them one at a time and keeps a
//! fix only when `verify` passes on the fixed template, checked again in the same run:
//! it renders over every sample, the fixed finding is gone and no new one appeared, the
//! shared prefix did not shrink, and a moved line leaves every render the same lines.

pub mod engine;
pub mod files;
pub mod host;
pub mod run;
pub mod turns;
pub mod verify;

// What a fix is made of lives below the rules, which write fixes.
pub use crate::edit::{apply, jinja, newline_of, Edit, Fix, FixKind, Safety};

use crate::check::linter::Inspection;
use crate::edit::producers::{move_to_end, Markup};
use crate::formats::TemplateFormat;
use crate::rules::{Finding, FixAvailability, FixContext, RuleCode};
use serde::Serialize;

/// What a template offers to fix one finding: its rule's candidates, best first (then, for
/// the rules about what breaks the prefix, the move of what carries it to the end), or why
/// there is none.
pub fn candidates(
    source: &str,
    finding: &Finding,
    inspection: Option<&Inspection>,
) -> Result<Vec<Fix>, String> {
    let rule = finding.rule.code.rule();
    let availability = rule.fix_availability();
    if availability == FixAvailability::Never {
        return Ok(Vec::new());
    }
    let span = finding.span.clone();
    if span.end > source.len()
        || !source.is_char_boundary(span.start)
        || !source.is_char_boundary(span.end)
    {
        return Err("the finding is not in this template's text".into());
    }
    match inspection.map_or(TemplateFormat::Jinja, |i| i.format) {
        TemplateFormat::Jinja => {}
        TemplateFormat::FString => return Err(crate::formats::fstring::NO_FIX.into()),
        // The other formats have no tags or blocks to rewrite: what breaks the prefix
        // moves to the end, lines whole (PL001, PL002).
        _ if matches!(
            finding.rule.code,
            RuleCode::VolatileBeforeStable | RuleCode::DivergenceBeforeStable
        ) =>
        {
            return move_to_end(
                source,
                &[],
                &[],
                &span,
                finding.rule.code.as_str(),
                Markup::Fields,
            )
        }
        _ => return Ok(Vec::new()),
    }
    let tags = jinja::tags(source);
    let blocks = jinja::blocks(source, &tags);
    let written_at = |offset: usize| {
        let (_, written) = inspection?.written_at(offset)?;
        Some(written.into_iter().map(|(_, value)| value).collect())
    };
    let ctx = FixContext::new(source, finding, &tags, &blocks, &written_at);
    let mut fixes = rule.fix(&ctx)?;
    if availability == FixAvailability::RepairOrMove {
        match move_to_end(
            source,
            &tags,
            &blocks,
            &span,
            finding.rule.code.as_str(),
            Markup::Jinja,
        ) {
            Ok(moved) => fixes.extend(moved),
            Err(reason) if fixes.is_empty() => return Err(reason),
            Err(_) => {}
        }
    }
    Ok(fixes)
}

/// Whether `finding`'s rule offers fixes.
pub fn fixable(finding: &Finding) -> bool {
    finding.rule.code.rule().fix_availability() != FixAvailability::Never
}

/// One fix tried on one template, as the report shows it.
#[derive(Debug, Clone, Serialize)]
pub struct FixRecord {
    pub rule: String,
    pub safety: Safety,
    /// What the fix does (or would do).
    pub title: String,
    /// 1-based line of the finding in the file before any fix.
    pub line: usize,
    pub applied: bool,
    /// Why it was not applied; `null` when it was.
    pub reason: Option<String>,
    /// The template's shared prefix before this fix and after it (the same when not applied).
    pub shared_prefix_tokens_before: usize,
    pub shared_prefix_tokens_after: usize,
}

/// The fixes of one template (a template file, or one template inside a host file).
#[derive(Debug, Clone, Serialize)]
pub struct TemplateFixes {
    pub path: String,
    /// For a template inside a host file: its key (`prompts.system`), else `null`.
    pub embedded_key: Option<String>,
    pub shared_prefix_tokens_before: usize,
    pub shared_prefix_tokens_after: usize,
    /// `after - before`: never negative, since no fix that shrinks the prefix is kept.
    pub tokens_gained: usize,
    /// Whether the file was (`--fix`) or would be (`--diff`) changed.
    pub changed: bool,
    /// Why the fixed text was not written, when it was not (a read-only file, a host
    /// file whose quoting could not hold the edit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub fixes: Vec<FixRecord>,
}

impl TemplateFixes {
    pub fn applied(&self) -> usize {
        self.fixes.iter().filter(|f| f.applied).count()
    }
}

/// The text summary of a run's fixes (`check --fix`/`--diff`): per template the fixes
/// applied and not, and the shared prefix before → after.
pub fn summary(all: &[TemplateFixes], wrote: bool) -> String {
    use crate::fmt::thousands;
    let mut out = String::new();
    let mut applied = 0;
    let mut changed_files = 0;
    for template in all
        .iter()
        .filter(|t| !t.fixes.is_empty() || t.error.is_some())
    {
        let name = match &template.embedded_key {
            Some(key) => format!("{}#{key}", template.path),
            None => template.path.clone(),
        };
        out.push_str(&format!(
            "{name}: shared prefix {} → {} tokens (+{})\n",
            thousands(template.shared_prefix_tokens_before),
            thousands(template.shared_prefix_tokens_after),
            thousands(template.tokens_gained),
        ));
        // A template whose text could not be written has no fix on disk: none is counted.
        let written = !wrote || template.error.is_none();
        for fix in &template.fixes {
            let status = match (fix.applied, wrote) {
                (true, _) if !written => "not written",
                (true, true) => "fixed",
                (true, false) => "would fix",
                (false, _) => "not fixed",
            };
            out.push_str(&format!(
                "  {}:{} {} ({}, {status}): {}",
                name,
                fix.line,
                fix.rule,
                fix.safety.as_str(),
                fix.title
            ));
            if let Some(reason) = &fix.reason {
                out.push_str(&format!(" — {reason}"));
            }
            out.push('\n');
        }
        if let Some(error) = &template.error {
            out.push_str(&format!("  not written: {error}\n"));
        }
        if written {
            applied += template.applied();
        }
        changed_files += usize::from(template.changed);
    }
    let verb = if wrote { "Fixed" } else { "Would fix" };
    out.push_str(&format!(
        "{verb} {applied} finding{} in {changed_files} file{}.\n",
        crate::fmt::plural(applied),
        crate::fmt::plural(changed_files),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Templates are untrusted: no span on any of these odd texts makes a producer panic,
    /// and every edit it proposes applies.
    #[test]
    fn odd_templates_and_spans_never_panic() {
        let sources = [
            "",
            "{{",
            "{% if %}{{ x }}",
            "é{{ ü }}\r\n{% for a in b.items() %}ñ{% endfor %}",
            "{# prefixlint: ignore[PL001, , X] #}\n{{ a ~ b }}\n",
            "{% raw %}{{ x }}{% endraw %}{% block b %}{{ y }}{% endblock %}\nz",
            "{% for x in %}{{ x | tojson }}{% endfor %}",
            "{% for x in xs if x recursive %}{{ x }}{% endfor %}\n{{ '}}' }}",
            "a\n\n{{ now }}\n\nb\n",
            "{% extends 'x' %}{{ now }}\nq",
            "{{- x -}}\n{%- if y -%}\n{{ z | trim }}\n{%- endif -%}",
        ];
        for source in sources {
            let boundaries: Vec<usize> = (0..=source.len())
                .filter(|i| source.is_char_boundary(*i))
                .collect();
            for &code in crate::rules::RuleCode::ALL {
                for (n, &start) in boundaries.iter().enumerate() {
                    for &end in boundaries[n..].iter().take(6) {
                        for label in ["CRLF vs LF", "trailing whitespace differs", ""] {
                            let rule = code.meta();
                            let finding = Finding {
                                saving: None,
                                rule,
                                severity: rule.severity,
                                cadence: None,
                                message: "unused suppression: PL001 (x)".into(),
                                help: String::new(),
                                span: start..end,
                                label: label.into(),
                                related: Vec::new(),
                            };
                            if let Ok(fixes) = candidates(source, &finding, None) {
                                for fix in fixes {
                                    let _ = apply(source, &fix.edits);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
