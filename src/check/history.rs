//! The renders PL007 history-rewrite reads (the rule: `rules::history_rewrite`): a chat
//! template that renders an earlier turn differently once a later turn is added.
//!
//! Checked by rendering the conversation truncated after each message, without generation
//! prompt: the render of the first k messages must be a prefix of the render of k + 1.

use crate::analyse::common_prefix;
use crate::chat::{render_request, ChatRequest, ChatTemplate};
use crate::error::Result;
use crate::render::clock::Clock;
use crate::render::instrument::MarkEvent;
use crate::rules::history_rewrite::{self, Rewrite};
use crate::rules::Finding;
use crate::source;
use crate::tokenize::TokenEngine;
use serde_json::Value as Json;

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

/// PL007's findings for a request file (its rule: `rules::history_rewrite`).
pub fn history_rewrites(
    template: &ChatTemplate,
    request: &ChatRequest,
    engine: &dyn TokenEngine,
    request_text: &str,
    display: &str,
    clock: Clock,
) -> Result<Vec<Finding>> {
    let rewrites = find_rewrites(template, request, engine, clock)?;
    Ok(history_rewrite::check(
        &rewrites,
        &template.display,
        &request.messages,
        request_text,
        display,
    ))
}
