//! The one place `audit` builds what the server tokenized: the chat template applied to the
//! logged messages and tools (through `chat`, so the chat fidelity carries over), then the
//! tokenizer with the special tokens the server adds (`tokenize`).

use super::input::RequestBody;
use crate::chat::{self, ChatTemplate, ChatTemplateSource};
use crate::error::{Error, Result};
use crate::render::clock::Clock;
use crate::render::{Prepared, Renderer};
use crate::source;
use crate::tokenize::{TokenEngine, TokenizerSpec, Tokens};
use std::path::{Path, PathBuf};

/// A request as the server saw it: the prompt text and its tokens.
pub struct Prompt {
    pub text: String,
    pub tokens: Tokens,
}

struct Loaded {
    template: ChatTemplate,
    renderer: Renderer,
    prepared: Prepared,
}

impl Loaded {
    fn new(template: ChatTemplate) -> Result<Loaded> {
        let (renderer, prepared) = template.renderer()?;
        Ok(Loaded {
            template,
            renderer,
            prepared: prepared.without_source_map(),
        })
    }
}

pub struct RequestBuilder {
    plain: Loaded,
    /// A tokenizer config's `tool_use` template, where it names one.
    with_tools: Option<Loaded>,
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
        let spec = TokenizerSpec::parse(tokenizer)?;
        let engine = spec.load_with(special_tokens)?;
        let beside: PathBuf;
        let source = match (chat_template, &spec) {
            (Some(path), _) => ChatTemplateSource::File(path),
            (None, TokenizerSpec::Builtin) => ChatTemplateSource::Embedded,
            (None, TokenizerSpec::Gguf(path)) => ChatTemplateSource::File(path),
            (None, TokenizerSpec::File(path)) => {
                beside = path.with_file_name("tokenizer_config.json");
                ChatTemplateSource::File(&beside)
            }
            (None, TokenizerSpec::HubModel(id)) => {
                beside =
                    crate::tokenize::find_in_hf_cache(id)?.with_file_name("tokenizer_config.json");
                ChatTemplateSource::File(&beside)
            }
            (None, TokenizerSpec::Tiktoken(encoding)) => {
                return Err(crate::tokenize::tiktoken::no_chat_template(*encoding))
            }
        };
        if let ChatTemplateSource::File(path) = source {
            if !path.is_file() {
                return Err(Error::input_with_help(
                    format!("no chat template: {} is missing", source::display_path(path)),
                    "pass --chat-template FILE (a .jinja template, a tokenizer_config.json or a .gguf)",
                ));
            }
        }
        let plain = ChatTemplate::from_source(source, None, false)?;
        let tools = ChatTemplate::from_source(source, None, true)?;
        let with_tools = if tools.source != plain.source {
            Some(Loaded::new(tools)?)
        } else {
            None
        };
        Ok(RequestBuilder {
            chat_template_display: plain.display.clone(),
            plain: Loaded::new(plain)?,
            with_tools,
            engine,
        })
    }

    /// The tokens of `text`, a prompt built for `body` earlier.
    pub fn tokens_of(&self, body: &RequestBody, text: &str) -> Result<Tokens> {
        match body.prompt {
            Some(_) => self.engine.encode_prompt(text),
            None => self.engine.encode_chat(text),
        }
    }

    /// The prompt the server built for `body`, with the clock at `time` (seconds since the
    /// epoch) for templates that print the date. `earlier`, a prompt this one likely extends
    /// (its session's previous), only saves work: its tokens up to the last safe boundary
    /// both texts share are taken over instead of encoded again (the tokens are the same).
    pub fn prompt(
        &self,
        body: &RequestBody,
        time: Option<f64>,
        earlier: Option<&Prompt>,
    ) -> Result<Prompt> {
        if let Some(prompt) = &body.prompt {
            return Ok(Prompt {
                tokens: self.engine.encode_prompt(prompt)?,
                text: prompt.clone(),
            });
        }
        let loaded = match (&self.with_tools, &body.tools) {
            (Some(with_tools), Some(_)) => with_tools,
            _ => &self.plain,
        };
        let clock = time
            .and_then(|t| chrono::DateTime::from_timestamp(t as i64, 0))
            .map(|at| Clock { at })
            .unwrap_or_else(Clock::now);
        // The context is built from the logged body in place (no copy of its messages).
        let context = chat::context_of(
            &loaded.template,
            &body.messages,
            body.tools.as_ref(),
            true,
            &serde_json::Map::new(),
        );
        let text = loaded
            .renderer
            .render(&loaded.prepared, &context, clock)?
            .text;
        let tokens = match earlier {
            Some(e) => self.engine.encode_chat_after(&e.text, &e.tokens, &text)?,
            None => self.engine.encode_chat(&text)?,
        };
        Ok(Prompt { tokens, text })
    }
}
