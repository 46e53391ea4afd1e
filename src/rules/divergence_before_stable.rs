//! PL002 divergence-before-stable: docs in `rules/PL002-divergence-before-stable.yaml`.

use super::breakpoint::Breakpoint;
use super::{meta, thousands, Finding, Rule, RuleContext};

pub struct DivergenceBeforeStable;

impl Rule for DivergenceBeforeStable {
    fn code(&self) -> &'static str {
        "PL002"
    }

    fn check(&self, ctx: &RuleContext) -> Vec<Finding> {
        let lost = ctx.analysis.recoverable_tokens;
        if lost < ctx.min_lost_tokens {
            return Vec::new();
        }
        let Some(bp) = Breakpoint::find(ctx) else {
            return Vec::new();
        };
        // Volatile values are PL001's; equal JSON in other bytes is PL003's; whitespace
        // drift is PL004's.
        if bp.volatile.is_some() || bp.same_json || bp.drift.is_some() {
            return Vec::new();
        }
        let rule = meta(self.code());
        let what = "differs between renders";
        let help = format!(
            "move {} after the content that is the same for every request; {} tokens would become cacheable",
            bp.subject(),
            thousands(lost)
        );
        vec![Finding {
            rule,
            severity: rule.severity,
            message: format!(
                "{} {what} before {} stable tokens: the shared prefix ends at token {}",
                bp.subject(),
                thousands(lost),
                thousands(ctx.analysis.shared_prefix_tokens),
            ),
            help,
            span: bp.span.clone(),
            label: "differs between renders".into(),
            related: bp.related,
        }]
    }
}
