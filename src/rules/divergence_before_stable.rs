//! PL002 divergence-before-stable: docs in `rules/PL002-divergence-before-stable.yaml`.

use super::breakpoint::Breakpoint;
use super::sites::{
    first_site_help, later_site_context, later_site_help, later_sites, stable_tokens, stand_in_note,
};
use super::{meta, FieldMatch, Finding, Rule, RuleContext};
use crate::fmt::thousands;

pub struct DivergenceBeforeStable;

impl Rule for DivergenceBeforeStable {
    fn code(&self) -> &'static str {
        "PL002"
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
