//! PL006 below-cache-minimum: docs in `rules/PL006-below-cache-minimum.yaml`.

use super::breakpoint::Breakpoint;
use super::{meta, Finding, Reads, Rule, RuleCode, RuleContext, Severity};
use crate::cache_profile::{CacheProfileKind, ANTHROPIC_MAX_BREAKPOINTS};
use crate::fmt::thousands;

pub struct BelowCacheMinimum;

impl Rule for BelowCacheMinimum {
    fn code(&self) -> RuleCode {
        RuleCode::BelowCacheMinimum
    }

    fn reads(&self) -> Reads {
        Reads::Analysis
    }

    fn check(&self, ctx: &RuleContext) -> Vec<Finding> {
        let engine = ctx.engine;
        let minimum = engine.min_tokens;
        let analysis = ctx.analysis;
        let shared = analysis.shared_prefix_tokens.min(analysis.tokens_min);
        if minimum == 0 || shared >= minimum {
            return Vec::new();
        }
        let rule = meta(self.code());
        let bp = Breakpoint::find(ctx);
        let who = match &engine.model {
            Some(model) => format!("{} ({model})", engine.name),
            None => engine.name.to_owned(),
        };
        // What the shared prefix would become with the divergence moved to the end.
        let reachable = shared + analysis.recoverable_tokens;
        let (severity, help) = match &bp {
            Some(bp) if reachable >= minimum => (
                rule.severity,
                format!(
                    "move {} after the stable content: the shared prefix would grow to about {} tokens, above the minimum",
                    bp.subject(),
                    thousands(reachable)
                ),
            ),
            _ => (
                Severity::Info,
                format!(
                    "the stable content is shorter than the minimum, so {who} caches none of it; put long stable content (instructions, tools, examples) first to get cache hits, or turn this rule off for short prompts"
                ),
            ),
        };
        let help = if engine.kind == CacheProfileKind::Anthropic {
            format!(
                "{help}. Anthropic caches only at `cache_control` breakpoints (at most {ANTHROPIC_MAX_BREAKPOINTS} per request): put one at the end of the stable prefix"
            )
        } else {
            help
        };
        let (span, related) = match bp {
            Some(bp) => (bp.span, bp.related),
            None => (0..0, Vec::new()),
        };
        vec![Finding {
            saving: None,
            cadence: None,
            rule,
            severity,
            message: format!(
                "the shared prefix is {} tokens, below {who}'s minimum cacheable length of {} tokens: nothing is served from the cache (cached_tokens_expected = {})",
                thousands(shared),
                thousands(minimum),
                thousands(analysis.cached_tokens_expected),
            ),
            help,
            span,
            label: format!("the shared prefix ends here, below {}", thousands(minimum)),
            related,
        }]
    }
}
