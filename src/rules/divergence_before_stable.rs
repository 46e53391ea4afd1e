//! PL002 divergence-before-stable: docs in `rules/PL002-divergence-before-stable.yaml`.

use super::breakpoint::Breakpoint;
use super::sites::{
    first_site_help, later_site_context, later_site_help, later_sites, stable_tokens, stand_in_note,
};
use super::{
    meta, FieldMatch, Finding, FixAvailability, FixContext, Reads, Rule, RuleCode, RuleContext,
};
use crate::analyse::Analysis;
use crate::edit::Fix;
use crate::fmt::thousands;

pub struct DivergenceBeforeStable;

impl Rule for DivergenceBeforeStable {
    fn code(&self) -> RuleCode {
        RuleCode::DivergenceBeforeStable
    }

    fn reads(&self) -> Reads {
        Reads::Analysis
    }

    fn fix_availability(&self) -> FixAvailability {
        FixAvailability::RepairOrMove
    }

    fn check(&self, ctx: &RuleContext) -> Vec<Finding> {
        let lost = ctx.analysis.recoverable_tokens;
        if ctx.analysis.stable_tokens_rendered() < ctx.min_lost_tokens {
            return Vec::new();
        }
        let Some(bp) = Breakpoint::find(ctx) else {
            return Vec::new();
        };
        let rule = meta(self.code());
        let later = later_sites(ctx);
        let mut findings = Vec::new();
        // Volatile values are PL001's; equal JSON in other bytes is PL003's; whitespace
        // drift is PL004's.
        if bp.volatile.is_none() && !bp.same_json && bp.drift.is_none() {
            let mut help = match first_site_help(ctx, &later) {
                Some(more) => format!(
                    "move {} after the content that is the same for every request; {more}",
                    bp.subject()
                ),
                None => format!(
                    "move {} after the content that is the same for every request; {} tokens would become cacheable",
                    bp.subject(),
                    thousands(lost)
                ),
            };
            help.push_str(&per_deploy_help(bp.assumed.as_deref()));
            findings.push(Finding {
                saving: None,
                cadence: bp.input.as_ref().map(|input| input.cadence),
                rule,
                severity: rule.severity,
                message: format!(
                    "{} differs between renders before {}: the shared prefix ends at token {}{}",
                    bp.subject(),
                    stable_tokens(lost, ctx.analysis.stand_in_tokens),
                    thousands(ctx.analysis.shared_prefix_tokens),
                    input_tail(bp.input.as_ref(), bp.assumed.as_deref()),
                ),
                help,
                span: bp.span.clone(),
                label: label(bp.input.as_ref(), bp.assumed.as_deref()),
                related: bp.related,
            });
        }
        for (index, site) in later.iter().enumerate() {
            if site.volatile.is_some() {
                continue;
            }
            findings.push(Finding {
                saving: None,
                cadence: site.input.as_ref().map(|input| input.cadence),
                rule,
                severity: rule.severity,
                message: format!(
                    "{} differs between renders before {} stable tokens ({}{}){}",
                    site.subject(),
                    thousands(site.lost),
                    later_site_context(ctx, index, later.len()),
                    stand_in_note(site.stand_in_tokens),
                    input_tail(site.input.as_ref(), site.assumed.as_deref()),
                ),
                help: later_site_help(ctx, site, later.len())
                    + &per_deploy_help(site.assumed.as_deref()),
                span: site.span.clone(),
                label: label(site.input.as_ref(), site.assumed.as_deref()),
                related: site.related.clone(),
            });
        }
        findings
    }

    /// A divergence may be the same data serialized differently: PL003's repairs first.
    fn fix(&self, ctx: &FixContext) -> Result<Vec<Fix>, String> {
        Ok(super::unstable_serialization::serialization_fixes(ctx))
    }
}

/// The message's tail for the request's own input: it differs by nature, so the fix is
/// its place, not its value. For a value whose cadence the synthesized samples assumed:
/// that it was assumed.
fn input_tail(input: Option<&FieldMatch>, assumed: Option<&str>) -> String {
    match (input, assumed) {
        (Some(input), _) => format!(
            "; it is {}, which {}",
            input.description,
            input.cadence.describe()
        ),
        (None, Some(path)) => format!(
            "; cadence assumed: nothing says how often `{path}` changes, so it is taken to change on every request"
        ),
        (None, None) => String::new(),
    }
}

/// The help's tail for an assumed cadence: how to declare the value per deploy.
fn per_deploy_help(assumed: Option<&str>) -> String {
    match assumed {
        Some(path) => format!(
            "; or, if `{path}` is the same for every request until a deploy, declare it in prefixlint.yaml (`per_deploy_fields: [{path}]`), and synthesized renders keep it constant"
        ),
        None => String::new(),
    }
}

fn label(input: Option<&FieldMatch>, assumed: Option<&str>) -> String {
    match (input, assumed) {
        (Some(input), _) => format!("{} ({})", input.cadence.describe(), input.kind),
        (None, Some(_)) => "assumed to change on every request (cadence assumed)".into(),
        (None, None) => "differs between renders".into(),
    }
}

/// For a `--chat-request`, a divergence inside message `index` (0-based, its `content`)
/// of the requests' renders through the chat template: reported at the message's first
/// line in the request file's text.
pub fn in_request_message(
    analysis: &Analysis,
    index: usize,
    content: &str,
    request_text: &str,
    min_lost_tokens: usize,
) -> Option<Finding> {
    analysis.divergence.as_ref()?;
    let lost = analysis.recoverable_tokens;
    if lost < min_lost_tokens {
        return None;
    }
    let first_line = content.lines().next().unwrap_or_default();
    let span = request_text
        .find(first_line.trim())
        .filter(|_| !first_line.trim().is_empty())
        .map(|at| at..at + first_line.trim().len())
        .unwrap_or(0..0);
    let rule = meta(RuleCode::DivergenceBeforeStable);
    Some(Finding {
        saving: None,
        cadence: None,
        rule,
        severity: rule.severity,
        message: format!(
            "message {} renders differently between requests, before {} stable tokens: the shared prefix ends at token {}",
            index + 1,
            thousands(lost),
            thousands(analysis.shared_prefix_tokens)
        ),
        help: format!(
            "keep the part of message {} that varies at its end, or move it to the last message; {} tokens would become cacheable",
            index + 1,
            thousands(lost)
        ),
        span,
        label: "varies between requests".into(),
        related: Vec::new(),
    })
}
