//! Starts the real SGLang router (`sglang-router` from PyPI, installed into the test venv by
//! scripts/setup.d/40-sglang-router.sh) in front of llama.cpp test servers.
//! No skipping: if the router cannot start, the test fails with the reason.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct Router {
    pub url: String,
    child: Child,
}

/// `PREFIXLINT_TEST_ROUTER`, else `sglang-router` beside the test venv's python.
fn executable() -> PathBuf {
    if let Some(path) = std::env::var_os("PREFIXLINT_TEST_ROUTER") {
        return PathBuf::from(path);
    }
    let python = std::env::var_os("PREFIXLINT_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python"));
    let router = python.with_file_name("sglang-router");
    assert!(
        router.is_file(),
        "no {}: run scripts/setup.d/40-sglang-router.sh (or set PREFIXLINT_TEST_ROUTER)",
        router.display()
    );
    router
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free local port")
}

impl Router {
    /// `policy` is the router's own: `round_robin`, `random`, `cache_aware`, `manual`.
    pub fn start(policy: &str, workers: &[&str]) -> Router {
        let port = free_port();
        let mut child = Command::new(executable())
            .args(["launch", "--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--prometheus-port", &free_port().to_string()])
            .args(["--policy", policy, "--log-level", "warn"])
            .arg("--worker-urls")
            .args(workers)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("cannot start sglang-router");
        let url = format!("http://127.0.0.1:{port}");
        // Two minutes: it checks its workers first, which takes long on a loaded machine.
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("sglang-router exited at start ({status}); run it by hand to see why");
            }
            if super::http::answers_ok(&url, "/v1/models") {
                return Router { url, child };
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("sglang-router on {url} never answered /v1/models");
    }
}

impl Drop for Router {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
