//! PL007 history-rewrite: docs in `rules/PL007-history-rewrite.yaml`.
//!
//! A chat template that renders an earlier turn differently once a later turn is added:
//! the previous request's tokens are then not a prefix of the next one's, and each turn
//! recomputes the history. `check::history` renders a `--chat-request` conversation
//! truncated after each message and finds the [`Rewrite`]s; this rule reports them.

use super::{meta, Finding, Label, Reads, Rule, RuleCode};
use crate::fmt::thousands;
use serde_json::Value as Json;
use std::ops::Range;

pub struct HistoryRewrite;

impl Rule for HistoryRewrite {
    fn code(&self) -> RuleCode {
        RuleCode::HistoryRewrite
    }

    fn reads(&self) -> Reads {
        Reads::Conversation
    }
}

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

/// The findings for a request file (`display`, its text `request_text`, its `messages`)
/// rendered through the chat template `chat_template` with `rewrites`: at the rewritten
/// message, with the chat template's line as a related place. One finding for the first
/// rewrite; later ones are counted.
pub fn check(
    rewrites: &[Rewrite],
    chat_template: &str,
    messages: &[Json],
    request_text: &str,
    display: &str,
) -> Vec<Finding> {
    let Some(first) = rewrites.first() else {
        return Vec::new();
    };
    let rule = meta(RuleCode::HistoryRewrite);
    let role = messages[first.message]
        .get("role")
        .and_then(Json::as_str)
        .unwrap_or("?");
    let (place, related) = match &first.place {
        Some((span, line, column)) => (
            format!(" by {chat_template}:{line}:{column}"),
            vec![Label {
                template: chat_template.to_owned(),
                span: span.clone(),
                text: format!(
                    "{line}:{column}: renders message {} differently once message {} is added",
                    first.message + 1,
                    first.turns + 1
                ),
            }],
        ),
        None => (format!(" by {chat_template}"), Vec::new()),
    };
    let more = match rewrites.len() {
        1 => String::new(),
        n => format!(" ({} more turn boundaries rewrite history too)", n - 1),
    };
    vec![Finding {
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
        span: message_span(request_text, messages, first.message),
        label: "rendered differently once the conversation goes on".into(),
        related,
    }]
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
