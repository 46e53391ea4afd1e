//! Chat templates, end to end through the real binary: `render` fidelity against
//! transformers, `render` snapshots, and `check --chat-template` / `--chat-request` findings.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const NOW: &str = "2026-11-29T12:00:00Z";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn prefixlint(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_prefixlint"))
        // No results cache shared with other tests or the user.
        .env("PREFIXLINT_NO_CACHE", "1")
        .args(args)
        .arg("--no-config")
        .current_dir(root())
        .output()
        .expect("run prefixlint")
}

/// The Python with transformers: `PREFIXLINT_TEST_PYTHON` (set by scripts/setup.d/10-python.sh),
/// else the checkout's .venv. Missing is a failure, not a skip: CI installs it.
fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("PREFIXLINT_TEST_PYTHON") {
        return PathBuf::from(python);
    }
    let venv = root().join(".venv/bin/python");
    assert!(
        venv.is_file(),
        "no Python with transformers: run `bash scripts/test.sh` (it installs .venv and sets PREFIXLINT_TEST_PYTHON)"
    );
    venv
}

#[derive(serde::Deserialize)]
struct Reference {
    transformers: String,
    pairs: Vec<Pair>,
}

#[derive(serde::Deserialize)]
struct Pair {
    template: String,
    conversation: String,
    ok: bool,
    text: Option<String>,
    error: Option<String>,
}

/// Pairs that still differ, with the reason: exactly these may differ. A pair that differs
/// and is not listed fails the test; a listed pair that now renders identically fails it too,
/// asking to be removed from the list (so the list never hides a later regression).
const KNOWN_DIFFERENCES: &[(&str, &str, &str)] = &[(
    "meetkai-functionary-medium-v3.1.jinja",
    "tools.yaml",
    "Markup arithmetic: Jinja2 HTML-escapes a plain string (here `t | tojson()`) added to a `\"...\"|safe` string; minijinja concatenates it as is",
)];

/// Pairs where transformers itself fails to render (a template that raises on a conversation
/// it does not support): 113 of 630 with transformers 5.24.0.
const MAX_EXCLUDED: usize = 113;

#[test]
fn chat_templates_render_like_transformers() {
    let templates = root().join("fixtures/chat-templates");
    let conversations = root().join("fixtures/chat-conversations");
    let output = Command::new(python())
        .arg(root().join("tests/python/chat_fidelity.py"))
        .arg("--templates")
        .arg(&templates)
        .arg("--conversations")
        .arg(&conversations)
        .args(["--now", NOW])
        .output()
        .expect("run tests/python/chat_fidelity.py");
    assert!(
        output.status.success(),
        "chat_fidelity.py failed (is transformers installed? run scripts/test.sh):\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let reference: Reference =
        serde_json::from_slice(&output.stdout).expect("chat_fidelity.py prints JSON");
    let mut compared = 0;
    let mut identical = 0;
    let mut differing = Vec::new();
    for pair in reference.pairs.iter().filter(|p| p.ok) {
        compared += 1;
        let out = prefixlint(&[
            "render",
            "--chat-template",
            &path_str(&templates.join(&pair.template)),
            "--messages",
            &path_str(&conversations.join(&pair.conversation)),
            "--now",
            NOW,
        ]);
        let ours = String::from_utf8_lossy(&out.stdout);
        let theirs = pair.text.as_deref().unwrap_or_default();
        if out.status.success() && ours == theirs {
            identical += 1;
        } else {
            let why = if out.status.success() {
                first_difference(theirs, &ours)
            } else {
                format!(
                    "prefixlint failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                        .lines()
                        .take(3)
                        .collect::<Vec<_>>()
                        .join(" | ")
                )
            };
            differing.push((pair.template.clone(), pair.conversation.clone(), why));
        }
    }
    let skipped = reference.pairs.iter().filter(|p| !p.ok).count();
    let percent = 100.0 * identical as f64 / compared.max(1) as f64;
    let summary = format!(
        "fidelity: {identical}/{compared} pairs identical ({percent:.1}%) against transformers {} ({skipped} pairs where transformers itself fails are excluded)",
        reference.transformers
    );
    println!("{summary}");
    // Straight to stderr, past the test harness's capture, so CI logs show the count.
    {
        use std::io::Write;
        let _ = writeln!(std::io::stderr().lock(), "{summary}");
    }
    for (template, conversation, why) in &differing {
        let known = KNOWN_DIFFERENCES
            .iter()
            .find(|(t, c, _)| t == template && c == conversation)
            .map(|(_, _, reason)| format!(" [known: {reason}]"))
            .unwrap_or_default();
        println!("  differs: {template} × {conversation}: {why}{known}");
    }
    for pair in reference.pairs.iter().filter(|p| !p.ok) {
        println!(
            "  excluded: {} × {}: transformers: {}",
            pair.template,
            pair.conversation,
            pair.error.as_deref().unwrap_or("?")
        );
    }
    assert!(compared >= 300, "too few pairs compared: {compared}");
    // Pairs transformers itself fails on have no reference; a new transformers that fails on
    // more would quietly compare fewer (tests/README.md).
    assert!(
        skipped <= MAX_EXCLUDED,
        "{skipped} pairs excluded because transformers fails on them, more than the {MAX_EXCLUDED} known: see the `excluded:` lines above"
    );
    let differs = |template: &str, conversation: &str| {
        differing
            .iter()
            .any(|(t, c, _)| t == template && c == conversation)
    };
    let new: Vec<String> = differing
        .iter()
        .filter(|(t, c, _)| {
            !KNOWN_DIFFERENCES
                .iter()
                .any(|(kt, kc, _)| kt == t && kc == c)
        })
        .map(|(t, c, why)| format!("{t} × {c}: {why}"))
        .collect();
    let fixed: Vec<String> = KNOWN_DIFFERENCES
        .iter()
        .filter(|(t, c, _)| !differs(t, c))
        .map(|(t, c, _)| format!("{t} × {c}"))
        .collect();
    assert!(
        new.is_empty(),
        "{} pair(s) differ from transformers and are not in KNOWN_DIFFERENCES:\n{}",
        new.len(),
        new.join("\n")
    );
    assert!(
        fixed.is_empty(),
        "now identical to transformers (or no longer compared): remove from KNOWN_DIFFERENCES in tests/it/chat.rs:\n{}",
        fixed.join("\n")
    );
}

fn path_str(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// Where two renders part, shown around the first differing byte.
fn first_difference(theirs: &str, ours: &str) -> String {
    let at = theirs
        .bytes()
        .zip(ours.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    let window = |s: &str| -> String {
        let start = floor(s, at.saturating_sub(20));
        let end = floor(s, (at + 40).min(s.len()));
        format!("{:?}", &s[start..end])
    };
    format!(
        "byte {at}: transformers {} vs prefixlint {}",
        window(theirs),
        window(ours)
    )
}

fn floor(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn prefixlint_with(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_prefixlint"))
        .env("PREFIXLINT_NO_CACHE", "1")
        .args(args)
        .current_dir(root())
        .output()
        .expect("run prefixlint")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn render_llama_3_2_prints_the_exact_request() {
    let out = prefixlint(&[
        "render",
        "--chat-template",
        "fixtures/chat-templates/meta-llama-Llama-3.2-3B-Instruct.jinja",
        "--messages",
        "fixtures/chat-conversations/system-user.yaml",
        "--now",
        NOW,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    assert!(text.contains("Today Date: 29 Nov 2026"));
    assert!(
        text.ends_with("<|start_header_id|>assistant<|end_header_id|>\n\n"),
        "no newline added"
    );
    insta::assert_snapshot!("render_llama_3_2_system_user", text);
}

#[test]
fn render_qwen3_tools_snapshot() {
    let out = prefixlint(&[
        "render",
        "--chat-template",
        "fixtures/chat-templates/Qwen-Qwen3-0.6B.jinja",
        "--messages",
        "fixtures/chat-conversations/tools.yaml",
        "--now",
        NOW,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    insta::assert_snapshot!("render_qwen3_tools", stdout(&out));
}

#[test]
fn render_tokens_shows_boundaries_and_ids() {
    let out = prefixlint(&[
        "render",
        "--chat-template",
        "fixtures/chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja",
        "--messages",
        "fixtures/chat-conversations/user-only.yaml",
        "--now",
        NOW,
        "--tokens",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    insta::assert_snapshot!("render_qwen25_tokens", stdout(&out));
}

#[test]
fn render_plain_template_sample() {
    let out = prefixlint(&[
        "render",
        "fixtures/chat-template-volatile/fail/support.j2",
        "--sample",
        "1",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    insta::assert_snapshot!("render_plain_support_sample_1", stdout(&out));
}

#[test]
fn render_tokenizer_config_with_named_templates() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tokenizer_config.json");
    std::fs::write(
        &config,
        r#"{"bos_token": {"content": "<B>", "lstrip": false}, "eos_token": "<E>",
            "chat_template": [{"name": "default", "template": "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{{ eos_token }}"},
                              {"name": "tool_use", "template": "TOOLS {{ tools is none }}"}]}"#,
    )
    .unwrap();
    let messages = dir.path().join("m.yaml");
    std::fs::write(&messages, "messages:\n  - role: user\n    content: hi\n").unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "render",
            "--chat-template",
            config.to_str().unwrap(),
            "--messages",
            messages.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        prefixlint(&args)
    };
    assert_eq!(stdout(&run(&[])), "<B>[user]hi<E>");
    assert_eq!(stdout(&run(&["--template-name", "tool_use"])), "TOOLS True");
    let missing = run(&["--template-name", "nope"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("`default`, `tool_use`"));
}

#[test]
fn render_errors_name_the_file_and_exit_2() {
    let out = prefixlint(&[
        "render",
        "--chat-template",
        "fixtures/chat-templates/google-gemma-2-2b-it.jinja",
        "--messages",
        "fixtures/chat-conversations/system-user.yaml",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("google-gemma-2-2b-it.jinja"), "{err}");
    assert!(err.contains("System role not supported"), "{err}");
}

/// The issue's acceptance test: Llama 3.2's real template injects today's date.
#[test]
fn llama_3_2_date_injection_is_caught() {
    let out = prefixlint_with(&[
        "check",
        "--config",
        "fixtures/chat-template-volatile/fail/prefixlint.yaml",
        "fixtures/chat-template-volatile/fail/support.j2",
        "--format",
        "json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let template = &report["templates"][0];
    let diagnostics = template["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1, "{report:#}");
    let d = &diagnostics[0];
    assert_eq!(d["rule"], "PL008");
    assert_eq!(d["name"], "chat-template-volatile");
    let message = d["message"].as_str().unwrap();
    assert!(
        message.contains("meta-llama-Llama-3.2-3B-Instruct.jinja:"),
        "names the chat template and its line: {message}"
    );
    assert!(d["help"].as_str().unwrap().contains("date_string"));
    // The shared prefix is the header before the date: a couple of dozen tokens.
    let shared = template["shared_prefix_tokens"].as_u64().unwrap();
    assert!((15..=40).contains(&shared), "shared prefix {shared}");
    assert!(template["recoverable_tokens"].as_u64().unwrap() > 150);
}

/// A miette report's words, its line wrapping and margins taken out.
fn unwrapped(stderr: &[u8]) -> String {
    String::from_utf8_lossy(stderr)
        .split_whitespace()
        .filter(|word| !matches!(*word, "│" | "×"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Anthropic and Claude on Bedrock cache a request in the API's own order (tools, system,
/// messages), as `audit` models it: `check` refuses to measure them through a chat template
/// (flag or config), naming the combination and what to do instead, with exit 2.
#[test]
fn a_chat_template_with_an_api_that_caches_in_its_own_order_is_refused() {
    let template = "fixtures/chat-template-volatile/fail/support.j2";
    let chat_template = "fixtures/chat-templates/meta-llama-Llama-3.2-3B-Instruct.jinja";
    for engine in ["anthropic", "bedrock"] {
        let out = prefixlint(&[
            "check",
            template,
            "--engine",
            engine,
            "--chat-template",
            chat_template,
        ]);
        let stderr = unwrapped(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{engine}: {stderr}");
        assert!(
            stderr.contains(&format!("--chat-template with the `{engine}` engine"))
                && stderr.contains("tools, then system, then messages")
                && stderr.contains(&format!("prefixlint audit LOG --engine {engine}")),
            "{stderr}"
        );
        assert!(out.stdout.is_empty(), "{}", stdout(&out));
    }
    let out = prefixlint_with(&[
        "check",
        "--config",
        "fixtures/chat-template-volatile/fail/prefixlint.yaml",
        template,
        "--engine",
        "anthropic",
    ]);
    let stderr = unwrapped(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("`chat_template:` in the config with the `anthropic` engine"),
        "{stderr}"
    );
    // The same template and chat template with a self-hosted engine is checked.
    let out = prefixlint(&[
        "check",
        template,
        "--engine",
        "vllm",
        "--chat-template",
        chat_template,
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn llama_3_2_with_a_fixed_date_string_passes() {
    let out = prefixlint_with(&[
        "check",
        "--config",
        "fixtures/chat-template-volatile/pass/prefixlint.yaml",
        "fixtures/chat-template-volatile/pass/support.j2",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["templates"][0]["diagnostics"], serde_json::json!([]));
}

#[test]
fn chat_template_finding_in_full_report_names_the_line() {
    let out = prefixlint_with(&[
        "check",
        "--no-config",
        "--chat-template",
        "fixtures/chat-templates/meta-llama-Llama-3.2-3B-Instruct.jinja",
        "fixtures/chat-template-volatile/fail/support.j2",
        "--format",
        "full",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.contains("PL008"), "{text}");
    assert!(text.contains("Today Date"), "{text}");
}

#[test]
fn qwen3_history_rewrite_is_caught() {
    let out = prefixlint_with(&[
        "check",
        "--config",
        "fixtures/history-rewrite/fail/prefixlint.yaml",
        "--chat-request",
        "fixtures/history-rewrite/fail/qwen3-thinking.yaml",
        "--format",
        "json",
    ]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let diagnostics = report["templates"][0]["diagnostics"].as_array().unwrap();
    let d = diagnostics
        .iter()
        .find(|d| d["rule"] == "PL007")
        .unwrap_or_else(|| panic!("no PL007: {report:#}"));
    assert_eq!(d["name"], "history-rewrite");
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .contains("message 3 (assistant)"),
        "{d}"
    );
    assert_eq!(out.status.code(), Some(1));
}

/// Related places print as `path:LINE:COLUMN: text`, the form terminals and editors link.
#[test]
fn related_locations_read_path_line_column() {
    let out = prefixlint_with(&[
        "check",
        "--no-config",
        "--chat-request",
        "fixtures/history-rewrite/fail/qwen3-thinking.yaml",
        "--chat-template",
        "fixtures/chat-templates/Qwen-Qwen3-0.6B.jinja",
        "--format",
        "full",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.contains("fixtures/chat-templates/Qwen-Qwen3-0.6B.jinja:41:17: renders message 3"),
        "{text}"
    );
    let out = prefixlint_with(&[
        "check",
        "--no-config",
        "--chat-template",
        "fixtures/chat-templates/meta-llama-Llama-3.2-3B-Instruct.jinja",
        "fixtures/chat-template-volatile/fail/support.j2",
        "--format",
        "full",
    ]);
    let text = stdout(&out);
    let related = regex::Regex::new(
        r"fixtures/chat-templates/meta-llama-Llama-3\.2-3B-Instruct\.jinja:\d+:\d+: writes text",
    )
    .unwrap();
    assert!(related.is_match(&text), "{text}");
    assert!(!text.contains(":line "), "{text}");
}

/// Without `--now`, `render` reads the current time, as its help says, for plain templates
/// and chat requests alike.
#[test]
fn render_without_now_prints_the_current_time() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("clock.j2");
    std::fs::write(&template, "{{ now() }}|{{ strftime_now('%Y-%m-%d') }}").unwrap();
    let before = chrono::Utc::now();
    let out = prefixlint(&["render", template.to_str().unwrap()]);
    let after = chrono::Utc::now();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    let (iso, day) = text.split_once('|').unwrap();
    // `now()` prints like Python's `str(datetime)`, in UTC.
    let printed = chrono::NaiveDateTime::parse_from_str(iso, "%Y-%m-%d %H:%M:%S%.f")
        .unwrap_or_else(|e| panic!("`{iso}`: {e}"))
        .and_utc();
    let slack = chrono::Duration::seconds(1);
    assert!(
        before - slack <= printed && printed <= after + slack,
        "{printed} is not between {before} and {after}"
    );
    assert!(
        [before, after]
            .iter()
            .any(|t| t.format("%Y-%m-%d").to_string() == day),
        "{day}"
    );

    let help = stdout(&prefixlint_with(&["render", "--help"]));
    assert!(help.contains("[default: the current time"), "{help}");
}

#[test]
fn qwen25_history_is_stable() {
    let out = prefixlint_with(&[
        "check",
        "--config",
        "fixtures/history-rewrite/pass/prefixlint.yaml",
        "--chat-request",
        "fixtures/history-rewrite/pass/qwen25-plain.yaml",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["templates"][0]["diagnostics"], serde_json::json!([]));
}

#[test]
fn chat_role_picks_the_message_that_carries_the_render() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("short.j2");
    std::fs::write(&template, "Be nice.").unwrap();
    let gemma = root().join("fixtures/chat-templates/google-gemma-2-2b-it.jinja");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "check",
            "--no-config",
            "--chat-template",
            gemma.to_str().unwrap(),
            template.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        prefixlint_with(&args)
    };
    let as_system = run(&[]);
    assert_eq!(as_system.status.code(), Some(2));
    let err = String::from_utf8_lossy(&as_system.stderr);
    assert!(
        err.contains("google-gemma-2-2b-it.jinja") && err.contains("System role not supported"),
        "{err}"
    );
    let as_user = run(&["--chat-role", "user", "--format", "json"]);
    assert_eq!(
        as_user.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&as_user.stderr)
    );
}

#[test]
fn a_varying_user_turn_after_a_stable_system_prompt_is_quiet() {
    let out = prefixlint_with(&[
        "check",
        "--no-config",
        "--chat-template",
        "fixtures/chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja",
        "fixtures/chat-template-volatile/pass/support.j2",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn chat_request_with_llama_3_2_is_caught() {
    let out = prefixlint_with(&[
        "check",
        "--no-config",
        "--chat-template",
        "fixtures/chat-templates/meta-llama-Llama-3.2-3B-Instruct.jinja",
        "--chat-request",
        "fixtures/chat-template-volatile/fail/request.yaml",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rules: Vec<&str> = report["templates"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["rule"].as_str().unwrap())
        .collect();
    assert_eq!(rules, ["PL008"]);
}
