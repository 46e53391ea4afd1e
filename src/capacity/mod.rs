//! `prefixlint capacity`: how many requests fit in the KV cache of one GPU, and what a
//! shared prefix buys, computed exactly.
//!
//! bytes per token and layer = 2 (K and V) × kv_heads × head_dim × bytes per value;
//! a request holds its context rounded up to whole blocks (paged attention);
//! concurrency = floor((GPU memory − weights − overhead) / bytes per request).
//! All arithmetic is integer (`u128`): no float ever reaches a reported number.
//!
//! [`run`] takes typed [`CapacityOptions`] and returns the [`CapacityReport`]; the command
//! line (`commands::capacity`) parses the flags and prints it. [`model`] reads a Hugging
//! Face `config.json` (and refuses what the formula does not cover), [`table`] draws the
//! terminal report, [`server`] asks a live server for its own numbers, [`units`] parses and
//! prints `GB`/`GiB`.

pub mod model;
pub mod server;
pub mod table;
pub mod units;

use crate::error::{Error, Result};
use crate::source;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Version of the JSON contract `{"version": 1, "rows": [...]}`: add fields, never rename.
pub const VERSION: u32 = 1;

/// Contexts used when neither `--context` nor `--from-check` is given: the worked example's regimes.
pub const DEFAULT_CONTEXTS: [u64; 3] = [4096, 16384, 65536];

/// Upper bounds that keep every product inside `u128` (2^20 × 2^20 × 2^20 × 2 × 32 × 2^40 < 2^128).
const MAX_DIMENSION: u64 = 1 << 20;
const MAX_CONTEXT: u64 = 1 << 40;

/// The precision of the stored keys and values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KvDtype {
    Fp32,
    Fp16,
    Bf16,
    Fp8,
    Int8,
    Int4,
}

impl KvDtype {
    pub fn bits(self) -> u64 {
        match self {
            KvDtype::Fp32 => 32,
            KvDtype::Fp16 | KvDtype::Bf16 => 16,
            KvDtype::Fp8 | KvDtype::Int8 => 8,
            KvDtype::Int4 => 4,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            KvDtype::Fp32 => "fp32",
            KvDtype::Fp16 => "fp16",
            KvDtype::Bf16 => "bf16",
            KvDtype::Fp8 => "fp8",
            KvDtype::Int8 => "int8",
            KvDtype::Int4 => "int4",
        }
    }

    /// "2 bytes", "1 byte", "half a byte": the bytes per value in words.
    pub fn bytes_per_value(self) -> &'static str {
        match self.bits() {
            32 => "4 bytes",
            16 => "2 bytes",
            8 => "1 byte",
            _ => "half a byte",
        }
    }
}

/// What the cache holds per token: the attention geometry. Sliding-window layers keep at
/// most `window` tokens; every other layer keeps the whole context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvShape {
    pub layers: u64,
    pub kv_heads: u64,
    pub head_dim: u64,
    /// How many of `layers` use a sliding window, and its size in tokens.
    pub sliding: Option<SlidingWindow>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlidingWindow {
    pub layers: u64,
    pub window: u64,
}

impl KvShape {
    pub fn full_layers(&self) -> u64 {
        self.layers - self.sliding.map_or(0, |s| s.layers)
    }

    /// Bytes of K and V for one token in one layer. Exact for int4 too: 2 × 4 bits = 1 byte.
    pub fn layer_token_bytes(&self, dtype: KvDtype) -> u128 {
        2 * self.kv_heads as u128 * self.head_dim as u128 * dtype.bits() as u128 / 8
    }

    fn validate(&self, origin: &str) -> Result<()> {
        for (name, value) in [
            ("layers", self.layers),
            ("KV heads", self.kv_heads),
            ("head_dim", self.head_dim),
        ] {
            if value == 0 || value > MAX_DIMENSION {
                return Err(Error::input(format!(
                    "{origin}: {name} = {value} is out of range (1 to {MAX_DIMENSION})"
                )));
            }
        }
        if let Some(s) = self.sliding {
            if s.layers > self.layers || s.window == 0 || s.window > MAX_CONTEXT {
                return Err(Error::input(format!(
                    "{origin}: sliding window of {} tokens on {} of {} layers is not a valid shape",
                    s.window, s.layers, self.layers
                )));
            }
        }
        Ok(())
    }
}

/// One request shape to size: a context length and the prefix every such request shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestShape {
    pub context: u64,
    pub shared_prefix: u64,
    /// The template this shape came from (`--from-check`).
    pub template: Option<String>,
}

/// One row of the report: one context length. Field names are the JSON contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row {
    pub context: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// The context rounded up to whole blocks: what a full-attention layer allocates.
    pub allocated_tokens: u64,
    pub bytes_per_request: u128,
    /// floor(available / bytes_per_request).
    pub concurrency: u128,
    /// The tokens the requests that fit hold together: concurrency × context; with
    /// sliding-window layers, their bytes in full-attention tokens (floor), since those
    /// layers stop at the window.
    pub tokens_in_cache: u128,
    pub shared_prefix_tokens: u64,
    /// The prefix tokens that sit in full blocks and so are stored once for all requests.
    pub shared_prefix_cached_tokens: u64,
    pub shared_prefix_bytes: u128,
    /// What each request still holds alone: the partial block of the prefix and the rest.
    pub private_bytes_per_request: u128,
    pub concurrency_with_shared_prefix: u128,
    pub concurrency_gain: u128,
}

/// Sizes one request shape. `available` is the memory left for the KV cache.
pub fn size_row(
    shape: &KvShape,
    dtype: KvDtype,
    block_size: u64,
    available: u64,
    request: &RequestShape,
) -> Row {
    let block = block_size as u128;
    let context = request.context as u128;
    let token_bytes = shape.layer_token_bytes(dtype);
    let round_up = |tokens: u128| tokens.div_ceil(block) * block;

    let full_tokens = round_up(context);
    let sliding = shape.sliding.map_or(0, |s| {
        s.layers as u128 * round_up(context.min(s.window as u128))
    });
    let bytes_per_request = token_bytes * (shape.full_layers() as u128 * full_tokens + sliding);

    // Only full blocks are shared (vLLM hashes whole blocks), and a request always computes
    // its last token, so at most floor((n − 1) / block) blocks of it can be cached.
    // A sliding-window layer shares them only while the context fits in its window: past
    // that the prefix has left the window, and whether its blocks stay shared depends on the
    // engine, so it gets no credit.
    let shared_blocks = if request.shared_prefix == 0 {
        0
    } else {
        (request.shared_prefix as u128 / block).min((context - 1) / block)
    };
    let shared_tokens = shared_blocks * block;
    let sharing_layers = shape.full_layers()
        + shape
            .sliding
            .filter(|s| request.context <= s.window)
            .map_or(0, |s| s.layers);
    let shared_bytes = token_bytes * sharing_layers as u128 * shared_tokens;
    let private = bytes_per_request - shared_bytes;

    let available = available as u128;
    let concurrency = available / bytes_per_request;
    let with_prefix = if shared_bytes == 0 {
        concurrency
    } else if available < shared_bytes + private {
        0
    } else {
        (available - shared_bytes) / private
    };
    Row {
        context: request.context,
        template: request.template.clone(),
        allocated_tokens: full_tokens as u64,
        bytes_per_request,
        concurrency,
        tokens_in_cache: if shape.sliding.is_some() {
            concurrency * bytes_per_request / (token_bytes * shape.layers as u128)
        } else {
            concurrency * context
        },
        shared_prefix_tokens: request.shared_prefix,
        shared_prefix_cached_tokens: shared_tokens as u64,
        shared_prefix_bytes: shared_bytes,
        private_bytes_per_request: private,
        concurrency_with_shared_prefix: with_prefix,
        concurrency_gain: with_prefix.saturating_sub(concurrency),
    }
}

/// Where the weights figure came from, for the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "from")]
pub enum WeightsSource {
    /// `--weights SIZE`.
    Flag,
    /// `--params N` × bytes per parameter.
    Params { params: u64, bytes_per_param: u64 },
    /// The sizes of the `*.safetensors` files next to `config.json`.
    Safetensors { files: usize },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Memory {
    pub gpu_bytes: u64,
    pub weights_bytes: u64,
    pub weights: WeightsSource,
    pub overhead_bytes: u64,
    /// gpu − weights − overhead: what the KV cache may use.
    pub available_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelSummary {
    /// The config.json path, or `flags`.
    pub source: String,
    pub layers: u64,
    pub full_attention_layers: u64,
    pub sliding_window_layers: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sliding_window: Option<u64>,
    pub kv_heads: u64,
    pub head_dim: u64,
    pub kv_dtype: KvDtype,
    pub kv_bits: u64,
}

/// The whole `capacity` report, as printed by `--format json`.
#[derive(Debug, Clone, Serialize)]
pub struct CapacityReport {
    pub version: u32,
    pub model: ModelSummary,
    pub memory: Memory,
    pub block_size: u64,
    /// K and V bytes for one token across all layers (full attention).
    pub kv_bytes_per_token: u128,
    pub kv_bytes_per_block: u128,
    /// Whole blocks that fit in the available memory, and the tokens they hold; with
    /// sliding-window layers this is a lower bound (those layers stop growing at the window).
    pub blocks: u128,
    pub token_capacity: u128,
    pub rows: Vec<Row>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<server::ServerReport>,
    pub notes: Vec<String>,
}

/// Everything `capacity` needs, resolved from flags and files.
#[derive(Debug, Clone)]
pub struct CapacityInput {
    pub source: String,
    pub shape: KvShape,
    pub dtype: KvDtype,
    pub block_size: u64,
    pub memory: Memory,
    pub requests: Vec<RequestShape>,
    pub notes: Vec<String>,
}

/// Sizes every request shape.
pub fn compute(input: &CapacityInput) -> CapacityReport {
    let shape = &input.shape;
    let token_bytes = shape.layer_token_bytes(input.dtype) * shape.layers as u128;
    let block_bytes = token_bytes * input.block_size as u128;
    let blocks = input.memory.available_bytes as u128 / block_bytes;
    CapacityReport {
        version: VERSION,
        model: ModelSummary {
            source: input.source.clone(),
            layers: shape.layers,
            full_attention_layers: shape.full_layers(),
            sliding_window_layers: shape.sliding.map_or(0, |s| s.layers),
            sliding_window: shape.sliding.map(|s| s.window),
            kv_heads: shape.kv_heads,
            head_dim: shape.head_dim,
            kv_dtype: input.dtype,
            kv_bits: input.dtype.bits(),
        },
        memory: input.memory.clone(),
        block_size: input.block_size,
        kv_bytes_per_token: token_bytes,
        kv_bytes_per_block: block_bytes,
        blocks,
        token_capacity: blocks * input.block_size as u128,
        rows: input
            .requests
            .iter()
            .map(|r| {
                size_row(
                    shape,
                    input.dtype,
                    input.block_size,
                    input.memory.available_bytes,
                    r,
                )
            })
            .collect(),
        server: None,
        notes: input.notes.clone(),
    }
}

/// Where the attention shape comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSpec {
    /// A Hugging Face `config.json`.
    Config(PathBuf),
    /// Given as numbers (`--layers`, `--kv-heads`, `--head-dim`).
    Shape {
        layers: u64,
        kv_heads: u64,
        head_dim: u64,
    },
}

/// How much memory the weights take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weights {
    /// A size in bytes (`--weights`).
    Bytes(u64),
    /// A parameter count (`--params`): × 2 bytes, or the config's bytes per parameter.
    Params(u64),
}

/// The request shapes to size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestSource {
    /// Context lengths, each request sharing its first `shared_prefix` tokens.
    Contexts {
        contexts: Vec<u64>,
        shared_prefix: u64,
    },
    /// A `prefixlint check --format json` report: one shape per template.
    FromCheck(PathBuf),
}

/// What `capacity` computes from, typed; [`run`] resolves and checks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapacityOptions {
    pub model: ModelSpec,
    pub gpu_memory: u64,
    /// `None`: the `*.safetensors` files next to the config.
    pub weights: Option<Weights>,
    /// Activations, CUDA graphs, runtime; `None` counts 0 B (and says so).
    pub overhead: Option<u64>,
    /// `None`: the config's dtype, else fp16.
    pub kv_dtype: Option<KvDtype>,
    pub block_size: u64,
    pub requests: RequestSource,
    /// A running vLLM or llama.cpp server to compare with its own token capacity.
    pub server: Option<String>,
}

/// Resolves, computes and (with a server) cross-checks: the whole report.
pub fn run(options: &CapacityOptions) -> Result<CapacityReport> {
    let input = resolve(options)?;
    let mut report = compute(&input);
    if let Some(url) = &options.server {
        let found = server::probe(url)?;
        report.server = Some(server::ServerReport::new(url, found, &report));
    }
    Ok(report)
}

/// Turns options and files into a [`CapacityInput`], with every refusal as an error that
/// names the flag or the file.
pub fn resolve(args: &CapacityOptions) -> Result<CapacityInput> {
    let mut notes = Vec::new();
    let (source, shape, config_dtype, config) = match &args.model {
        ModelSpec::Config(path) => {
            let config = model::read_config(path)?;
            notes.extend(config.notes.iter().cloned());
            (
                config.display.clone(),
                config.shape.clone(),
                config.dtype,
                Some(config),
            )
        }
        &ModelSpec::Shape {
            layers,
            kv_heads,
            head_dim,
        } => {
            let shape = KvShape {
                layers,
                kv_heads,
                head_dim,
                sliding: None,
            };
            shape.validate("flags")?;
            ("flags".to_owned(), shape, None, None)
        }
    };

    let dtype = match (args.kv_dtype, config_dtype) {
        (Some(flag), Some(found)) => {
            // The flag wins; say so instead of the config's line.
            notes.retain(|n| !n.starts_with("KV dtype "));
            notes.push(format!(
                "KV dtype {} from --kv-dtype (the config's dtype is {})",
                flag.name(),
                found.name()
            ));
            flag
        }
        (Some(flag), None) => flag,
        (None, Some(found)) => found,
        (None, None) => {
            notes.push(
                "KV dtype: none given, assuming 16-bit (fp16); pass --kv-dtype to choose".into(),
            );
            KvDtype::Fp16
        }
    };

    if args.block_size == 0 || args.block_size > MAX_DIMENSION {
        return Err(Error::input_with_help(
            format!("--block-size {} is out of range", args.block_size),
            "vLLM's default is 16; use 1 for an unpaged, token-exact cache",
        ));
    }

    let gpu = args.gpu_memory;
    let overhead = match args.overhead {
        Some(bytes) => bytes,
        None => {
            notes.push("overhead: none given, counted as 0 B; pass --overhead (activations, CUDA graphs, runtime)".into());
            0
        }
    };
    let (weights_bytes, weights) = resolve_weights(args.weights, config.as_ref())?;
    let reserved = weights_bytes as u128 + overhead as u128;
    if reserved > gpu as u128 {
        return Err(Error::input_with_help(
            format!(
                "weights ({}) and overhead ({}) exceed --gpu-memory ({}): nothing is left for the KV cache",
                units::decimal(weights_bytes as u128),
                units::decimal(overhead as u128),
                units::decimal(gpu as u128)
            ),
            "check the units: GB is 10^9 bytes, GiB is 2^30 bytes",
        ));
    }
    let memory = Memory {
        gpu_bytes: gpu,
        weights_bytes,
        weights,
        overhead_bytes: overhead,
        available_bytes: (gpu as u128 - reserved) as u64,
    };

    let requests = match &args.requests {
        RequestSource::FromCheck(path) => requests_from_check(path, &mut notes)?,
        RequestSource::Contexts {
            contexts,
            shared_prefix,
        } => {
            let shared_prefix = *shared_prefix;
            for &context in contexts {
                if !(1..=MAX_CONTEXT).contains(&context) {
                    return Err(Error::input(format!(
                        "context {context} is out of range (1 to {MAX_CONTEXT} tokens)"
                    )));
                }
                if shared_prefix > context {
                    return Err(Error::input(format!(
                        "--shared-prefix {shared_prefix} is longer than the context {context}: a prefix is part of the request"
                    )));
                }
            }
            contexts
                .iter()
                .map(|&context| RequestShape {
                    context,
                    shared_prefix,
                    template: None,
                })
                .collect()
        }
    };
    if let Some(s) = shape.sliding {
        notes.push(format!(
            "sliding window: {} of {} layers are counted at min(context, {}) tokens rounded up to blocks; engines may hold up to one block more per sliding layer",
            s.layers,
            shape.layers,
            units::group(s.window as u128),
        ));
        if requests.iter().any(|r| r.shared_prefix > 0) {
            notes.push("shared prefix: sliding-window layers share it only where the context fits in the window; past that they are counted per request".into());
        }
    }
    Ok(CapacityInput {
        source,
        shape,
        dtype,
        block_size: args.block_size,
        memory,
        requests,
        notes,
    })
}

fn resolve_weights(
    weights: Option<Weights>,
    config: Option<&model::ModelConfig>,
) -> Result<(u64, WeightsSource)> {
    if let Some(Weights::Bytes(bytes)) = weights {
        return Ok((bytes, WeightsSource::Flag));
    }
    if let Some(Weights::Params(params)) = weights {
        let text = units::group(params as u128);
        if let Some(config) = config.filter(|c| c.quantized) {
            return Err(Error::input_with_help(
                format!(
                    "--params {text}: {} has a quantization_config, so parameters × 2 bytes would overstate the weights",
                    config.display
                ),
                "pass --weights with the checkpoint's size, or keep its *.safetensors next to the config",
            ));
        }
        let bytes_per_param = config.map_or(2, |c| c.weight_bytes_per_param);
        let bytes = params as u128 * bytes_per_param as u128;
        let bytes = u64::try_from(bytes)
            .map_err(|_| Error::input(format!("--params {text} is too large")))?;
        return Ok((
            bytes,
            WeightsSource::Params {
                params,
                bytes_per_param,
            },
        ));
    }
    if let Some(config) = config {
        if let Some((bytes, files)) = model::safetensors_bytes(&config.path)? {
            return Ok((bytes, WeightsSource::Safetensors { files }));
        }
        return Err(Error::input_with_help(
            format!(
                "no weights size: no *.safetensors files next to {}",
                config.display
            ),
            "pass --weights 16GB or --params 8B",
        ));
    }
    Err(Error::input_with_help(
        "no weights size",
        "pass --weights 16GB or --params 8B (parameters × 2 bytes at 16-bit)",
    ))
}

/// `4096,16384,65536` → contexts in tokens. Suffixes are refused: "4k" could be 4000 or 4096.
pub fn parse_contexts(list: &str) -> Result<Vec<u64>> {
    let mut contexts = Vec::new();
    for item in list.split(',').map(str::trim) {
        let digits: String = item.chars().filter(|c| *c != '_').collect();
        let context = digits
            .parse::<u64>()
            .ok()
            .filter(|c| (1..=MAX_CONTEXT).contains(c))
            .ok_or_else(|| {
                Error::input_with_help(
                    format!("--context {item:?} is not a token count"),
                    "write whole token counts separated by commas: --context 4096,16384,65536",
                )
            })?;
        contexts.push(context);
    }
    Ok(contexts)
}

/// The part of `prefixlint check --format json` that capacity reads.
#[derive(Debug, Deserialize)]
struct CheckReportIn {
    version: u32,
    templates: Vec<CheckTemplateIn>,
}

#[derive(Debug, Deserialize)]
struct CheckTemplateIn {
    path: String,
    tokens: CheckTokensIn,
    shared_prefix_tokens: u64,
}

#[derive(Debug, Deserialize)]
struct CheckTokensIn {
    #[allow(dead_code)]
    min: u64,
    max: u64,
}

/// One request shape per template: its longest render is the context (the worst case the
/// cache must hold), and its shared prefix is the one every render of it shares.
fn requests_from_check(path: &Path, notes: &mut Vec<String>) -> Result<Vec<RequestShape>> {
    let display = source::display_path(path);
    let text = source::read_text(path, &display)?;
    let report: CheckReportIn = serde_json::from_str(&text).map_err(|e| {
        let at = source::offset_of(&text, e.line(), e.column());
        Error::located(
            &display,
            &text,
            at..at + 1,
            format!("{display} is not a `prefixlint check --format json` report: {e}"),
            "here",
            Some("make it with `prefixlint check PATHS --format json > report.json`".into()),
        )
    })?;
    if report.version != 1 {
        return Err(Error::input(format!(
            "{display}: report version {} is not supported (this prefixlint reads version 1)",
            report.version
        )));
    }
    let mut requests = Vec::new();
    for template in report.templates {
        if template.tokens.max == 0 {
            notes.push(format!("{}: no tokens, skipped", template.path));
            continue;
        }
        if template.tokens.max > MAX_CONTEXT || template.shared_prefix_tokens > template.tokens.max
        {
            return Err(Error::input(format!(
                "{display}: template {} has inconsistent token counts (max {}, shared prefix {})",
                template.path, template.tokens.max, template.shared_prefix_tokens
            )));
        }
        requests.push(RequestShape {
            context: template.tokens.max,
            shared_prefix: template.shared_prefix_tokens,
            template: Some(template.path),
        });
    }
    if requests.is_empty() {
        return Err(Error::input(format!(
            "{display} lists no templates with tokens"
        )));
    }
    notes.push(format!(
        "contexts from {display}: each template's longest render, in prompt tokens only (the tokens a request generates take cache too)"
    ));
    Ok(requests)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn primer_shape() -> KvShape {
        KvShape {
            layers: 32,
            kv_heads: 8,
            head_dim: 128,
            sliding: None,
        }
    }

    const AVAILABLE: u64 = 60_000_000_000;

    fn request(context: u64, shared_prefix: u64) -> RequestShape {
        RequestShape {
            context,
            shared_prefix,
            template: None,
        }
    }

    #[test]
    fn worked_example_by_floor() {
        let rows: Vec<Row> = [4096, 16384, 65536]
            .iter()
            .map(|&n| {
                size_row(
                    &primer_shape(),
                    KvDtype::Fp16,
                    16,
                    AVAILABLE,
                    &request(n, 0),
                )
            })
            .collect();
        let bytes: Vec<u128> = rows.iter().map(|r| r.bytes_per_request).collect();
        let fit: Vec<u128> = rows.iter().map(|r| r.concurrency).collect();
        assert_eq!(bytes, [536_870_912, 2_147_483_648, 8_589_934_592]);
        assert_eq!(fit, [111, 27, 6]);
    }

    #[test]
    fn block_rounding_and_int4() {
        let row = size_row(
            &primer_shape(),
            KvDtype::Fp16,
            16,
            AVAILABLE,
            &request(4097, 0),
        );
        assert_eq!(row.allocated_tokens, 4112);
        assert_eq!(row.bytes_per_request, 4112 * 131_072);
        let row = size_row(&primer_shape(), KvDtype::Int4, 1, AVAILABLE, &request(3, 0));
        assert_eq!(row.bytes_per_request, 3 * 32 * 8 * 128);
    }

    #[test]
    fn shared_prefix_counts_full_blocks_once() {
        // 2,000-token requests sharing 1,800 tokens: 112 full blocks (1,792 tokens) are shared.
        let row = size_row(
            &primer_shape(),
            KvDtype::Fp16,
            16,
            AVAILABLE,
            &request(2000, 1800),
        );
        assert_eq!(row.shared_prefix_cached_tokens, 1792);
        assert_eq!(row.shared_prefix_bytes, 1792 * 131_072);
        assert_eq!(row.private_bytes_per_request, (2000 - 1792) * 131_072);
        assert_eq!(row.concurrency, 60_000_000_000 / (2000 * 131_072));
        assert_eq!(
            row.concurrency_with_shared_prefix,
            (60_000_000_000 - 1792 * 131_072) / (208 * 131_072)
        );
    }

    #[test]
    fn a_fully_shared_request_still_holds_its_last_block() {
        let row = size_row(
            &primer_shape(),
            KvDtype::Fp16,
            16,
            AVAILABLE,
            &request(4096, 4096),
        );
        assert_eq!(row.shared_prefix_cached_tokens, 4080);
        assert_eq!(row.private_bytes_per_request, 16 * 131_072);
    }

    #[test]
    fn sliding_layers_stop_at_the_window() {
        let shape = KvShape {
            sliding: Some(SlidingWindow {
                layers: 32,
                window: 4096,
            }),
            ..primer_shape()
        };
        let short = size_row(&shape, KvDtype::Fp16, 16, AVAILABLE, &request(1000, 0));
        let long = size_row(&shape, KvDtype::Fp16, 16, AVAILABLE, &request(65536, 0));
        assert_eq!(short.bytes_per_request, 1008 * 131_072);
        assert_eq!(long.bytes_per_request, 4096 * 131_072);
        let inside = size_row(&shape, KvDtype::Fp16, 16, AVAILABLE, &request(2000, 1800));
        let beyond = size_row(&shape, KvDtype::Fp16, 16, AVAILABLE, &request(8192, 1800));
        assert_eq!(inside.shared_prefix_bytes, 1792 * 131_072);
        assert_eq!(beyond.shared_prefix_bytes, 0);
    }
}
