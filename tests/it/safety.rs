//! Safety properties of `check`: it never writes to the user's tree, an interrupted run
//! leaves nothing behind, and the sandbox limits hold and follow the config.

use crate::support;

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::*;

/// Every file under `root` (links not followed) with its SHA-256 and mode.
fn tree_digest(root: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    for entry in walkdir::WalkDir::new(root).sort_by_file_name() {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(root).unwrap().to_path_buf();
        let meta = entry.path().symlink_metadata().unwrap();
        let digest = if meta.is_file() {
            format!("{:x}", Sha256::digest(fs::read(entry.path()).unwrap()))
        } else if meta.file_type().is_symlink() {
            format!("-> {}", fs::read_link(entry.path()).unwrap().display())
        } else {
            "dir".into()
        };
        #[cfg(unix)]
        let mode = {
            use std::os::unix::fs::PermissionsExt;
            meta.permissions().mode()
        };
        #[cfg(not(unix))]
        let mode = meta.permissions().readonly() as u32;
        out.insert(rel, format!("{digest} {mode:o}"));
    }
    out
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let target = to.join(entry.path().strip_prefix(from).unwrap());
        if entry.file_type().is_dir() {
            fs::create_dir_all(&target).unwrap();
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn check_never_writes_to_the_checked_tree() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("fixtures");
    copy_dir(&repo_root().join("fixtures"), &tree);
    let before = tree_digest(&tree);
    for format in ["full", "concise", "json"] {
        let r = run(prefixlint().current_dir(dir.path()).args([
            "check",
            "--no-config",
            "--format",
            format,
            "fixtures",
        ]));
        assert!(r.code == 0 || r.code == 1 || r.code == 2, "{}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    }
    assert_eq!(before, tree_digest(&tree), "check changed the fixture tree");
    let entries: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        entries,
        vec!["fixtures"],
        "check left files beside the tree"
    );
}

/// Ctrl-C mid-run: the process ends promptly and leaves no file behind (check writes only
/// to stdout and stderr, so there is nothing partial to clean up).
#[cfg(unix)]
#[test]
fn an_interrupted_run_leaves_no_files() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("prompts");
    fs::create_dir_all(&tree).unwrap();
    // Enough work that the signal lands mid-run.
    for n in 0..200 {
        fs::write(
            tree.join(format!("t{n}.j2")),
            format!("Stable text {n}.\n{{{{ question }}}}\n"),
        )
        .unwrap();
    }
    let before = tree_digest(dir.path());
    let mut child = prefixlint()
        .current_dir(dir.path())
        .args(["check", "--no-config", "prompts"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "check ignored Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        before,
        tree_digest(dir.path()),
        "an interrupted run left files"
    );
}

fn write_project(config: &str, template: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join(".git")).unwrap();
    fs::write(dir.path().join("prefixlint.yaml"), config).unwrap();
    fs::write(dir.path().join("t.j2"), template).unwrap();
    fs::write(dir.path().join("t.samples.yaml"), "- n: 1\n- n: 2\n").unwrap();
    dir
}

fn run_in(dir: &tempfile::TempDir) -> Run {
    run(prefixlint()
        .current_dir(dir.path())
        .args(["check", "--format", "json", "t.j2"]))
}

#[test]
fn the_fuel_limit_holds_and_config_changes_it() {
    // ~20,000 loop iterations: fine under the default fuel, stopped by a small one.
    let template = "{% for i in range(20000) %}{% endfor %}Stable.\n{{ n }}\n";
    let dir = write_project("", template);
    let r = run_in(&dir);
    assert_eq!(r.code, 0, "{}", r.stderr);
    fs::write(
        dir.path().join("prefixlint.yaml"),
        "limits:\n  fuel: 1000\n",
    )
    .unwrap();
    let r = run_in(&dir);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(
        r.stderr.contains("out of fuel") && r.stderr.contains("t.j2:1:"),
        "{}",
        r.stderr
    );
}

#[test]
fn the_recursion_limit_holds_and_config_changes_it() {
    let template =
        "{% macro down(k) %}{% if k > 0 %}{{ down(k - 1) }}{% endif %}{% endmacro %}{{ down(15) }}Stable.\n{{ n }}\n";
    // Each macro call costs minijinja several levels: 15 calls fit in the default 100.
    let dir = write_project("", template);
    let r = run_in(&dir);
    assert_eq!(r.code, 0, "{}", r.stderr);
    fs::write(
        dir.path().join("prefixlint.yaml"),
        "limits:\n  recursion: 10\n",
    )
    .unwrap();
    let r = run_in(&dir);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(
        r.stderr.contains("recursion") && r.stderr.contains("t.j2:1:"),
        "{}",
        r.stderr
    );
}

#[test]
fn the_output_limit_holds_and_config_changes_it() {
    let template = "{{ 'x' * 5000 }}\nStable.\n{{ n }}\n";
    let dir = write_project("", template);
    assert_eq!(run_in(&dir).code, 0);
    fs::write(
        dir.path().join("prefixlint.yaml"),
        "limits:\n  max_output_bytes: 1000\n",
    )
    .unwrap();
    let r = run_in(&dir);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(
        r.stderr.contains("limits.max_output_bytes") && r.stderr.contains("t.j2"),
        "{}",
        r.stderr
    );
}

#[test]
fn templates_see_no_environment_variables() {
    // Every way a Jinja template might reach the environment, with a secret set.
    for probe in [
        "{{ env }}",
        "{{ environ }}",
        "{{ PREFIXLINT_SECRET }}",
        "{{ os.environ }}",
        "{{ self.__init__.__globals__ }}",
        "{{ lookup('env', 'PREFIXLINT_SECRET') }}",
    ] {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("t.j2"), format!("{probe}\n")).unwrap();
        fs::write(dir.path().join("t.samples.yaml"), "- {}\n- {}\n").unwrap();
        let check = |config: &[&str]| {
            run(prefixlint()
                .current_dir(dir.path())
                .env("PREFIXLINT_SECRET", "hunter2")
                .arg("check")
                .args(config)
                .args(["--format", "json", "t.j2"]))
        };
        // Lenient (the default) renders an undefined name as nothing: still no secret.
        let r = check(&["--no-config"]);
        assert!(
            !r.stdout.contains("hunter2") && !r.stderr.contains("hunter2"),
            "{probe} leaked the environment"
        );
        // Strict shows that the name is undefined, not merely empty.
        fs::write(dir.path().join("strict.yaml"), "undefined: strict\n").unwrap();
        let r = check(&["--config", "strict.yaml"]);
        assert!(
            !r.stdout.contains("hunter2") && !r.stderr.contains("hunter2"),
            "{probe} leaked the environment"
        );
        assert_eq!(
            r.code, 2,
            "{probe} should be an undefined error: {}",
            r.stdout
        );
    }
}
