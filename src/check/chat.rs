//! `check --chat-template` and `--chat-request`: audit what the server tokenizes, with the
//! model's chat template applied, instead of the bare template.
//!
//! Each sample's render becomes one message of a chat request (the system message by
//! default), the request goes through the chat template under a clock that differs between
//! renders, and the results are tokenized and analysed as usual. A divergence inside the
//! embedded render is reported by the ordinary rules at the checked template's line; one in
//! the chat template itself (Llama 3.2's "Today Date:") is PL008 at the chat template's line.

use super::history::history_rewrites;
use super::{run_rules, CheckOutcome};
use crate::analyse::Analysis;
use crate::cache_profile::{CacheProfile, CacheProfileKind};
use crate::chat::{ChatRequest, ChatTemplateSource};
use crate::config::Config;
use crate::discover::hosts::{Embedded, HostSettings};
use crate::discover::{self, Matcher};
use crate::error::{Error, Result};
use crate::host::HostKind;
use crate::render::{Prepared, Render, Renderer};
use crate::report::{TemplateError, TemplateReport};
use crate::request::{self, render_all, template_name, ChatWrapper, Encoding, Requests};
use crate::rules::{chat_template_volatile, divergence_before_stable, Finding, VolatileFields};
use crate::settings::{ChatTemplatePath, Settings};
use crate::source;
use crate::suppress::RuleSeverities;
use crate::tokenize::TokenEngine;
use serde_json::Value as Json;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A chat request of these `(role, content)` messages, with a generation prompt.
fn messages_request(messages: Vec<(String, String)>) -> ChatRequest {
    ChatRequest {
        messages: messages
            .iter()
            .map(|(role, content)| request::message(role, content))
            .collect(),
        tools: None,
        add_generation_prompt: true,
        variables: serde_json::Map::new(),
    }
}

/// The sample key whose value becomes the user turn after the wrapped render.
pub const USER_TURN_KEY: &str = "_user";

/// What a chat check reads besides the template: the run's config and settings, where
/// paths resolve from, `--chat-request`'s files, and the chat template loaded once.
pub struct ChatRun<'a> {
    pub config: &'a Config,
    pub settings: &'a Settings,
    pub cwd: &'a Path,
    /// `--chat-request`'s files.
    pub requests: &'a [PathBuf],
    pub templates: &'a ChatTemplates,
}

/// The run's chat template, loaded at its first use and kept: the template for requests
/// without tools and, where a tokenizer_config.json names another, the one with tools.
#[derive(Default)]
pub struct ChatTemplates {
    plain: Mutex<Option<Arc<ChatWrapper>>>,
    with_tools: Mutex<Option<Arc<ChatWrapper>>>,
}

impl ChatTemplates {
    /// The template for requests with or without tools, loaded once (a failed load is
    /// tried again, so each template checked reports it).
    fn get(&self, settings: &Settings, path: &Path, has_tools: bool) -> Result<Arc<ChatWrapper>> {
        let slot = if has_tools {
            &self.with_tools
        } else {
            &self.plain
        };
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(loaded) = slot.as_ref() {
            return Ok(loaded.clone());
        }
        let template = crate::chat::ChatTemplate::from_source(
            ChatTemplateSource::File(path),
            settings.chat.template_name.as_deref(),
            has_tools,
        )?;
        let loaded = Arc::new(
            ChatWrapper::with_limits(template, settings.limits)?
                .with_defaults(settings.chat.variables.clone()),
        );
        *slot = Some(loaded.clone());
        Ok(loaded)
    }
}

/// Runs the chat variants of `check` over `paths`; `None` when no chat template is configured.
pub fn run(
    run: &ChatRun<'_>,
    paths: &[PathBuf],
    profile: &CacheProfile,
) -> Result<Option<CheckOutcome>> {
    if chat_template_path(run, profile)?.is_none() {
        return Ok(None);
    }
    let config = run.config;
    let engine = run.settings.load_tokenizer()?;
    with_chat_check(run, profile, engine.as_ref(), |ctx| {
        let mut outcome = CheckOutcome::default();
        let root = config.project_root(run.cwd);
        let mut push = |path: &Path, checked: Result<TemplateReport>| match checked {
            Ok(report) => outcome.report.templates.push(report),
            Err(e) => outcome.report.errors.push(TemplateError::new(
                source::display_path(path),
                &template_name(path, &root),
                e,
            )),
        };
        for request in run.requests {
            push(request, ctx.check_request(request));
        }
        if run.requests.is_empty() || !paths.is_empty() {
            let matcher = Matcher::new(&config.include, &config.exclude)?
                .with_hosts(HostSettings::new(&config.embedded)?);
            for target in discover::find(paths, &matcher)?.targets {
                match &target.embedded {
                    None => push(&target.template, ctx.check_wrapped(&target.template)),
                    Some(embedded) => push(
                        &target.template,
                        ctx.check_embedded(&target.template, embedded),
                    ),
                }
            }
        }
        Ok(outcome)
    })
}

/// One template's text (an editor's buffer) checked as `check --chat-template` checks it;
/// `None` when no chat template is configured.
pub fn check_source(
    run: &ChatRun<'_>,
    profile: &CacheProfile,
    engine: &dyn TokenEngine,
    path: &Path,
    text: &str,
    samples_text: Option<&str>,
) -> Option<Result<TemplateReport>> {
    match chat_template_path(run, profile) {
        Ok(None) => return None,
        Ok(Some(_)) => {}
        Err(e) => return Some(Err(e)),
    }
    let checked = with_chat_check(run, profile, engine, |ctx| {
        ctx.check_wrapped_text(path, text, samples_text)
    });
    Some(checked.and_then(|report| {
        report.ok_or_else(|| Error::input("check_source: no chat template is configured"))
    }))
}

/// What a fix verifies against besides a chat check's report: the template's own renders
/// (with their source maps and origins, for the producers) and what each render became in
/// its chat request.
pub struct ChatView {
    /// The template's name in its renderer (what `origins` name it).
    pub template_name: String,
    pub renders: Vec<Render>,
    pub origins: Vec<crate::render::instrument::Origin>,
    /// Per sample, the request's message contents, one after another: the lines a move
    /// must keep (the chat template's own text glues its tokens onto the first and last
    /// line of each message, so the wrapped text's lines are not the unit).
    pub messages: Vec<String>,
    /// The role of the message a template file's (or YAML/Python template's) render
    /// becomes (`--chat-role`, default `system`).
    pub role: String,
}

impl ChatView {
    /// Per request, its message contents one after another.
    fn message_texts(requests: &[ChatRequest]) -> Vec<String> {
        requests
            .iter()
            .map(|request| {
                request
                    .messages
                    .iter()
                    .filter_map(|m| m.get("content").and_then(Json::as_str))
                    .collect::<Vec<&str>>()
                    .join("\n")
            })
            .collect()
    }

    fn new(
        renderer: &Renderer,
        template: &Prepared,
        renders: Vec<Render>,
        requests: &[ChatRequest],
        role: &str,
    ) -> ChatView {
        let messages = ChatView::message_texts(requests);
        ChatView {
            template_name: template.name.to_string(),
            renders,
            origins: (0..).map_while(|id| renderer.origins().get(id)).collect(),
            messages,
            role: role.to_owned(),
        }
    }
}

/// One template's text checked as `check --chat-template` checks it (`embedded`: the host
/// template it stands in for, checked with `text` instead of its own), its findings in
/// `text`'s offsets, with its [`ChatView`]; `None` when no chat template is configured.
/// What `check --fix` verifies a fix against when a chat template is in force.
pub fn check_for_fix(
    run: &ChatRun<'_>,
    profile: &CacheProfile,
    engine: &dyn TokenEngine,
    path: &Path,
    embedded: Option<&Embedded>,
    text: &str,
) -> Option<Result<(TemplateReport, ChatView)>> {
    match chat_template_path(run, profile) {
        Ok(None) => return None,
        Ok(Some(_)) => {}
        Err(e) => return Some(Err(e)),
    }
    let request = is_chat_request(run.requests, path);
    let checked = with_chat_check(run, profile, engine, |ctx| match embedded {
        None if request => ctx.check_request_text(path, text),
        None => ctx.check_wrapped_view(path, text, None),
        Some(embedded) => {
            let mut embedded = embedded.clone();
            embedded.template.text = text.to_owned();
            let name = embedded.name(&template_name(path, &ctx.root));
            ctx.check_embedded_view(path, &embedded, &name)
        }
    });
    Some(checked.and_then(|view| {
        view.ok_or_else(|| Error::input("check_for_fix: no chat template is configured"))
    }))
}

/// Whether two paths name the same file (as given, or resolved).
fn same_file(a: &Path, b: &Path) -> bool {
    a == b
        || std::fs::canonicalize(a)
            .ok()
            .zip(std::fs::canonicalize(b).ok())
            .is_some_and(|(a, b)| a == b)
}

/// Whether `path` is one of `--chat-request`'s files.
pub fn is_chat_request(requests: &[PathBuf], path: &Path) -> bool {
    requests.iter().any(|r| same_file(r, path))
}

/// The chat template of the settings; `None` without one. Refused for a hosted API that
/// caches the request in its own order (Anthropic, Claude on Bedrock: tools, then system,
/// then messages): no chat template of the user's renders what it caches, so a check
/// through one would measure a prefix the API never sees.
fn chat_template_path<'a>(
    run: &ChatRun<'a>,
    profile: &CacheProfile,
) -> Result<Option<&'a ChatTemplatePath>> {
    let Some(template) = run.settings.chat.template.as_ref() else {
        if !run.requests.is_empty() {
            return Err(Error::input_with_help(
                "--chat-request needs the model's chat template",
                "pass --chat-template FILE (a .jinja file or tokenizer_config.json), or set `chat_template:` in prefixlint.yaml",
            ));
        }
        return Ok(None);
    };
    let hosted = matches!(
        profile.kind,
        CacheProfileKind::Anthropic | CacheProfileKind::Bedrock
    );
    if hosted {
        let engine = profile.kind.name();
        let given = template.setting();
        return Err(Error::input_with_help(
            format!(
                "{given} with the `{engine}` engine: the API caches a request in its own order (tools, then system, then messages), not through a chat template, so a check through one would measure a prefix the API never caches"
            ),
            format!(
                "check the template that renders the request body's JSON (see docs/request-bodies.md), audit logged requests (`prefixlint audit LOG --engine {engine}`), or check without a chat template"
            ),
        ));
    }
    Ok(Some(template))
}

/// Runs `check` with the chat check of these settings; `Ok(None)` without a chat template.
fn with_chat_check<R>(
    run: &ChatRun<'_>,
    profile: &CacheProfile,
    engine: &dyn TokenEngine,
    check: impl FnOnce(&ChatCheck) -> Result<R>,
) -> Result<Option<R>> {
    let Some(chat_template) = chat_template_path(run, profile)? else {
        return Ok(None);
    };
    let config = run.config;
    let fields = VolatileFields::new(&config.volatile_fields)?;
    let severities = RuleSeverities::from_config(config)?;
    let ctx = ChatCheck {
        chat_path: &chat_template.path,
        settings: run.settings,
        templates: run.templates,
        role: &run.settings.chat.role,
        engine,
        fields: &fields,
        config,
        severities: &severities,
        profile,
        root: config.project_root(run.cwd),
    };
    check(&ctx).map(Some)
}

struct ChatCheck<'a> {
    chat_path: &'a Path,
    settings: &'a Settings,
    templates: &'a ChatTemplates,
    role: &'a str,
    engine: &'a dyn TokenEngine,
    fields: &'a VolatileFields,
    config: &'a Config,
    severities: &'a RuleSeverities,
    profile: &'a CacheProfile,
    root: PathBuf,
}

/// The chat requests of one checked unit, tokenized and analysed.
struct ChatRenders {
    chat: Arc<ChatWrapper>,
    renders: Vec<Render>,
    analysis: Analysis,
}

impl ChatCheck<'_> {
    fn user_renderer(&self) -> Result<Renderer> {
        Renderer::new(self.config.render_settings(self.root.clone()))
    }

    /// Renders each request through the chat template, each under its own clock.
    fn render_chat(&self, requests: &[ChatRequest], has_tools: bool) -> Result<ChatRenders> {
        let chat = self
            .templates
            .get(self.settings, self.chat_path, has_tools)?;
        let built = chat.requests(requests, clock, self.engine)?;
        let analysis = built.analyse(self.engine, chat.origins(), chat.name())?;
        Ok(ChatRenders {
            chat,
            renders: built.renders,
            analysis,
        })
    }

    /// `check PATH --chat-template FILE`: the template's renders as one message each.
    fn check_wrapped(&self, path: &Path) -> Result<TemplateReport> {
        let display = source::display_path(path);
        let text = source::read_text(path, &display)?;
        self.check_wrapped_text(path, &text, None)
    }

    /// [`Self::check_wrapped`] of a text that may not be on disk (an editor's buffer).
    fn check_wrapped_text(
        &self,
        path: &Path,
        text: &str,
        samples_text: Option<&str>,
    ) -> Result<TemplateReport> {
        self.check_wrapped_view(path, text, samples_text)
            .map(|(report, _)| report)
    }

    /// [`Self::check_wrapped_text`], with what the template rendered and the requests its
    /// renders became (a fix verifies against them).
    fn check_wrapped_view(
        &self,
        path: &Path,
        text: &str,
        samples_text: Option<&str>,
    ) -> Result<(TemplateReport, ChatView)> {
        let mut renderer = self.user_renderer()?;
        let display = source::display_path(path);
        let (template, samples) = request::prepare_source(
            path,
            text,
            &self.root,
            &mut renderer,
            self.fields,
            self.config,
            samples_text,
        )?;
        let renders = render_all(&renderer, &template, &samples)?;
        let requests: Vec<ChatRequest> = renders
            .iter()
            .zip(&samples.contexts)
            .map(|(render, sample)| {
                let user = sample
                    .get_attr(USER_TURN_KEY)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned));
                request::single_message(self.role, &render.text, user.as_deref())
            })
            .collect();
        let chat = self.render_chat(&requests, false)?;
        let findings = self.findings(&chat, &template, &renders, &requests, &renderer, &display);
        let report = TemplateReport {
            path: display,
            source: template.source.clone(),
            analysis: chat.analysis.without_renders(),
            findings,
            stand_ins: samples.stand_ins.clone(),
            unknown: crate::samples::unknown_callables(&template, &samples),
            embedded: None,
            format: Default::default(),
            cost: None,
        };
        let view = ChatView::new(&renderer, &template, renders, &requests, self.role);
        Ok((report, view))
    }

    /// A template embedded in a host file, through the chat template: a `.prompty` body's
    /// `system:`/`user:`/`assistant:` lines and a prompt-poet file's parts are the request's
    /// messages, as their applications send them; other embedded templates are one message,
    /// as a template file is. Positions are the host's.
    fn check_embedded(&self, path: &Path, embedded: &Embedded) -> Result<TemplateReport> {
        let display = source::display_path(path);
        let name = embedded.name(&template_name(path, &self.root));
        match self.check_embedded_view(path, embedded, &name) {
            Ok((report, _)) => Ok(super::embedded::to_host(report, embedded, &name)),
            Err(e) => Err(super::embedded::error_to_host(e, embedded, &name, &display)),
        }
    }

    /// [`Self::check_embedded`] in the template's own offsets (not moved to the host), with
    /// what it rendered and the requests its renders became.
    fn check_embedded_view(
        &self,
        path: &Path,
        embedded: &Embedded,
        name: &str,
    ) -> Result<(TemplateReport, ChatView)> {
        let name = name.to_owned();
        let mut renderer = self.user_renderer()?;
        let display = source::display_path(path);
        {
            let template = super::embedded::parse(embedded, &name, &mut renderer)?;
            let samples = super::embedded::samples(
                path,
                embedded,
                &renderer,
                &template,
                self.fields,
                self.config,
            )?;
            let renders = render_all(&renderer, &template, &samples)?;
            let kind = embedded.template.kind;
            let requests = renders
                .iter()
                .map(|render| match kind {
                    HostKind::Prompty => Ok(messages_request(
                        crate::host::prompty::messages(&render.text)
                            .into_iter()
                            .map(|m| (m.role, render.text[m.content].to_owned()))
                            .collect(),
                    )),
                    HostKind::PromptPoet => crate::host::prompt_poet::parts(&render.text)
                        .map(|parts| {
                            messages_request(
                                parts
                                    .into_iter()
                                    .map(|p| (p.role.unwrap_or_else(|| "user".into()), p.content))
                                    .collect(),
                            )
                        })
                        .map_err(|message| Error::input(format!("{name}: {message}"))),
                    _ => Ok(request::single_message(self.role, &render.text, None)),
                })
                .collect::<Result<Vec<ChatRequest>>>()?;
            let chat = self.render_chat(&requests, false)?;
            let whole = matches!(kind, HostKind::Prompty | HostKind::PromptPoet);
            // The rules read what the application sends: prompt-poet's parts, not its YAML.
            let own = renders.clone();
            let renders = match kind {
                HostKind::PromptPoet => request::prompt_poet_renders(renders, &name)?,
                _ => renders,
            };
            let findings = self.findings_of(
                &chat, &template, &renders, &requests, &renderer, &display, whole,
            );
            let report = TemplateReport {
                path: display.clone(),
                source: template.source.clone(),
                analysis: chat.analysis.without_renders(),
                findings,
                stand_ins: samples.stand_ins.clone(),
                unknown: crate::samples::unknown_callables(&template, &samples),
                embedded: None,
                format: Default::default(),
                cost: None,
            };
            let view = ChatView::new(&renderer, &template, own, &requests, self.role);
            Ok((report, view))
        }
    }

    /// Findings for the checked template: the ordinary rules when the chat renders first
    /// differ inside the embedded render, none inside the user turn, PL008 when they differ
    /// in the chat template's own text.
    fn findings(
        &self,
        chat: &ChatRenders,
        template: &Prepared,
        renders: &[Render],
        requests: &[ChatRequest],
        user_renderer: &Renderer,
        display: &str,
    ) -> Vec<Finding> {
        self.findings_of(
            chat,
            template,
            renders,
            requests,
            user_renderer,
            display,
            false,
        )
    }

    /// [`Self::findings`]; `whole` when every message is the template's (a `.prompty`
    /// body's roles, prompt-poet's parts), not just the first.
    #[allow(clippy::too_many_arguments)]
    fn findings_of(
        &self,
        chat: &ChatRenders,
        template: &Prepared,
        renders: &[Render],
        requests: &[ChatRequest],
        user_renderer: &Renderer,
        display: &str,
        whole: bool,
    ) -> Vec<Finding> {
        match message_holding_divergence(chat, requests) {
            // Inside the wrapped render: the checked template's own rules, at its line.
            Some(0) => {}
            Some(_) if whole => {}
            // Inside the user turn that follows: the good layout, nothing to say.
            Some(_) => return Vec::new(),
            None => {
                return self
                    .chat_template_finding(chat, &template.source, display)
                    .into_iter()
                    .filter_map(|mut f| {
                        f.severity = self.severities.get(f.rule.code, f.severity)?;
                        Some(f)
                    })
                    .collect()
            }
        }
        let Ok(requests) = Requests::tokenize(renders.to_vec(), self.engine, Encoding::Chat) else {
            return Vec::new();
        };
        let Ok(mut analysis) =
            requests.analyse(self.engine, user_renderer.origins(), &template.name)
        else {
            return Vec::new();
        };
        // The numbers are the chat request's; the culprit is located in the template.
        analysis.shared_prefix_tokens = chat.analysis.shared_prefix_tokens;
        analysis.recoverable_tokens = chat.analysis.recoverable_tokens;
        analysis.cached_tokens_expected = self
            .profile
            .cached_tokens(analysis.shared_prefix_tokens, chat.analysis.tokens_min);
        run_rules(
            user_renderer,
            template,
            &analysis,
            self.fields,
            self.config,
            self.severities,
            self.profile,
            &[],
        )
    }

    /// PL008 for these renders (its rule: `rules::chat_template_volatile`).
    fn chat_template_finding(
        &self,
        chat: &ChatRenders,
        checked_source: &str,
        display: &str,
    ) -> Option<Finding> {
        let renders = chat_template_volatile::ChatRenders {
            analysis: &chat.analysis,
            template_display: &chat.chat.template.display,
            template_source: &chat.chat.template.source,
            origins: chat.chat.origins(),
            renders: &chat.renders,
        };
        chat_template_volatile::check(
            &renders,
            checked_source,
            display,
            self.config.min_lost_tokens,
        )
    }

    /// `check --chat-request FILE.yaml`: a whole request, its message contents rendered as
    /// templates over the request's samples, then through the chat template.
    fn check_request(&self, path: &Path) -> Result<TemplateReport> {
        let display = source::display_path(path);
        let text = source::read_text(path, &display)?;
        self.check_request_text(path, &text)
            .map(|(report, _)| report)
    }

    /// [`Self::check_request`] of a request file's text (a fix's candidate), with each
    /// request's message contents (what a move must keep).
    fn check_request_text(&self, path: &Path, text: &str) -> Result<(TemplateReport, ChatView)> {
        let display = source::display_path(path);
        let text = text.to_owned();
        let request = ChatRequest::parse(&text, &display)?;
        let mut renderer = self.user_renderer()?;
        // The request's message contents, each a template of its own.
        let mut contents: Vec<Option<Prepared>> = Vec::new();
        for (i, m) in request.messages.iter().enumerate() {
            contents.push(match m.get("content").and_then(Json::as_str) {
                Some(content) => {
                    Some(renderer.prepare(&format!("{display}#messages[{i}]"), content)?)
                }
                None => None,
            });
        }
        let samples = request_samples(path, &renderer, &contents, self.fields, self.config)?;
        let mut requests = Vec::new();
        // The first request's message renders, with their source maps.
        let mut first: Vec<Option<Render>> = Vec::new();
        for (n, sample) in samples.contexts.iter().enumerate() {
            let context = sample;
            let mut rendered = request.clone();
            for (m, prepared) in rendered.messages.iter_mut().zip(&contents) {
                if let (Some(prepared), Some(object)) = (prepared, m.as_object_mut()) {
                    let render = renderer.render(prepared, context, samples.clock(n))?;
                    object.insert("content".into(), Json::String(render.text.clone()));
                    if n == 0 {
                        first.push(Some(render));
                    }
                } else if n == 0 {
                    first.push(None);
                }
            }
            requests.push(rendered);
        }
        let chat = self.render_chat(&requests, request.tools.is_some())?;
        let mut findings: Vec<Finding> = match message_holding_divergence(&chat, &requests) {
            Some(index) => requests[0].messages[index]
                .get("content")
                .and_then(Json::as_str)
                .and_then(|content| {
                    divergence_before_stable::in_request_message(
                        &chat.analysis,
                        index,
                        content,
                        &text,
                        self.config.min_lost_tokens,
                    )
                })
                .map(|mut finding| {
                    // At the expression that writes the divergence, where it can be found.
                    let template = contents.get(index).and_then(Option::as_ref);
                    let render = first.get(index).and_then(Option::as_ref);
                    let written = template.zip(render).and_then(|(template, render)| {
                        writer_in_request(
                            &chat,
                            &requests,
                            index,
                            render,
                            &renderer,
                            &template.source,
                            &text,
                            &finding,
                        )
                    });
                    if let Some(span) = written {
                        finding.span = span;
                    }
                    finding
                }),
            None => self.chat_template_finding(&chat, &text, &display),
        }
        .into_iter()
        .collect();
        findings.extend(history_rewrites(
            &chat.chat.template,
            &requests[0],
            self.engine,
            &text,
            &display,
            clock(0),
        )?);
        findings.retain_mut(|f| match self.severities.get(f.rule.code, f.severity) {
            Some(severity) => {
                f.severity = severity;
                true
            }
            None => false,
        });
        findings.sort_by_key(|f| (f.span.start, f.rule.code));
        let view = ChatView {
            template_name: display.clone(),
            renders: Vec::new(),
            origins: Vec::new(),
            messages: ChatView::message_texts(&requests),
            role: String::new(),
        };
        let report = TemplateReport {
            path: display,
            source: text.into(),
            analysis: chat.analysis.without_renders(),
            findings,
            stand_ins: samples.stand_ins.clone(),
            unknown: Vec::new(),
            embedded: None,
            format: Default::default(),
            cost: None,
        };
        Ok((report, view))
    }
}

/// The place in a request file of the expression whose output holds the first divergence
/// of message `index` (its innermost expression in the first request's render of that
/// message), found on its template line after the message's first line; `None` when it
/// cannot be told.
#[allow(clippy::too_many_arguments)]
fn writer_in_request(
    chat: &ChatRenders,
    requests: &[ChatRequest],
    index: usize,
    render: &Render,
    renderer: &Renderer,
    template_source: &str,
    request_text: &str,
    finding: &Finding,
) -> Option<Range<usize>> {
    use crate::render::instrument::{MarkEvent, OriginKind};
    let divergence = chat.analysis.divergence.as_ref()?;
    let content = requests[0].messages[index].get("content")?.as_str()?;
    let at = embedded_at(&chat.renders[0].text, content)?;
    let offset = divergence.offset.checked_sub(at.start)?;
    let map = render.map.as_ref()?;
    let mut open: Vec<(u32, usize)> = Vec::new();
    let mut best: Option<(usize, crate::render::instrument::Origin)> = None;
    for (position, event) in &map.events {
        match event {
            MarkEvent::Open(id) => open.push((*id, *position)),
            MarkEvent::Close(id) => {
                let Some(n) = open.iter().rposition(|(o, _)| o == id) else {
                    continue;
                };
                let (_, start) = open.remove(n);
                if start <= offset && offset <= *position {
                    if let Some(origin) = renderer.origins().get(*id as usize) {
                        let shorter = best
                            .as_ref()
                            .is_none_or(|(len, _)| *position - start < *len);
                        if origin.kind == OriginKind::Expression && shorter {
                            best = Some((*position - start, origin));
                        }
                    }
                }
            }
            MarkEvent::Text(_) => {}
        }
    }
    let (_, origin) = best?;
    let start = origin.span.start.min(template_source.len());
    let line_start = template_source[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = template_source[start..]
        .find('\n')
        .map_or(template_source.len(), |i| start + i);
    let line = template_source.get(line_start..line_end)?;
    let from = finding.span.start;
    let line_at = from + request_text.get(from..)?.find(line.trim())?;
    let tag = origin.text.trim();
    let tag_at = line_at + request_text[line_at..].find(tag)?;
    Some(tag_at..tag_at + tag.len())
}

/// The clock of render `n`: the same moving clock as plain `check`.
fn clock(n: usize) -> crate::render::clock::Clock {
    crate::render::clock::Clock::synthetic(n)
}

/// The message whose content holds the first divergence, in both renders of the pair that
/// diverges; `None` when the chat template's own text differs there.
fn message_holding_divergence(chat: &ChatRenders, requests: &[ChatRequest]) -> Option<usize> {
    let divergence = chat.analysis.divergence.as_ref()?;
    (0..requests.first()?.messages.len()).find(|&i| {
        [0, divergence.other].iter().all(|&r| {
            requests[r]
                .messages
                .get(i)
                .and_then(|m| m.get("content"))
                .and_then(Json::as_str)
                .and_then(|content| embedded_at(&chat.renders[r].text, content))
                // A content that ends where the other goes on still holds the divergence.
                .is_some_and(|range| {
                    range.start <= divergence.offset && divergence.offset <= range.end
                })
        })
    })
}

/// Where `inner` sits inside `outer`, if it appears there verbatim.
fn embedded_at(outer: &str, inner: &str) -> Option<Range<usize>> {
    if inner.is_empty() {
        return None;
    }
    outer.find(inner).map(|at| at..at + inner.len())
}

/// Samples for a request's message templates: `NAME.samples.yaml` beside the request, else
/// synthesized from the variables all its messages read.
fn request_samples(
    path: &Path,
    renderer: &Renderer,
    contents: &[Option<Prepared>],
    fields: &VolatileFields,
    config: &Config,
) -> Result<crate::samples::Samples> {
    // The messages' variables, in the shape all of them together use them.
    let mut shapes = contents
        .iter()
        .flatten()
        .map(|p| crate::samples::infer(renderer, p));
    let first = shapes.next().unwrap_or_default();
    let merged = shapes.fold(first, |mut all, more| {
        all.merge(more);
        all
    });
    let samples_path = crate::samples::samples_path(path);
    if crate::samples::is_present(&samples_path) {
        let mut loaded = crate::samples::load_inside(&samples_path, &renderer.settings().root)?;
        crate::samples::add_stand_ins(&mut loaded, &merged, fields);
        return Ok(loaded);
    }
    Ok(crate::samples::synthesize(
        &merged,
        fields,
        config.synthesized_renders,
    ))
}
