//! PL001 volatile-before-stable: docs in `rules/PL001-volatile-before-stable.yaml`.

use super::breakpoint::Breakpoint;
use super::sites::{
    first_site_help, later_site_context, later_site_help, later_sites, stable_tokens, stand_in_note,
};
use super::{
    meta, Cadence, FieldMatch, Finding, FixAvailability, Reads, Rule, RuleCode, RuleContext,
    Severity,
};
use crate::fmt::thousands;

pub struct VolatileBeforeStable;

impl Rule for VolatileBeforeStable {
    fn code(&self) -> RuleCode {
        RuleCode::VolatileBeforeStable
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
        if let Some(volatile) = &bp.volatile {
            let mut help = format!(
                "move {} after the stable instructions; {} tokens would become cacheable",
                bp.subject(),
                thousands(lost)
            );
            if let Some(more) = first_site_help(ctx, &later) {
                help = format!(
                    "move {} after the stable instructions; {more}",
                    bp.subject()
                );
            }
            help.push_str(accept(volatile));
            // Kind descriptions read as noun phrases: "a clock value (the current time or date)".
            findings.push(Finding {
                saving: None,
                cadence: Some(volatile.cadence),
                rule,
                severity: severity(rule.severity, volatile.cadence),
                message: format!(
                    "{} renders {} before {}: the shared prefix ends at token {}{}",
                    bp.subject(),
                    volatile.description,
                    stable_tokens(lost, ctx.analysis.stand_in_tokens),
                    thousands(ctx.analysis.shared_prefix_tokens),
                    cost(volatile),
                ),
                help,
                span: bp.span.clone(),
                label: label(volatile),
                related: bp.related,
            });
        }
        for (index, site) in later.iter().enumerate() {
            let Some(volatile) = &site.volatile else {
                continue;
            };
            findings.push(Finding {
                saving: None,
                cadence: Some(volatile.cadence),
                rule,
                severity: severity(rule.severity, volatile.cadence),
                message: format!(
                    "{} renders {} before {} stable tokens ({}{}){}",
                    site.subject(),
                    volatile.description,
                    thousands(site.lost),
                    later_site_context(ctx, index, later.len()),
                    stand_in_note(site.stand_in_tokens),
                    cost(volatile),
                ),
                help: later_site_help(ctx, site, later.len()) + accept(volatile),
                span: site.span.clone(),
                label: label(volatile),
                related: site.related.clone(),
            });
        }
        findings
    }
}

/// A value that changes on every request or per user costs every request; a daily one
/// costs a miss a day; one per deploy is worth knowing, not failing on.
fn severity(default: Severity, cadence: Cadence) -> Severity {
    match cadence {
        Cadence::Request | Cadence::User => default,
        Cadence::Day => Severity::Warning.min(default),
        Cadence::Deploy => Severity::Info,
    }
}

fn label(volatile: &FieldMatch) -> String {
    format!("{} ({})", volatile.cadence.describe(), volatile.kind)
}

/// The help's tail for values whose misses may be an acceptable cost.
fn accept(volatile: &FieldMatch) -> &'static str {
    match volatile.cadence {
        Cadence::Request | Cadence::User => "",
        Cadence::Day => "; or, if one miss a day is acceptable, suppress it with a reason (`{# prefixlint: ignore[PL001] one miss a day #}`)",
        Cadence::Deploy => "; or, if one miss per deploy is acceptable, suppress it with a reason (`{# prefixlint: ignore[PL001] changes per deploy #}`)",
    }
}

/// The message's tail: how often the value changes, and for values that do not change on
/// every request, what that costs.
fn cost(volatile: &FieldMatch) -> String {
    match volatile.cadence {
        Cadence::Request | Cadence::User => format!("; it {}", volatile.cadence.describe()),
        Cadence::Day | Cadence::Deploy => format!(
            "; it {}: {}",
            volatile.cadence.describe(),
            volatile.cadence.cost()
        ),
    }
}
