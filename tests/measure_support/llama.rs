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
    use std::io::{Read, Write};
    let addr = url.trim_start_matches("http://").to_owned();
    for _ in 0..300 {
        if let Ok(mut s) = std::net::TcpStream::connect(&addr) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            let mut answer = String::new();
            let _ = s.read_to_string(&mut answer);
            if answer.starts_with("HTTP/1.1 200") {
                return;
            }
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

    /// POSTs JSON and returns the answer's JSON body (the server closes the connection).
    pub fn post(&self, path: &str, body: &serde_json::Value) -> serde_json::Value {
        use std::io::{Read, Write};
        let addr = self.url.trim_start_matches("http://");
        let body = serde_json::to_vec(body).unwrap();
        let mut s = std::net::TcpStream::connect(addr).expect("server answers");
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(&body).unwrap();
        let mut answer = Vec::new();
        s.read_to_end(&mut answer).unwrap();
        let answer = String::from_utf8_lossy(&answer);
        let (head, body) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
        assert!(head.starts_with("HTTP/1.1 200"), "{path}: {head}\n{body}");
        let body = if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            dechunk(body)
        } else {
            body.to_owned()
        };
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: not JSON ({e}): {body}"))
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
