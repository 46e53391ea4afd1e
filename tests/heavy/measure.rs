//! `prefixlint measure` against a real llama.cpp server (tests/measure_support/llama_server.py):
//! a random-weight model carrying the same Qwen3 tokenizer prefixlint embeds, so local and
//! server token counts, and predicted and measured cached tokens, must match exactly.

use crate::support;

use serde_json::Value;
use std::sync::Mutex;
use support::llama::LlamaServer;

/// One real server at a time: they share two CPU cores, and timing needs quiet.
static SERIAL: Mutex<()> = Mutex::new(());

fn template<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["templates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["path"].as_str().unwrap().ends_with(name))
        .unwrap_or_else(|| panic!("no {name} in {report:#}"))
}

/// Exact equality, request by request: the tokenizer and the cache model are right.
fn assert_exact(report: &Value) {
    for t in report["templates"].as_array().unwrap() {
        for r in t["requests"].as_array().unwrap() {
            assert_eq!(
                r["prompt_tokens_local"], r["prompt_tokens_server"],
                "{}: {r}",
                t["path"]
            );
            assert_eq!(
                r["predicted_cached_tokens"], r["measured_cached_tokens"],
                "{}: {r}",
                t["path"]
            );
        }
    }
}

/// The names of the JSON contract of issue 5.
fn assert_contract(report: &Value) {
    let has = |v: &Value, keys: &[&str]| {
        for key in keys {
            assert!(v.get(key).is_some(), "missing `{key}` in {v}");
        }
    };
    has(report, &["version", "server", "templates"]);
    has(&report["server"], &["url", "engine"]);
    for t in report["templates"].as_array().unwrap() {
        has(
            t,
            &[
                "path",
                "ttft_cold_ms",
                "ttft_warm_ms",
                "speedup",
                "requests",
            ],
        );
        for r in t["requests"].as_array().unwrap() {
            has(
                r,
                &[
                    "sample",
                    "phase",
                    "prompt_tokens_local",
                    "prompt_tokens_server",
                    "predicted_cached_tokens",
                    "measured_cached_tokens",
                    "ttft_ms",
                ],
            );
        }
    }
}

fn check_layouts(report: &Value) {
    assert_eq!(report["version"], 1);
    assert_contract(report);
    assert_eq!(report["server"]["engine"], "llama.cpp");
    assert_exact(report);
    let clean = template(report, "clean.j2");
    let first = &clean["requests"][0];
    assert_eq!(first["phase"], "cold");
    assert!(
        first["prompt_tokens_local"].as_u64().unwrap() >= 1500,
        "{first}"
    );
    // Stable text first: warm requests reuse nearly the whole prompt.
    for r in clean["requests"].as_array().unwrap() {
        if r["phase"] == "warm" {
            let cached = r["measured_cached_tokens"].as_f64().unwrap();
            let total = r["prompt_tokens_server"].as_f64().unwrap();
            assert!(cached / total > 0.9, "{r}");
        }
    }
    let speedup = clean["speedup"].as_f64().unwrap();
    assert!(speedup >= 3.0, "clean layout: speedup {speedup}\n{clean:#}");
    // A timestamp on the first line: nothing to reuse, so no speedup.
    let stamped = template(report, "timestamp_first.j2");
    for r in stamped["requests"].as_array().unwrap() {
        assert!(r["measured_cached_tokens"].as_u64().unwrap() < 50, "{r}");
    }
    let speedup = stamped["speedup"].as_f64().unwrap();
    assert!(
        speedup < 1.5,
        "timestamp first: speedup {speedup}\n{stamped:#}"
    );
    let model = &report["ttft_model"];
    assert!(model["b_ms_per_token"].as_f64().unwrap() > 0.0, "{model}");
}

#[test]
fn completions_match_the_real_server_exactly() {
    let _quiet = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = LlamaServer::start();
    let (code, report, stderr) = server.measure(&[
        "fixtures/measure",
        "--api",
        "completions",
        "--repeats",
        "2",
        "--metrics",
        "--fail-on-mismatch",
    ]);
    assert_eq!(code, 0, "{stderr}\n{report:#}");
    check_layouts(&report);
    assert_eq!(
        report["server"]["engine_detected_by"][0],
        "Server: llama.cpp header"
    );
    let metrics = &report["server"]["metrics"];
    assert!(
        metrics["llamacpp:prompt_tokens_total"].as_f64().unwrap() > 0.0,
        "{metrics}"
    );
}

#[test]
fn chat_matches_the_real_server_exactly() {
    let _quiet = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = LlamaServer::start();
    let (code, report, stderr) =
        server.measure(&["fixtures/measure", "--api", "chat", "--repeats", "1"]);
    assert_eq!(code, 0, "{stderr}\n{report:#}");
    check_layouts(&report);
}

#[test]
fn server_tokenizer_and_thresholds() {
    let _quiet = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = LlamaServer::start();
    let (code, report, stderr) = server.measure(&[
        "fixtures/measure/clean.j2",
        "--tokenizer",
        "server",
        "--repeats",
        "1",
        "--min-speedup",
        "1000",
    ]);
    assert_eq!(
        code, 1,
        "an unreachable --min-speedup fails the run: {stderr}"
    );
    assert!(stderr.contains("--min-speedup"), "{stderr}");
    assert_eq!(report["server"]["tokenizer"], "server");
    assert_exact(&report);
    let (code, _, stderr) = server.measure(&[
        "fixtures/measure/timestamp_first.j2",
        "--repeats",
        "1",
        "--max-warm-ttft-ms",
        "1",
    ]);
    assert_eq!(code, 1, "{stderr}");
}

/// With a hosted model's prices (`--engine openai:model=gpt-4.1`: $2.00 input, $0.50
/// cached per million tokens), each template states its warm requests' cost per 1,000, as
/// predicted and as measured, recomputed here from the request records.
#[test]
fn warm_requests_are_priced_at_the_selected_model() {
    let _quiet = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = LlamaServer::start();
    let (code, report, stderr) = server.measure(&[
        "fixtures/measure/clean.j2",
        "--engine",
        "openai:model=gpt-4.1",
        "--repeats",
        "1",
    ]);
    assert_eq!(code, 0, "{stderr}\n{report:#}");
    let template = template(&report, "clean.j2");
    let warm: Vec<&Value> = template["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["phase"] == "warm")
        .collect();
    assert!(!warm.is_empty());
    // Micro-dollars per 1,000 requests: 1000 · mean((n − cached) · 2 + cached · 0.5) / 10⁶ · 10⁶.
    let per_1000 = |tokens: &str, cached: &str| -> f64 {
        let sum: u64 = warm
            .iter()
            .map(|r| {
                let n = r[tokens]
                    .as_u64()
                    .or(r["prompt_tokens_local"].as_u64())
                    .unwrap();
                let c = r[cached].as_u64().unwrap().min(n);
                (n - c) * 2_000_000 + c * 500_000
            })
            .sum();
        let micros = (1000 * sum + warm.len() as u64 * 500_000) / (warm.len() as u64 * 1_000_000);
        micros as f64 / 1_000_000.0
    };
    let cost = &template["cost"];
    assert_eq!(cost["model"], "gpt-4.1");
    assert_eq!(cost["prices_date"], "2026-12-01");
    assert_eq!(
        cost["per_1000_requests"]["predicted"].as_f64().unwrap(),
        per_1000("prompt_tokens_local", "predicted_cached_tokens"),
        "{template:#}"
    );
    assert_eq!(
        cost["per_1000_requests"]["measured"].as_f64().unwrap(),
        per_1000("prompt_tokens_server", "measured_cached_tokens"),
        "{template:#}"
    );
}
