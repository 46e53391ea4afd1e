//! The command layer: one driver per subcommand, from parsed arguments to printed output
//! and an exit code. It may import every library module; no library module imports it.

pub mod audit;
pub mod capacity;
pub mod check;
pub mod measure;
pub mod render;
pub mod rules;
pub mod samples;
pub mod server;
pub mod simulate;

use crate::cli::{Cli, Command, ConfigArgs};
use crate::config::Config;
use crate::error::{Error, Result};
use clap::Parser;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

/// The `prefixlint` command line, from its arguments (the program name first) to its exit
/// code: the binary's `main` and the Python package's `prefixlint` command both run it.
pub fn main(args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> ExitCode {
    crate::profile::install();
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version on stdout, usage errors on stderr, as `Cli::parse` prints them.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let code = match run(cli.command) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("{:?}", miette::Report::new(error));
            ExitCode::from(2)
        }
    };
    let _ = std::io::Write::flush(&mut std::io::stdout());
    if let Some(timeline) = crate::profile::timeline_report() {
        eprint!("{timeline}");
    }
    if let Some(threads) = crate::profile::threads_report() {
        eprint!("{threads}");
    }
    code
}

/// Runs a parsed command: dispatch only, each subcommand's driver is in its module.
pub fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Check(args) => check::run(args),
        Command::Measure(args) => measure::run(args),
        Command::Capacity(args) => capacity::run(args),
        Command::Server(args) => {
            server::run(args)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Audit(args) => audit::run(args),
        Command::Simulate(args) => simulate::run(*args),
        Command::Samples(args) => {
            samples::run(args)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Render(args) => {
            render::run_render(args)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Rules => {
            rules::list();
            Ok(ExitCode::SUCCESS)
        }
        Command::Explain { rule } => {
            rules::explain(&rule)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The log files of `audit` and `simulate` (stdin, `-`, left out) and their config: found
/// from the files' folders, or as --config/--no-config say.
fn config_for_logs(logs: &[String], args: &ConfigArgs) -> Result<(Vec<PathBuf>, Config)> {
    let cwd = std::env::current_dir().map_err(|e| Error::io(".", e))?;
    let paths: Vec<PathBuf> = logs
        .iter()
        .filter(|l| *l != "-")
        .map(PathBuf::from)
        .collect();
    let config = Config::resolve_for(args.config.as_deref(), args.no_config, &paths, &cwd)?;
    Ok((paths, config))
}
