//! Runs a parsed command: wiring only, the work is in the library.

use prefixlint::check::{self, CheckOptions};
use prefixlint::cli::{CheckArgs, Command};
use prefixlint::config::Config;
use prefixlint::report::Format;
use prefixlint::{rules, Error, Result};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

pub fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Check(args) => run_check(args),
        Command::Render(args) => {
            prefixlint::chat::command::run_render(args)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Rules => {
            for rule in rules::all() {
                println!(
                    "{}  {:<28} {:<8} {}",
                    rule.code,
                    rule.name,
                    rule.severity.as_str(),
                    rule.summary
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Explain { rule } => {
            let meta = rules::find(&rule).ok_or_else(|| {
                Error::input_with_help(
                    format!("no rule named `{rule}`"),
                    "`prefixlint rules` lists them",
                )
            })?;
            println!(
                "# {} ({}) — {}\n\n{}\n\n{}",
                meta.code,
                meta.name,
                meta.severity.as_str(),
                meta.summary,
                meta.docs.trim_end()
            );
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
    let fail_on = config.fail_on;
    let outcome = check::run(&CheckOptions {
        paths: args.paths,
        tokenizer: args.tokenizer,
        config,
        cwd,
        chat: args.chat,
    })?;
    let stdout = std::io::stdout();
    let color = stdout.is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let format = args.format.unwrap_or(Format::Full);
    let rendered = outcome.report.render(format, color);
    let mut lock = stdout.lock();
    let _ = lock.write_all(rendered.as_bytes());
    let _ = lock.flush();
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
