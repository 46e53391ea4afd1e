//! Stage 3: render templates with minijinja, in a sandbox, the way Python does.
//!
//! Two dialects: plain [`Dialect::Jinja2`] (what prompt repositories render with) and
//! [`Dialect::Transformers`] (what `apply_chat_template` does to a model's chat template).
//! A render is done instrumented, which yields a [`SourceMap`] and, where no output of the
//! template can be captured as a value ([`captures`]), the text; elsewhere it is done
//! plainly too, which is then the authoritative text, and the map is kept when the two agree.

pub mod captures;
pub mod clock;
pub mod compat;
pub mod datetime;
pub mod formats;
pub mod includes;
pub mod instrument;
mod jinja2_builtins;
mod json_memo;
pub mod mutable;
pub mod nesting;
pub mod python;
pub mod stand_ins;
pub mod undeclared;
pub mod uses;

use crate::error::{Error, Result};
use crate::source;
use clock::Clock;
use includes::{IncludeResolver, Refusal};
use instrument::{OriginTable, SourceMap};
use minijinja::syntax::SyntaxConfig;
use minijinja::value::{Kwargs, Value};
use minijinja::{Environment, ErrorKind, UndefinedBehavior};
use python::JsonOptions;
use stand_ins::{CallableKind, StandInMode, StandIns, UnknownCallable};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The name a template includes when a variable names the template to include: the
/// renderer registers it as an empty template.
pub const STAND_IN_TEMPLATE: &str = "/prefixlint:stand-in-template";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Python Jinja2 defaults: lenient undefined (configurable), HTML-safe sorted `tojson`,
    /// no trimming.
    Jinja2,
    /// transformers' chat environment: trim/lstrip, `raise_exception`, plain `tojson`.
    Transformers,
}

/// What an undefined variable does, as the `undefined=` class of a Jinja2 `Environment`.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Deserialize,
    serde::Serialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum UndefinedMode {
    /// `jinja2.Undefined`, Jinja2's default: prints as nothing, is false, iterates as empty;
    /// reading an attribute of it is an error.
    #[default]
    Lenient,
    /// `jinja2.StrictUndefined`: any use but `is defined` is an error.
    Strict,
    /// `jinja2.ChainableUndefined`: like lenient, and attributes of it are undefined too.
    Chainable,
}

impl UndefinedMode {
    fn behavior(self) -> UndefinedBehavior {
        match self {
            UndefinedMode::Lenient => UndefinedBehavior::Lenient,
            UndefinedMode::Strict => UndefinedBehavior::Strict,
            UndefinedMode::Chainable => UndefinedBehavior::Chainable,
        }
    }
}

/// Sandbox limits; every render runs under all of them.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// minijinja fuel: roughly one unit per instruction and per 64 bytes of data.
    pub fuel: u64,
    pub recursion: usize,
    pub max_output_bytes: usize,
}

impl Limits {
    /// The most fuel a config may grant: 10× the default, seconds of work and at most
    /// 40 million list slots (fuel pays for data too). Past it,
    /// `fuel: 18446744073709551615` and an empty loop ran for hours.
    pub const MAX_FUEL: u64 = 20_000_000;
    /// minijinja's own ceiling: deeper recursion needs a bigger stack than workers have.
    pub const MAX_RECURSION: usize = 500;
    /// The largest render a config may allow: 16× the default.
    pub const MAX_OUTPUT_BYTES: usize = 64 * 1024 * 1024;

    /// Each limit over its ceiling, as `(key, value, ceiling)`.
    pub fn over_ceiling(&self) -> Option<(&'static str, u64, u64)> {
        [
            ("fuel", self.fuel, Self::MAX_FUEL),
            (
                "recursion",
                self.recursion as u64,
                Self::MAX_RECURSION as u64,
            ),
            (
                "max_output_bytes",
                self.max_output_bytes as u64,
                Self::MAX_OUTPUT_BYTES as u64,
            ),
        ]
        .into_iter()
        .find(|(_, value, ceiling)| value > ceiling)
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            fuel: 2_000_000,
            recursion: 100,
            max_output_bytes: 4 * 1024 * 1024,
        }
    }
}

#[derive(Debug, Clone)]
pub struct RenderSettings {
    pub dialect: Dialect,
    pub limits: Limits,
    pub trim_blocks: bool,
    pub lstrip_blocks: bool,
    /// Includes and imports never resolve outside this folder (and `search_path`).
    pub root: PathBuf,
    /// Jinja2 dialect only: transformers' chat environment is always lenient.
    pub undefined: UndefinedMode,
    /// Extra folders include names are looked up in, after the template's own folders.
    pub search_path: Vec<PathBuf>,
    /// The application's filters, tests and globals, as declared in the config.
    pub stand_ins: StandIns,
    /// Whether filters and tests nobody declared get stand-ins (Jinja2 dialect, not under
    /// `undefined: strict`).
    pub unknown_stand_ins: StandInMode,
    /// Texts that stand for files on disk, by canonical path: an editor's unsaved buffers
    /// of included templates (`prefixlint server`). Confinement still applies.
    pub unsaved: Arc<BTreeMap<PathBuf, String>>,
}

impl RenderSettings {
    pub fn new(dialect: Dialect, root: PathBuf) -> Self {
        let chat = dialect == Dialect::Transformers;
        RenderSettings {
            dialect,
            limits: Limits::default(),
            trim_blocks: chat,
            lstrip_blocks: chat,
            root,
            undefined: UndefinedMode::default(),
            search_path: Vec::new(),
            stand_ins: StandIns::default(),
            unknown_stand_ins: StandInMode::default(),
            unsaved: Arc::default(),
        }
    }

    /// Unknown filters and tests stand in: plain Jinja2 templates only (a chat template's
    /// environment is transformers'), and not when undefined values must fail.
    pub fn stands_in_for_unknown(&self) -> bool {
        self.dialect == Dialect::Jinja2
            && self.unknown_stand_ins == StandInMode::On
            && self.undefined != UndefinedMode::Strict
    }
}

/// A template that parsed, ready to render many times.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub name: Arc<str>,
    pub source: Arc<str>,
    instrumented: bool,
    includes: Arc<IncludeResolver>,
    /// Filters and tests it (or what it includes) uses that rendered with stand-ins.
    pub unknown: Vec<UnknownCallable>,
    /// It (or what it includes) calls a mutating list or dict method: each render gets
    /// mutable copies of its context's lists and dicts.
    mutates: bool,
    /// The list and dict constructors its rewritten literals call (not its variables).
    constructors: Vec<&'static str>,
    /// It (or what it reaches) may capture output as a value ([`captures`]): its text
    /// comes from the plain render, else from the instrumented one alone.
    captures_output: bool,
    /// The format it is written in (`templates[].format`).
    pub format: crate::formats::TemplateFormat,
    /// A template of another format than Jinja, rendered natively ([`formats`]).
    pub native: Option<Arc<formats::Native>>,
}

impl Prepared {
    /// The same template rendered once, without the origin map: for callers that need only
    /// the text (e.g. `audit` over many logged requests), half the render work.
    pub fn without_source_map(mut self) -> Self {
        self.instrumented = false;
        self
    }

    /// The resolver the template's includes were loaded with.
    pub fn includes(&self) -> &IncludeResolver {
        &self.includes
    }

    /// Whether a render is done twice, plainly for the text and instrumented for the map
    /// ([`captures`]), rather than once.
    pub fn renders_twice(&self) -> bool {
        self.instrumented && self.captures_output
    }
}

/// One render: the exact text, and where its bytes came from when that could be traced.
#[derive(Debug, Clone)]
pub struct Render {
    pub text: String,
    pub map: Option<SourceMap>,
}

/// Sources seen by the loaders, by template name, for error reports.
type SourceCache = Arc<Mutex<HashMap<String, Arc<str>>>>;

pub struct Renderer {
    plain: Environment<'static>,
    marked: Environment<'static>,
    origins: Arc<OriginTable>,
    sources: SourceCache,
    includes: Arc<IncludeResolver>,
    settings: RenderSettings,
    /// Stand-ins registered so far for unknown filters and tests.
    registered: BTreeSet<(CallableKind, String)>,
    /// What [`captures`] read in each source the plain environment holds, by name.
    facts: HashMap<String, Arc<captures::SourceFacts>>,
    /// The templates each source the plain environment holds includes, imports or extends
    /// by a literal name, resolved, by name: found once per renderer (a partial is reached
    /// by many templates, and each template's walk is made again when its samples are
    /// inferred), dropped with the template.
    references: HashMap<String, Arc<[String]>>,
    /// Whether each source the plain environment holds calls a mutating method, by name:
    /// read once per renderer, as `references`.
    mutating: HashMap<String, bool>,
}

impl Renderer {
    pub fn new(settings: RenderSettings) -> Result<Self> {
        let syntax = SyntaxConfig::builder()
            .trim_blocks(settings.trim_blocks)
            .lstrip_blocks(settings.lstrip_blocks)
            // Jinja2 (and so transformers) drops one trailing newline by default.
            .keep_trailing_newline(false)
            .build()
            .map_err(|e| Error::input(format!("invalid template syntax settings: {e}")))?;
        let origins = Arc::new(OriginTable::default());
        let sources: SourceCache = Arc::default();
        let mut includes = IncludeResolver::new(&settings.root, &settings.search_path);
        if settings.stands_in_for_unknown() {
            includes = includes.with_loader_stand_in(STAND_IN_TEMPLATE);
        }
        let includes = Arc::new(includes);
        let mut plain = base_environment(&settings, syntax.clone());
        let mut marked = base_environment(&settings, syntax.clone());
        install_loader(&mut plain, &settings, &includes, sources.clone(), None);
        install_loader(
            &mut marked,
            &settings,
            &includes,
            sources.clone(),
            Some((origins.clone(), syntax)),
        );
        install_marker_functions(&mut marked);
        // The marked render marks the stand-ins' output where it prints it.
        marked.set_formatter(|out, _state, value| {
            out.write_str(&instrument::with_stand_in_markers(&printed(value)))
                .map_err(|_| minijinja::Error::new(ErrorKind::WriteFailure, "write failed"))
        });
        // What a synthesized variable that names a template to include names.
        for env in [&mut plain, &mut marked] {
            env.add_template(STAND_IN_TEMPLATE, "")
                .map_err(|e| Error::input(format!("cannot register the stand-in template: {e}")))?;
        }
        Ok(Renderer {
            plain,
            marked,
            origins,
            sources,
            includes,
            settings,
            registered: BTreeSet::new(),
            facts: HashMap::new(),
            references: HashMap::new(),
            mutating: HashMap::new(),
        })
    }

    pub fn settings(&self) -> &RenderSettings {
        &self.settings
    }

    /// Where this renderer's include names lead.
    pub fn includes(&self) -> &IncludeResolver {
        &self.includes
    }

    pub fn origins(&self) -> &OriginTable {
        &self.origins
    }

    /// Parses a template written in `format` (once) and registers it under `name`: Jinja
    /// as [`Self::prepare`], the other formats natively ([`formats`]), with their Jinja
    /// reading held in the environment for samples and PL011.
    pub fn prepare_as(
        &mut self,
        name: &str,
        source: &str,
        format: crate::formats::TemplateFormat,
    ) -> Result<Prepared> {
        if format == crate::formats::TemplateFormat::Jinja {
            return self.prepare(name, source);
        }
        let name: Arc<str> = Arc::from(name);
        let native = formats::prepare(format, &name, source, &self.origins).map_err(|e| {
            let shown = self.display_name(&name);
            let end = source[e.offset.min(source.len())..]
                .chars()
                .next()
                .map_or(e.offset, |c| e.offset + c.len_utf8());
            Error::located(
                &shown,
                source,
                e.offset..end,
                format!("{shown}: syntax error ({format} template): {}", e.message),
                "here",
                Some(format!(
                    "the template is read as {} ({format}); declare another format if it is not one",
                    format_description(format)
                )),
            )
        })?;
        // Samples infer shapes from this reading; it is never rendered. A reading that
        // does not parse (a name minijinja cannot take) leaves the template without shapes.
        let _ = self
            .plain
            .add_template_owned(name.to_string(), native.jinja_reading().to_owned());
        Ok(Prepared {
            name,
            source: Arc::from(source),
            instrumented: true,
            includes: self.includes.clone(),
            unknown: Vec::new(),
            mutates: false,
            constructors: Vec::new(),
            captures_output: false,
            format,
            native: Some(Arc::new(native)),
        })
    }

    /// Parses a template (once) and registers it under `name`.
    pub fn prepare(&mut self, name: &str, source: &str) -> Result<Prepared> {
        // Diagnostics show `source` as written; the parser gets it with Python-only syntax
        // rewritten, at the same byte offsets.
        let source = preprocess(source, self.settings.dialect);
        let parsed = compat::python_syntax(&source, self.plain.syntax()).into_owned();
        if let Err(deep) = nesting::check(&parsed, self.plain.syntax()) {
            return Err(self.too_deep(name, &source, &deep));
        }
        let name: Arc<str> = Arc::from(name);
        self.sources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.to_string(), Arc::from(source.as_str()));
        if let Err(e) = self
            .plain
            .add_template_owned(name.to_string(), parsed.clone())
        {
            let error = self.template_error(&e, &name);
            // A template that does not parse is never checked, so never forgotten.
            self.sources
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(name.as_ref());
            return Err(error);
        }
        // Instrumenting lexes the source; what `captures` reads comes from the same tokens.
        let (marked, facts) = instrument::instrument_with_facts(
            &parsed,
            &source,
            &name,
            self.marked.syntax(),
            &self.origins,
        );
        let instrumented = marked
            .and_then(|marked| {
                self.marked
                    .add_template_owned(name.to_string(), marked)
                    .ok()
            })
            .is_some();
        self.facts.insert(name.to_string(), Arc::new(facts));
        let mut prepared = Prepared {
            name,
            source: Arc::from(source.as_str()),
            instrumented,
            includes: self.includes.clone(),
            unknown: Vec::new(),
            mutates: false,
            constructors: Vec::new(),
            captures_output: true,
            format: crate::formats::TemplateFormat::Jinja,
            native: None,
        };
        let syntax = self.plain.syntax().clone();
        // The template's own references are read afresh: its name may have held another
        // source before.
        self.references.remove(prepared.name.as_ref());
        self.mutating.remove(prepared.name.as_ref());
        let mut found = Vec::new();
        let sources = self.walk_reachable(&prepared.name, |name, source| {
            self.references.get(name).cloned().unwrap_or_else(|| {
                let resolved = self.resolved_references(name, source);
                found.push((name.to_owned(), resolved.clone()));
                resolved
            })
        });
        self.references.extend(found);
        let facts: Vec<Arc<captures::SourceFacts>> = sources
            .iter()
            .map(|(name, source)| self.facts_of(name, source))
            .collect();
        prepared.captures_output = !instrumented || self.output_captured(&sources, &facts);
        prepared.mutates = sources.iter().any(|(name, source)| {
            *self
                .mutating
                .entry(name.clone())
                .or_insert_with(|| mutable::mutates(source, &syntax))
        });
        if prepared.mutates {
            // A constructor name the template itself writes is its variable.
            let originals: Vec<Arc<str>> = {
                let cache = self.sources.lock().unwrap_or_else(|e| e.into_inner());
                sources
                    .iter()
                    .filter_map(|(name, _)| cache.get(name).cloned())
                    .collect()
            };
            prepared.constructors = mutable::LIST_NAMES
                .iter()
                .chain(mutable::DICT_NAMES)
                .copied()
                .filter(|name| {
                    !originals
                        .iter()
                        .any(|source| mutable::names_identifier(source, &syntax, name))
                })
                .collect();
        }
        if self.settings.stands_in_for_unknown() {
            prepared.unknown = self.stand_in_for_unknown(&facts);
            // Includes only the application's own loader resolves render empty.
            let mut loaded: Vec<UnknownCallable> = sources
                .iter()
                .flat_map(|(name, source)| {
                    template_references(source)
                        .into_iter()
                        .filter(|r| self.includes.stands_in(name, &r.name))
                        .map(|r| UnknownCallable {
                            kind: CallableKind::Loader,
                            name: r.name,
                        })
                        .collect::<Vec<_>>()
                })
                .collect();
            loaded.sort();
            loaded.dedup();
            prepared.unknown.extend(loaded);
        }
        Ok(prepared)
    }

    fn too_deep(&self, name: &str, source: &str, deep: &nesting::TooDeep) -> Error {
        let shown = self.display_name(name);
        Error::located(
            &shown,
            source,
            deep.offset..deep.offset + deep.len,
            format!("{shown}: {}", nesting::MESSAGE),
            "nested too deep here",
            Some(nesting::HELP.into()),
        )
    }

    /// What [`captures`] reads in a source the environment holds under `name`: read once
    /// per renderer (a partial is reached by many templates), dropped with the template.
    fn facts_of(&mut self, name: &str, source: &str) -> Arc<captures::SourceFacts> {
        if let Some(facts) = self.facts.get(name) {
            return facts.clone();
        }
        let facts = Arc::new(captures::source_facts(source, self.plain.syntax()));
        self.facts.insert(name.to_owned(), facts.clone());
        facts
    }

    /// Whether output may be captured in `sources` (a template and what it reaches, as
    /// [`Self::reachable_sources`] lists them, with their `facts`), or they reach a
    /// template not listed.
    fn output_captured(
        &self,
        sources: &[(String, String)],
        facts: &[Arc<captures::SourceFacts>],
    ) -> bool {
        let listed: BTreeSet<&str> = sources.iter().map(|(name, _)| name.as_str()).collect();
        let all_listed = sources.iter().zip(facts).all(|((name, _), facts)| {
            facts.references.iter().all(|reference| {
                self.includes
                    .resolve(name, reference)
                    .found()
                    .is_some_and(|found| listed.contains(found.as_str()))
            })
        });
        !all_listed || captures::any_captured(facts.iter().map(|f| f.as_ref()))
    }

    /// Registers an identity filter or a truth test for every filter and test the template
    /// and its includes name that the environment does not know, and returns them. The
    /// stand-ins stay registered (they are the same for every template): what makes a
    /// template's note is whether the environment knows the name without them.
    fn stand_in_for_unknown(
        &mut self,
        facts: &[Arc<captures::SourceFacts>],
    ) -> Vec<UnknownCallable> {
        let mut unknown = BTreeSet::new();
        for facts in facts {
            for (kind, name) in &facts.callables {
                let key = (*kind, name.clone());
                if self.registered.contains(&key) || !self.knows(key.0, &key.1) {
                    unknown.insert(key);
                }
            }
        }
        for (kind, name) in &unknown {
            if self.registered.insert((*kind, name.clone())) {
                for env in [&mut self.plain, &mut self.marked] {
                    match kind {
                        CallableKind::Filter => {
                            env.add_filter(name.clone(), stand_ins::identity_filter)
                        }
                        CallableKind::Test => env.add_test(name.clone(), stand_ins::truth_test),
                        // Functions stand in as sample values (`samples::synthesize`),
                        // loader names as the empty stand-in template.
                        CallableKind::Function | CallableKind::Loader => {}
                    }
                }
            }
        }
        unknown
            .into_iter()
            .map(|(kind, name)| UnknownCallable { kind, name })
            .collect()
    }

    /// Whether the environment defines a filter or test of this name.
    fn knows(&self, kind: CallableKind, name: &str) -> bool {
        let mut state = self.plain.empty_state();
        let missing = match kind {
            CallableKind::Filter => state
                .apply_filter(name, &[])
                .is_err_and(|e| e.kind() == ErrorKind::UnknownFilter),
            CallableKind::Test => state
                .perform_test(name, &[])
                .is_err_and(|e| e.kind() == ErrorKind::UnknownTest),
            CallableKind::Function => state.lookup(name).is_none(),
            CallableKind::Loader => true,
        };
        !missing
    }

    /// Drops a checked template's parsed forms, so memory stays flat over many templates.
    /// Includes stay loaded: other templates may share them.
    pub fn forget(&mut self, template: &Prepared) {
        self.plain.remove_template(&template.name);
        self.marked.remove_template(&template.name);
        self.sources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(template.name.as_ref());
        self.origins.forget(&template.name);
        self.facts.remove(template.name.as_ref());
        self.references.remove(template.name.as_ref());
        self.mutating.remove(template.name.as_ref());
    }

    /// Variables a template reads from its context, dotted for attribute access (`user.name`).
    /// Globals such as `now` or `range` are provided, not read, so they are left out.
    pub fn undeclared_variables(&self, template: &Prepared) -> BTreeSet<String> {
        let globals = self.provided_names(template);
        let mut variables = BTreeSet::new();
        for (name, _) in self.reachable_sources(template) {
            if let Ok(loaded) = self.plain.get_template(&name) {
                variables.extend(loaded.undeclared_variables(true));
            }
        }
        variables
            .into_iter()
            .filter(|path| !globals.contains(path.split('.').next().unwrap_or(path)))
            .collect()
    }

    /// The template and every template it includes, imports or extends by a literal name,
    /// transitively, as (name, source): included templates read the same context.
    pub fn reachable_sources(&self, template: &Prepared) -> Vec<(String, String)> {
        self.walk_reachable(&template.name, |name, source| {
            self.references
                .get(name)
                .cloned()
                .unwrap_or_else(|| self.resolved_references(name, source))
        })
    }

    /// [`Self::reachable_sources`] from `start`, with `references` giving what each source
    /// reaches by a literal name, resolved.
    fn walk_reachable(
        &self,
        start: &str,
        mut references: impl FnMut(&str, &str) -> Arc<[String]>,
    ) -> Vec<(String, String)> {
        let mut found = Vec::new();
        let mut seen = BTreeSet::new();
        let mut pending = vec![start.to_owned()];
        while let Some(name) = pending.pop() {
            if !seen.insert(name.clone()) || seen.len() > 256 {
                continue;
            }
            let Ok(loaded) = self.plain.get_template(&name) else {
                continue;
            };
            pending.extend(references(&name, loaded.source()).iter().cloned());
            found.push((name, loaded.source().to_owned()));
        }
        found
    }

    /// What `source` (held under `name`) includes, imports or extends by a literal name,
    /// resolved against `name`; names that resolve to nothing are left out.
    fn resolved_references(&self, name: &str, source: &str) -> Arc<[String]> {
        template_references(source)
            .into_iter()
            .filter_map(|reference| self.includes.resolve(name, &reference.name).found())
            .collect()
    }

    /// Names the environment provides to this template: its globals, and the list and
    /// dict constructors that its rewritten literals call.
    pub fn provided_names(&self, template: &Prepared) -> BTreeSet<String> {
        // Other formats have no globals: every name they read is the application's.
        if template.native.is_some() {
            return BTreeSet::new();
        }
        let mut names = self.global_names();
        names.extend(template.constructors.iter().map(|name| (*name).to_owned()));
        names
    }

    /// Names the environment provides (`now`, `range`, …): not context variables.
    pub fn global_names(&self) -> BTreeSet<String> {
        self.plain
            .globals()
            .map(|(name, _)| name.to_owned())
            .filter(|name| !mutable::is_constructor(name))
            .collect()
    }

    /// Where `path` (a dotted variable) is first read: in the template itself, or else in
    /// the first template it includes that reads it, reached through `include_tag`.
    pub fn locate_variable(&self, template: &Prepared, path: &str) -> Option<uses::VariableUse> {
        if let Some(native) = &template.native {
            let span = native.first_use(path)?;
            let (line, column) = source::line_col(&template.source, span.start);
            return Some(uses::VariableUse {
                template: template.name.to_string(),
                span,
                line,
                column,
                include_tag: None,
            });
        }
        let syntax = self.plain.syntax();
        if let Some(span) = uses::first_use(&template.source, syntax, path) {
            let (line, column) = source::line_col(&template.source, span.start);
            return Some(uses::VariableUse {
                template: template.name.to_string(),
                span,
                line,
                column,
                include_tag: None,
            });
        }
        // Breadth-first through the includes, remembering the tag in the checked template
        // each one was reached from.
        let mut seen = BTreeSet::from([template.name.to_string()]);
        let mut queue: std::collections::VecDeque<(String, std::ops::Range<usize>)> =
            template_references(&template.source)
                .into_iter()
                .filter_map(|r| {
                    let name = self.includes.resolve(&template.name, &r.name).found()?;
                    Some((name, r.tag))
                })
                .collect();
        while let Some((name, tag)) = queue.pop_front() {
            if !seen.insert(name.clone()) || seen.len() > 256 {
                continue;
            }
            let Ok(loaded) = self.plain.get_template(&name) else {
                continue;
            };
            if let Some(span) = uses::first_use(loaded.source(), syntax, path) {
                let (line, column) = source::line_col(loaded.source(), span.start);
                return Some(uses::VariableUse {
                    template: name,
                    span,
                    line,
                    column,
                    include_tag: Some(tag),
                });
            }
            queue.extend(
                template_references(loaded.source())
                    .into_iter()
                    .filter_map(|r| {
                        let next = self.includes.resolve(&name, &r.name).found()?;
                        Some((next, tag.clone()))
                    }),
            );
        }
        None
    }

    /// The syntax templates are parsed with.
    pub fn syntax(&self) -> &SyntaxConfig {
        self.plain.syntax()
    }

    /// Renders once under `clock`; `context` must be a map.
    pub fn render(&self, template: &Prepared, context: &Value, clock: Clock) -> Result<Render> {
        self.render_marking(template, context, clock, None)
    }

    /// [`Self::render`], its source map marking where `stand_ins` are printed (and what
    /// stand-in filters return) as stand-in output ([`SourceMap::stand_ins`]).
    pub fn render_marking(
        &self,
        template: &Prepared,
        context: &Value,
        clock: Clock,
        stand_ins: Option<&Arc<stand_ins::StandInTexts>>,
    ) -> Result<Render> {
        if let Some(native) = &template.native {
            // A native format marks its fields' stand-in output as it writes them.
            let _stand_ins = stand_ins::mark_while_rendering(stand_ins.cloned());
            let mut render = native.render(
                context,
                clock,
                &self.settings.limits,
                &self.display_name(&template.name),
                &template.source,
            )?;
            if !template.instrumented {
                render.map = None;
            }
            return Ok(render);
        }
        let _clock = clock::set_current(clock);
        // What the plain render appends must not show in the marked one, or in the next.
        let fresh = |context: &Value| -> Value {
            if !template.mutates {
                return context.clone();
            }
            let Ok(keys) = context.try_iter() else {
                return context.clone();
            };
            Value::from_pairs(
                keys.map(|key| {
                    let value = context.get_item(&key).unwrap_or_default();
                    (key, mutable::mutable_copy(&value, 0))
                })
                .collect::<Vec<_>>(),
            )
        };
        let original = context;
        let max = self.settings.limits.max_output_bytes;
        // Markers add bytes; an oversized marked render just has no source map.
        let render_marked = || {
            let _stand_ins = stand_ins::mark_while_rendering(stand_ins.cloned());
            self.marked
                .get_template(&template.name)
                .and_then(|t| render_bounded(&t, &fresh(original), max.saturating_mul(8)))
                .ok()
        };
        // Where no output can be captured as a value, the marked render is the text with
        // markers between: one render gives both, unless it fails, is over the limit, or
        // shows a marker its functions did not write (then the plain render decides, as
        // below).
        let mut marked_once = None;
        if template.instrumented && !template.captures_output {
            let before = instrument::markers_written();
            let marked = render_marked();
            let written = instrument::markers_written() - before;
            if let Some((text, map)) = marked
                .as_deref()
                .and_then(|marked| instrument::strip_written_markers(marked, written))
                .filter(|(text, _)| text.len() <= max)
            {
                return Ok(Render {
                    text,
                    map: Some(map),
                });
            }
            marked_once = Some(marked);
        }
        let context = &fresh(original);
        // The limit is enforced while writing, so a runaway template stops at `max` bytes
        // instead of filling memory first.
        let text = self
            .plain
            .get_template(&template.name)
            .and_then(|t| render_bounded(&t, context, max))
            .map_err(|e| self.template_error(&e, &template.name))?;
        self.check_size(&template.name, text.len())?;
        let map = template
            .instrumented
            .then(|| marked_once.unwrap_or_else(render_marked))
            .flatten()
            .and_then(|marked| {
                let (clean, map) = instrument::strip_markers(&marked);
                // Markers that leaked into a captured value (`{% set %}`, filters on macro
                // output) change the text: then the map is not trusted.
                (clean == text).then_some(map)
            });
        Ok(Render { text, map })
    }

    fn check_size(&self, name: &str, len: usize) -> Result<()> {
        let max = self.settings.limits.max_output_bytes;
        if len > max {
            return Err(Error::input_with_help(
                format!("{name}: render is {len} bytes, over the {max}-byte output limit"),
                "raise limits.max_output_bytes in prefixlint.yaml if this is intended",
            ));
        }
        Ok(())
    }

    /// Turns a minijinja error into a diagnostic located in the template that failed.
    pub fn template_error(&self, err: &minijinja::Error, fallback_name: &str) -> Error {
        // An error inside an include is wrapped by one at the include tag: report the inner one.
        let mut err = err;
        while let Some(inner) =
            std::error::Error::source(err).and_then(|e| e.downcast_ref::<minijinja::Error>())
        {
            err = inner;
        }
        let name = err.name().unwrap_or(fallback_name).to_owned();
        let source = self
            .sources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&name)
            .cloned();
        // An error inside an include arrives wrapped ("error in \"b.j2\""): describe the
        // innermost cause, but keep pointing at the outer place, whose source we hold.
        let cause = innermost(err);
        // Errors name files as the report does: by their path from the working directory.
        let shown = self.display_name(&name);
        let mut message = describe(cause, &shown);
        if let Some(miss) = self.include_miss(cause, &name) {
            message = format!("{shown}: template not found: {miss}");
        }
        if let Some(tag) = foreign_tag(cause) {
            message = format!(
                "{shown}: syntax error: unknown tag `{{% {tag} %}}`: it is not a Jinja2 tag but an extension of another template engine or of the application"
            );
        }
        if !std::ptr::eq(cause, err) {
            if let (Some(inner), Some(line)) = (cause.name(), cause.line()) {
                let inner = self.display_name(inner);
                message.push_str(&format!(" (in `{inner}`, line {line})"));
            }
        }
        let help = help_for(cause);
        let name = shown;
        match (source, err.range(), err.line()) {
            (Some(src), Some(range), _) => {
                Error::located(&name, &src, range, message, label_for(err), help)
            }
            (Some(src), None, Some(line)) => {
                let start = source::offset_of(&src, line, 1);
                let end = src[start..]
                    .find('\n')
                    .map(|i| start + i)
                    .unwrap_or(src.len());
                Error::located(&name, &src, start..end, message, label_for(err), help)
            }
            _ => match help {
                Some(help) => Error::input_with_help(message, help),
                None => Error::input(message),
            },
        }
    }
}

impl Renderer {
    /// A template name (project-relative, or absolute for a search folder outside the
    /// project) as a path from the working directory.
    pub fn display_name(&self, name: &str) -> String {
        source::display_path(&self.includes.root().join(name))
    }

    /// minijinja reports a missing include by the name as written; say where it looked.
    fn include_miss(&self, err: &minijinja::Error, parent: &str) -> Option<String> {
        if err.kind() != ErrorKind::TemplateNotFound {
            return None;
        }
        let quoted = err
            .detail()?
            .strip_prefix("tried to include non-existing template ")?;
        let written = quoted
            .strip_prefix('"')
            .and_then(|q| q.strip_suffix('"'))
            .or_else(|| quoted.strip_prefix('\'')?.strip_suffix('\''))?;
        self.includes
            .miss_message(err.name().unwrap_or(parent), written)
    }
}

/// How a format is named in messages.
fn format_description(format: crate::formats::TemplateFormat) -> &'static str {
    use crate::formats::TemplateFormat;
    match format {
        TemplateFormat::Jinja => "Jinja",
        TemplateFormat::Format => "a Python `{var}` template (str.format, LangChain)",
        TemplateFormat::CrewAi => "a CrewAI `{var}` template",
        TemplateFormat::FString => "a Python f-string",
        TemplateFormat::SemanticKernel => "a Semantic Kernel template",
        TemplateFormat::Handlebars => "a Handlebars template",
        TemplateFormat::Liquid => "a Liquid template",
        TemplateFormat::Mustache => "a Mustache template",
    }
}

/// Renders into a buffer that refuses to grow past `max` bytes (a `WriteFailure` error).
fn render_bounded(
    template: &minijinja::Template<'_, '_>,
    context: &Value,
    max: usize,
) -> std::result::Result<String, minijinja::Error> {
    struct Bounded {
        buf: Vec<u8>,
        max: usize,
    }
    impl std::io::Write for Bounded {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            if self.buf.len().saturating_add(bytes.len()) > self.max {
                return Err(std::io::Error::other("output size limit"));
            }
            self.buf.extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = Bounded {
        buf: Vec::new(),
        max,
    };
    template.render_captured_to(context, &mut out)?;
    // minijinja writes whole `str` pieces, so this is valid UTF-8.
    Ok(String::from_utf8(out.buf)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

fn innermost(err: &minijinja::Error) -> &minijinja::Error {
    let mut current = err;
    while let Some(inner) = std::error::Error::source(current)
        .and_then(|source| source.downcast_ref::<minijinja::Error>())
    {
        current = inner;
    }
    current
}

fn describe(err: &minijinja::Error, name: &str) -> String {
    let what = match err.kind() {
        ErrorKind::SyntaxError => "syntax error",
        ErrorKind::UndefinedError => "undefined value",
        ErrorKind::UnknownFilter => "unknown filter",
        ErrorKind::UnknownTest => "unknown test",
        ErrorKind::UnknownFunction => "unknown function",
        ErrorKind::UnknownMethod => "unknown method",
        ErrorKind::OutOfFuel => "render ran out of fuel (too much work: a huge loop or output?)",
        ErrorKind::TemplateNotFound => "template not found",
        ErrorKind::InvalidOperation => "invalid operation",
        ErrorKind::BadEscape => "bad string escape",
        // Rendering writes to memory, so only the output-size limit makes a write fail.
        ErrorKind::WriteFailure => "render output is over the size limit (limits.max_output_bytes)",
        _ => "render failed",
    };
    match err.detail() {
        // The detail of a write failure is minijinja's generic "I/O error during rendering".
        Some(_) if err.kind() == ErrorKind::WriteFailure => format!("{name}: {what}"),
        Some(detail) => format!("{name}: {what}: {detail}"),
        None => format!("{name}: {what}"),
    }
}

fn label_for(err: &minijinja::Error) -> String {
    match err.kind() {
        ErrorKind::UndefinedError => "undefined here".into(),
        ErrorKind::SyntaxError => "here".into(),
        ErrorKind::OutOfFuel => "fuel ran out here".into(),
        _ => "here".into(),
    }
}

/// The name of an unknown `{% tag %}`, which usually comes from another engine's dialect.
fn foreign_tag(err: &minijinja::Error) -> Option<&str> {
    if err.kind() != ErrorKind::SyntaxError {
        return None;
    }
    err.detail()?.strip_prefix("unknown statement ")
}

/// The name in minijinja's "filter NAME is unknown" (and the test and function variants).
fn unknown_name<'e>(err: &'e minijinja::Error, prefix: &str) -> Option<&'e str> {
    err.detail()?
        .strip_prefix(prefix)?
        .strip_suffix(" is unknown")
}

fn help_for(err: &minijinja::Error) -> Option<String> {
    if foreign_tag(err).is_some() {
        return Some(
            "prefixlint renders plain Jinja2 and cannot run another engine's tags; leave the template out with `exclude:` in prefixlint.yaml".into(),
        );
    }
    Some(match err.kind() {
        ErrorKind::UnknownFilter => {
            stand_ins::declaration_help("filters", unknown_name(err, "filter ")?)
        }
        ErrorKind::UnknownTest => stand_ins::declaration_help("tests", unknown_name(err, "test ")?),
        ErrorKind::UnknownFunction => stand_ins::declaration_help("globals", unknown_name(err, "")?),
        ErrorKind::UndefinedError => {
            "give every sample a value for it in NAME.samples.yaml, or test it with `is defined`"
                .into()
        }
        ErrorKind::OutOfFuel => {
            "raise limits.fuel in prefixlint.yaml if this template really needs it".into()
        }
        ErrorKind::WriteFailure => {
            "raise limits.max_output_bytes in prefixlint.yaml if this is intended".into()
        }
        ErrorKind::InvalidOperation if err.detail() == Some("recursion limit exceeded") => {
            "a macro or include calls itself without end; raise limits.recursion in prefixlint.yaml if the depth is intended".into()
        }
        ErrorKind::TemplateNotFound => {
            "names resolve beside the including template, then in each folder above it up to the project root, then in the `search_path:` folders of prefixlint.yaml".into()
        }
        _ => return None,
    })
}

/// A tag that includes, imports or extends another template by a literal name.
pub struct TemplateReference {
    /// The whole `{% ... %}` tag in the source.
    pub tag: std::ops::Range<usize>,
    /// The name as written, before resolving it against the including template.
    pub name: String,
}

/// A tag that includes, imports or extends a template by a literal name.
const REFERENCE_PATTERN: &str =
    r#"\{%[-+]?\s*(?:include|import|extends|from)\s+(?:"([^"]+)"|'([^']+)')[^%]*%\}"#;

/// The templates a source includes, imports or extends with a literal name.
pub fn template_references(source: &str) -> Vec<TemplateReference> {
    static REFERENCE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    // Anchored: tried only where a tag opens. Searched for in the whole text, the words
    // the pattern holds (`from`, `import`) sent the search back and forth through prose.
    let reference = REFERENCE.get_or_init(|| {
        regex::Regex::new(&format!(r"\A(?:{REFERENCE_PATTERN})")).expect("valid regex")
    });
    // Every match starts at a `{%`: trying each one after the previous match, in order,
    // finds the matches a search of the whole text finds (leftmost first, not overlapping).
    let mut found = Vec::new();
    let mut after = 0;
    for at in memchr::memmem::find_iter(source.as_bytes(), b"{%") {
        if at < after {
            continue;
        }
        let Some(c) = reference.captures(&source[at..]) else {
            continue;
        };
        let (Some(whole), Some(name)) = (c.get(0), c.get(1).or(c.get(2))) else {
            continue;
        };
        after = at + whole.end();
        found.push(TemplateReference {
            tag: at + whole.start()..after,
            name: name.as_str().to_owned(),
        });
    }
    found
}

/// Drops `{% generation %}` / `{% endgeneration %}` (transformers' assistant-mask markers),
/// keeping their whitespace control by turning them into an always-true `if`.
fn preprocess(source: &str, dialect: Dialect) -> String {
    if dialect != Dialect::Transformers || !source.contains("generation") {
        return source.to_owned();
    }
    static TAG: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let tag = TAG.get_or_init(|| {
        regex::Regex::new(r"\{%([-+]?)\s*(end)?generation\s*([-+]?)%\}").expect("valid regex")
    });
    tag.replace_all(source, |c: &regex::Captures| {
        let body = if c.get(2).is_some() {
            "endif"
        } else {
            "if true"
        };
        format!("{{%{} {} {}%}}", &c[1], body, &c[3])
    })
    .into_owned()
}

/// The test-only function that returns the fuel used so far.
#[cfg(test)]
pub const FUEL_PROBE: &str = "__prefixlint_fuel_consumed";

fn base_environment(settings: &RenderSettings, syntax: SyntaxConfig) -> Environment<'static> {
    let mut env = Environment::new();
    env.set_syntax(syntax);
    env.set_fuel(Some(settings.limits.fuel));
    env.set_recursion_limit(settings.limits.recursion);
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    let max_output = settings.limits.max_output_bytes;
    env.set_unknown_method_callback(move |state, value, method, args| {
        // `str.format` allocates its widths before any fuel is charged.
        if let (Some(format), "format") = (value.as_str(), method) {
            python::str_format_within(format, max_output)
                .map_err(|e| minijinja::Error::new(ErrorKind::InvalidOperation, e))?;
        }
        minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
    });
    env.set_formatter(|out, _state, value| {
        out.write_str(&printed(value))
            .map_err(|_| minijinja::Error::new(ErrorKind::WriteFailure, "write failed"))
    });
    match settings.dialect {
        Dialect::Jinja2 => {
            env.set_undefined_behavior(settings.undefined.behavior());
            env.add_filter("tojson", |value: Value, kwargs: Kwargs| {
                // Python's json.dumps fails on Jinja2's Undefined; it is not `null`.
                if value.is_undefined() {
                    return Err(minijinja::Error::new(
                        ErrorKind::UndefinedError,
                        "tojson of an undefined value (Object of type Undefined is not JSON serializable)",
                    ));
                }
                tojson(value, kwargs, JsonOptions::jinja2(), 0)
            });
        }
        Dialect::Transformers => {
            env.set_undefined_behavior(UndefinedBehavior::Lenient);
            env.add_filter("tojson", |value: Value, kwargs: Kwargs| {
                if kwargs.args().next().is_none() {
                    return transformers_tojson(&value);
                }
                tojson(value, kwargs, JsonOptions::transformers(), 1)
            });
            env.add_function(
                "raise_exception",
                |message: String| -> std::result::Result<Value, minijinja::Error> {
                    Err(minijinja::Error::new(
                        ErrorKind::InvalidOperation,
                        format!("raise_exception: {message}"),
                    ))
                },
            );
        }
    }
    env.add_global("now", Value::from_object(clock::NowGlobal));
    // The fuel a render has used so far: the native chat templates' tests hold their fuel
    // bounds to it.
    #[cfg(test)]
    env.add_function(FUEL_PROBE, |state: &minijinja::State| {
        state.fuel_levels().map_or(0, |(consumed, _)| consumed)
    });
    env.add_filter(
        "indent",
        |value: Value,
         width: Option<Value>,
         first: Option<bool>,
         blank: Option<bool>,
         kwargs: Kwargs|
         -> std::result::Result<Value, minijinja::Error> {
            let width = match kwargs.get::<Option<Value>>("width")?.or(width) {
                Some(w) if w.kind() == minijinja::value::ValueKind::String => {
                    w.as_str().unwrap_or_default().to_owned()
                }
                Some(w) => " ".repeat(w.as_usize().unwrap_or(4).min(256)),
                None => "    ".to_owned(),
            };
            let first = kwargs
                .get::<Option<bool>>("first")?
                .or(first)
                .unwrap_or(false);
            let blank = kwargs
                .get::<Option<bool>>("blank")?
                .or(blank)
                .unwrap_or(false);
            kwargs.assert_all_used()?;
            Ok(Value::from(python::py_indent(
                &python::py_str(&value),
                &width,
                first,
                blank,
            )))
        },
    );
    // Python's `iter(None)` fails, so Jinja2's `none is iterable` is false; minijinja says true.
    env.add_test("iterable", |value: Value| {
        !value.is_none() && value.try_iter().is_ok()
    });
    env.add_function(
        "strftime_now",
        |format: String| -> std::result::Result<Value, minijinja::Error> {
            clock::current()
                .strftime(&format)
                .map(Value::from)
                .map_err(|e| minijinja::Error::new(ErrorKind::InvalidOperation, e))
        },
    );
    jinja2_builtins::install(&mut env);
    mutable::install(&mut env);
    // Last, so the application's declarations win over the built-ins they shadow.
    settings.stand_ins.install(&mut env);
    env
}

/// `flavour` names `options` for [`json_memo`]: a value written again without arguments
/// takes the text it gave before.
fn tojson(
    value: Value,
    kwargs: Kwargs,
    options: JsonOptions,
    flavour: u8,
) -> std::result::Result<Value, minijinja::Error> {
    if kwargs.args().next().is_none() {
        return json_memo::written(&value, flavour, |value| {
            let json = python::json_dumps(value, &options)
                .map_err(|e| minijinja::Error::new(ErrorKind::InvalidOperation, e))?;
            Ok(Value::from_safe_string(json))
        });
    }
    tojson_with(value, kwargs, options)
}

/// What `{{ value }}` writes (the environment's formatter; the native chat templates,
/// `chat::native`, print through it too): nothing for undefined (strict mode errors before
/// the formatter), text as it is (no copy per `{{ }}`), anything else as Python's `str`.
pub fn printed(value: &Value) -> std::borrow::Cow<'_, str> {
    if value.is_undefined() {
        return std::borrow::Cow::Borrowed("");
    }
    match value.as_str() {
        Some(text) => std::borrow::Cow::Borrowed(text),
        None => std::borrow::Cow::Owned(python::py_str(value)),
    }
}

/// The chat environment's `value | tojson` (no arguments), as its filter writes it: the
/// native chat templates (`chat::native`) write the same bytes through the same memo.
pub fn transformers_tojson(value: &Value) -> std::result::Result<Value, minijinja::Error> {
    json_memo::written(value, 1, |value| {
        let json = python::json_dumps(value, &JsonOptions::transformers())
            .map_err(|e| minijinja::Error::new(ErrorKind::InvalidOperation, e))?;
        Ok(Value::from_safe_string(json))
    })
}

fn tojson_with(
    value: Value,
    kwargs: Kwargs,
    mut options: JsonOptions,
) -> std::result::Result<Value, minijinja::Error> {
    let indent: Option<Value> = kwargs.get("indent")?;
    let indent = match indent {
        Some(v) if v.is_none() => None,
        Some(v) if v.is_integer() => Some(" ".repeat(v.as_usize().unwrap_or(0).min(64))),
        Some(v) => v.as_str().map(str::to_owned),
        None => None,
    };
    options = options.with_indent(indent);
    if let Some(ensure_ascii) = kwargs.get::<Option<bool>>("ensure_ascii")? {
        options.ensure_ascii = ensure_ascii;
    }
    if let Some(sort_keys) = kwargs.get::<Option<bool>>("sort_keys")? {
        options.sort_keys = sort_keys;
    }
    if let Some(separators) = kwargs.get::<Option<Value>>("separators")? {
        if !separators.is_none() {
            let parts: Vec<Value> = separators.try_iter()?.collect();
            if let [item, key] = parts.as_slice() {
                options.item_separator = item.as_str().unwrap_or(",").to_owned();
                options.key_separator = key.as_str().unwrap_or(":").to_owned();
            }
        }
    }
    kwargs.assert_all_used()?;
    let json = python::json_dumps(&value, &options)
        .map_err(|e| minijinja::Error::new(ErrorKind::InvalidOperation, e))?;
    Ok(Value::from_safe_string(json))
}

fn install_marker_functions(env: &mut Environment<'static>) {
    env.add_function(instrument::OPEN_FN, |id: u32| {
        instrument::count_marker();
        instrument::open_marker_value(id)
    });
    env.add_function(instrument::CLOSE_FN, |id: u32| {
        instrument::count_marker();
        instrument::close_marker_value(id)
    });
    env.add_function(instrument::TEXT_FN, |id: u32| {
        instrument::count_marker();
        instrument::text_marker_value(id)
    });
}

/// Include names resolve through the shared [`IncludeResolver`]; the loader reads only
/// files inside the project root or a search folder, symbolic links included.
fn install_loader(
    env: &mut Environment<'static>,
    settings: &RenderSettings,
    includes: &Arc<IncludeResolver>,
    sources: SourceCache,
    instrument_with: Option<(Arc<OriginTable>, SyntaxConfig)>,
) {
    let resolver = includes.clone();
    env.set_path_join_callback(move |name, parent| resolver.join(parent, name).into());
    let resolver = includes.clone();
    let dialect = settings.dialect;
    let syntax = env.syntax().clone();
    let unsaved = settings.unsaved.clone();
    env.set_loader(move |name| {
        let refuse = |why: &str| {
            Err(minijinja::Error::new(
                ErrorKind::InvalidOperation,
                format!("include of `{name}` refused: {why}"),
            ))
        };
        let real = match resolver.path_of(name) {
            Ok(Some(real)) => real,
            Ok(None) => {
                return match resolver.not_found_message(name) {
                    Some(message) => {
                        Err(minijinja::Error::new(ErrorKind::TemplateNotFound, message))
                    }
                    None => Ok(None),
                }
            }
            Err(Refusal::Outside) => {
                return refuse(&format!("it resolves outside {}", resolver.confinement()))
            }
            Err(Refusal::ThroughLink) => {
                return refuse("it resolves (through a link) outside the project root")
            }
        };
        let text = match unsaved.get(&real) {
            Some(text) => text.clone(),
            None => source::read_text(&real, name).map_err(|e| {
                minijinja::Error::new(
                    ErrorKind::InvalidOperation,
                    format!("include of `{name}`: {e}"),
                )
            })?,
        };
        let text = preprocess(&text, dialect);
        let parsed = compat::python_syntax(&text, &syntax).into_owned();
        if let Err(deep) = nesting::check(&parsed, &syntax) {
            return Err(minijinja::Error::new(
                ErrorKind::SyntaxError,
                format!(
                    "`{name}` line {}: {}",
                    parsed[..deep.offset].matches('\n').count() + 1,
                    nesting::MESSAGE
                ),
            ));
        }
        sources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.to_owned(), Arc::from(text.as_str()));
        match &instrument_with {
            Some((origins, syntax)) => Ok(Some(
                instrument::instrument(&parsed, &text, &Arc::from(name), syntax, origins)
                    .unwrap_or(parsed),
            )),
            None => Ok(Some(parsed)),
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The references found tag by tag are the ones a search of the whole text finds.
    #[test]
    fn template_references_equal_a_search_of_the_whole_text() {
        let whole = regex::Regex::new(REFERENCE_PATTERN).unwrap();
        let search = |source: &str| -> Vec<(std::ops::Range<usize>, String)> {
            whole
                .captures_iter(source)
                .map(|c| {
                    let name = c.get(1).or(c.get(2)).unwrap().as_str().to_owned();
                    (c.get(0).unwrap().range(), name)
                })
                .collect()
        };
        let mut sources: Vec<String> = [
            "",
            "{% include 'a.j2' %}",
            "text from here {%- include \"a.j2\" -%} and {% import 'm.j2' as m %}",
            "{% from 'm.j2' import x %}{%+ extends \"base.j2\" %}",
            "{% include 'a{%b.j2' %}{% include 'c.j2' %}",
            "{% include \"a{% include 'inner.j2' %}\" %}",
            "{%{% include 'x.j2' %}",
            "{% include name %}{% include 'x.j2' ignore missing %}",
            "{% include 'unclosed.j2' ",
            "{% raw %}{% include 'raw.j2' %}{% endraw %} {# {% include 'c.j2' %} #}",
            "{%include'a.j2'%}{% include  \n 'b.j2'\n%}",
            "é{% include 'ü.j2' %}∑",
        ]
        .map(String::from)
        .to_vec();
        for entry in walkdir::WalkDir::new(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures")) {
            let entry = entry.unwrap();
            if entry.file_type().is_file() {
                if let Ok(text) = std::fs::read_to_string(entry.path()) {
                    sources.push(text);
                }
            }
        }
        for source in &sources {
            let found: Vec<_> = template_references(source)
                .into_iter()
                .map(|r| (r.tag, r.name))
                .collect();
            assert_eq!(found, search(source), "{source:?}");
        }
    }

    fn renderer() -> Renderer {
        let root = std::env::temp_dir();
        Renderer::new(RenderSettings::new(Dialect::Jinja2, root)).unwrap()
    }

    /// Where a stand-in text is printed, the map marks it, and the text is the plain
    /// render's: rendered once (no output captured) and twice (a `{% set %}` block).
    #[test]
    fn printed_stand_in_texts_are_marked_in_the_map() {
        let mut renderer = renderer();
        let texts = stand_ins::StandInTexts::new(["docs 1".to_owned(), "tools 1".to_owned()]);
        let context = Value::from_pairs(vec![
            (Value::from("docs"), Value::from("docs 1")),
            (
                Value::from("tools"),
                Value::from(vec![Value::from("tools 1")]),
            ),
        ]);
        for (name, source) in [
            ("once.j2", "Docs: {{ docs }}\nTools: {{ tools | join(', ') }}; docs 1\n"),
            (
                "twice.j2",
                "{% set d %}{{ docs }}{% endset %}Docs: {{ d }}\nTools: {{ tools | join(', ') }}; docs 1\n",
            ),
        ] {
            let template = renderer.prepare(name, source).unwrap();
            let render = renderer
                .render_marking(&template, &context, Clock::synthetic(0), texts.as_ref())
                .unwrap();
            // Jinja2 drops the one trailing newline.
            assert_eq!(render.text, "Docs: docs 1\nTools: tools 1; docs 1", "{name}");
            let marked: Vec<&str> = render.map.as_ref().unwrap().stand_ins.iter().map(|r| &render.text[r.clone()]).collect();
            // The literal `docs 1` is the template's own text.
            assert_eq!(marked, ["docs 1", "tools 1"], "{name}");
            let plain = renderer.render(&template, &context, Clock::synthetic(0)).unwrap();
            assert_eq!(plain.text, render.text);
            assert!(plain.map.unwrap().stand_ins.is_empty());
        }
    }

    /// What a render appends to a sample's list is that render's: the next render, and the
    /// instrumented one that maps the text to the template, start from the sample again.
    #[test]
    fn mutations_stay_inside_one_render() {
        let mut renderer = renderer();
        let template = renderer
            .prepare(
                "m.j2",
                "{% set _ = items.append('x') %}{% set seen = [] %}{% set _ = seen.append(1) %}{{ items | join(',') }} {{ seen }}",
            )
            .unwrap();
        let context = Value::from_pairs(vec![(
            Value::from("items"),
            Value::from(vec![Value::from("a")]),
        )]);
        for _ in 0..2 {
            let render = renderer
                .render(&template, &context, Clock::synthetic(0))
                .unwrap();
            assert_eq!(render.text, "a,x [1]");
            assert!(render.map.is_some(), "the marked render agrees");
        }
        assert_eq!(context.get_attr("items").unwrap().len(), Some(1));
    }

    /// Unknown filters and tests render with stand-ins and are listed on the template;
    /// under `undefined: strict` they stay errors.
    #[test]
    fn unknown_filters_and_tests_stand_in_unless_strict() {
        let mut renderer = renderer();
        let template = renderer
            .prepare(
                "u.j2",
                "{{ 'a' | shout(2) }}{% if 'b' is fancy %}y{% endif %}{{ 'c' | upper }}",
            )
            .unwrap();
        let names: Vec<(CallableKind, &str)> = template
            .unknown
            .iter()
            .map(|u| (u.kind, u.name.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                (CallableKind::Filter, "shout"),
                (CallableKind::Test, "fancy")
            ]
        );
        let render = renderer
            .render(
                &template,
                &Value::from_pairs(Vec::<(Value, Value)>::new()),
                Clock::synthetic(0),
            )
            .unwrap();
        assert_eq!(render.text, "ayC");
        // A second template using them is told too, though they are registered now.
        let again = renderer.prepare("v.j2", "{{ 'a' | shout }}").unwrap();
        assert_eq!(again.unknown.len(), 1);

        let mut settings = RenderSettings::new(Dialect::Jinja2, std::env::temp_dir());
        settings.undefined = UndefinedMode::Strict;
        let mut strict = Renderer::new(settings).unwrap();
        let template = strict.prepare("u.j2", "{{ 'a' | shout }}").unwrap();
        assert!(template.unknown.is_empty());
        let err = strict
            .render(
                &template,
                &Value::from_pairs(Vec::<(Value, Value)>::new()),
                Clock::synthetic(0),
            )
            .unwrap_err();
        assert!(err.to_string().contains("unknown filter"), "{err}");
    }
}
