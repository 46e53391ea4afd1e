//! `prefixlint measure` from the command line: options, output, thresholds, exit codes.
//!
//! Exit codes: 0 all good; 1 a threshold (`--min-speedup`, `--max-warm-ttft-ms`,
//! `--fail-on-mismatch`) was missed; 2 an error (printed once, on stderr; the report of
//! what was measured is still printed and written).

use crate::cli::MeasureArgs;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::http::Timeouts;
use crate::measure::report::{self, MeasureFormat, MeasureReport};
use crate::measure::run::{self, MeasureOptions};
use crate::report::output::write_atomic;
use crate::settings::{Output, Settings};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

pub fn run(args: MeasureArgs, output: Output) -> Result<ExitCode> {
    // Progress lines on a terminal's stderr, unless `--quiet`.
    let progress = std::io::stderr().is_terminal() && !output.quiet;
    let cwd = std::env::current_dir().map_err(|e| Error::io(".", e))?;
    let config = Config::resolve_for(
        args.config.config.as_deref(),
        args.config.no_config,
        &args.paths,
        &cwd,
    )?;
    let seconds = |name: &str, value: f64| {
        if value.is_finite() && value > 0.0 && value <= 86_400.0 {
            Ok(Duration::from_secs_f64(value))
        } else {
            Err(Error::input(format!(
                "--{name} {value}: give seconds between 0 and 86400"
            )))
        }
    };
    let settings = Settings::resolve(&args.flags(), &config)?;
    if !args.replica.is_empty() {
        let outcome = crate::measure::fleet::run(&crate::measure::fleet::FleetOptions {
            paths: args.paths,
            router: args.server,
            replicas: args.replica,
            model: args.model,
            api: args.api,
            settings,
            sessions: usize::from(args.sessions),
            turns: usize::from(args.turns),
            affinity_key: crate::measure::fleet::sessions::AffinityKey::parse(&args.affinity_key)?,
            timeouts: Timeouts {
                connect: seconds("connect-timeout", args.connect_timeout)?,
                request: seconds("timeout", args.timeout)?,
            },
            progress,
            config,
            cwd,
        })?;
        return finish(outcome, args.output.as_deref(), args.format, None);
    }
    let options = MeasureOptions {
        paths: args.paths,
        server: args.server,
        model: args.model,
        api: args.api,
        settings,
        repeats: usize::from(args.repeats),
        timeouts: Timeouts {
            connect: seconds("connect-timeout", args.connect_timeout)?,
            request: seconds("timeout", args.timeout)?,
        },
        metrics: args.metrics,
        progress,
        config,
        cwd,
    };
    let outcome = run::run(&options)?;
    let thresholds = args_thresholds(
        args.min_speedup,
        args.max_warm_ttft_ms,
        args.fail_on_mismatch,
    );
    finish(
        outcome,
        args.output.as_deref(),
        args.format,
        Some(thresholds),
    )
}

/// Writes and prints the report; exit 2 on errors, 1 on a missed threshold.
fn finish(
    outcome: run::MeasureOutcome,
    output: Option<&Path>,
    format: MeasureFormat,
    thresholds: Option<Thresholds>,
) -> Result<ExitCode> {
    let report = outcome.report;
    if let Some(path) = output {
        write_atomic(path, report::to_json(&report).as_bytes())?;
    }
    // A table of a run that measured nothing (the server refused the first request) would
    // only repeat the server line and notes around the error: the error alone says it. JSON
    // stays a whole report, with the error in `errors`, for the scripts that parse it.
    let measured =
        report.fleet.is_some() || report.templates.iter().any(|t| !t.requests.is_empty());
    let text = match format {
        MeasureFormat::Json => Some(report::to_json(&report)),
        MeasureFormat::Table if measured || outcome.errors.is_empty() => {
            Some(report::to_table(&report))
        }
        MeasureFormat::Table => None,
    };
    if let Some(text) = text {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
    }
    if !outcome.errors.is_empty() {
        for error in outcome.errors {
            eprintln!("{}", crate::error::for_terminal(error));
        }
        return Ok(ExitCode::from(2));
    }
    let missed = thresholds
        .map(|t| missed_thresholds(&report, &t))
        .unwrap_or_default();
    for line in &missed {
        eprintln!("prefixlint measure: {line}");
    }
    Ok(if missed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

pub struct Thresholds {
    pub min_speedup: Option<f64>,
    pub max_warm_ttft_ms: Option<f64>,
    pub fail_on_mismatch: bool,
}

fn args_thresholds(
    min_speedup: Option<f64>,
    max_warm_ttft_ms: Option<f64>,
    fail_on_mismatch: bool,
) -> Thresholds {
    Thresholds {
        min_speedup,
        max_warm_ttft_ms,
        fail_on_mismatch,
    }
}

/// One line per missed threshold.
pub fn missed_thresholds(report: &MeasureReport, thresholds: &Thresholds) -> Vec<String> {
    let mut missed = Vec::new();
    for t in &report.templates {
        if let (Some(min), Some(speedup)) = (thresholds.min_speedup, t.speedup) {
            if speedup < min {
                missed.push(format!(
                    "{}: warm speedup {speedup:.2}× is below --min-speedup {min}",
                    t.path
                ));
            }
        }
        if let (Some(max), Some(warm)) = (thresholds.max_warm_ttft_ms, t.ttft_warm_ms) {
            if warm > max {
                missed.push(format!(
                    "{}: warm TTFT p50 {warm:.1} ms is above --max-warm-ttft-ms {max}",
                    t.path
                ));
            }
        }
        if thresholds.fail_on_mismatch {
            let count = t.mismatches().count();
            if count > 0 {
                missed.push(format!(
                    "{}: {count} request(s) cached a different number of tokens than predicted",
                    t.path
                ));
            }
        }
    }
    missed
}
