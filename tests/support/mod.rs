//! The one helper module of the integration tests (`tests/it` and `tests/heavy` each
//! include it): the binary with a clean environment, the tools the setup installs, the
//! test servers (`llama`, `vllm`, `router`, `fault_server`), the crate's own HTTP client for
//! talking to them (`http`), the tokenizer files (`tokenizers`) and the one seeded random
//! generator (`random`).
#![allow(dead_code)]

pub mod fault_server;
pub mod fleet;
pub mod http;
pub mod llama;
pub mod random;
pub mod router;
pub mod shared;
pub mod tokenizers;
pub mod vllm;

pub use random::Rng;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The integrations' fixtures (tests/it/integrations.rs, formats.rs).
pub const FIXTURES: &str = "tests/fixtures/integrations";

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Set on every child that may run `check` (the binary, pre-commit, the Action's steps, a
/// shell, Neovim): no test reads or writes a results cache it did not make
/// (tests/it/results_cache.rs removes it and names its own folder).
pub const NO_CACHE: (&str, &str) = ("PREFIXLINT_NO_CACHE", "1");

pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_prefixlint"))
}

/// The binary, run from the crate root with no CI environment leaking in, no colour, the
/// default width (100: no `COLUMNS` from the shell) and no results cache shared with other
/// tests or the user.
pub fn prefixlint() -> Command {
    let mut cmd = Command::new(binary());
    cmd.current_dir(repo_root())
        .env(NO_CACHE.0, NO_CACHE.1)
        .env("NO_COLOR", "1")
        .env_remove("COLUMNS")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY");
    cmd
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn run(cmd: &mut Command) -> Run {
    let out = cmd.output().expect("binary runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub fn check_json(args: &[&str]) -> (i32, serde_json::Value) {
    let r = run(prefixlint()
        .arg("check")
        .args(args)
        .args(["--format", "json", "--no-config"]));
    let json = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\n{}", r.stdout, r.stderr));
    (r.code, json)
}

/// The venv python that `scripts/test.sh` sets up; the tests that need it fail without it.
pub fn python() -> String {
    std::env::var("PREFIXLINT_TEST_PYTHON")
        .expect("PREFIXLINT_TEST_PYTHON is not set: run the tests with `bash scripts/test.sh`, which installs the Python venv")
}

/// The embedded default tokenizer, written out for tools that need a file.
pub fn builtin_tokenizer_file(dir: &Path) -> PathBuf {
    let path = dir.join("tokenizer.json");
    std::fs::write(&path, prefixlint::tokenize::builtin_json().unwrap()).unwrap();
    path
}

/// The one way a test may do less than it says: outside CI it notes why on stderr and goes
/// on; where `CI` is set (`true`, `1`, anything but empty, `0` or `false`) it fails, since a
/// skip in CI is a failure. Every call site is listed in tests/README.md with its condition
/// (tests/it/honest_tests.rs checks the list against the code).
pub fn skip_outside_ci(why: &str) {
    let ci = std::env::var("CI").is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false"));
    assert!(!ci, "{why}: a test may not skip where CI is set");
    eprintln!("skipped (not in CI): {why}");
}

/// Miette wraps long lines and draws gutters; this joins them back for `contains` checks.
pub fn flat(text: &str) -> String {
    text.split_whitespace()
        .filter(|w| *w != "│")
        .collect::<Vec<_>>()
        .join(" ")
}

/// A Python client from the test venv. Missing is a failure, not a skip: scripts/test.sh
/// installs it (scripts/requirements/integrations.txt).
pub fn python_tool(name: &str) -> PathBuf {
    let bin = match std::env::var_os("PREFIXLINT_TEST_PYTHON") {
        Some(python) => PathBuf::from(python).parent().unwrap().to_path_buf(),
        None => repo_root().join(".venv/bin"),
    };
    let path = bin.join(name);
    assert!(
        path.is_file(),
        "{} is missing: run `bash scripts/test.sh`, which installs it",
        path.display()
    );
    path
}

/// Microsoft's SARIF multitool, installed into .tools/ by scripts/setup.d/20-node-tools.sh.
pub fn sarif_multitool() -> PathBuf {
    let path = std::env::var_os("PREFIXLINT_TEST_SARIF_MULTITOOL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            repo_root().join(".tools/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool")
        });
    assert!(
        path.is_file(),
        "the SARIF multitool is missing at {}: run `bash scripts/test.sh`, which installs it",
        path.display()
    );
    path
}

/// Validates a SARIF report with the real multitool (SARIF and GitHub ingestion rules) and
/// fails on any error or warning it finds; returns its console output.
pub fn validate_sarif(report: &Path, dir: &Path) -> String {
    let log = dir.join("validation.sarif");
    let validation = std::process::Command::new(sarif_multitool())
        .arg("validate")
        .arg(report)
        .args([
            "--rule-kind",
            "Gh;Sarif",
            "--level",
            "Error;Warning",
            "--output",
        ])
        .arg(&log)
        .current_dir(dir)
        .output()
        .unwrap();
    let console = text(&validation.stdout) + &text(&validation.stderr);
    assert!(validation.status.success(), "{console}");
    // The multitool exits 0 even with findings: read its own SARIF log.
    let log: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
    let problems: Vec<String> = log["runs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|run| run["results"].as_array().cloned().unwrap_or_default())
        .filter(|r| matches!(r["level"].as_str(), None | Some("error") | Some("warning")))
        .map(|r| format!("{}: {}", r["ruleId"], r["message"]))
        .collect();
    assert!(problems.is_empty(), "{problems:#?}\n{console}");
    console
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A concurrent replay's predictions against what the server reported: `reported[k]` and
/// `timing[k]` (sent, ran, in seconds) belong to the report's k-th request. Prints the table
/// and holds the agreement to its floor: the replay was concurrent, and at least half the
/// requests exact. The sums are printed, not bounded: one race of two nearly simultaneous
/// requests moves a session's whole hit from one to the other, which on a replay of two
/// dozen requests swings the sums by a third (measured on llama.cpp at load 7).
pub fn assert_concurrent_agreement(
    report: &serde_json::Value,
    reported: &[u64],
    timing: &[(f64, f64)],
    setup: &str,
) {
    let requests = report["requests"].as_array().unwrap();
    assert_eq!(requests.len(), reported.len());
    let (mut same, mut predicted_sum, mut reported_sum) = (0, 0, 0);
    let mut table = String::new();
    for ((r, &reported), &(sent, ran)) in requests.iter().zip(reported).zip(timing) {
        let predicted = r["predicted_cached_tokens"].as_u64().unwrap();
        same += usize::from(predicted == reported);
        predicted_sum += predicted;
        reported_sum += reported;
        table.push_str(&format!(
            "line {} {} sent {sent:.2} s, ran {ran:.2} s: predicted {predicted} reported {reported}\n",
            r["line"], r["session"]
        ));
    }
    let peak = report["summary"]["peak_running"].as_u64().unwrap();
    eprintln!(
        "concurrent replay, {setup}: {same} of {} requests exact; cached tokens predicted {predicted_sum}, reported {reported_sum}; peak {peak} running\n{table}",
        requests.len()
    );
    assert!(peak >= 2, "the replay was not concurrent:\n{table}");
    assert!(same * 2 >= requests.len(), "{table}");
}

/// `prefixlint simulate LOG --no-config --format json ARGS…` (the engine and its cache's
/// size in `args`): the JSON report of a run that must succeed.
pub fn simulate_json(log: &Path, args: &[&str]) -> serde_json::Value {
    let output = assert_cmd::Command::from_std(prefixlint())
        .arg("simulate")
        .arg(log)
        .args(["--no-config", "--format", "json"])
        .args(args)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{output:?}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}
