//! Real vLLM servers (CPU, the tiny random-weight Qwen3) for the tests, started once per test
//! binary, in parallel, each bound to its own core, and shared by that binary's tests.
//!
//! Installed once per machine by `scripts/setup.d/60-vllm.sh` (docs/vllm.md). No skipping:
//! if vLLM is missing or a server cannot start, every test that needs it fails with the reason.
//! Each server lives under `serve.py`, which stops it when its stdin closes: when the test
//! binary exits, panics or is killed, the servers go with it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{mpsc, Mutex, MutexGuard};
use std::time::Duration;

/// One server to start.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// `--block-size`; None keeps vLLM's CPU default (128).
    pub block_size: Option<u32>,
    /// The core its engine binds to (`VLLM_CPU_OMP_THREADS_BIND`).
    pub core: u32,
    /// `VLLM_CPU_KVCACHE_SPACE`, GiB.
    pub kv_space_gib: u32,
    /// `--num-gpu-blocks-override`: a cache of exactly this many blocks (the null block
    /// included), small enough to evict after a few requests. The server's max model length
    /// is then what the usable blocks hold (vLLM refuses to start with a longer one).
    pub num_gpu_blocks_override: Option<u32>,
}

pub struct VllmServer {
    pub url: String,
    pub spec: Spec,
    pub log: PathBuf,
    /// Held by a test for as long as it needs the server's counters to itself.
    busy: Mutex<()>,
    child: Mutex<Child>,
    /// serve.py stops the server when this closes.
    stdin: Option<ChildStdin>,
}

fn env_path(name: &str, what: &str) -> PathBuf {
    match std::env::var_os(name) {
        Some(path) => PathBuf::from(path),
        None => panic!(
            "${name} is not set: run `for s in scripts/setup.d/*.sh; do source $s; done` first; \
             scripts/setup.d/60-vllm.sh installs {what} (docs/vllm.md)"
        ),
    }
}

/// The vLLM venv's python and the tiny model, as scripts/setup.d/60-vllm.sh exports them.
pub fn python() -> PathBuf {
    let python = env_path("PREFIXLINT_TEST_VLLM_PYTHON", "vLLM");
    assert!(
        python.is_file(),
        "no {}: run scripts/setup.d/60-vllm.sh",
        python.display()
    );
    python
}

pub fn model() -> PathBuf {
    let model = env_path("PREFIXLINT_TEST_VLLM_MODEL", "the tiny Qwen3");
    assert!(
        model.join("config.json").is_file(),
        "no {}/config.json: run scripts/setup.d/60-vllm.sh",
        model.display()
    );
    model
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Starts every server at once and waits for all (60-120 s each on a quiet core).
pub fn start_all(specs: &[Spec]) -> Result<Vec<VllmServer>, String> {
    let (python, model) = (python(), model());
    let mut pending = Vec::new();
    for spec in specs {
        let mut command = Command::new(&python);
        command
            .arg(repo().join("tests/vllm_support/serve.py"))
            .arg("--model")
            .arg(&model)
            .args(["--core", &spec.core.to_string()])
            .args(["--kv-space", &spec.kv_space_gib.to_string()]);
        if let Some(block) = spec.block_size {
            command.args(["--block-size", &block.to_string()]);
        }
        if let Some(blocks) = spec.num_gpu_blocks_override {
            let usable_tokens = (blocks - 1) * spec.block_size.unwrap_or(128);
            command.args(["--num-gpu-blocks", &blocks.to_string()]);
            command.args(["--max-model-len", &usable_tokens.to_string()]);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start tests/vllm_support/serve.py: {e}"))?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let done = line.starts_with("PORT ") || line.starts_with("FAILED ");
                let _ = tx.send(line);
                if done {
                    return;
                }
            }
        });
        pending.push((*spec, child, stdin, rx));
    }
    let mut servers = Vec::new();
    let mut failures = Vec::new();
    for (spec, child, stdin, rx) in pending {
        let mut log = PathBuf::new();
        let mut port = None;
        // serve.py gives up by itself after 600 s; this only guards against a hung pipe.
        while let Ok(line) = rx.recv_timeout(Duration::from_secs(660)) {
            if let Some(path) = line.strip_prefix("LOG ") {
                log = PathBuf::from(path);
            } else if let Some(p) = line.strip_prefix("PORT ") {
                port = Some(p.trim().to_owned());
                break;
            } else if let Some(why) = line.strip_prefix("FAILED ") {
                failures.push(format!("vLLM {spec:?} did not start: {why}"));
                break;
            }
        }
        let mut server = VllmServer {
            url: String::new(),
            spec,
            log,
            busy: Mutex::new(()),
            child: Mutex::new(child),
            stdin: Some(stdin),
        };
        match port {
            Some(port) => {
                server.url = format!("http://127.0.0.1:{port}");
                servers.push(server);
            }
            None => {
                if failures.is_empty() {
                    failures.push(format!("vLLM {spec:?} never reported a port"));
                }
                drop(server);
            }
        }
    }
    if failures.is_empty() {
        Ok(servers)
    } else {
        Err(failures.join("\n"))
    }
}

impl VllmServer {
    /// This server to one test at a time: its counters and TTFT histogram then move only
    /// with that test's requests.
    pub fn lock(&self) -> MutexGuard<'_, ()> {
        self.busy.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// GETs `path` and returns the status and body.
    pub fn get(&self, path: &str) -> (u16, String) {
        http(&self.url, "GET", path, None)
    }

    /// The cache's geometry as the server's own /metrics states it: block size and
    /// `num_gpu_blocks`.
    pub fn cache_config(&self) -> (u64, u64) {
        let (status, text) = self.get("/metrics");
        assert_eq!(status, 200);
        let line = text
            .lines()
            .find(|l| l.starts_with("vllm:cache_config_info{"))
            .expect("vllm:cache_config_info");
        let label = |name: &str| -> u64 {
            let start = line.find(&format!(",{name}=\"")).unwrap() + name.len() + 3;
            line[start..].split('"').next().unwrap().parse().unwrap()
        };
        (label("block_size"), label("num_gpu_blocks"))
    }

    /// POSTs JSON and returns the status and body.
    pub fn post(&self, path: &str, body: &serde_json::Value) -> (u16, String) {
        http(&self.url, "POST", path, Some(body))
    }

    /// Empties the prefix cache (vLLM's `/reset_prefix_cache`, served with
    /// `VLLM_SERVER_DEV_MODE=1`), so a run starts cold on a server that served earlier ones.
    pub fn reset_prefix_cache(&self) {
        let (status, body) = http(&self.url, "POST", "/reset_prefix_cache", None);
        assert_eq!(status, 200, "{}/reset_prefix_cache: {body}", self.url);
    }

    /// `prefixlint measure --server THIS --format json --no-config EXTRA…`: exit code, JSON
    /// report, stderr.
    pub fn measure(&self, extra: &[&str]) -> (i32, serde_json::Value, String) {
        let output = assert_cmd::Command::cargo_bin("prefixlint")
            .unwrap()
            .current_dir(repo())
            .args(["measure", "--server", &self.url, "--format", "json"])
            .arg("--no-config")
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
}

/// A minimal HTTP/1.1 exchange (`Connection: close`), enough for vLLM's JSON and text answers.
pub fn http(
    url: &str,
    method: &str,
    path: &str,
    body: Option<&serde_json::Value>,
) -> (u16, String) {
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let body = body
        .map(|b| serde_json::to_vec(b).unwrap())
        .unwrap_or_default();
    let mut s = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("{url}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(&body).unwrap();
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer);
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("{url}{path}: not an HTTP answer: {answer}"));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    (status, body)
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 || size > rest.len() {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

impl Drop for VllmServer {
    fn drop(&mut self) {
        // Closing stdin makes serve.py stop the server's whole process group; a plain kill of
        // serve.py would leave vLLM running, so that is only the last resort.
        drop(self.stdin.take());
        let child = self.child.get_mut().unwrap_or_else(|e| e.into_inner());
        for _ in 0..300 {
            if !matches!(child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}
