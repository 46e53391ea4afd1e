//! `prefixlint measure --replica`: two real llama.cpp test servers behind the real SGLang
//! router (sglang-router from PyPI), once with a policy that scatters sessions
//! (`round_robin`) and once with session affinity (`manual`, sticky by the
//! `X-SMG-Routing-Key` header that `--affinity-key x-smg-routing-key` sends).

use crate::support;

use assert_cmd::Command;
use serde_json::Value;
use std::time::Duration;
use support::fleet::{self, check_accounting, check_scattered, rate};
use support::llama::LlamaServer;
use support::router::Router;

fn fleet_run(policy: &str) -> Value {
    fleet_run_with(policy, &[])
}

fn fleet_run_with(policy: &str, extra: &[&str]) -> Value {
    // Fresh replicas per run: nothing cached from the other policy's run.
    // One slot per session (as a production server has): the replica keeps each session's
    // prefix instead of swapping one slot between them.
    let replicas = [
        LlamaServer::start_with(&["--parallel", "5"]),
        LlamaServer::start_with(&["--parallel", "5"]),
    ];
    let urls: Vec<&str> = replicas.iter().map(|r| r.url.as_str()).collect();
    let router = Router::start(policy, &urls);
    fleet::measure(&router.url, &urls, extra, Duration::from_secs(300))["fleet"].clone()
}

#[test]
fn a_scattering_router_loses_the_cache_and_affinity_keeps_it() {
    let scattered = fleet_run("round_robin");
    check_accounting(&scattered);
    let hit_rate = rate(&scattered, "hit_rate");
    let predicted = rate(&scattered, "hit_rate_single_server");
    check_scattered(&scattered);
    assert!(
        hit_rate < predicted - 0.15,
        "round robin: hit rate {hit_rate} should be well below the prediction {predicted}"
    );
    eprintln!("round robin: hit rate {hit_rate}, single server {predicted}");
    let lost = scattered["scattered"][0]["lost_tokens"].as_u64().unwrap();
    assert!(lost > 100, "{scattered:#}");

    let sticky = fleet_run("manual");
    check_accounting(&sticky);
    let hit_rate = rate(&sticky, "hit_rate");
    let predicted = rate(&sticky, "hit_rate_single_server");
    assert_eq!(sticky["sessions_scattered"], 0, "{sticky:#}");
    eprintln!(
        "sticky: hit rate {hit_rate}, single server {predicted}, perfect affinity {}",
        sticky["hit_rate_perfect_affinity"]
    );
    assert!(
        (hit_rate - predicted).abs() < 0.05,
        "manual (sticky) policy: hit rate {hit_rate} should be within a few points of {predicted}"
    );
    let affinity = rate(&sticky, "hit_rate_perfect_affinity");
    assert!(affinity <= predicted, "{sticky:#}");
}

/// `--api chat`: each session is a conversation on /v1/chat/completions (the render as the
/// first user message, an answer and a question per turn); with affinity the replicas'
/// counters match the responses and the hit rate the chat-template prediction.
#[test]
fn chat_sessions_through_a_sticky_router() {
    let sticky = fleet_run_with("manual", &["--api", "chat"]);
    check_accounting(&sticky);
    assert_eq!(sticky["sessions_scattered"], 0, "{sticky:#}");
    let hit_rate = rate(&sticky, "hit_rate");
    let predicted = rate(&sticky, "hit_rate_single_server");
    eprintln!("chat, sticky: hit rate {hit_rate}, single server {predicted}");
    assert!(predicted > 0.3, "{sticky:#}");
    assert!(
        (hit_rate - predicted).abs() < 0.05,
        "chat, manual (sticky) policy: hit rate {hit_rate} should be within a few points of {predicted}"
    );
}

/// `--api completions` predictions count the BOS a tokenizer adds (Llama 3.1's), as the
/// server does: one session on one replica (slot), each turn extending the last, so the
/// cached tokens the server reports are exactly the predicted shared prefix. Without the
/// BOS every prediction was one token short.
#[test]
fn completions_predictions_count_the_bos_the_tokenizer_adds() {
    let tokenizer = support::tokenizers::real_tokenizer("llama3_1");
    let folder = tokenizer.parent().unwrap().to_str().unwrap().to_owned();
    let replica = LlamaServer::start_with(&[
        "--tokenizer",
        &folder,
        "--pre",
        "llama-bpe",
        "--parallel",
        "1",
    ]);
    let output = Command::cargo_bin("prefixlint")
        .unwrap()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "measure",
            "fixtures/fleet",
            "--no-config",
            "--format",
            "json",
        ])
        // The replica is its own router: every request reaches the one slot.
        .args(["--server", &replica.url, "--replica", &replica.url])
        .args(["--sessions", "1", "--turns", "5", "--api", "completions"])
        .args(["--tokenizer", tokenizer.to_str().unwrap()])
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}\n{stdout}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let requests = report["fleet"]["requests"].as_array().unwrap().clone();
    assert_eq!(requests.len(), 5, "{report:#}");
    let later: Vec<(u64, u64)> = requests
        .iter()
        .filter(|r| r["turn"].as_u64() > Some(0))
        .map(|r| {
            (
                r["cached_tokens"]
                    .as_u64()
                    .expect("llama.cpp reports cached tokens"),
                r["predicted_single_server"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(later.iter().all(|&(measured, _)| measured > 0), "{later:?}");
    assert!(
        later
            .iter()
            .all(|&(measured, predicted)| measured == predicted),
        "measured vs predicted cached tokens per turn: {later:?}"
    );
}

fn refused(args: &[&str]) -> String {
    let output = Command::cargo_bin("prefixlint")
        .unwrap()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["measure", "fixtures/fleet", "--no-config"])
        .args(args)
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn bad_fleet_options_are_clear_errors() {
    // Port 9 (discard) on loopback: nothing is sent before the options are checked.
    let router = ["--server", "http://127.0.0.1:9"];
    let stderr = refused(
        &[
            &router[..],
            &[
                "--replica",
                "http://127.0.0.1:9",
                "--affinity-key",
                "session id",
            ],
        ]
        .concat(),
    );
    assert!(stderr.contains("--affinity-key `session id`"), "{stderr}");
    let stderr = refused(
        &[
            &router[..],
            &[
                "--replica",
                "http://127.0.0.1:9",
                "--replica",
                "http://127.0.0.1:9/",
            ],
        ]
        .concat(),
    );
    assert!(stderr.contains("given twice"), "{stderr}");
    // --api chat needs a chat template it can read, checked before anything is sent.
    let stderr = refused(
        &[
            &router[..],
            &[
                "--replica",
                "http://127.0.0.1:9",
                "--api",
                "chat",
                "--chat-template",
                "fixtures/fleet/no-such-template.jinja",
            ],
        ]
        .concat(),
    );
    assert!(stderr.contains("no-such-template.jinja"), "{stderr}");
    let stderr = refused(
        &[
            &router[..],
            &[
                "--replica",
                "http://127.0.0.1:9",
                "--sessions",
                "1000",
                "--turns",
                "2",
            ],
        ]
        .concat(),
    );
    assert!(stderr.contains("at most 1000"), "{stderr}");
    let stderr = refused(&[&router[..], &["--sessions", "3"]].concat());
    assert!(stderr.contains("--replica"), "{stderr}");
    let stderr = refused(&[&router[..], &["--replica", "ftp://host"]].concat());
    assert!(stderr.contains("ftp://host"), "{stderr}");
}
