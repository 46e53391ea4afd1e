//! PL008 chat-template-volatile: docs in `rules/PL008-chat-template-volatile.yaml`.
//!
//! The model's chat template itself writes something that changes between requests
//! (Llama 3.2's "Today Date:"), before the checked template's stable text. `check::chat`
//! renders each request through the chat template and calls [`check`] when the renders
//! first differ outside every message.

use super::{meta, Finding, Label, Reads, Rule, RuleCode};
use crate::analyse::Analysis;
use crate::fmt::{shorten, thousands};
use crate::render::instrument::OriginTable;
use crate::render::Render;
use crate::source;
use std::ops::Range;

pub struct ChatTemplateVolatile;

impl Rule for ChatTemplateVolatile {
    fn code(&self) -> RuleCode {
        RuleCode::ChatTemplateVolatile
    }

    fn reads(&self) -> Reads {
        Reads::ChatTemplate
    }
}

/// The chat requests' renders, through the chat template, and their analysis.
pub struct ChatRenders<'a> {
    pub analysis: &'a Analysis,
    /// The chat template's name (as the report shows it) and its text.
    pub template_display: &'a str,
    pub template_source: &'a str,
    /// The chat template renderer's origins, which the divergence's cause names.
    pub origins: &'a OriginTable,
    pub renders: &'a [Render],
}

/// The finding where the chat requests' renders first differ in the chat template's own
/// text: at the checked template's first line (`checked_source`, named `display`), with
/// the chat template's place as a related one.
pub fn check(
    chat: &ChatRenders,
    checked_source: &str,
    display: &str,
    min_lost_tokens: usize,
) -> Option<Finding> {
    let analysis = chat.analysis;
    let divergence = analysis.divergence.as_ref()?;
    let lost = analysis.recoverable_tokens;
    if lost < min_lost_tokens {
        return None;
    }
    let rule = meta(RuleCode::ChatTemplateVolatile);
    let chat_display = chat.template_display;
    let origin = divergence
        .cause
        .as_ref()
        .and_then(|c| chat.origins.get(c.origin as usize))
        .filter(|o| o.template.as_ref() == chat_display);
    let values: Vec<String> = divergence
        .cause
        .as_ref()
        .map(|c| c.values.clone())
        .unwrap_or_default();
    let differs = match values.as_slice() {
        [a, b, ..] if a != b => format!(
            " (`{}` in one render, `{}` in another)",
            shorten(a),
            shorten(b)
        ),
        _ => {
            let a = excerpt(&chat.renders[0].text, divergence.offset);
            let b = excerpt(&chat.renders[divergence.other].text, divergence.offset);
            format!(" (`{a}` in one render, `{b}` in another)")
        }
    };
    let (place, related) = match &origin {
        Some(origin) => {
            let (line, column) = source::line_col(chat.template_source, origin.span.start);
            let snippet = chat
                .template_source
                .get(origin.span.clone())
                .map(|s| shorten(s.trim()))
                .unwrap_or_default();
            (
                format!("{chat_display}:{line}:{column} `{snippet}`"),
                vec![Label {
                    template: chat_display.to_owned(),
                    span: origin.span.clone(),
                    text: format!(
                        "{line}:{column}: writes text that changes between renders{differs}"
                    ),
                }],
            )
        }
        None => (chat_display.to_owned(), Vec::new()),
    };
    let date_like = chat.template_source.contains("date_string")
        || chat.template_source.contains("strftime_now");
    let help = if date_like {
        format!(
            "pass a fixed `date_string` to the chat template (e.g. `chat_variables: {{date_string: \"26 Jul 2024\"}}` in prefixlint.yaml, or `date_string:` in the request), or move the date out of the system header, after the stable content; {} tokens would become cacheable",
            thousands(lost)
        )
    } else {
        format!(
            "pass the chat template fixed values for what it prints there, or move that part after the stable content; {} tokens would become cacheable",
            thousands(lost)
        )
    };
    Some(Finding {
        saving: None,
        cadence: None,
        rule,
        severity: rule.severity,
        message: format!(
            "the chat template writes text that changes between requests{differs} at {place}, before {} stable tokens of {display}: the shared prefix ends at token {}",
            thousands(lost),
            thousands(analysis.shared_prefix_tokens),
        ),
        help,
        span: first_line(checked_source),
        label: "everything here sits behind the chat template's changing header".into(),
        related,
    })
}

/// The first non-blank line of a source, as the span a whole-file finding points at.
fn first_line(text: &str) -> Range<usize> {
    let start = text.len() - text.trim_start().len();
    let end = text[start..]
        .find('\n')
        .map(|i| start + i)
        .unwrap_or(text.len());
    start..end
}

/// A short view of `text` from `offset`, for messages.
fn excerpt(text: &str, offset: usize) -> String {
    let start = source::floor_char_boundary(text, offset.min(text.len()));
    let end = source::floor_char_boundary(text, (start + 24).min(text.len()));
    shorten(&text[start..end])
}
