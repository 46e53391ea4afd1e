//! The volatile sites after the first divergence, located in the checked template, for
//! PL001 (volatile values) and PL002 (other differing output). The first divergence is
//! [`Breakpoint`]'s; these are the ones a fix of the first would still leave.

use super::breakpoint::{classify, classify_assumed, classify_input, include_tag_for, Breakpoint};
use super::{FieldMatch, Label, RuleContext};
use crate::fmt::{shorten, thousands};
use std::ops::Range;

pub struct LaterSite {
    /// Byte span in the checked template.
    pub span: Range<usize>,
    /// `{{ expression }}`, trimmed for messages.
    pub snippet: String,
    pub volatile: Option<FieldMatch>,
    /// The request's input it prints, if it does.
    pub input: Option<FieldMatch>,
    /// The variable it prints whose cadence synthesized samples assumed, if it does.
    pub assumed: Option<String>,
    /// Stable tokens after it (the text the template fixes).
    pub lost: usize,
    /// Stand-ins' output in the same lines, in tokens.
    pub stand_in_tokens: usize,
    pub related: Vec<Label>,
}

impl LaterSite {
    pub fn subject(&self) -> String {
        format!("`{}`", self.snippet)
    }
}

/// Every reported site after the first divergence, one per place in the checked template.
pub fn later_sites(ctx: &RuleContext) -> Vec<LaterSite> {
    let own = ctx.template.name.as_ref();
    let source = ctx.template.source.as_ref();
    let first = Breakpoint::find(ctx).map(|bp| bp.span);
    let mut seen: Vec<Range<usize>> = first.into_iter().collect();
    let mut out = Vec::new();
    for site in ctx.analysis.reported_later_sites(ctx.min_lost_tokens) {
        let Some(origin) = ctx.origins.get(site.origin as usize) else {
            continue;
        };
        let mut related = Vec::new();
        let span = if origin.template.as_ref() == own {
            origin.span.clone()
        } else {
            // Output of an included template: point at the include that brings it in.
            let Some(tag) = include_tag_for(ctx, source, own, &origin.template) else {
                continue;
            };
            related.push(Label {
                template: origin.template.to_string(),
                span: origin.span.clone(),
                text: format!(
                    "{}:{}: `{}` writes the differing output",
                    origin.line,
                    origin.column,
                    shorten(origin.text.trim())
                ),
            });
            tag
        };
        if seen.contains(&span) {
            continue;
        }
        // A macro call around the value is where the user moves it: name it too.
        for wrapper in site
            .enclosing
            .iter()
            .filter_map(|id| ctx.origins.get(*id as usize))
        {
            related.push(Label {
                template: wrapper.template.to_string(),
                span: wrapper.span.clone(),
                text: format!(
                    "{}:{}: `{}` prints it",
                    wrapper.line,
                    wrapper.column,
                    shorten(wrapper.text.trim())
                ),
            });
        }
        seen.push(span.clone());
        let volatile = classify(ctx, &origin.text, &site.values).or_else(|| {
            site.enclosing
                .iter()
                .filter_map(|id| ctx.origins.get(*id as usize))
                .find_map(|wrapper| classify(ctx, &wrapper.text, &[]))
        });
        let input = classify_input(ctx, &origin.text);
        let assumed = (volatile.is_none() && input.is_none())
            .then(|| classify_assumed(ctx, &origin.text, &site.values))
            .flatten();
        out.push(LaterSite {
            span,
            snippet: shorten(origin.text.trim()),
            volatile,
            input,
            assumed,
            lost: site.stable_tokens_after,
            stand_in_tokens: site.stand_in_tokens_after,
            related,
        });
    }
    out
}

/// "N stable tokens", and the stand-ins' output beside them when there was some: it is
/// not counted (nobody gave its text), but it is why a short count is still reported.
pub fn stable_tokens(fixed: usize, stand_ins: usize) -> String {
    match stand_ins {
        0 => format!("{} stable tokens", thousands(fixed)),
        _ => format!(
            "{} stable tokens (not counting {} tokens of stand-in values)",
            thousands(fixed),
            thousands(stand_ins)
        ),
    }
}

/// [`stable_tokens`]' note for a later site, whose message has a parenthesis already.
pub fn stand_in_note(stand_ins: usize) -> String {
    match stand_ins {
        0 => String::new(),
        _ => format!(
            "; not counting {} tokens of stand-in values",
            thousands(stand_ins)
        ),
    }
}

/// The help's tail for the first divergence when later sites exist: what moving it alone
/// brings, and what moving all of them brings.
pub fn first_site_help(ctx: &RuleContext, later: &[LaterSite]) -> Option<String> {
    let next = later.first()?;
    let all = ctx.analysis.recoverable_tokens;
    let alone = all.saturating_sub(next.lost);
    let (line, _) = crate::source::line_col(&ctx.template.source, next.span.start);
    Some(format!(
        "moving it alone makes {} tokens cacheable (the prefix then ends at {} on line {line}); moving all {} sites makes {} tokens cacheable",
        thousands(alone),
        next.subject(),
        later.len() + 1,
        thousands(all),
    ))
}

/// The message tail of a later site: which one it is, and where the prefix already ends.
pub fn later_site_context(ctx: &RuleContext, index: usize, count: usize) -> String {
    format!(
        "volatile site {} of {}: the shared prefix already ends earlier, at token {}",
        index + 2,
        count + 1,
        thousands(ctx.analysis.shared_prefix_tokens)
    )
}

/// The help of a later site.
pub fn later_site_help(ctx: &RuleContext, site: &LaterSite, count: usize) -> String {
    format!(
        "move {} after the content that is the same for every request too; moving all {} sites makes {} tokens cacheable",
        site.subject(),
        count + 1,
        thousands(ctx.analysis.recoverable_tokens)
    )
}
