//! #11 §6: a template that cannot be checked is visible in every format, next to the
//! ones that can (tests/fixtures/failures: a good template, one with a syntax error, one
//! whose samples file has a single render). Exit 2 still wins.

use crate::support;

use serde_json::Value;
use support::{prefixlint, text, validate_sarif};

const FAILURES: &str = "tests/fixtures/failures";
const BROKEN: &str = "tests/fixtures/failures/broken.j2";

/// stdout, stderr and the exit code of `check --format FORMAT` on the failures fixture.
fn check(format: &str) -> (String, String, i32) {
    let out = prefixlint()
        .args(["check", "--no-config", "--format", format, FAILURES])
        .output()
        .unwrap();
    (
        text(&out.stdout),
        text(&out.stderr),
        out.status.code().unwrap(),
    )
}

fn snapshot_settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(
        &format!(r#""{}""#, env!("CARGO_PKG_VERSION").replace('.', r"\.")),
        r#""[VERSION]""#,
    );
    settings
}

#[test]
fn concise() {
    let (out, err, code) = check("concise");
    assert_eq!(code, 2, "{err}");
    assert!(
        out.contains(
            "tests/fixtures/failures/broken.j2:3:23: error: syntax error: unexpected end of input"
        ),
        "{out}"
    );
    insta::assert_snapshot!(out);
}

#[test]
fn full() {
    let (out, err, code) = check("full");
    assert_eq!(code, 2);
    assert!(
        out.contains("2 templates checked, 1 failed, 0 findings"),
        "{out}"
    );
    // The miette block, with the source, is still on stderr.
    assert!(
        err.contains("╭─[tests/fixtures/failures/broken.j2:3:23]"),
        "{err}"
    );
    insta::assert_snapshot!(out);
}

#[test]
fn json() {
    let (out, err, code) = check("json");
    assert_eq!(code, 2, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    let errors = report["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1);
    let keys: Vec<&str> = errors[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["path", "message", "line", "column", "help"]);
    assert_eq!(errors[0]["path"], BROKEN);
    assert_eq!(
        (errors[0]["line"].as_u64(), errors[0]["column"].as_u64()),
        (Some(3), Some(23))
    );
    assert_eq!(report["skipped"], serde_json::json!([]));
    // Every discovered template is accounted for, in `templates` or in `errors`.
    let templates = report["templates"].as_array().unwrap();
    assert_eq!(templates.len() + errors.len(), 3);
    insta::assert_snapshot!(out);
}

#[test]
fn sarif() {
    let (out, err, code) = check("sarif");
    assert_eq!(code, 2, "{err}");
    let sarif: Value = serde_json::from_str(&out).unwrap();
    let invocation = &sarif["runs"][0]["invocations"][0];
    assert_eq!(invocation["executionSuccessful"], false);
    let notifications = invocation["toolExecutionNotifications"].as_array().unwrap();
    let error = notifications
        .iter()
        .find(|n| n["level"] == "error")
        .unwrap();
    let location = &error["locations"][0]["physicalLocation"];
    assert_eq!(location["artifactLocation"]["uri"], BROKEN);
    assert_eq!(location["region"]["startLine"], 3);
    snapshot_settings()
        .bind(|| insta::assert_snapshot!(serde_json::to_string_pretty(invocation).unwrap()));
}

#[test]
fn github() {
    let (out, err, code) = check("github");
    assert_eq!(code, 2, "{err}");
    assert!(
        out.contains("::error file=tests/fixtures/failures/broken.j2,line=3,col=23,title=prefixlint%3A template could not be checked::"),
        "{out}"
    );
    insta::assert_snapshot!(out);
}

#[test]
fn when_the_only_template_fails_stdout_has_the_counts_and_no_empty_table() {
    let out = prefixlint()
        .args(["check", "--no-config", BROKEN])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stdout = text(&out.stdout);
    assert!(!stdout.contains("template "), "no table header: {stdout}");
    assert!(
        !stdout.contains("0 templates checked, 0 findings"),
        "{stdout}"
    );
    assert_eq!(
        stdout,
        "failed tests/fixtures/failures/broken.j2:3:23: syntax error: unexpected end of input, expected end of block\n\
         \n\
         0 templates checked, 1 failed, 0 findings\n"
    );
}

#[test]
fn sarif_with_failures_passes_the_sarif_multitool() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("failures.sarif");
    let out = prefixlint()
        .args(["check", "--no-config", "--format", "sarif", "--output"])
        .arg(&report)
        .arg(FAILURES)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    validate_sarif(&report, dir.path());
}

#[test]
fn chat_check_failures_are_in_the_report_too() {
    let out = prefixlint()
        .args([
            "check",
            "--no-config",
            "--format",
            "json",
            "--chat-template",
            "fixtures/chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja",
            BROKEN,
            "tests/fixtures/failures/good.j2",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["errors"][0]["path"], BROKEN);
    assert_eq!(report["errors"][0]["line"], 3);
    assert_eq!(
        report["templates"][0]["path"],
        "tests/fixtures/failures/good.j2"
    );
}

#[test]
fn one_render_is_a_note_in_every_format() {
    let one = "tests/fixtures/failures/one-render.j2";
    for (format, expected) in [
        (
            "json",
            "\"notes\": [\n        \"one render cannot show a divergence",
        ),
        (
            "concise",
            "one-render.j2:1:1: note: one render cannot show a divergence",
        ),
        (
            "full",
            "note: tests/fixtures/failures/one-render.j2: one render cannot show",
        ),
        (
            "github",
            "::notice file=tests/fixtures/failures/one-render.j2,line=1,col=1,",
        ),
        ("sarif", "\"level\": \"note\""),
    ] {
        let out = prefixlint()
            .args(["check", "--no-config", "--format", format, one])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{format}: {}",
            text(&out.stderr)
        );
        let stdout = text(&out.stdout);
        assert!(stdout.contains(expected), "{format}: {stdout}");
    }
}

#[test]
fn an_empty_render_is_zero_percent_cacheable() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("empty.j2");
    std::fs::write(
        &template,
        "{# renders nothing #}\n{%- if false %}never{% endif -%}",
    )
    .unwrap();
    let out = prefixlint()
        .args(["check", "--no-config", "--format", "json"])
        .arg(&template)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let t = &report["templates"][0];
    assert_eq!(t["tokens"]["max"], 0, "{t}");
    assert_eq!(t["cacheable_percent"], 0.0);
    assert!(
        t["notes"][0]
            .as_str()
            .unwrap()
            .contains("every render is empty"),
        "{t}"
    );
}
