//! Runs a parsed command: dispatch only, each subcommand's driver is in `commands`.

use prefixlint::cli::Command;
use prefixlint::commands;
use prefixlint::Result;
use std::process::ExitCode;

pub fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Check(args) => commands::check::run(args),
        Command::Measure(args) => commands::measure::run(args),
        Command::Capacity(args) => commands::capacity::run(args),
        Command::Server(args) => {
            commands::server::run(args)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Audit(args) => commands::audit::run(args),
        Command::Simulate(args) => commands::simulate::run(args),
        Command::Samples(args) => {
            commands::samples::run(args)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Render(args) => {
            commands::render::run_render(args)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Rules => {
            commands::rules::list();
            Ok(ExitCode::SUCCESS)
        }
        Command::Explain { rule } => {
            commands::rules::explain(&rule)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
