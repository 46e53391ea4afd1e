//! `prefixlint capacity` from the command line: flags to [`CapacityOptions`], the report
//! printed as a table or JSON.

use crate::capacity::{
    self, table, units, CapacityOptions, ModelSpec, RequestSource, Weights, DEFAULT_CONTEXTS,
};
use crate::cli::{CapacityArgs, CapacityFormat};
use crate::error::{Error, Result};
use std::io::Write;
use std::process::ExitCode;

pub fn run(args: CapacityArgs) -> Result<ExitCode> {
    let report = capacity::run(&options(&args)?)?;
    let rendered = match args.format.unwrap_or(CapacityFormat::Full) {
        CapacityFormat::Full => table::render(&report),
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
    let model = match &args.model_config {
        Some(path) => ModelSpec::Config(path.clone()),
        None => {
            let (Some(layers), Some(kv_heads), Some(head_dim)) =
                (args.layers, args.kv_heads, args.head_dim)
            else {
                return Err(Error::input_with_help(
                    "capacity needs the model's attention shape",
                    "pass --model-config path/to/config.json, or all of --layers, --kv-heads and --head-dim",
                ));
            };
            ModelSpec::Shape {
                layers,
                kv_heads,
                head_dim,
            }
        }
    };
    let gpu_memory = units::parse_bytes("--gpu-memory", &args.gpu_memory)?;
    let overhead = args
        .overhead
        .as_deref()
        .map(|text| units::parse_bytes("--overhead", text))
        .transpose()?;
    let weights = match (&args.weights, &args.params) {
        (Some(text), _) => Some(Weights::Bytes(units::parse_bytes("--weights", text)?)),
        (None, Some(text)) => Some(Weights::Params(units::parse_params("--params", text)?)),
        (None, None) => None,
    };
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
