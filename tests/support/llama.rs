//! Starts the real llama.cpp server of `tests/measure_support/llama_server.py` and waits for it.
//! No skipping: if the server cannot start, the test fails with the reason.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub struct LlamaServer {
    pub url: String,
    child: Child,
    _stdin: ChildStdin,
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The venv python that scripts/setup.d/10-python.sh installs the server packages into.
fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("PREFIXLINT_TEST_PYTHON") {
        return PathBuf::from(python);
    }
    let venv = repo().join(".venv/bin/python");
    assert!(
        venv.is_file(),
        "no Python with xllamacpp: run scripts/test.sh (it installs .venv), or set PREFIXLINT_TEST_PYTHON"
    );
    venv
}

impl LlamaServer {
    pub fn start() -> LlamaServer {
        LlamaServer::start_with(&[])
    }

    /// With `llama_server.py` options, e.g. `--tokenizer DIR --pre llama-bpe` or `--parallel 4`.
    pub fn start_with(args: &[&str]) -> LlamaServer {
        let mut child = Command::new(python())
            .arg(repo().join("tests/measure_support/llama_server.py"))
            .arg("--exit-on-stdin-eof")
            .args(args)
            .current_dir(repo())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("cannot start tests/measure_support/llama_server.py");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(port) = line.strip_prefix("PORT ") {
                    let _ = tx.send(port.trim().to_owned());
                    return;
                }
            }
        });
        // The first start builds the model (seconds); later ones load it from .cache/.
        let port = match rx.recv_timeout(Duration::from_secs(300)) {
            Ok(port) => port,
            Err(_) => {
                let _ = child.kill();
                let status = child.wait().ok();
                panic!("the llama.cpp test server did not start (exit: {status:?}); run `python tests/measure_support/llama_server.py` to see why");
            }
        };
        let url = format!("http://127.0.0.1:{port}");
        wait_healthy(&url);
        LlamaServer {
            url,
            child,
            _stdin: stdin,
        }
    }
}

fn wait_healthy(url: &str) {
    for _ in 0..300 {
        if super::http::answers_ok(url, "/health") {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{url}/health never answered 200");
}

impl LlamaServer {
    /// Runs `prefixlint measure --server THIS --format json --no-config EXTRA…` from the crate
    /// root and returns its exit code, JSON report and stderr.
    pub fn measure(&self, extra: &[&str]) -> (i32, serde_json::Value, String) {
        let output = assert_cmd::Command::cargo_bin("prefixlint")
            .unwrap()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args([
                "measure",
                "--server",
                &self.url,
                "--format",
                "json",
                "--no-config",
            ])
            .args(extra)
            .timeout(Duration::from_secs(600))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        let json = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}\nstderr:\n{stderr}"));
        (output.status.code().unwrap_or(-1), json, stderr)
    }

    /// POSTs JSON and returns the answer's JSON body (anything but 200 fails the test).
    pub fn post(&self, path: &str, body: &serde_json::Value) -> serde_json::Value {
        super::http::post_json(&self.url, path, body)
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
