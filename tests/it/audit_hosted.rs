//! `prefixlint audit` on what the hosted APIs report: Anthropic (usage, TTL tiers, cache
//! diagnostics), Bedrock Converse, DeepSeek, Gemini, OpenTelemetry GenAI and OpenInference
//! spans. No hosted API is reachable here: the logs in tests/fixtures/audit-hosted/ are the
//! APIs' documented responses, written by their own client libraries
//! (tests/audit_support/hosted_logs.py), and the first test checks that they still write them.

use assert_cmd::Command;
use serde_json::Value;
use std::path::PathBuf;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn python() -> PathBuf {
    std::env::var_os("PREFIXLINT_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".venv/bin/python"))
}

fn fixture(name: &str) -> String {
    format!("tests/fixtures/audit-hosted/{name}.jsonl")
}

fn audit(log: &str, engine: &str) -> Value {
    let out = Command::cargo_bin("prefixlint")
        .unwrap()
        .current_dir(repo())
        .args([
            "audit",
            &fixture(log),
            "--engine",
            engine,
            "--format",
            "json",
        ])
        .args(["--fail-on", "never"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "audit {log}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON report")
}

fn column(report: &Value, key: &str) -> Vec<Value> {
    report["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[key].clone())
        .collect()
}

fn numbers(values: &[Option<u64>]) -> Vec<Value> {
    values
        .iter()
        .map(|v| v.map_or(Value::Null, Value::from))
        .collect()
}

/// The committed logs are what the pinned client libraries write (`scripts/requirements/
/// hosted.txt`): regenerated here and compared byte for byte.
#[test]
fn the_fixtures_are_what_the_client_libraries_write() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(python())
        .arg(repo().join("tests/audit_support/hosted_logs.py"))
        .arg("--out")
        .arg(dir.path())
        .output()
        .expect("hosted_logs.py runs");
    assert!(
        out.status.success(),
        "hosted_logs.py failed (is the test venv installed? scripts/setup.d/10-python.sh): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for log in ["anthropic", "bedrock", "deepseek", "gemini", "otel"] {
        let written = std::fs::read_to_string(dir.path().join(format!("{log}.jsonl"))).unwrap();
        let committed = std::fs::read_to_string(repo().join(fixture(log))).unwrap();
        assert!(
            written == committed,
            "{log}.jsonl differs from what the client library writes now: regenerate it"
        );
    }
}

/// Anthropic counts cached tokens outside `input_tokens`; each write is split by TTL tier; the
/// server's miss reasons are set against prefixlint's findings; a request sent before the
/// previous response was complete is "written, then missed".
#[test]
fn anthropic_usage_tiers_diagnostics_and_a_write_not_yet_visible() {
    let report = audit("anthropic", "anthropic");
    // input_tokens + cache_read_input_tokens + cache_creation_input_tokens.
    assert_eq!(
        column(&report, "logged_prompt_tokens"),
        numbers(&[
            Some(14 + 1536),
            Some(12 + 1536 + 40),
            Some(11 + 1612),
            Some(12 + 1660),
            Some(10 + 1702),
            Some(10 + 1581 + 121),
            Some(14 + 1480),
            Some(12 + 1480 + 40),
            Some(14 + 1480),
            Some(12 + 1520),
        ])
    );
    assert_eq!(
        column(&report, "logged_cached_tokens"),
        numbers(&[
            Some(0),
            Some(1536),
            Some(0),
            Some(0),
            Some(0),
            Some(1581),
            Some(0),
            Some(1480),
            Some(0),
            Some(0)
        ])
    );
    let reasons: Vec<Value> = column(&report, "server_miss_reason");
    assert_eq!(
        reasons,
        [
            Value::Null,
            Value::Null,
            "system_changed".into(),
            "tools_changed".into(),
            Value::Null,
            "messages_changed".into(),
            Value::Null,
            "previous_message_not_found".into(),
            Value::Null,
            "model_changed".into(),
        ]
    );
    let s = &report["summary"];
    let writes = &s["cache_writes"];
    assert_eq!(writes["requests"], 10);
    assert_eq!(writes["read_tokens"], 1536 + 1581 + 1480);
    assert_eq!(
        writes["write_tokens"],
        1536 + 40 + 1612 + 1660 + 1702 + 121 + 1480 + 40 + 1480 + 1520
    );
    let per_write = writes["reads_per_write"].as_f64().unwrap();
    assert!((per_write - 4597.0 / 11191.0).abs() < 1e-9, "{per_write}");
    assert_eq!(writes["write_tokens_by_ttl"]["1h"], 1480);
    assert_eq!(writes["write_tokens_by_ttl"]["5m"], 11191 - 1480);
    // Every write is split by tier: nothing unspecified.
    assert_eq!(writes["write_tokens_by_ttl"].as_object().unwrap().len(), 2);

    // Line 5 was sent at 10:02:01.5, before line 4's response was complete (10:02:02.5).
    let late = &s["written_then_missed"];
    assert_eq!(
        (late["requests"].as_u64(), late["window_seconds"].as_f64()),
        (Some(1), Some(2.0))
    );
    let missed: Vec<(u64, &str)> = s["missed_hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["line"].as_u64().unwrap(), m["reason"].as_str().unwrap()))
        .collect();
    // Line 4 changed only the tools: the API caches them before the system prompt, so
    // nothing was shareable, and no hit was missed.
    assert_eq!(
        missed,
        [(5, "written-then-missed"), (10, "model-switched")],
        "{missed:?}"
    );
    assert!(
        report["requests"][3]["predicted_cached_tokens"]
            .as_u64()
            .unwrap()
            < 1024
    );
    assert_eq!(
        report["chat_template"],
        "none: the API's cache order (tools, system, messages)"
    );
    assert_eq!(
        s["tokens_lost_by_cause"]["written-then-missed"],
        late["tokens_lost"]
    );
    // The 1 h entry is still there ten minutes later (line 8), and prefixlint predicts it.
    assert!(
        report["requests"][7]["predicted_cached_tokens"]
            .as_u64()
            .unwrap()
            > 1024
    );
    // Another model shares nothing (line 10).
    assert_eq!(report["requests"][9]["predicted_cached_tokens"], 0);

    let agreement = &s["miss_reason_agreement"];
    assert_eq!(
        (
            agreement["requests"].as_u64(),
            agreement["comparable"].as_u64(),
            agreement["agreeing"].as_u64()
        ),
        (Some(5), Some(4), Some(4))
    );
    let rows: Vec<(String, String, Value, Value, u64)> = agreement["table"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["server_reason"].as_str().unwrap().to_owned(),
                r["prefixlint_cause"].as_str().unwrap().to_owned(),
                r["prefixlint_part"].clone(),
                r["agrees"].clone(),
                r["cache_missed_input_tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    let row = |reason: &str, cause: &str, part: Value, agrees: Value, missed: u64| {
        (reason.to_owned(), cause.to_owned(), part, agrees, missed)
    };
    assert_eq!(
        rows,
        [
            row(
                "messages_changed",
                "content",
                "messages".into(),
                true.into(),
                121
            ),
            row(
                "model_changed",
                "model-switched",
                "model".into(),
                true.into(),
                1480
            ),
            row(
                "previous_message_not_found",
                "none",
                Value::Null,
                Value::Null,
                0
            ),
            row(
                "system_changed",
                "clock",
                "system".into(),
                true.into(),
                1576
            ),
            row(
                "tools_changed",
                "tool-order",
                "tools".into(),
                true.into(),
                1623
            ),
        ]
    );
}

/// Where both the tools and the system prompt change, the break is in the tools, as the API
/// caches them first (and as its diagnostics would say: `tools_changed`); a request that adds a
/// message extends the earlier prompt. A chat template named with `--chat-template` is taken
/// at its word: Qwen2.5's writes the system text before the tools.
#[test]
fn anthropic_prompts_follow_the_api_cache_order() {
    let policy = "Follow the refund policy: check the order number first. ".repeat(40);
    let record = |system: &str, tools: &[&str], turns: &[&str]| {
        let messages: Vec<Value> = turns
            .iter()
            .enumerate()
            .map(|(i, t)| {
                serde_json::json!({"role": if i % 2 == 0 { "user" } else { "assistant" },
                    "content": [{"type": "text", "text": t}]})
            })
            .collect();
        let tools: Vec<Value> = tools
            .iter()
            .map(|name| {
                serde_json::json!({"name": name, "description": format!("The {name} tool."),
                    "input_schema": {"type": "object", "properties": {"order": {"type": "string"}}}})
            })
            .collect();
        serde_json::json!({"metadata": {"session_id": "s"}, "request": {
            "model": "claude-sonnet-4-5", "max_tokens": 64,
            "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
            "tools": tools, "messages": messages}})
        .to_string()
    };
    let log = [
        record(
            &format!("Desk A. {policy}"),
            &["lookup"],
            &["Where is 1042?"],
        ),
        record(
            &format!("Desk A. {policy}"),
            &["lookup"],
            &["Where is 1042?", "On its way.", "Thanks."],
        ),
        record(
            &format!("Desk B. {policy}"),
            &["refund"],
            &["Where is 1042?"],
        ),
    ]
    .join("\n");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    std::fs::write(&path, log + "\n").unwrap();
    let run = |extra: &[&str]| -> Value {
        let out = Command::cargo_bin("prefixlint")
            .unwrap()
            .current_dir(repo())
            .arg("audit")
            .arg(&path)
            .args(["--engine", "anthropic", "--format", "json"])
            .args(["--fail-on", "never"])
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let report = run(&[]);
    assert!(report["requests"][1]["break"].is_null(), "{report}");
    assert_eq!(report["requests"][2]["break"]["path"], "tools", "{report}");
    assert_eq!(report["requests"][2]["predicted_cached_tokens"], 0);
    let qwen3 = run(&[
        "--chat-template",
        "fixtures/chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja",
    ]);
    assert_eq!(qwen3["requests"][2]["break"]["path"], "system", "{qwen3}");
}

/// Bedrock counts reads and writes outside `inputTokens` (as Anthropic), splits writes by TTL
/// in `cacheDetails`, and gives its latency, from which the response's completion is known.
#[test]
fn bedrock_converse_usage_and_latency() {
    let report = audit("bedrock", "anthropic");
    assert_eq!(
        column(&report, "logged_prompt_tokens"),
        numbers(&[Some(9 + 1545), Some(8 + 1545 + 31), Some(7 + 1590)])
    );
    assert_eq!(
        column(&report, "logged_cache_write_tokens"),
        numbers(&[Some(1545), Some(31), Some(1590)])
    );
    let s = &report["summary"];
    assert_eq!(
        s["cache_writes"]["write_tokens_by_ttl"]["5m"],
        1545 + 31 + 1590
    );
    // Line 3 went out 1.2 s after line 2 was sent, whose response took 1.7 s.
    assert_eq!(s["written_then_missed"]["requests"], 1);
    assert_eq!(s["missed_hits"][0]["line"], 3);
    assert_eq!(s["missed_hits"][0]["reason"], "written-then-missed");
    // The Converse body is read: system blocks, tools in `toolConfig` (the cache points left
    // out), `{"text"}` content blocks.
    assert!(report["requests"][0]["prompt_tokens"].as_u64().unwrap() > 1400);
    assert!(report["requests"][2]["break"].is_null());
}

/// DeepSeek and Gemini count the cached tokens inside the prompt count; Gemini leaves a zero
/// count out.
#[test]
fn deepseek_and_gemini_count_cached_tokens_inside_the_prompt() {
    let deepseek = audit("deepseek", "deepseek");
    assert_eq!(
        column(&deepseek, "logged_prompt_tokens"),
        numbers(&[Some(1420), Some(1438)])
    );
    assert_eq!(
        column(&deepseek, "logged_cached_tokens"),
        numbers(&[Some(0), Some(1408)])
    );
    assert_eq!(deepseek["summary"]["cache_writes"]["requests"], 0);
    let gemini = audit("gemini", "gemini");
    assert_eq!(
        column(&gemini, "logged_prompt_tokens"),
        numbers(&[Some(1436), Some(1460)])
    );
    assert_eq!(
        column(&gemini, "logged_cached_tokens"),
        numbers(&[Some(0), Some(1024)])
    );
    assert_eq!(gemini["summary"]["requests_with_logged_cache"], 2);
    // `systemInstruction`, `contents` and `functionDeclarations` are read: the second request
    // extends the first.
    assert!(gemini["requests"][1]["break"].is_null());
    assert!(gemini["requests"][0]["prompt_tokens"].as_u64().unwrap() > 1400);
}

/// The GenAI conventions' current and deprecated cached-token attributes and the write
/// attribute; OpenInference's flattened messages and `prompt_details.cache_read`.
#[test]
fn otel_genai_current_deprecated_and_openinference_spans() {
    let report = audit("otel", "openai");
    assert_eq!(
        column(&report, "session"),
        ["genai", "genai", "openinference", "openinference"]
            .map(Value::from)
            .to_vec()
    );
    assert_eq!(
        column(&report, "logged_cached_tokens"),
        numbers(&[Some(0), Some(0), Some(0), Some(1408)])
    );
    assert_eq!(
        column(&report, "logged_prompt_tokens"),
        numbers(&[Some(1430), Some(1460), Some(1430), Some(1460)])
    );
    assert_eq!(
        column(&report, "logged_cache_write_tokens"),
        numbers(&[Some(1408), Some(1456), None, None])
    );
    // The second GenAI span started 1 s after the first, which ended at 1.5 s.
    assert_eq!(report["summary"]["written_then_missed"]["requests"], 1);
    assert!(column(&report, "break").iter().all(Value::is_null));
}
