//! The unit of work: **the request the server sees**.
//!
//! A request is built from a template render over one sample, optionally wrapped in a
//! model's chat template (with tools and history), and tokenized the way the server
//! tokenizes it. It carries its text, its token ids with byte offsets, and its source map
//! (the render's [`SourceMap`](crate::render::instrument::SourceMap) into the renderer's
//! origin table) back to the template expressions that wrote it.
//!
//! Every path that builds requests goes through here: `check` (plain and
//! `--chat-template`), `render`, `measure` and its fleet, and the library entries the
//! request-log audit and the editor server call ([`ChatWrapper`], [`Encoding`],
//! [`load_tokenizer`], [`prepare_source`]).

use crate::analyse::{self, Analysis};
pub use crate::chat::{ChatRequest, ChatTemplate, ChatTemplateSource};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::render::clock::Clock;
use crate::render::instrument::OriginTable;
use crate::render::{Prepared, Render, Renderer};
use crate::rules::VolatileFields;
use crate::samples::{self, Samples};
use crate::source;
use crate::tokenize::{TokenEngine, TokenizerSpec, Tokens};
use serde_json::{Map, Value as Json};
use std::path::{Path, PathBuf};

/// How a request's text becomes token ids, as the server does it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// A completions prompt: the server adds its BOS (and what else the tokenizer adds).
    Prompt,
    /// A chat-templated request: the text writes its own special tokens; the server adds
    /// a BOS only where the text has none.
    Chat,
}

impl Encoding {
    pub fn encode(self, engine: &dyn TokenEngine, text: &str) -> Result<Tokens> {
        match self {
            Encoding::Prompt => engine.encode_prompt(text),
            Encoding::Chat => engine.encode_chat(text),
        }
    }

    /// [`Self::encode`] of `text` knowing an earlier text and its tokens (encoded the same
    /// way): the tokens both share up to a safe boundary are taken over. Equal to `encode`.
    pub fn encode_after(
        self,
        engine: &dyn TokenEngine,
        earlier: Option<(&str, &Tokens)>,
        text: &str,
    ) -> Result<Tokens> {
        match (self, earlier) {
            (Encoding::Chat, Some((earlier, tokens))) => {
                engine.encode_chat_after(earlier, tokens, text)
            }
            // After nothing: engines that remember the lines they encoded (a new session's
            // system prompt repeats another session's lines) take them from there.
            (Encoding::Chat, None) => engine.encode_chat_after("", &Tokens::default(), text),
            _ => self.encode(engine, text),
        }
    }

    /// Several related texts (one template's renders): the engine may share work.
    pub fn encode_all(self, engine: &dyn TokenEngine, texts: &[&str]) -> Result<Vec<Tokens>> {
        match self {
            Encoding::Prompt => engine.encode_prompts(texts),
            Encoding::Chat => texts.iter().map(|text| engine.encode_chat(text)).collect(),
        }
    }
}

/// The requests of one checked unit (one per sample): the renders with their source maps,
/// and each render's token ids with byte offsets.
pub struct Requests {
    pub renders: Vec<Render>,
    pub tokens: Vec<Tokens>,
}

impl Requests {
    /// Tokenizes renders as the server will. A completions prompt that is a hosted API's
    /// request body is read with its varying non-prompt fields after the prompt's (see
    /// [`analyse::prompt_order`]): the API caches the prompt, not the JSON text.
    pub fn tokenize(
        renders: Vec<Render>,
        engine: &dyn TokenEngine,
        encoding: Encoding,
    ) -> Result<Requests> {
        let renders = match encoding {
            Encoding::Prompt => analyse::prompt_order::prompt_fields_first(renders),
            Encoding::Chat => renders,
        };
        let texts: Vec<&str> = renders.iter().map(|r| r.text.as_str()).collect();
        let tokens = tracing::info_span!(target: crate::profile::STAGE, "tokenize")
            .in_scope(|| encoding.encode_all(engine, &texts))?;
        Ok(Requests { renders, tokens })
    }

    /// [`Self::analyse`], keeping the renders and tokens in the analysis without copies.
    pub fn into_analysis(
        self,
        engine: &dyn TokenEngine,
        origins: &OriginTable,
        template: &str,
    ) -> Result<Analysis> {
        tracing::info_span!(target: crate::profile::STAGE, "analyse").in_scope(|| {
            analyse::analyse_owned(self.renders, self.tokens, engine, origins, template)
        })
    }

    /// The numbers of these requests; `origins` is the table their source maps point into
    /// and `template` the name of the template they were rendered from.
    pub fn analyse(
        &self,
        engine: &dyn TokenEngine,
        origins: &OriginTable,
        template: &str,
    ) -> Result<Analysis> {
        tracing::info_span!(target: crate::profile::STAGE, "analyse")
            .in_scope(|| analyse::analyse(&self.renders, &self.tokens, engine, origins, template))
    }
}

/// A prepared template's requests over its samples, as a completions prompt each.
pub fn build(
    renderer: &Renderer,
    template: &Prepared,
    samples: &Samples,
    engine: &dyn TokenEngine,
) -> Result<Requests> {
    let renders = tracing::info_span!(target: crate::profile::STAGE, "render")
        .in_scope(|| render_all(renderer, template, samples))?;
    tracing::info!(target: crate::profile::STAGE, rendered_bytes = renders.iter().map(|r| r.text.len() as u64).sum::<u64>());
    Requests::tokenize(renders, engine, Encoding::Prompt)
}

/// prompt-poet's request: its template renders to a YAML list of parts, and the parts'
/// contents, in order, are what the server tokenizes. Each render becomes that text, its
/// source map moved along so every byte still names the expression that wrote it.
pub fn prompt_poet_renders(renders: Vec<Render>, name: &str) -> Result<Vec<Render>> {
    renders
        .into_iter()
        .map(|render| {
            let parts = crate::host::prompt_poet::parts(&render.text).map_err(|message| {
                Error::input_with_help(
                    format!("{name}: {message}"),
                    "a prompt-poet template renders to a YAML list of parts, each with a `content:`",
                )
            })?;
            let (text, map) = crate::host::prompt_poet::joined(&parts);
            let source_map = render.map.map(|source_map| {
                // A marker at a render offset moves to the first joined byte at or after it.
                let position = |at: usize| {
                    let (mut low, mut high) = (0, text.len());
                    while low < high {
                        let middle = (low + high) / 2;
                        if map.host_offset(middle) < at {
                            low = middle + 1;
                        } else {
                            high = middle;
                        }
                    }
                    low
                };
                crate::render::instrument::SourceMap {
                    events: source_map
                        .events
                        .into_iter()
                        .map(|(at, event)| (position(at), event))
                        .collect(),
                    stand_ins: source_map
                        .stand_ins
                        .into_iter()
                        .map(|r| position(r.start)..position(r.end))
                        .filter(|r| !r.is_empty())
                        .collect(),
                }
            });
            Ok(Render {
                text,
                map: source_map,
            })
        })
        .collect()
}

/// [`build`] for a template whose render is not yet the request (prompt-poet's parts).
pub fn build_for(
    renderer: &Renderer,
    template: &Prepared,
    samples: &Samples,
    engine: &dyn TokenEngine,
    prompt_poet: bool,
) -> Result<Requests> {
    if !prompt_poet {
        return build(renderer, template, samples, engine);
    }
    let renders = tracing::info_span!(target: crate::profile::STAGE, "render")
        .in_scope(|| render_all(renderer, template, samples))?;
    let renders = prompt_poet_renders(renders, &template.name)?;
    tracing::info!(target: crate::profile::STAGE, rendered_bytes = renders.iter().map(|r| r.text.len() as u64).sum::<u64>());
    Requests::tokenize(renders, engine, Encoding::Prompt)
}

/// Loads the tokenizer a setting names ([`crate::settings::Settings::tokenizer`]), for
/// callers that hold only the setting, such as a thread that outlives the settings' borrow.
pub fn load_tokenizer(setting: &str, special_tokens: bool) -> Result<Box<dyn TokenEngine>> {
    TokenizerSpec::parse(setting)?.load_with(special_tokens)
}

/// A model's chat template, ready to turn chat requests into the text the server
/// tokenizes: the one place chat requests are rendered.
pub struct ChatWrapper {
    pub template: ChatTemplate,
    renderer: Renderer,
    prepared: Prepared,
    /// Defaults for the template's variables (config `chat_variables:`); a request's own
    /// keys win.
    defaults: Map<String, Json>,
    /// [`Self::render_values`]' context less the messages and tools, made at its first call.
    base: std::sync::OnceLock<crate::chat::ContextBase>,
    /// The template's native renderer and its variables, where it has one
    /// ([`crate::chat::native`]), found at [`Self::render_values`]' first call.
    native: std::sync::OnceLock<Option<NativeRenderer>>,
}

type NativeRenderer = (
    &'static dyn crate::chat::native::NativeTemplate,
    crate::chat::native::Variables,
);

impl ChatWrapper {
    pub fn new(template: ChatTemplate) -> Result<ChatWrapper> {
        ChatWrapper::with_limits(template, crate::render::Limits::default())
    }

    /// [`Self::new`] rendering under other sandbox limits.
    pub fn with_limits(
        template: ChatTemplate,
        limits: crate::render::Limits,
    ) -> Result<ChatWrapper> {
        let (renderer, prepared) = template.renderer_with(limits)?;
        Ok(ChatWrapper {
            template,
            renderer,
            prepared,
            defaults: Map::new(),
            base: std::sync::OnceLock::new(),
            native: std::sync::OnceLock::new(),
        })
    }

    /// Loads a chat template from wherever it lives (see [`ChatTemplate::from_source`]).
    pub fn load(
        source: ChatTemplateSource,
        wanted: Option<&str>,
        has_tools: bool,
    ) -> Result<ChatWrapper> {
        ChatWrapper::new(ChatTemplate::from_source(source, wanted, has_tools)?)
    }

    /// The model's chat template for a tokenizer setting: `explicit` (`--chat-template`),
    /// else the `tokenizer_config.json` beside a tokenizer file (or in the HF cache), the one
    /// a `.gguf` carries, or the embedded default's; rendering under `limits`.
    pub fn for_tokenizer(
        explicit: Option<&Path>,
        tokenizer_spec: &str,
        limits: crate::render::Limits,
    ) -> Result<ChatWrapper> {
        ChatWrapper::for_tokenizer_with(explicit, tokenizer_spec, false, limits)
    }

    /// [`Self::for_tokenizer`], the template for requests with tools where a tokenizer
    /// config names one (`has_tools`).
    pub fn for_tokenizer_with(
        explicit: Option<&Path>,
        tokenizer_spec: &str,
        has_tools: bool,
        limits: crate::render::Limits,
    ) -> Result<ChatWrapper> {
        let beside_tokenizer: PathBuf;
        let source = match explicit {
            Some(path) => ChatTemplateSource::File(path),
            None => match TokenizerSpec::parse(tokenizer_spec)? {
                TokenizerSpec::Builtin => ChatTemplateSource::Embedded,
                TokenizerSpec::File(path) => {
                    beside_tokenizer = path.with_file_name("tokenizer_config.json");
                    if !beside_tokenizer.is_file() {
                        return Err(Error::input_with_help(
                            format!(
                                "--api chat: no chat template: {} is missing",
                                source::display_path(&beside_tokenizer)
                            ),
                            "pass --chat-template FILE (a .jinja template or a tokenizer_config.json)",
                        ));
                    }
                    ChatTemplateSource::File(&beside_tokenizer)
                }
                TokenizerSpec::Gguf(path) => {
                    // The chat template a `.gguf` model carries (`tokenizer.chat_template`).
                    beside_tokenizer = path;
                    ChatTemplateSource::File(&beside_tokenizer)
                }
                TokenizerSpec::Tiktoken(encoding) => {
                    return Err(crate::tokenize::tiktoken::no_chat_template(encoding))
                }
                TokenizerSpec::HubModel(id) => {
                    let tokenizer = crate::tokenize::find_in_hf_cache(&id)?;
                    beside_tokenizer = tokenizer.with_file_name("tokenizer_config.json");
                    ChatTemplateSource::File(&beside_tokenizer)
                }
            },
        };
        if let ChatTemplateSource::File(path) = source {
            if !path.is_file() {
                return Err(Error::input_with_help(
                    format!("no chat template: {} is missing", source::display_path(path)),
                    "pass --chat-template FILE (a .jinja template, a tokenizer_config.json or a .gguf)",
                ));
            }
        }
        ChatWrapper::with_limits(ChatTemplate::from_source(source, None, has_tools)?, limits)
    }

    /// Without the source map: renders only make text (faster; [`Self::render_text`]).
    pub fn without_source_map(mut self) -> ChatWrapper {
        self.prepared = self.prepared.without_source_map();
        self
    }

    /// The text the server builds for logged `messages` and `tools`, with the generation
    /// prompt, straight from the JSON (no copy of the messages); no source map.
    pub fn render_text(
        &self,
        messages: &[Json],
        tools: Option<&Json>,
        clock: Clock,
    ) -> Result<String> {
        let context =
            crate::chat::context_of(&self.template, messages, tools, true, &self.defaults);
        Ok(self.renderer.render(&self.prepared, &context, clock)?.text)
    }

    /// [`Self::render_text`] of messages and tools already made template values
    /// ([`crate::chat::message_value`], [`crate::chat::json_value`]; `none` without tools).
    pub fn render_values(
        &self,
        messages: Vec<minijinja::Value>,
        tools: minijinja::Value,
        clock: Clock,
    ) -> Result<String> {
        if let Some((native, variables)) = self.native() {
            if let Some(text) = native.render(&messages, &tools, variables) {
                return Ok(text);
            }
        }
        let context = self.context_base().context(messages, tools);
        Ok(self.renderer.render(&self.prepared, &context, clock)?.text)
    }

    fn context_base(&self) -> &crate::chat::ContextBase {
        self.base
            .get_or_init(|| crate::chat::ContextBase::new(&self.template, true, &self.defaults))
    }

    /// Whether [`Self::render_values`] tries a native renderer first.
    pub fn renders_natively(&self) -> bool {
        self.native().is_some()
    }

    /// The native renderer [`Self::render_values`] tries first: the template's, where it
    /// has one, its variables allow it, and `PREFIXLINT_NATIVE_TEMPLATES` is not `0`.
    fn native(&self) -> Option<&NativeRenderer> {
        self.native
            .get_or_init(|| {
                if !crate::chat::native::enabled() {
                    return None;
                }
                let native = crate::chat::native::lookup(&self.template.source)?;
                let variables = crate::chat::native::Variables::new(
                    self.context_base().variables()?,
                    self.renderer.settings().limits,
                );
                native.accepts(&variables).then_some((native, variables))
            })
            .as_ref()
    }

    /// Defaults for the template's variables (config `chat_variables:`).
    pub fn with_defaults(mut self, defaults: Map<String, Json>) -> ChatWrapper {
        self.defaults = defaults;
        self.base = std::sync::OnceLock::new();
        self.native = std::sync::OnceLock::new();
        self
    }

    /// The request's text as the server builds it, with its source map into the chat
    /// template ([`Self::origins`]).
    pub fn render(&self, request: &ChatRequest, clock: Clock) -> Result<Render> {
        if self.defaults.is_empty() {
            return crate::chat::render_request(
                &self.renderer,
                &self.prepared,
                &self.template,
                request,
                clock,
            );
        }
        let mut request = request.clone();
        for (key, value) in &self.defaults {
            request
                .variables
                .entry(key.clone())
                .or_insert(value.clone());
        }
        crate::chat::render_request(
            &self.renderer,
            &self.prepared,
            &self.template,
            &request,
            clock,
        )
    }

    /// Renders requests each under its own clock (`clock(n)`), and tokenizes them.
    pub fn requests(
        &self,
        requests: &[ChatRequest],
        clock: impl Fn(usize) -> Clock,
        engine: &dyn TokenEngine,
    ) -> Result<Requests> {
        let renders = requests
            .iter()
            .enumerate()
            .map(|(n, request)| self.render(request, clock(n)))
            .collect::<Result<Vec<_>>>()?;
        Requests::tokenize(renders, engine, Encoding::Chat)
    }

    /// The origin table the chat renders' source maps point into.
    pub fn origins(&self) -> &OriginTable {
        self.renderer.origins()
    }

    /// The chat template's name in its render environment.
    pub fn name(&self) -> &str {
        &self.prepared.name
    }
}

/// A chat message `{role, content}`.
pub fn message(role: &str, content: &str) -> Json {
    let mut m = Map::new();
    m.insert("role".into(), Json::from(role));
    m.insert("content".into(), Json::from(content));
    Json::Object(m)
}

/// A request of one message (and an optional user turn after it), with a generation prompt.
pub fn single_message(role: &str, content: &str, user: Option<&str>) -> ChatRequest {
    let mut messages = vec![message(role, content)];
    if let Some(user) = user {
        messages.push(message("user", user));
    }
    ChatRequest {
        messages,
        tools: None,
        add_generation_prompt: true,
        variables: Map::new(),
    }
}

/// A template outside the project (an explicit path elsewhere) is confined to its own folder.
pub fn root_for(template: &Path, project_root: &Path) -> PathBuf {
    let project = project_root
        .canonicalize()
        .unwrap_or_else(|_| project_root.to_path_buf());
    Location::of(template, &project).root
}

/// A template's render root and its name there, found with one `canonicalize` (a run over
/// many templates resolves each once, not at every step).
pub struct Location {
    pub root: PathBuf,
    pub name: String,
}

impl Location {
    /// `canonical_project` is the project root, already canonical.
    pub fn of(template: &Path, canonical_project: &Path) -> Location {
        let absolute = template
            .canonicalize()
            .unwrap_or_else(|_| template.to_path_buf());
        Location::of_real(absolute, canonical_project)
    }

    /// As [`Location::of`], for a template whose canonical path is known.
    pub fn of_real(absolute: PathBuf, canonical_project: &Path) -> Location {
        if let Some(name) = plain_name_under(&absolute, canonical_project) {
            return Location {
                root: canonical_project.to_path_buf(),
                name,
            };
        }
        let root = if absolute.starts_with(canonical_project) {
            canonical_project.to_path_buf()
        } else {
            absolute
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| canonical_project.to_path_buf())
        };
        let name = name_under(&absolute, &root);
        Location { root, name }
    }
}

/// [`name_under`] of a path under `root` as the bytes show it, when they show it plainly
/// (no `.` or empty component after the root: what a canonical path is): a byte
/// comparison, where `Path` compares and strips component by component. `None` when the
/// bytes do not settle it.
fn plain_name_under(absolute: &Path, root: &Path) -> Option<String> {
    let root = root.as_os_str().as_encoded_bytes();
    let rest = absolute
        .as_os_str()
        .as_encoded_bytes()
        .strip_prefix(root)?
        .strip_prefix(b"/")?;
    if cfg!(windows)
        || root.is_empty()
        || root.ends_with(b"/")
        || rest
            .split(|&b| b == b'/')
            .any(|component| component.is_empty() || component == b".")
    {
        return None;
    }
    let name = std::str::from_utf8(rest).ok()?;
    Some(name.replace('\\', "/"))
}

fn name_under(absolute: &Path, root: &Path) -> String {
    match absolute.strip_prefix(root) {
        Ok(relative) => relative.to_string_lossy().replace('\\', "/"),
        Err(_) => absolute.to_string_lossy().replace('\\', "/"),
    }
}

/// The template's name inside the render environment: its path under the project root,
/// which is what its includes resolve against.
pub fn template_name(path: &Path, root: &Path) -> String {
    let absolute = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    name_under(&absolute, &root)
}

/// [`template_name`] for a root that is already canonical: one `canonicalize`, not two.
pub fn name_in_project(path: &Path, canonical_root: &Path) -> String {
    let absolute = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    name_under(&absolute, canonical_root)
}

/// Reads and parses a template (once) and finds its samples.
pub fn prepare_template(
    path: &Path,
    root: &Path,
    renderer: &mut Renderer,
    fields: &VolatileFields,
    config: &Config,
) -> Result<(Prepared, Samples)> {
    let display = source::display_path(path);
    let text = tracing::info_span!(target: crate::profile::STAGE, "parse")
        .in_scope(|| source::read_text(path, &display))?;
    prepare_source(path, &text, root, renderer, fields, config, None)
}

/// Reads and parses a template (once) by its name in the renderer, without its samples:
/// `check` loads those on its worker threads ([`load_samples`] needs no `&mut Renderer`).
pub fn parse_template(
    path: &Path,
    name: &str,
    format: crate::formats::TemplateFormat,
    renderer: &mut Renderer,
) -> Result<Prepared> {
    let display = source::display_path(path);
    tracing::info_span!(target: crate::profile::STAGE, "parse").in_scope(|| {
        let text = source::read_text(path, &display)?;
        renderer.prepare_as(name, &text, format)
    })
}

/// A template's text and the format it is written in (a `&str` is Jinja).
#[derive(Debug, Clone, Copy)]
pub struct TemplateText<'a> {
    pub text: &'a str,
    pub format: crate::formats::TemplateFormat,
}

impl<'a> From<&'a str> for TemplateText<'a> {
    fn from(text: &'a str) -> Self {
        TemplateText {
            text,
            format: crate::formats::TemplateFormat::Jinja,
        }
    }
}

impl<'a> From<&'a String> for TemplateText<'a> {
    fn from(text: &'a String) -> Self {
        TemplateText::from(text.as_str())
    }
}

/// Parses a template's text that may not be on disk (an editor's buffer) and finds its
/// samples: `samples_text` when given (the samples file's buffer), else the samples file
/// beside `path`, else synthesized ones.
pub fn prepare_source<'t>(
    path: &Path,
    text: impl Into<TemplateText<'t>>,
    root: &Path,
    renderer: &mut Renderer,
    fields: &VolatileFields,
    config: &Config,
    samples_text: Option<&str>,
) -> Result<(Prepared, Samples)> {
    let text = text.into();
    let template = tracing::info_span!(target: crate::profile::STAGE, "parse")
        .in_scope(|| renderer.prepare_as(&template_name(path, root), text.text, text.format))?;
    let samples =
        tracing::info_span!(target: crate::profile::STAGE, "samples").in_scope(
            || match samples_text {
                Some(samples_text) => {
                    let samples_path = samples::samples_path(path);
                    samples::parse(samples_text, &source::display_path(&samples_path)).map(
                        |mut parsed| {
                            parsed.origin = samples::Origin::File(samples_path);
                            with_samples(parsed, renderer, &template, fields, config)
                        },
                    )
                }
                None => load_samples_untimed(path, renderer, &template, fields, config),
            },
        );
    match samples {
        Ok(samples) => Ok((template, samples)),
        Err(e) => {
            // It will not be rendered: its parsed forms and origins go now.
            renderer.forget(&template);
            Err(e)
        }
    }
}

pub fn load_samples(
    path: &Path,
    renderer: &Renderer,
    template: &Prepared,
    fields: &VolatileFields,
    config: &Config,
) -> Result<Samples> {
    tracing::info_span!(target: crate::profile::STAGE, "samples")
        .in_scope(|| load_samples_untimed(path, renderer, template, fields, config))
}

fn load_samples_untimed(
    path: &Path,
    renderer: &Renderer,
    template: &Prepared,
    fields: &VolatileFields,
    config: &Config,
) -> Result<Samples> {
    let samples_path = samples::samples_path(path);
    if samples::is_present(&samples_path) {
        let loaded = samples::load_inside(&samples_path, &renderer.settings().root)?;
        return Ok(with_samples(loaded, renderer, template, fields, config));
    }
    let shapes = samples::infer(renderer, template);
    Ok(samples::synthesize(
        &shapes,
        fields,
        config.synthesized_renders,
    ))
}

/// Loaded samples with their stand-ins; an empty samples file is treated as none: it is
/// valid, so synthesize.
fn with_samples(
    mut loaded: Samples,
    renderer: &Renderer,
    template: &Prepared,
    fields: &VolatileFields,
    config: &Config,
) -> Samples {
    let (shapes, variables) = samples::infer_reading(renderer, template);
    if loaded.is_empty() {
        return samples::synthesize(&shapes, fields, config.synthesized_renders);
    }
    samples::add_stand_ins(&mut loaded, &shapes, fields);
    loaded.variables = Some(variables);
    loaded
}

/// Renders a prepared template over its samples, each under the sample's clock.
pub fn render_all(
    renderer: &Renderer,
    template: &Prepared,
    samples: &Samples,
) -> Result<Vec<Render>> {
    samples
        .contexts
        .iter()
        .enumerate()
        .map(|(n, context)| {
            let rendered = renderer.render_marking(
                template,
                context,
                samples.clock(n),
                samples.stand_in_texts.as_ref(),
            );
            match samples.origin {
                // The samples hint only helps when a variable was missing; a limit or
                // syntax problem keeps its own help.
                samples::Origin::Synthesized => rendered.map_err(|e| {
                    if !e.to_string().contains(": undefined value") {
                        return e;
                    }
                    let name = Path::new(template.name.as_ref());
                    e.with_help(format!(
                        "prefixlint synthesized this render; write {} with realistic values for each variable (`prefixlint samples {} --write` starts one)",
                        source::display_path(&samples::samples_path(name)),
                        source::display_path(name)
                    ))
                }),
                samples::Origin::File(_) => rendered,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A template's name under the project root, read from the bytes where they show it
    /// plainly, is the name `Path` finds component by component; where they do not, the
    /// bytes say nothing and `Path` decides.
    #[cfg(unix)]
    #[test]
    fn a_plain_name_under_the_root_is_the_name_path_finds() {
        let root = Path::new("/work/repo");
        for path in [
            "/work/repo/a.j2",
            "/work/repo/prompts/deep/b.md.j2",
            "/work/repo/with space/c d.j2",
            "/work/repo/back\\slash.j2",
            "/work/repo/.hidden/e.j2",
        ] {
            let path = PathBuf::from(path);
            assert_eq!(
                plain_name_under(&path, root),
                Some(name_under(&path, root)),
                "{}",
                path.display()
            );
            let location = Location::of_real(path.clone(), root);
            assert_eq!(location.root, root);
            assert_eq!(location.name, name_under(&path, root));
        }
        for (path, root) in [
            ("/work/repository/a.j2", "/work/repo"),
            ("/work/repo", "/work/repo"),
            ("/work/repo/", "/work/repo"),
            ("/work/repo//a.j2", "/work/repo"),
            ("/work/repo/./a.j2", "/work/repo"),
            ("/work/repo/a/./b.j2", "/work/repo"),
            ("/a.j2", "/"),
            ("/elsewhere/a.j2", "/work/repo"),
        ] {
            assert_eq!(
                plain_name_under(Path::new(path), Path::new(root)),
                None,
                "{path}"
            );
        }
        // Outside the root, a template is its own folder's; `Path` decides as before.
        let outside = Location::of_real(PathBuf::from("/elsewhere/a.j2"), root);
        assert_eq!(outside.root, Path::new("/elsewhere"));
        assert_eq!(outside.name, "a.j2");
        let doubled = Location::of_real(PathBuf::from("/work/repo//sub/a.j2"), root);
        assert_eq!(
            (doubled.root.as_path(), doubled.name.as_str()),
            (root, "sub/a.j2")
        );
    }

    /// The embedded default (Qwen3) renders natively; one byte more in its source, not.
    #[test]
    fn a_changed_template_does_not_render_natively() {
        let wrapper = ChatWrapper::load(ChatTemplateSource::Embedded, None, false).unwrap();
        assert!(wrapper.renders_natively());
        let mut template =
            ChatTemplate::from_source(ChatTemplateSource::Embedded, None, false).unwrap();
        template.source.push(' ');
        assert!(!ChatWrapper::new(template).unwrap().renders_natively());
    }

    /// Under limits a request reaches, the native renderer answers nothing and the render
    /// fails in minijinja exactly as it does without native renderers.
    #[test]
    fn a_render_over_the_limits_still_fails() {
        use crate::chat::{message_value, ContextBase};
        use crate::render::Limits;
        let messages = vec![
            message_value(&serde_json::json!({"role": "system", "content": "s"})),
            message_value(&serde_json::json!({"role": "user", "content": "a question"})),
        ];
        let tools = minijinja::Value::from(());
        let embedded =
            || ChatTemplate::from_source(ChatTemplateSource::Embedded, None, false).unwrap();
        let render = |limits: Limits| {
            let wrapper = ChatWrapper::with_limits(embedded(), limits).unwrap();
            assert!(wrapper.renders_natively());
            wrapper
                .render_values(messages.clone(), tools.clone(), Clock::synthetic(0))
                .map_err(|e| e.to_string())
        };
        let vm = |limits: Limits| {
            let template = embedded();
            let (renderer, prepared) = template.renderer_with(limits).unwrap();
            let context = ContextBase::new(&template, true, &Map::new())
                .context(messages.clone(), tools.clone());
            renderer
                .render(&prepared, &context, Clock::synthetic(0))
                .map(|r| r.text)
                .map_err(|e| e.to_string())
        };
        let text = render(Limits::default()).unwrap();
        assert_eq!(vm(Limits::default()).as_ref(), Ok(&text));
        for limits in [
            Limits {
                fuel: 50,
                ..Limits::default()
            },
            Limits {
                max_output_bytes: text.len() - 1,
                ..Limits::default()
            },
        ] {
            let failed = render(limits);
            assert!(failed.is_err(), "{limits:?}");
            assert_eq!(failed, vm(limits));
        }
        // Where the output fits exactly, the VM renders it (the native renderer answers
        // only under the limit).
        let exact = Limits {
            max_output_bytes: text.len(),
            ..Limits::default()
        };
        assert_eq!(render(exact), Ok(text));
    }

    /// What `audit` does with a logged request: render it through the model's chat
    /// template, tokenize it as the server does, and analyse two turns of one conversation.
    #[test]
    fn chat_requests_render_tokenize_and_analyse_in_one_place() {
        let chat = ChatWrapper::load(ChatTemplateSource::Embedded, None, false).unwrap();
        let engine = TokenizerSpec::Builtin.load_with(true).unwrap();
        let requests = [
            single_message(
                "system",
                "You are a careful assistant.",
                Some("first question"),
            ),
            single_message("system", "You are a careful assistant.", Some("second one")),
        ];
        let built = chat
            .requests(&requests, Clock::synthetic, engine.as_ref())
            .unwrap();
        assert!(built.renders[0]
            .text
            .starts_with("<|im_start|>system\nYou are a careful assistant.<|im_end|>\n"));
        assert_eq!(built.tokens.len(), 2);
        for (render, tokens) in built.renders.iter().zip(&built.tokens) {
            assert_eq!(tokens.ids.len(), tokens.offsets.len());
            assert!(tokens
                .offsets
                .iter()
                .all(|&(_, end)| end <= render.text.len()));
        }
        let analysis = built
            .analyse(engine.as_ref(), chat.origins(), chat.name())
            .unwrap();
        let divergence = analysis.divergence.expect("the user turns differ");
        assert!(built.renders[0].text[divergence.offset..].starts_with("first"));
        assert!(analysis.shared_prefix_tokens > 5);
    }
}
