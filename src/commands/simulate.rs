//! `prefixlint simulate`: flags to [`SimulateOptions`], the report streamed as it is replayed.

use crate::capacity::units;
use crate::cli::SimulateArgs;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::report::output::{AtomicFile, Stdout, Wrapped};
use crate::settings::{Output, Settings};
use crate::simulate::fleet::Timing;
use crate::simulate::replica::EngineKind;
use crate::simulate::report::{SimulateFormat, Writer};
use crate::simulate::{self, Event, KvSource, SimulateOptions, Simulator, Sweep};
use std::io::Write;
use std::process::ExitCode;

pub fn run(args: SimulateArgs, output: Output) -> Result<ExitCode> {
    let (_, config) = super::config_for_logs(&args.logs, &args.config)?;
    let options = options(&args, &config)?;
    let simulator = Simulator::load(&options)?;
    let sweep = options.sweep.is_some();
    let read = match &args.report.output {
        Some(path) => {
            let file = AtomicFile::create(path)?;
            let (file, read) = write_report(&simulator, &args, sweep, file, |e| {
                Error::input(format!("cannot write {}: {e}", path.display()))
            })?;
            file.commit()?;
            read
        }
        None => {
            let stdout = std::io::BufWriter::new(Stdout);
            let error = |e| Error::input(format!("cannot write the report: {e}"));
            match (args.format, output.narrow()) {
                (SimulateFormat::Full, Some(width)) => {
                    let stdout = Wrapped::new(stdout, width);
                    write_report(&simulator, &args, sweep, stdout, error)?.1
                }
                _ => write_report(&simulator, &args, sweep, stdout, error)?.1,
            }
        }
    };
    for skipped in &read.skipped.first {
        eprintln!(
            "warning: {}:{}: skipped: {}",
            skipped.file, skipped.line, skipped.reason
        );
    }
    if let Some(counts) = crate::profile::logged_messages_summary() {
        eprint!("{counts}");
    }
    Ok(ExitCode::SUCCESS)
}

fn write_report<W: Write>(
    simulator: &Simulator<'_>,
    args: &SimulateArgs,
    sweep: bool,
    out: W,
    error: impl Fn(std::io::Error) -> Error,
) -> Result<(W, simulate::Read)> {
    let mut writer = Writer::start(
        out,
        args.format,
        &simulator.head(),
        &simulator.settings,
        sweep,
    )
    .map_err(&error)?;
    let mut failed: Option<std::io::Error> = None;
    let (rows, read) = simulator.run(|event| {
        if failed.is_some() {
            return;
        }
        let written = match event {
            Event::Request(o) => writer.request(o),
            Event::NotSimulated(f) => writer.not_simulated(f),
        };
        if let Err(e) = written {
            failed = Some(e);
        }
    })?;
    if let Some(e) = failed {
        return Err(error(e));
    }
    let mut out = writer.finish(&rows, &read).map_err(&error)?;
    out.flush().map_err(&error)?;
    Ok((out, read))
}

/// Tokens per KV block where neither `--block-size` nor the engine's options give one.
const DEFAULT_BLOCK_SIZE: usize = 16;

/// The flags, parsed: each refusal names its flag.
fn options(args: &SimulateArgs, config: &Config) -> Result<SimulateOptions> {
    let settings = Settings::resolve(&args.tokens.flags(args.engine.as_deref()), config)?;
    // Self-hosted engines only; without one named, vLLM.
    let (engine, block_size) = match &settings.engine {
        None => (EngineKind::Vllm, None),
        Some(setting) => {
            let engine = simulate::engine_of(setting.profile.kind).ok_or_else(|| {
                let (context, name) = (setting.context(), &setting.options.name);
                Error::input_with_help(
                    format!("{context}: engine `{name}`: simulate models self-hosted engines only"),
                    "--engine vllm, --engine sglang or --engine llama.cpp",
                )
            })?;
            let options = &setting.options;
            (engine, options.block_size.or(options.page_size))
        }
    };
    let kv = match (args.kv_blocks, args.shape.given(), &args.gpu_memory) {
        (Some(n), _, _) => Some(KvSource::Blocks(n)),
        (None, false, None) => None,
        (None, _, gpu) => {
            let model = args.shape.spec(
                "simulate needs the model's attention shape to size the KV cache",
                "pass --model-config path/to/config.json, or all of --layers, --kv-heads and --head-dim (or --kv-blocks N)",
            )?;
            let Some(gpu) = gpu else {
                return Err(Error::input_with_help(
                    "simulate needs --gpu-memory with the model's geometry",
                    "e.g. --gpu-memory 80GB (or --kv-blocks N)",
                ));
            };
            Some(KvSource::Model {
                model,
                gpu_memory: units::parse_bytes("--gpu-memory", gpu)?,
                weights: args.memory.weights()?,
                overhead: args.memory.overhead()?,
                kv_dtype: args.kv_dtype,
            })
        }
    };
    Ok(SimulateOptions {
        inputs: args.logs.clone(),
        settings,
        session_key: crate::audit::session::SessionKey::parse(args.session_key.as_deref()),
        input_format: args.lines.input_format,
        max_line_bytes: args.lines.max_line_bytes.max(1),
        engine,
        block_size: args.block_size.or(block_size).unwrap_or(DEFAULT_BLOCK_SIZE),
        kv,
        slots: args.slots,
        slot_context: args.slot_context,
        slot_prompt_similarity: args.slot_prompt_similarity,
        replicas: args.replicas,
        router: args.router,
        timing: Timing {
            rate: args.rate,
            decode_rate: args.decode_rate,
            ttl: args.ttl,
        },
        completion_tokens: args.completion_tokens,
        sweep: args.sweep.as_deref().map(Sweep::parse).transpose()?,
    })
}
