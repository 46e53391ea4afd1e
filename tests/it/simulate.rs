//! `prefixlint simulate` through the real binary: the JSON contract, reasons that add up,
//! routers, TTL, sweeps over memory, replicas and KV dtype on the README's worked example, the
//! llama.cpp slots, and the refusals of bad flags. (Exactness against a real vLLM is
//! tests/heavy/simulate_vllm.rs.)

use crate::support;

use serde_json::Value;
use support::*;

const HELPDESK: &str = "tests/fixtures/simulate/helpdesk.jsonl";
const SUPPORT_DESK: &str = "tests/fixtures/simulate/support-desk.jsonl.gz";
/// An 8B model (Llama 3.1 8B's attention shape) with 16 GB of weights and 4 GB overhead.
const EIGHT_B: [&str; 10] = [
    "--layers",
    "32",
    "--kv-heads",
    "8",
    "--head-dim",
    "128",
    "--weights",
    "16GB",
    "--overhead",
    "4GB",
];

fn simulate(args: &[&str]) -> Run {
    run(prefixlint()
        .current_dir(repo_root())
        .args(["simulate", "--no-config"])
        .args(args))
}

fn simulate_json(args: &[&str]) -> Value {
    let r = simulate(&[args, &["--format", "json"]].concat());
    assert_eq!(r.code, 0, "stderr:\n{}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", r.stdout))
}

fn refused(args: &[&str], needles: &[&str]) {
    let r = simulate(args);
    assert_eq!(r.code, 2, "stdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
    for needle in needles {
        assert!(r.stderr.contains(needle), "no {needle:?} in:\n{}", r.stderr);
    }
}

/// Every request: predicted + uncached = prompt tokens, reasons from the contract's four.
fn assert_accounted(report: &Value) -> Vec<&Value> {
    let requests: Vec<&Value> = report["requests"].as_array().unwrap().iter().collect();
    for r in &requests {
        let uncached: u64 = r["uncached"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| {
                let reason = u["reason"].as_str().unwrap();
                assert!(
                    ["never-shared", "evicted", "routed", "expired"].contains(&reason),
                    "{u}"
                );
                u["tokens"].as_u64().unwrap()
            })
            .sum();
        assert_eq!(
            r["predicted_cached_tokens"].as_u64().unwrap() + uncached,
            r["prompt_tokens"].as_u64().unwrap(),
            "{r}"
        );
    }
    let s = &report["summary"];
    assert_eq!(s["requests"], requests.len());
    let sum = |k: &str| requests.iter().map(|r| r[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!(s["prompt_tokens"], sum("prompt_tokens"));
    assert_eq!(s["predicted_cached_tokens"], sum("predicted_cached_tokens"));
    requests
}

#[test]
fn json_contract_and_reasons_that_add_up() {
    let report = simulate_json(&[HELPDESK, "--kv-blocks", "1000"]);
    for key in [
        "version",
        "engine",
        "block_size",
        "kv_blocks",
        "requests",
        "summary",
    ] {
        assert!(report.get(key).is_some(), "no {key}: {report}");
    }
    for key in [
        "requests",
        "prompt_tokens",
        "predicted_cached_tokens",
        "hit_rate",
        "evicted_blocks",
        "peak_running",
    ] {
        assert!(report["summary"].get(key).is_some(), "no summary.{key}");
    }
    let requests = assert_accounted(&report);
    assert_eq!(requests.len(), 7);
    for r in &requests {
        for key in [
            "line",
            "session",
            "prompt_tokens",
            "predicted_cached_tokens",
            "uncached",
        ] {
            assert!(r.get(key).is_some(), "no {key}: {r}");
        }
    }
    // bob shares alice's system prompt: whole blocks of it come from the cache.
    assert!(requests[1]["predicted_cached_tokens"].as_u64().unwrap() >= 64);
    // A big cache evicts nothing.
    assert_eq!(report["summary"]["evicted_blocks"], 0);
}

#[test]
fn a_small_cache_evicts_and_says_so() {
    let report = simulate_json(&[HELPDESK, "--kv-blocks", "20"]);
    let requests = assert_accounted(&report);
    assert!(report["summary"]["evicted_blocks"].as_u64().unwrap() > 0);
    assert!(
        requests
            .iter()
            .any(|r| r["uncached"].to_string().contains("\"evicted\"")),
        "{report:#}"
    );
}

/// SGLang's tree and llama.cpp's slots say `evicted` too: a prefix the cache held, and lost
/// to another request, is told apart from one never seen, with the pressure after it.
#[test]
fn the_tree_and_the_slots_say_evicted_and_count_evicted_blocks() {
    // A pool of 320 tokens; one slot (carla's request takes it before alice comes back).
    for (engine, flag, small) in [
        ("sglang", "--kv-blocks", "20"),
        ("llama.cpp", "--slots", "1"),
    ] {
        let report = simulate_json(&[HELPDESK, "--engine", engine, flag, small]);
        let requests = assert_accounted(&report);
        let evicted: Vec<&Value> = requests
            .iter()
            .flat_map(|r| r["uncached"].as_array().unwrap())
            .filter(|u| u["reason"] == "evicted")
            .collect();
        assert!(!evicted.is_empty(), "{engine}: {report:#}");
        assert!(
            evicted.iter().all(|u| u["evicted_since_blocks"].is_u64()),
            "{engine}: {report:#}"
        );
        let summary = &report["summary"];
        assert!(summary["evicted_blocks"].as_u64().unwrap() > 0, "{engine}");
        assert_eq!(
            summary["uncached_tokens_by_reason"]["evicted"],
            evicted
                .iter()
                .map(|u| u["tokens"].as_u64().unwrap())
                .sum::<u64>()
        );
        // Alice comes back (line 4) after her first prompt's slot went to carla.
        if engine == "llama.cpp" {
            assert_eq!(
                requests[3]["uncached"][0]["reason"], "evicted",
                "{report:#}"
            );
        }
    }
    // A tree with room for all of it evicts nothing: every uncached token never shared.
    let roomy = simulate_json(&[HELPDESK, "--engine", "sglang", "--kv-blocks", "1000"]);
    assert_eq!(roomy["summary"]["evicted_blocks"], 0, "{roomy:#}");
    assert!(
        !roomy["requests"].to_string().contains("\"evicted\""),
        "{roomy:#}"
    );
}

#[test]
fn ttl_expires_what_waited_too_long() {
    // bob comes back after 295 s; a 60 s TTL has dropped his prefix by then.
    let report = simulate_json(&[HELPDESK, "--kv-blocks", "1000", "--ttl", "60"]);
    let requests = assert_accounted(&report);
    assert!(
        requests[4]["uncached"].to_string().contains("\"expired\""),
        "{}",
        requests[4]
    );
}

#[test]
fn round_robin_loses_to_routing_and_affinity_keeps_it() {
    let rr = simulate_json(&[HELPDESK, "--kv-blocks", "1000", "--replicas", "2"]);
    assert_accounted(&rr);
    assert!(rr["summary"].to_string().contains("routed"), "{rr:#}");
    let affinity = simulate_json(&[
        HELPDESK,
        "--kv-blocks",
        "1000",
        "--replicas",
        "2",
        "--router",
        "affinity",
    ]);
    let prefix = simulate_json(&[
        HELPDESK,
        "--kv-blocks",
        "1000",
        "--replicas",
        "2",
        "--router",
        "prefix",
    ]);
    let cached = |r: &Value| r["summary"]["predicted_cached_tokens"].as_u64().unwrap();
    assert!(cached(&affinity) > cached(&rr), "{affinity:#}");
    assert!(cached(&prefix) >= cached(&affinity), "{prefix:#}");
}

#[test]
fn llama_cpp_slots_reuse_the_common_prefix() {
    let one = simulate_json(&[HELPDESK, "--engine", "llama.cpp"]);
    let requests = assert_accounted(&one);
    assert_eq!(one["engine"], "llama.cpp");
    // One slot: bob reuses alice's system prompt, but carla's request takes the slot before
    // alice comes back.
    assert!(requests[1]["predicted_cached_tokens"].as_u64().unwrap() > 64);
    let three = simulate_json(&[HELPDESK, "--engine", "llama.cpp", "--slots", "3"]);
    let cached = |r: &Value| r["summary"]["predicted_cached_tokens"].as_u64().unwrap();
    assert!(cached(&three) > cached(&one), "{three:#}");
    assert!(requests
        .iter()
        .all(|r| r["predicted_cached_tokens"].as_u64().unwrap()
            < r["prompt_tokens"].as_u64().unwrap()));
}

#[test]
fn worked_example_sweeps_memory_dtype_and_replicas() {
    let memory = simulate(
        &[
            &[SUPPORT_DESK][..],
            &EIGHT_B,
            &["--gpu-memory", "80GB", "--sweep", "gpu-memory=40GB,80GB"],
        ]
        .concat(),
    );
    assert_eq!(memory.code, 0, "{}", memory.stderr);
    insta::assert_snapshot!("worked_example_memory", memory.stdout);
    let dtype = simulate_json(
        &[
            &[SUPPORT_DESK][..],
            &EIGHT_B,
            &["--gpu-memory", "40GB", "--sweep", "kv-dtype=fp16,fp8"],
        ]
        .concat(),
    );
    let rows = dtype["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    // Half the bytes per value: twice the blocks (give or take the floor).
    let blocks = |row: &Value| row["kv_blocks"].as_u64().unwrap();
    assert!(
        (blocks(&rows[1]) as i64 - 2 * blocks(&rows[0]) as i64).abs() <= 1,
        "{dtype:#}"
    );
    let rate = |row: &Value| row["summary"]["hit_rate"].as_f64().unwrap();
    assert!(rate(&rows[1]) > rate(&rows[0]), "{dtype:#}");
    let replicas = simulate_json(&[
        SUPPORT_DESK,
        "--kv-blocks",
        "4000",
        "--router",
        "affinity",
        "--sweep",
        "replicas=1,2,4",
    ]);
    let rows = replicas["rows"].as_array().unwrap();
    assert_eq!(
        rows.iter()
            .map(|r| r["replicas"].clone())
            .collect::<Vec<_>>(),
        [1, 2, 4]
    );
}

#[test]
fn bad_flags_are_clear_errors() {
    refused(
        &[HELPDESK, "--kv-blocks", "10", "--rate", "-2"],
        &["--rate -2", "positive"],
    );
    refused(
        &[HELPDESK, "--kv-blocks", "0"],
        &["--kv-blocks 0", "null block"],
    );
    refused(
        &[
            &[HELPDESK][..],
            &["--layers", "32", "--kv-heads", "8", "--head-dim", "128"],
            &[
                "--gpu-memory",
                "16GB",
                "--weights",
                "16GB",
                "--overhead",
                "4GB",
            ],
        ]
        .concat(),
        &["exceed --gpu-memory", "nothing is left for the KV cache"],
    );
    refused(
        &[&[HELPDESK][..], &EIGHT_B, &["--gpu-memory", "20000000002B"]].concat(),
        &["blocks of 16 tokens", "does not fit"],
    );
    refused(&[HELPDESK], &["size of the KV cache", "--kv-blocks"]);
    refused(
        &[HELPDESK, "--kv-blocks", "10", "--sweep", "gpu-memory=40GB"],
        &["--sweep gpu-memory needs the model's geometry"],
    );
    refused(
        &[HELPDESK, "--kv-blocks", "10", "--sweep", "colour=red"],
        &["--sweep colour"],
    );
    refused(
        &[HELPDESK, "--engine", "sglang"],
        &["size of the KV pool", "--kv-blocks"],
    );
    refused(
        &[
            HELPDESK,
            "--kv-blocks",
            "10",
            "--engine",
            "sglang",
            "--ttl",
            "60",
        ],
        &["no TTL"],
    );
    refused(
        &[HELPDESK, "--kv-blocks", "10", "--replicas", "0"],
        &["--replicas 0"],
    );
    refused(
        &[HELPDESK, "--kv-blocks", "10", "--ttl", "-1"],
        &["--ttl -1"],
    );
}

#[test]
fn a_log_without_times_needs_a_rate() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("bodies.jsonl");
    std::fs::write(
        &log,
        "{\"messages\": [{\"role\": \"user\", \"content\": \"hello\"}]}\n".repeat(3),
    )
    .unwrap();
    let log = log.to_str().unwrap();
    refused(
        &[log, "--kv-blocks", "10"],
        &[":1: the request has no timestamp", "--rate"],
    );
    let report = simulate_json(&[log, "--kv-blocks", "10", "--rate", "2"]);
    assert_eq!(report["summary"]["requests"], 3);
}

/// `--kv-blocks` past 32-bit block ids is refused (it panicked); a billion blocks cost what
/// the requests use (the pool was allocated whole: 40 GB) and replay as a roomy thousand do.
#[test]
fn kv_blocks_past_32_bits_are_refused_and_a_huge_pool_grows_with_use() {
    refused(
        &[HELPDESK, "--kv-blocks", "4294967296"],
        &["--kv-blocks 4294967296", "at most 4294967294"],
    );
    let huge = simulate_json(&[HELPDESK, "--kv-blocks", "1000000000"]);
    let roomy = simulate_json(&[HELPDESK, "--kv-blocks", "1000"]);
    assert_eq!(huge["requests"], roomy["requests"]);
    assert_eq!(huge["kv_blocks"], 1_000_000_000);
}
