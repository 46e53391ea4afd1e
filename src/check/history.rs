//! PL007 history-rewrite (docs in `rules/PL007-history-rewrite.yaml`): a chat template that
//! renders an earlier turn differently once a later turn is added. Then the previous
//! request's tokens are not a prefix of the next one's, and each turn recomputes the history.
//!
//! Checked by rendering the conversation truncated after each message, without generation
//! prompt: the render of the first k messages must be a prefix of the render of k + 1.

use crate::analyse::common_prefix;
use crate::chat::{render_request, ChatRequest, ChatTemplate};
use crate::error::Result;
use crate::fmt::thousands;
use crate::render::clock::Clock;
use crate::render::instrument::MarkEvent;
use crate::rules::{meta, Finding, Label};
use crate::source;
use crate::tokenize::TokenEngine;
use serde_json::Value as Json;
use std::ops::Range;

/// One place where a longer conversation rewrites what a shorter one rendered.
#[derive(Debug, Clone)]
pub struct Rewrite {
    /// Messages in the shorter conversation.
    pub turns: usize,
    /// The message (0-based) whose rendering changed.
    pub message: usize,
    /// Byte offset in the shorter render where the two part.
    pub offset: usize,
    pub before: String,
    pub after: String,
    /// Tokens of the shorter render after the shared token prefix: recomputed next turn.
    pub lost_tokens: usize,
    /// The chat template place that wrote the changed text, as (span, line, column).
    pub place: Option<(Range<usize>, usize, usize)>,
}

/// Every truncation point where the render of the first k messages is not a prefix of the
/// render of k + 1. Truncations the template refuses to render (e.g. "must end with a user
/// turn") are skipped: no server ever sees them.
pub fn find_rewrites(
    template: &ChatTemplate,
    request: &ChatRequest,
    engine: &dyn TokenEngine,
    clock: Clock,
) -> Result<Vec<Rewrite>> {
    let (renderer, prepared) = template.renderer()?;
    let renders: Vec<Option<crate::render::Render>> = (1..=request.messages.len())
        .map(|k| render_request(&renderer, &prepared, template, &request.truncated(k), clock).ok())
        .collect();
    let mut rewrites = Vec::new();
    for k in 1..request.messages.len() {
        let (Some(shorter), Some(longer)) = (&renders[k - 1], &renders[k]) else {
            continue;
        };
        if longer.text.starts_with(&shorter.text) {
            continue;
        }
        let offset = source::floor_char_boundary(
            &shorter.text,
            common_prefix(shorter.text.as_bytes(), longer.text.as_bytes()),
        );
        let a = engine.encode(&shorter.text)?;
        let b = engine.encode(&longer.text)?;
        let lost_tokens = a.len() - common_prefix(&a.ids, &b.ids);
        let place = shorter
            .map
            .as_ref()
            .and_then(|map| map.origin_at(offset))
            .and_then(|(event, _)| {
                let id = match event {
                    MarkEvent::Open(id) | MarkEvent::Close(id) | MarkEvent::Text(id) => id,
                };
                renderer.origins().get(id as usize)
            })
            .filter(|o| o.template.as_ref() == template.display.as_str())
            .map(|o| {
                let (line, column) = source::line_col(&template.source, o.span.start);
                (o.span, line, column)
            });
        rewrites.push(Rewrite {
            turns: k,
            message: message_at(&request.messages[..k], &shorter.text, offset),
            offset,
            before: excerpt(&shorter.text, offset),
            after: excerpt(&longer.text, offset),
            lost_tokens,
            place,
        });
    }
    Ok(rewrites)
}

/// The message whose rendering holds `offset`: the first one whose content (found in
/// order) ends after it, so a dropped block before an assistant's content is that turn's.
fn message_at(messages: &[Json], text: &str, offset: usize) -> usize {
    let mut cursor = 0;
    for (i, m) in messages.iter().enumerate() {
        let Some(content) = m.get("content").and_then(Json::as_str) else {
            continue;
        };
        if content.is_empty() {
            continue;
        }
        if let Some(at) = text[cursor.min(text.len())..].find(content) {
            cursor += at + content.len();
            if cursor > offset {
                return i;
            }
        }
    }
    messages.len().saturating_sub(1)
}

fn excerpt(text: &str, offset: usize) -> String {
    let end = source::floor_char_boundary(text, (offset + 30).min(text.len()));
    let piece = &text[offset..end];
    serde_json::to_string(piece).unwrap_or_default()
}

/// PL007 findings for a request file: at the rewritten message, with the chat template's
/// line as a related place. One finding for the first rewrite; later ones are counted.
pub fn history_rewrites(
    template: &ChatTemplate,
    request: &ChatRequest,
    engine: &dyn TokenEngine,
    request_text: &str,
    display: &str,
    clock: Clock,
) -> Result<Vec<Finding>> {
    let rewrites = find_rewrites(template, request, engine, clock)?;
    let Some(first) = rewrites.first() else {
        return Ok(Vec::new());
    };
    let rule = meta("PL007");
    let role = request.messages[first.message]
        .get("role")
        .and_then(Json::as_str)
        .unwrap_or("?");
    let (place, related) = match &first.place {
        Some((span, line, column)) => (
            format!(" by {}:{line}:{column}", template.display),
            vec![Label {
                template: template.display.clone(),
                span: span.clone(),
                text: format!(
                    "{line}:{column}: renders message {} differently once message {} is added",
                    first.message + 1,
                    first.turns + 1
                ),
            }],
        ),
        None => (format!(" by {}", template.display), Vec::new()),
    };
    let more = match rewrites.len() {
        1 => String::new(),
        n => format!(" ({} more turn boundaries rewrite history too)", n - 1),
    };
    Ok(vec![Finding {
        saving: None,
        cadence: None,
        rule,
        severity: rule.severity,
        message: format!(
            "message {} ({role}) of {display} is rewritten{place} when message {} is added: the conversation so far renders {} and then {}, so {} tokens of history are recomputed on the next turn{more}",
            first.message + 1,
            first.turns + 1,
            first.before,
            first.after,
            thousands(first.lost_tokens),
        ),
        help: "send earlier turns exactly as they were rendered (e.g. keep the reasoning the template drops, or strip it yourself before the first render), or use a chat template that renders history the same way at every turn".into(),
        span: message_span(request_text, &request.messages, first.message),
        label: "rendered differently once the conversation goes on".into(),
        related,
    }])
}

/// The span of message `index`'s content in the request file, or of its `role:` line.
pub fn message_span(text: &str, messages: &[Json], index: usize) -> Range<usize> {
    let content_line = messages
        .get(index)
        .and_then(|m| m.get("content"))
        .and_then(Json::as_str)
        .and_then(|c| c.lines().map(str::trim).find(|l| !l.is_empty()));
    if let Some(line) = content_line {
        if let Some(at) = text.find(line) {
            return at..at + line.len();
        }
    }
    let mut roles = text.match_indices("role:");
    match roles.nth(index) {
        Some((at, _)) => at..at + "role:".len(),
        None => 0..0,
    }
}
