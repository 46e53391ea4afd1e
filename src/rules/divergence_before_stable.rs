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
        if bp.volatile.is_some() {
            return Vec::new();
        }
        let rule = meta(self.code());
        let (what, help) = if bp.same_json {
            (
                "renders the same JSON data with a different key order or spacing".to_owned(),
                format!(
                    "serialize it canonically (`| tojson` sorts keys); {} tokens would become cacheable",
                    thousands(lost)
                ),
            )
        } else {
            (
                "differs between renders".to_owned(),
                format!(
                    "move {} after the content that is the same for every request; {} tokens would become cacheable",
                    bp.subject(),
                    thousands(lost)
                ),
            )
        };
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
            label: if bp.same_json {
                "same data, different bytes".into()
            } else {
                "differs between renders".into()
            },
            related: bp.related,
        }]
    }
}
