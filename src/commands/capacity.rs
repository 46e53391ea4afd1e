//! `prefixlint capacity` from the command line: flags to [`CapacityOptions`], the report
//! printed as a table or JSON.

use crate::capacity::{self, table, units, CapacityOptions, RequestSource, DEFAULT_CONTEXTS};
use crate::cli::{CapacityArgs, CapacityFormat};
use crate::error::{Error, Result};
use crate::settings::Output;
use std::io::Write;
use std::process::ExitCode;

pub fn run(args: CapacityArgs, output: Output) -> Result<ExitCode> {
    let report = capacity::run(&options(&args)?)?;
    let rendered = match args.format.unwrap_or(CapacityFormat::Full) {
        CapacityFormat::Full => match output.narrow() {
            Some(width) => crate::fmt::wrap_lines(&table::render(&report), width),
            None => table::render(&report),
        },
        CapacityFormat::Json => {
            let mut out = serde_json::to_string_pretty(&report)
                .map_err(|e| Error::input(format!("cannot write the JSON report: {e}")))?;
            out.push('\n');
            out
        }
    };
    // A closed pipe (`capacity … | head`) is not an error.
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(rendered.as_bytes())
        .and_then(|()| stdout.flush());
    Ok(ExitCode::SUCCESS)
}

/// The flags, parsed: each refusal names its flag.
fn options(args: &CapacityArgs) -> Result<CapacityOptions> {
    let model = args.shape.spec(
        "capacity needs the model's attention shape",
        "pass --model-config path/to/config.json, or all of --layers, --kv-heads and --head-dim",
    )?;
    let gpu_memory = units::parse_bytes("--gpu-memory", &args.gpu_memory)?;
    let overhead = args.memory.overhead()?;
    let weights = args.memory.weights()?;
    let requests = match &args.from_check {
        Some(path) => RequestSource::FromCheck(path.clone()),
        None => RequestSource::Contexts {
            contexts: match &args.context {
                Some(list) => capacity::parse_contexts(list)?,
                None => DEFAULT_CONTEXTS.to_vec(),
            },
            shared_prefix: args.shared_prefix.unwrap_or(0),
        },
    };
    Ok(CapacityOptions {
        model,
        gpu_memory,
        weights,
        overhead,
        kv_dtype: args.kv_dtype,
        block_size: args.block_size,
        requests,
        server: args.server.clone(),
    })
}
