//! Snapshots of the real binary's output in every `--format`, on tests/fixtures/integrations
//! (a timestamp-first template, a clean one, a suppressed one and one with stale suppressions).

use crate::support;

use support::{prefixlint, FIXTURES};

fn check(format: &str) -> (String, i32) {
    let out = prefixlint()
        .args(["check", "--no-config", "--format", format, FIXTURES])
        .output()
        .unwrap();
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8(out.stdout).unwrap(),
        out.status.code().unwrap(),
    )
}

/// The version changes every release; the snapshots should not.
fn snapshot_settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(
        &format!(r#""{}""#, regex_escape(env!("CARGO_PKG_VERSION"))),
        r#""[VERSION]""#,
    );
    settings
}

fn regex_escape(s: &str) -> String {
    s.replace('.', r"\.")
}

#[test]
fn concise() {
    let (out, code) = check("concise");
    assert_eq!(code, 1);
    insta::assert_snapshot!(out);
}

#[test]
fn full() {
    let (out, code) = check("full");
    assert_eq!(code, 1);
    insta::assert_snapshot!(out);
}

#[test]
fn json() {
    let (out, code) = check("json");
    assert_eq!(code, 1);
    insta::assert_snapshot!(out);
}

#[test]
fn sarif() {
    let (out, code) = check("sarif");
    assert_eq!(code, 1);
    snapshot_settings().bind(|| insta::assert_snapshot!(out));
}

#[test]
fn github() {
    let (out, code) = check("github");
    assert_eq!(code, 1);
    insta::assert_snapshot!(out);
}

#[test]
fn no_ignores_reports_suppressed_findings_and_no_suppression_rules() {
    let out = prefixlint()
        .args([
            "check",
            "--no-config",
            "--no-ignores",
            "--format",
            "concise",
            FIXTURES,
        ])
        .output()
        .unwrap();
    let out = String::from_utf8(out.stdout).unwrap();
    assert!(out.contains("suppressed.j2:2:15: PL001"), "{out}");
    assert!(!out.contains("PL009") && !out.contains("PL010"), "{out}");
}

#[test]
fn the_documented_problem_matcher_parses_every_concise_line() {
    let readme = std::fs::read_to_string(support::repo_root().join("docs/formats.md")).unwrap();
    let json_string = regex::Regex::new(r#""regexp": ("(?:[^"\\]|\\.)*")"#)
        .unwrap()
        .captures(&readme)
        .expect("docs/formats.md documents a problem matcher")[1]
        .to_owned();
    let pattern: String = serde_json::from_str(&json_string).unwrap();
    let matcher = regex::Regex::new(&pattern).unwrap();
    let (out, _) = check("concise");
    assert!(!out.is_empty());
    for line in out.lines() {
        let caps = matcher
            .captures(line)
            .unwrap_or_else(|| panic!("no match: {line}"));
        assert!(
            caps[1].starts_with("tests/fixtures/integrations/"),
            "{line}"
        );
        assert!(caps[4].starts_with("PL"), "{line}");
    }
}
