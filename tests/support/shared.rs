//! What one test run makes once and all its tests share, across processes: cargo-nextest
//! runs each test in a process of its own, where a `static OnceLock` would make one vLLM
//! server (or one wheel) per test. The first test to ask makes the thing under a file lock
//! and writes down what the others need (a URL, a path); the rest wait on the lock and read
//! it. A run is nextest's (`NEXTEST_RUN_ID`) or, under `cargo test`, this test process.
//!
//! A server made this way belongs to the run, not to the test that started it: it is told
//! the run's process (`run_owner`) and stops when that process is gone.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// This run's folder under the target's test folder.
pub fn run_dir() -> PathBuf {
    let run = std::env::var("NEXTEST_RUN_ID")
        .unwrap_or_else(|_| format!("process-{}", std::process::id()));
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("shared")
        .join(run);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// Whether cargo-nextest runs this test (in a process of its own).
pub fn under_nextest() -> bool {
    std::env::var_os("NEXTEST_RUN_ID").is_some()
}

/// The process whose end is the run's: nextest's runner (the parent of every test
/// process) or, under `cargo test`, this process.
pub fn run_owner() -> u32 {
    if under_nextest() {
        std::os::unix::process::parent_id()
    } else {
        std::process::id()
    }
}

/// An exclusive lock on a file, held until dropped. `flock` locks belong to the open file,
/// so two threads of one process exclude each other as two processes do.
pub struct Locked(File);

pub fn lock(path: &Path) -> Locked {
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // SAFETY: flock on a descriptor this function owns; it only blocks until the lock is free.
    let result = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
    assert_eq!(
        result,
        0,
        "flock {}: {}",
        path.display(),
        std::io::Error::last_os_error()
    );
    Locked(file)
}

/// The value named `name` in this run: `make` runs in the first process to ask, the others
/// wait for it and read what it gave. A failure is kept too, so every test that needs the
/// thing fails with the first reason instead of trying again.
pub fn once_per_run(
    name: &str,
    make: impl FnOnce() -> Result<String, String>,
) -> Result<String, String> {
    let dir = run_dir();
    let _lock = lock(&dir.join(format!("{name}.lock")));
    let made = dir.join(format!("{name}.made"));
    let failed = dir.join(format!("{name}.failed"));
    if let Ok(value) = std::fs::read_to_string(&made) {
        return Ok(value);
    }
    if let Ok(why) = std::fs::read_to_string(&failed) {
        return Err(why);
    }
    let result = make();
    let (path, text) = match &result {
        Ok(value) => (made, value),
        Err(why) => (failed, why),
    };
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    result
}
