//! `prefixlint measure` from the command line: options, output, thresholds, exit codes.
//!
//! Exit codes: 0 all good; 1 a threshold (`--min-speedup`, `--max-warm-ttft-ms`,
//! `--fail-on-mismatch`) was missed; 2 an error (the report of what was measured is
//! still printed and written).

use crate::cli::MeasureArgs;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::measure::http::Timeouts;
use crate::measure::report::{self, MeasureFormat, MeasureReport};
use crate::measure::run::{self, MeasureOptions};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

pub fn run(args: MeasureArgs) -> Result<ExitCode> {
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
    let options = MeasureOptions {
        paths: args.paths,
        server: args.server,
        model: args.model,
        api: args.api,
        tokenizer: args.tokenizer,
        chat_template: args.chat_template,
        engine: args.engine,
        repeats: usize::from(args.repeats),
        timeouts: Timeouts {
            connect: seconds("connect-timeout", args.connect_timeout)?,
            request: seconds("timeout", args.timeout)?,
        },
        metrics: args.metrics,
        progress: std::io::stderr().is_terminal(),
        config,
        cwd,
    };
    let outcome = run::run(&options)?;
    let report = outcome.report;
    if let Some(path) = &args.output {
        write_atomically(path, &report::to_json(&report))?;
    }
    let text = match args.format {
        MeasureFormat::Json => report::to_json(&report),
        MeasureFormat::Table => report::to_table(&report),
    };
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
    if !outcome.errors.is_empty() {
        for error in outcome.errors {
            eprintln!("{:?}", miette::Report::new(error));
        }
        return Ok(ExitCode::from(2));
    }
    let missed = missed_thresholds(
        &report,
        &args_thresholds(
            args.min_speedup,
            args.max_warm_ttft_ms,
            args.fail_on_mismatch,
        ),
    );
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

/// Writes via a temporary file in the same folder and a rename: never a partial report.
fn write_atomically(path: &Path, text: &str) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io(path, e))?;
    file.write_all(text.as_bytes())
        .map_err(|e| Error::io(path, e))?;
    file.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}
