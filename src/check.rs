//! The `check` pipeline: discover → samples → render → tokenize → analyse → rules.
//! Each template is independent: a broken one is reported and the others still run.

pub mod chat;
pub mod linter;

use crate::analyse::{self, Analysis};
use crate::cache_profile::CacheProfile;
use crate::config::Config;
use crate::discover;
use crate::error::{Error, Result};
use crate::render::{Prepared, Render, Renderer};
use crate::report::CheckReport;
use crate::rules::{self, Finding, RuleContext, VolatileFields};
use crate::samples::{self, Samples};
use crate::source;
use crate::suppress::RuleSeverities;
use crate::tokenize::{TokenEngine, Tokens};
use linter::{LintOptions, Linter};
use std::path::{Path, PathBuf};

pub struct CheckOptions {
    pub paths: Vec<PathBuf>,
    /// `--tokenizer`, which wins over the config's `tokenizer:`.
    pub tokenizer: Option<String>,
    pub config: Config,
    pub cwd: PathBuf,
    /// `--no-ignores`: disregard inline and per-path suppressions.
    pub no_ignores: bool,
    /// `--chat-template`, `--chat-request`, …: audit the request the server tokenizes.
    pub chat: chat::ChatArgs,
}

/// The report (the templates that could not be checked are in `report.errors`, exit
/// code 2), and what discovery noticed.
#[derive(Default)]
pub struct CheckOutcome {
    pub report: CheckReport,
    /// Include globs that matched no file in the walked folders.
    pub unmatched_globs: Vec<String>,
}

pub fn run(options: &CheckOptions) -> Result<CheckOutcome> {
    let linter = Linter::new(
        options.config.clone(),
        LintOptions {
            tokenizer: options.tokenizer.clone(),
            cwd: options.cwd.clone(),
            no_ignores: options.no_ignores,
            chat: options.chat.clone(),
        },
    )?;
    let mut outcomes = linter.check(&options.paths)?;
    let mut report = CheckReport::default();
    for outcome in outcomes.by_ref() {
        report.add(outcome);
    }
    report.engine = Some(linter.profile().clone());
    Ok(CheckOutcome {
        report,
        unmatched_globs: outcomes.unmatched_globs,
    })
}

/// minijinja recursion is bounded by `limits.recursion`; this covers the default with margin.
pub(crate) const WORKER_STACK_BYTES: usize = 64 << 20;

/// Notes for stderr: include globs the user configured that matched no file.
pub fn discovery_notes(unmatched_globs: &[String]) -> String {
    unmatched_globs
        .iter()
        .filter(|glob| !crate::config::DEFAULT_GLOBS.contains(&glob.as_str()))
        .map(|glob| format!("note: include glob `{glob}` matched no file\n"))
        .collect()
}

/// Walked folders in which no include glob matched a file: that is a setup mistake, not
/// a pass. Returns the folders (as one report path) and the error.
pub(crate) fn nothing_found(discovery: &discover::Discovery) -> Option<(String, Error)> {
    if !discovery.targets.is_empty()
        || discovery.walked.is_empty()
        || !discovery.skipped.is_empty()
        || discovery.excluded > 0
    {
        return None;
    }
    let folders: Vec<String> = discovery
        .walked
        .iter()
        .map(|folder| source::display_path(folder))
        .map(|shown| if shown.is_empty() { ".".into() } else { shown })
        .collect();
    let globs: Vec<String> = discovery
        .unmatched_globs
        .iter()
        .map(|glob| format!("`{glob}`"))
        .collect();
    let shown = folders.join(", ");
    let error = Error::input_with_help(
        format!(
            "{shown}: no template found: the include globs {} matched no file",
            globs.join(", ")
        ),
        "templates are found by file name; set `include:` in prefixlint.yaml to the globs your prompts use (e.g. include: [\"*.txt\"]), or name the files on the command line",
    );
    Some((shown, error))
}

/// A template outside the project (an explicit path elsewhere) is confined to its own folder.
pub fn root_for(template: &Path, project_root: &Path) -> PathBuf {
    let absolute = template
        .canonicalize()
        .unwrap_or_else(|_| template.to_path_buf());
    let project = project_root
        .canonicalize()
        .unwrap_or_else(|_| project_root.to_path_buf());
    if absolute.starts_with(&project) {
        project
    } else {
        absolute.parent().map(Path::to_path_buf).unwrap_or(project)
    }
}

/// Renders one template over its samples and analyses the token streams.
pub fn check_template(
    path: &Path,
    root: &Path,
    renderer: &mut Renderer,
    engine: &dyn TokenEngine,
    fields: &VolatileFields,
    config: &Config,
) -> Result<(Prepared, Analysis)> {
    let (template, samples) = prepare_template(path, root, renderer, fields, config)?;
    let analysis = analyse_template(renderer, &template, &samples, engine)?;
    Ok((template, analysis))
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
    let text = source::read_text(path, &display)?;
    let template = renderer.prepare(&template_name(path, root), &text)?;
    let samples = load_samples(path, renderer, &template, fields, config)?;
    Ok((template, samples))
}

/// Renders a prepared template over its samples, tokenizes and analyses the renders.
pub fn analyse_template(
    renderer: &Renderer,
    template: &Prepared,
    samples: &Samples,
    engine: &dyn TokenEngine,
) -> Result<Analysis> {
    let renders = render_all(renderer, template, samples)?;
    let texts: Vec<&str> = renders.iter().map(|r| r.text.as_str()).collect();
    let tokens: Vec<Tokens> = engine.encode_prompts(&texts)?;
    analyse::analyse(
        &renders,
        &tokens,
        engine,
        renderer.origins(),
        &template.name,
    )
}

pub fn load_samples(
    path: &Path,
    renderer: &Renderer,
    template: &Prepared,
    fields: &VolatileFields,
    config: &Config,
) -> Result<Samples> {
    let samples_path = samples::samples_path(path);
    let shapes = samples::infer(renderer, template);
    if samples_path.is_file() {
        let mut loaded = samples::load(&samples_path)?;
        // An empty samples file is treated as none: it is valid, so synthesize.
        if !loaded.is_empty() {
            samples::add_stand_ins(&mut loaded, &shapes, fields);
            return Ok(loaded);
        }
    }
    Ok(samples::synthesize(
        &shapes,
        fields,
        config.synthesized_renders,
    ))
}

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
            let rendered = renderer.render(template, context, samples.clock(n));
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

/// The template's name inside the render environment: its path under the project root,
/// which is what its includes resolve against.
pub fn template_name(path: &Path, root: &Path) -> String {
    let absolute = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    match absolute.strip_prefix(&root) {
        Ok(relative) => relative.to_string_lossy().replace('\\', "/"),
        Err(_) => absolute.to_string_lossy().replace('\\', "/"),
    }
}

pub fn run_rules(
    renderer: &Renderer,
    template: &Prepared,
    analysis: &Analysis,
    fields: &VolatileFields,
    config: &Config,
    severities: &RuleSeverities,
    engine: &CacheProfile,
) -> Vec<Finding> {
    let ctx = RuleContext {
        template,
        analysis,
        origins: renderer.origins(),
        fields,
        min_lost_tokens: config.min_lost_tokens,
        engine,
    };
    let mut findings: Vec<Finding> = rules::registry()
        .iter()
        .flat_map(|rule| rule.check(&ctx))
        .filter_map(|mut finding| {
            finding.severity = severities.get(&finding.rule.code, finding.severity)?;
            Some(finding)
        })
        .collect();
    findings.sort_by_key(|f| (f.span.start, f.rule.code.clone()));
    findings
}

/// What the samples themselves show (PL011: a variable a sample leaves undefined).
pub fn sample_findings(
    renderer: &Renderer,
    template: &Prepared,
    samples: &Samples,
    config: &Config,
    severities: &RuleSeverities,
) -> Vec<Finding> {
    let samples::Origin::File(samples_file) = &samples.origin else {
        return Vec::new();
    };
    let variables = renderer.undeclared_variables(template);
    rules::undefined_in_sample::check(
        &variables,
        &samples.contexts,
        &source::display_path(samples_file),
        config.undefined,
        |variable| renderer.locate_variable(template, variable),
    )
    .into_iter()
    .filter_map(|mut finding| {
        finding.severity = severities.get(&finding.rule.code, finding.severity)?;
        Some(finding)
    })
    .collect()
}

/// The profile from config `engine:` (which `--engine` has set), else the default.
pub(crate) fn cache_engine(config: &Config) -> Result<CacheProfile> {
    match &config.engine {
        Some(setting) => CacheProfile::from_config(&setting.0, &config_name(config)),
        None => Ok(CacheProfile::default()),
    }
}

pub(crate) fn config_name(config: &Config) -> String {
    config.display_name()
}
