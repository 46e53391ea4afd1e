//! What the server tokenized for a logged request, built through `request` like every
//! command's requests: the model's chat template as a [`ChatWrapper`] over the server's
//! view of the logged messages and tools, then [`Encoding`] (`Chat` for chat requests,
//! `Prompt` for a completions prompt) with the tokenizer in force.

use super::input::RequestBody;
use crate::error::Result;
use crate::render::clock::Clock;
use crate::request::{ChatWrapper, Encoding};
use crate::tokenize::{TokenEngine, TokenizerSpec, Tokens};
use std::path::Path;

/// A request as the server saw it: the prompt text and its tokens.
pub struct Prompt {
    pub text: String,
    pub tokens: Tokens,
}

pub struct RequestBuilder {
    plain: ChatWrapper,
    /// A tokenizer config's `tool_use` template, where it names one.
    with_tools: Option<ChatWrapper>,
    pub engine: Box<dyn TokenEngine>,
    pub chat_template_display: String,
}

impl RequestBuilder {
    /// `--tokenizer` (default: the embedded Qwen3) and `--chat-template` (default: beside the
    /// tokenizer, inside a `.gguf`, or the embedded default's).
    pub fn load(
        tokenizer: &str,
        chat_template: Option<&Path>,
        special_tokens: bool,
    ) -> Result<RequestBuilder> {
        let engine = TokenizerSpec::parse(tokenizer)?.load_with(special_tokens)?;
        let plain = ChatWrapper::for_tokenizer_with(chat_template, tokenizer, false)?;
        let tools = ChatWrapper::for_tokenizer_with(chat_template, tokenizer, true)?;
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
        let encoding = Self::encoding(body);
        if let Some(prompt) = &body.prompt {
            return Ok(Prompt {
                tokens: encoding.encode(&*self.engine, prompt)?,
                text: prompt.clone(),
            });
        }
        let wrapper = match (&self.with_tools, &body.tools) {
            (Some(with_tools), Some(_)) => with_tools,
            _ => &self.plain,
        };
        let clock = time
            .and_then(|t| chrono::DateTime::from_timestamp(t as i64, 0))
            .map(|at| Clock { at })
            .unwrap_or_else(Clock::now);
        let text = wrapper.render_text(&body.messages, body.tools.as_ref(), clock)?;
        let tokens = encoding.encode_after(
            &*self.engine,
            earlier.map(|e| (e.text.as_str(), &e.tokens)),
            &text,
        )?;
        Ok(Prompt { tokens, text })
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
