//! Money in every format of `check`, through the real binary: `templates[].cost` at the
//! selected model's prices (hand-computed from rules/providers/openai.yaml), the date of
//! the data, config `providers:` overriding a figure, and the note that counts are
//! approximate where the provider's tokenizer is not public.

use assert_cmd::Command;

use crate::support;

const FAIL: &str = "fixtures/below-cache-minimum/fail.j2";
const PASS: &str = "fixtures/below-cache-minimum/pass.j2";
const GPT: &str = "openai:model=gpt-4.1";

fn check(args: &[&str], config: Option<&std::path::Path>) -> String {
    let mut command = Command::cargo_bin("prefixlint").unwrap();
    command
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["check", "--no-cache"])
        .args(args);
    match config {
        Some(path) => command.arg("--config").arg(path),
        None => command.arg("--no-config"),
    };
    let output = command.output().unwrap();
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// fail.j2 renders 1,609 and 1,611 o200k_base tokens and shares 8: nothing cached, so
/// 1,000 · 1,610 · $2.00/M = $3.22. Fixed, the shared prefix reaches 8 + 1,584 = 1,592
/// tokens, 1,536 of them cached in 128-token steps: 1,000 · (74 · $2.00 + 1,536 · $0.50)/M
/// + 1,536 · ($2.00 − $0.50)/M = $0.916 + $0.002304 = $0.918304. pass.j2 is that already.
#[test]
fn json_states_the_cost_per_1000_requests_now_and_fixed() {
    let out = check(
        &[
            FAIL,
            PASS,
            "--engine",
            GPT,
            "--tokenizer",
            "o200k_base",
            "--format",
            "json",
        ],
        None,
    );
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    let fail = &json["templates"][0];
    assert_eq!(
        fail["tokens"],
        serde_json::json!({"min": 1609, "max": 1611})
    );
    assert_eq!(
        fail["cost"],
        serde_json::json!({"model": "gpt-4.1", "prices_date": "2026-12-01",
            "per_1000_requests": {"now": 3.22, "fixed": 0.918304}, "currency": "USD"})
    );
    assert_eq!(
        json["templates"][1]["cost"]["per_1000_requests"]["now"],
        0.918304
    );
    assert_eq!(
        json["templates"][1]["cost"]["per_1000_requests"]["fixed"],
        0.918304
    );
    let provider = &json["engine"]["provider"];
    assert_eq!(provider["data_date"], "2026-12-01");
    assert_eq!(provider["token_counts"], "exact");
    assert_eq!(provider["prices"]["input"], 2.0);
    // Without a hosted engine there are no prices, and no cost.
    let local = check(&[FAIL, "--format", "json"], None);
    assert!(!local.contains("\"cost\""), "{local}");
}

#[test]
fn every_format_states_the_cost_and_the_date_of_its_data() {
    let args = |format: &'static str| {
        [
            FAIL,
            "--engine",
            GPT,
            "--tokenizer",
            "o200k_base",
            "--format",
            format,
        ]
    };
    let full = check(&args("full"), None);
    assert!(full.contains("cost / 1k requests"), "{full}");
    assert!(full.contains("$3.22 → $0.918304"), "{full}");
    assert!(
        full.contains("engine caches = openai: gpt-4.1, data of 2026-12-01"),
        "{full}"
    );
    assert!(full.contains("cost = input per 1,000 requests at gpt-4.1 prices of 2026-12-01 (USD)"));
    let concise = check(&args("concise"), None);
    assert!(concise.contains(
        "fixtures/below-cache-minimum/fail.j2:1:1: note: cost: $3.22 per 1,000 requests at gpt-4.1 prices of 2026-12-01, $0.918304 with the findings fixed (saves $2.301696)\n"
    ), "{concise}");
    let github = check(&args("github"), None);
    assert!(github.contains(
        "::notice file=fixtures/below-cache-minimum/fail.j2,line=1,col=1,title=prefixlint%3A cost::fixtures/below-cache-minimum/fail.j2: $3.22 per 1,000 requests"
    ), "{github}");
    assert!(github.contains("prefixlint: engine caches = openai: gpt-4.1, data of 2026-12-01"));
    let sarif: serde_json::Value = serde_json::from_str(&check(&args("sarif"), None)).unwrap();
    let properties = &sarif["runs"][0]["properties"];
    assert_eq!(properties["costs"][0]["path"], FAIL);
    assert_eq!(
        properties["costs"][0]["cost"]["per_1000_requests"]["now"],
        3.22
    );
    assert_eq!(properties["engine"]["provider"]["data_date"], "2026-12-01");
}

/// Config `providers:` overrides a price: $1.00 input, $0.25 cached for gpt-4.1, so fail.j2
/// costs 1,000 · 1,610 · $1.00/M = $1.61 now; the report says the prices are the config's.
#[test]
fn config_providers_override_any_figure() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prefixlint.yaml");
    std::fs::write(
        &config,
        "engine: {name: openai, model: gpt-4.1}\nproviders:\n  openai:\n    models:\n      gpt-4.1:\n        prices: {input: 1.00, cached_input: 0.25}\n",
    )
    .unwrap();
    let json: serde_json::Value = serde_json::from_str(&check(
        &[FAIL, "--tokenizer", "o200k_base", "--format", "json"],
        Some(&config),
    ))
    .unwrap();
    let cost = &json["templates"][0]["cost"];
    assert_eq!(cost["per_1000_requests"]["now"], 1.61);
    assert_eq!(cost["prices_date"], "config");
    assert_eq!(
        json["engine"]["provider"]["overridden"],
        serde_json::json!(["input $1", "cached_input $0.25"])
    );
    std::fs::write(
        &config,
        "engine: openai\nproviders: {opneai: {min_tokens: 1}}\n",
    )
    .unwrap();
    let output = Command::cargo_bin("prefixlint")
        .unwrap()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["check", "--no-cache", FAIL, "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown provider `opneai`"));
}

/// Anthropic's tokenizer is not public: every format says the counts are approximate, and
/// with which tokenizer; where sources disagree, which figure was picked.
#[test]
fn anthropic_counts_are_approximate_in_every_format() {
    let note =
        "token counts are approximate: Anthropic's tokenizer is not public; counted with `default`";
    for format in ["full", "github"] {
        let out = check(
            &[
                FAIL,
                "--engine",
                "anthropic:model=claude-sonnet-4-6",
                "--format",
                format,
            ],
            None,
        );
        assert!(out.contains(note), "{format}: {out}");
        assert!(
            out.contains("min_tokens 2,048 (https://docs.orq.ai/"),
            "{format}: {out}"
        );
    }
    for format in ["json", "sarif"] {
        let out = check(
            &[
                FAIL,
                "--engine",
                "anthropic:model=claude-sonnet-4-6",
                "--format",
                format,
            ],
            None,
        );
        let json: serde_json::Value = serde_json::from_str(&out).unwrap();
        let engine = if format == "json" {
            &json["engine"]
        } else {
            &json["runs"][0]["properties"]["engine"]
        };
        assert_eq!(
            engine["provider"]["token_counts"], "approximate",
            "{format}"
        );
        assert_eq!(engine["provider"]["token_counts_note"], note, "{format}");
    }
}

/// `audit` states money in its summary, from the committed log (14 requests, 7,496 prompt
/// tokens, 3,812 logged as cached): spent (7,496 − 3,812) · $2.00/M + 3,812 · $0.50/M =
/// $0.009274; saved 3,812 · $1.50/M = $0.005718; lost by cause at $1.50/M each, rounded
/// half up (561 · 1.5 = 841.5 → $0.000842).
#[test]
fn audit_states_spent_saved_and_lost_by_cause() {
    let run = |format: &str| {
        let output = Command::cargo_bin("prefixlint")
            .unwrap()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args([
                "audit",
                "fixtures/audit/requests.jsonl",
                "--engine",
                GPT,
                "--format",
                format,
            ])
            .output()
            .unwrap();
        assert!(
            matches!(output.status.code(), Some(0 | 1)),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    };
    let report: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    let summary = &report["summary"];
    assert_eq!(summary["prompt_tokens"], 7496);
    assert_eq!(summary["logged_cached_tokens"], 3812);
    assert_eq!(summary["tokens_lost_by_cause"]["id"], 561);
    assert_eq!(
        summary["cost"],
        serde_json::json!({"model": "gpt-4.1", "prices_date": "2026-12-01", "currency": "USD",
            "spent": 0.009274, "saved": 0.005718,
            "lost_by_cause": {"clock": 0.001224, "id": 0.000842, "key-order": 0.000011, "tool-order": 0.000339}})
    );
    let full = run("full");
    assert!(full.contains(
        "cost at gpt-4.1 prices of 2026-12-01 (USD): spent $0.009274, saved by cache reads $0.005718, lost by cause: clock $0.001224, id $0.000842, key-order $0.000011, tool-order $0.000339\n"
    ), "{full}");
    assert!(
        full.contains("gpt-4.1 uses o200k_base; counted with `default`"),
        "{full}"
    );
    let sarif: serde_json::Value = serde_json::from_str(&run("sarif")).unwrap();
    assert_eq!(sarif["runs"][0]["properties"]["cost"], summary["cost"]);
    // A local engine has no prices: no cost.
    let output = Command::cargo_bin("prefixlint")
        .unwrap()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "audit",
            "fixtures/audit/requests.jsonl",
            "--engine",
            "llama.cpp",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let local: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(local["summary"].get("cost").is_none());
}

/// The SARIF logs that carry money (`check`'s and `audit`'s run properties) still pass
/// Microsoft's SARIF multitool with GitHub's ingestion rules.
#[test]
fn sarif_with_costs_passes_the_sarif_multitool() {
    let dir = tempfile::tempdir().unwrap();
    let check_log = dir.path().join("check.sarif");
    std::fs::write(
        &check_log,
        check(
            &[
                FAIL,
                "--engine",
                GPT,
                "--tokenizer",
                "o200k_base",
                "--format",
                "sarif",
            ],
            None,
        ),
    )
    .unwrap();
    support::validate_sarif(&check_log, dir.path());
    let output = Command::cargo_bin("prefixlint")
        .unwrap()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "audit",
            "fixtures/audit/requests.jsonl",
            "--engine",
            GPT,
            "--format",
            "sarif",
        ])
        .output()
        .unwrap();
    // Its own folder: the multitool writes its log there and never overwrites one.
    let audit_dir = tempfile::tempdir().unwrap();
    let audit_log = audit_dir.path().join("audit.sarif");
    std::fs::write(&audit_log, &output.stdout).unwrap();
    support::validate_sarif(&audit_log, audit_dir.path());
}
