//! The command line. Flag names are a contract with users and CI scripts.

use crate::capacity::{units, KvDtype, ModelSpec, Weights};
use crate::error::{Error, Result};
use crate::report::Format;
use crate::rules::Severity;
use crate::settings::{Color, Flags, Output};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(name = "prefixlint", version, about = "Lint prompt templates for prefix-cache friendliness", long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// The flags every command takes: how its output looks.
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Colour in the output: `auto` (when stdout is a terminal, unless NO_COLOR is set or
    /// CLICOLOR_FORCE asks for it), `always` or `never`.
    #[arg(
        long,
        value_enum,
        value_name = "WHEN",
        default_value = "auto",
        global = true
    )]
    pub color: ColorChoice,
    /// Print only the findings (nothing at all on a clean run); with -v, the notes too.
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
    /// With --quiet: also the notes.
    #[arg(long, short = 'v', global = true)]
    pub verbose: bool,
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Render templates, tokenize them and report what breaks the shared prefix.
    Check(CheckArgs),
    /// Send the renders to a live server and compare predicted with measured caching and TTFT.
    Measure(MeasureArgs),
    /// Print a ready-to-edit NAME.samples.yaml in the shape the template uses its variables.
    Samples(SamplesArgs),
    /// Print exactly what the server sees: a template's render, or a chat request through a chat template.
    Render(RenderArgs),
    /// List the rules.
    Rules,
    /// Print a rule's documentation.
    Explain {
        /// A rule code (PL001) or name (volatile-before-stable).
        rule: String,
    },
    /// How many requests fit in one GPU's KV cache, and what a shared prefix buys.
    Capacity(CapacityArgs),
    /// Find the cache breaks in logged traffic: each request against the one it should extend.
    Audit(AuditArgs),
    /// Replay logged traffic through a model of the engine's KV cache: what its prefix cache keeps.
    Simulate(Box<SimulateArgs>),
    /// A Language Server Protocol server on stdin/stdout: the findings in the editor as you type.
    Server(ServerArgs),
    /// Print a shell's completion script: bash, zsh, fish, powershell (or elvish).
    #[command(
        after_help = "Examples:\n  prefixlint completions bash > ~/.local/share/bash-completion/completions/prefixlint\n  prefixlint completions zsh > ~/.zfunc/_prefixlint\n  prefixlint completions fish > ~/.config/fish/completions/prefixlint.fish"
    )]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), as the release archives ship it.
    #[command(hide = true)]
    Man,
    /// Print the JSON Schema of prefixlint.yaml (prefixlint.schema.json).
    #[command(hide = true)]
    Schema,
}

#[derive(Debug, Args)]
pub struct ServerArgs {
    /// The tokenizer, as for `check` [default: `tokenizer:` in the config, else default].
    #[arg(long, value_name = "SPEC")]
    pub tokenizer: Option<String>,
    #[command(flatten)]
    pub config: ConfigArgs,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Request logs (JSONL, optionally gzipped); `-` reads stdin.
    #[arg(required = true, value_name = "LOG")]
    pub logs: Vec<String>,
    #[command(flatten)]
    pub tokens: LogTokensArgs,
    /// The engine whose prefix cache to model, as for `check` (llama.cpp: one slot holding the
    /// previous request; openai, anthropic, …: blocks, minimums and TTL).
    #[arg(long, value_name = "NAME[:opts]")]
    pub engine: Option<String>,
    /// What names a request's session: a JSON pointer into the record (`/metadata/conv`) or a
    /// metadata, body or header name [default: metadata.session_id, user, prompt_cache_key,
    /// x-session-id; without one, the recent request sharing the longest prefix].
    #[arg(long, value_name = "POINTER|NAME")]
    pub session_key: Option<String>,
    /// A folder of prompt templates: trace each break in a system or user message back to
    /// the template line that wrote it, as a `check` diagnostic (full, JSON and SARIF).
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
    #[command(flatten)]
    pub lines: LogLinesArgs,
    /// Output format.
    #[arg(long, value_enum, default_value = "full")]
    pub format: crate::audit::report::AuditFormat,
    /// What fails the run (exit 1): `skipped` (a request not audited or a line not read),
    /// `break` (that, or any prefix break), or `never`.
    #[arg(long, value_enum, default_value = "skipped")]
    pub fail_on: AuditFailOn,
    #[command(flatten)]
    pub report: ReportFileArgs,
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// `audit --fail-on`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AuditFailOn {
    Skipped,
    Break,
    Never,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Template files or folders; none means the current folder.
    pub paths: Vec<PathBuf>,
    /// `default` (the embedded Qwen3 tokenizer), a tokenizer.json path, a Hugging Face model id
    /// (org/name) from the local cache, or a llama.cpp model file (`model.gguf`).
    #[arg(long, value_name = "SPEC")]
    pub tokenizer: Option<String>,
    /// Count no special tokens (BOS, …) where the tokenizer says the server adds them.
    #[arg(long)]
    pub no_special_tokens: bool,
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Output format [default: full; github when GITHUB_ACTIONS=true]
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// The lowest severity that fails the run (exit 1): error, warning or info
    /// [default: `fail_on:` in the config, else warning].
    #[arg(long, value_name = "SEVERITY", value_parser = parse_severity)]
    pub fail_on: Option<Severity>,
    /// Report a divergence only when at least this many stable tokens follow it.
    #[arg(long, value_name = "TOKENS")]
    pub min_lost_tokens: Option<usize>,
    /// The engine whose prefix cache to model: tokens (default), vllm, sglang, llama.cpp, tgi,
    /// openai, anthropic, gemini, deepseek, bedrock; options as NAME:KEY=VALUE,...
    /// (vllm:block_size=32; a hosted API's model and its prices: openai:model=gpt-4.1).
    /// openai routes a request by about its first 256 tokens combined with the body's
    /// `prompt_cache_key`: one key per conversation or user keeps their requests on one
    /// cache, one per request misses every time (PL013).
    #[arg(long, value_name = "NAME")]
    pub engine: Option<String>,
    /// Write the report to FILE (atomically: whole or not at all) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// A `--format json` report from the base branch: fail when a template's shared prefix shrinks.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// How much a shared prefix may shrink against --baseline: tokens (`64`) or percent (`5%`).
    #[arg(
        long,
        value_name = "TOKENS|PERCENT",
        default_value = "5%",
        requires = "baseline"
    )]
    pub baseline_threshold: crate::baseline::Threshold,
    /// Disregard every suppression: inline `prefixlint: ignore` comments and `per_path_ignores`.
    #[arg(long)]
    pub no_ignores: bool,
    /// Check every template afresh: neither read nor write the results cache.
    #[arg(long)]
    pub no_cache: bool,
    /// The results cache's folder [default: `cache_dir:` in the config, else a folder per
    /// project in the user cache folder, never inside the checked tree].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    #[command(flatten)]
    pub chat: ChatArgs,
    /// Apply the safe fixes in place (each one verified by checking the fixed template again),
    /// then report what is left.
    #[arg(long)]
    pub fix: bool,
    /// With --fix or --diff: also apply the fixes that change what the model reads (moving a
    /// line to the end, reordering a list).
    #[arg(long)]
    pub unsafe_fixes: bool,
    /// Print the fixes as a unified diff and write nothing; exit 1 when a file would change.
    #[arg(long)]
    pub diff: bool,
    /// Only these rules, by code or name (PL001,PL003): the findings reported and fixed.
    #[arg(long, value_name = "RULES", value_delimiter = ',')]
    pub select: Vec<String>,
    /// Exit 1 when prompt-like text was found and no template was checked (every prompt in
    /// a format or a place prefixlint cannot check: the report's `unchecked`).
    #[arg(long)]
    pub strict: bool,
}

#[derive(Debug, Args)]
pub struct MeasureArgs {
    /// Template files or folders; none means the current folder.
    pub paths: Vec<PathBuf>,
    /// The server's base URL (plain http), e.g. http://127.0.0.1:8000.
    #[arg(long, value_name = "URL")]
    pub server: String,
    /// The model name sent with each request [default: the first of /v1/models].
    #[arg(long)]
    pub model: Option<String>,
    /// `completions` (/v1/completions, the rendered text) or `chat` (/v1/chat/completions, the
    /// chat template applied locally too, so token counts compare).
    #[arg(long, value_enum, default_value = "completions")]
    pub api: crate::measure::Api,
    /// `default`, a tokenizer.json, an org/name from the local HF cache, a `model.gguf`, or
    /// `server` (its /tokenize).
    #[arg(long, value_name = "SPEC")]
    pub tokenizer: Option<String>,
    /// Count no special tokens (BOS, …) where the tokenizer says the server adds them.
    #[arg(long)]
    pub no_special_tokens: bool,
    /// For --api chat: a .jinja chat template, a tokenizer_config.json or a .gguf [default:
    /// `chat_template:` in the config, else beside the tokenizer, or inside a .gguf tokenizer].
    #[arg(long, value_name = "FILE")]
    pub chat_template: Option<PathBuf>,
    /// The server's engine and cache profile, as for `check` (vllm:block_size=32), or ollama
    /// [default: detected from the server].
    #[arg(long, value_name = "NAME")]
    pub engine: Option<String>,
    /// Cold baselines per sample (and warm rounds where the engine can reset its cache).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..=100))]
    pub repeats: u16,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value = "table")]
    pub format: crate::measure::report::MeasureFormat,
    /// Also write the JSON report to this file (atomically), even when the run fails.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Scrape the prefix-cache counters from /metrics before and after.
    #[arg(long)]
    pub metrics: bool,
    /// Seconds to wait for a connection.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    pub connect_timeout: f64,
    /// Seconds one request may take, first byte and whole stream included.
    #[arg(long, value_name = "SECS", default_value_t = 300.0)]
    pub timeout: f64,
    /// Exit 1 when a template's warm speedup (cold p50 / warm p50) is below this.
    #[arg(long, value_name = "X")]
    pub min_speedup: Option<f64>,
    /// Exit 1 when a template's warm TTFT p50 is above this many ms.
    #[arg(long, value_name = "MS")]
    pub max_warm_ttft_ms: Option<f64>,
    /// Exit 1 when a measured cached-token count differs from the prediction.
    #[arg(long)]
    pub fail_on_mismatch: bool,
    /// A replica behind the --server router (repeat for each): measure cache hits across
    /// the fleet with chat-like sessions instead of the cold/warm protocol (on --api chat,
    /// conversations of messages).
    #[arg(long, value_name = "URL")]
    pub replica: Vec<String>,
    /// Fleet runs: how many sessions to send through the router.
    #[arg(long, value_name = "N", default_value_t = 8, requires = "replica",
          value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub sessions: u16,
    /// Fleet runs: turns per session; each turn's prompt extends the last.
    #[arg(long, value_name = "N", default_value_t = 4, requires = "replica",
          value_parser = clap::value_parser!(u16).range(1..=100))]
    pub turns: u16,
    /// Fleet runs: how each session names itself to the router: `prompt_cache_key` or `user`
    /// (body fields), a header such as `x-session-id` or `header:NAME`, or `none`.
    #[arg(
        long,
        value_name = "KEY",
        default_value = "prompt_cache_key",
        requires = "replica"
    )]
    pub affinity_key: String,
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// `check` flags for chat templates (flattened into `check`'s arguments).
#[derive(Debug, Clone, Default, Args)]
pub struct ChatArgs {
    /// Wrap each render in a chat request and render it through this chat template
    /// (a .jinja file or a tokenizer_config.json).
    #[arg(long, value_name = "FILE")]
    pub chat_template: Option<PathBuf>,
    /// Of a tokenizer_config.json's named chat templates, this one [default: `default`].
    #[arg(long, value_name = "NAME", requires = "chat_template")]
    pub template_name: Option<String>,
    /// The role of the message that carries each render [default: system]. A sample's
    /// `_user` key, if any, becomes a user message after it.
    #[arg(long, value_name = "ROLE")]
    pub chat_role: Option<String>,
    /// Audit a whole chat request (YAML: messages whose contents are templates or text, tools).
    #[arg(long, value_name = "FILE.yaml")]
    pub chat_request: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Use this config file instead of searching for prefixlint.yaml.
    #[arg(long, value_name = "FILE", conflicts_with = "no_config")]
    pub config: Option<PathBuf>,
    /// Ignore any config file.
    #[arg(long)]
    pub no_config: bool,
}

fn parse_severity(s: &str) -> Result<Severity, String> {
    s.parse()
}

#[derive(Debug, Args)]
pub struct RenderArgs {
    /// A plain template to render (rendered as Python Jinja2 does, with its samples).
    #[arg(
        required_unless_present_any = ["chat_template", "messages"],
        conflicts_with_all = ["chat_template", "messages"]
    )]
    pub template: Option<PathBuf>,
    /// Samples file for TEMPLATE [default: NAME.samples.yaml beside it, else synthesized].
    #[arg(long, value_name = "FILE", requires = "template")]
    pub samples: Option<PathBuf>,
    /// Which sample to render, counting from 0.
    #[arg(long, value_name = "N", default_value_t = 0, requires = "template")]
    pub sample: usize,
    /// The template embedded in TEMPLATE at this key: a YAML key path
    /// (`agent.templates.instance_template`, `prompts[0].content`) or a Python name. A
    /// `.prompty` file's body is rendered without it.
    #[arg(long, value_name = "KEY", requires = "template")]
    pub key: Option<String>,
    /// A model's chat template: a .jinja file, a tokenizer_config.json with `chat_template`, or
    /// a .gguf model (its `tokenizer.chat_template`).
    #[arg(long, value_name = "FILE", requires = "messages")]
    pub chat_template: Option<PathBuf>,
    /// Of a tokenizer_config.json's named chat templates, this one [default: `tool_use` with tools, else `default`].
    #[arg(long, value_name = "NAME", requires = "chat_template")]
    pub template_name: Option<String>,
    /// The request: YAML with `messages`, optional `tools`, `add_generation_prompt` and template
    /// variables [chat template: --chat-template, else `chat_template:` in the config, else the
    /// one inside a .gguf --tokenizer].
    #[arg(long, value_name = "FILE.yaml")]
    pub messages: Option<PathBuf>,
    /// The template's format: jinja, format (Python `{var}`: str.format, LangChain),
    /// crewai, fstring, semantic-kernel, mustache [default: jinja, or what its host declares].
    #[arg(long, value_name = "FORMAT", requires = "template")]
    pub format: Option<crate::formats::TemplateFormat>,
    /// The time `strftime_now()` and `now()` read, ISO-8601, for a reproducible render
    /// [default: the current time, as a request sent now would see it].
    #[arg(long, value_name = "ISO-8601")]
    pub now: Option<String>,
    /// Show the token boundaries and ids instead of the text.
    #[arg(long)]
    pub tokens: bool,
    /// Tokenizer for --tokens: `default` (embedded Qwen3), a tokenizer.json path, a local HF model
    /// id (org/name), or a `model.gguf`.
    #[arg(long, value_name = "SPEC")]
    pub tokenizer: Option<String>,
    /// For --tokens: leave out the special tokens (BOS, …) the server adds to a prompt.
    #[arg(long)]
    pub no_special_tokens: bool,
    #[command(flatten)]
    pub config: ConfigArgs,
}

#[derive(Debug, Args)]
pub struct SamplesArgs {
    /// The template whose variables to describe.
    pub template: PathBuf,
    /// Write NAME.samples.yaml beside the template instead of printing it; an existing file
    /// is never overwritten.
    #[arg(long)]
    pub write: bool,
    /// The template's format: jinja, format (Python `{var}`: str.format, LangChain),
    /// crewai, fstring, semantic-kernel, mustache [default: jinja].
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<crate::formats::TemplateFormat>,
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// `capacity --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CapacityFormat {
    /// A table per context and a bar chart.
    Full,
    /// The stable, versioned JSON report: `{"version": 1, "rows": [...]}`.
    Json,
}

/// The `capacity` flags. Names are a contract with users (see issue 6); keep them.
#[derive(Debug, Clone, Args)]
#[command(
    about = "How many requests fit in one GPU's KV cache, and what a shared prefix buys",
    after_help = "Units are explicit: GB = 10^9 bytes, GiB = 2^30 bytes.\n\nExamples:\n  prefixlint capacity --model-config config.json --gpu-memory 80GB --context 4096,16384,65536\n  prefixlint capacity --layers 32 --kv-heads 8 --head-dim 128 --gpu-memory 80GB --weights 16GB --overhead 4GB --kv-dtype fp8\n  prefixlint capacity --model-config config.json --gpu-memory 80GB --params 8B --from-check report.json"
)]
pub struct CapacityArgs {
    #[command(flatten)]
    pub shape: ModelShapeArgs,
    /// GPU memory, e.g. 80GB or 80GiB.
    #[arg(long, value_name = "SIZE")]
    pub gpu_memory: String,
    #[command(flatten)]
    pub memory: MemoryArgs,
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
    pub format: Option<CapacityFormat>,
}

/// The `simulate` flags. Names are a contract (issue 29); keep them.
#[derive(Debug, Args)]
#[command(
    mut_arg("chat_template", |a| a.help("The server's chat template [default: `chat_template:` in the config, else beside the tokenizer, or the embedded default's]")),
    mut_arg("params", |a| a.help("Parameter count, e.g. 8B; weights = parameters × 2 bytes")),
    after_help = "Units are explicit: GB = 10^9 bytes, GiB = 2^30 bytes.\n\nExamples:\n  prefixlint simulate traffic.jsonl --kv-blocks 2048 --block-size 16\n  prefixlint simulate traffic.jsonl --model-config config.json --gpu-memory 80GB --overhead 8GB --sweep gpu-memory=40GB,80GB\n  prefixlint simulate traffic.jsonl --kv-blocks 4096 --replicas 4 --router prefix --format json"
)]
pub struct SimulateArgs {
    /// Request logs (JSONL, optionally gzipped); `-` reads stdin. The same inputs as `audit`.
    #[arg(required = true, value_name = "LOG")]
    pub logs: Vec<String>,
    #[command(flatten)]
    pub tokens: LogTokensArgs,
    /// The engine whose cache to model: vllm (a paged prefix cache, LRU), sglang (a radix tree over a token pool) or llama.cpp (slots), as for `check` (vllm:block_size=128)
    /// [default: `engine:` in the config, else vllm].
    #[arg(long, value_name = "NAME")]
    pub engine: Option<String>,
    /// KV blocks per replica, as the engine reports them (vLLM's num_gpu_blocks, null block included).
    #[arg(long, value_name = "N", conflicts_with_all = ["model_config", "layers", "kv_heads", "head_dim", "gpu_memory"])]
    pub kv_blocks: Option<usize>,
    #[command(flatten)]
    pub shape: ModelShapeArgs,
    /// GPU memory per replica, e.g. 80GB.
    #[arg(long, value_name = "SIZE")]
    pub gpu_memory: Option<String>,
    #[command(flatten)]
    pub memory: MemoryArgs,
    /// KV cache precision [default: the config's dtype, else fp16]
    #[arg(long, value_enum, value_name = "DTYPE")]
    pub kv_dtype: Option<KvDtype>,
    /// Tokens per KV block (vLLM on GPU: 16; on CPU: 128; read it from the server's /metrics)
    /// [default: the engine's block_size or page_size, else 16].
    #[arg(long, value_name = "TOKENS")]
    pub block_size: Option<usize>,
    /// llama.cpp: slots per replica (the server's -np).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub slots: usize,
    /// llama.cpp: the tokens one slot holds (the server's n_ctx / -np; `n_ctx` in GET /slots)
    /// [default: the capacity's share per slot, else unbounded].
    #[arg(long, value_name = "TOKENS")]
    pub slot_context: Option<usize>,
    /// llama.cpp: the server's --slot-prompt-similarity (0 turns the similar-slot choice off).
    #[arg(long, value_name = "FRACTION", default_value_t = 0.1)]
    pub slot_prompt_similarity: f64,
    /// Replicas behind the router.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub replicas: usize,
    /// How requests are spread over replicas.
    #[arg(long, value_enum, default_value = "rr")]
    pub router: crate::simulate::fleet::Router,
    /// Cached blocks unused for this many seconds are dropped.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub ttl: Option<f64>,
    /// Replay at this many requests per second instead of the logged times.
    #[arg(long, value_name = "PER_SECOND", allow_negative_numbers = true)]
    pub rate: Option<f64>,
    /// Tokens per second a request generates, where the log has no duration.
    #[arg(
        long,
        value_name = "TOKENS_PER_SECOND",
        default_value_t = 50.0,
        allow_negative_numbers = true
    )]
    pub decode_rate: f64,
    /// Generated tokens of a request whose log has no completion count.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub completion_tokens: usize,
    /// What names a request's session (as for `audit`).
    #[arg(long, value_name = "POINTER|NAME")]
    pub session_key: Option<String>,
    /// The format of every input [default: detected per file]: a request log's, as for
    /// `audit`, or a block-hash trace's (mooncake, bailian, semianalysis; stdin needs it).
    #[arg(long, value_enum)]
    pub input_format: Option<crate::simulate::SimulateInputFormat>,
    /// Lines longer than this are skipped and counted.
    #[arg(long, value_name = "BYTES", default_value_t = crate::audit::input::DEFAULT_MAX_LINE_BYTES)]
    pub max_line_bytes: usize,
    /// One replay per value: gpu-memory=40GB,80GB | replicas=1,2,4 | kv-dtype=fp16,fp8 |
    /// kv-blocks=2000,4000,8000.
    #[arg(long, value_name = "NAME=V1,V2")]
    pub sweep: Option<String>,
    /// A block-hash trace's tokens per hash, where the format does not fix it [default:
    /// Mooncake 512, Qwen-Bailian 16, SemiAnalysis the row's block_size, else 64].
    #[arg(long, value_name = "TOKENS")]
    pub trace_block_size: Option<usize>,
    /// One request at a time in log order, each arriving when the one before has finished
    /// (the mode to compare with a probe or a reference replay).
    #[arg(long, conflicts_with = "rate")]
    pub sequential: bool,
    /// Draw the sweep's hit rate against KV memory (or replicas), with the infinite-cache
    /// bound, as an SVG file.
    #[arg(long, value_name = "FILE.svg", requires = "sweep")]
    pub plot: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "full")]
    pub format: crate::simulate::report::SimulateFormat,
    #[command(flatten)]
    pub report: ReportFileArgs,
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// How `audit` and `simulate` count a logged request's tokens: the server's tokenizer and
/// chat template.
#[derive(Debug, Args)]
pub struct LogTokensArgs {
    /// `default` (the embedded Qwen3 tokenizer), a tokenizer.json, a local HF model id, or a `.gguf`.
    #[arg(long, value_name = "SPEC")]
    pub tokenizer: Option<String>,
    /// The server's chat template: a .jinja file, a tokenizer_config.json or a .gguf [default:
    /// `chat_template:` in the config, else beside the tokenizer, inside a .gguf tokenizer, or
    /// the embedded default's].
    #[arg(long, value_name = "FILE")]
    pub chat_template: Option<PathBuf>,
    /// Count no special tokens (BOS, …) where the tokenizer says the server adds them.
    #[arg(long)]
    pub no_special_tokens: bool,
}

/// How `audit` and `simulate` read their log files.
#[derive(Debug, Args)]
pub struct LogLinesArgs {
    /// The log format of every file [default: detected per file].
    #[arg(long, value_enum)]
    pub input_format: Option<crate::audit::input::InputFormat>,
    /// Lines longer than this are skipped and counted.
    #[arg(long, value_name = "BYTES", default_value_t = crate::audit::input::DEFAULT_MAX_LINE_BYTES)]
    pub max_line_bytes: usize,
}

/// Where `audit` and `simulate` write their report.
#[derive(Debug, Args)]
pub struct ReportFileArgs {
    /// Write the report to FILE (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// A model's attention shape, for `capacity` and `simulate` to size its KV cache.
#[derive(Debug, Clone, Args)]
pub struct ModelShapeArgs {
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
}

impl ModelShapeArgs {
    /// Whether any of the shape's flags was given.
    pub fn given(&self) -> bool {
        self.model_config.is_some()
            || self.layers.is_some()
            || self.kv_heads.is_some()
            || self.head_dim.is_some()
    }

    /// The model: its config.json, else all three shape flags; `missing` and `help` make the
    /// refusal when neither is complete.
    pub fn spec(&self, missing: &str, help: &str) -> Result<ModelSpec> {
        if let Some(path) = &self.model_config {
            return Ok(ModelSpec::Config(path.clone()));
        }
        match (self.layers, self.kv_heads, self.head_dim) {
            (Some(layers), Some(kv_heads), Some(head_dim)) => Ok(ModelSpec::Shape {
                layers,
                kv_heads,
                head_dim,
            }),
            _ => Err(Error::input_with_help(missing, help)),
        }
    }
}

/// What besides the KV cache takes GPU memory, for `capacity` and `simulate`.
#[derive(Debug, Clone, Args)]
pub struct MemoryArgs {
    /// Memory taken by the weights, e.g. 16GB [default: from --params, or the *.safetensors next to the config]
    #[arg(long, value_name = "SIZE", conflicts_with = "params")]
    pub weights: Option<String>,
    /// Parameter count, e.g. 8B; weights = parameters × 2 bytes (16-bit serving precision).
    #[arg(long, value_name = "COUNT")]
    pub params: Option<String>,
    /// Memory kept for activations, CUDA graphs and the runtime, e.g. 4GB [default: 0 B]
    #[arg(long, value_name = "SIZE")]
    pub overhead: Option<String>,
}

impl MemoryArgs {
    /// The weights: --weights in bytes, else --params counted, else none (found later).
    pub fn weights(&self) -> Result<Option<Weights>> {
        Ok(match (&self.weights, &self.params) {
            (Some(text), _) => Some(Weights::Bytes(units::parse_bytes("--weights", text)?)),
            (None, Some(text)) => Some(Weights::Params(units::parse_params("--params", text)?)),
            (None, None) => None,
        })
    }

    /// --overhead in bytes.
    pub fn overhead(&self) -> Result<Option<u64>> {
        self.overhead
            .as_deref()
            .map(|text| units::parse_bytes("--overhead", text))
            .transpose()
    }
}

impl GlobalArgs {
    /// How the run prints, with the environment read (`NO_COLOR`, `CLICOLOR_FORCE`).
    pub fn output(&self) -> Output {
        let color = match self.color {
            ColorChoice::Auto => Color::Auto,
            ColorChoice::Always => Color::Always,
            ColorChoice::Never => Color::Never,
        };
        let terminal = terminal_size::terminal_size_of(std::io::stdout())
            .map(|(terminal_size::Width(w), _)| usize::from(w));
        Output {
            color: color.with_env(|name| std::env::var(name).ok()),
            quiet: self.quiet,
            verbose: self.verbose,
            width: crate::settings::width(terminal, std::env::var("COLUMNS").ok().as_deref()),
        }
    }
}

// What each command's flags say about the settings ([`crate::settings::Settings::resolve`]
// merges them with the config, once per run).

impl CheckArgs {
    pub fn flags(&self) -> Flags {
        Flags {
            tokenizer: self.tokenizer.clone(),
            no_special_tokens: self.no_special_tokens,
            chat_template: self.chat.chat_template.clone(),
            template_name: self.chat.template_name.clone(),
            chat_role: self.chat.chat_role.clone(),
            engine: self.engine.clone(),
        }
    }
}

impl MeasureArgs {
    pub fn flags(&self) -> Flags {
        Flags {
            tokenizer: self.tokenizer.clone(),
            no_special_tokens: self.no_special_tokens,
            chat_template: self.chat_template.clone(),
            engine: self.engine.clone(),
            ..Flags::default()
        }
    }
}

impl RenderArgs {
    pub fn flags(&self) -> Flags {
        Flags {
            tokenizer: self.tokenizer.clone(),
            no_special_tokens: self.no_special_tokens,
            chat_template: self.chat_template.clone(),
            template_name: self.template_name.clone(),
            ..Flags::default()
        }
    }
}

impl LogTokensArgs {
    /// The flags `audit` and `simulate` share, with their `--engine`.
    pub fn flags(&self, engine: Option<&str>) -> Flags {
        Flags {
            tokenizer: self.tokenizer.clone(),
            no_special_tokens: self.no_special_tokens,
            chat_template: self.chat_template.clone(),
            engine: engine.map(str::to_owned),
            ..Flags::default()
        }
    }
}

impl ServerArgs {
    pub fn flags(&self) -> Flags {
        Flags {
            tokenizer: self.tokenizer.clone(),
            ..Flags::default()
        }
    }
}
