//! Synthetic chat sessions: each starts with one of the template's renders and grows by a
//! turn at a time, the way a conversation's prompt does, so every turn extends the last.

use crate::error::{Error, Result};
use serde_json::{json, Value as Json};

/// How a session tells the router who it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AffinityKey {
    /// OpenAI's `prompt_cache_key` body field.
    PromptCacheKey,
    /// The OpenAI `user` body field (LiteLLM and others hash it).
    User,
    /// A request header such as `x-session-id` (OpenRouter, vLLM production stack) or
    /// `x-smg-routing-key` (the SGLang router's `manual` policy).
    Header(String),
    /// Nothing: measure what the router does with no hint.
    None,
}

impl AffinityKey {
    /// `prompt_cache_key`, `user`, `none`, a header name (`x-session-id`), or `header:NAME`.
    pub fn parse(spec: &str) -> Result<AffinityKey> {
        let spec = spec.trim();
        let header_name = spec.strip_prefix("header:").unwrap_or(spec);
        let valid_header = !header_name.is_empty()
            && header_name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        match spec {
            "prompt_cache_key" => Ok(AffinityKey::PromptCacheKey),
            "user" => Ok(AffinityKey::User),
            "none" => Ok(AffinityKey::None),
            _ if (spec.starts_with("header:") || spec.to_ascii_lowercase().starts_with("x-"))
                && valid_header =>
            {
                Ok(AffinityKey::Header(header_name.to_ascii_lowercase()))
            }
            _ => Err(Error::input_with_help(
                format!("--affinity-key `{spec}`: not a body field or header name"),
                "use prompt_cache_key, user, none, a header such as x-session-id, or header:NAME",
            )),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            AffinityKey::PromptCacheKey => "prompt_cache_key".into(),
            AffinityKey::User => "user".into(),
            AffinityKey::Header(name) => name.clone(),
            AffinityKey::None => "none".into(),
        }
    }

    /// Puts `key` into the request body or the headers.
    pub fn apply(&self, key: &str, body: &mut Json, headers: &mut Vec<(String, String)>) {
        match self {
            AffinityKey::PromptCacheKey => body["prompt_cache_key"] = json!(key),
            AffinityKey::User => body["user"] = json!(key),
            AffinityKey::Header(name) => headers.push((name.clone(), key.to_owned())),
            AffinityKey::None => {}
        }
    }
}

/// One session: its key and the render it opens with. Turn `t` appends
/// [`Session::exchange`] to turn `t - 1`, so each prompt extends the last; the caller keeps
/// only the current prompt of each session.
#[derive(Debug, Clone)]
pub struct Session {
    pub index: usize,
    pub key: String,
    /// The render the session starts from.
    pub sample: usize,
}

impl Session {
    /// The text that turns `turn - 1` into `turn` (for `turn` ≥ 1).
    pub fn exchange(&self, turn: usize) -> String {
        let (answer, question) = self.exchange_parts(turn);
        format!("\n\nAssistant: {answer}\n\nUser: {question}")
    }

    /// The same exchange as chat messages: the assistant's answer, then the user's question.
    pub fn exchange_messages(&self, turn: usize) -> [Json; 2] {
        let (answer, question) = self.exchange_parts(turn);
        [
            json!({"role": "assistant", "content": answer}),
            json!({"role": "user", "content": question}),
        ]
    }

    fn exchange_parts(&self, turn: usize) -> (String, String) {
        exchange(&self.key, self.index, turn)
    }
}

/// `sessions` sessions over `renders` renders (round robin), each key unique to this run
/// so a sticky router sees new sessions.
pub fn build(renders: usize, sessions: usize, run_id: &str) -> Vec<Session> {
    if renders == 0 {
        return Vec::new();
    }
    (0..sessions)
        .map(|index| Session {
            index,
            key: format!("{run_id}-s{index}"),
            sample: index % renders,
        })
        .collect()
}

/// An assistant answer and the next user message, different for every session and turn
/// (about 100 tokens), so sessions share only what the template shares: the words differ
/// from the first one on. The key (unique to the run) is in it, so no turn after the first
/// is cached from an earlier run.
fn exchange(key: &str, session: usize, turn: usize) -> (String, String) {
    const WORDS: [&str; 32] = [
        "invoice",
        "shipment",
        "refund",
        "warranty",
        "battery",
        "screen",
        "delivery",
        "account",
        "password",
        "subscription",
        "discount",
        "receipt",
        "charger",
        "address",
        "tracking",
        "exchange",
        "order",
        "payment",
        "support",
        "manual",
        "setting",
        "update",
        "replacement",
        "schedule",
        "coupon",
        "balance",
        "profile",
        "device",
        "license",
        "return",
        "label",
        "carrier",
    ];
    let mut state = (session as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (turn as u64 + 1);
    let mut word = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        WORDS[(state % WORDS.len() as u64) as usize]
    };
    let answer: Vec<&str> = (0..40).map(|_| word()).collect();
    let question: Vec<&str> = (0..40).map(|_| word()).collect();
    (
        format!("{} ({key}, turn {turn}).", answer.join(" ")),
        format!("{}?", question.join(" ")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_cycle_over_renders_and_exchanges_differ() {
        let sessions = build(2, 3, "run");
        assert_eq!(sessions.len(), 3);
        assert_eq!(sessions[2].sample, 0);
        assert_eq!(sessions[1].key, "run-s1");
        let (a, b) = (sessions[0].exchange(1), sessions[2].exchange(1));
        // Different from the first word on, so sessions share only the render's prefix.
        assert_ne!(a.split_whitespace().nth(1), b.split_whitespace().nth(1));
        assert_ne!(sessions[0].exchange(1), sessions[0].exchange(2));
        assert!(a.contains("run-s0"));
        let [answer, question] = sessions[0].exchange_messages(1);
        assert_eq!(
            a,
            format!(
                "\n\nAssistant: {}\n\nUser: {}",
                answer["content"].as_str().unwrap(),
                question["content"].as_str().unwrap()
            )
        );
        assert_eq!(answer["role"], "assistant");
        assert!(build(0, 3, "run").is_empty());
    }

    #[test]
    fn affinity_keys() {
        assert_eq!(
            AffinityKey::parse("x-session-id").unwrap(),
            AffinityKey::Header("x-session-id".into())
        );
        assert_eq!(
            AffinityKey::parse("header:X-SMG-Routing-Key").unwrap(),
            AffinityKey::Header("x-smg-routing-key".into())
        );
        assert_eq!(
            AffinityKey::parse("prompt_cache_key").unwrap(),
            AffinityKey::PromptCacheKey
        );
        assert!(AffinityKey::parse("header:bad name").is_err());
        assert!(AffinityKey::parse("session").is_err());
        let mut body = json!({});
        let mut headers = Vec::new();
        AffinityKey::User.apply("k", &mut body, &mut headers);
        AffinityKey::Header("x-session-id".into()).apply("k", &mut body, &mut headers);
        assert_eq!(body["user"], "k");
        assert_eq!(headers, vec![("x-session-id".into(), "k".into())]);
    }
}
