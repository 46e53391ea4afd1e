//! `prefixlint simulate`: what a deployment's KV cache keeps of real traffic.
//!
//! The log is read as `audit` reads it ([`prepare`]: `audit::input`, `audit::server_view`,
//! `audit::request`), each request reduced to its chained block hashes; the [`fleet`]
//! replays them in time over replicas whose caches ([`replica`]) model the engine: vLLM's
//! block pool exactly ([`block_pool`]), llama.cpp's slots. Capacity is `--kv-blocks` or
//! `capacity`'s arithmetic ([`kv_blocks`]). With a sweep, every setting replays the same
//! prepared stream side by side. Memory is bounded by the simulated caches (hashes, not
//! tokens) and the requests in flight.

pub mod block_pool;
pub mod fleet;
pub mod plot;
pub mod prepare;
pub mod radix;
pub mod replica;
pub mod report;
pub mod trace;
pub mod unbounded;

use crate::audit::input::InputFormat;
use crate::audit::request::RequestBuilder;
use crate::audit::server_view::ServerView;
use crate::audit::session::SessionKey;
use crate::cache_profile::CacheProfileKind;
use crate::capacity::{self, units, CapacityOptions, KvDtype, ModelSpec, RequestSource, Weights};
use crate::error::{Error, Result};
use crate::settings::Settings;
use block_pool::BlockPool;
use fleet::{Fleet, Outcome, Router, Summary, Timing};
use prepare::{Item, NotSimulated};
use replica::{EngineKind, Replica};
use trace::TraceFormat;
use unbounded::Unbounded;

pub const VERSION: u32 = 1;

/// Where the number of KV blocks comes from.
#[derive(Debug, Clone)]
pub enum KvSource {
    /// `--kv-blocks`: the engine's `num_gpu_blocks` (vLLM: the null block included).
    Blocks(usize),
    /// The model's geometry and the GPU's memory, through `capacity`.
    Model {
        model: ModelSpec,
        gpu_memory: u64,
        weights: Option<Weights>,
        overhead: Option<u64>,
        kv_dtype: Option<KvDtype>,
    },
}

/// `--sweep NAME=V1,V2,...`: one replay per value.
#[derive(Debug, Clone)]
pub enum Sweep {
    GpuMemory(Vec<(String, u64)>),
    Replicas(Vec<usize>),
    KvDtype(Vec<KvDtype>),
    /// The engine's block count itself (`--kv-blocks` per replay).
    KvBlocks(Vec<usize>),
}

impl Sweep {
    pub fn parse(text: &str) -> Result<Sweep> {
        let help = "--sweep gpu-memory=40GB,80GB | replicas=1,2,4 | kv-dtype=fp16,fp8 | kv-blocks=1000,2000,4000";
        let (name, values) = text
            .split_once('=')
            .ok_or_else(|| Error::input_with_help(format!("--sweep {text}: no `=`"), help))?;
        let values: Vec<&str> = values.split(',').map(str::trim).collect();
        if values.iter().any(|v| v.is_empty()) {
            return Err(Error::input_with_help(
                format!("--sweep {text}: an empty value"),
                help,
            ));
        }
        match name.trim() {
            "gpu-memory" => values
                .iter()
                .map(|v| Ok((v.to_string(), units::parse_bytes("--sweep gpu-memory", v)?)))
                .collect::<Result<_>>()
                .map(Sweep::GpuMemory),
            "replicas" => values
                .iter()
                .map(|v| match v.parse::<usize>() {
                    Ok(n) if (1..=MAX_REPLICAS).contains(&n) => Ok(n),
                    _ => Err(Error::input(format!(
                        "--sweep replicas: `{v}` is not a count from 1 to {MAX_REPLICAS}"
                    ))),
                })
                .collect::<Result<_>>()
                .map(Sweep::Replicas),
            "kv-dtype" => values
                .iter()
                .map(|v| {
                    <KvDtype as clap::ValueEnum>::from_str(v, true).map_err(|_| {
                        Error::input(format!(
                            "--sweep kv-dtype: `{v}` is not one of fp32, fp16, bf16, fp8, int8, int4"
                        ))
                    })
                })
                .collect::<Result<_>>()
                .map(Sweep::KvDtype),
            "kv-blocks" => values
                .iter()
                .map(|v| match v.replace('_', "").parse::<usize>() {
                    Ok(n) if (2..=MAX_KV_BLOCKS).contains(&n) => Ok(n),
                    _ => Err(Error::input_with_help(
                        format!("--sweep kv-blocks: `{v}` is not a block count from 2 to {MAX_KV_BLOCKS}"),
                        "vLLM's num_gpu_blocks, its null block included",
                    )),
                })
                .collect::<Result<_>>()
                .map(Sweep::KvBlocks),
            other => Err(Error::input_with_help(
                format!("--sweep {other}: not a setting simulate sweeps"),
                help,
            )),
        }
    }
}

pub const MAX_REPLICAS: usize = 1024;

/// `simulate --input-format`: a request log's formats (as `audit` reads them) and the
/// block-hash traces'.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SimulateInputFormat {
    /// `{"request": BODY, "response": BODY_OR_USAGE, "metadata": {...}}` a line.
    Records,
    /// Bare request bodies.
    Body,
    /// OpenAI Batch input lines.
    Batch,
    /// LiteLLM's standard logging payload.
    Litellm,
    /// OpenTelemetry GenAI spans as OTLP JSON.
    Otlp,
    /// Mooncake's traces: `{"timestamp" (ms), "input_length", "output_length", "hash_ids"}`.
    Mooncake,
    /// Qwen-Bailian's usage traces: `chat_id`, `parent_chat_id`, `timestamp` (s), `hash_ids`.
    Bailian,
    /// SemiAnalysis's Claude Code traces: one session a row, `requests[{t, in, out, hash_ids}]`.
    Semianalysis,
}

impl SimulateInputFormat {
    /// The request log's format, or the trace's.
    pub fn split(self) -> (Option<InputFormat>, Option<TraceFormat>) {
        match self {
            SimulateInputFormat::Records => (Some(InputFormat::Records), None),
            SimulateInputFormat::Body => (Some(InputFormat::Body), None),
            SimulateInputFormat::Batch => (Some(InputFormat::Batch), None),
            SimulateInputFormat::Litellm => (Some(InputFormat::Litellm), None),
            SimulateInputFormat::Otlp => (Some(InputFormat::Otlp), None),
            SimulateInputFormat::Mooncake => (None, Some(TraceFormat::Mooncake)),
            SimulateInputFormat::Bailian => (None, Some(TraceFormat::Bailian)),
            SimulateInputFormat::Semianalysis => (None, Some(TraceFormat::Semianalysis)),
        }
    }
}

/// The most blocks a replica's pool may have (its ids are 32-bit).
pub const MAX_KV_BLOCKS: usize = BlockPool::MAX_BLOCKS;

pub struct SimulateOptions {
    pub inputs: Vec<String>,
    /// The tokenizer, chat template and limits ([`Settings::resolve`]).
    pub settings: Settings,
    pub session_key: SessionKey,
    pub input_format: Option<InputFormat>,
    /// `--input-format mooncake|bailian|semianalysis`: the inputs are block-hash traces
    /// (else detected by their first line).
    pub trace_format: Option<TraceFormat>,
    /// `--trace-block-size`: tokens a trace hash covers, where the format does not fix it.
    pub trace_block_size: Option<usize>,
    pub max_line_bytes: usize,
    pub engine: EngineKind,
    pub block_size: usize,
    pub kv: Option<KvSource>,
    /// llama.cpp's slots per replica (`-np`).
    pub slots: usize,
    /// llama.cpp: the tokens one slot holds (`n_ctx / -np`), where known.
    pub slot_context: Option<usize>,
    /// llama.cpp's `--slot-prompt-similarity`.
    pub slot_prompt_similarity: f64,
    pub replicas: usize,
    pub router: Router,
    pub timing: Timing,
    /// Generated tokens of a request whose log has no completion count.
    pub completion_tokens: usize,
    pub sweep: Option<Sweep>,
}

/// One replay's configuration.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Setting {
    /// `gpu-memory=40GB`, …; none without a sweep.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub label: String,
    pub kv_blocks: Option<usize>,
    pub replicas: usize,
    /// How the block count was found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_source: Option<String>,
    /// The KV cache's bytes per replica, where the model's geometry is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_cache_bytes: Option<u64>,
}

/// What the report says before its requests.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Head {
    pub version: u32,
    pub engine: &'static str,
    pub block_size: usize,
    pub router: Router,
    pub ttl: Option<f64>,
    pub chat_template: String,
    /// A block-hash trace's format and tokens a hash (where a row does not say its own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceHead>,
    /// `--sequential`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sequential: bool,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct TraceHead {
    pub format: TraceFormat,
    pub trace_block_size: usize,
}

/// One row of a sweep, or the one replay.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Row {
    #[serde(flatten)]
    pub setting: Setting,
    pub summary: Summary,
}

/// What a [`KvSource`] gives.
pub struct FoundBlocks {
    /// vLLM's `num_gpu_blocks`: the null block included.
    pub blocks: usize,
    /// How it was found.
    pub source: String,
    /// A block's bytes, where the model's geometry is known.
    pub block_bytes: Option<u128>,
}

/// The number of blocks `kv` gives (vLLM's `num_gpu_blocks`: the null block included), and
/// how it was found.
pub fn kv_blocks(kv: &KvSource, block_size: usize) -> Result<FoundBlocks> {
    match kv {
        KvSource::Blocks(n) => {
            if *n < 2 {
                return Err(Error::input_with_help(
                    format!("--kv-blocks {n}: vLLM's block count includes its null block, so at least 2 are needed for one usable block"),
                    "pass the num_gpu_blocks the server reports (vllm:cache_config_info)",
                ));
            }
            if *n > MAX_KV_BLOCKS {
                return Err(Error::input_with_help(
                    format!(
                        "--kv-blocks {n}: at most {} blocks (block ids are 32-bit, as vLLM's)",
                        MAX_KV_BLOCKS
                    ),
                    "pass the num_gpu_blocks the server reports (vllm:cache_config_info)",
                ));
            }
            Ok(FoundBlocks {
                blocks: *n,
                source: format!("--kv-blocks {n}"),
                block_bytes: None,
            })
        }
        KvSource::Model {
            model,
            gpu_memory,
            weights,
            overhead,
            kv_dtype,
        } => {
            let input = capacity::resolve(&CapacityOptions {
                model: model.clone(),
                gpu_memory: *gpu_memory,
                weights: *weights,
                overhead: *overhead,
                kv_dtype: *kv_dtype,
                block_size: block_size as u64,
                requests: RequestSource::Contexts {
                    contexts: vec![block_size as u64],
                    shared_prefix: 0,
                },
                server: None,
            })?;
            // vLLM sizes a block over every layer (sliding-window layers too).
            let per_block = input.shape.layer_token_bytes(input.dtype)
                * input.shape.layers as u128
                * block_size as u128;
            let available = input.memory.available_bytes as u128;
            let blocks = available / per_block.max(1);
            if blocks < 2 {
                return Err(Error::input_with_help(
                    format!(
                        "{} of GPU memory leaves {} for the KV cache: {blocks} blocks of {block_size} tokens ({} each) at {}",
                        units::decimal(*gpu_memory as u128),
                        units::decimal(available),
                        units::decimal(per_block),
                        input.dtype.name()
                    ),
                    "the model does not fit: more --gpu-memory, smaller --weights or --overhead, or a smaller --kv-dtype",
                ));
            }
            let blocks = usize::try_from(blocks.min(u32::MAX as u128 - 1)).unwrap_or(usize::MAX);
            Ok(FoundBlocks {
                blocks,
                source: format!(
                    "{} blocks: {} left of {} after weights and overhead, {} per block ({}, {} layers)",
                    units::group(blocks as u128),
                    units::decimal(available),
                    units::decimal(*gpu_memory as u128),
                    units::decimal(per_block),
                    input.dtype.name(),
                    input.shape.layers
                ),
                block_bytes: Some(per_block),
            })
        }
    }
}

/// The settings to replay: one, or one per sweep value.
pub fn settings(options: &SimulateOptions) -> Result<Vec<Setting>> {
    let one = |label: String, kv: Option<&KvSource>, replicas: usize| -> Result<Setting> {
        let found = kv.map(|kv| kv_blocks(kv, options.block_size)).transpose()?;
        Ok(Setting {
            label,
            kv_blocks: found.as_ref().map(|f| f.blocks),
            replicas,
            kv_cache_bytes: found.as_ref().and_then(|f| {
                f.block_bytes
                    .map(|b| (b * f.blocks as u128).min(u64::MAX as u128) as u64)
            }),
            kv_source: found.map(|f| f.source),
        })
    };
    let model_only = |what: &str| -> Result<&KvSource> {
        match &options.kv {
            Some(kv @ KvSource::Model { .. }) => Ok(kv),
            _ => Err(Error::input_with_help(
                format!("--sweep {what} needs the model's geometry, not --kv-blocks"),
                "pass --model-config (or --layers, --kv-heads, --head-dim) and --gpu-memory",
            )),
        }
    };
    match &options.sweep {
        None => Ok(vec![one(
            String::new(),
            options.kv.as_ref(),
            options.replicas,
        )?]),
        Some(Sweep::KvBlocks(list)) => {
            // With the model's geometry (and --gpu-memory), a block's bytes label the
            // memory each count takes.
            let block_bytes = match &options.kv {
                Some(kv @ KvSource::Model { .. }) => kv_blocks(kv, options.block_size)?.block_bytes,
                _ => None,
            };
            list.iter()
                .map(|&n| {
                    let mut setting = one(
                        format!("kv-blocks={n}"),
                        Some(&KvSource::Blocks(n)),
                        options.replicas,
                    )?;
                    setting.kv_cache_bytes =
                        block_bytes.map(|b| (b * n as u128).min(u64::MAX as u128) as u64);
                    Ok(setting)
                })
                .collect()
        }
        Some(Sweep::Replicas(list)) => list
            .iter()
            .map(|&n| one(format!("replicas={n}"), options.kv.as_ref(), n))
            .collect(),
        Some(Sweep::GpuMemory(list)) => {
            let base = model_only("gpu-memory")?;
            list.iter()
                .map(|(text, bytes)| {
                    let mut kv = base.clone();
                    if let KvSource::Model { gpu_memory, .. } = &mut kv {
                        *gpu_memory = *bytes;
                    }
                    one(format!("gpu-memory={text}"), Some(&kv), options.replicas)
                })
                .collect()
        }
        Some(Sweep::KvDtype(list)) => {
            let base = model_only("kv-dtype")?;
            list.iter()
                .map(|dtype| {
                    let mut kv = base.clone();
                    if let KvSource::Model { kv_dtype, .. } = &mut kv {
                        *kv_dtype = Some(*dtype);
                    }
                    one(
                        format!("kv-dtype={}", dtype.name()),
                        Some(&kv),
                        options.replicas,
                    )
                })
                .collect()
        }
    }
}

/// Checks the options that need no file; every refusal names its flag.
pub fn validate(options: &SimulateOptions) -> Result<()> {
    if options.block_size == 0 || options.block_size > 1 << 20 {
        return Err(Error::input(format!(
            "--block-size {} is out of range (1 to {})",
            options.block_size,
            1 << 20
        )));
    }
    if options.replicas == 0 || options.replicas > MAX_REPLICAS {
        return Err(Error::input(format!(
            "--replicas {} is out of range (1 to {MAX_REPLICAS})",
            options.replicas
        )));
    }
    if options.slots == 0 || options.slots > 4096 {
        return Err(Error::input(format!(
            "--slots {} is out of range (1 to 4096)",
            options.slots
        )));
    }
    if options.slot_context == Some(0) {
        return Err(Error::input(
            "--slot-context 0: a slot holds at least one token",
        ));
    }
    let similarity = options.slot_prompt_similarity;
    if !(0.0..=1.0).contains(&similarity) {
        return Err(Error::input(format!(
            "--slot-prompt-similarity {similarity}: a fraction from 0 to 1"
        )));
    }
    let t = &options.timing;
    if let Some(rate) = t.rate {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(Error::input_with_help(
                format!("--rate {rate}: a rate is a positive number of requests per second"),
                "e.g. --rate 2.5",
            ));
        }
    }
    if !(t.decode_rate.is_finite() && t.decode_rate > 0.0) {
        return Err(Error::input(format!(
            "--decode-rate {}: a positive number of tokens per second",
            t.decode_rate
        )));
    }
    if let Some(ttl) = t.ttl {
        if !(ttl.is_finite() && ttl >= 0.0) {
            return Err(Error::input(format!(
                "--ttl {ttl}: a TTL is zero or more seconds"
            )));
        }
    }
    let swept_blocks = matches!(options.sweep, Some(Sweep::KvBlocks(_)));
    if let Some(n) = options.trace_block_size {
        if n == 0 || n > 1 << 20 {
            return Err(Error::input(format!(
                "--trace-block-size {n} is out of range (1 to {})",
                1 << 20
            )));
        }
    }
    if options.engine == EngineKind::Vllm && options.kv.is_none() && !swept_blocks {
        return Err(Error::input_with_help(
            "simulate needs the size of the KV cache",
            "pass --kv-blocks N (vLLM's num_gpu_blocks), or --model-config (or --layers, --kv-heads, --head-dim) with --gpu-memory",
        ));
    }
    if options.engine == EngineKind::Sglang {
        if options.kv.is_none() && !swept_blocks {
            return Err(Error::input_with_help(
                "simulate --engine sglang needs the size of the KV pool",
                "pass --kv-blocks N with --block-size B (a pool of N x B tokens: SGLang's max_total_num_tokens), or --model-config (or --layers, --kv-heads, --head-dim) with --gpu-memory",
            ));
        }
        if options.timing.ttl.is_some() {
            return Err(Error::input(
                "--ttl with --engine sglang: SGLang's radix cache has no TTL",
            ));
        }
    }
    Ok(())
}

/// The engine simulate models for a cache profile: vLLM, SGLang or llama.cpp.
pub fn engine_of(kind: CacheProfileKind) -> Option<EngineKind> {
    match kind {
        CacheProfileKind::Vllm => Some(EngineKind::Vllm),
        CacheProfileKind::LlamaCpp => Some(EngineKind::LlamaCpp),
        CacheProfileKind::Sglang => Some(EngineKind::Sglang),
        _ => None,
    }
}

/// What one replay reports as it goes.
pub enum Event<'a> {
    Request(&'a Outcome),
    NotSimulated(&'a NotSimulated),
}

/// What a run read besides its rows.
pub struct Read {
    pub not_simulated: usize,
    pub skipped: crate::audit::input::SkipLog,
}

/// A loaded simulation: settings resolved; for a request log, the tokenizer and chat
/// template loaded (a block-hash trace needs neither).
pub struct Simulator<'a> {
    options: &'a SimulateOptions,
    pub settings: Vec<Setting>,
    /// The inputs' block-hash trace format, where they are traces.
    pub trace: Option<TraceFormat>,
    builder: Option<RequestBuilder>,
}

/// The trace format the inputs share, `None` for request logs, an error for a mix.
pub fn inputs_format(options: &SimulateOptions) -> Result<Option<TraceFormat>> {
    if options.trace_format.is_some() {
        return Ok(options.trace_format);
    }
    let mut found: Option<(Option<TraceFormat>, &str)> = None;
    for file in &options.inputs {
        let format = trace::detect_file(file)?;
        match found {
            None => found = Some((format, file)),
            Some((before, first)) if before != format => {
                let name = |f: Option<TraceFormat>| {
                    f.map_or("a request log".to_string(), |f| {
                        format!("a {} block-hash trace", f.name())
                    })
                };
                return Err(Error::input_with_help(
                    format!("{first} is {} but {file} is {}", name(before), name(format)),
                    "simulate replays request logs or block-hash traces of one format at a time",
                ));
            }
            Some(_) => {}
        }
    }
    Ok(found.and_then(|f| f.0))
}

/// Arrival times that cannot order their requests: a log whose times are all whole seconds
/// (a response's `created`), with requests in the same second as the one before them.
struct SameSecond {
    previous: Option<f64>,
    repeats: usize,
    whole_seconds: bool,
}

impl SameSecond {
    fn new() -> SameSecond {
        SameSecond {
            previous: None,
            repeats: 0,
            whole_seconds: true,
        }
    }

    fn see(&mut self, time: Option<f64>) {
        let Some(t) = time else { return };
        self.whole_seconds &= t.fract() == 0.0;
        if self.previous == Some(t) {
            self.repeats += 1;
        }
        self.previous = Some(t);
    }

    /// The requests logged in the same second as the one before them, where the log's
    /// times are whole seconds (finer times order requests well enough).
    fn count(&self) -> usize {
        if self.whole_seconds {
            self.repeats
        } else {
            0
        }
    }
}

impl<'a> Simulator<'a> {
    pub fn load(options: &'a SimulateOptions) -> Result<Simulator<'a>> {
        validate(options)?;
        let settings = settings(options)?;
        let trace = inputs_format(options)?;
        if trace.is_some() && options.engine != EngineKind::Vllm {
            return Err(Error::input_with_help(
                "a block-hash trace has no token ids, which SGLang's tree and llama.cpp's slots compare",
                "replay block-hash traces with --engine vllm",
            ));
        }
        let builder = match trace {
            Some(_) => None,
            None => Some(RequestBuilder::load(&options.settings)?),
        };
        Ok(Simulator {
            options,
            settings,
            trace,
            builder,
        })
    }

    pub fn head(&self) -> Head {
        Head {
            version: VERSION,
            engine: match self.options.engine {
                EngineKind::Vllm => "vllm",
                EngineKind::LlamaCpp => "llama.cpp",
                EngineKind::Sglang => "sglang",
            },
            block_size: self.options.block_size,
            router: self.options.router,
            ttl: self.options.timing.ttl,
            chat_template: self.builder.as_ref().map_or_else(
                || "none (a block-hash trace)".into(),
                |b| b.chat_template_display.clone(),
            ),
            trace: self.trace.map(|format| TraceHead {
                format,
                trace_block_size: self
                    .options
                    .trace_block_size
                    .unwrap_or(format.default_block_size()),
            }),
            sequential: self.options.timing.sequential,
        }
    }

    /// Replays the logs under every setting; the first setting's per-request outcomes go to
    /// `each` in log order as they are decided. Returns one row per setting.
    pub fn run(&self, mut each: impl FnMut(Event<'_>)) -> Result<(Vec<Row>, Read)> {
        let options = self.options;
        let view = match options.engine {
            EngineKind::Vllm => ServerView::Vllm,
            // As audit reads SGLang: its request model is not modelled.
            EngineKind::Sglang => ServerView::AsSent,
            EngineKind::LlamaCpp => ServerView::LlamaCpp,
        };
        let block = options.block_size;
        let mut fleets: Vec<Fleet> = self
            .settings
            .iter()
            .map(|s| {
                let replicas = (0..s.replicas)
                    .map(|_| match options.engine {
                        EngineKind::Vllm => Replica::vllm(
                            s.kv_blocks.expect("validated"),
                            block,
                            options.timing.ttl.is_some(),
                        ),
                        // llama.cpp's KV cache has no null block: n_ctx cells, split
                        // evenly over the slots (no unified KV).
                        EngineKind::LlamaCpp => Replica::slots(
                            options.slots,
                            options
                                .slot_context
                                .or(s.kv_blocks.map(|b| b.saturating_mul(block) / options.slots)),
                            options.slot_prompt_similarity,
                            block,
                        ),
                        // A pool of tokens, page size 1: --kv-blocks x --block-size.
                        EngineKind::Sglang => Replica::radix(
                            s.kv_blocks.expect("validated").saturating_mul(block),
                            block,
                        ),
                    })
                    .collect();
                Fleet::new(replicas, options.router, options.timing, block)
            })
            .collect();
        // The bound is vLLM's block lookup; the token-granular caches can beat it.
        let mut unbounded = (options.engine == EngineKind::Vllm).then(|| Unbounded::new(block));
        let mut same_second = SameSecond::new();
        let mut not_simulated = 0;
        let mut requests = 0usize;
        let mut handle = |item: Item| -> Result<()> {
            match item {
                Item::Failed(failed) => {
                    not_simulated += 1;
                    each(Event::NotSimulated(&failed));
                }
                Item::Request(request) => {
                    requests += 1;
                    if self.trace.is_none() {
                        same_second.see(request.time);
                    }
                    let mut times = Vec::with_capacity(fleets.len());
                    for fleet in &fleets {
                        times.push(fleet.arrival(&request).ok_or_else(|| {
                            Error::input_with_help(
                                format!(
                                    "{}:{}: the request has no timestamp",
                                    request.file, request.line
                                ),
                                "simulate replays requests at their logged times (metadata.timestamp, a response's `created`); pass --rate N to replay at N requests per second, or --sequential",
                            )
                        })?);
                    }
                    if let Some(u) = &mut unbounded {
                        u.request(&request);
                    }
                    let (first, others) = fleets.split_first_mut().expect("one setting");
                    for (fleet, &at) in others.iter_mut().zip(&times[1..]) {
                        fleet.arrive(request.clone(), at, &mut |_| {});
                    }
                    first.arrive(request, times[0], &mut |o| each(Event::Request(&o)));
                }
            }
            Ok(())
        };
        let skipped = match (self.trace, &self.builder) {
            (Some(format), _) => {
                let reading = trace::TraceReading {
                    inputs: &options.inputs,
                    format,
                    trace_block_size: options.trace_block_size,
                    block_size: block,
                    max_line_bytes: options.max_line_bytes,
                };
                trace::read(&reading, |request| handle(Item::Request(request)))?
            }
            (None, Some(builder)) => {
                let reading = prepare::Reading {
                    inputs: &options.inputs,
                    input_format: options.input_format,
                    session_key: &options.session_key,
                    max_line_bytes: options.max_line_bytes,
                    block_size: block,
                    keep_ids: matches!(options.engine, EngineKind::LlamaCpp | EngineKind::Sglang),
                    completion_tokens: options.completion_tokens,
                };
                prepare::read(&reading, builder, view, handle)?
            }
            (None, None) => unreachable!("a request log loads its tokenizer"),
        };
        if requests == 0 && not_simulated == 0 {
            let why = skipped
                .first
                .first()
                .map(|s| format!(" ({}:{}: {})", s.file, s.line, s.reason))
                .unwrap_or_default();
            return Err(match self.trace {
                Some(format) => Error::input_with_help(
                    format!(
                        "{}: no request could be read{why}",
                        options.inputs.join(", ")
                    ),
                    format!(
                        "read as a {} block-hash trace (--input-format names another)",
                        format.name()
                    ),
                ),
                None => Error::input_with_help(
                    format!("{}: no request could be read{why}", options.inputs.join(", ")),
                    "simulate reads what audit reads: records {\"request\", \"response\", \"metadata\"}, bare request bodies, OpenAI Batch lines, LiteLLM logging payloads or OTLP JSON spans (--input-format forces one)",
                ),
            });
        }
        let bound = unbounded.as_ref().map(Unbounded::hit_rate);
        let mut rows = Vec::new();
        for (i, (mut fleet, setting)) in fleets.into_iter().zip(&self.settings).enumerate() {
            if i == 0 {
                fleet.finish(&mut |o| each(Event::Request(&o)));
            } else {
                fleet.finish(&mut |_| {});
            }
            fleet.summary.infinite_cache_hit_rate = bound;
            fleet.summary.same_second_requests = same_second.count();
            rows.push(Row {
                setting: setting.clone(),
                summary: fleet.summary,
            });
        }
        Ok((
            rows,
            Read {
                not_simulated,
                skipped,
            },
        ))
    }
}
