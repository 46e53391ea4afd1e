//! The request as the server's chat template sees it, per engine.
//!
//! A server does not hand the logged JSON to its chat template: it parses the request into
//! its own message model first and builds the template's `messages` and `tools` from that.
//! The rules below are what each engine's model does, each with its source; the llama.cpp
//! ones are also checked against the real server's `/apply-template` (tests/heavy/audit_agents.rs).
//!
//! | engine | rule | source |
//! | --- | --- | --- |
//! | llama.cpp | text parts joined with "\n", other parts dropped | `common/chat.cpp` `common_chat_msgs_to_json_oaicompat` (`concat_typed_text`) |
//! | llama.cpp | no text: `""` (null beside tool calls, which its template engine renders as empty text: given as `""` here, the same text on `/apply-template`) | same function |
//! | llama.cpp | only `role`, `content`, `reasoning_content`, `name`, `tool_call_id`, `tool_calls` kept | `common_chat_msgs_parse_oaicompat` |
//! | llama.cpp | a non-assistant message without `content` is rejected | same (`"All non-assistant messages must contain 'content'"`) |
//! | llama.cpp | tool call: `{"type": "function", "function": {"name", "arguments"}, "id"}`, `arguments` parsed as JSON | `common_chat_msgs_to_json_oaicompat`; the parse is the template's object-arguments path, seen on `/apply-template` |
//! | llama.cpp | tool: `{"type": "function", "function": {"name", "description" ("" if missing), "parameters" ({} if missing)}}`, nothing else kept (`strict` dropped) | `common_chat_tools_parse_oaicompat`, `common_chat_tools_to_json_oaicompat` |
//! | vLLM | text parts joined with "\n"; no content: `""` | `vllm/entrypoints/chat_utils.py` `_parse_chat_message_content`, `_parse_chat_message_content_parts` |
//! | vLLM | only `role`, `content`, `tool_calls` (assistant), `reasoning`+`reasoning_content` (assistant), `tool_call_id` (tool), `name` kept | `_parse_chat_message_content` |
//! | vLLM | tool-call `arguments` parsed with `json.loads`; empty ones become `{}`; an empty `tool_calls` list dropped | `_postprocess_messages` |
//! | vLLM | tools: `tool.model_dump()` of the request model (`type`, `function` {`name`, `description`, `parameters`}, missing ones null, extra keys kept after them) | `vllm/entrypoints/openai/serving_chat.py`, `protocol.py` `ChatCompletionToolsParam`/`FunctionDefinition` (`extra="allow"`) |
//! | anthropic (the Messages API, Bedrock Converse with Claude) | no chat template: the prompt is the API's cache prefix order, tools, then system, then messages, each block canonical JSON (keys sorted) or text; system messages first; only `role`, `content`, `tool_calls` (arguments parsed), `tool_call_id`, `name` kept (a `cache_control` marker is no prompt text) | platform.claude.com/docs/en/build-with-claude/prompt-caching ("cache prefixes are created in the following order: tools, system, then messages"); the tokens stay approximate, the tokenizer is not public |
//! | others, hosted | the request as sent; text parts joined with "" and no content `""` (their tokenization is not public; OpenAI documents messages and tools as part of the cached prefix) | platform.openai.com/docs/guides/prompt-caching |
//!
//! Numbers in parsed arguments come back as the engine prints them (`1.50` → `1.5`), which
//! serde_json does the same way for the values agents send.

use super::input::{Message, RequestBody};
use crate::cache_profile::{CacheProfile, CacheProfileKind};
use serde_json::{json, Map, Value as Json};
use std::sync::Arc;

/// Whose request model a logged request goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerView {
    LlamaCpp,
    Vllm,
    /// Anthropic (and Claude on Bedrock): the prompt is the request serialized in the API's
    /// cache order ([`cache_order_text`]), not a chat template's rendering.
    ApiCacheOrder,
    /// Hosted APIs and engines whose request model is not modelled: as sent.
    AsSent,
}

impl ServerView {
    pub fn of(profile: &CacheProfile) -> ServerView {
        match profile.kind {
            CacheProfileKind::LlamaCpp => ServerView::LlamaCpp,
            CacheProfileKind::Vllm => ServerView::Vllm,
            CacheProfileKind::Anthropic => ServerView::ApiCacheOrder,
            _ => ServerView::AsSent,
        }
    }

    /// The body the chat template renders, or why the server would refuse the request.
    pub fn apply(self, body: &RequestBody) -> Result<RequestBody, String> {
        if body.prompt.is_some() {
            return Ok(body.clone());
        }
        if body.raw_messages.is_some() {
            return self.apply_owned(body.clone());
        }
        let messages = body
            .messages
            .iter()
            .enumerate()
            .map(|(i, m)| {
                self.message(m).map(Arc::new).map_err(|why| {
                    let place = body
                        .message_paths
                        .get(i)
                        .map_or("a message", String::as_str);
                    format!("{place}: {why}")
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let tools = match body.tools.as_deref() {
            Some(Json::Array(list)) => Some(Arc::new(Json::Array(
                list.iter()
                    .map(|t| self.tool(t))
                    .collect::<Result<_, _>>()?,
            ))),
            _ => body.tools.clone(),
        };
        let mut message_paths = body.message_paths.clone();
        let mut messages = messages;
        if self == ServerView::ApiCacheOrder {
            // The API caches the system prompt before every message: system (and developer)
            // messages of a chat-completions body go first, as its OpenAI-compatible
            // endpoint hoists them.
            let is_system = |m: &Json| {
                matches!(
                    m.get("role").and_then(Json::as_str),
                    Some("system" | "developer")
                )
            };
            let mut paired: Vec<(Message, String)> = messages
                .into_iter()
                .zip(
                    message_paths
                        .into_iter()
                        .chain(std::iter::repeat_with(String::new)),
                )
                .collect();
            paired.sort_by_key(|(m, _)| !is_system(m));
            (messages, message_paths) = paired.into_iter().unzip();
        }
        Ok(RequestBody {
            messages,
            message_paths,
            tools,
            prompt: None,
            raw_messages: None,
            raw_tools: None,
        })
    }

    /// The prompt text this view builds itself, where it uses no chat template: a chat
    /// body's server view in the API's cache order (`None`: the chat template renders it).
    pub fn own_text(self, body: &RequestBody) -> Option<String> {
        (self == ServerView::ApiCacheOrder && body.prompt.is_none()).then(|| cache_order_text(body))
    }

    /// [`Self::apply`] taking the logged body over: llama.cpp's view moves the texts and
    /// tools it keeps instead of copying them (the same result).
    pub fn apply_owned(self, body: RequestBody) -> Result<RequestBody, String> {
        if body.prompt.is_some() {
            return Ok(body);
        }
        if body.raw_messages.is_some() {
            return self.apply_sharing(body, None);
        }
        if !matches!(self, ServerView::LlamaCpp | ServerView::Vllm) {
            return self.apply(&body);
        }
        let RequestBody {
            messages,
            message_paths,
            tools,
            prompt,
            raw_messages: _,
            raw_tools: _,
        } = body;
        let messages = messages
            .into_iter()
            .enumerate()
            .map(|(i, m)| {
                self.owned_message(Arc::unwrap_or_clone(m))
                    .map(Arc::new)
                    .map_err(|why| {
                        let place = message_paths.get(i).map_or("a message", String::as_str);
                        format!("{place}: {why}")
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RequestBody {
            messages,
            message_paths,
            tools: self.owned_tools(tools)?,
            prompt,
            raw_messages: None,
            raw_tools: None,
        })
    }

    /// [`Self::apply_owned`] of a body as read, taking over from `earlier` (the session's
    /// previous request, built here) the messages whose logged text it repeats at the same
    /// place: a message's view is made from its text alone, so the same text gives the same
    /// messages. Only the others are parsed ([`super::raw_messages`]).
    pub fn apply_sharing(
        self,
        mut body: RequestBody,
        earlier: Option<&RequestBody>,
    ) -> Result<RequestBody, String> {
        let Some(mut raw) = body.raw_messages.take() else {
            return self.apply_owned(body);
        };
        let raw_tools = body.raw_tools.take();
        let parse = |i: usize| -> Result<Vec<Json>, String> {
            let message =
                serde_json::from_str(raw.message(i)).map_err(|e| format!("messages[{i}]: {e}"))?;
            Ok(super::input::logged_message(message))
        };
        if self == ServerView::ApiCacheOrder || body.prompt.is_some() {
            // Its order moves system messages first: parsed whole, nothing shared.
            for i in 0..raw.len() {
                for m in parse(i)? {
                    body.messages.push(Arc::new(m));
                    body.message_paths.push(super::input::message_path(i));
                }
            }
            if let Some(text) = &raw_tools {
                body.tools = logged_tools(text)?;
            }
            let mut viewed = self.apply(&body)?;
            viewed.raw_tools = raw_tools;
            return Ok(viewed);
        }
        let prior = earlier.and_then(|e| {
            let raw = e.raw_messages.as_ref()?;
            Some((&e.messages, raw))
        });
        let RequestBody {
            messages: before,
            message_paths: mut paths,
            tools,
            prompt,
            raw_messages: _,
            raw_tools: _,
        } = body;
        let mut messages = Vec::with_capacity(before.len() + raw.len());
        for (i, m) in before.into_iter().enumerate() {
            let viewed = self.viewed(Arc::unwrap_or_clone(m)).map_err(|why| {
                let place = paths.get(i).map_or("a message", String::as_str);
                format!("{place}: {why}")
            })?;
            messages.push(Arc::new(viewed));
        }
        let mut first = Vec::with_capacity(raw.len() + 1);
        let mut taken_over = 0;
        for i in 0..raw.len() {
            first.push(messages.len());
            let path = super::input::message_path(i);
            let shared = prior.and_then(|(built, p)| {
                let same = i < p.len() && p.message(i) == raw.message(i);
                same.then(|| built.get(p.built(i)?)).flatten()
            });
            if let Some(shared) = shared {
                taken_over += 1;
                for m in shared {
                    messages.push(m.clone());
                    paths.push(path.clone());
                }
                continue;
            }
            for m in parse(i)? {
                let viewed = self.viewed(m).map_err(|why| format!("{path}: {why}"))?;
                messages.push(Arc::new(viewed));
                paths.push(path.clone());
            }
        }
        first.push(messages.len());
        tracing::info!(target: crate::profile::STAGE, taken_over = taken_over as u64, parsed = (raw.len() - taken_over) as u64);
        raw.first = first;
        // Tools kept as text: the earlier request's in this view where it sent the same text
        // (a view is made from the text alone), else this thread's last of that text, else
        // parsed.
        let tools = match &raw_tools {
            Some(text) => match earlier.filter(|e| e.raw_tools.as_ref() == Some(text)) {
                Some(e) => e.tools.clone(),
                None => self.tools_of_text(text)?,
            },
            None => self.owned_tools(tools)?,
        };
        Ok(RequestBody {
            messages,
            message_paths: paths,
            tools,
            prompt,
            raw_messages: Some(raw),
            raw_tools,
        })
    }

    /// The tools of a body's logged `tools` text in this view: the ones this thread made last
    /// where the text is the same (sessions of one deployment send the same tools).
    fn tools_of_text(self, text: &str) -> Result<Option<Arc<Json>>, String> {
        type Last = Option<(ServerView, Box<str>, Option<Arc<Json>>)>;
        thread_local! {
            static LAST: std::cell::RefCell<Last> = const { std::cell::RefCell::new(None) };
        }
        LAST.with(|last| {
            if let Some((view, last_text, tools)) = &*last.borrow() {
                if *view == self && **last_text == *text {
                    return Ok(tools.clone());
                }
            }
            let tools = self.owned_tools(logged_tools(text)?)?;
            *last.borrow_mut() = Some((self, text.into(), tools.clone()));
            Ok(tools)
        })
    }

    /// One message in the server's view, taken over ([`Self::owned_message`] where the view
    /// has it).
    fn viewed(self, message: Json) -> Result<Json, String> {
        match self {
            ServerView::LlamaCpp | ServerView::Vllm => self.owned_message(message),
            _ => self.message(&message),
        }
    }

    /// The tools in the server's view, taken over.
    fn owned_tools(self, tools: Option<Arc<Json>>) -> Result<Option<Arc<Json>>, String> {
        let Some(tools) = tools else {
            return Ok(None);
        };
        if !tools.is_array() {
            return Ok(Some(tools));
        }
        let list = match Arc::unwrap_or_clone(tools) {
            Json::Array(list) => list,
            other => return Ok(Some(Arc::new(other))),
        };
        let list = list
            .into_iter()
            .map(|tool| match self {
                ServerView::LlamaCpp => llama_cpp_tool(tool),
                ServerView::Vllm => vllm_tool(tool),
                _ => self.tool(&tool),
            })
            .collect::<Result<_, _>>()?;
        Ok(Some(Arc::new(Json::Array(list))))
    }

    /// [`Self::message`] for llama.cpp and vLLM, moving the kept texts out of `message` where
    /// it has no tool calls (nor, for vLLM, reasoning); those, and anything unusual, go
    /// through [`Self::message`].
    fn owned_message(self, message: Json) -> Result<Json, String> {
        let Json::Object(mut object) = message else {
            return self.message(&message);
        };
        // Most messages are `{"role": …, "content": …}` texts, which both views keep as they
        // are: seen without a lookup.
        if keys_are(&object, &["role", "content"]) && object.values().all(Json::is_string) {
            return Ok(Json::Object(object));
        }
        let role = match object.get("role") {
            Some(Json::String(role)) => role.as_str(),
            _ => return self.message(&Json::Object(object)),
        };
        let no_calls = object
            .get("tool_calls")
            .and_then(Json::as_array)
            .is_none_or(|calls| calls.is_empty());
        let plain = matches!(object.get("content"), Some(Json::String(_)))
            && match self {
                ServerView::LlamaCpp => no_calls,
                _ => {
                    role != "assistant"
                        || (no_calls && object.get("reasoning").is_none_or(Json::is_null))
                }
            };
        if !plain {
            return self.message(&Json::Object(object));
        }
        let is_tool = role == "tool";
        let mut out = Map::new();
        for key in ["role", "content"] {
            let value = object.remove(key).expect("checked above");
            out.insert(key.into(), value);
        }
        let text = |v: &Json| v.as_str().is_some_and(|s| !s.is_empty());
        match self {
            ServerView::LlamaCpp => {
                for key in ["reasoning_content", "name", "tool_call_id"] {
                    if let Some(v) = object.remove(key).filter(text) {
                        out.insert(key.into(), v);
                    }
                }
            }
            _ => {
                if let Some(id) = object.remove("tool_call_id").filter(|_| is_tool) {
                    out.insert("tool_call_id".into(), id);
                }
                if let Some(name) = object.remove("name").filter(text) {
                    out.insert("name".into(), name);
                }
            }
        }
        Ok(Json::Object(out))
    }

    /// One message in the server's view.
    pub fn message(self, message: &Json) -> Result<Json, String> {
        let Some(object) = message.as_object() else {
            return Err("a message is not a JSON object".into());
        };
        let role = object
            .get("role")
            .and_then(Json::as_str)
            .ok_or("a message without a `role`")?;
        let calls = object
            .get("tool_calls")
            .and_then(Json::as_array)
            .filter(|c| !c.is_empty());
        let text = match object.get("content") {
            None | Some(Json::Null) => {
                if self == ServerView::LlamaCpp && role != "assistant" {
                    return Err(format!(
                        "a {role} message without `content` (llama.cpp refuses it: \"All non-assistant messages must contain 'content'\")"
                    ));
                }
                None
            }
            Some(Json::String(s)) => Some(s.clone()),
            Some(Json::Array(parts)) => Some(self.join_parts(parts)),
            Some(other) => {
                return Err(format!(
                    "`content` is neither text nor a list of parts: {}",
                    crate::fmt::shorten(&other.to_string())
                ))
            }
        };
        let mut out = Map::new();
        out.insert("role".into(), json!(role));
        match self {
            ServerView::LlamaCpp => {
                out.insert("content".into(), json!(text.unwrap_or_default()));
                copy_text(object, &mut out, "reasoning_content");
                copy_text(object, &mut out, "name");
                copy_text(object, &mut out, "tool_call_id");
                if let Some(calls) = calls {
                    let calls = calls
                        .iter()
                        .map(|c| {
                            let f = c.get("function").unwrap_or(c);
                            let mut call = Map::new();
                            call.insert("type".into(), json!("function"));
                            call.insert(
                                "function".into(),
                                json!({"name": f.get("name").cloned().unwrap_or(json!("")),
                                       "arguments": parsed_arguments(f.get("arguments"), false)?}),
                            );
                            if let Some(id) = c
                                .get("id")
                                .filter(|i| i.as_str().is_some_and(|s| !s.is_empty()))
                            {
                                call.insert("id".into(), id.clone());
                            }
                            Ok(Json::Object(call))
                        })
                        .collect::<Result<Vec<_>, String>>()?;
                    out.insert("tool_calls".into(), Json::Array(calls));
                }
            }
            ServerView::Vllm => {
                out.insert("content".into(), json!(text.unwrap_or_default()));
                if role == "assistant" {
                    if let Some(calls) = object.get("tool_calls").and_then(Json::as_array) {
                        if !calls.is_empty() {
                            let calls = calls
                                .iter()
                                .map(|c| {
                                    let mut c = c.clone();
                                    if let Some(f) =
                                        c.get_mut("function").and_then(Json::as_object_mut)
                                    {
                                        let parsed = parsed_arguments(f.get("arguments"), true)?;
                                        f.insert("arguments".into(), parsed);
                                    }
                                    Ok(c)
                                })
                                .collect::<Result<Vec<_>, String>>()?;
                            out.insert("tool_calls".into(), Json::Array(calls));
                        }
                    }
                    if let Some(r) = object.get("reasoning").filter(|r| !r.is_null()) {
                        out.insert("reasoning".into(), r.clone());
                        out.insert("reasoning_content".into(), r.clone());
                    }
                }
                if role == "tool" {
                    if let Some(id) = object.get("tool_call_id") {
                        out.insert("tool_call_id".into(), id.clone());
                    }
                }
                copy_text(object, &mut out, "name");
            }
            ServerView::ApiCacheOrder => {
                out.insert("content".into(), json!(text.unwrap_or_default()));
                if let Some(calls) = calls {
                    let calls = calls
                        .iter()
                        .map(|c| {
                            let mut c = c.clone();
                            if let Some(f) = c.get_mut("function").and_then(Json::as_object_mut) {
                                let parsed = parsed_arguments(f.get("arguments"), true)?;
                                f.insert("arguments".into(), parsed);
                            }
                            Ok(keys_sorted(&c))
                        })
                        .collect::<Result<Vec<_>, String>>()?;
                    out.insert("tool_calls".into(), Json::Array(calls));
                }
                copy_text(object, &mut out, "tool_call_id");
                copy_text(object, &mut out, "name");
            }
            ServerView::AsSent => {
                let mut all = object.clone();
                all.insert("content".into(), json!(text.unwrap_or_default()));
                return Ok(Json::Object(all));
            }
        }
        Ok(Json::Object(out))
    }

    fn join_parts(self, parts: &[Json]) -> String {
        let texts = parts.iter().filter_map(|p| match p {
            Json::String(s) => Some(s.as_str()),
            Json::Object(part) => {
                let kind = part.get("type").and_then(Json::as_str).unwrap_or("text");
                let text_kind = matches!(kind, "text" | "input_text" | "output_text")
                    || (self == ServerView::Vllm && matches!(kind, "refusal" | "thinking"));
                text_kind
                    .then(|| part.get("text").and_then(Json::as_str))
                    .flatten()
            }
            _ => None,
        });
        let separator = match self {
            ServerView::LlamaCpp | ServerView::Vllm => "\n",
            ServerView::ApiCacheOrder | ServerView::AsSent => "",
        };
        texts.collect::<Vec<_>>().join(separator)
    }

    fn tool(self, tool: &Json) -> Result<Json, String> {
        let function = tool.get("function").unwrap_or(tool);
        let name = function
            .get("name")
            .cloned()
            .ok_or("a tool without a `name`")?;
        match self {
            ServerView::LlamaCpp => Ok(json!({"type": "function", "function": {
                "name": name,
                "description": function.get("description").filter(|d| !d.is_null()).cloned().unwrap_or(json!("")),
                "parameters": function.get("parameters").filter(|p| !p.is_null()).cloned().unwrap_or(json!({})),
            }})),
            ServerView::Vllm => {
                let mut f = Map::new();
                f.insert("name".into(), name);
                for key in ["description", "parameters"] {
                    f.insert(key.into(), function.get(key).cloned().unwrap_or(Json::Null));
                }
                if let Some(extra) = function.as_object() {
                    for (k, v) in extra {
                        f.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                }
                let mut t = Map::new();
                t.insert("type".into(), json!("function"));
                t.insert("function".into(), Json::Object(f));
                if let Some(extra) = tool.as_object() {
                    for (k, v) in extra {
                        t.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                }
                Ok(Json::Object(t))
            }
            ServerView::ApiCacheOrder => Ok(keys_sorted(tool)),
            ServerView::AsSent => Ok(tool.clone()),
        }
    }
}

/// The tools of a body's logged `tools` text (validated when the log was read).
fn logged_tools(text: &str) -> Result<Option<Arc<Json>>, String> {
    let tools = serde_json::from_str(text).map_err(|e| format!("tools: {e}"))?;
    Ok(super::input::logged_tools(tools).map(Arc::new))
}

/// A chat body (in [`ServerView::ApiCacheOrder`]) as the API's cache prefix: the tools, then
/// the system prompt, then the messages, each a block that ends its line, so a request that
/// adds messages extends the earlier one's text. Anthropic's prompt-caching docs: "cache
/// prefixes are created in the following order: tools, system, then messages"
/// (platform.claude.com/docs/en/build-with-claude/prompt-caching); with a chat template's
/// order instead (Qwen3 writes the system text before the tools), tools changed under an
/// unchanged system prompt would seem to keep that system prompt cached.
pub fn cache_order_text(body: &RequestBody) -> String {
    let mut text = String::new();
    match body.tools.as_deref() {
        Some(Json::Array(tools)) if tools.is_empty() => {}
        Some(Json::Array(tools)) => {
            text.push_str("[tools]\n");
            for tool in tools {
                text.push_str(&keys_sorted(tool).to_string());
                text.push('\n');
            }
        }
        Some(other) if !other.is_null() => {
            text.push_str("[tools]\n");
            text.push_str(&keys_sorted(other).to_string());
            text.push('\n');
        }
        _ => {}
    }
    for message in &body.messages {
        let role = message.get("role").and_then(Json::as_str).unwrap_or("user");
        text.push_str(&format!("[{role}]\n"));
        if let Some(content) = message.get("content").and_then(Json::as_str) {
            text.push_str(content);
            text.push('\n');
        }
        let rest: Map<String, Json> = message
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| !matches!(k.as_str(), "role" | "content"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !rest.is_empty() {
            text.push_str(&keys_sorted(&Json::Object(rest)).to_string());
            text.push('\n');
        }
    }
    text
}

/// `value` with every object's keys sorted: the API parses the JSON it is sent, so the key
/// order a client wrote is no part of the prompt (and `breaks` compares tools by it).
pub(super) fn keys_sorted(value: &Json) -> Json {
    match value {
        Json::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Json::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), keys_sorted(&map[k])))
                    .collect(),
            )
        }
        Json::Array(list) => Json::Array(list.iter().map(keys_sorted).collect()),
        other => other.clone(),
    }
}

/// [`ServerView::tool`] for llama.cpp, moving the kept parts out of `tool`.
fn llama_cpp_tool(tool: Json) -> Result<Json, String> {
    let Json::Object(mut tool) = tool else {
        return ServerView::LlamaCpp.tool(&tool);
    };
    // Already what llama.cpp rebuilds (its keys, in its order, no null): kept.
    if keys_are(&tool, &["type", "function"])
        && tool["type"] == "function"
        && tool["function"].as_object().is_some_and(|f| {
            keys_are(f, &["name", "description", "parameters"])
                && !f["description"].is_null()
                && !f["parameters"].is_null()
        })
    {
        return Ok(Json::Object(tool));
    }
    let mut function = match tool.remove("function") {
        Some(Json::Object(function)) => function,
        Some(other) => {
            tool.insert("function".into(), other);
            return ServerView::LlamaCpp.tool(&Json::Object(tool));
        }
        None => tool,
    };
    let name = function.remove("name").ok_or("a tool without a `name`")?;
    let mut kept = |key: &str, default: Json| {
        function
            .remove(key)
            .filter(|v| !v.is_null())
            .unwrap_or(default)
    };
    Ok(json!({"type": "function", "function": {
        "name": name,
        "description": kept("description", json!("")),
        "parameters": kept("parameters", json!({})),
    }}))
}

/// [`ServerView::tool`] for vLLM, moving the parts out of `tool` (its `function`, when that
/// is an object; anything else goes through [`ServerView::tool`]).
fn vllm_tool(tool: Json) -> Result<Json, String> {
    let Json::Object(mut tool) = tool else {
        return ServerView::Vllm.tool(&tool);
    };
    // Already in the request model's shape and order (extra keys after its own): kept.
    if keys_start(&tool, &["type", "function"])
        && tool["type"] == "function"
        && tool["function"]
            .as_object()
            .is_some_and(|f| keys_start(f, &["name", "description", "parameters"]))
    {
        return Ok(Json::Object(tool));
    }
    if !matches!(tool.get("function"), Some(Json::Object(_))) {
        return ServerView::Vllm.tool(&Json::Object(tool));
    }
    let Some(Json::Object(mut function)) = tool.shift_remove("function") else {
        unreachable!("checked above")
    };
    let name = function
        .shift_remove("name")
        .ok_or("a tool without a `name`")?;
    let mut f = Map::new();
    f.insert("name".into(), name);
    for key in ["description", "parameters"] {
        let value = function.shift_remove(key).unwrap_or(Json::Null);
        f.insert(key.into(), value);
    }
    // The request model's extra keys, after its own, in their order.
    f.extend(function);
    let mut t = Map::new();
    t.insert("type".into(), json!("function"));
    t.insert("function".into(), Json::Object(f));
    tool.shift_remove("type");
    t.extend(tool);
    Ok(Json::Object(t))
}

/// Whether `map`'s keys are `keys`, in this order (read in order, without a lookup).
fn keys_are(map: &Map<String, Json>, keys: &[&str]) -> bool {
    map.len() == keys.len() && keys_start(map, keys)
}

/// Whether `map`'s first keys are `keys`, in this order.
fn keys_start(map: &Map<String, Json>, keys: &[&str]) -> bool {
    map.len() >= keys.len() && map.keys().zip(keys).all(|(k, want)| k == want)
}

fn copy_text(from: &Map<String, Json>, to: &mut Map<String, Json>, key: &str) {
    if let Some(v) = from
        .get(key)
        .filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
    {
        to.insert(key.into(), v.clone());
    }
}

/// Tool-call arguments as the engine hands them to the template: a JSON text parsed into
/// its value. `empty_is_object`: vLLM's `{}` for missing or empty arguments.
fn parsed_arguments(arguments: Option<&Json>, empty_is_object: bool) -> Result<Json, String> {
    match arguments {
        Some(Json::String(s)) if !s.is_empty() => serde_json::from_str(s).map_err(|e| {
            format!(
                "tool-call arguments are not JSON ({e}): {}",
                crate::fmt::shorten(s)
            )
        }),
        Some(Json::String(_)) | None | Some(Json::Null) => Ok(if empty_is_object {
            json!({})
        } else {
            json!("")
        }),
        Some(other) => Ok(other.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(messages: Json, tools: Option<Json>) -> RequestBody {
        let messages = messages.as_array().unwrap().clone();
        RequestBody {
            message_paths: (0..messages.len())
                .map(|i| format!("messages[{i}]"))
                .collect(),
            messages: messages.into_iter().map(Arc::new).collect(),
            tools: tools.map(Arc::new),
            prompt: None,
            raw_messages: None,
            raw_tools: None,
        }
    }

    #[test]
    fn llama_cpp_rebuilds_tools_parses_arguments_and_joins_parts() {
        let b = body(
            json!([
                {"role": "system", "content": [{"type": "text", "text": "A"}, {"type": "text", "text": "B"}]},
                {"role": "assistant", "content": null, "refusal": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{\"city\":\"M\\u00fcnchen\",\"n\":1.50}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"}
            ]),
            Some(
                json!([{"type": "function", "function": {"name": "w", "strict": true,
                "parameters": {"type": "object"}}}]),
            ),
        );
        let view = ServerView::LlamaCpp.apply(&b).unwrap();
        assert_eq!(
            *view.messages[0],
            json!({"role": "system", "content": "A\nB"})
        );
        assert_eq!(
            *view.messages[1],
            json!({"role": "assistant", "content": "", "tool_calls": [{"type": "function",
                "function": {"name": "w", "arguments": {"city": "München", "n": 1.5}}, "id": "c1"}]})
        );
        assert_eq!(
            *view.tools.unwrap(),
            json!([{"type": "function", "function": {"name": "w", "description": "",
                "parameters": {"type": "object"}}}])
        );
    }

    #[test]
    fn taking_the_body_over_gives_the_same_view() {
        let messages = json!([
            {"content": "S", "role": "system", "extra": 1},
            {"role": "user", "content": [{"type": "text", "text": "A"}], "name": ""},
            {"role": "assistant", "content": "x", "reasoning_content": "r", "tool_calls": []},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c", "content": "ok", "name": "f"}
        ]);
        let tools = json!([
            {"type": "function", "function": {"name": "f", "description": null, "strict": true}},
            {"name": "g", "parameters": {"type": "object"}}
        ]);
        let bodies = [
            body(messages.clone(), Some(tools)),
            body(
                messages,
                Some(json!([{"type": "function", "function": "broken"}])),
            ),
            body(
                json!([{"role": "user", "content": "q"}, "not an object"]),
                None,
            ),
            body(
                json!([{"role": "user", "content": "q"}]),
                Some(json!("not a list")),
            ),
            body(json!([{"role": "user"}]), None),
            // vLLM's own fields: a tool's id of any type, reasoning, a named user, extra
            // keys of a tool and of its function, and tools without a name or a function.
            body(
                json!([
                    {"role": "tool", "tool_call_id": null, "content": "r", "name": "f", "x": 1},
                    {"role": "user", "tool_call_id": "u", "content": "q", "name": ""},
                    {"role": "assistant", "content": "a", "reasoning": null, "tool_calls": null},
                    {"role": "assistant", "content": "a", "reasoning": "why"}
                ]),
                Some(json!([
                    {"function": {"parameters": {"type": "object"}, "strict": true, "name": "f"},
                     "cache": 1, "type": "custom"},
                    {"name": "g", "description": "its own function"}
                ])),
            ),
            body(
                json!([{"role": "user", "content": "q"}]),
                Some(json!([{"type": "function", "function": {"name": "f"}}, 3])),
            ),
            body(json!([{"role": 7, "content": "odd"}]), None),
            // Tools already in one view's shape (kept as they are there), or nearly.
            body(
                json!([{"role": "assistant", "content": "a"}, {"content": "b", "role": "user"}]),
                Some(json!([
                    {"type": "function", "function": {"name": "f", "description": "d",
                     "parameters": {"type": "object"}}},
                    {"type": "function", "function": {"name": "g", "description": null,
                     "parameters": {}}},
                    {"type": "function", "function": {"name": "h", "description": "d",
                     "parameters": {}, "strict": true}, "x": 1},
                    {"type": "other", "function": {"name": "i", "description": "d",
                     "parameters": {}}}
                ])),
            ),
            body(
                json!([{"role": "user", "content": "q"}]),
                Some(json!([{"type": "function", "function": {"description": "no name"}}])),
            ),
        ];
        for b in bodies {
            for view in [ServerView::LlamaCpp, ServerView::Vllm, ServerView::AsSent] {
                assert_eq!(
                    view.apply_owned(b.clone()),
                    view.apply(&b),
                    "{view:?} {b:?}"
                );
            }
        }
    }

    #[test]
    fn llama_cpp_refuses_a_user_message_without_content() {
        let b = body(json!([{"role": "user"}]), None);
        let why = ServerView::LlamaCpp.apply(&b).unwrap_err();
        assert!(
            why.starts_with("messages[0]: a user message without `content`"),
            "{why}"
        );
    }

    #[test]
    fn vllm_keeps_its_request_model_fields() {
        let b = body(
            json!([{"role": "assistant", "content": null, "reasoning": "r",
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": ""}}]}]),
            Some(json!([{"type": "function", "function": {"name": "f", "strict": true}}])),
        );
        let view = ServerView::Vllm.apply(&b).unwrap();
        assert_eq!(view.messages[0]["content"], "");
        assert_eq!(
            view.messages[0]["tool_calls"][0]["function"]["arguments"],
            json!({})
        );
        assert_eq!(view.messages[0]["reasoning_content"], "r");
        assert_eq!(
            *view.tools.unwrap(),
            json!([{"type": "function", "function": {"name": "f", "description": null,
                "parameters": null, "strict": true}}])
        );
    }

    #[test]
    fn anthropic_prompt_is_tools_then_system_then_messages_canonically() {
        let b = body(
            json!([
                {"role": "user", "content": [{"type": "text", "text": "Hi", "cache_control": {"type": "ephemeral"}}]},
                {"role": "system", "content": "S"},
                {"role": "assistant", "content": "", "tool_calls": [{"id": "t1", "type": "function",
                    "function": {"name": "f", "arguments": "{\"b\":1,\"a\":2}"}}]},
                {"role": "tool", "tool_call_id": "t1", "content": "done"}
            ]),
            Some(
                json!([{"type": "function", "function": {"parameters": {"z": 1, "a": 2}, "name": "f"}}]),
            ),
        );
        let view = ServerView::ApiCacheOrder.apply(&b).unwrap();
        assert_eq!(
            view.message_paths,
            ["messages[1]", "messages[0]", "messages[2]", "messages[3]"]
        );
        let text = ServerView::ApiCacheOrder.own_text(&view).unwrap();
        assert_eq!(
            text,
            "[tools]\n{\"function\":{\"name\":\"f\",\"parameters\":{\"a\":2,\"z\":1}},\"type\":\"function\"}\n\
             [system]\nS\n[user]\nHi\n[assistant]\n\n\
             {\"tool_calls\":[{\"function\":{\"arguments\":{\"a\":2,\"b\":1},\"name\":\"f\"},\"id\":\"t1\",\"type\":\"function\"}]}\n\
             [tool]\ndone\n{\"tool_call_id\":\"t1\"}\n"
        );
        // A request that adds a turn extends the earlier prompt.
        let mut longer = b.clone();
        longer
            .messages
            .push(Arc::new(json!({"role": "user", "content": "More"})));
        longer.message_paths.push("messages[4]".into());
        let longer = ServerView::ApiCacheOrder.apply(&longer).unwrap();
        assert!(ServerView::ApiCacheOrder
            .own_text(&longer)
            .unwrap()
            .starts_with(&text));
        // The other views leave the prompt to the chat template.
        assert_eq!(ServerView::AsSent.own_text(&view), None);
    }
}
