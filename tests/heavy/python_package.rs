//! The Python package (issue 30, docs/python.md): the wheel built with maturin from this tree,
//! installed into a fresh venv, gives the `prefixlint` command and the module; its tests
//! (python/tests/, pytest) compare both with the cargo-built binary. Then the same wheel runs
//! the partitioned audit on Ray Data in local mode (python/tests/test_ray.py).
//!
//! Costs: the wheel's build (pyo3 and the cdylib on the already built library, dev profile),
//! a venv with pytest, and the tests' audits; Ray's venv is installed once by
//! scripts/setup.d/70-ray.sh.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use support::{binary, python_tool, repo_root, NO_CACHE};

/// The wheel, built once for the run (its tests may run in processes of their own) into the
/// run's folder.
fn wheel() -> &'static Path {
    static WHEEL: OnceLock<PathBuf> = OnceLock::new();
    WHEEL.get_or_init(|| {
        let built = support::shared::once_per_run("wheel", || {
            let out = support::shared::run_dir().join("wheel");
            let built = Command::new(python_tool("maturin"))
                .current_dir(repo_root())
                .args([
                    "build",
                    "--locked",
                    "--manifest-path",
                    "python/Cargo.toml",
                    "-o",
                ])
                .arg(&out)
                .output()
                .expect("maturin runs");
            if !built.status.success() {
                return Err(format!(
                    "maturin build failed:\n{}",
                    String::from_utf8_lossy(&built.stderr)
                ));
            }
            let wheel = std::fs::read_dir(&out)
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.extension().is_some_and(|e| e == "whl"))
                .expect("maturin wrote a wheel");
            Ok(wheel.to_string_lossy().into_owned())
        });
        PathBuf::from(built.unwrap_or_else(|why| panic!("{why}")))
    })
}

/// The pin of `package` in a requirements file.
fn pinned(file: &str, package: &str) -> String {
    let text = std::fs::read_to_string(repo_root().join(file)).unwrap();
    text.lines()
        .find(|l| l.starts_with(&format!("{package}==")))
        .unwrap_or_else(|| panic!("{file} pins {package}"))
        .to_owned()
}

/// pytest over `tests` with `python`; the summary line it closes with.
fn pytest(python: &Path, tests: &str, extra_path: Option<&Path>) -> String {
    let mut cmd = Command::new(python);
    cmd.current_dir(repo_root())
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", tests])
        .env("PREFIXLINT_BIN", binary())
        .env(NO_CACHE.0, NO_CACHE.1)
        .env("NO_COLOR", "1");
    if let Some(path) = extra_path {
        cmd.env("PYTHONPATH", path);
    }
    let run = cmd.output().expect("pytest runs");
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success(),
        "pytest {tests} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let last = stdout.lines().last().unwrap_or_default().to_owned();
    assert!(
        last.contains(" passed") && !last.contains("skipped"),
        "{last}"
    );
    last
}

#[test]
fn the_wheel_gives_the_command_and_the_module_in_a_fresh_venv() {
    let wheel = wheel();
    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().join("venv");
    let python3 = std::env::var("PREFIXLINT_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let made = Command::new(&python3)
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .unwrap();
    assert!(made.success(), "python -m venv");
    let python = venv.join("bin/python");
    let installed = Command::new(&python)
        .args(["-m", "pip", "install", "-q"])
        .arg(wheel)
        .arg(pinned("scripts/requirements/python-package.txt", "pytest"))
        .output()
        .unwrap();
    assert!(
        installed.status.success(),
        "pip install:\n{}",
        String::from_utf8_lossy(&installed.stderr)
    );
    assert!(venv.join("bin/prefixlint").is_file(), "the console script");
    let summary = pytest(&python, "python/tests/test_api.py", None);
    eprintln!("python/tests/test_api.py: {summary}");
}

#[test]
fn ray_data_partitioned_audit_equals_the_command() {
    let ray_python = std::env::var_os("PREFIXLINT_RAY_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("PREFIXLINT_RAY_PYTHON (unset)"));
    assert!(
        ray_python.is_file(),
        "Ray's venv is missing at {}: run `bash scripts/test.sh` (scripts/setup.d/70-ray.sh installs it)",
        ray_python.display()
    );
    // The wheel goes into a folder of its own on PYTHONPATH: Ray's venv is shared, and left
    // as it is.
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    let installed = Command::new(&ray_python)
        .args(["-m", "pip", "install", "-q", "--no-deps", "--target"])
        .arg(&site)
        .arg(wheel())
        .output()
        .unwrap();
    assert!(
        installed.status.success(),
        "pip install --target:\n{}",
        String::from_utf8_lossy(&installed.stderr)
    );
    let summary = pytest(&ray_python, "python/tests/test_ray.py", Some(&site));
    eprintln!("python/tests/test_ray.py: {summary}");
}
