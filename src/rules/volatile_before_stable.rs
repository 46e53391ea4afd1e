//! PL001 volatile-before-stable: docs in `rules/PL001-volatile-before-stable.yaml`.

use super::breakpoint::Breakpoint;
use super::{meta, thousands, Finding, Rule, RuleContext};

pub struct VolatileBeforeStable;

impl Rule for VolatileBeforeStable {
    fn code(&self) -> &'static str {
        "PL001"
    }

    fn check(&self, ctx: &RuleContext) -> Vec<Finding> {
        let lost = ctx.analysis.recoverable_tokens;
        if lost < ctx.min_lost_tokens {
            return Vec::new();
        }
        let Some(bp) = Breakpoint::find(ctx) else {
            return Vec::new();
        };
        let Some(volatile) = &bp.volatile else {
            return Vec::new();
        };
        let rule = meta(self.code());
        // Kind descriptions read as noun phrases: "a clock value (the current time or date)".
        let what = volatile.description.clone();
        vec![Finding {
            rule,
            severity: rule.severity,
            message: format!(
                "{} renders {} before {} stable tokens: the shared prefix ends at token {}",
                bp.subject(),
                what,
                thousands(lost),
                thousands(ctx.analysis.shared_prefix_tokens),
            ),
            help: format!(
                "move {} after the stable instructions; {} tokens would become cacheable",
                bp.subject(),
                thousands(lost)
            ),
            span: bp.span.clone(),
            label: format!("changes on every request ({})", volatile.kind),
            related: bp.related,
        }]
    }
}
