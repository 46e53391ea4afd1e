//! Helpers shared by the integration tests: run the real binary from the repo root.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Set on every child that may run `check`: no test reads or writes a results cache it did
/// not make (tests/results_cache.rs removes it and names its own folder).
pub const NO_CACHE: (&str, &str) = ("PREFIXLINT_NO_CACHE", "1");

/// The binary with a clean environment: no colour, no config search surprises, no results
/// cache shared with other tests or the user.
pub fn prefixlint() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_prefixlint"));
    cmd.current_dir(repo_root())
        .env(NO_CACHE.0, NO_CACHE.1)
        .env("NO_COLOR", "1")
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
/// (tests/honest_tests.rs checks the list against the code).
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
