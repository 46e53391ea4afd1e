//! The `check` pipeline: discover → samples → render → tokenize → analyse → rules.
//! Each template is independent: a broken one is reported and the others still run.

pub mod chat;
pub(crate) mod embedded;
pub mod history;
pub mod linter;

use crate::analyse::Analysis;
use crate::cache_profile::CacheProfile;
use crate::config::Config;
use crate::discover;
use crate::error::{Error, Result};
use crate::render::{Prepared, Renderer};
use crate::report::CheckReport;
use crate::request;
use crate::rules::{self, AssumedPlace, Finding, RuleContext, VolatileFields};
// The request stage's entries, where callers of `check` found them before.
pub use crate::request::{load_samples, prepare_template, render_all, root_for, template_name};
use crate::samples::{self, Samples};
use crate::settings::Settings;
use crate::source;
use crate::suppress::RuleSeverities;
use crate::tokenize::TokenEngine;
use linter::{LintOptions, Linter};
use std::path::{Path, PathBuf};

pub struct CheckOptions {
    pub paths: Vec<PathBuf>,
    pub config: Config,
    /// The tokenizer, chat template, engine and limits ([`Settings::resolve`]).
    pub settings: Settings,
    pub cwd: PathBuf,
    /// `--no-ignores`: disregard inline and per-path suppressions.
    pub no_ignores: bool,
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
            settings: options.settings.clone(),
            cwd: options.cwd.clone(),
            no_ignores: options.no_ignores,
            chat_requests: Vec::new(),
            results_cache: None,
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
        || discovery.hosts_scanned > 0
        || !discovery.failed.is_empty()
        || !discovery.unchecked.is_empty()
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

/// Renders a prepared template over its samples, tokenizes and analyses the requests.
pub fn analyse_template(
    renderer: &Renderer,
    template: &Prepared,
    samples: &Samples,
    engine: &dyn TokenEngine,
) -> Result<Analysis> {
    request::build(renderer, template, samples, engine)?.into_analysis(
        engine,
        renderer.origins(),
        &template.name,
    )
}

/// `assumed`: the places whose cadence the synthesized samples assumed ([`Samples::assumed`]).
#[allow(clippy::too_many_arguments)]
pub fn run_rules(
    renderer: &Renderer,
    template: &Prepared,
    analysis: &Analysis,
    fields: &VolatileFields,
    config: &Config,
    severities: &RuleSeverities,
    engine: &CacheProfile,
    assumed: &[AssumedPlace],
) -> Vec<Finding> {
    let ctx = RuleContext::new(
        template,
        analysis,
        renderer.origins(),
        fields,
        config.min_lost_tokens,
        engine,
    )
    .with_assumed(assumed);
    let mut findings: Vec<Finding> = rules::analysis_rules()
        .iter()
        .flat_map(|rule| rule.check(&ctx))
        .filter_map(|mut finding| {
            finding.severity = severities.get(finding.rule.code, finding.severity)?;
            Some(finding)
        })
        .collect();
    findings.sort_by_key(|f| (f.span.start, f.rule.code));
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
    // Read with the shapes where the samples were loaded, from the same parse.
    let found;
    let variables = match &samples.variables {
        Some(variables) => variables,
        None => {
            found = renderer.undeclared_variables(template);
            &found
        }
    };
    rules::undefined_in_sample::check(
        variables,
        &samples.contexts,
        &source::display_path(samples_file),
        config.undefined,
        |variable| renderer.locate_variable(template, variable),
    )
    .into_iter()
    .filter_map(|mut finding| {
        finding.severity = severities.get(finding.rule.code, finding.severity)?;
        Some(finding)
    })
    .collect()
}

/// The profile from config `engine:` (which `--engine` has set), else the default.
pub(crate) fn config_name(config: &Config) -> String {
    config.display_name()
}
