//! Where a request stops extending the one before it, and why.
//!
//! The break is found on the prompts (the rendered text and its tokens) and located in the
//! request: the JSON path whose value differs (`messages[0].content`, `tools`), the character
//! offset in that value, and a cause from the value's change, classified with the same
//! volatile-field patterns the rules use (`rules/fields/*.yaml`). Changes of whole messages
//! have their own causes: the oldest turns dropped (`history-trimmed`), the system message or
//! the tools replaced (`prompt-switched`), and the engine's cached reply sent back in another
//! form (`reply-rewritten`, [`reply_rewritten`]).
//!
//! `tokens_lost` counts the tokens both requests have after the break: the longest end of
//! the earlier prompt (after the break) that this prompt sends again, in this prompt's
//! tokens. The server had them cached and computes them again. It is never more than this
//! prompt's tokens after the break.

use super::attribute::TemplatePlace;
use super::input::RequestBody;
use super::request::Prompt;
use super::server_view::keys_sorted;
use crate::analyse::common_prefix;
use crate::rules::VolatileFields;
use crate::source;
use serde::Serialize;
use serde_json::Value as Json;

/// The causes, a contract with the JSON report.
pub const CAUSES: [&str; 11] = [
    "clock",
    "id",
    "identity",
    "tool-order",
    "key-order",
    "whitespace",
    "history-rewrite",
    "history-trimmed",
    "prompt-switched",
    "reply-rewritten",
    "content",
];

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Break {
    pub path: String,
    pub offset: usize,
    pub cause: &'static str,
    pub tokens_lost: usize,
    pub before: String,
    pub after: String,
    /// With `--templates`: the template line that wrote it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<TemplatePlace>,
    /// Tokens shared with the earlier request.
    #[serde(skip)]
    pub shared_tokens: usize,
    /// Byte offset of the break in this request's prompt.
    #[serde(skip)]
    pub prompt_offset: usize,
}

/// Tokens shown either side of a break.
const SHOWN_TOKENS: usize = 8;

/// Whether a prompt extends the earlier one's text (then [`find`] finds no break).
pub fn extends(earlier: &str, text: &str) -> bool {
    text.starts_with(earlier)
}

/// The break between `earlier` (its body and prompt) and this request, or `None` when this
/// prompt extends the earlier one's text.
pub fn find(
    earlier: (&RequestBody, &Prompt),
    this: (&RequestBody, &Prompt),
    fields: &VolatileFields,
) -> Option<Break> {
    let (old_body, old) = earlier;
    let (new_body, new) = this;
    let byte = source::floor_char_boundary(
        &old.text,
        common_prefix(old.text.as_bytes(), new.text.as_bytes()),
    );
    if byte >= old.text.len() {
        return None;
    }
    let shared = common_prefix(&old.tokens.ids, &new.tokens.ids);
    let (path, offset, cause) = match trimmed(old_body, new_body) {
        Some(path) => (path, 0, "history-trimmed"),
        None => match locate(old_body, new_body, &new.text, byte) {
            Some(place) => {
                let cause = place.cause(fields);
                (place.path, place.offset, cause)
            }
            None => {
                let path = message_at(new_body, &new.text, byte);
                (path, 0, "history-rewrite")
            }
        },
    };
    let tokens_lost = sent_again(old, new, byte);
    Some(Break {
        path,
        offset,
        cause,
        tokens_lost,
        before: excerpt(old, shared),
        after: excerpt(new, shared),
        template: None,
        shared_tokens: shared,
        prompt_offset: new
            .tokens
            .offsets
            .get(shared)
            .map_or(new.text.len(), |o| o.0),
    })
}

/// The tokens of `new` after byte `byte` that repeat the end of `old` after it: the longest
/// end of `old` (from `byte` on) found in `new` after `byte`, counted in `new`'s tokens that
/// lie wholly inside it.
fn sent_again(old: &Prompt, new: &Prompt, byte: usize) -> usize {
    let (Some(old_rest), Some(new_rest)) = (old.text.get(byte..), new.text.get(byte..)) else {
        return 0;
    };
    let Some((at, len)) = end_sent_again(old_rest, new_rest) else {
        return 0;
    };
    let (start, end) = (byte + at, byte + at + len);
    new.tokens
        .offsets
        .iter()
        .filter(|(s, e)| *s >= start && *e <= end)
        .count()
}

/// The longest non-empty end of `old` (starting on a character boundary) found in `new`: where
/// it is first found, and its length.
fn end_sent_again(old: &str, new: &str) -> Option<(usize, usize)> {
    // A shorter end is found wherever a longer one is: the longest end found starting on a
    // character boundary is the longest end found in bytes, less a partial first character.
    let mut start = old.len() - longest_end_found(old.as_bytes(), new.as_bytes());
    while !old.is_char_boundary(start) {
        start += 1;
    }
    let len = old.len() - start;
    if len == 0 {
        return None;
    }
    new.find(&old[start..]).map(|at| (at, len))
}

/// The length of the longest end of `old` that occurs in `new`, in one pass over each: the
/// longest start of `old` reversed found in `new` reversed (Knuth-Morris-Pratt), instead of
/// a search of `new` per length tried (each search's set-up reads the whole needle).
fn longest_end_found(old: &[u8], new: &[u8]) -> usize {
    let pattern: Vec<u8> = old.iter().rev().copied().collect();
    let n = pattern.len();
    if n == 0 || new.is_empty() {
        return 0;
    }
    // `border[i]`: the longest proper start of `pattern[..=i]` that also ends it.
    let mut border = vec![0usize; n];
    let mut k = 0;
    for i in 1..n {
        while k > 0 && pattern[i] != pattern[k] {
            k = border[k - 1];
        }
        if pattern[i] == pattern[k] {
            k += 1;
        }
        border[i] = k;
    }
    let (mut matched, mut best) = (0, 0);
    for &byte in new.iter().rev() {
        while matched > 0 && pattern[matched] != byte {
            matched = border[matched - 1];
        }
        if pattern[matched] == byte {
            matched += 1;
        }
        if matched > best {
            best = matched;
            if best == n {
                break;
            }
        }
    }
    best
}

/// `history-trimmed`: after the leading messages both share, this request drops the
/// earliest turns of the earlier one and keeps the rest unchanged (then may add more). The
/// path of the first message that changed place.
fn trimmed(old: &RequestBody, new: &RequestBody) -> Option<String> {
    if old.tools != new.tools {
        return None;
    }
    let lead = super::session::leading_run(&old.messages, &new.messages);
    let (old_rest, new_rest) = (
        &old.messages[lead..],
        &new.messages[lead.min(new.messages.len())..],
    );
    (1..old_rest.len()).find(|&k| new_rest.starts_with(&old_rest[k..]))?;
    Some(
        new.message_paths
            .get(lead)
            .cloned()
            .unwrap_or_else(|| format!("messages[{lead}]")),
    )
}

/// The earlier request of a session with the reply the engine kept after its prompt.
pub struct Replied<'a> {
    pub body: &'a RequestBody,
    pub prompt_ids: &'a [u32],
    /// The reply as the client got it, in the server's view.
    pub reply: &'a Json,
    /// The reply's tokens the engine kept.
    pub reply_ids: &'a [u32],
}

/// `reply-rewritten`: this request extends the earlier prompt, but the assistant message
/// that follows it is not the reply the client got (in the server's view): the framework
/// sent its reply back in another form, and the reply's tokens the engine kept after the
/// point where they part are computed again. `None` when the reply comes back as it was.
pub fn reply_rewritten(earlier: Replied<'_>, this: (&RequestBody, &Prompt)) -> Option<Break> {
    let (body, prompt) = this;
    let n = earlier.body.messages.len();
    let sent = body.messages.get(n)?;
    if sent.get("role").and_then(Json::as_str) != Some("assistant")
        || super::session::leading_run(&earlier.body.messages, &body.messages) < n
        || **sent == *earlier.reply
        || !same_reply(earlier.reply, sent)
    {
        return None;
    }
    let ids = &prompt.tokens.ids;
    let prompt_tokens = earlier.prompt_ids.len();
    if common_prefix(earlier.prompt_ids, ids) < prompt_tokens {
        return None;
    }
    let reused = common_prefix(earlier.reply_ids, &ids[prompt_tokens..]);
    if reused >= earlier.reply_ids.len() {
        return None;
    }
    let text = |m: &Json, key: &str| match m.get(key) {
        Some(Json::String(s)) => s.clone(),
        Some(Json::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    let field = if text(sent, "content") != text(earlier.reply, "content") {
        "content"
    } else {
        "tool_calls"
    };
    let (mut was, now) = (text(earlier.reply, field), text(sent, field));
    if was.is_empty() {
        // A reply of tool calls only, sent back as text: show the calls it replaces.
        was = text(earlier.reply, "tool_calls");
    }
    let offset = was
        .chars()
        .zip(now.chars())
        .take_while(|(a, b)| a == b)
        .count();
    let shown = |s: &str| s.chars().skip(offset).take(40).collect::<String>();
    let base = body
        .message_paths
        .get(n)
        .cloned()
        .unwrap_or_else(|| format!("messages[{n}]"));
    let shared = prompt_tokens + reused;
    Some(Break {
        path: format!("{base}.{field}"),
        offset,
        cause: "reply-rewritten",
        tokens_lost: earlier.reply_ids.len() - reused,
        before: shown(&was),
        after: shown(&now),
        template: None,
        shared_tokens: shared,
        prompt_offset: prompt
            .tokens
            .offsets
            .get(shared)
            .map_or(prompt.text.len(), |o| o.0),
    })
}

/// Whether `sent` is the reply in another form, not another message in its place (a
/// scripted conversation sends its own turns): it names every tool the reply called, or
/// holds the reply's text (or is held by it) once whitespace and case are set aside.
fn same_reply(reply: &Json, sent: &Json) -> bool {
    let calls: Vec<&str> = reply
        .get("tool_calls")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.pointer("/function/name").and_then(Json::as_str))
        .collect();
    let sent_all = sent.to_string();
    if !calls.is_empty() {
        return calls.iter().all(|name| sent_all.contains(name));
    }
    let squash = |m: &Json| {
        m.get("content")
            .and_then(Json::as_str)
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    let (a, b) = (squash(reply), squash(sent));
    !a.is_empty() && !b.is_empty() && (a.contains(&b) || b.contains(&a))
}

/// The text of up to [`SHOWN_TOKENS`] tokens from token `from` on: what the tokens decode to.
fn excerpt(prompt: &Prompt, from: usize) -> String {
    let offsets = &prompt.tokens.offsets;
    let Some(&(start, _)) = offsets.get(from) else {
        return String::new();
    };
    let end = offsets
        .get(from + SHOWN_TOKENS)
        .map_or(prompt.text.len(), |o| o.0)
        .max(start);
    let start = source::floor_char_boundary(&prompt.text, start);
    let end = source::floor_char_boundary(&prompt.text, end.min(prompt.text.len()));
    prompt.text[start..end].to_owned()
}

/// A differing value of the request, and where its text sits in the prompt.
struct Place {
    path: String,
    offset: usize,
    old: Json,
    new: Json,
    is_tools: bool,
    /// The first message, a system (or developer) one.
    is_system: bool,
}

/// A text replaced rather than edited: the two share less than half of the shorter one,
/// from the start.
fn replaced_wholesale(old: &str, new: &str) -> bool {
    let shared = common_prefix(old.as_bytes(), new.as_bytes());
    shared * 2 < old.len().min(new.len())
}

impl Place {
    fn cause(&self, fields: &VolatileFields) -> &'static str {
        if self.is_tools {
            return tools_cause(&self.old, &self.new);
        }
        match (&self.old, &self.new) {
            (Json::String(a), Json::String(b)) => match text_cause(a, b, self.offset, fields) {
                "content" if self.is_system && replaced_wholesale(a, b) => "prompt-switched",
                cause => cause,
            },
            (a, b) if a == b => "key-order",
            _ => "content",
        }
    }
}

fn tools_cause(old: &Json, new: &Json) -> &'static str {
    let names = |list: &Json| -> Vec<String> {
        let mut names: Vec<String> = list
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| {
                t.pointer("/function/name")
                    .or_else(|| t.get("name"))
                    .and_then(Json::as_str)
                    .map(str::to_owned)
            })
            .collect();
        names.sort();
        names
    };
    // Tools added or taken away wholesale (a planning or final-answer step), or another
    // set: the prompt was switched, not edited.
    let (a_names, b_names) = (names(old), names(new));
    if a_names.is_empty() != b_names.is_empty()
        || (!a_names.is_empty() && !a_names.iter().any(|n| b_names.contains(n)))
    {
        return "prompt-switched";
    }
    let (Some(a), Some(b)) = (old.as_array(), new.as_array()) else {
        return "content";
    };
    if a == b {
        return "key-order";
    }
    let canonical = |list: &[Json]| {
        let mut all: Vec<String> = list.iter().map(|t| keys_sorted(t).to_string()).collect();
        all.sort();
        all
    };
    if canonical(a) == canonical(b) {
        "tool-order"
    } else {
        "content"
    }
}

/// Why two texts differ, from the change at character `offset`.
fn text_cause(old: &str, new: &str, offset: usize, fields: &VolatileFields) -> &'static str {
    // The same words in the same order (words hold no blank): the texts joined with one
    // space each would be equal. Compared word by word, stopping at the first that differs.
    if old.split_whitespace().eq(new.split_whitespace()) {
        return "whitespace";
    }
    if let (Ok(a), Ok(b)) = (
        serde_json::from_str::<Json>(old),
        serde_json::from_str::<Json>(new),
    ) {
        if a == b {
            return "key-order";
        }
    }
    let at = new.char_indices().nth(offset).map_or(new.len(), |(i, _)| i);
    let word_start = new[..at].rfind(char::is_whitespace).map_or(0, |i| i + 1);
    let word_end = new[at..]
        .find(char::is_whitespace)
        .map_or(new.len(), |i| at + i);
    let word = new[word_start..word_end].trim_matches(|c: char| ",;()[]{}\"'<>".contains(c));
    let line_start = new[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_end = new[at..].find('\n').map_or(new.len(), |i| at + i);
    let line = &new[line_start..line_end];
    // `Label: value` with the change in the value: the label names the field.
    let label = line
        .split_once(':')
        .filter(|(label, _)| line_start + label.len() < at && label.len() <= 40)
        .map(|(label, _)| label.trim().to_ascii_lowercase().replace([' ', '-'], "_"));
    let by_value = fields
        .classify_value(word)
        .or_else(|| fields.classify_value(&new[line_start..word_end]));
    let by_name = label.as_deref().and_then(|l| fields.classify_name(l));
    match by_value.or(by_name).map(|m| m.kind) {
        Some(kind) => match kind.as_str() {
            "clock" | "date" => "clock",
            "id" => "id",
            "identity" | "email" => "identity",
            _ => "content",
        },
        None => "content",
    }
}

/// The first value of `new` that differs from `old`, in the order the prompt renders them
/// (the one whose text sits at or before `byte` in the prompt, else the first in the body).
fn locate(old: &RequestBody, new: &RequestBody, text: &str, byte: usize) -> Option<Place> {
    let mut places = Vec::new();
    if old.tools != new.tools {
        let a = old.tools.as_deref().cloned().unwrap_or(Json::Null);
        let b = new.tools.as_deref().cloned().unwrap_or(Json::Null);
        let (sa, sb) = (a.to_string(), b.to_string());
        let chars = sa
            .chars()
            .zip(sb.chars())
            .take_while(|(x, y)| x == y)
            .count();
        let at = b
            .as_array()
            .and_then(|list| {
                list.iter()
                    .find(|t| !a.as_array().is_some_and(|l| l.contains(t)))
                    .or(list.first())
            })
            .and_then(|tool| tool.pointer("/function/name"))
            .and_then(Json::as_str)
            .and_then(|name| text.find(name));
        places.push((
            at,
            Place {
                path: "tools".into(),
                offset: chars,
                old: a,
                new: b,
                is_tools: true,
                is_system: false,
            },
        ));
    }
    let mut cursor = 0;
    // The messages after the last that differs only move the cursor: they are not searched.
    let differ = old
        .messages
        .iter()
        .zip(&new.messages)
        .rposition(|(a, b)| a != b)
        .map_or(0, |last| last + 1);
    for (i, (a, b)) in old
        .messages
        .iter()
        .zip(&new.messages)
        .enumerate()
        .take(differ)
    {
        let content = b.get("content").and_then(Json::as_str).unwrap_or_default();
        let at = (!content.is_empty())
            .then(|| text.get(cursor..)?.find(content).map(|p| p + cursor))
            .flatten();
        if let Some(at) = at {
            cursor = at + content.len();
        }
        if a == b {
            continue;
        }
        let base = new
            .message_paths
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("messages[{i}]"));
        let field = ["content", "tool_calls", "role", "name", "tool_call_id"]
            .into_iter()
            .find(|k| a.get(*k) != b.get(*k));
        let (field, va, vb) = match field {
            Some(f) => (
                f,
                a.get(f).cloned().unwrap_or(Json::Null),
                b.get(f).cloned().unwrap_or(Json::Null),
            ),
            None => ("", Json::clone(a), Json::clone(b)),
        };
        let is_system = i == 0
            && matches!(
                a.get("role").and_then(Json::as_str),
                Some("system" | "developer")
            );
        let (offset, start) = match (&va, &vb) {
            (Json::String(x), Json::String(y)) => {
                let prefix = common_prefix(x.as_bytes(), y.as_bytes());
                let prefix = source::floor_char_boundary(x, prefix);
                (x[..prefix].chars().count(), at.map(|a| a + prefix))
            }
            _ => (0, at),
        };
        // A system prompt or a Responses `input` text is the value itself.
        let whole = field.is_empty()
            || base.starts_with("system")
            || base.starts_with("instructions")
            || base == "input";
        let path = if whole {
            base
        } else {
            format!("{base}.{field}")
        };
        places.push((
            start,
            Place {
                path,
                offset,
                old: va,
                new: vb,
                is_tools: false,
                is_system,
            },
        ));
    }
    if old.messages.len() > new.messages.len() && places.is_empty() {
        let i = new.messages.len();
        places.push((
            None,
            Place {
                path: format!("messages[{i}]"),
                offset: 0,
                old: Json::clone(&old.messages[i]),
                new: Json::Null,
                is_tools: false,
                is_system: false,
            },
        ));
    }
    // The differing value whose text starts latest at or before the break, else the first.
    let best = places
        .iter()
        .enumerate()
        .filter_map(|(i, (at, _))| at.filter(|&a| a <= byte).map(|a| (a, i)))
        .max()
        .map(|(_, i)| i)
        .unwrap_or(0);
    (!places.is_empty()).then(|| places.swap_remove(best).1)
}

/// The message whose content holds `byte` in the prompt (for a break in identical messages).
fn message_at(body: &RequestBody, text: &str, byte: usize) -> String {
    let mut cursor = 0;
    for (i, m) in body.messages.iter().enumerate() {
        let Some(content) = m
            .get("content")
            .and_then(Json::as_str)
            .filter(|c| !c.is_empty())
        else {
            continue;
        };
        if let Some(at) = text.get(cursor..).and_then(|t| t.find(content)) {
            cursor += at + content.len();
            if cursor > byte {
                return body
                    .message_paths
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| format!("messages[{i}]"));
            }
        }
    }
    let last = body.messages.len().saturating_sub(1);
    body.message_paths
        .get(last)
        .cloned()
        .unwrap_or_else(|| format!("messages[{last}]"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields() -> VolatileFields {
        VolatileFields::new(&[]).unwrap()
    }

    #[test]
    fn the_end_sent_again_is_the_longest_end_found() {
        // Against the definition: every end of `old` starting on a character boundary, longest
        // first, searched for in `new`.
        fn slow(old: &str, new: &str) -> Option<(usize, usize)> {
            (0..old.len())
                .filter(|&start| old.is_char_boundary(start))
                .find_map(|start| new.find(&old[start..]).map(|at| (at, old.len() - start)))
        }
        let alphabet = ['a', 'b', 'é', '©', '€', '\n'];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..20_000 {
            let (a, b) = (next(12), next(12));
            let mut text = |len: usize| -> String {
                (0..len).map(|_| alphabet[next(alphabet.len())]).collect()
            };
            let (old, new) = (text(a), text(b));
            assert_eq!(
                end_sent_again(&old, &new),
                slow(&old, &new),
                "{old:?} in {new:?}"
            );
        }
        assert_eq!(end_sent_again("xyzabc", "abc_zabc"), Some((4, 4)));
        assert_eq!(end_sent_again("", "abc"), None);
        assert_eq!(end_sent_again("abc", ""), None);
        assert_eq!(end_sent_again("abc", "xy"), None);
        // An end that starts inside `é` (C3 A9; `©` is C2 A9) is not text.
        assert_eq!(end_sent_again("é", "\u{e9}"), Some((0, 2)));
        assert_eq!(end_sent_again("é", "©"), None);
    }

    #[test]
    fn causes_of_changed_text() {
        let f = fields();
        assert_eq!(
            text_cause(
                "Current time: 2026-11-30 09:33:53\nA",
                "Current time: 2026-11-30 09:40:53\nA",
                28,
                &f
            ),
            "clock"
        );
        assert_eq!(
            text_cause(
                "Request id: 5f0c0001-9b1e-4c3a-8d2f-000000000001\nB",
                "Request id: 5f0c0002-9b1e-4c3a-8d2f-000000000002\nB",
                19,
                &f
            ),
            "id"
        );
        assert_eq!(
            text_cause("{\"a\": 1, \"b\": 2}", "{\"b\": 2, \"a\": 1}", 2, &f),
            "key-order"
        );
        assert_eq!(text_cause("a  b\r\n", "a b\n", 2, &f), "whitespace");
        assert_eq!(
            text_cause("User: Alice\nHi", "User: Bob\nHi", 6, &f),
            "identity"
        );
        assert_eq!(
            text_cause("the sky is blue", "the sky is red", 11, &f),
            "content"
        );
    }
}
