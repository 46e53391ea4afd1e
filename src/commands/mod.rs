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
use crate::settings::Output;
use clap::{CommandFactory, Parser};
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
    let output = cli.global.output();
    set_error_colors(output);
    let code = match run(cli.command, output) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("{}", crate::error::for_terminal(error));
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
pub fn run(command: Command, output: Output) -> Result<ExitCode> {
    match command {
        Command::Check(args) => check::run(args, output),
        Command::Measure(args) => measure::run(args, output),
        Command::Capacity(args) => capacity::run(args, output),
        Command::Server(args) => {
            server::run(args)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Audit(args) => audit::run(args, output),
        Command::Simulate(args) => simulate::run(*args, output),
        Command::Samples(args) => {
            samples::run(args)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Render(args) => {
            render::run_render(args)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Rules => {
            rules::list(output.narrow());
            Ok(ExitCode::SUCCESS)
        }
        Command::Explain { rule } => {
            rules::explain(&rule, output.narrow())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "prefixlint", &mut script);
            write_stdout(&script);
            Ok(ExitCode::SUCCESS)
        }
        Command::Schema => {
            write_stdout(crate::config::json_schema().as_bytes());
            Ok(ExitCode::SUCCESS)
        }
        Command::Man => {
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command())
                .render(&mut page)
                .map_err(|e| Error::input(format!("cannot write the man page: {e}")))?;
            write_stdout(&page);
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Writes to stdout, ignoring a closed pipe (`prefixlint completions bash | head`).
fn write_stdout(bytes: &[u8]) {
    use std::io::Write;
    let mut out = crate::report::output::Stdout;
    let _ = out.write_all(bytes);
    let _ = out.flush();
}

/// The width miette gives errors when stdout is not a terminal.
const MIETTE_WIDTH: usize = 80;

/// The errors on stderr coloured as `--color` says (miette's own guess otherwise reads only
/// `NO_COLOR` and `FORCE_COLOR`), and no wider than the width.
fn set_error_colors(output: Output) {
    use std::io::IsTerminal;
    let color = output.color.on(std::io::stderr().is_terminal());
    // miette fits errors to the terminal, else to 80 columns: a narrower COLUMNS too.
    let width = Some(output.width).filter(|&w| w < MIETTE_WIDTH);
    let _ = miette::set_hook(Box::new(move |_| {
        let options = miette::MietteHandlerOpts::new().color(color);
        let options = match width {
            Some(width) => options.width(width),
            None => options,
        };
        Box::new(options.build())
    }));
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
