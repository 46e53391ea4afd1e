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

    /// With extra arguments for llama_server.py (`--parallel 4`).
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

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
