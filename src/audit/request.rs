//! What the server tokenized for a logged request, built through `request` like every
//! command's requests: the model's chat template as a [`ChatWrapper`] over the server's
//! view of the logged messages and tools, then [`Encoding`] (`Chat` for chat requests,
//! `Prompt` for a completions prompt) with the tokenizer in force.

use super::input::{Message, RequestBody};
use crate::error::Result;
use crate::render::clock::Clock;
use crate::request::{ChatWrapper, Encoding};
use crate::settings::Settings;
use crate::tokenize::{TokenEngine, Tokens};
use minijinja::Value;
use serde_json::Value as Json;
use std::sync::Arc;

/// A request as the server saw it: the prompt text and its tokens.
pub struct Prompt {
    pub text: String,
    pub tokens: Tokens,
}

/// A chat request's messages and tools as the chat template's values, kept with its prompt so
/// that the session's next request takes over those of the messages it repeats (a value is
/// made from the message alone: the same message, the same value) instead of making them
/// again.
#[derive(Clone, Default)]
pub struct ChatValues {
    messages: Vec<Value>,
    tools: Option<Value>,
}

impl ChatValues {
    /// The values of `body`'s messages and tools, those equal to `earlier`'s (at the same
    /// place) shared with it.
    pub fn of(body: &RequestBody, earlier: Option<(&RequestBody, &ChatValues)>) -> ChatValues {
        let same = |i: usize, message: &Message| {
            let (before, values) = earlier?;
            let before = before.messages.get(i)?;
            // A message taken over from the earlier request is the same without a look.
            (Arc::ptr_eq(before, message) || identical(before, message))
                .then(|| values.messages.get(i).cloned())
                .flatten()
        };
        let messages = body
            .messages
            .iter()
            .enumerate()
            .map(|(i, m)| same(i, m).unwrap_or_else(|| crate::chat::message_value(m)))
            .collect();
        let tools = body.tools.as_ref().map(|tools| {
            // Tools taken over from the earlier request are the same without a look.
            let same = |b: &Arc<Json>| Arc::ptr_eq(b, tools) || identical(b, tools);
            earlier
                .filter(|(before, _)| before.tools.as_ref().is_some_and(same))
                .and_then(|(_, values)| values.tools.clone())
                .unwrap_or_else(|| shared_tools(tools))
        });
        ChatValues { messages, tools }
    }
}

thread_local! {
    /// The tools this thread last made a value of: sessions of one deployment send the same
    /// tools, so a session's first request usually takes them over from another session's
    /// (and the chat template's `tojson` of them is then remembered: `render::json_memo`).
    static LAST_TOOLS: std::cell::RefCell<Option<(Arc<Json>, Value)>> = const { std::cell::RefCell::new(None) };
}

/// The template value of `tools`: the one made last on this thread where the JSON is
/// [`identical`] (a value is made from the JSON alone, and plain values never change).
fn shared_tools(tools: &Arc<Json>) -> Value {
    LAST_TOOLS.with(|last| {
        let mut last = last.borrow_mut();
        if let Some((json, value)) = last.as_ref() {
            if Arc::ptr_eq(json, tools) || identical(json, tools) {
                return value.clone();
            }
        }
        let value = crate::chat::json_value(tools);
        *last = Some((tools.clone(), value.clone()));
        value
    })
}

/// Equal JSON with the keys in the same order (serde_json's `==` ignores their order, which a
/// template iterating a message's keys, or its `tojson`, shows).
fn identical(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Object(a), Json::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((ka, va), (kb, vb))| ka == kb && identical(va, vb))
        }
        (Json::Array(a), Json::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| identical(a, b))
        }
        _ => a == b,
    }
}

pub struct RequestBuilder {
    plain: ChatWrapper,
    /// A tokenizer config's `tool_use` template, where it names one.
    with_tools: Option<ChatWrapper>,
    pub engine: Box<dyn TokenEngine>,
    pub chat_template_display: String,
}

impl RequestBuilder {
    /// The settings' tokenizer (default: the embedded Qwen3) and chat template (default:
    /// beside the tokenizer, inside a `.gguf`, or the embedded default's), rendering under
    /// the settings' limits.
    pub fn load(settings: &Settings) -> Result<RequestBuilder> {
        let (tokenizer, chat_template) = (&settings.tokenizer, settings.chat_template());
        let engine = settings.load_tokenizer()?;
        let plain =
            ChatWrapper::for_tokenizer_with(chat_template, tokenizer, false, settings.limits)?;
        let tools =
            ChatWrapper::for_tokenizer_with(chat_template, tokenizer, true, settings.limits)?;
        let with_tools =
            (tools.template.source != plain.template.source).then(|| tools.without_source_map());
        Ok(RequestBuilder {
            chat_template_display: plain.template.display.clone(),
            plain: plain.without_source_map(),
            with_tools,
            engine,
        })
    }

    fn encoding(body: &RequestBody) -> Encoding {
        match body.prompt {
            Some(_) => Encoding::Prompt,
            None => Encoding::Chat,
        }
    }

    /// The tokens of `text`, a prompt built for `body` earlier.
    pub fn tokens_of(&self, body: &RequestBody, text: &str) -> Result<Tokens> {
        Self::encoding(body).encode(&*self.engine, text)
    }

    /// The prompt the server built for `body` (its server view), with the clock at `time`
    /// (seconds since the epoch) for templates that print the date. `earlier`, a prompt this
    /// one likely extends (its session's previous), only saves work: its tokens up to the
    /// last safe boundary both texts share are taken over instead of encoded again (the
    /// tokens are the same).
    pub fn prompt(
        &self,
        body: &RequestBody,
        time: Option<f64>,
        earlier: Option<&Prompt>,
    ) -> Result<Prompt> {
        let (prompt, _) = self.prompt_sharing(body, time, earlier, None)?;
        Ok(prompt)
    }

    /// [`Self::prompt`], also taking over the template values of the messages `body`
    /// repeats from an earlier request of its session (`earlier_values`: its body and
    /// values), and returning this one's values for the next.
    pub fn prompt_sharing(
        &self,
        body: &RequestBody,
        time: Option<f64>,
        earlier: Option<&Prompt>,
        earlier_values: Option<(&RequestBody, &ChatValues)>,
    ) -> Result<(Prompt, ChatValues)> {
        let encoding = Self::encoding(body);
        if let Some(prompt) = &body.prompt {
            let prompt = Prompt {
                tokens: encoding.encode(&*self.engine, prompt)?,
                text: prompt.clone(),
            };
            return Ok((prompt, ChatValues::default()));
        }
        let wrapper = match (&self.with_tools, &body.tools) {
            (Some(with_tools), Some(_)) => with_tools,
            _ => &self.plain,
        };
        let clock = time
            .and_then(|t| chrono::DateTime::from_timestamp(t as i64, 0))
            .map(|at| Clock { at })
            .unwrap_or_else(Clock::now);
        let values = ChatValues::of(body, earlier_values);
        let text = wrapper.render_values(
            values.messages.clone(),
            values.tools.clone().unwrap_or_else(|| Value::from(())),
            clock,
        )?;
        let tokens = encoding.encode_after(
            &*self.engine,
            earlier.map(|e| (e.text.as_str(), &e.tokens)),
            &text,
        )?;
        Ok((Prompt { tokens, text }, values))
    }

    /// The prompt of a text the server view built itself (a hosted API's cache order, no
    /// chat template), encoded as a chat request; `earlier` as in [`Self::prompt`].
    pub fn prompt_of_text(
        &self,
        body: &RequestBody,
        text: String,
        earlier: Option<&Prompt>,
    ) -> Result<Prompt> {
        let tokens = Self::encoding(body).encode_after(
            &*self.engine,
            earlier.map(|e| (e.text.as_str(), &e.tokens)),
            &text,
        )?;
        Ok(Prompt { tokens, text })
    }

    /// The tokens a reply adds after `prompt`, from its text: the prompt and the reply
    /// encoded together, less the prompt's tokens (`None` where the prompt's tokens are not
    /// a prefix of them: the reply merged with the prompt's end).
    pub fn reply_tokens(&self, prompt: &Prompt, reply: &str) -> Result<Option<Vec<u32>>> {
        let ids = &prompt.tokens.ids;
        let specials = self.engine.special_tokens();
        // Only the text after the restart point is encoded: the tokens before it are the
        // prompt's. The chat encoding then adds nothing (no suffix; the prefix is there).
        if specials.suffix.is_empty() {
            if let Some((kept, rest)) =
                self.engine
                    .encode_extension(&prompt.text, &prompt.tokens, reply)?
            {
                if kept >= specials.prefix.len() && ids.starts_with(&specials.prefix) {
                    let again = ids.len() - kept;
                    return Ok(
                        (rest.ids.len() >= again && rest.ids[..again] == ids[kept..])
                            .then(|| rest.ids[again..].to_vec()),
                    );
                }
            }
        }
        let text = format!("{}{reply}", prompt.text);
        let all = self
            .engine
            .encode_chat_after(&prompt.text, &prompt.tokens, &text)?;
        let n = prompt.tokens.ids.len();
        Ok(
            (all.ids.len() >= n && all.ids[..n] == prompt.tokens.ids[..])
                .then(|| all.ids[n..].to_vec()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn keys(value: &Value) -> Vec<String> {
        value.try_iter().unwrap().map(|k| k.to_string()).collect()
    }

    #[test]
    fn repeated_messages_take_the_earlier_values_in_their_own_key_order() {
        let body = |messages: Vec<Json>| RequestBody {
            messages: messages.into_iter().map(Arc::new).collect(),
            ..RequestBody::default()
        };
        let first = body(vec![json!({"role": "user", "content": "hi"})]);
        let values = ChatValues::of(&first, None);
        let same = body(vec![
            json!({"role": "user", "content": "hi"}),
            json!({"role": "assistant", "content": "yes"}),
        ]);
        let next = ChatValues::of(&same, Some((&first, &values)));
        assert_eq!(next.messages.len(), 2);
        assert_eq!(keys(&next.messages[0]), ["role", "content"]);
        // serde_json's `==` calls these equal; the template would see another key order.
        let reordered = body(vec![json!({"content": "hi", "role": "user"})]);
        assert!(reordered.messages[0] == first.messages[0]);
        assert!(!identical(&reordered.messages[0], &first.messages[0]));
        let next = ChatValues::of(&reordered, Some((&first, &values)));
        assert_eq!(keys(&next.messages[0]), ["content", "role"]);
    }
}
