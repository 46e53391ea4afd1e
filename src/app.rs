//! Runs a parsed command: wiring only, the work is in the library.

use prefixlint::check::{self, CheckOptions};
use prefixlint::cli::{CheckArgs, Command};
use prefixlint::config::Config;
use prefixlint::engine::{Engine, EngineConfig, EngineSetting};
use prefixlint::report::Format;
use prefixlint::{rules, Error, Result};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

pub fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Check(args) => run_check(args),
        Command::Capacity(args) => prefixlint::capacity::run(args),
        Command::Rules => {
            let listing: String = rules::all()
                .iter()
                .map(|rule| {
                    format!(
                        "{}  {:<28} {:<8} {}\n",
                        rule.code,
                        rule.name,
                        rule.severity.as_str(),
                        rule.summary
                    )
                })
                .collect();
            write_stdout(&listing);
            Ok(ExitCode::SUCCESS)
        }
        Command::Explain { rule } => {
            let meta = rules::find(&rule).ok_or_else(|| {
                Error::input_with_help(
                    format!("no rule named `{rule}`"),
                    "`prefixlint rules` lists them",
                )
            })?;
            write_stdout(&format!(
                "# {} ({}) — {}\n\n{}\n\n{}\n",
                meta.code,
                meta.name,
                meta.severity.as_str(),
                meta.summary,
                meta.docs.trim_end()
            ));
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn run_check(args: CheckArgs) -> Result<ExitCode> {
    let cwd = std::env::current_dir().map_err(|e| Error::io(".", e))?;
    let mut config = Config::resolve(args.config.config.as_deref(), args.config.no_config, &cwd)?;
    if let Some(fail_on) = args.fail_on {
        config.fail_on = fail_on;
    }
    if let Some(min) = args.min_lost_tokens {
        config.min_lost_tokens = min;
    }
    if let Some(spec) = &args.engine {
        let engine = EngineConfig::parse_cli(spec)?;
        Engine::from_config(&engine, "--engine")?;
        config.engine = Some(EngineSetting(engine));
    }
    let fail_on = config.fail_on;
    let outcome = check::run(&CheckOptions {
        paths: args.paths,
        tokenizer: args.tokenizer,
        config,
        cwd,
    })?;
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let format = args.format.unwrap_or(Format::Full);
    write_stdout(&outcome.report.render(format, color));
    if !outcome.errors.is_empty() {
        for error in outcome.errors {
            eprintln!("{:?}", miette::Report::new(error));
        }
        return Ok(ExitCode::from(2));
    }
    let failed = outcome.report.worst().is_some_and(|worst| worst >= fail_on);
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Writes to stdout, ignoring a closed pipe (`prefixlint rules | head`): `println!` would panic.
fn write_stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}
