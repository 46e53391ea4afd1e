//! A logged `messages` list kept as its JSON text until the request is built.
//!
//! Most requests of a session repeat the previous one's messages and add a turn or two. The
//! log's reader ([`super::doc::read_record`]) therefore keeps each message as text, checked
//! as `serde_json` checks it but not made into a `serde_json::Value`; the request's build
//! ([`super::server_view::ServerView::apply_sharing`]) takes a message whose text equals the
//! session's previous request's message at the same place over from that request (parsed,
//! in the server's view: the same text gives the same messages) and parses the others.

use std::ops::Range;

/// A logged `messages` list as text: each message's span in `text`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawMessages {
    text: Box<str>,
    spans: Vec<Range<usize>>,
    /// Once the body is built: where each message's chat messages start in the body's
    /// `messages`, and one more entry, the end of the last (empty before the build).
    pub(crate) first: Vec<usize>,
}

impl RawMessages {
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Message `i`'s JSON text.
    pub fn message(&self, i: usize) -> &str {
        &self.text[self.spans[i].clone()]
    }

    /// A list read by [`super::doc::read_record`]: each message's text.
    pub(crate) fn of_list(list: &[&str]) -> RawMessages {
        let mut text = String::with_capacity(list.iter().map(|m| m.len()).sum());
        let mut spans = Vec::with_capacity(list.len());
        for message in list {
            spans.push(text.len()..text.len() + message.len());
            text.push_str(message);
        }
        RawMessages {
            text: text.into_boxed_str(),
            spans,
            first: Vec::new(),
        }
    }

    /// The chat messages message `i` became in the built body (`None` before the build).
    pub(crate) fn built(&self, i: usize) -> Option<Range<usize>> {
        Some(*self.first.get(i)?..*self.first.get(i + 1)?)
    }
}
