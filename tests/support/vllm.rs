//! Real vLLM servers (CPU, the tiny random-weight Qwen3) for the tests, each bound to its own
//! core and shared by the whole test run (`super::shared`): the first test that needs a
//! server starts it, the servers a test names start at once, and a test that needs a
//! server's counters to itself holds its lock. Two test files that name the same server
//! (the same `Spec`) share it.
//!
//! Installed once per machine by `scripts/setup.d/60-vllm.sh` (docs/vllm.md). No skipping:
//! if vLLM is missing or a server cannot start, every test that needs it fails with the reason.
//! Each server lives under `serve.py`, which stops it when the run's process is gone
//! (`--exit-with`): when the run ends, fails or is killed, the servers go with it.

use super::shared;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// One server to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

impl Spec {
    /// The server's name in the run: one server per distinct spec.
    fn name(&self) -> String {
        let block = self
            .block_size
            .map_or("default".to_owned(), |b| b.to_string());
        let blocks = self
            .num_gpu_blocks_override
            .map_or("auto".to_owned(), |b| b.to_string());
        format!(
            "vllm-block-{block}-core-{}-kv-{}-blocks-{blocks}",
            self.core, self.kv_space_gib
        )
    }
}

pub struct VllmServer {
    pub url: String,
    pub spec: Spec,
    pub log: PathBuf,
    /// The lock file a test holds for as long as it needs the server's counters to itself.
    busy: PathBuf,
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

/// The servers `specs` names, started at once where this run has not started them yet, and
/// waited for (60-120 s each on a quiet core).
///
/// A server takes about 5 GB: under nextest, where the vLLM tests run one at a time (the
/// `vllm` test group of .config/nextest.toml), the servers this test does not name are
/// stopped first, so the run holds at most two. Under `cargo test` the files' tests may
/// overlap, so nothing is stopped: run one file at a time there.
pub fn start_all(specs: &[Spec]) -> Result<Vec<VllmServer>, String> {
    if shared::under_nextest() {
        let keep: Vec<String> = specs.iter().map(Spec::name).collect();
        stop_all_but(&keep);
    }
    let starting: Vec<_> = specs
        .iter()
        .map(|&spec| std::thread::spawn(move || shared_server(spec)))
        .collect();
    let mut servers = Vec::new();
    let mut failures = Vec::new();
    for started in starting {
        match started.join().expect("the starting thread") {
            Ok(server) => servers.push(server),
            Err(why) => failures.push(why),
        }
    }
    if failures.is_empty() {
        Ok(servers)
    } else {
        Err(failures.join("\n"))
    }
}

/// The run's server for `spec`, started by the first test that asks for it.
fn shared_server(spec: Spec) -> Result<VllmServer, String> {
    let name = spec.name();
    let made = shared::once_per_run(&name, || start(spec))?;
    let mut lines = made.lines();
    let (url, log) = (lines.next().expect("URL"), lines.next().expect("log"));
    Ok(VllmServer {
        url: url.to_owned(),
        spec,
        log: PathBuf::from(log),
        busy: shared::run_dir().join(format!("{name}.busy")),
    })
}

/// Stops this run's vLLM servers whose names are not in `keep` (their serve.py stops the
/// server's process group on SIGTERM); a later test that names one starts it again.
fn stop_all_but(keep: &[String]) {
    let dir = shared::run_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let file = entry.file_name().to_string_lossy().into_owned();
        let Some(name) = file.strip_suffix(".made") else {
            continue;
        };
        if !name.starts_with("vllm-") || keep.iter().any(|k| k == name) {
            continue;
        }
        let _lock = shared::lock(&dir.join(format!("{name}.lock")));
        let Ok(made) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        if let Some(pid) = made.lines().nth(2).and_then(|p| p.parse::<i32>().ok()) {
            // SAFETY: a signal to the serve.py this run started (its pid, written when it was).
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        let _ = std::fs::remove_file(entry.path());
    }
}

/// Starts `serve.py` for `spec`, in a process group of its own and owned by the run, and
/// waits for its port: `URL\nLOG\nPID` or why it did not start.
fn start(spec: Spec) -> Result<String, String> {
    let (python, model) = (python(), model());
    let mut command = Command::new(&python);
    command
        .arg(repo().join("tests/vllm_support/serve.py"))
        .arg("--model")
        .arg(&model)
        .args(["--core", &spec.core.to_string()])
        .args(["--kv-space", &spec.kv_space_gib.to_string()])
        .args(["--exit-with", &shared::run_owner().to_string()]);
    if let Some(block) = spec.block_size {
        command.args(["--block-size", &block.to_string()]);
    }
    if let Some(blocks) = spec.num_gpu_blocks_override {
        let usable_tokens = (blocks - 1) * spec.block_size.unwrap_or(128);
        command.args(["--num-gpu-blocks", &blocks.to_string()]);
        command.args(["--max-model-len", &usable_tokens.to_string()]);
    }
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start tests/vllm_support/serve.py: {e}"))?;
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
    let mut log = String::new();
    // serve.py gives up by itself after 600 s; this only guards against a hung pipe.
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(660)) {
        if let Some(path) = line.strip_prefix("LOG ") {
            log = path.to_owned();
        } else if let Some(port) = line.strip_prefix("PORT ") {
            return Ok(format!(
                "http://127.0.0.1:{}\n{log}\n{}",
                port.trim(),
                child.id()
            ));
        } else if let Some(why) = line.strip_prefix("FAILED ") {
            return Err(format!("vLLM {spec:?} did not start: {why}"));
        }
    }
    let _ = child.kill();
    Err(format!("vLLM {spec:?} never reported a port"))
}

impl VllmServer {
    /// This server to one test at a time (in any process of the run): its counters and TTFT
    /// histogram then move only with that test's requests.
    pub fn lock(&self) -> shared::Locked {
        shared::lock(&self.busy)
    }

    /// GETs `path` and returns the status and body.
    pub fn get(&self, path: &str) -> (u16, String) {
        super::http::get(&self.url, path)
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
        super::http::post(&self.url, path, Some(body))
    }

    /// Empties the prefix cache (vLLM's `/reset_prefix_cache`, served with
    /// `VLLM_SERVER_DEV_MODE=1`), so a run starts cold on a server that served earlier ones.
    pub fn reset_prefix_cache(&self) {
        let (status, body) = super::http::post(&self.url, "/reset_prefix_cache", None);
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
