//! `prefixlint simulate`: flags to [`SimulateOptions`], the report streamed as it is replayed.

use crate::capacity::units;
use crate::cli::SimulateArgs;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::report::output::{AtomicFile, Stdout, Wrapped};
use crate::settings::{Output, Settings};
use crate::simulate::fleet::Timing;
use crate::simulate::plot::Curve;
use crate::simulate::replica::EngineKind;
use crate::simulate::report::{Shape, SimulateFormat, Writer};
use crate::simulate::{self, Event, KvSource, SimulateOptions, Simulator, Sweep};
use std::io::Write;
use std::process::ExitCode;

pub fn run(args: SimulateArgs, output: Output) -> Result<ExitCode> {
    let (_, config) = super::config_for_logs(&args.logs, &args.config)?;
    let options = options(&args, &config)?;
    let simulator = Simulator::load(&options)?;
    let sweep = options.sweep.is_some();
    let shape = Shape {
        at_logged_times: options.timing.rate.is_none() && !options.timing.sequential,
        curve_table: matches!(options.sweep, Some(Sweep::KvBlocks(_)))
            || (sweep && (args.plot.is_some() || simulator.trace.is_some())),
        replicas_swept: matches!(options.sweep, Some(Sweep::Replicas(_))),
    };
    let (read, rows) = match &args.report.output {
        Some(path) => {
            let file = AtomicFile::create(path)?;
            let (file, read, rows) = write_report(&simulator, &args, shape, file, |e| {
                Error::input(format!("cannot write {}: {e}", path.display()))
            })?;
            file.commit()?;
            (read, rows)
        }
        None => {
            let stdout = std::io::BufWriter::new(Stdout);
            let error = |e| Error::input(format!("cannot write the report: {e}"));
            let (read, rows) = match (args.format, output.narrow()) {
                (SimulateFormat::Full, Some(width)) => {
                    let stdout = Wrapped::new(stdout, width);
                    let (_, read, rows) = write_report(&simulator, &args, shape, stdout, error)?;
                    (read, rows)
                }
                _ => {
                    let (_, read, rows) = write_report(&simulator, &args, shape, stdout, error)?;
                    (read, rows)
                }
            };
            (read, rows)
        }
    };
    if let Some(path) = &args.plot {
        let curve = Curve::of(&rows, options.block_size, shape.replicas_swept);
        let title = format!(
            "{}: hit rate against {}",
            args.logs.join(", "),
            curve.axis.label()
        );
        let svg = curve
            .svg(&title)
            .map_err(|e| Error::input(format!("cannot draw {}: {e}", path.display())))?;
        let mut file = AtomicFile::create(path)?;
        file.write_all(svg.as_bytes())
            .map_err(|e| Error::input(format!("cannot write {}: {e}", path.display())))?;
        file.commit()?;
    }
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
    shape: Shape,
    out: W,
    error: impl Fn(std::io::Error) -> Error,
) -> Result<(W, simulate::Read, Vec<simulate::Row>)> {
    let mut writer = Writer::start(
        out,
        args.format,
        &simulator.head(),
        &simulator.settings,
        args.sweep.is_some(),
        shape,
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
    Ok((out, read, rows))
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
        input_format: args.input_format.and_then(|f| f.split().0),
        trace_format: args.input_format.and_then(|f| f.split().1),
        trace_block_size: args.trace_block_size,
        max_line_bytes: args.max_line_bytes.max(1),
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
            sequential: args.sequential,
        },
        completion_tokens: args.completion_tokens,
        sweep: args.sweep.as_deref().map(Sweep::parse).transpose()?,
    })
}
