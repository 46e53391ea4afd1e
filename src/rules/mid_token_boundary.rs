//! PL005 mid-token-boundary: docs in `rules/PL005-mid-token-boundary.yaml`.

use super::breakpoint::Breakpoint;
use super::{meta, Finding, FixAvailability, FixContext, Reads, Rule, RuleCode, RuleContext};
use crate::edit::{newline_of, Edit, Fix, FixKind, Safety};
use crate::fmt::thousands;
use crate::source::floor_char_boundary;

pub struct MidTokenBoundary;

impl Rule for MidTokenBoundary {
    fn code(&self) -> RuleCode {
        RuleCode::MidTokenBoundary
    }

    fn reads(&self) -> Reads {
        Reads::Analysis
    }

    fn fix_availability(&self) -> FixAvailability {
        FixAvailability::RepairOrMove
    }

    fn check(&self, ctx: &RuleContext) -> Vec<Finding> {
        let analysis = ctx.analysis;
        let (Some(divergence), Some(text_tokens)) =
            (&analysis.divergence, analysis.text_prefix_tokens)
        else {
            return Vec::new();
        };
        let shared = analysis.shared_prefix_tokens;
        let cost = text_tokens.saturating_sub(shared);
        if cost == 0 {
            return Vec::new();
        }
        // The first token that is not shared, in render 0 or in the render that differs
        // from it: when it starts before the text diverges it carries stable text that
        // the prefix loses. Prefer the one that also reaches past the divergence: that
        // is the merged token.
        let offset = divergence.offset;
        let candidates: Vec<(&str, &[(usize, usize)])> = [0, divergence.other]
            .iter()
            .filter_map(|&i| {
                let offsets = analysis.tokens.get(i)?.offsets.get(shared..)?;
                Some((analysis.renders.get(i)?.as_str(), offsets))
            })
            .filter(|(_, offsets)| offsets.first().is_some_and(|(start, _)| *start < offset))
            .collect();
        let Some(&(text, offsets)) = candidates
            .iter()
            .find(|(_, offsets)| offsets[0].1 > offset)
            .or(candidates.first())
        else {
            return Vec::new();
        };
        let start = offsets[0].0;
        // Up to the end of the first token that reaches past the divergence.
        let end = offsets
            .iter()
            .map(|(_, end)| *end)
            .find(|end| *end > offset)
            .unwrap_or(offset);
        let Some(bp) = Breakpoint::find(ctx) else {
            return Vec::new();
        };
        // Drift and unstable JSON are the real cause there (PL004, PL003): fixing them
        // removes the divergence, and with it this boundary.
        if bp.drift.is_some() || bp.same_json {
            return Vec::new();
        }
        let start = floor_char_boundary(text, start);
        let end = floor_char_boundary(text, end);
        let merged = &text[start..end];
        // Only template text before the value counts: what two values share by chance
        // (`fix/login` and `feat/search` both start with `f`) is not stable text.
        let template_end = divergence
            .cause
            .as_ref()
            .and_then(|c| c.value_start)
            .filter(|&value_start| value_start <= offset)
            .unwrap_or(offset);
        if template_end <= start {
            return Vec::new();
        }
        let stable = &text[start..floor_char_boundary(text, template_end)];
        // A space before a word always joins that word's token in byte-level BPE; that is
        // the tokenizer working as designed, not a layout to fix.
        if stable.trim().is_empty() {
            return Vec::new();
        }
        let rule = meta(self.code());
        let n = analysis.tokens_min;
        let engine_gain = ctx
            .engine
            .cached_tokens(text_tokens, n)
            .saturating_sub(ctx.engine.cached_tokens(shared, n));
        let engine_note = if engine_gain > 0 {
            format!(
                " ({} would cache {} more)",
                ctx.engine.name,
                thousands(engine_gain)
            )
        } else {
            String::new()
        };
        vec![Finding {
            saving: None,
            cadence: None,
            rule,
            severity: rule.severity,
            message: format!(
                "the token boundary does not fall where the text diverges at {}: the stable text {stable:?} is tokenized together with what follows ({merged:?}), so {} token{} of stable text {} not shared (text-level shared prefix {} tokens, token-level {})",
                bp.subject(),
                thousands(cost),
                if cost == 1 { "" } else { "s" },
                if cost == 1 { "is" } else { "are" },
                thousands(text_tokens),
                thousands(shared),
            ),
            help: format!(
                "end the stable text with a separator the tokenizer does not merge with what follows, e.g. a newline before the value (`Label:\\n{{{{ value }}}}`) instead of a space; {} token{} would become shared{engine_note}",
                thousands(cost),
                if cost == 1 { "" } else { "s" },
            ),
            span: bp.span.clone(),
            label: "the token boundary falls inside the stable text here".into(),
            related: bp.related,
        }]
    }

    /// A separator before the value, so the stable text ends a token of its own.
    fn fix(&self, ctx: &FixContext) -> Result<Vec<Fix>, String> {
        let source = ctx.source;
        let at = ctx
            .expression()
            .map_or(ctx.finding.span.start, |tag| tag.range.start);
        let before = source[..at].chars().next_back();
        let mut fixes = Vec::new();
        if before.is_some_and(|c| !c.is_whitespace()) {
            for (separator, name) in [(" ", "a space"), (newline_of(source), "a line break")] {
                fixes.push(ctx.fix(
                    Safety::Safe,
                    FixKind::Rewrite,
                    format!("Add {name} before the value, so the stable text ends a token"),
                    vec![Edit::insert(at, separator)],
                ));
            }
        }
        Ok(fixes)
    }
}
