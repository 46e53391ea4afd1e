//! The release artifacts (issue 44), as `scripts/dist.sh` builds them on this machine: the
//! manylinux2014 wheel installs into a fresh venv and gives the command and the module; the
//! static musl binary runs and checks as the test build does; SHA256SUMS matches every
//! file; and the pre-commit mirror's first run installs from those files alone, with no
//! Rust build, and fails on a template with a clock at the top.
//!
//! Costs: two builds of the crate and its dependencies (the wheel for x86_64-unknown-linux-gnu
//! with zig, the binary for the musl target) in the profile PREFIXLINT_DIST_PROFILE names,
//! default `dist-test` (Cargo.toml: unoptimized, so CI builds in minutes; `dist` is the
//! release build), then a venv and a pre-commit environment.

use crate::support;

use sha2::Digest;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;
use support::{binary, python_tool, repo_root, text, NO_CACHE};

const VERSION: &str = env!("CARGO_PKG_VERSION");
const MUSL: &str = "x86_64-unknown-linux-musl";

fn profile() -> String {
    std::env::var("PREFIXLINT_DIST_PROFILE").unwrap_or_else(|_| "dist-test".into())
}

/// dist/ as `bash scripts/dist.sh` writes it, built once per test run for this file's tests
/// into a folder of their own (`support::shared`: under nextest each test is a process, and
/// two builds at once would share `.tools/dist-venv`).
fn dist() -> &'static Path {
    static DIST: OnceLock<PathBuf> = OnceLock::new();
    DIST.get_or_init(|| {
        let made = support::shared::once_per_run("dist", || {
            let out = support::shared::run_dir().join("dist");
            let started = Instant::now();
            let built = Command::new("bash")
                .arg("scripts/dist.sh")
                .current_dir(repo_root())
                .env("PREFIXLINT_DIST_DIR", &out)
                .env("PREFIXLINT_DIST_PROFILE", profile())
                .output()
                .map_err(|e| format!("bash: {e}"))?;
            if !built.status.success() {
                return Err(format!(
                    "scripts/dist.sh failed:\n{}\n{}",
                    text(&built.stdout),
                    text(&built.stderr)
                ));
            }
            eprintln!(
                "scripts/dist.sh ({} profile): {:.1} s",
                profile(),
                started.elapsed().as_secs_f64()
            );
            Ok(out.display().to_string())
        });
        PathBuf::from(made.unwrap_or_else(|why| panic!("{why}")))
    })
}

fn artifact(suffix: &str) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(dist())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_str().unwrap().ends_with(suffix))
        .collect();
    assert_eq!(found.len(), 1, "one *{suffix} in dist/: {found:?}");
    found.into_iter().next().unwrap()
}

fn sha256(path: &Path) -> String {
    sha2::Sha256::digest(std::fs::read(path).unwrap())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A command's exit code and stdout, with no results cache and no colour.
fn run(cmd: &mut Command) -> (i32, String) {
    let out = cmd
        .env(NO_CACHE.0, NO_CACHE.1)
        .env("NO_COLOR", "1")
        .env_remove("GITHUB_ACTIONS")
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), text(&out.stdout))
}

/// What the test build says about `args`, for comparison with the artifacts.
fn test_build(args: &[&str]) -> (i32, String) {
    run(Command::new(binary()).args(args).current_dir(repo_root()))
}

#[test]
fn sha256sums_lists_every_artifact_with_its_digest() {
    let sums = std::fs::read_to_string(dist().join("SHA256SUMS")).unwrap();
    let mut listed = BTreeSet::new();
    for line in sums.lines() {
        let (digest, name) = line.split_once("  ").expect("`DIGEST  NAME` lines");
        assert_eq!(digest, sha256(&dist().join(name)), "{name}");
        listed.insert(name.to_owned());
    }
    let files: BTreeSet<String> = std::fs::read_dir(dist())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name != "SHA256SUMS")
        .collect();
    assert_eq!(listed, files);
    assert_eq!(
        files,
        BTreeSet::from([
            format!(
                "prefixlint-{VERSION}-cp39-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl"
            ),
            format!("prefixlint-{VERSION}-{MUSL}.tar.gz"),
            "prefixlint.1".to_owned(),
        ])
    );
    // The man page is roff, with the commands in it.
    let man = std::fs::read_to_string(dist().join("prefixlint.1")).unwrap();
    assert!(
        man.starts_with(".ie") || man.contains("\n.TH prefixlint"),
        "{man}"
    );
    assert!(man.contains("completions"), "{man}");
    // coreutils agrees.
    let checked = Command::new("sha256sum")
        .args(["-c", "SHA256SUMS"])
        .current_dir(dist())
        .output()
        .unwrap();
    assert!(checked.status.success(), "{}", text(&checked.stdout));
}

#[test]
fn the_wheel_is_manylinux2014_and_installs_the_command_and_the_module() {
    let wheel = artifact(".whl");
    let shown = Command::new(repo_root().join(".tools/dist-venv/bin/auditwheel"))
        .arg("show")
        .arg(&wheel)
        .output()
        .unwrap();
    let shown = text(&shown.stdout);
    assert!(
        shown.contains("\"manylinux_2_17_x86_64\""),
        "auditwheel show: {shown}"
    );

    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().join("venv");
    let python3 = std::env::var("PREFIXLINT_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let made = Command::new(&python3)
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .unwrap();
    assert!(made.success(), "python -m venv");
    let installed = Command::new(venv.join("bin/python"))
        .args(["-m", "pip", "install", "-q", "--no-index"])
        .arg(&wheel)
        .output()
        .unwrap();
    assert!(installed.status.success(), "{}", text(&installed.stderr));

    // The command: what the test build says, byte for byte.
    let template = "tests/fixtures/integrations/timestamp-first.j2";
    let args = ["check", "--format", "concise", template];
    let (code, stdout) = run(Command::new(venv.join("bin/prefixlint"))
        .args(args)
        .current_dir(repo_root()));
    assert_eq!((code, stdout.as_str()), (1, test_build(&args).1.as_str()));
    assert!(stdout.contains("PL001"), "{stdout}");

    // The module: `prefixlint.check` is `check --format json --no-cache`.
    let (code, report) = run(Command::new(venv.join("bin/python"))
        .args([
            "-c",
            "import json, sys, prefixlint; print(json.dumps(prefixlint.check(sys.argv[1:])))",
            template,
        ])
        .current_dir(repo_root()));
    assert_eq!(code, 0, "{report}");
    let from_module: serde_json::Value = serde_json::from_str(&report).unwrap();
    let (_, json) = test_build(&["check", "--format", "json", "--no-cache", template]);
    let from_command: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(from_module, from_command);
}

#[test]
fn the_musl_binary_is_static_pie_and_checks_as_the_test_build() {
    let archive = artifact(".tar.gz");
    let dir = tempfile::tempdir().unwrap();
    let listing = Command::new("tar")
        .arg("-tzvf")
        .arg(&archive)
        .output()
        .unwrap();
    let listing = text(&listing.stdout);
    let folder = format!("prefixlint-{VERSION}-{MUSL}");
    let names: Vec<&str> = listing
        .lines()
        .map(|l| l.split_whitespace().last().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            format!("{folder}/"),
            format!("{folder}/README.md"),
            format!("{folder}/prefixlint")
        ],
        "{listing}"
    );
    assert!(
        listing.lines().all(|l| l.contains(" 0/0 ")),
        "owner 0: {listing}"
    );
    let unpacked = Command::new("tar")
        .arg("-xzf")
        .arg(&archive)
        .arg("-C")
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(unpacked.success());
    let musl = dir.path().join(&folder).join("prefixlint");

    let kind = Command::new("file").arg("-b").arg(&musl).output().unwrap();
    let kind = text(&kind.stdout);
    assert!(kind.contains("static-pie linked"), "{kind}");
    if profile() == "dist" {
        assert!(kind.contains(", stripped"), "{kind}");
    }

    // It runs with nothing from the environment, and says what the test build says about
    // the sample templates.
    for args in [
        &["check", "--format", "concise", "fixtures/prompts"][..],
        &[
            "check",
            "--format",
            "json",
            "--no-cache",
            "fixtures/prompts",
        ][..],
    ] {
        let (code, stdout) = run(Command::new(&musl)
            .args(args)
            .env_clear()
            .current_dir(repo_root()));
        let (want_code, want) = test_build(args);
        assert_eq!(code, want_code, "{args:?}");
        assert_eq!(stdout, want, "{args:?}");
        assert!(stdout.contains("PL001"), "{stdout}");
    }
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=test", "-c", "user.email=test@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The mirror hook as a user runs it: `.pre-commit-config.yaml` names the hook repository
/// (pre-commit-mirror/ committed as a repository of its own) at a commit, and pip sees only
/// dist/ (PIP_FIND_LINKS, PIP_NO_INDEX). There is no cargo on PATH, so a Rust build could
/// not even start: the first run installs the wheel and fails on the clock at the top of
/// the template; after the fix the hook passes.
#[test]
fn pre_commit_mirror_installs_from_dist_and_fails_on_a_clock_at_the_top() {
    let dist = dist();
    let work = tempfile::tempdir().unwrap();
    let hooks = work.path().join("prefixlint-pre-commit");
    copy_tree(&repo_root().join("pre-commit-mirror"), &hooks);
    git(&hooks, &["init", "-q"]);
    git(&hooks, &["add", "-A"]);
    git(&hooks, &["commit", "-q", "-m", "prefixlint mirror"]);
    let rev = git(&hooks, &["rev-parse", "HEAD"]).trim().to_owned();

    let project = work.path().join("project");
    std::fs::create_dir_all(project.join("prompts")).unwrap();
    let fixture = |name: &str| {
        std::fs::read_to_string(repo_root().join("tests/fixtures/integrations").join(name)).unwrap()
    };
    std::fs::write(
        project.join("prompts/agent.j2"),
        fixture("timestamp-first.j2"),
    )
    .unwrap();
    std::fs::write(project.join("README.md"), "not a template\n").unwrap();
    std::fs::write(
        project.join(".pre-commit-config.yaml"),
        format!(
            "repos:\n  - repo: {}\n    rev: {rev}\n    hooks:\n      - id: prefixlint\n",
            hooks.display()
        ),
    )
    .unwrap();
    git(&project, &["init", "-q"]);
    git(&project, &["add", "-A"]);

    let pre_commit = python_tool("pre-commit");
    let store = work.path().join("pre-commit-home");
    // PATH: pre-commit's venv and the system's tools; not ~/.cargo/bin.
    let path = format!(
        "{}:/usr/local/bin:/usr/bin:/bin",
        pre_commit.parent().unwrap().display()
    );
    let cargo_on_path = Command::new("sh")
        .args(["-c", "command -v cargo"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(!cargo_on_path.status.success(), "cargo is on {path}");
    let pre_commit_run = || {
        let started = Instant::now();
        let out = Command::new(&pre_commit)
            .args(["run", "--all-files", "--color", "never"])
            .current_dir(&project)
            .env_clear()
            .env("PATH", &path)
            .env("HOME", work.path())
            .env("PRE_COMMIT_HOME", &store)
            .env("PIP_FIND_LINKS", dist)
            .env("PIP_NO_INDEX", "1")
            .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
            .env("VIRTUALENV_NO_PERIODIC_UPDATE", "1")
            .env(NO_CACHE.0, NO_CACHE.1)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            text(&out.stdout) + &text(&out.stderr),
            started.elapsed().as_secs_f64(),
        )
    };

    let (code, output, first) = pre_commit_run();
    eprintln!("pre-commit mirror, first run (installs the hook from dist/): {first:.1} s");
    assert_eq!(code, 1, "{output}");
    assert!(output.contains("Failed"), "{output}");
    assert!(output.contains("prompts/agent.j2"), "{output}");
    assert!(output.contains("PL001"), "{output}");
    // The hook's environment is a Python one with the wheel's command in it.
    let envs: Vec<PathBuf> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .flat_map(|repo| std::fs::read_dir(repo).unwrap().map(|e| e.unwrap().path()))
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("py_env-")
        })
        .collect();
    assert_eq!(envs.len(), 1, "{envs:?}");
    assert!(envs[0].join("bin/prefixlint").is_file());

    std::fs::write(project.join("prompts/agent.j2"), fixture("clean.j2")).unwrap();
    git(&project, &["add", "-A"]);
    let (code, output, second) = pre_commit_run();
    eprintln!("pre-commit mirror, second run (installed): {second:.1} s");
    assert_eq!(code, 0, "{output}");
    assert!(output.contains("Passed"), "{output}");
}
