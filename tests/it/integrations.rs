//! The integrations, each checked with its real client: Microsoft's SARIF multitool,
//! GitHub's workflow-command conventions, `--output`, `--baseline`, suppressions and config.
//! (pre-commit, zizmor and the action's shell steps are in tests/it/ci_clients.rs.)

use crate::support;

use serde_json::Value;
use std::path::Path;
use support::{prefixlint, text, validate_sarif, FIXTURES};

const TIMESTAMP_FIRST: &str = "tests/fixtures/integrations/timestamp-first.j2";
const CLEAN: &str = "tests/fixtures/integrations/clean.j2";

#[test]
fn sarif_passes_the_sarif_multitool_with_github_rules() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("prefixlint.sarif");
    let out = prefixlint()
        .args(["check", "--no-config", "--format", "sarif", "--output"])
        .arg(&report)
        .arg(FIXTURES)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "--output keeps stdout empty");

    let console = validate_sarif(&report, dir.path());
    assert!(console.contains("1 files scanned"), "{console}");

    // And the parts GitHub code scanning relies on.
    let sarif: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let run = &sarif["runs"][0];
    assert_eq!(sarif["version"], "2.1.0");
    let result = &run["results"][0];
    assert_eq!(result["ruleId"], "PL001");
    assert_eq!(
        result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "tests/fixtures/integrations/stale-suppressions.j2"
    );
    assert!(result["partialFingerprints"]["prefixlint/v1"].is_string());
    let rule_ids: Vec<&str> = run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert!(rule_ids.contains(&"PL001") && rule_ids.contains(&"PL009"));
}

#[test]
fn github_actions_environment_picks_annotations_and_writes_the_job_summary() {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("summary.md");
    std::fs::write(&summary, "# earlier step\n").unwrap();
    let out = prefixlint()
        .args(["check", "--no-config", TIMESTAMP_FIRST, CLEAN])
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("::group::tests/fixtures/integrations/timestamp-first.j2\n::error file=tests/fixtures/integrations/timestamp-first.j2,line=1,col=15,"),
        "{stdout}"
    );
    assert!(stdout.contains(",title=PL001 (volatile-before-stable)::tests/fixtures/integrations/timestamp-first.j2:1:15: "));
    let markdown = std::fs::read_to_string(&summary).unwrap();
    assert!(
        markdown.starts_with("# earlier step\n### prefixlint\n"),
        "appends: {markdown}"
    );
    assert!(markdown.contains(
        "| template | tokens | shared prefix | % cacheable | recoverable tokens | findings |"
    ));
    assert!(
        markdown.contains("| `tests/fixtures/integrations/clean.j2` |"),
        "{markdown}"
    );

    // An explicit --format wins over the environment.
    let out = prefixlint()
        .args([
            "check",
            "--no-config",
            "--format",
            "concise",
            TIMESTAMP_FIRST,
        ])
        .env("GITHUB_ACTIONS", "true")
        .output()
        .unwrap();
    assert!(
        text(&out.stdout).starts_with("tests/fixtures/integrations/timestamp-first.j2:1:15: PL001")
    );
}

#[test]
fn output_is_replaced_whole_and_names_the_file_on_error() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    std::fs::write(&report, "stale").unwrap();
    let out = prefixlint()
        .args(["check", "--no-config", "--format", "json", "-o"])
        .arg(&report)
        .arg(CLEAN)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(json["version"], 1);
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "no temporary file is left behind");

    let out = prefixlint()
        .args([
            "check",
            "--no-config",
            "--output",
            "/nonexistent-dir/report.json",
            CLEAN,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("/nonexistent-dir/report.json"));
}

/// A project in a temporary folder: `files` are (relative path, contents).
fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, contents) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
    dir
}

fn fixture(path: &str) -> String {
    std::fs::read_to_string(support::repo_root().join(path)).unwrap()
}

fn run_in(dir: &Path, args: &[&str]) -> std::process::Output {
    prefixlint().current_dir(dir).args(args).output().unwrap()
}

#[test]
fn baseline_fails_when_a_shared_prefix_shrinks_beyond_the_threshold() {
    let dir = project(&[("prompts/agent.j2", &fixture(CLEAN))]);
    let base = run_in(
        dir.path(),
        &[
            "check",
            "--no-config",
            "--format",
            "json",
            "-o",
            "base.json",
            "prompts",
        ],
    );
    assert_eq!(base.status.code(), Some(0), "{}", text(&base.stderr));

    // Unchanged: passes, and says so.
    let same = run_in(
        dir.path(),
        &[
            "check",
            "--no-config",
            "--format",
            "concise",
            "--baseline",
            "base.json",
            "prompts",
        ],
    );
    assert_eq!(same.status.code(), Some(0), "{}", text(&same.stderr));
    assert!(
        text(&same.stderr).contains("prompts/agent.j2: "),
        "{}",
        text(&same.stderr)
    );
    assert!(text(&same.stderr).contains("tokens, unchanged"));

    // The PR moves the clock to the top: the shared prefix collapses.
    std::fs::write(
        dir.path().join("prompts/agent.j2"),
        fixture(TIMESTAMP_FIRST),
    )
    .unwrap();
    // Silence the rules so that only the baseline decides the exit code.
    std::fs::write(
        dir.path().join("quiet.yaml"),
        "rules:\n  PL001: off\n  PL002: off\n",
    )
    .unwrap();
    let cut = run_in(
        dir.path(),
        &[
            "check",
            "--config",
            "quiet.yaml",
            "--format",
            "github",
            "--baseline",
            "base.json",
            "prompts",
        ],
    );
    let stderr = text(&cut.stderr);
    assert_eq!(cut.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("REGRESSED prompts/agent.j2: "), "{stderr}");
    assert!(stderr.contains(" → 13 tokens (-"), "{stderr}");
    assert!(text(&cut.stdout).contains("::error file=prompts/agent.j2,title=prefixlint baseline::"));

    // A generous threshold lets the same change through.
    let lenient = run_in(
        dir.path(),
        &[
            "check",
            "--config",
            "quiet.yaml",
            "--baseline",
            "base.json",
            "--baseline-threshold",
            "100%",
            "prompts",
        ],
    );
    assert_eq!(lenient.status.code(), Some(0), "{}", text(&lenient.stderr));
}

#[test]
fn a_broken_baseline_is_an_error_that_points_into_it() {
    let dir = project(&[
        ("a.j2", "hello"),
        ("base.json", "{\"version\": 1,\n  \"templates\": 7}\n"),
    ]);
    let out = run_in(
        dir.path(),
        &["check", "--no-config", "--baseline", "base.json", "a.j2"],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("base.json: not a prefixlint JSON report"),
        "{stderr}"
    );
    assert!(stderr.contains("base.json:2:"), "{stderr}");

    let out = run_in(
        dir.path(),
        &["check", "--no-config", "--baseline-threshold", "3", "a.j2"],
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "--baseline-threshold needs --baseline"
    );
    let out = run_in(
        dir.path(),
        &[
            "check",
            "--no-config",
            "--baseline",
            "base.json",
            "--baseline-threshold",
            "lots",
            "a.j2",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("neither a token count"));
}

#[test]
fn per_path_ignores_and_no_ignores() {
    let config = "per_path_ignores:\n  \"legacy/**\": [PL001]\n";
    let dir = project(&[
        ("prefixlint.yaml", config),
        ("legacy/old.j2", &fixture(TIMESTAMP_FIRST)),
    ]);
    let out = run_in(dir.path(), &["check", "--format", "concise", "legacy"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let out = run_in(
        dir.path(),
        &["check", "--format", "concise", "--no-ignores", "legacy"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains("legacy/old.j2:1:15: PL001"));

    std::fs::write(
        dir.path().join("prefixlint.yaml"),
        "per_path_ignores:\n  \"legacy/**\": [PL404]\n",
    )
    .unwrap();
    let out = run_in(dir.path(), &["check", "legacy"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr)
            .contains("prefixlint.yaml: unknown rule `PL404` under `per_path_ignores: legacy/**`"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn suppression_rules_follow_config_severities() {
    let dir = project(&[
        (
            "prefixlint.yaml",
            "rules:\n  unused-suppression: off\n  PL010: error\n",
        ),
        (
            "t.j2",
            &fixture("tests/fixtures/integrations/stale-suppressions.j2"),
        ),
    ]);
    let out = run_in(dir.path(), &["check", "--format", "json", "t.j2"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let diagnostics = report["templates"][0]["diagnostics"].as_array().unwrap();
    assert!(
        diagnostics.iter().all(|d| d["rule"] != "PL009"),
        "{diagnostics:?}"
    );
    let pl010 = diagnostics
        .iter()
        .find(|d| d["rule"] == "PL010")
        .expect("PL010 reported");
    assert_eq!(
        (pl010["line"].as_u64(), pl010["column"].as_u64()),
        (Some(1), Some(25))
    );
    assert_eq!(pl010["severity"], "error");
}
