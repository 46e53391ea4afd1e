//! `--engine` and config `engine:` through the real binary: `cached_tokens_expected` in the
//! JSON report follows each profile's formula, and bad engines are usage errors (exit 2).

use assert_cmd::Command;
use prefixlint::cache_profile::{CacheProfile, CacheProfileConfig};

const FIXTURE: &str = "fixtures/mid-token-boundary/fail.j2";

fn check(args: &[&str]) -> std::process::Output {
    Command::cargo_bin("prefixlint")
        .expect("binary built")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["check", "--no-config", "--format", "json"])
        .args(args)
        .output()
        .expect("runs")
}

fn report(args: &[&str]) -> serde_json::Value {
    let output = check(args);
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON report")
}

#[test]
fn cached_tokens_follow_each_profile() {
    for spec in [
        "tokens",
        "vllm",
        "vllm:block_size=32",
        "sglang:page_size=8",
        "llama.cpp",
        "tgi:backend=paged",
        "openai",
        "anthropic",
        "gemini",
        "deepseek",
    ] {
        let json = report(&[FIXTURE, "--engine", spec]);
        let template = &json["templates"][0];
        let shared = template["shared_prefix_tokens"].as_u64().unwrap() as usize;
        let shortest = template["tokens"]["min"].as_u64().unwrap() as usize;
        let engine =
            CacheProfile::from_config(&CacheProfileConfig::parse_cli(spec).unwrap(), "test")
                .unwrap();
        assert_eq!(
            template["cached_tokens_expected"].as_u64().unwrap() as usize,
            engine.cached_tokens(shared, shortest),
            "{spec}"
        );
        assert_eq!(json["engine"]["name"], engine.name, "{spec}");
    }
}

#[test]
fn default_engine_is_token_level() {
    let json = report(&[FIXTURE]);
    let template = &json["templates"][0];
    assert_eq!(json["engine"]["name"], "tokens");
    assert_eq!(
        template["cached_tokens_expected"],
        template["shared_prefix_tokens"]
    );
}

#[test]
fn vllm_report_snapshot() {
    let json = report(&[FIXTURE, "--engine", "vllm"]);
    insta::assert_json_snapshot!("vllm_report", json);
}

#[test]
fn config_engine_mapping_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prefixlint.yaml");
    std::fs::write(&config, "engine:\n  name: sglang\n  page_size: 4\n").unwrap();
    let output = Command::cargo_bin("prefixlint")
        .unwrap()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["check", FIXTURE, "--format", "json", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["engine"]["name"], "sglang");
    assert_eq!(json["engine"]["unit_tokens"], 4);
    let cached = json["templates"][0]["cached_tokens_expected"]
        .as_u64()
        .unwrap();
    assert_eq!(cached % 4, 0);
}

#[test]
fn unknown_engines_and_options_exit_2() {
    for spec in ["vlm", "vllm:page_size=4", "anthropic:model=claude-unknown"] {
        let output = check(&[FIXTURE, "--engine", spec]);
        assert_eq!(output.status.code(), Some(2), "{spec}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("engine"),
            "{spec}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prefixlint.yaml");
    std::fs::write(&config, "engine: {name: vllm, blok_size: 4}\n").unwrap();
    let output = Command::cargo_bin("prefixlint")
        .unwrap()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["check", FIXTURE, "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}
