//! The fleet harness that `tests/heavy/fleet.rs` (llama.cpp replicas) and `tests/heavy/vllm_fleet.rs`
//! (vLLM replicas) share: `measure --replica` on `fixtures/fleet` through a real router, and
//! the accounting every fleet report must satisfy.

use serde_json::Value;
use std::time::Duration;

/// Sessions per run: odd, so round robin alternates each session's turns.
pub const SESSIONS: u64 = 5;
/// Turns per session.
pub const TURNS: u64 = 4;

/// `prefixlint measure fixtures/fleet --format json` through the router at `router` to
/// `replicas`, with sticky sessions named by `X-SMG-Routing-Key` (what the SGLang router's
/// `manual` policy reads), plus `extra` flags; the whole report. A failed run panics with
/// its output.
pub fn measure(router: &str, replicas: &[&str], extra: &[&str], timeout: Duration) -> Value {
    let mut command = assert_cmd::Command::cargo_bin("prefixlint").unwrap();
    command
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "measure",
            "fixtures/fleet",
            "--no-config",
            "--format",
            "json",
        ])
        .args(["--server", router]);
    for replica in replicas {
        command.args(["--replica", replica]);
    }
    let output = command
        .args(["--sessions", &SESSIONS.to_string()])
        .args(["--turns", &TURNS.to_string()])
        .args(["--affinity-key", "x-smg-routing-key"])
        .args(extra)
        .timeout(timeout)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}\n{stdout}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}\n{stderr}"))
}

/// A hit rate of the fleet report.
pub fn rate(fleet: &Value, key: &str) -> f64 {
    fleet[key]
        .as_f64()
        .unwrap_or_else(|| panic!("no {key}: {fleet:#}"))
}

/// What every fleet run on two replicas must show: every request attributed by the replicas'
/// real counters, the counters adding up to the requests and to the cached tokens the
/// responses reported, and the contract's fields.
pub fn check_accounting(fleet: &Value) {
    assert_eq!(fleet["sessions"], SESSIONS);
    let requests = fleet["requests"].as_array().unwrap();
    assert_eq!(requests.len() as u64, SESSIONS * TURNS);
    for r in requests {
        assert_eq!(r["attributed_by"], "metrics", "{r}");
    }
    let replicas = fleet["replicas"].as_array().unwrap();
    assert_eq!(replicas.len(), 2);
    let served: u64 = replicas
        .iter()
        .map(|r| r["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(served, SESSIONS * TURNS, "{fleet:#}");
    let cached_by_metrics: u64 = replicas
        .iter()
        .map(|r| r["cached_tokens"].as_u64().unwrap())
        .sum();
    let cached_by_responses: u64 = requests
        .iter()
        .map(|r| r["cached_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(cached_by_metrics, cached_by_responses, "{fleet:#}");
    for r in replicas {
        for field in ["url", "requests", "prompt_tokens", "cached_tokens"] {
            assert!(!r[field].is_null(), "{field} in {r}");
        }
    }
}

/// The first advice of a scattering router's run names every session moved.
pub fn check_scattered(scattered: &Value) {
    assert_eq!(scattered["sessions_scattered"], SESSIONS, "{scattered:#}");
    assert!(
        scattered["advice"][0]
            .as_str()
            .unwrap()
            .contains(&format!("{SESSIONS} of {SESSIONS} sessions moved")),
        "{scattered:#}"
    );
}
