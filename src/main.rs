use clap::Parser;
use prefixlint::cli::Cli;
use std::process::ExitCode;

mod app;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match app::run(cli.command) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("{:?}", miette::Report::new(error));
            ExitCode::from(2)
        }
    }
}
