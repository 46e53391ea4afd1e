//! The `capacity` flags. Names are a contract with users (see issue 6); keep them.

use super::KvDtype;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A table per context and a bar chart.
    Full,
    /// The stable, versioned JSON report: `{"version": 1, "rows": [...]}`.
    Json,
}

#[derive(Debug, Clone, Args)]
#[command(
    about = "How many requests fit in one GPU's KV cache, and what a shared prefix buys",
    after_help = "Units are explicit: GB = 10^9 bytes, GiB = 2^30 bytes.\n\nExamples:\n  prefixlint capacity --model-config config.json --gpu-memory 80GB --context 4096,16384,65536\n  prefixlint capacity --layers 32 --kv-heads 8 --head-dim 128 --gpu-memory 80GB --weights 16GB --overhead 4GB --kv-dtype fp8\n  prefixlint capacity --model-config config.json --gpu-memory 80GB --params 8B --from-check report.json"
)]
pub struct CapacityArgs {
    /// A Hugging Face config.json: layers, KV heads, head_dim and dtype come from it.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["layers", "kv_heads", "head_dim"])]
    pub model_config: Option<PathBuf>,
    /// Number of transformer layers (instead of --model-config).
    #[arg(long, value_name = "N")]
    pub layers: Option<u64>,
    /// Number of key/value heads per layer (instead of --model-config).
    #[arg(long, value_name = "N")]
    pub kv_heads: Option<u64>,
    /// Dimension of one attention head (instead of --model-config).
    #[arg(long, value_name = "N")]
    pub head_dim: Option<u64>,
    /// GPU memory, e.g. 80GB or 80GiB.
    #[arg(long, value_name = "SIZE")]
    pub gpu_memory: String,
    /// Memory taken by the weights, e.g. 16GB [default: from --params, or the *.safetensors next to the config]
    #[arg(long, value_name = "SIZE", conflicts_with = "params")]
    pub weights: Option<String>,
    /// Parameter count, e.g. 8B; weights = parameters × 2 bytes (16-bit serving precision).
    #[arg(long, value_name = "COUNT")]
    pub params: Option<String>,
    /// Memory kept for activations, CUDA graphs and the runtime, e.g. 4GB [default: 0 B]
    #[arg(long, value_name = "SIZE")]
    pub overhead: Option<String>,
    /// Context lengths in tokens, comma-separated [default: 4096,16384,65536]
    #[arg(long, value_name = "TOKENS,...", conflicts_with = "from_check")]
    pub context: Option<String>,
    /// KV cache precision [default: the config's dtype, else fp16]
    #[arg(long, value_enum, value_name = "DTYPE")]
    pub kv_dtype: Option<KvDtype>,
    /// Tokens per KV block: paged allocation rounds each request up to whole blocks.
    #[arg(long, value_name = "TOKENS", default_value_t = 16)]
    pub block_size: u64,
    /// Tokens at the start of every request that are identical (stored once with prefix caching).
    #[arg(long, value_name = "TOKENS", conflicts_with = "from_check")]
    pub shared_prefix: Option<u64>,
    /// A `prefixlint check --format json` report: its templates' token counts are the contexts and their shared prefixes are shared.
    #[arg(long, value_name = "FILE")]
    pub from_check: Option<PathBuf>,
    /// A running vLLM or llama.cpp server (http://host:port) to compare with its own token capacity.
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
    /// Output format [default: full]
    #[arg(long, value_enum)]
    pub format: Option<Format>,
}
