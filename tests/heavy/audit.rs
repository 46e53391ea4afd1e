//! `prefixlint audit` on logs written by real clients against the real llama.cpp server.
//!
//! Each client (the OpenAI Python client, its OpenTelemetry GenAI and OpenInference
//! instrumentations, LiteLLM's logging callback) sends five scripted sessions, one request at
//! a time in log order, to a fresh server with one slot and no host-RAM prompt cache
//! (`tests/audit_support/clients.py`).
//! Each session carries one known prefix breaker, or none. Then `audit --engine llama.cpp`
//! must predict the cached tokens the server logged, on every request, and classify each
//! breaker.

use crate::support;

use assert_cmd::Command;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use support::llama::LlamaServer;

/// One server at a time: they share the CPU, and each log needs its own cold slot.
static SERIAL: Mutex<()> = Mutex::new(());

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn python() -> PathBuf {
    std::env::var_os("PREFIXLINT_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".venv/bin/python"))
}

/// The log `client` writes against a fresh one-slot server without a prompt cache in RAM.
fn client_log(client: &str, dir: &Path) -> PathBuf {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = LlamaServer::start_with(&["--parallel", "1", "--cache-ram", "0"]);
    let out = dir.join(format!("{client}.jsonl"));
    let status = std::process::Command::new(python())
        .arg(repo().join("tests/audit_support/clients.py"))
        .args(["--url", &server.url, "--client", client, "--out"])
        .arg(&out)
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .status()
        .expect("clients.py runs");
    assert!(status.success(), "clients.py --client {client} failed");
    out
}

fn audit_json(args: &[&str]) -> Value {
    let out = Command::cargo_bin("prefixlint")
        .unwrap()
        .arg("audit")
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "audit failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON report")
}

/// The machine-readable contract of issue 13.
fn assert_contract(report: &Value) {
    assert_eq!(report["version"], 1);
    for r in report["requests"].as_array().unwrap() {
        for key in [
            "line",
            "session",
            "prompt_tokens",
            "predicted_cached_tokens",
            "logged_cached_tokens",
            "break",
        ] {
            assert!(r.get(key).is_some(), "request without `{key}`: {r}");
        }
        if let Some(b) = r["break"].as_object() {
            for key in ["path", "offset", "cause", "tokens_lost", "before", "after"] {
                assert!(b.contains_key(key), "break without `{key}`: {r}");
            }
            assert!(
                [
                    "clock",
                    "id",
                    "identity",
                    "tool-order",
                    "key-order",
                    "whitespace",
                    "history-rewrite",
                    "history-trimmed",
                    "prompt-switched",
                    "reply-rewritten",
                    "content"
                ]
                .contains(&b["cause"].as_str().unwrap()),
                "{r}"
            );
        }
    }
    let s = &report["summary"];
    for key in [
        "requests",
        "prompt_tokens",
        "predicted_cached_tokens",
        "logged_cached_tokens",
        "tokens_lost_by_cause",
    ] {
        assert!(s.get(key).is_some(), "summary without `{key}`");
    }
}

/// Every request's break as (path, cause), per line; `None` for no break.
fn breaks(report: &Value) -> Vec<Option<(String, String)>> {
    report["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["break"].as_object().map(|b| {
                (
                    b["path"].as_str().unwrap().to_owned(),
                    b["cause"].as_str().unwrap().to_owned(),
                )
            })
        })
        .collect()
}

/// The sessions in log order: clock ×3, request-id ×3, tools ×3, tool-result ×2, clean ×3.
fn expected_breaks(prefix: &str, tools_logged: bool) -> Vec<Option<(String, String)>> {
    let at = |path: &str, cause: &str| Some((format!("{prefix}{path}"), cause.to_owned()));
    let tools = |cause| {
        if tools_logged {
            Some(("tools".to_owned(), cause))
        } else {
            None
        }
    };
    vec![
        None,
        at("[0].content", "clock"),
        at("[0].content", "clock"),
        None,
        at("[0].content", "id"),
        at("[0].content", "id"),
        None,
        tools("tool-order".into()),
        tools("tool-order".into()),
        None,
        at("[3].content", "key-order"),
        None,
        None,
        None,
    ]
}

fn assert_predicted_equals_logged(report: &Value) {
    for r in report["requests"].as_array().unwrap() {
        assert_eq!(
            r["predicted_cached_tokens"], r["logged_cached_tokens"],
            "line {}: predicted against logged cached tokens",
            r["line"]
        );
        assert_eq!(
            r["prompt_tokens"], r["logged_prompt_tokens"],
            "line {}",
            r["line"]
        );
    }
    let s = &report["summary"];
    assert_eq!(s["predicted_cached_tokens"], s["logged_cached_tokens"]);
    assert_eq!(s["requests_with_logged_cache"], s["requests"]);
}

#[test]
fn openai_client_records_predicted_equals_logged_and_breakers_classified() {
    let dir = tempfile::tempdir().unwrap();
    let log = client_log("openai", dir.path());
    let report = audit_json(&[log.to_str().unwrap(), "--engine", "llama.cpp"]);
    assert_contract(&report);
    assert_eq!(report["summary"]["requests"], 14);
    assert_predicted_equals_logged(&report);
    assert_eq!(breaks(&report), expected_breaks("messages", true));
    let sessions: Vec<&str> = report["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["session"].as_str().unwrap())
        .collect();
    assert_eq!(sessions[0], "clock");
    assert_eq!(sessions[13], "clean");
    let clock = &report["requests"][1]["break"];
    assert_eq!(
        clock["offset"], 28,
        "the changed minute of `Current time: …`"
    );
    assert!(clock["tokens_lost"].as_u64().unwrap() > 300, "{clock}");
    // The same log gzipped and through stdin gives the same report.
    let gz = dir.path().join("openai.jsonl.gz");
    let mut encoder = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::fast(),
    );
    encoder.write_all(&std::fs::read(&log).unwrap()).unwrap();
    encoder.finish().unwrap();
    let from_stdin = Command::cargo_bin("prefixlint")
        .unwrap()
        .args(["audit", "-", "--engine", "llama.cpp", "--format", "json"])
        .pipe_stdin(&gz)
        .unwrap()
        .output()
        .unwrap();
    let from_stdin: Value = serde_json::from_slice(&from_stdin.stdout).unwrap();
    assert_eq!(
        from_stdin["summary"]["predicted_cached_tokens"],
        report["summary"]["predicted_cached_tokens"]
    );
    assert_eq!(breaks(&from_stdin), breaks(&report));
}

#[test]
fn litellm_logging_payloads_predicted_equals_logged_and_breakers_classified() {
    let dir = tempfile::tempdir().unwrap();
    let log = client_log("litellm", dir.path());
    let report = audit_json(&[log.to_str().unwrap(), "--engine", "llama.cpp"]);
    assert_contract(&report);
    assert_eq!(report["summary"]["requests"], 14);
    assert_predicted_equals_logged(&report);
    assert_eq!(breaks(&report), expected_breaks("messages", true));
    assert_eq!(
        report["requests"][0]["session"], "clock",
        "litellm_session_id"
    );
}

/// The instrumentation records messages (`gen_ai.input.messages`) and usage, but in this
/// version neither tool definitions nor cached tokens: the tool-order breaker is invisible
/// and there is nothing logged to compare with. No session either: each request is matched
/// with the earlier one it continues.
#[test]
fn otel_genai_spans_breakers_classified_without_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let log = client_log("otel", dir.path());
    let report = audit_json(&[log.to_str().unwrap(), "--engine", "llama.cpp"]);
    assert_contract(&report);
    assert_eq!(report["summary"]["requests"], 14);
    // Without sessions, the first request of the tool-result and clean sessions extends the
    // earlier request sharing the longest prefix (the same system prompt): their own first
    // question is where they part, a `content` break.
    let mut expected = expected_breaks("gen_ai.input.messages", false);
    for first in [9, 11] {
        expected[first] = Some(("gen_ai.input.messages[1].content".into(), "content".into()));
    }
    assert_eq!(breaks(&report), expected);
    for r in report["requests"].as_array().unwrap() {
        assert!(r["logged_cached_tokens"].is_null());
        assert!(r["session"].is_null());
    }
}

/// OpenInference's instrumentation records the messages flattened into span attributes, the
/// tools, the reply, the session (`using_session`) and the server's cached tokens
/// (`llm.token_count.prompt_details.cache_read`, from llama.cpp's
/// `prompt_tokens_details.cached_tokens`): predicted equals logged on every request.
#[test]
fn openinference_spans_predicted_equals_logged_and_breakers_classified() {
    let dir = tempfile::tempdir().unwrap();
    let log = client_log("openinference", dir.path());
    let report = audit_json(&[log.to_str().unwrap(), "--engine", "llama.cpp"]);
    assert_contract(&report);
    assert_eq!(report["summary"]["requests"], 14);
    assert_predicted_equals_logged(&report);
    assert_eq!(breaks(&report), expected_breaks("llm.input_messages", true));
    assert_eq!(report["requests"][0]["session"], "clock");
    assert_eq!(report["requests"][13]["session"], "clean");
}

fn audit_raw(args: &[&str], stdin: Option<Vec<u8>>) -> std::process::Output {
    let mut cmd = Command::cargo_bin("prefixlint").unwrap();
    cmd.arg("audit").args(args);
    if let Some(bytes) = stdin {
        cmd.write_stdin(bytes);
    }
    cmd.output().unwrap()
}

fn chat_line(session: &str, text: &str) -> String {
    serde_json::json!({"request": {"messages": [{"role": "user", "content": text}]},
                       "metadata": {"session_id": session}})
    .to_string()
}

#[test]
fn malformed_lines_are_skipped_with_their_line_numbers_and_counted() {
    let mut log = Vec::new();
    writeln!(log, "{}", chat_line("s", "hello")).unwrap();
    writeln!(log, "{{\"request\": ").unwrap();
    log.extend_from_slice(
        b"{\"request\": {\"messages\": [{\"role\": \"user\", \"content\": \"\xff\xfe\"}]}}\n",
    );
    writeln!(log, "{}", "x".repeat(5000)).unwrap();
    writeln!(log, "[1, 2]").unwrap();
    writeln!(log, "{}", chat_line("s", "hello again")).unwrap();
    let out = audit_raw(
        &["-", "--format", "json", "--max-line-bytes", "4096"],
        Some(log.clone()),
    );
    // Lines not read fail the run (`--fail-on skipped`, the default); the report is whole.
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let never = audit_raw(
        &["-", "--max-line-bytes", "4096", "--fail-on", "never"],
        Some(log),
    );
    assert_eq!(never.status.code(), Some(0));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["summary"]["requests"], 2);
    assert_eq!(report["summary"]["skipped_lines"], 4);
    let lines: Vec<u64> = report["summary"]["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [2, 3, 4, 5]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("-:4: skipped: line longer than 4096 bytes"),
        "{stderr}"
    );
    assert!(
        stderr.contains("-:3: skipped: not UTF-8 text (an invalid byte at column 56)"),
        "{stderr}"
    );
    assert!(stderr.contains("-:2: skipped: not JSON"), "{stderr}");
}

#[test]
fn a_100_mb_line_is_skipped_unread_at_the_default_cap_and_the_rest_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    writeln!(file, "{}", chat_line("s", "before")).unwrap();
    // One JSON record of 100 MB: over DEFAULT_MAX_LINE_BYTES (64 MiB), so not even parsed.
    write!(
        file,
        "{{\"request\": {{\"messages\": [{{\"role\": \"user\", \"content\": \""
    )
    .unwrap();
    let chunk = "y".repeat(1 << 20);
    for _ in 0..100 {
        file.write_all(chunk.as_bytes()).unwrap();
    }
    writeln!(file, "\"}}]}}}}").unwrap();
    writeln!(file, "{}", chat_line("s", "after")).unwrap();
    drop(file);
    let out = audit_raw(&[path.to_str().unwrap(), "--format", "json"], None);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["summary"]["requests"], 2);
    assert_eq!(report["summary"]["skipped_lines"], 1);
    assert_eq!(report["summary"]["skipped"][0]["line"], 2);
    assert_eq!(
        report["summary"]["skipped"][0]["reason"],
        format!("line longer than {} bytes, not read", 64 << 20)
    );
    let lines: Vec<u64> = report["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [1, 3]);
}

#[test]
fn a_truncated_gzip_is_an_error_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    for i in 0..200 {
        writeln!(
            encoder,
            "{}",
            chat_line("s", &format!("message {i} {}", "y".repeat(200)))
        )
        .unwrap();
    }
    let bytes = encoder.finish().unwrap();
    let path = dir.path().join("cut.jsonl.gz");
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let out = audit_raw(&[path.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cut.jsonl.gz:"), "{stderr}");
    assert!(stderr.contains("truncated"), "{stderr}");
}

#[test]
fn a_log_without_any_request_is_unusable_input() {
    let out = audit_raw(&["-"], Some(b"not json\n{\"a\": 1}\n".to_vec()));
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no request could be read"), "{stderr}");
    let missing = audit_raw(&["/nonexistent/log.jsonl"], None);
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn bare_bodies_batch_lines_and_anthropic_messages_are_read() {
    let system = "You are the order desk. Answer precisely and cite the policy section.";
    let lines = [
        serde_json::json!({"custom_id": "a", "method": "POST", "url": "/v1/chat/completions",
            "body": {"user": "u1", "messages": [{"role": "system", "content": format!("Now: 2026-11-30T09:00:00Z\n{system}")},
                                                {"role": "user", "content": "hi"}]}}),
        serde_json::json!({"custom_id": "b", "method": "POST", "url": "/v1/chat/completions",
            "body": {"user": "u1", "messages": [{"role": "system", "content": format!("Now: 2026-11-30T09:05:00Z\n{system}")},
                                                {"role": "user", "content": "hi"}]}}),
    ];
    let log: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let out = audit_raw(&["-", "--format", "json"], Some(log.into_bytes()));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["requests"][1]["session"], "u1");
    assert_eq!(report["requests"][1]["break"]["cause"], "clock");
    assert_eq!(
        report["requests"][1]["break"]["path"],
        "messages[0].content"
    );

    let anthropic = |user: &str| {
        serde_json::json!({"system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
            "metadata": {"user_id": "x"},
            "messages": [{"role": "user", "content": [{"type": "text", "text": user}]}]})
        .to_string()
    };
    let log = format!(
        "{}\n{}\n",
        anthropic("User: Alice\nhello"),
        anthropic("User: Bob\nhello")
    );
    let out = audit_raw(
        &[
            "-",
            "--format",
            "json",
            "--session-key",
            "/metadata/user_id",
        ],
        Some(log.into_bytes()),
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["requests"][1]["break"]["path"],
        "messages[0].content"
    );
    assert_eq!(report["requests"][1]["break"]["cause"], "identity");
}

/// The committed log (written by the OpenAI client against the one-slot server) with the
/// prompt template that wrote its clock session's system prompt: the clock break is reported
/// on the template line and column of `{{ now }}`, as a `check` diagnostic, in valid SARIF.
#[test]
fn templates_attribute_the_clock_break_to_the_template_line_that_wrote_it() {
    // Relative paths, as SARIF locations are.
    let args = [
        "fixtures/audit/requests.jsonl",
        "--engine",
        "llama.cpp",
        "--templates",
        "fixtures/audit/prompts",
    ];
    let out = Command::cargo_bin("prefixlint")
        .unwrap()
        .current_dir(repo())
        .arg("audit")
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_contract(&report);
    let clock = &report["requests"][1]["break"];
    assert_eq!(clock["cause"], "clock");
    let place = &clock["template"];
    assert!(
        place["file"].as_str().unwrap().ends_with("system.jinja"),
        "{place}"
    );
    assert_eq!(
        (place["line"].as_u64(), place["column"].as_u64()),
        (Some(1), Some(15))
    );
    assert_eq!(place["rule"], "PL001");
    assert_eq!(place["expression"], "{{ now }}");
    // The request-id session's prompt is not in the folder: not attributed.
    assert!(report["requests"][4]["break"].get("template").is_none());

    let dir = tempfile::tempdir().unwrap();
    let sarif = dir.path().join("audit.sarif");
    let out = Command::cargo_bin("prefixlint")
        .unwrap()
        .current_dir(repo())
        .arg("audit")
        .args(args)
        .args(["--format", "sarif", "--output"])
        .arg(&sarif)
        .output()
        .unwrap();
    assert!(out.status.success());
    let parsed: Value = serde_json::from_str(&std::fs::read_to_string(&sarif).unwrap()).unwrap();
    let first = &parsed["runs"][0]["results"][0];
    assert_eq!(first["ruleId"], "PL001");
    assert_eq!(
        first["locations"][0]["physicalLocation"]["region"]["startLine"],
        1
    );
    support::validate_sarif(&sarif, dir.path());
}
