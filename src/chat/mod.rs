//! Chat templates: what an inference server does to a request before it tokenizes it.
//!
//! A model's chat template (a `.jinja` file, or the `chat_template` of a
//! `tokenizer_config.json`) turns `messages` and `tools` into one string. We render it the way
//! transformers' `apply_chat_template` does ([`Dialect::Transformers`]), with the same
//! variables, so that `render` prints exactly what the server sees and `check` can audit it.

pub mod native;

use crate::config::yaml_error;
use crate::error::{Error, Result};
use crate::render::clock::Clock;
use crate::render::{Dialect, Prepared, Render, RenderSettings, Renderer};
use crate::source;
use indexmap::IndexMap;
use minijinja::Value;
use serde_json::{Map, Value as Json};
use std::path::{Path, PathBuf};

/// The special tokens transformers passes to every chat template (`special_tokens_map`).
pub const SPECIAL_TOKENS: [&str; 7] = [
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
];

/// A model's chat template, with the variables its tokenizer config adds to every render.
#[derive(Debug, Clone)]
pub struct ChatTemplate {
    pub path: PathBuf,
    /// As shown to the user, and the template's name in the render environment.
    pub display: String,
    /// The Jinja source (for a tokenizer_config.json: the decoded `chat_template` string).
    pub source: String,
    /// Which named template was picked from a tokenizer_config.json list, if any.
    pub template_name: Option<String>,
    /// `bos_token`, `eos_token`, … from tokenizer_config.json, as transformers passes them.
    pub special_tokens: Map<String, Json>,
}

/// The default model's tokenizer config (Qwen3), for the embedded default tokenizer.
const EMBEDDED_TOKENIZER_CONFIG: &str = include_str!("../../assets/qwen3/tokenizer_config.json");

/// Where a model's chat template comes from. Every command loads one through
/// [`ChatTemplate::from_source`]: a new kind of source (GGUF metadata, say) is a new variant.
#[derive(Debug, Clone, Copy)]
pub enum ChatTemplateSource<'a> {
    /// A `.jinja` file, or a `tokenizer_config.json` with `chat_template`.
    File(&'a Path),
    /// The tokenizer config of the embedded default tokenizer.
    Embedded,
}

impl ChatTemplate {
    /// Loads a chat template from wherever it lives. Of named templates, `wanted` wins,
    /// else `tool_use` when the request has tools, else `default` (as transformers picks).
    pub fn from_source(
        source: ChatTemplateSource,
        wanted: Option<&str>,
        has_tools: bool,
    ) -> Result<ChatTemplate> {
        match source {
            ChatTemplateSource::File(path) => ChatTemplate::load(path, wanted, has_tools),
            ChatTemplateSource::Embedded => ChatTemplate::from_tokenizer_config(
                Path::new("builtin:qwen3"),
                EMBEDDED_TOKENIZER_CONFIG,
                wanted,
                has_tools,
            ),
        }
    }

    /// Loads a `.jinja` file or a `tokenizer_config.json`; see [`Self::from_source`].
    pub fn load(path: &Path, wanted: Option<&str>, has_tools: bool) -> Result<ChatTemplate> {
        let display = source::display_path(path);
        if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("gguf"))
        {
            return ChatTemplate::from_gguf(path, display);
        }
        let text = source::read_text(path, &display)?;
        let is_json = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        if !is_json {
            if let Some(name) = wanted {
                return Err(Error::input_with_help(
                    format!("{display}: --template-name `{name}` needs a tokenizer_config.json with named templates"),
                    "a .jinja file holds exactly one template; drop --template-name",
                ));
            }
            return Ok(ChatTemplate {
                path: path.to_path_buf(),
                display,
                source: text,
                template_name: None,
                special_tokens: Map::new(),
            });
        }
        ChatTemplate::from_tokenizer_config(path, &text, wanted, has_tools)
    }

    /// The chat template and special tokens of a `tokenizer_config.json` text read from `path`.
    fn from_tokenizer_config(
        path: &Path,
        text: &str,
        wanted: Option<&str>,
        has_tools: bool,
    ) -> Result<ChatTemplate> {
        let display = source::display_path(path);
        let config: Map<String, Json> = serde_json::from_str(text).map_err(|e| {
            let offset = source::offset_of(text, e.line(), e.column());
            Error::located(
                &display,
                text,
                offset..offset,
                format!("{display}: not a JSON object: {e}"),
                "here",
                None,
            )
        })?;
        let (source, template_name) = pick_template(&config, &display, wanted, has_tools)?;
        let special_tokens = SPECIAL_TOKENS
            .iter()
            .filter_map(|key| {
                let value = match config.get(*key)? {
                    Json::String(s) => s.clone(),
                    // An AddedToken: transformers passes `str(token)`, its content.
                    Json::Object(token) => token.get("content")?.as_str()?.to_owned(),
                    _ => return None,
                };
                Some((key.to_string(), Json::String(value)))
            })
            .collect();
        Ok(ChatTemplate {
            path: path.to_path_buf(),
            display,
            source,
            template_name,
            special_tokens,
        })
    }

    /// The chat template a llama.cpp model file carries (`tokenizer.chat_template`), with
    /// its special tokens' texts.
    fn from_gguf(path: &Path, display: String) -> Result<ChatTemplate> {
        let meta = crate::tokenize::gguf::Metadata::read(path)
            .map_err(|e| Error::input(format!("{display}: {e}")))?;
        let source = meta
            .chat_template()
            .ok_or_else(|| {
                Error::input_with_help(
                    format!("{display}: this GGUF carries no tokenizer.chat_template"),
                    "pass the model's chat template as a .jinja file or tokenizer_config.json",
                )
            })?
            .to_owned();
        let special_tokens = [
            ("bos_token", "tokenizer.ggml.bos_token_id"),
            ("eos_token", "tokenizer.ggml.eos_token_id"),
            ("unk_token", "tokenizer.ggml.unknown_token_id"),
            ("sep_token", "tokenizer.ggml.seperator_token_id"),
            ("pad_token", "tokenizer.ggml.padding_token_id"),
        ]
        .iter()
        .filter_map(|(name, key)| {
            Some((name.to_string(), Json::String(meta.token(key)?.to_owned())))
        })
        .collect();
        Ok(ChatTemplate {
            path: path.to_path_buf(),
            display,
            source,
            template_name: None,
            special_tokens,
        })
    }

    /// A renderer in transformers' dialect with this template prepared in it.
    pub fn renderer(&self) -> Result<(Renderer, Prepared)> {
        self.renderer_with(crate::render::Limits::default())
    }

    /// [`Self::renderer`] under other sandbox limits.
    pub fn renderer_with(&self, limits: crate::render::Limits) -> Result<(Renderer, Prepared)> {
        let root = self
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        let mut settings = RenderSettings::new(Dialect::Transformers, root);
        settings.limits = limits;
        let mut renderer = Renderer::new(settings)?;
        let prepared = renderer.prepare(&self.display, &self.source)?;
        Ok((renderer, prepared))
    }
}

fn pick_template(
    config: &Map<String, Json>,
    display: &str,
    wanted: Option<&str>,
    has_tools: bool,
) -> Result<(String, Option<String>)> {
    match config.get("chat_template") {
        Some(Json::String(template)) => match wanted {
            Some(name) => Err(Error::input_with_help(
                format!("{display}: --template-name `{name}` given, but chat_template is a single template"),
                "drop --template-name",
            )),
            None => Ok((template.clone(), None)),
        },
        Some(Json::Array(list)) => {
            let named: Vec<(&str, &str)> = list
                .iter()
                .filter_map(|item| {
                    Some((
                        item.get("name")?.as_str()?,
                        item.get("template")?.as_str()?,
                    ))
                })
                .collect();
            let names = || {
                named
                    .iter()
                    .map(|(n, _)| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let choice = match wanted {
                Some(name) => named.iter().find(|(n, _)| *n == name).ok_or_else(|| {
                    Error::input_with_help(
                        format!("{display}: no chat template named `{name}`"),
                        format!("its templates are {}", names()),
                    )
                })?,
                None => named
                    .iter()
                    .find(|(n, _)| has_tools && *n == "tool_use")
                    .or_else(|| named.iter().find(|(n, _)| *n == "default"))
                    .ok_or_else(|| {
                        Error::input_with_help(
                            format!("{display}: several chat templates and none is named `default`"),
                            format!("pick one with --template-name: {}", names()),
                        )
                    })?,
            };
            Ok((choice.1.to_owned(), Some(choice.0.to_owned())))
        }
        _ => Err(Error::input_with_help(
            format!("{display}: no `chat_template` string or list of {{name, template}} in this tokenizer config"),
            "pass the model's tokenizer_config.json, or its chat template as a .jinja file",
        )),
    }
}

/// A chat request: `messages`, optional `tools`, `add_generation_prompt` (default true), and
/// any other keys, which reach the template as variables (`apply_chat_template(**kwargs)`).
#[derive(Debug, Clone, Default)]
pub struct ChatRequest {
    pub messages: Vec<Json>,
    pub tools: Option<Json>,
    pub add_generation_prompt: bool,
    pub variables: Map<String, Json>,
}

impl ChatRequest {
    pub fn load(path: &Path) -> Result<ChatRequest> {
        let display = source::display_path(path);
        let text = source::read_text(path, &display)?;
        ChatRequest::parse(&text, &display)
    }

    /// A request file's text (`display` names it in errors).
    pub fn parse(text: &str, display: &str) -> Result<ChatRequest> {
        let text = text.to_owned();
        let display = display.to_owned();
        let map: Map<String, Json> = serde_yaml_ng::from_str(&text).map_err(|e| {
            yaml_error(
                &e,
                &text,
                &display,
                "a chat request must be a YAML mapping with `messages`",
            )
        })?;
        ChatRequest::from_map(map, &display)
    }

    pub fn from_map(mut map: Map<String, Json>, display: &str) -> Result<ChatRequest> {
        let messages = match map.remove("messages") {
            Some(Json::Array(messages)) => messages,
            _ => {
                return Err(Error::input_with_help(
                    format!("{display}: `messages` must be a list of {{role, content}} mappings"),
                    "write e.g.\nmessages:\n  - role: user\n    content: Hello",
                ))
            }
        };
        if let Some(i) = messages.iter().position(|m| !m.is_object()) {
            return Err(Error::input(format!(
                "{display}: message {} is not a mapping of role, content, …",
                i + 1
            )));
        }
        let tools = map.remove("tools").filter(|t| !t.is_null());
        let add_generation_prompt = match map.remove("add_generation_prompt") {
            None => true,
            Some(Json::Bool(b)) => b,
            Some(other) => {
                return Err(Error::input(format!(
                    "{display}: add_generation_prompt must be true or false, not {other}"
                )))
            }
        };
        Ok(ChatRequest {
            messages,
            tools,
            add_generation_prompt,
            variables: map,
        })
    }

    /// The first `turns` messages, ending without a generation prompt: an earlier request of
    /// the same conversation.
    pub fn truncated(&self, turns: usize) -> ChatRequest {
        ChatRequest {
            messages: self.messages[..turns.min(self.messages.len())].to_vec(),
            tools: self.tools.clone(),
            add_generation_prompt: false,
            variables: self.variables.clone(),
        }
    }
}

/// The variables transformers' `render_jinja_template` hands the template, in its order:
/// messages (None-valued keys dropped, reasoning aliased), tools, documents,
/// add_generation_prompt, then the special tokens, overridden by the request's own keys.
pub fn context(template: &ChatTemplate, request: &ChatRequest) -> Value {
    context_of(
        template,
        &request.messages,
        request.tools.as_ref(),
        request.add_generation_prompt,
        &request.variables,
    )
}

/// [`context`] from borrowed parts, built straight into template values: the same values
/// its serde serialization makes of the JSON, without copying the messages first.
pub fn context_of(
    template: &ChatTemplate,
    messages: &[Json],
    tools: Option<&Json>,
    add_generation_prompt: bool,
    variables: &Map<String, Json>,
) -> Value {
    context_of_values(
        template,
        messages.iter().map(message_value).collect(),
        tools.map_or_else(|| Value::from(()), json_value),
        add_generation_prompt,
        variables,
    )
}

/// [`context_of`] with the messages' values ([`message_value`]) and the tools' value
/// ([`json_value`], `none` without tools) already made: a logged session's next request
/// takes over those of the messages it repeats.
pub fn context_of_values(
    template: &ChatTemplate,
    messages: Vec<Value>,
    tools: Value,
    add_generation_prompt: bool,
    variables: &Map<String, Json>,
) -> Value {
    Value::from(context_map(
        template,
        Value::from(messages),
        tools,
        add_generation_prompt,
        variables,
    ))
}

fn context_map(
    template: &ChatTemplate,
    messages: Value,
    tools: Value,
    add_generation_prompt: bool,
    variables: &Map<String, Json>,
) -> IndexMap<Value, Value> {
    let mut context = IndexMap::with_capacity(4 + template.special_tokens.len() + variables.len());
    context.insert(Value::from("messages"), messages);
    context.insert(Value::from("tools"), tools);
    context.insert(Value::from("documents"), Value::from(()));
    context.insert(
        Value::from("add_generation_prompt"),
        Value::from(add_generation_prompt),
    );
    for (key, value) in template.special_tokens.iter().chain(variables) {
        context.insert(Value::from(key.as_str()), json_value(value));
    }
    context
}

/// [`context_of_values`]' context less its messages and tools, made once for the many
/// requests one template and its variables render: each context is then a copy with the
/// messages and tools put in (no hashing of the keys, no values made of the variables).
#[derive(Clone)]
pub struct ContextBase {
    map: IndexMap<Value, Value>,
    /// A special token or variable named `messages` or `tools`: its value stands there, as
    /// in [`context_of_values`], where it is inserted after them.
    named: [bool; 2],
}

impl ContextBase {
    pub fn new(
        template: &ChatTemplate,
        add_generation_prompt: bool,
        variables: &Map<String, Json>,
    ) -> ContextBase {
        let named = ["messages", "tools"]
            .map(|key| template.special_tokens.contains_key(key) || variables.contains_key(key));
        let none = || Value::from(());
        ContextBase {
            map: context_map(template, none(), none(), add_generation_prompt, variables),
            named,
        }
    }

    /// The same context as [`context_of_values`] with this base's template and variables.
    pub fn context(&self, messages: Vec<Value>, tools: Value) -> Value {
        let mut map = self.map.clone();
        // `messages` and `tools` are the first two keys (`context_map`).
        for (i, value) in [Value::from(messages), tools].into_iter().enumerate() {
            if !self.named[i] {
                map[i] = value;
            }
        }
        Value::from(map)
    }
}

impl ContextBase {
    /// The variables besides `messages` and tools, in the context's order, for a native
    /// renderer (`native::Variables`); `None` where a variable takes the place of the
    /// messages or tools.
    pub fn variables(&self) -> Option<Vec<(String, Value)>> {
        if self.named.iter().any(|&named| named) {
            return None;
        }
        self.map
            .iter()
            .skip(2)
            .map(|(key, value)| Some((key.as_str()?.to_owned(), value.clone())))
            .collect()
    }
}

/// A JSON value as its serde serialization makes it (maps keep their order).
pub fn json_value(json: &Json) -> Value {
    match json {
        Json::Null => Value::from(()),
        Json::Bool(b) => Value::from(*b),
        Json::Number(n) => {
            if let Some(u) = n.as_u64() {
                Value::from(u)
            } else if let Some(i) = n.as_i64() {
                Value::from(i)
            } else {
                Value::from(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Json::String(s) => Value::from(s.as_str()),
        Json::Array(items) => Value::from(items.iter().map(json_value).collect::<Vec<_>>()),
        Json::Object(map) => Value::from(
            map.iter()
                .map(|(k, v)| (Value::from(k.as_str()), json_value(v)))
                .collect::<IndexMap<Value, Value>>(),
        ),
    }
}

/// [`normalize_message`] straight into a template value.
pub fn message_value(message: &Json) -> Value {
    let Some(object) = message.as_object() else {
        return json_value(message);
    };
    let kept = object
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (Value::from(k.as_str()), json_value(v)));
    // A look along the few keys, not a hashed lookup of each name (SipHash cost more).
    let named = |key: &str| {
        object
            .iter()
            .find(|(k, _)| k.as_str() == key)
            .map(|(_, v)| v)
            .filter(|v| !v.is_null())
    };
    let reasoning = ["reasoning_content", "thinking", "reasoning"]
        .iter()
        .find_map(|key| named(key));
    let map: IndexMap<Value, Value> = match reasoning {
        None => kept.collect(),
        Some(reasoning) => {
            let reasoning = json_value(reasoning);
            // Later inserts of a present key keep its place, as in `normalize_message`.
            let mut map = IndexMap::with_capacity(object.len() + 2);
            map.insert(Value::from("thinking"), reasoning.clone());
            map.extend(kept);
            map.insert(Value::from("reasoning_content"), reasoning);
            map
        }
    };
    Value::from(map)
}

/// Renders a request through a chat template under `clock`.
pub fn render_request(
    renderer: &Renderer,
    prepared: &Prepared,
    template: &ChatTemplate,
    request: &ChatRequest,
    clock: Clock,
) -> Result<Render> {
    renderer.render(prepared, &context(template, request), clock)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_context_from_the_base_is_the_whole_context() {
        let template =
            ChatTemplate::from_source(ChatTemplateSource::Embedded, None, false).unwrap();
        let messages = || vec![message_value(&json!({"role": "user", "content": "hi"}))];
        let tools = || json_value(&json!([{"type": "function"}]));
        let shown = |v: &Value| format!("{v:?}");
        for variables in [
            json!({}),
            json!({"enable_thinking": false, "bos_token": "<s>"}),
            // Variables named as the messages or tools stand, as they are inserted after.
            json!({"messages": "mine", "x": 1}),
            json!({"tools": null}),
        ] {
            let variables = variables.as_object().unwrap().clone();
            for generation in [true, false] {
                let base = ContextBase::new(&template, generation, &variables);
                for tools in [tools(), Value::from(())] {
                    let whole = context_of_values(
                        &template,
                        messages(),
                        tools.clone(),
                        generation,
                        &variables,
                    );
                    let made = base.context(messages(), tools);
                    assert_eq!(shown(&made), shown(&whole));
                }
            }
        }
    }

    #[test]
    fn messages_drop_none_and_alias_reasoning_like_transformers() {
        let m = json!({"role": "assistant", "content": "ok", "tool_calls": null, "reasoning": "r"});
        let out = message_value(&m);
        let keys: Vec<String> = out.try_iter().unwrap().map(|k| k.to_string()).collect();
        assert_eq!(
            keys,
            [
                "thinking",
                "role",
                "content",
                "reasoning",
                "reasoning_content"
            ]
        );
        assert_eq!(out.get_attr("thinking").unwrap().as_str(), Some("r"));
        assert_eq!(
            out.get_attr("reasoning_content").unwrap().as_str(),
            Some("r")
        );
        // A present alias keeps its place and its own value, as transformers' dict does.
        let m = json!({"role": "assistant", "thinking": "t", "reasoning_content": "c"});
        let keys: Vec<String> = message_value(&m)
            .try_iter()
            .unwrap()
            .map(|k| k.to_string())
            .collect();
        assert_eq!(keys, ["thinking", "role", "reasoning_content"]);
    }

    #[test]
    fn context_values_are_what_serde_makes_of_the_json() {
        let json = json!({"a": [1, -2, 3.5, 18446744073709551615u64, null, true],
                          "z": {"y": "s", "b": {}}, "m": []});
        assert_eq!(
            format!("{:?}", json_value(&json)),
            format!("{:?}", Value::from(minijinja::value::Serde(&json)))
        );
    }

    #[test]
    fn named_templates_pick_tool_use_with_tools_else_default() {
        let config: Map<String, Json> = serde_json::from_value(json!({"chat_template": [
            {"name": "default", "template": "D"}, {"name": "tool_use", "template": "T"}
        ]}))
        .unwrap();
        let pick = |wanted, tools| pick_template(&config, "c.json", wanted, tools).unwrap().0;
        assert_eq!(pick(None, false), "D");
        assert_eq!(pick(None, true), "T");
        assert_eq!(pick(Some("default"), true), "D");
        assert!(pick_template(&config, "c.json", Some("x"), false).is_err());
    }

    #[test]
    fn request_keys_become_variables_and_generation_prompt_defaults_on() {
        let map: Map<String, Json> = serde_json::from_value(json!({
            "messages": [{"role": "user", "content": "hi"}],
            "date_string": "26 Jul 2024"
        }))
        .unwrap();
        let request = ChatRequest::from_map(map, "r.yaml").unwrap();
        assert!(request.add_generation_prompt);
        assert_eq!(request.variables["date_string"], "26 Jul 2024");
        assert!(ChatRequest::from_map(Map::new(), "r.yaml").is_err());
    }
}
