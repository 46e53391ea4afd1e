//! Issue 17, "a new user's first hour": what a first run through `--help`, `rules` and
//! `--output` showed, each pinned on the real binary.

use crate::support;

use support::*;

/// `prefixlint rules` lists by code, wherever a rule file was registered.
#[test]
fn rules_are_listed_by_code() {
    let r = run(prefixlint().arg("rules"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let codes: Vec<&str> = r
        .stdout
        .lines()
        .map(|l| l.split_whitespace().next().unwrap_or(""))
        .collect();
    let mut sorted = codes.clone();
    sorted.sort();
    assert_eq!(codes, sorted);
    assert!(codes.len() >= 10, "{codes:?}");
    assert!(codes.iter().all(|c| c.starts_with("PL")), "{codes:?}");
}

/// `--fail-on` has no clap default (the config's `fail_on:` must still apply), so the help
/// says what the default is.
#[test]
fn fail_on_help_shows_its_default() {
    let r = run(prefixlint().args(["check", "--help"]));
    assert_eq!(r.code, 0);
    let help = flat(&r.stdout);
    assert!(
        help.contains("--fail-on <SEVERITY> The lowest severity that fails the run (exit 1): error, warning or info [default: `fail_on:` in the config, else warning]"),
        "{help}"
    );
    // And that default is what happens: a warning fails the run with no config and no flag.
    let warning = run(prefixlint().args([
        "check",
        "fixtures/divergence-before-stable/fail/name_top.j2",
        "--no-config",
        "--format",
        "concise",
    ]));
    assert_eq!(warning.code, 1, "{}", warning.stdout);
}

/// `check --output` under a given umask, or over an existing file; returns the file's mode.
#[cfg(unix)]
fn output_mode(umask: &str, existing_mode: Option<u32>) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    if let Some(mode) = existing_mode {
        std::fs::write(&report, "{}").unwrap();
        std::fs::set_permissions(&report, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    // The umask is the shell's, as for `prefixlint ... > report.json`.
    let out = std::process::Command::new("sh")
        .args([
            "-c",
            r#"umask "$UMASK" && exec "$PREFIXLINT_BIN" check fixtures/prompts/support_agent_fixed.j2 --no-config --format json --output "$REPORT""#,
        ])
        .current_dir(repo_root())
        .env("PREFIXLINT_BIN", env!("CARGO_BIN_EXE_prefixlint"))
        .env(NO_CACHE.0, NO_CACHE.1)
        .env("REPORT", &report)
        .env("UMASK", umask)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(json["version"], 1);
    std::fs::metadata(&report).unwrap().permissions().mode() & 0o777
}

/// `--output` gives the file the mode a shell redirect would: 0666 less the umask for a new
/// file, the existing mode for a file it replaces (it was always 0600).
#[cfg(unix)]
#[test]
fn output_file_mode_follows_the_umask_like_a_redirect() {
    assert_eq!(output_mode("022", None), 0o644);
    assert_eq!(output_mode("077", None), 0o600);
    assert_eq!(output_mode("002", None), 0o664);
    assert_eq!(output_mode("022", Some(0o640)), 0o640);
}
