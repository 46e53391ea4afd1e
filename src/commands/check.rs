//! `prefixlint check` from the command line: the config with the flags applied, the results
//! cache folder, the report streamed to stdout or `--output`, the baseline comparison, the
//! GitHub step summary, and the exit code (0 clean, 1 a finding at `--fail-on` or a baseline
//! regression, 2 a template that could not be checked).

use crate::baseline;
use crate::cache_profile::CacheProfile;
use crate::check;
use crate::check::linter::ForWriter;
use crate::cli::CheckArgs;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::fix::{self, engine::FixOptions, run::FixRun};
use crate::report::json::JsonReport;
use crate::report::output::{AtomicFile, Stdout};
use crate::report::stream::{written_form, ReportWriter, Tail, WrittenTemplate};
use crate::report::TemplateOutcome;
use crate::report::{github, Format, StreamedReport};
use crate::settings::{Output, Settings, DEFAULT_WIDTH};
use crate::{LintOptions, Linter, Outcomes};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

/// How `check` writes its report.
struct Stream<'a> {
    format: Format,
    color: bool,
    /// What follows the findings (`--quiet`, `-v`).
    tail: Tail,
    /// The width the full report is fitted to.
    width: usize,
    engine: Option<CacheProfile>,
    baseline: Option<&'a (String, JsonReport)>,
    threshold: baseline::Threshold,
    /// `--select`: the rule codes whose findings are reported; all when empty.
    select: &'a [String],
    /// A `--fix` run's fixes: JSON lists them, full and concise print their summary last.
    fixes: Option<&'a FixRun>,
}

impl Stream<'_> {
    /// Writes every outcome as it comes, then the closing sections (and, for GitHub, the
    /// baseline comparison); returns the reduced report and the comparison.
    ///
    /// The report is written on its own thread: while it writes one chunk's templates, the
    /// workers check the next, so neither core waits for the other (written on this thread,
    /// the workers sat idle between chunks). The outcomes go over in batches, a chunk's at
    /// a time (one hand-off per template woke the writer two thousand times on a warm run);
    /// the queue between them is bounded, so memory stays flat, and the order is the
    /// outcomes' order.
    fn write<W: Write + Send>(
        &self,
        outcomes: &mut Outcomes<'_>,
        out: &mut W,
    ) -> std::io::Result<(StreamedReport, Option<baseline::Comparison>)> {
        let mut writer = ReportWriter::new(self.format, self.color, self.engine.clone(), out)?;
        writer.set_tail(self.tail);
        writer.set_width(self.width);
        let mut writer = std::thread::scope(|scope| {
            let (queue, queued) = std::sync::mpsc::sync_channel::<Vec<ForWriter>>(REPORT_QUEUE);
            // The written forms the cache lacked go back to this thread, which owns the
            // outcomes (and so the cache).
            let (kept, to_keep) =
                std::sync::mpsc::channel::<(crate::results_cache::TemplateKey, WrittenTemplate)>();
            let writing = scope.spawn(move || -> std::io::Result<_> {
                for next in queued.into_iter().flatten() {
                    let _span =
                        tracing::info_span!(target: crate::profile::TIMELINE, "report").entered();
                    match next {
                        ForWriter::Written(written) => {
                            tracing::info_span!(target: crate::profile::STAGE, "report")
                                .in_scope(|| writer.add_written(&written))?
                        }
                        ForWriter::Outcome(TemplateOutcome::Checked(template), Some(key)) => {
                            let written =
                                tracing::info_span!(target: crate::profile::STAGE, "report")
                                    .in_scope(|| writer.add_checked(*template))?;
                            if let Some(written) = written {
                                let _ = kept.send((key, written));
                            }
                        }
                        ForWriter::Outcome(outcome, _) => {
                            tracing::info_span!(target: crate::profile::STAGE, "report")
                                .in_scope(|| writer.add(outcome))?
                        }
                    }
                }
                Ok(writer)
            });
            let mut batch = Vec::new();
            while let Some(mut next) = outcomes.next_for_writer() {
                for (key, written) in to_keep.try_iter() {
                    outcomes.keep_written(&key, &written);
                }
                if let (ForWriter::Outcome(TemplateOutcome::Checked(template), _), false) =
                    (&mut next, self.select.is_empty())
                {
                    template
                        .findings
                        .retain(|f| self.select.iter().any(|code| code == f.rule.code.as_str()));
                }
                batch.push(next);
                // What is at hand goes now: the next outcome may take a chunk's checking.
                if outcomes.has_ready() {
                    continue;
                }
                // A failed write ends the writer; its error is returned below.
                if queue.send(std::mem::take(&mut batch)).is_err() {
                    break;
                }
            }
            drop(queue);
            let writer = writing
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            for (key, written) in to_keep.try_iter() {
                outcomes.keep_written(&key, &written);
            }
            if writer.is_ok() {
                outcomes.finish_written();
            }
            writer
        })?;
        if let (Some(fixes), Format::Json) = (self.fixes, self.format) {
            writer.set_fixes(serde_json::to_value(&fixes.templates).unwrap_or_default());
        }
        let _span = tracing::info_span!(target: crate::profile::TIMELINE, "report end").entered();
        let (report, out) = writer.finish()?;
        if let (Some(fixes), Format::Full | Format::Concise, true) =
            (self.fixes, self.format, self.tail == Tail::All)
        {
            out.write_all(b"\n")?;
            out.write_all(
                crate::fmt::escape_controls(&fix::summary(&fixes.templates, true)).as_bytes(),
            )?;
            out.flush()?;
        }
        let comparison = self
            .baseline
            .map(|(name, base)| baseline::compare_rows(name, base, &report.rows, self.threshold));
        if let (Format::Github, Some(comparison)) = (self.format, &comparison) {
            out.write_all(comparison.render_github().as_bytes())?;
            out.flush()?;
        }
        Ok((report, comparison))
    }
}

/// Batches of outcomes checked but not yet written, at most: two chunks of templates.
const REPORT_QUEUE: usize = 2;

/// Bytes of the report written to stdout at a time.
const STDOUT_BUFFER: usize = 256 << 10;

/// `PREFIXLINT_NO_CACHE=1` (or `true`) is `--no-cache` for every `check` under it, as
/// `RUFF_NO_CACHE` is ruff's: for a CI job or a test harness that runs many commands.
fn no_cache_from_env() -> bool {
    std::env::var("PREFIXLINT_NO_CACHE")
        .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
}

pub fn run(args: CheckArgs, output: Output) -> Result<ExitCode> {
    let config_span = tracing::info_span!(target: crate::profile::TIMELINE, "config").entered();
    let cwd = std::env::current_dir().map_err(|e| Error::io(".", e))?;
    let mut config = Config::resolve_for(
        args.config.config.as_deref(),
        args.config.no_config,
        &args.paths,
        &cwd,
    )?;
    if let Some(fail_on) = args.fail_on {
        config.fail_on = fail_on;
    }
    if let Some(min) = args.min_lost_tokens {
        config.min_lost_tokens = min;
    }
    let settings = Settings::resolve(&args.flags(), &config)?;
    let fail_on = config.fail_on;
    // Read the baseline first: a bad path should not cost a whole check run.
    let baseline = match &args.baseline {
        Some(path) => Some((crate::source::display_path(path), baseline::load(path)?)),
        None => None,
    };
    // `--cache-dir` is relative to the working directory, `cache_dir:` to the project root.
    let no_cache = args.no_cache || no_cache_from_env();
    let results_cache = match (no_cache, args.cache_dir, &config.cache_dir) {
        (true, _, _) => None,
        (false, Some(dir), _) => Some(cwd.join(dir)),
        (false, None, Some(dir)) => Some(config.project_root(&cwd).join(dir)),
        (false, None, None) => crate::results_cache::default_dir(&config.project_root(&cwd)),
    };
    let select = selected_rules(&args.select)?;
    let fixing = args.fix || args.diff;
    if args.unsafe_fixes && !fixing {
        return Err(Error::input_with_help(
            "`--unsafe-fixes` applies with `--fix` or `--diff`",
            "run `prefixlint check --fix --unsafe-fixes`, or `--diff --unsafe-fixes` to see them first",
        ));
    }
    let linter = Linter::new(
        config,
        LintOptions {
            settings,
            cwd: cwd.clone(),
            no_ignores: args.no_ignores,
            chat_requests: args.chat.chat_request.clone(),
            results_cache,
        },
    )?;
    let fix_options = FixOptions {
        unsafe_fixes: args.unsafe_fixes,
        select: (!select.is_empty()).then(|| select.clone()),
    };
    let fixes = if fixing {
        Some(fix::run::run(
            &linter,
            &args.paths,
            &cwd,
            &fix_options,
            !args.diff,
        )?)
    } else {
        None
    };
    let fixes = match fixes {
        Some(fixes) if args.diff => return Ok(diff_only(fixes)),
        fixes => fixes,
    };
    drop(config_span);
    let github_actions = std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true");
    let format = Format::resolve(args.format, github_actions);
    // `auto` colours only a report on the terminal, never one written to a file.
    let color = output
        .color
        .on(args.output.is_none() && std::io::stdout().is_terminal());
    // The results cache serves templates as this run writes them: not when `--select`
    // leaves findings out of what was stored.
    // Nor at another width than the default: the full report's text depends on it.
    let form = written_form(format, color)
        .filter(|_| select.is_empty() && (format != Format::Full || output.width == DEFAULT_WIDTH));
    let mut outcomes = linter.check_written(&args.paths, form)?;
    // Each template's output is written as soon as it is checked; what is kept is small.
    let stream = Stream {
        format,
        color,
        tail: Tail::of(output),
        width: output.width,
        engine: Some(linter.profile().clone()),
        baseline: baseline.as_ref(),
        threshold: args.baseline_threshold,
        select: &select,
        fixes: fixes
            .as_ref()
            .filter(|_| matches!(format, Format::Json | Format::Full | Format::Concise)),
    };
    let (report, comparison) = match &args.output {
        Some(path) => {
            let mut file = AtomicFile::create(path)?;
            let written = stream.write(&mut outcomes, &mut file);
            let (report, comparison) = written.map_err(|e| file.error(e))?;
            file.commit()?;
            (report, comparison)
        }
        None => {
            // A large buffer: a warm run writes a megabyte of JSON in a few calls.
            let mut stdout = std::io::BufWriter::with_capacity(STDOUT_BUFFER, Stdout);
            // Stdout ignores write errors, so this cannot fail.
            let written = stream.write(&mut outcomes, &mut stdout);
            written.map_err(|e| Error::input(format!("cannot write the report: {e}")))?
        }
    };
    let unmatched_globs = std::mem::take(&mut outcomes.unmatched_globs);
    if let Some(summary) = crate::profile::stage_summary() {
        eprint!("{summary}");
    }
    // Observable without changing the report: `cache: N hits, M misses, K files read`.
    if std::env::var_os("PREFIXLINT_CACHE_STATS").is_some_and(|v| v == "1") {
        if let Some((hits, misses, read)) = outcomes.cache_stats() {
            eprintln!("cache: {hits} hits, {misses} misses, {read} files read");
        }
    }
    if let Some(comparison) = &comparison {
        eprint!("{}", crate::fmt::escape_controls(&comparison.render_text()));
    }
    if output.notes() {
        eprint!("{}", check::discovery_notes(&unmatched_globs));
    }
    if let Some(summary) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|s| !s.is_empty()) {
        let mut markdown = github::step_summary_of(&report.closing());
        if let Some(comparison) = &comparison {
            markdown.push_str(&comparison.render_markdown());
        }
        append(Path::new(&summary), &markdown)?;
    }
    let worst = report.closing().worst();
    let failed_templates = !report.errors.is_empty();
    // Prompt-like text and nothing checked: never a silent pass.
    let nothing_checked = report.rows.is_empty() && !report.unchecked.is_empty();
    if nothing_checked {
        eprintln!(
            "warning: prompt-like text found in {} place{}, and no template was checked: see `unchecked` in the report{}",
            report.unchecked.len(),
            crate::fmt::plural(report.unchecked.len()),
            if args.strict { "" } else { " (--strict makes this exit 1)" }
        );
    }
    // The report already lists each failure; stderr gets the full diagnostic with its source.
    for failure in report.errors {
        eprintln!("{}", crate::error::for_terminal(failure.error));
    }
    // SARIF and GitHub output have no place for the fix summary: it goes to stderr.
    if let (Some(fixes), Format::Sarif | Format::Github, true) = (&fixes, format, output.notes()) {
        eprint!(
            "{}",
            crate::fmt::escape_controls(&fix::summary(&fixes.templates, true))
        );
    }
    let fix_failed = fixes.as_ref().is_some_and(|f| !f.errors.is_empty());
    for error in fixes.into_iter().flat_map(|f| f.errors) {
        eprintln!("{}", crate::error::for_terminal(error));
    }
    if failed_templates || fix_failed {
        return Ok(ExitCode::from(2));
    }
    let failed = worst.is_some_and(|worst| worst >= fail_on)
        || comparison.is_some_and(|c| c.regressions().next().is_some())
        || (args.strict && nothing_checked);
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Appends to a file the runner gave us (the job summary), creating it if needed.
fn append(path: &Path, text: &str) -> Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    file.write_all(text.as_bytes())
        .map_err(|e| Error::io(path, e))
}

/// `--select`'s rules as codes; an unknown one is an error before anything runs.
fn selected_rules(select: &[String]) -> Result<Vec<String>> {
    select
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(|key| {
            crate::rules::find(key)
                .map(|rule| rule.code.to_string())
                .ok_or_else(|| {
                    Error::input_with_help(
                        format!("--select: unknown rule `{key}`"),
                        "`prefixlint rules` lists the codes and names",
                    )
                })
        })
        .collect()
}

/// `--diff`: the diff on stdout, the summary and any error on stderr; exit 1 when a file
/// would change (as ruff's), 2 when a file could not be read.
fn diff_only(fixes: FixRun) -> ExitCode {
    // A closed pipe (`check --diff | head`) is not an error.
    let _ = Stdout.write_all(fixes.diff.as_bytes());
    eprint!(
        "{}",
        crate::fmt::escape_controls(&fix::summary(&fixes.templates, false))
    );
    let changed = fixes.changed_files();
    let failed = !fixes.errors.is_empty();
    for error in fixes.errors {
        eprintln!("{}", crate::error::for_terminal(error));
    }
    if failed {
        ExitCode::from(2)
    } else if changed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
