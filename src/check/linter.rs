//! The library's entry point: a [`Linter`] holds what one run needs (config, severities,
//! cache profile, suppressions) and checks paths into a stream of [`TemplateOutcome`]s,
//! one per template, as soon as each is ready. The CLI, the tests and (later) `audit` and
//! the editor server drive the pipeline through it.

use super::chat::{ChatRun, ChatTemplates};
use super::{
    analyse_template, config_name, nothing_found, run_rules, sample_findings, WORKER_STACK_BYTES,
};
use crate::cache_profile::CacheProfile;
use crate::config::Config;
use crate::discover::hosts::{Embedded, HostSettings};
use crate::discover::{self, Matcher, Target};
use crate::error::{Error, Result};
use crate::render::{Prepared, Renderer};
use crate::report::stream::WrittenTemplate;
pub use crate::report::TemplateOutcome;
use crate::report::{SkippedTemplate, TemplateError, TemplateReport, UncheckedPlace};
use crate::request::{self, parse_template, root_for, template_name, Location};
use crate::results_cache::{ResultsCache, TemplateKey};
use crate::rules::{RuleCode, VolatileFields};
use crate::samples::Samples;
use crate::settings::Settings;
use crate::source;
use crate::suppress::{RuleSeverities, Suppressions};
use crate::tokenize::{TokenEngine, TokenizerContent};
use rayon::prelude::*;
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// How a run reads its inputs, besides the config.
#[derive(Debug, Clone, Default)]
pub struct LintOptions {
    /// The tokenizer, chat template, engine and limits, resolved from the flags and the
    /// config ([`Settings::resolve`]).
    pub settings: Settings,
    /// Where relative paths and the project root are resolved from.
    pub cwd: PathBuf,
    /// `--no-ignores`: disregard inline and per-path suppressions.
    pub no_ignores: bool,
    /// `--chat-request`'s files: whole chat requests to audit (through the chat template).
    pub chat_requests: Vec<PathBuf>,
    /// The results cache's folder; `None` (the default) checks every template afresh.
    pub results_cache: Option<PathBuf>,
}

pub struct Linter {
    /// The config's project root, canonical (suppressions match paths relative to it).
    project_root: PathBuf,
    config: Config,
    options: LintOptions,
    severities: RuleSeverities,
    profile: CacheProfile,
    suppressions: Suppressions,
    /// Which host files hold templates (config `embedded:`).
    hosts: HostSettings,
    /// The tokenizer, loaded on first use and kept for later calls (an editor checks the
    /// same project again and again).
    engine: Mutex<Option<Arc<dyn TokenEngine>>>,
    /// The model's chat template, where the settings name one, loaded once.
    chat_templates: ChatTemplates,
}

impl Linter {
    /// Validates everything that does not depend on the paths: a bad config stops here.
    pub fn new(config: Config, options: LintOptions) -> Result<Linter> {
        let severities = RuleSeverities::from_config(&config)?;
        let profile = options.settings.profile();
        let suppressions = Suppressions::new(&config, options.no_ignores)?;
        let hosts = HostSettings::new(&config.embedded)
            .map_err(|e| Error::input(format!("{}: {e}", config_name(&config))))?;
        let project_root = config.project_root(&options.cwd);
        let project_root = project_root.canonicalize().unwrap_or(project_root);
        Ok(Linter {
            project_root,
            config,
            options,
            severities,
            profile,
            suppressions,
            hosts,
            engine: Mutex::new(None),
            chat_templates: ChatTemplates::default(),
        })
    }

    /// The tokenizer of the settings, loaded once.
    fn engine(&self) -> Result<Arc<dyn TokenEngine>> {
        let mut engine = self.engine.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(engine) = engine.as_ref() {
            return Ok(engine.clone());
        }
        let loaded: Arc<dyn TokenEngine> = Arc::from(self.options.settings.load_tokenizer()?);
        *engine = Some(loaded.clone());
        Ok(loaded)
    }

    /// The tokenizer, loading on a thread of its own (`None` when it is loaded already);
    /// [`Self::keep_engine`] keeps it once [`Loading::finish`] has it.
    fn load_engine_in_background(&self) -> Option<Loading> {
        if self
            .engine
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
        {
            return None;
        }
        let setting = self.options.settings.tokenizer.clone();
        let special_tokens = self.options.settings.special_tokens;
        std::thread::Builder::new()
            .name("prefixlint-tokenizer".into())
            .spawn(move || {
                let _span = tracing::info_span!(target: crate::profile::TIMELINE, "load tokenizer")
                    .entered();
                request::load_tokenizer(&setting, special_tokens)
            })
            .ok()
            .map(|thread| Loading(Some(thread)))
    }

    /// Keeps a tokenizer loaded in the background as [`Self::engine`] keeps its own.
    fn keep_engine(&self, loaded: Box<dyn TokenEngine>) -> Arc<dyn TokenEngine> {
        let loaded: Arc<dyn TokenEngine> = Arc::from(loaded);
        *self.engine.lock().unwrap_or_else(|e| e.into_inner()) = Some(loaded.clone());
        loaded
    }

    /// Checks one template's text that may not be on disk (an editor's buffer): `path` names
    /// it (for includes, suppressions and the samples file beside it) and `samples_text`,
    /// when given, stands for the samples file's text. Everything else is as [`Self::check`].
    pub fn check_source(
        &self,
        path: &Path,
        text: &str,
        samples_text: Option<&str>,
    ) -> TemplateOutcome {
        self.check_source_as(path, text.into(), samples_text)
    }

    /// [`Self::check_source`] for a text in a given format (`{var}`, an f-string, …).
    pub fn check_source_as(
        &self,
        path: &Path,
        text: request::TemplateText<'_>,
        samples_text: Option<&str>,
    ) -> TemplateOutcome {
        let root = root_for(path, &self.config.project_root(&self.options.cwd));
        match self.check_text(path, text, &root, samples_text) {
            Ok(report) => TemplateOutcome::Checked(Box::new(self.finish(report))),
            Err(e) => TemplateOutcome::Failed(TemplateError::new(
                source::display_path(path),
                &template_name(path, &root),
                e,
            )),
        }
    }

    fn check_text(
        &self,
        path: &Path,
        text: request::TemplateText<'_>,
        root: &Path,
        samples_text: Option<&str>,
    ) -> Result<TemplateReport> {
        let engine = self.engine()?;
        if let Some(report) = super::chat::check_source(
            &self.chat_run(),
            &self.profile,
            engine.as_ref(),
            path,
            text.text,
            samples_text,
        ) {
            return report;
        }
        let config = &self.config;
        let fields = VolatileFields::new(&config.volatile_fields)?;
        let mut renderer = Renderer::new(config.render_settings(root.to_path_buf()))?;
        let (template, samples) = request::prepare_source(
            path,
            text,
            root,
            &mut renderer,
            &fields,
            config,
            samples_text,
        )?;
        self.report(
            path,
            &renderer,
            &template,
            &samples,
            engine.as_ref(),
            &fields,
        )
    }

    /// What the chat check reads of this run.
    fn chat_run(&self) -> ChatRun<'_> {
        ChatRun {
            config: &self.config,
            settings: &self.options.settings,
            cwd: &self.options.cwd,
            requests: &self.options.chat_requests,
            templates: &self.chat_templates,
        }
    }

    /// One template's requests analysed and its rules run: its report before `finish`.
    fn report(
        &self,
        path: &Path,
        renderer: &Renderer,
        template: &Prepared,
        samples: &Samples,
        engine: &dyn TokenEngine,
        fields: &VolatileFields,
    ) -> Result<TemplateReport> {
        self.report_in(path, renderer, template, samples, engine, fields, None)
    }

    /// [`Self::report`] for a template that may live in a host file of `kind`: a
    /// prompt-poet template's request is its parts' contents, not its render.
    #[allow(clippy::too_many_arguments)]
    fn report_in(
        &self,
        path: &Path,
        renderer: &Renderer,
        template: &Prepared,
        samples: &Samples,
        engine: &dyn TokenEngine,
        fields: &VolatileFields,
        kind: Option<crate::host::HostKind>,
    ) -> Result<TemplateReport> {
        let prompt_poet = kind == Some(crate::host::HostKind::PromptPoet);
        let analysis = if prompt_poet {
            request::build_for(renderer, template, samples, engine, true)?.into_analysis(
                engine,
                renderer.origins(),
                &template.name,
            )?
        } else {
            analyse_template(renderer, template, samples, engine)?
        };
        Ok(self.report_from(path, renderer, template, samples, analysis, fields))
    }

    /// The report of a template whose renders are analysed: the rules, the samples'
    /// findings, and the figures without the renders.
    fn report_from(
        &self,
        path: &Path,
        renderer: &Renderer,
        template: &Prepared,
        samples: &Samples,
        analysis: crate::analyse::Analysis,
        fields: &VolatileFields,
    ) -> TemplateReport {
        tracing::info_span!(target: crate::profile::STAGE, "rules")
            .in_scope(|| self.rules_report(path, renderer, template, samples, analysis, fields))
    }

    fn rules_report(
        &self,
        path: &Path,
        renderer: &Renderer,
        template: &Prepared,
        samples: &Samples,
        mut analysis: crate::analyse::Analysis,
        fields: &VolatileFields,
    ) -> TemplateReport {
        let config = &self.config;
        analysis.cached_tokens_expected = self
            .profile
            .cached_tokens(analysis.shared_prefix_tokens, analysis.tokens_min);
        let mut findings = run_rules(
            renderer,
            template,
            &analysis,
            fields,
            config,
            &self.severities,
            &self.profile,
            &samples.assumed,
        );
        findings.extend(sample_findings(
            renderer,
            template,
            samples,
            config,
            &self.severities,
        ));
        findings.sort_by_key(|f| (f.span.start, f.rule.code));
        if template.format == crate::formats::TemplateFormat::FString {
            // No fix rewrites an f-string: its finding says so where a fix would be offered.
            for finding in &mut findings {
                if matches!(
                    finding.rule.code,
                    RuleCode::VolatileBeforeStable
                        | RuleCode::DivergenceBeforeStable
                        | RuleCode::UnstableSerialization
                        | RuleCode::WhitespaceDrift
                        | RuleCode::MidTokenBoundary
                ) {
                    finding.help = format!(
                        "{}; no automatic fix: {}",
                        finding.help,
                        crate::formats::fstring::NO_FIX
                    );
                }
            }
        }
        TemplateReport {
            path: source::display_path(path),
            source: template.source.clone(),
            analysis: analysis.without_renders(),
            findings,
            stand_ins: stand_ins(template, samples),
            unknown: crate::samples::unknown_callables(template, samples),
            embedded: None,
            format: template.format,
            cost: None,
        }
    }

    /// The cache profile `cached_tokens_expected` is computed with.
    pub fn profile(&self) -> &CacheProfile {
        &self.profile
    }

    /// Discovers the templates under `paths` and checks them lazily, in discovery order.
    /// Errors that concern the whole run (a bad glob, a missing tokenizer) are `Err`; a
    /// template that fails is a [`TemplateOutcome::Failed`] and the others still run.
    pub fn check(&self, paths: &[PathBuf]) -> Result<Outcomes<'_>> {
        self.check_written(paths, None)
    }

    /// [`Self::check`] for a caller that writes each checked template in `form`
    /// ([`crate::report::stream::written_form`]) and reads the outcomes with
    /// [`Outcomes::next_for_writer`]: the results cache then serves templates in that form
    /// when it has them, and keeps the form of the others as the caller hands it back
    /// ([`Outcomes::keep_written`]).
    pub fn check_written(
        &self,
        paths: &[PathBuf],
        form: Option<&'static str>,
    ) -> Result<Outcomes<'_>> {
        if let Some(outcome) = super::chat::run(&self.chat_run(), paths, &self.profile)? {
            // Chat requests are few and checked up front; they go through the same finish.
            let mut ready: VecDeque<TemplateOutcome> = VecDeque::new();
            ready.extend(
                outcome
                    .report
                    .errors
                    .into_iter()
                    .map(TemplateOutcome::Failed),
            );
            ready.extend(
                outcome
                    .report
                    .skipped
                    .into_iter()
                    .map(TemplateOutcome::Skipped),
            );
            ready.extend(
                outcome
                    .report
                    .templates
                    .into_iter()
                    .map(|t| TemplateOutcome::Checked(Box::new(self.finish(t)))),
            );
            return Ok(Outcomes {
                linter: self,
                unmatched_globs: outcome.unmatched_globs,
                ready: ready
                    .into_iter()
                    .map(|o| ForWriter::Outcome(o, None))
                    .collect(),
                work: None,
                cache: None,
                form: None,
            });
        }
        // A run that checks every template afresh needs the tokenizer and the volatile
        // fields' regexes: both start now, on threads of their own, while this thread finds
        // the templates and parses the first chunk.
        let mut loading = None;
        if self.options.results_cache.is_none() {
            VolatileFields::compile_builtin_in_background();
            loading = self.load_engine_in_background();
        }
        let config = &self.config;
        // A cache folder an earlier run made is opened (and the pack the lookups read first
        // is read) on another thread, started first, while this one compiles the fields and
        // globs and walks the tree; a folder not made yet is made after the walk, only when
        // it found templates.
        let (found, opened) = std::thread::scope(|scope| {
            let opening = self
                .options
                .results_cache
                .as_deref()
                .filter(|dir| dir.is_dir())
                .map(|dir| {
                    scope.spawn(move || {
                        let span =
                            tracing::info_span!(target: crate::profile::TIMELINE, "open cache")
                                .entered();
                        let cache = self.open_cache(dir);
                        if let Some(cache) = &cache {
                            cache.read_ahead(form.is_some());
                        }
                        drop(span);
                        // The workers start here too, off the walk's path.
                        let _span =
                            tracing::info_span!(target: crate::profile::TIMELINE, "pool start")
                                .entered();
                        (cache, start_workers())
                    })
                });
            let found = (|| {
                let setup =
                    tracing::info_span!(target: crate::profile::TIMELINE, "fields and globs")
                        .entered();
                let fields = VolatileFields::new(&config.volatile_fields)?;
                // A bad glob comes from the config (or its defaults): say which file.
                let matcher = Matcher::new(&config.include, &config.exclude)
                    .and_then(|m| Ok(m.with_hosts(HostSettings::new(&config.embedded)?)))
                    .map_err(|e| Error::input(format!("{}: {e}", config_name(config))))?;
                drop(setup);
                let _span =
                    tracing::info_span!(target: crate::profile::TIMELINE, "discover").entered();
                Ok::<_, Error>((fields, discover::find(paths, &matcher)?))
            })();
            let opened = opening.map(|opening| {
                opening
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            });
            (found, opened)
        });
        let (fields, discovery) = found?;
        let mut ready: VecDeque<TemplateOutcome> = nothing_found(&discovery)
            .into_iter()
            .map(|(folder, e)| TemplateOutcome::Failed(TemplateError::new(folder, "", e)))
            .collect();
        ready.extend(
            discovery
                .failed
                .into_iter()
                .map(|(path, e)| TemplateOutcome::Failed(TemplateError::new(path, "", e))),
        );
        ready.extend(discovery.skipped.into_iter().map(|s| {
            TemplateOutcome::Skipped(SkippedTemplate {
                path: s.path,
                reason: s.reason,
            })
        }));
        ready.extend(discovery.unchecked.into_iter().map(|place| {
            TemplateOutcome::Unchecked(UncheckedPlace {
                path: place.path,
                line: place.line,
                reason: place.reason,
            })
        }));
        let (targets, unrendered): (Vec<Target>, Vec<Target>) = discovery
            .targets
            .into_iter()
            .partition(|target| renders(target.format));
        ready.extend(unrendered.iter().map(not_rendered));
        let (opened, started) = match opened {
            Some((cache, pool)) => (Some(cache), Some(pool)),
            None => (None, None),
        };
        let cache = match (&self.options.results_cache, opened) {
            _ if targets.is_empty() => None,
            (_, Some(opened)) => opened,
            (Some(dir), None) => {
                let _span =
                    tracing::info_span!(target: crate::profile::TIMELINE, "open cache").entered();
                self.open_cache(dir)
            }
            (None, None) => None,
        }
        .map(Arc::new);
        // A written form is kept only with the cache.
        let form = form.filter(|_| cache.is_some());
        let work = if targets.is_empty() {
            None
        } else {
            let pool = match started {
                Some(started) => started,
                None => {
                    let _span = tracing::info_span!(target: crate::profile::TIMELINE, "pool start")
                        .entered();
                    start_workers()
                }
            }
            .map_err(|e| Error::input(format!("cannot start worker threads: {e}")))?;
            let mut work = Work {
                targets: targets.into(),
                engine: None,
                fields,
                pool,
                project_root: {
                    let root = config.project_root(&self.options.cwd);
                    root.canonicalize().unwrap_or(root)
                },
                renderers: [BTreeMap::new(), BTreeMap::new()],
                round: 0,
                to_forget: [Vec::new(), Vec::new()],
                next: None,
                cache: cache.clone(),
                form,
                first: None,
                chunk_len: CHUNK_TEMPLATES,
            };
            // The tokenizer is loaded only when a template is checked afresh: a run the
            // cache serves whole never loads it. The first chunk is looked up here, so a
            // tokenizer that does not load still stops the run before any output.
            if cache.is_some() {
                let first = work.take_chunk();
                let looked_up = work.look_up(&first, config, 0);
                if looked_up.iter().any(|(_, hit)| hit.is_none()) {
                    work.engine = Some(self.engine()?);
                }
                work.first = Some((first, looked_up));
            } else {
                // The tokenizer loads (a few ms of decoding and building its merge table)
                // while the first chunk is parsed on this thread; both are needed before
                // the first template is checked, and a failed load still stops the run here.
                let first_span =
                    tracing::info_span!(target: crate::profile::TIMELINE, "first chunk").entered();
                let first = work.take_chunk();
                let cached = work.look_up(&first, config, 0);
                let prepared = parse_chunk(&mut work.renderers[0], config, &first, &cached);
                drop(first_span);
                work.engine = Some(match loading.take() {
                    Some(loading) => self.keep_engine(loading.finish()?),
                    None => self.engine()?,
                });
                work.next = Some(ParsedChunk {
                    targets: first,
                    cached,
                    prepared,
                });
            }
            Some(work)
        };
        Ok(Outcomes {
            linter: self,
            unmatched_globs: discovery.unmatched_globs,
            ready: ready
                .into_iter()
                .map(|o| ForWriter::Outcome(o, None))
                .collect(),
            work,
            cache,
            form,
        })
    }

    /// The results cache in `dir`, keyed on what applies to every template of this run;
    /// `None` when a part of the key cannot be read (the run then reports why, uncached)
    /// or the folder cannot be made. What is stored is the finished report, so the key
    /// holds what [`Self::finish`] reads too (the profile, the config, the project root).
    fn open_cache(&self, dir: &Path) -> Option<ResultsCache> {
        let setting = &self.options.settings.tokenizer;
        let content = crate::tokenize::TokenizerSpec::parse(setting)
            .and_then(|spec| spec.content())
            .ok()?;
        ResultsCache::open(dir, |files| {
            let tokenizer = match content {
                TokenizerContent::Builtin(key) => key.to_owned(),
                TokenizerContent::File(path) => {
                    crate::results_cache::hex(&files.record(&path, false).ok()??.digest)
                }
            };
            Some(self.run_inputs(&tokenizer))
        })
    }

    /// What applies to every template of a run, for the results cache's key.
    fn run_inputs(&self, tokenizer: &str) -> String {
        format!(
            "tokenizer {tokenizer}\nengine {:?}\nsettings {:?}\ncwd {}\nproject root {}\nno_ignores {}\nreference engine {:?}\nrules {:?}\nfields {:?}\nconfig {:?}",
            self.profile,
            self.options.settings,
            self.options.cwd.display(),
            self.project_root.display(),
            self.options.no_ignores,
            std::env::var("PREFIXLINT_ENGINE").ok(),
            crate::rules::source().collect::<Vec<_>>(),
            VolatileFields::builtin_source().collect::<Vec<_>>(),
            self.config,
        )
    }

    /// What every checked template gets, whichever path checked it: the profile's view of
    /// the prefix, the reported sites, and the user's suppressions.
    fn finish(&self, template: TemplateReport) -> TemplateReport {
        self.finish_in(template, None)
    }

    /// [`Self::finish`] for a template that may be embedded in a host file (`embedded`
    /// with the template's name): suppressions are read in the template's text and on the
    /// host line that owns it, then the report moves to the host.
    fn finish_in(
        &self,
        mut template: TemplateReport,
        embedded: Option<(&Embedded, &str)>,
    ) -> TemplateReport {
        let config = &self.config;
        let analysis = &mut template.analysis;
        analysis.cached_tokens_expected = self
            .profile
            .cached_tokens(analysis.shared_prefix_tokens, analysis.tokens_min);
        analysis.retain_reported_sites(config.min_lost_tokens);
        let name = request::name_in_project(Path::new(&template.path), &self.project_root);
        let findings = std::mem::take(&mut template.findings);
        template.findings = self.suppressions.apply(
            Path::new(&name),
            &template.source,
            findings,
            &self.severities,
        );
        if let Some((embedded, template_name)) = embedded {
            template = super::embedded::to_host(template, embedded, template_name);
            let findings = std::mem::take(&mut template.findings);
            template.findings = self.suppressions.apply_host_line(
                &embedded.host,
                embedded.template.anchor_line,
                findings,
                &self.severities,
            );
        }
        template.cost = crate::cost::template_cost(
            &self.profile,
            &template.analysis,
            !template.findings.is_empty(),
        );
        template.keep_quoted_source();
        template
    }
}

impl Linter {
    /// The tokenizer of the settings, loaded once by a caller that checks many buffers
    /// (the editor server).
    pub fn load_engine(&self) -> Result<Box<dyn TokenEngine>> {
        self.options.settings.load_tokenizer()
    }

    /// The tokenizer setting [`Linter::load_engine`] loads: a changed one needs a reload.
    pub fn tokenizer_setting(&self) -> &str {
        &self.options.settings.tokenizer
    }

    /// [`Linter::check_source`] for the editor server: with a tokenizer the caller loaded
    /// once (`engine`), the texts of other open files by canonical path (`unsaved`: includes
    /// read them instead of the disk), and an [`Inspection`] of what the figures were
    /// computed from, for hovers and code actions.
    pub fn check_buffer<'t>(
        &self,
        path: &Path,
        text: impl Into<request::TemplateText<'t>>,
        samples_text: Option<&str>,
        unsaved: Arc<BTreeMap<PathBuf, String>>,
        engine: &dyn TokenEngine,
    ) -> (TemplateOutcome, Option<Inspection>) {
        let text = text.into();
        let root = root_for(path, &self.config.project_root(&self.options.cwd));
        let name = template_name(path, &root);
        let display = source::display_path(path);
        let checked = (|| {
            let fields = VolatileFields::new(&self.config.volatile_fields)?;
            let mut settings = self.config.render_settings(root.clone());
            settings.unsaved = unsaved;
            let mut renderer = Renderer::new(settings)?;
            let (template, samples) = request::prepare_source(
                path,
                text,
                &root,
                &mut renderer,
                &fields,
                &self.config,
                samples_text,
            )?;
            let samples_path = crate::samples::samples_path(path);
            let starter_samples =
                (samples_text.is_none() && !crate::samples::is_present(&samples_path)).then(|| {
                    let shapes = crate::samples::infer(&renderer, &template);
                    let starter = crate::samples::emit::starter_samples(
                        &shapes,
                        &fields,
                        self.config.synthesized_renders,
                    );
                    crate::samples::emit::samples_yaml(&display, &starter, &fields)
                });
            let requests = request::build(&renderer, &template, &samples, engine)?;
            let analysis = requests.analyse(engine, renderer.origins(), &template.name)?;
            let origins = (0..).map_while(|id| renderer.origins().get(id)).collect();
            let report = self.report_from(path, &renderer, &template, &samples, analysis, &fields);
            let inspection = Inspection {
                template_name: name.clone(),
                renders: requests.renders,
                tokens: requests.tokens,
                origins,
                starter_samples,
                format: template.format,
            };
            Ok::<_, Error>((report, inspection))
        })();
        match checked {
            Ok((report, inspection)) => (
                TemplateOutcome::Checked(Box::new(self.finish(report))),
                Some(inspection),
            ),
            Err(e) => (
                TemplateOutcome::Failed(TemplateError::new(display, &name, e)),
                None,
            ),
        }
    }
}

impl Linter {
    /// The host format of `path` when `check` reads it for embedded templates (YAML,
    /// Python, `.prompty`); `None` for template files.
    pub fn host_kind(&self, path: &Path) -> Option<crate::host::HostKind> {
        self.hosts
            .kind_of(path)
            .filter(|kind| *kind != crate::host::HostKind::PromptPoet)
    }

    /// The templates embedded in a host file's text (an editor's YAML or Python buffer),
    /// each checked as [`Self::check_buffer`] checks a template, with host positions; no
    /// outcome when it holds none.
    pub fn check_host_buffer(
        &self,
        path: &Path,
        text: &str,
        unsaved: Arc<BTreeMap<PathBuf, String>>,
        engine: &dyn TokenEngine,
    ) -> Vec<TemplateOutcome> {
        let Some(kind) = self.host_kind(path) else {
            return Vec::new();
        };
        let display = source::display_path(path);
        let found = match discover::hosts::embedded_in(path, kind, text, &self.hosts) {
            Ok(found) => found,
            Err(discover::hosts::HostError::Unreadable(_)) => return Vec::new(),
            Err(discover::hosts::HostError::Failed(e)) => {
                return vec![TemplateOutcome::Failed(TemplateError::new(display, "", e))]
            }
        };
        let root = root_for(path, &self.config.project_root(&self.options.cwd));
        let host_name = template_name(path, &root);
        let (found, unrendered): (Vec<Embedded>, Vec<Embedded>) = found
            .into_iter()
            .partition(|embedded| renders(embedded.template.format));
        let unrendered = unrendered.into_iter().map(|embedded| {
            TemplateOutcome::Unchecked(UncheckedPlace {
                path: display.clone(),
                line: embedded.template.anchor_line,
                reason: not_rendered_reason(embedded.template.format),
            })
        });
        let checked: Vec<TemplateOutcome> = found
            .iter()
            .map(|embedded| {
                let name = embedded.name(&host_name);
                let checked = (|| {
                    let fields = VolatileFields::new(&self.config.volatile_fields)?;
                    let mut settings = self.config.render_settings(root.clone());
                    settings.unsaved = unsaved.clone();
                    let mut renderer = Renderer::new(settings)?;
                    let template = super::embedded::parse(embedded, &name, &mut renderer)?;
                    let samples = super::embedded::samples(
                        path,
                        embedded,
                        &renderer,
                        &template,
                        &fields,
                        &self.config,
                    )?;
                    self.report(path, &renderer, &template, &samples, engine, &fields)
                })();
                match checked {
                    Ok(report) => TemplateOutcome::Checked(Box::new(
                        self.finish_in(report, Some((embedded, &name))),
                    )),
                    Err(e) => TemplateOutcome::Failed(TemplateError::new(
                        display.clone(),
                        &name,
                        super::embedded::error_to_host(e, embedded, &name, &display),
                    )),
                }
            })
            .collect();
        checked.into_iter().chain(unrendered).collect()
    }
}

/// Whether this build renders templates of `format` (`render::formats` for the formats
/// other than Jinja); the others are reported unchecked, never rendered as another format.
fn renders(format: crate::formats::TemplateFormat) -> bool {
    use crate::formats::TemplateFormat::*;
    matches!(
        format,
        Jinja | Format | CrewAi | FString | SemanticKernel | Mustache
    )
}

fn not_rendered_reason(format: crate::formats::TemplateFormat) -> String {
    format!(
        "a {} template (`{format}`): this build does not render that format",
        crate::formats::detect::describe(format)
    )
}

/// A discovered template in a format this build does not render, as an unchecked place.
fn not_rendered(target: &Target) -> TemplateOutcome {
    TemplateOutcome::Unchecked(UncheckedPlace {
        path: source::display_path(&target.template),
        line: target
            .embedded
            .as_ref()
            .map_or(1, |embedded| embedded.template.anchor_line),
        reason: not_rendered_reason(target.format),
    })
}

impl Linter {
    /// The templates embedded in a host file's text (YAML, Python, `.prompty`); empty for a
    /// file that is not a host or holds none.
    pub fn embedded_templates(&self, path: &Path, text: &str) -> Result<Vec<Embedded>> {
        let Some(kind) = self.host_kind(path) else {
            return Ok(Vec::new());
        };
        match discover::hosts::embedded_in(path, kind, text, &self.hosts) {
            Ok(found) => Ok(found),
            Err(discover::hosts::HostError::Unreadable(_)) => Ok(Vec::new()),
            Err(discover::hosts::HostError::Failed(e)) => Err(e),
        }
    }

    /// An embedded template checked as `check` checks it, with `text` in place of its own
    /// (a fix's candidate), its findings left in the template's offsets (not moved to the
    /// host), and an [`Inspection`] of its renders: what the fixes verify against.
    pub fn check_embedded(
        &self,
        path: &Path,
        embedded: &Embedded,
        text: &str,
        engine: &dyn TokenEngine,
    ) -> (TemplateOutcome, Option<Inspection>) {
        let (outcome, inspection, _) = self.check_embedded_view(path, embedded, text, engine);
        (outcome, inspection)
    }

    /// [`Self::check_embedded`], with prompt-poet's parts per render (their contents one
    /// after another, each on its own lines: what a move between parts must keep).
    fn check_embedded_view(
        &self,
        path: &Path,
        embedded: &Embedded,
        text: &str,
        engine: &dyn TokenEngine,
    ) -> (TemplateOutcome, Option<Inspection>, Option<Vec<String>>) {
        let root = root_for(path, &self.config.project_root(&self.options.cwd));
        let name = embedded.name(&template_name(path, &root));
        let display = source::display_path(path);
        let mut embedded = embedded.clone();
        embedded.template.text = text.to_owned();
        let checked = (|| {
            let fields = VolatileFields::new(&self.config.volatile_fields)?;
            let mut renderer = Renderer::new(self.config.render_settings(root.clone()))?;
            let template = super::embedded::parse(&embedded, &name, &mut renderer)?;
            let samples = super::embedded::samples(
                path,
                &embedded,
                &renderer,
                &template,
                &fields,
                &self.config,
            )?;
            // prompt-poet's request is its parts' contents, not its YAML.
            let renders = request::render_all(&renderer, &template, &samples)?;
            let (renders, parts) = if embedded.template.kind == crate::host::HostKind::PromptPoet {
                let parts = renders
                    .iter()
                    .map(|render| {
                        crate::host::prompt_poet::parts(&render.text).map(|parts| {
                            let contents: Vec<&str> =
                                parts.iter().map(|p| p.content.as_str()).collect();
                            contents.join("\n")
                        })
                    })
                    .collect::<std::result::Result<Vec<String>, String>>()
                    .ok();
                (
                    request::prompt_poet_renders(renders, &template.name)?,
                    parts,
                )
            } else {
                (renders, None)
            };
            let requests = request::Requests::tokenize(renders, engine, request::Encoding::Prompt)?;
            let analysis = requests.analyse(engine, renderer.origins(), &template.name)?;
            let origins = (0..).map_while(|id| renderer.origins().get(id)).collect();
            let report = self.report_from(path, &renderer, &template, &samples, analysis, &fields);
            let inspection = Inspection {
                template_name: name.clone(),
                renders: requests.renders,
                tokens: requests.tokens,
                origins,
                starter_samples: None,
                format: template.format,
            };
            Ok::<_, Error>((report, inspection, parts))
        })();
        match checked {
            Ok((report, inspection, parts)) => {
                let report = self.finish(report);
                let report = self.host_line_suppressions(&embedded, report);
                (
                    TemplateOutcome::Checked(Box::new(report)),
                    Some(inspection),
                    parts,
                )
            }
            Err(e) => (
                TemplateOutcome::Failed(TemplateError::new(display, &name, e)),
                None,
                None,
            ),
        }
    }

    /// A finished report of an embedded template (in its own offsets) with the host line's
    /// own comment applied: `# prefixlint: ignore[…] reason` hides what it names, and its
    /// PL009/PL010 are about the host, not this text.
    fn host_line_suppressions(
        &self,
        embedded: &Embedded,
        mut report: TemplateReport,
    ) -> TemplateReport {
        let ours: Vec<(crate::rules::RuleCode, std::ops::Range<usize>)> = report
            .findings
            .iter()
            .map(|f| (f.rule.code, f.span.clone()))
            .collect();
        let findings = std::mem::take(&mut report.findings);
        report.findings = self
            .suppressions
            .apply_host_line(
                &embedded.host,
                embedded.template.anchor_line,
                findings,
                &self.severities,
            )
            .into_iter()
            .filter(|f| ours.contains(&(f.rule.code, f.span.clone())))
            .collect();
        report
    }

    /// A fix's candidate `text` checked as `check` checks the template it stands for (a
    /// template file, or `embedded`), in the chat template when one is configured; its
    /// findings in `text`'s offsets, an [`Inspection`] of the template's own renders, and
    /// what the request looks like ([`RequestView`]).
    pub fn check_for_fix<'t>(
        &self,
        path: &Path,
        embedded: Option<&Embedded>,
        text: impl Into<request::TemplateText<'t>>,
        engine: &dyn TokenEngine,
    ) -> (TemplateOutcome, Option<Inspection>, RequestView) {
        let text = text.into();
        let chat = super::chat::check_for_fix(
            &self.chat_run(),
            &self.profile,
            engine,
            path,
            embedded,
            text.text,
        );
        let root = root_for(path, &self.config.project_root(&self.options.cwd));
        let name = match embedded {
            Some(embedded) => embedded.name(&template_name(path, &root)),
            None => template_name(path, &root),
        };
        let failed = |e: Error| {
            TemplateOutcome::Failed(TemplateError::new(source::display_path(path), &name, e))
        };
        match (chat, embedded) {
            (None, None) => {
                let (outcome, inspection) =
                    self.check_buffer(path, text, None, Arc::default(), engine);
                (outcome, inspection, RequestView::default())
            }
            (None, Some(embedded)) => {
                let (outcome, inspection, parts) =
                    self.check_embedded_view(path, embedded, text.text, engine);
                let view = RequestView {
                    texts: parts,
                    chat_role: None,
                    request: false,
                };
                (outcome, inspection, view)
            }
            (Some(Err(e)), _) => (failed(e), None, RequestView::default()),
            (Some(Ok((report, view))), embedded) => {
                let mut report = self.finish(report);
                if let Some(embedded) = embedded {
                    report = self.host_line_suppressions(embedded, report);
                }
                let tokens = match request::Requests::tokenize(
                    view.renders.clone(),
                    engine,
                    request::Encoding::Chat,
                ) {
                    Ok(requests) => requests.tokens,
                    Err(e) => return (failed(e), None, RequestView::default()),
                };
                let inspection = Inspection {
                    template_name: view.template_name,
                    renders: view.renders,
                    tokens,
                    origins: view.origins,
                    starter_samples: None,
                    format: Default::default(),
                };
                let whole_request = embedded.is_none()
                    && super::chat::is_chat_request(&self.options.chat_requests, path);
                let request = RequestView {
                    texts: Some(view.messages),
                    chat_role: (!whole_request).then_some(view.role),
                    request: whole_request,
                };
                (
                    TemplateOutcome::Checked(Box::new(report)),
                    Some(inspection),
                    request,
                )
            }
        }
    }
}

/// What a fix's check says of the request a template's render becomes, besides its report.
#[derive(Debug, Clone, Default)]
pub struct RequestView {
    /// Per render, the request's text as lines a move must keep, when it is not the
    /// render itself: a chat request's message contents, prompt-poet's parts' contents.
    pub texts: Option<Vec<String>>,
    /// In a chat template, the role of the message a template file's (or YAML/Python
    /// template's) render becomes.
    pub chat_role: Option<String>,
    /// The text is a `--chat-request` file: a YAML request whose messages are templates.
    pub request: bool,
}

impl Linter {
    /// `--chat-request`'s files: a fix may write them too.
    pub fn chat_requests(&self) -> &[PathBuf] {
        &self.options.chat_requests
    }
}

/// What one [`Linter::check_buffer`] rendered and tokenized: the renders with their
/// source maps, their tokens, and the template places that wrote them.
pub struct Inspection {
    /// The template's name inside the render environment (what origins name it).
    pub template_name: String,
    pub renders: Vec<crate::render::Render>,
    pub tokens: Vec<crate::tokenize::Tokens>,
    pub origins: Vec<crate::render::instrument::Origin>,
    /// A starter `NAME.samples.yaml` (as `prefixlint samples` prints), when there is none.
    pub starter_samples: Option<String>,
    /// The format the template is written in: which fixes apply.
    pub format: crate::formats::TemplateFormat,
}

impl Inspection {
    /// The innermost expression of the template around byte `offset`, and for each render
    /// that wrote it: the tokens before its first output, and that output.
    pub fn written_at(
        &self,
        offset: usize,
    ) -> Option<(&crate::render::instrument::Origin, Vec<(usize, String)>)> {
        use crate::render::instrument::{MarkEvent, OriginKind};
        let inspection = self;
        let (id, origin) = inspection
            .origins
            .iter()
            .enumerate()
            .filter(|(_, o)| {
                o.kind == OriginKind::Expression
                    && *o.template == *inspection.template_name
                    && o.span.start <= offset
                    && offset <= o.span.end
            })
            .min_by_key(|(_, o)| o.span.len())?;
        let id = id as u32;
        let mut written = Vec::new();
        for (render, tokens) in inspection.renders.iter().zip(&inspection.tokens) {
            let Some(map) = &render.map else { continue };
            let open = map
                .events
                .iter()
                .find(|(_, e)| *e == MarkEvent::Open(id))
                .map(|(at, _)| *at);
            let Some(open) = open else { continue };
            let close = map
                .events
                .iter()
                .find(|(at, e)| *at >= open && *e == MarkEvent::Close(id))
                .map_or(open, |(at, _)| *at);
            let before = tokens
                .offsets
                .iter()
                .filter(|(start, _)| *start < open)
                .count();
            let value = render.text.get(open..close).unwrap_or("").to_owned();
            written.push((before, value));
        }
        Some((origin, written))
    }
}

/// A tokenizer loading on its own thread. Dropped unfinished (a run that stops before its
/// first template), it waits for the load, so that no half-written cache file is left.
struct Loading(Option<std::thread::JoinHandle<Result<Box<dyn TokenEngine>>>>);

impl Loading {
    fn finish(mut self) -> Result<Box<dyn TokenEngine>> {
        let thread = self.0.take().expect("a loading tokenizer has its thread");
        thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

impl Drop for Loading {
    fn drop(&mut self) {
        if let Some(thread) = self.0.take() {
            let _ = thread.join();
        }
    }
}

/// The outcomes of one [`Linter::check`], produced a chunk at a time.
pub struct Outcomes<'a> {
    linter: &'a Linter,
    /// Include globs that matched no file in the walked folders.
    pub unmatched_globs: Vec<String>,
    ready: VecDeque<ForWriter>,
    work: Option<Work>,
    cache: Option<Arc<ResultsCache>>,
    /// The form the caller writes templates in ([`Linter::check_written`]), with the cache.
    form: Option<&'static str>,
}

/// What [`Outcomes::next_for_writer`] hands the report's writer.
pub enum ForWriter {
    /// An outcome to write; for a checked template whose written form the results cache
    /// does not have, its key, to hand back with [`Outcomes::keep_written`].
    Outcome(TemplateOutcome, Option<TemplateKey>),
    /// A template the results cache served already written in the caller's form.
    Written(WrittenTemplate),
}

impl Outcomes<'_> {
    /// Templates served from the results cache, templates checked afresh, and files the
    /// keys read (the others' stamps were unchanged), when the cache is on.
    pub fn cache_stats(&self) -> Option<(usize, usize, usize)> {
        self.cache.as_ref().map(|cache| {
            let (hits, misses) = cache.stats();
            (hits, misses, cache.files_read())
        })
    }

    /// Whether an outcome is at hand: [`Self::next_for_writer`] returns it without checking
    /// templates first.
    pub fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// The next outcome, or a template served as written ([`Linter::check_written`]).
    pub fn next_for_writer(&mut self) -> Option<ForWriter> {
        loop {
            // Checked templates were finished on the workers.
            if let Some(next) = self.ready.pop_front() {
                return Some(next);
            }
            let work = self.work.as_mut()?;
            if work.targets.is_empty() && work.next.is_none() && work.first.is_none() {
                self.work = None;
                // A writer keeps written forms until it is done: it saves then.
                if let (Some(cache), None) = (&self.cache, self.form) {
                    cache.save();
                }
                return None;
            }
            let outcomes = work.check_next_chunk(self.linter);
            self.ready.extend(outcomes);
        }
    }

    /// Keeps a checked template as the writer wrote it, under the key
    /// [`ForWriter::Outcome`] came with; then [`Self::finish_written`] saves the cache.
    pub fn keep_written(&self, key: &TemplateKey, written: &WrittenTemplate) {
        if let (Some(cache), Some(_)) = (&self.cache, self.form) {
            cache.put_written(key, written);
        }
    }

    /// Saves the results cache once the writer has handed back every written form (with a
    /// form, [`Self::next_for_writer`] leaves that to the writer).
    pub fn finish_written(&self) {
        if let (Some(cache), Some(_)) = (&self.cache, self.form) {
            cache.save();
        }
    }
}

/// The templates still to check, and what checking them needs.
struct Work {
    targets: VecDeque<Target>,
    /// Loaded at the start, or (with the results cache) at the first template not served.
    engine: Option<Arc<dyn TokenEngine>>,
    fields: VolatileFields,
    pool: rayon::ThreadPool,
    /// Canonical, so each template's [`Location`] costs one `canonicalize`.
    project_root: PathBuf,
    /// Two sets of renderers, used by alternate chunks: one chunk is checked with one set
    /// while the next is parsed into the other (parsing needs `&mut Renderer`).
    renderers: [BTreeMap<PathBuf, Renderer>; 2],
    /// The number of chunks checked so far; its parity picks the renderers.
    round: usize,
    /// Each set's checked templates, forgotten by the job that parses the set's next chunk
    /// (on a worker, while the other chunk is checked) rather than between chunks.
    to_forget: [Vec<ToForget>; 2],
    /// The next chunk, parsed while the previous one was checked.
    next: Option<ParsedChunk>,
    cache: Option<Arc<ResultsCache>>,
    /// The form the caller writes templates in, looked up in the cache first.
    form: Option<&'static str>,
    /// The first chunk and its results-cache lookups, made when the run started.
    first: Option<(Vec<Located>, Vec<Looked>)>,
    /// Templates the next chunk takes: [`CHUNK_TEMPLATES`], doubled (up to
    /// [`SERVED_CHUNK_TEMPLATES`]) after each chunk the results cache served whole.
    chunk_len: usize,
}

/// A template to check and where it sits.
struct Located {
    target: Target,
    location: Location,
}

/// A template's results-cache key (when it can be cached) and what the cache has of it.
type Looked = (Option<TemplateKey>, Option<Hit>);

/// A template the results cache serves.
enum Hit {
    Report(Box<TemplateReport>),
    /// Written in the caller's form.
    Written(Box<WrittenTemplate>),
    /// Not a prompt after all, by its text (an HTML page template), with why.
    Skipped(String),
}

/// A chunk of templates parsed (those the cache does not serve), ready to check.
struct ParsedChunk {
    targets: Vec<Located>,
    cached: Vec<Looked>,
    prepared: Vec<(PathBuf, Result<Prepared>)>,
}

/// The worker threads a run checks templates on.
fn start_workers() -> std::result::Result<rayon::ThreadPool, rayon::ThreadPoolBuildError> {
    // Template recursion (macros, includes) runs on the workers: give them room.
    rayon::ThreadPoolBuilder::new()
        .stack_size(WORKER_STACK_BYTES)
        .build()
}

/// Templates parsed, then checked in parallel, per round: enough to keep the workers
/// busy, few enough that memory stays flat.
const CHUNK_TEMPLATES: usize = 64;

/// Templates a chunk takes at most while the results cache serves them whole: each chunk
/// is a hand-off to the workers and one to the writer, and a served template holds only
/// its written text, so a warm run goes in a few large chunks.
const SERVED_CHUNK_TEMPLATES: usize = 512;

impl Iterator for Outcomes<'_> {
    type Item = TemplateOutcome;

    fn next(&mut self) -> Option<TemplateOutcome> {
        match self.next_for_writer()? {
            ForWriter::Outcome(outcome, _) => Some(outcome),
            // Only `check_written` serves written forms, and its caller reads
            // `next_for_writer`; were one read here, it says so rather than go missing.
            ForWriter::Written(written) => Some(TemplateOutcome::Failed(TemplateError::new(
                written.row.path,
                "",
                Error::input("served already written: read with `Outcomes::next_for_writer`"),
            ))),
        }
    }
}

/// The values of a template that stand in for what the application makes: its samples'
/// stand-ins, and the functions another format calls (Semantic Kernel's
/// `{{plugin.function}}`), whose output is unknown.
fn stand_ins(template: &Prepared, samples: &Samples) -> Vec<String> {
    let mut stand_ins = samples.stand_ins.clone();
    if let Some(native) = &template.native {
        stand_ins.extend(
            native
                .calls
                .iter()
                .map(|call| format!("{call} (a function call: its output is unknown)")),
        );
    }
    stand_ins
}

/// A checked template's parsed form, by the root of the renderer that holds it.
type ToForget = (PathBuf, Prepared);

/// Parses a chunk's templates that the cache does not serve, in order (`&mut Renderer`).
fn parse_chunk(
    renderers: &mut BTreeMap<PathBuf, Renderer>,
    config: &Config,
    chunk: &[Located],
    cached: &[Looked],
) -> Vec<(PathBuf, Result<Prepared>)> {
    chunk
        .iter()
        .zip(cached)
        .map(|(located, (_, hit))| {
            if hit.is_some() {
                // Not read: a template served is not checked (no root copied for it).
                return (
                    PathBuf::new(),
                    Err(Error::input("served from the results cache")),
                );
            }
            let root = located.location.root.clone();
            let renderer = match renderers.entry(root.clone()) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => match Renderer::new(config.render_settings(root.clone())) {
                    Ok(renderer) => e.insert(renderer),
                    Err(err) => return (root, Err(err)),
                },
            };
            let parsed = match &located.target.embedded {
                Some(embedded) => {
                    super::embedded::parse(embedded, &located.location.name, renderer)
                }
                None => parse_template(
                    &located.target.template,
                    &located.location.name,
                    located.target.format,
                    renderer,
                ),
            };
            (root, parsed)
        })
        .collect()
}

impl Work {
    fn take_chunk(&mut self) -> Vec<Located> {
        let count = self.chunk_len.min(self.targets.len());
        let project_root = &self.project_root;
        self.targets
            .drain(..count)
            .map(|target| {
                let mut location = Location::of_real(target.real.clone(), project_root);
                if let Some(embedded) = &target.embedded {
                    location.name = embedded.name(&location.name);
                }
                Located { location, target }
            })
            .collect()
    }

    /// Checks the next chunk, and parses the one after it meanwhile.
    fn check_next_chunk(&mut self, linter: &Linter) -> Vec<ForWriter> {
        let config = &linter.config;
        let side = self.round % 2;
        self.round += 1;
        let current = match self.next.take() {
            Some(parsed) => parsed,
            None => {
                let (targets, cached) = match self.first.take() {
                    Some(first) => first,
                    None => {
                        let targets = self.take_chunk();
                        let cached = self.look_up(&targets, config, side);
                        (targets, cached)
                    }
                };
                let prepared = parse_chunk(&mut self.renderers[side], config, &targets, &cached);
                ParsedChunk {
                    targets,
                    cached,
                    prepared,
                }
            }
        };
        let next_span =
            tracing::info_span!(target: crate::profile::TIMELINE, "take chunk").entered();
        self.chunk_len = match current.cached.iter().all(|(_, hit)| hit.is_some()) {
            true => (self.chunk_len * 2).min(SERVED_CHUNK_TEMPLATES),
            false => CHUNK_TEMPLATES,
        };
        let next_targets = self.take_chunk();
        let next_cached = self.look_up(&next_targets, config, 1 - side);
        drop(next_span);
        let ParsedChunk {
            targets: chunk,
            cached,
            prepared,
        } = current;
        // A template not served needs the tokenizer; one that loaded before loads again (its
        // content is in the key), so a failure here is only reported, template by template.
        let mut engine_error = None;
        if self.engine.is_none() && cached.iter().any(|(_, hit)| hit.is_none()) {
            match linter.engine() {
                Ok(engine) => self.engine = Some(engine),
                Err(e) => engine_error = Some(e.to_string()),
            }
        }
        let [first, second] = &mut self.renderers;
        let (renderers, next_renderers) = if side == 0 {
            (&*first, second)
        } else {
            (&*second, first)
        };
        let engine = self.engine.as_deref();
        let engine_error = engine_error
            .as_deref()
            .unwrap_or("the tokenizer did not load");
        let fields = &self.fields;
        let cache = self.cache.as_deref();
        let served = cached.iter().all(|(_, hit)| hit.is_some());
        let check_one = |((located, (root, parsed)), (key, hit)): (
            (&Located, (PathBuf, Result<Prepared>)),
            Looked,
        )|
         -> (Option<ToForget>, Result<Hit>, Option<TemplateKey>) {
            let _span = tracing::info_span!(target: crate::profile::TIMELINE, "check").entered();
            let target = &located.target;
            if let Some(hit) = hit {
                // The report's written form is kept when the cache did not have it.
                let key = key.filter(|_| matches!(hit, Hit::Report(_)));
                return (None, Ok(hit), key);
            }
            let template = match parsed {
                Ok(parsed) => parsed,
                Err(e) => return (None, Err(e), None),
            };
            // A page template for people (a `.jinja2` HTML page) is not a prompt.
            if target.embedded.is_none() && crate::formats::detect::is_html_page(&template.source) {
                let reason = "an HTML page template, not a prompt".to_owned();
                return (Some((root, template)), Ok(Hit::Skipped(reason)), None);
            }
            let renderer = &renderers[&root];
            let samples = match &target.embedded {
                Some(embedded) => super::embedded::samples(
                    &target.template,
                    embedded,
                    renderer,
                    &template,
                    fields,
                    config,
                ),
                None => {
                    request::load_samples(&target.template, renderer, &template, fields, config)
                }
            };
            let samples = match samples {
                Ok(samples) => samples,
                Err(e) => return (Some((root, template)), Err(e), None),
            };
            let Some(engine) = engine else {
                return (
                    Some((root, template)),
                    Err(Error::input(engine_error)),
                    None,
                );
            };
            let report = linter.report_in(
                &target.template,
                renderer,
                &template,
                &samples,
                engine,
                fields,
                target.embedded.as_ref().map(|e| e.template.kind),
            );
            let embedded = target
                .embedded
                .as_deref()
                .map(|e| (e, located.location.name.as_str()));
            let report = report.map(|report| linter.finish_in(report, embedded));
            if let (Some(cache), Some(key), Ok(report)) = (cache, &key, &report) {
                cache.put(key, report);
            }
            (
                Some((root, template)),
                report.map(|report| Hit::Report(Box::new(report))),
                key,
            )
        };
        let stale = std::mem::take(&mut self.to_forget[1 - side]);
        let parse_next = || {
            let _span = tracing::info_span!(target: crate::profile::TIMELINE, "parse").entered();
            for (root, template) in stale {
                if let Some(renderer) = next_renderers.get_mut(&root) {
                    renderer.forget(&template);
                }
            }
            parse_chunk(next_renderers, config, &next_targets, &next_cached)
        };
        let (checked, next_prepared): (Vec<_>, _) = if served {
            // Nothing to check: no hand-off to the workers and back for each chunk.
            let checked = chunk
                .iter()
                .zip(prepared)
                .zip(cached)
                .map(check_one)
                .collect();
            (checked, parse_next())
        } else {
            // Rendering, tokenizing and the rules run in parallel; results keep input
            // order. The next chunk is parsed meanwhile, on whichever worker is free.
            let check = || {
                chunk
                    .par_iter()
                    .zip(prepared.into_par_iter())
                    .zip(cached.into_par_iter())
                    .map(check_one)
                    .collect()
            };
            self.pool.install(|| rayon::join(check, parse_next))
        };
        if !next_targets.is_empty() {
            self.next = Some(ParsedChunk {
                targets: next_targets,
                cached: next_cached,
                prepared: next_prepared,
            });
        }
        let _span = tracing::info_span!(target: crate::profile::TIMELINE, "collect").entered();
        let form = self.form;
        let mut outcomes = Vec::with_capacity(chunk.len());
        for (located, (parsed, result, key)) in chunk.iter().zip(checked) {
            self.to_forget[side].extend(parsed);
            let name = &located.location.name;
            outcomes.push(match result {
                Ok(Hit::Written(written)) => ForWriter::Written(*written),
                Ok(Hit::Skipped(reason)) => ForWriter::Outcome(
                    TemplateOutcome::Skipped(SkippedTemplate {
                        path: source::display_path(&located.target.template),
                        reason,
                    }),
                    None,
                ),
                Ok(Hit::Report(report)) => ForWriter::Outcome(
                    TemplateOutcome::Checked(report),
                    key.filter(|_| form.is_some()),
                ),
                Err(e) => {
                    // Only a failure shows the path (a `getcwd` for each template, else).
                    let display = source::display_path(&located.target.template);
                    let e = match &located.target.embedded {
                        Some(embedded) => {
                            super::embedded::error_to_host(e, embedded, name, &display)
                        }
                        None => e,
                    };
                    ForWriter::Outcome(
                        TemplateOutcome::Failed(TemplateError::new(display, name, e)),
                        None,
                    )
                }
            });
        }
        outcomes
    }

    /// Each template's results-cache key (when it can be cached) and stored report (when
    /// there is one), looked up in parallel.
    fn look_up(&mut self, chunk: &[Located], config: &Config, side: usize) -> Vec<Looked> {
        let Some(cache) = self.cache.clone() else {
            return chunk.iter().map(|_| (None, None)).collect();
        };
        // The include resolvers the keys follow are the renderers' own.
        let usable: Vec<bool> = chunk
            .iter()
            .map(|located| {
                let root = &located.location.root;
                // Looked up before it is copied: most templates share one root.
                if self.renderers[side].contains_key(root) {
                    return true;
                }
                match Renderer::new(config.render_settings(root.clone())) {
                    Ok(renderer) => {
                        self.renderers[side].insert(root.clone(), renderer);
                        true
                    }
                    Err(_) => false,
                }
            })
            .collect();
        let renderers = &self.renderers[side];
        let form = self.form;
        self.pool.install(|| {
            chunk
                .par_iter()
                .zip(usable.into_par_iter())
                .map(|(located, usable)| {
                    if !usable {
                        cache.uncacheable();
                        return (None, None);
                    }
                    let Location { root, name } = &located.location;
                    let target = &located.target;
                    let includes = renderers[root].includes();
                    let shape = [
                        target.format as u8,
                        target
                            .embedded
                            .as_ref()
                            .map_or(0, |e| 1 + e.template.kind as u8),
                    ];
                    let key_with = |samples_listed| {
                        cache.key(
                            &target.template,
                            name,
                            includes,
                            form,
                            samples_listed,
                            shape,
                        )
                    };
                    let key = key_with(target.samples_listed);
                    let hit = match &key {
                        Some(key) => match cache.get_written(key) {
                            Some(written) => Some(Hit::Written(Box::new(written))),
                            None => cache.get(key).map(|report| Hit::Report(Box::new(report))),
                        },
                        None => {
                            cache.uncacheable();
                            None
                        }
                    };
                    // Checked now: stored under a key whose samples file was looked for now
                    // (discovery's listing is older than the check's read).
                    let key = match (&hit, target.samples_listed) {
                        (None, Some(false)) => key.and_then(|_| key_with(None)),
                        _ => key,
                    };
                    (key, hit)
                })
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The results cache keys each template on these: a change to any re-checks it.
    #[test]
    fn the_run_inputs_hold_the_rules_the_field_files_the_config_and_the_tokenizer() {
        let dir = tempfile::tempdir().unwrap();
        let options = LintOptions {
            cwd: dir.path().to_path_buf(),
            ..LintOptions::default()
        };
        let linter = Linter::new(Config::default(), options).unwrap();
        let inputs = linter.run_inputs("TOKENIZER-HASH");
        assert!(inputs.contains("tokenizer TOKENIZER-HASH\n"));
        // The rule files as embedded: what the rules' data is parsed from.
        assert_eq!(crate::rules::source().count(), crate::rules::all().len());
        for text in crate::rules::source() {
            assert!(inputs.contains(&format!("{text:?}")));
        }
        for text in VolatileFields::builtin_source() {
            assert!(inputs.contains(&format!("{text:?}")));
        }
        assert!(inputs.contains(&format!("{:?}", Config::default())));
        let stricter = Config {
            min_lost_tokens: Config::default().min_lost_tokens + 1,
            ..Config::default()
        };
        let options = LintOptions {
            cwd: dir.path().to_path_buf(),
            ..LintOptions::default()
        };
        let other = Linter::new(stricter, options).unwrap();
        assert_ne!(other.run_inputs("TOKENIZER-HASH"), inputs);
        // The settings too: `--no-special-tokens` changes the counts, not the config.
        let options = LintOptions {
            cwd: dir.path().to_path_buf(),
            settings: Settings {
                special_tokens: false,
                ..Settings::default()
            },
            ..LintOptions::default()
        };
        let other = Linter::new(Config::default(), options).unwrap();
        assert_ne!(other.run_inputs("TOKENIZER-HASH"), inputs);
    }
}
