//! `prefixlint simulate` on block-hash traces (Mooncake, Qwen-Bailian, SemiAnalysis; our own
//! synthetic traffic in tests/fixtures/simulate/traces/, made by its make_traces.sh):
//! `--sequential` against an independent reference replay in Python
//! (bench/simulate_reference.py: LRU by block, a finished request's tail evicted before its
//! head) at three capacities each, the infinite-cache bound, the plot and its table, format
//! detection and refusals; and the same-second note on a real vLLM log whose `created`
//! times are whole seconds.

use crate::support::*;
use serde_json::Value;
use std::io::Write;

const TRACES: &str = "tests/fixtures/simulate/traces";

fn simulate(args: &[&str]) -> Run {
    run(prefixlint().args(["simulate", "--no-config"]).args(args))
}

fn simulate_json(args: &[&str]) -> Value {
    let r = simulate(&[args, &["--format", "json"]].concat());
    assert_eq!(r.code, 0, "stderr:\n{}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", r.stdout))
}

fn trace(name: &str) -> String {
    format!("{TRACES}/{name}")
}

/// The reference replay's JSON for `kv_blocks` capacities.
fn reference(file: &str, format: &str, block: usize, kv_blocks: &[usize]) -> Value {
    let out = std::process::Command::new(python())
        .current_dir(repo_root())
        .arg("bench/simulate_reference.py")
        .arg(file)
        .args([
            "--format",
            format,
            "--block-size",
            &block.to_string(),
            "--kv-blocks",
        ])
        .args(kv_blocks.iter().map(|n| n.to_string()))
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn sequential_replays_match_the_reference_at_three_capacities() {
    // (trace, format, engine block size, capacities): engine blocks smaller than the
    // trace's (Mooncake 512 → 16, SemiAnalysis 64 → 16), equal (Bailian 16) and larger
    // (Bailian 16 → 64).
    let cases: [(&str, &str, usize, [usize; 3]); 5] = [
        (
            "mooncake-conversation.jsonl",
            "mooncake",
            16,
            [300, 1200, 6000],
        ),
        ("mooncake-toolagent.jsonl", "mooncake", 16, [250, 900, 4000]),
        (
            "bailian-conversation.jsonl.gz",
            "bailian",
            16,
            [300, 1200, 6000],
        ),
        (
            "bailian-conversation.jsonl.gz",
            "bailian",
            64,
            [80, 300, 1500],
        ),
        (
            "semianalysis-toolagent.jsonl",
            "semianalysis",
            16,
            [100, 250, 4000],
        ),
    ];
    for (name, format, block, capacities) in cases {
        let file = trace(name);
        let sweep = format!("kv-blocks={}", capacities.map(|c| c.to_string()).join(","));
        let ours = simulate_json(&[
            &file,
            "--block-size",
            &block.to_string(),
            "--sequential",
            "--sweep",
            &sweep,
        ]);
        let theirs = reference(&file, format, block, &capacities);
        let rows = ours["rows"].as_array().unwrap();
        let bound = rows[0]["summary"]["infinite_cache_hit_rate"]
            .as_f64()
            .unwrap();
        let reference_bound = theirs["infinite_cache_hit_rate"].as_f64().unwrap();
        assert!(
            (bound - reference_bound).abs() <= 0.005,
            "{name} at {block}: infinite {bound} vs the reference's {reference_bound}"
        );
        let mut rates = Vec::new();
        for (row, expected) in rows.iter().zip(theirs["rows"].as_array().unwrap()) {
            let s = &row["summary"];
            let ours = s["hit_rate"].as_f64().unwrap();
            let theirs = expected["hit_rate"].as_f64().unwrap();
            eprintln!("{name} blocks of {block}, {}: simulate {ours:.4}, reference {theirs:.4}, bound {bound:.4}", row["label"]);
            assert!(
                (ours - theirs).abs() <= 0.01,
                "{name} at {block}, {}: {ours} vs the reference's {theirs}",
                row["label"]
            );
            assert_eq!(
                s["too_large"], expected["too_large"],
                "{name} {}",
                row["label"]
            );
            assert!(ours <= bound + 1e-9, "{name}: above the bound");
            rates.push(ours);
        }
        // The capacities matter: the smallest cache loses hits the largest keeps.
        assert!(
            rates[0] + 0.02 < rates[2],
            "{name} at {block}: {rates:?} do not tell the capacities apart"
        );
        assert!(
            bound > 0.1,
            "{name}: a trace with nothing to share tests nothing"
        );
    }
}

#[test]
fn a_mooncake_trace_is_detected_and_replayed_at_its_times() {
    let file = trace("mooncake-conversation.jsonl");
    let report = simulate_json(&[&file, "--kv-blocks", "2000"]);
    assert_eq!(report["trace"]["format"], "mooncake");
    assert_eq!(report["trace"]["trace_block_size"], 512);
    assert_eq!(report["chat_template"], "none (a block-hash trace)");
    let requests = report["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 400);
    let s = &report["summary"];
    assert_eq!(s["requests"], 400);
    assert_eq!(s["same_second_requests"], 0);
    // At the trace's times requests overlap; one at a time they do not.
    assert!(s["peak_running"].as_u64().unwrap() > 1, "{s}");
    let sequential = simulate_json(&[&file, "--kv-blocks", "2000", "--sequential"]);
    assert_eq!(sequential["summary"]["peak_running"], 1);
    assert_eq!(sequential["sequential"], true);
    // Every request's tokens are accounted for.
    for r in requests {
        let uncached: u64 = r["uncached"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["tokens"].as_u64().unwrap())
            .sum();
        assert_eq!(
            r["predicted_cached_tokens"].as_u64().unwrap() + uncached,
            r["prompt_tokens"].as_u64().unwrap()
        );
    }
    // The full report names the trace and gives the bound beside the hit rate.
    let full = simulate(&[&file, "--kv-blocks", "2000"]);
    assert_eq!(full.code, 0, "{}", full.stderr);
    assert!(
        full.stdout
            .contains("mooncake block-hash trace, 512 tokens a hash"),
        "{}",
        full.stdout
    );
    assert!(
        full.stdout
            .contains("infinite cache (unbounded memory, same order): "),
        "{}",
        full.stdout
    );
}

#[test]
fn trace_block_size_changes_how_many_tokens_a_hash_covers() {
    let file = trace("mooncake-conversation.jsonl");
    let at_512 = simulate_json(&[&file, "--kv-blocks", "100000", "--sequential"]);
    let at_256 = simulate_json(&[
        &file,
        "--kv-blocks",
        "100000",
        "--sequential",
        "--trace-block-size",
        "256",
    ]);
    assert_eq!(at_256["trace"]["trace_block_size"], 256);
    // Half the tokens a hash: the same ids cover half the prompt, so less can hit.
    let bound = |r: &Value| r["summary"]["infinite_cache_hit_rate"].as_f64().unwrap();
    assert!(
        bound(&at_256) < bound(&at_512),
        "{} vs {}",
        bound(&at_256),
        bound(&at_512)
    );
}

#[test]
fn a_sweep_plots_the_curve_and_prints_it_as_a_table() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("curve.svg");
    let r = simulate(&[
        &trace("mooncake-toolagent.jsonl"),
        "--sweep",
        "kv-blocks=250,500,1000,4000",
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"), "{}", &text[..100.min(text.len())]);
    assert!(text.contains("infinite cache ("), "no bound in the plot");
    assert!(text.contains("KV cache per replica (thousand tokens)"));
    assert!(
        r.stdout
            .contains("hit rate against KV cache per replica (thousand tokens):"),
        "{}",
        r.stdout
    );
    for label in ["kv-blocks=250", "kv-blocks=4000"] {
        assert!(
            r.stdout.matches(label).count() >= 2,
            "{label} not in the lines and the table:\n{}",
            r.stdout
        );
    }
    assert!(r.stdout.contains("  infinite cache: "), "{}", r.stdout);
    // With the model's geometry, the axis is memory.
    let r = simulate(&[
        &trace("mooncake-toolagent.jsonl"),
        "--layers",
        "32",
        "--kv-heads",
        "8",
        "--head-dim",
        "128",
        "--weights",
        "16GB",
        "--gpu-memory",
        "80GB",
        "--sweep",
        "kv-blocks=250,1000",
        "--format",
        "json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let report: Value = serde_json::from_str(&r.stdout).unwrap();
    // 16 tokens × 32 layers × 2 × 8 heads × 128 × 2 bytes = 2,097,152 bytes a block.
    assert_eq!(report["rows"][0]["kv_cache_bytes"], 250 * 2_097_152u64);
}

#[test]
fn stdin_needs_the_format_and_mixed_inputs_are_refused() {
    let text = std::fs::read(repo_root().join(trace("mooncake-toolagent.jsonl"))).unwrap();
    let mut child = prefixlint()
        .args([
            "simulate",
            "--no-config",
            "-",
            "--input-format",
            "mooncake",
            "--kv-blocks",
            "1000",
            "--format",
            "json",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&text).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["summary"]["requests"], 400);

    let r = simulate(&[
        &trace("mooncake-toolagent.jsonl"),
        "tests/fixtures/simulate/helpdesk.jsonl",
        "--kv-blocks",
        "100",
    ]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    let err = flat(&r.stderr);
    assert!(err.contains("is a mooncake block-hash trace but tests/fixtures/simulate/helpdesk.jsonl is a request log"), "{err}");

    let r = simulate(&[
        &trace("mooncake-toolagent.jsonl"),
        "--kv-blocks",
        "100",
        "--engine",
        "sglang",
    ]);
    assert_eq!(r.code, 2);
    assert!(
        flat(&r.stderr).contains("replay block-hash traces with --engine vllm"),
        "{}",
        r.stderr
    );
}

#[test]
fn bad_trace_lines_are_skipped_and_a_trace_of_none_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    std::fs::write(
        &path,
        "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 7, \"hash_ids\": [1, 2, 3]}\n\
         {\"timestamp\": 10, \"input_length\": -4, \"output_length\": 7, \"hash_ids\": [1]}\n\
         {\"timestamp\": 20, \"input_length\": 99999999999999999, \"output_length\": 7, \"hash_ids\": [1]}\n\
         {\"timestamp\": 30, \"input_length\": 1100, \"output_length\": 7, \"hash_ids\": [1, 2, 3]}\n",
    )
    .unwrap();
    let r = simulate(&[
        path.to_str().unwrap(),
        "--kv-blocks",
        "100",
        "--block-size",
        "512",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("t.jsonl:2: skipped: not a mooncake trace line"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("t.jsonl:3: skipped: "), "{}", r.stderr);
    assert!(
        r.stdout
            .contains("2 requests, 2,200 prompt tokens, 1,024 from cache"),
        "{}",
        r.stdout
    );

    let bad = dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"timestamp\": 0, \"input_length\": \"x\", \"hash_ids\": [1]}\n",
    )
    .unwrap();
    let r = simulate(&[bad.to_str().unwrap(), "--kv-blocks", "100"]);
    assert_eq!(r.code, 2);
    let err = flat(&r.stderr);
    assert!(
        err.contains("no request could be read") && err.contains("bad.jsonl:1"),
        "{err}"
    );
}

/// tests/fixtures/simulate/vllm-33-blocks.jsonl.gz as a log without `metadata.timestamp`:
/// its times are then vLLM's own `created`, whole seconds, several requests in one.
fn created_times_log(dir: &std::path::Path) -> String {
    use std::io::Read;
    let mut text = String::new();
    flate2::read::GzDecoder::new(
        std::fs::File::open(repo_root().join("tests/fixtures/simulate/vllm-33-blocks.jsonl.gz"))
            .unwrap(),
    )
    .read_to_string(&mut text)
    .unwrap();
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            let mut record: Value = serde_json::from_str(line).unwrap();
            record["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("timestamp");
            record.to_string()
        })
        .collect();
    let path = dir.join("created.jsonl");
    std::fs::write(&path, lines.join("\n")).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn whole_second_times_that_cannot_order_requests_get_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let log = created_times_log(dir.path());
    let args = [log.as_str(), "--block-size", "32", "--kv-blocks", "33"];
    let logged = simulate_json(&args);
    let s = &logged["summary"];
    let same = s["same_second_requests"].as_u64().unwrap();
    assert!(same >= 2, "{s}");
    let full = simulate(&args);
    assert!(
        full.stdout.contains(&format!(
            "note: {same} requests were logged in the same whole second as the request before them"
        )),
        "{}",
        full.stdout
    );
    assert!(full.stdout.contains("--rate N or --sequential"));
    // One after another, the replay matches vLLM on every request; at the logged times
    // (requests of one second sent together) it does not.
    for order in [&["--sequential"][..], &["--rate", "0.5"][..]] {
        let r = simulate_json(&[&args[..], order].concat());
        assert_eq!(
            r["summary"]["requests_predicted_as_logged"], 24,
            "{order:?}"
        );
        let text = simulate(&[&args[..], order].concat()).stdout;
        assert!(!text.contains("note: "), "{order:?}: {text}");
    }
    assert!(
        s["requests_predicted_as_logged"].as_u64().unwrap() < 24,
        "{s}"
    );
}
