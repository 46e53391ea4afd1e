//! `simulate --engine sglang` against SGLang's own radix cache: sglang 0.5.23's `RadixCache`
//! over its `TokenToKVPoolAllocator`, on CPU (scripts/setup.d/65-sglang.sh), driven in its
//! scheduler's order by tests/sglang_support/radix_drive.py. A deterministic multi-session
//! sequence, eviction-heavy, is logged as completion requests; the driver tokenizes each
//! prompt with the tokenizer file prefixlint embeds (assets/qwen3) and replays them one at a
//! time; `simulate` replays the log with the same pool and must predict the tree's matched
//! length on every request, at two pool sizes.

use crate::support;

use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use support::random::Words;

/// The words the sequence is made of (about one token each).
const WORDS: &[&str] = &[
    "kettle", "lagoon", "pepper", "saffron", "tundra", "walrus", "zephyr", "basalt", "cobalt",
    "dune", "fjord", "gravel", "hollow", "juniper", "lichen", "mosaic", "nectar", "oyster",
    "pebble", "quiver", "rustic", "sorrel", "timber", "umber",
];

/// Four sessions over two system prompts, turns interleaved, each turn's prompt the history
/// so far (with the test's own replies) and a new question; replies of 1 to 40 tokens.
fn sequence() -> Vec<(String, String, u64)> {
    let mut words = Words::new(41, WORDS);
    let systems = [words.text(150), words.text(100)];
    let mut histories: Vec<Vec<String>> = (0..4).map(|s| vec![systems[s / 2].clone()]).collect();
    let order = [
        0, 1, 2, 0, 3, 1, 1, 2, 0, 3, 3, 2, 0, 1, 2, 0, 3, 1, 0, 2, 3, 1, 0, 2, 1, 3, 0, 2,
    ];
    let mut out = Vec::new();
    for (i, &s) in order.iter().enumerate() {
        let history = &mut histories[s];
        if history.len() > 6 {
            history.truncate(1);
        }
        history.push(format!("\nQ: {}", words.text(30 + (i * 17) % 40)));
        let completion = 1 + (i as u64 * 13) % 40;
        out.push((format!("s{s}"), history.concat(), completion));
        history.push(format!("\nA: {}", words.text(10 + i % 7)));
    }
    out
}

fn write_log(log: &std::path::Path) {
    let mut lines = String::new();
    for (i, (session, prompt, completion)) in sequence().into_iter().enumerate() {
        let record = json!({
            "request": {"model": "tiny", "prompt": prompt, "max_tokens": completion},
            "response": {
                "object": "text_completion",
                "model": "tiny",
                "choices": [{"index": 0, "text": "", "finish_reason": "length"}],
                "usage": {"completion_tokens": completion},
            },
            "metadata": {"session_id": session, "timestamp": 1_800_000_000 + 60 * i},
        });
        lines.push_str(&record.to_string());
        lines.push('\n');
    }
    std::fs::write(log, lines).unwrap();
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// SGLang's venv as scripts/setup.d/65-sglang.sh exports it; missing is a failure.
fn sglang_python() -> PathBuf {
    let python = std::env::var_os("PREFIXLINT_TEST_SGLANG_PYTHON").map(PathBuf::from);
    match python {
        Some(p) if p.is_file() => p,
        other => panic!(
            "no SGLang venv ({other:?}): run `for s in scripts/setup.d/*.sh; do source $s; done` \
             (scripts/setup.d/65-sglang.sh installs it)"
        ),
    }
}

/// The driver's per-request results: prompt tokens, cached tokens, tokens evicted so far.
fn drive(pool: u64) -> Vec<Value> {
    let requests: Vec<Value> = sequence()
        .into_iter()
        .map(|(_, prompt, completion)| json!({"prompt": prompt, "completion_tokens": completion}))
        .collect();
    let spec = json!({
        "pool": pool,
        "tokenizer": repo().join("assets/qwen3/tokenizer.json.gz"),
        "requests": requests,
    });
    let mut child = Command::new(sglang_python())
        .arg(repo().join("tests/sglang_support/radix_drive.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(spec.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn simulate(log: &std::path::Path, block: u64, blocks: u64) -> Value {
    let (block, blocks) = (block.to_string(), blocks.to_string());
    support::simulate_json(
        log,
        &[
            "--engine",
            "sglang",
            "--block-size",
            &block,
            "--kv-blocks",
            &blocks,
        ],
    )
}

fn exact_at(block: u64, blocks: u64) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("traffic.jsonl");
    write_log(&log);
    let report = simulate(&log, block, blocks);
    let driven = drive(block * blocks);
    let requests = report["requests"].as_array().unwrap();
    assert_eq!(requests.len(), driven.len());
    let mut table = String::new();
    let (mut wrong, mut hits, mut partial) = (0, 0, 0);
    let mut previous: std::collections::HashMap<String, u64> = Default::default();
    for (r, d) in requests.iter().zip(&driven) {
        // The same token ids on both sides: the same counts from the same tokenizer file.
        assert_eq!(r["prompt_tokens"], d["prompt_tokens"], "{r} {d}");
        let predicted = r["predicted_cached_tokens"].as_u64().unwrap();
        let cached = d["cached"].as_u64().unwrap();
        wrong += usize::from(predicted != cached);
        hits += usize::from(cached > 0);
        // A hit short of the session's previous prompt: eviction took part of its history.
        let session = r["session"].as_str().unwrap().to_string();
        let before = previous.insert(session, d["prompt_tokens"].as_u64().unwrap());
        partial += usize::from(cached > 0 && before.is_some_and(|b| cached < b - 1));
        table.push_str(&format!(
            "line {} {}: prompt {} predicted {predicted} sglang {cached} evicted so far {}\n",
            r["line"], r["session"], r["prompt_tokens"], d["evicted_so_far"]
        ));
    }
    assert_eq!(
        wrong,
        0,
        "pool {}: {wrong} requests differ\n{table}",
        block * blocks
    );
    let evicted = driven.last().unwrap()["evicted_so_far"].as_u64().unwrap();
    assert!(hits >= 8 && partial >= 1 && evicted > 0, "{table}");
    eprintln!("pool {}:\n{table}", block * blocks);
}

#[test]
fn predicted_equals_sglang_radix_cache_on_every_request_pool_1024() {
    exact_at(16, 64);
}

#[test]
fn predicted_equals_sglang_radix_cache_on_every_request_pool_768() {
    exact_at(16, 48);
}
