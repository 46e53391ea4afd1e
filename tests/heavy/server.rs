//! `prefixlint server`: the real binary over stdio, driven with raw JSON-RPC (the
//! robustness cases) and by a real editor, Neovim headless with a scripted Lua session
//! (installed by scripts/setup.d/50-neovim.sh).

use crate::support;

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

/// Long enough for a loaded CI machine; the tests never depend on it being short.
const WAIT: Duration = Duration::from_secs(120);

const STABLE: &str = "You are a careful research assistant. You answer questions about the documents the user provides, cite the passages you rely on, and say when the documents do not answer the question.\n";

/// A template whose first line is a clock value, before plenty of stable text.
fn timestamp_first() -> String {
    format!(
        "Current time: {{{{ now }}}}\n{}Question: {{{{ question }}}}\n",
        STABLE.repeat(4)
    )
}

/// The server as a child process, with its messages read on a thread.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    messages: Receiver<Value>,
    next_id: i64,
}

impl Server {
    fn start(root: &Path, debounce_ms: u64) -> Server {
        let mut child = Command::new(support::binary())
            .arg("server")
            .env(support::NO_CACHE.0, support::NO_CACHE.1)
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the server starts");
        let stdout = child.stdout.take().unwrap();
        let (sender, messages) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut length = None;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    if let Some(value) = line.strip_prefix("Content-Length: ") {
                        length = value.parse::<usize>().ok();
                    }
                }
                let mut body = vec![0; length.expect("a Content-Length header")];
                if reader.read_exact(&mut body).is_err() {
                    return;
                }
                let message: Value = serde_json::from_slice(&body).expect("the server sends JSON");
                if sender.send(message).is_err() {
                    return;
                }
            }
        });
        let mut server = Server {
            stdin: child.stdin.take(),
            child,
            messages,
            next_id: 1,
        };
        let root_uri = uri(root);
        let reply = server.request(
            "initialize",
            json!({"rootUri": root_uri, "capabilities": {}, "initializationOptions": {"debounceMs": debounce_ms}}),
        );
        assert!(
            reply["result"]["capabilities"]["hoverProvider"] == true,
            "{reply}"
        );
        server.notify("initialized", json!({}));
        server
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, message: Value) {
        let body = message.to_string();
        self.send_raw(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn request_async(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.request_async(method, params);
        self.wait_for(|m| m["id"] == id && m.get("method").is_none())
    }

    /// The next message that matches, skipping the others.
    fn wait_for(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        loop {
            match self.messages.recv_timeout(WAIT) {
                Ok(message) if wanted(&message) => return message,
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => panic!("no matching message from the server"),
                Err(RecvTimeoutError::Disconnected) => {
                    let mut stderr = String::new();
                    if let Some(mut err) = self.child.stderr.take() {
                        let _ = err.read_to_string(&mut stderr);
                    }
                    panic!("the server closed its output; stderr:\n{stderr}")
                }
            }
        }
    }

    fn diagnostics(&mut self, path: &Path) -> Vec<Value> {
        let wanted = uri(path);
        let message = self.wait_for(|m| {
            m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == wanted
        });
        message["params"]["diagnostics"].as_array().unwrap().clone()
    }

    fn open(&mut self, path: &Path, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri(path), "languageId": "jinja", "version": 1, "text": text}}),
        );
    }

    /// The server still answers: an unknown request gets MethodNotFound.
    fn assert_alive(&mut self) {
        let reply = self.request("prefixlint/ping", json!({}));
        assert_eq!(reply["error"]["code"], -32601, "{reply}");
    }

    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS in /proc/PID/status")
    }

    /// Shuts down as a client should, and checks the exit.
    fn shutdown(mut self) {
        let reply = self.request("shutdown", Value::Null);
        assert!(reply.get("error").is_none(), "{reply}");
        self.notify("exit", Value::Null);
        self.stdin = None;
        let output = self.child.wait_with_output().unwrap();
        assert!(output.status.success(), "{output:?}");
    }
}

fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    (dir, root)
}

fn codes(diagnostics: &[Value]) -> Vec<String> {
    diagnostics
        .iter()
        .map(|d| d["code"].as_str().unwrap_or("error").to_owned())
        .collect()
}

#[test]
fn diagnostics_match_check_and_link_the_rule_docs() {
    let (_dir, root) = workspace();
    let template = root.join("prompt.j2");
    std::fs::write(&template, timestamp_first()).unwrap();
    let mut server = Server::start(&root, 300);
    server.open(&template, &timestamp_first());
    let diagnostics = server.diagnostics(&template);
    assert_eq!(codes(&diagnostics), ["PL001"], "{diagnostics:?}");
    let d = &diagnostics[0];
    // The same finding `check --format json` reports, at the same place.
    let output = support::prefixlint()
        .current_dir(&root)
        .args(["check", "--format", "json", "prompt.j2"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let finding = &report["templates"][0]["diagnostics"][0];
    assert_eq!(d["code"], finding["rule"]);
    assert_eq!(finding["severity"], "error");
    assert_eq!(d["severity"], 1, "LSP's Error");
    let at = |line: &str, column: &str| json!({"line": finding[line].as_i64().unwrap() - 1, "character": finding[column].as_i64().unwrap() - 1});
    assert_eq!(d["range"]["start"], at("line", "column"));
    assert_eq!(d["range"]["end"], at("end_line", "end_column"));
    let message = d["message"].as_str().unwrap();
    assert!(
        message.starts_with(finding["message"].as_str().unwrap()),
        "{message}"
    );
    assert!(message.contains(&format!("\nhelp: {}", finding["help"].as_str().unwrap())));
    // SARIF's helpUri and the JSON report's url.
    assert_eq!(d["codeDescription"]["href"], finding["url"]);
    server.shutdown();
}

#[test]
fn render_and_samples_errors_are_placed_where_they_are() {
    let (_dir, root) = workspace();
    let template = root.join("prompt.j2");
    std::fs::write(&template, timestamp_first()).unwrap();
    let mut server = Server::start(&root, 300);
    // A syntax error in the unsaved buffer: at its line.
    server.open(&template, "Hello\n{{ name \n");
    let diagnostics = server.diagnostics(&template);
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    assert_eq!(
        diagnostics[0]["range"]["start"]["line"], 1,
        "{diagnostics:?}"
    );
    // A broken samples file (open, unsaved): the error is in the samples file.
    server.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(&template), "version": 2},
               "contentChanges": [{"text": timestamp_first()}]}),
    );
    let samples = root.join("prompt.samples.yaml");
    server.open(&samples, "- question: one\n- question: [unclosed\n");
    let in_samples = server.diagnostics(&samples);
    assert_eq!(in_samples.len(), 1, "{in_samples:?}");
    assert!(
        in_samples[0]["range"]["start"]["line"].as_i64().unwrap() >= 1,
        "{in_samples:?}"
    );
    // Fixed: the samples file is cleared.
    server.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(&samples), "version": 2},
               "contentChanges": [{"text": "- question: one\n- question: two\n"}]}),
    );
    assert_eq!(server.diagnostics(&samples), Vec::<Value>::new());
    server.shutdown();
}

#[test]
fn hover_shows_tokens_before_values_and_the_shared_prefix() {
    let (_dir, root) = workspace();
    let template = root.join("prompt.j2");
    let mut server = Server::start(&root, 300);
    server.open(&template, &timestamp_first());
    server.diagnostics(&template);
    let hover = server.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri(&template)}, "position": {"line": 0, "character": 17}}),
    );
    let text = hover["result"]["contents"]["value"].as_str().unwrap();
    assert!(text.contains("tokens come before it"), "{text}");
    assert!(
        text.contains("its output **differs** between renders"),
        "{text}"
    );
    assert!(text.contains("  3. `"), "a value per sample: {text}");
    assert!(text.contains("% cacheable"), "{text}");
    // Plain text is no expression.
    let none = server.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri(&template)}, "position": {"line": 2, "character": 3}}),
    );
    assert_eq!(none["result"], Value::Null, "{none}");
    server.shutdown();
}

#[test]
fn code_actions_suppress_fix_create_samples_and_mark_the_move_unsafe() {
    let (_dir, root) = workspace();
    let template = root.join("prompt.j2");
    let mut server = Server::start(&root, 300);
    server.open(&template, &timestamp_first());
    server.diagnostics(&template);
    let reply = server.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri(&template)},
               "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
               "context": {"diagnostics": []}}),
    );
    let actions = reply["result"].as_array().unwrap();
    let titles: Vec<&str> = actions
        .iter()
        .map(|a| a["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        [
            "Add `prefixlint: ignore[PL001]` with a reason",
            "Move line 1 to the end of the template (unsafe: changes what the model reads)",
            "Create prompt.samples.yaml from the inferred shape",
        ]
    );
    let edit = &actions[0]["edit"]["changes"][uri(&template)][0];
    assert_eq!(edit["range"]["start"], json!({"line": 0, "character": 23}));
    assert!(edit["newText"]
        .as_str()
        .unwrap()
        .starts_with("{# prefixlint: ignore[PL001] "));
    let create = &actions[2]["edit"]["documentChanges"];
    assert_eq!(create[0]["kind"], "create");
    assert_eq!(create[0]["uri"], uri(&root.join("prompt.samples.yaml")));
    assert!(create[1]["edits"][0]["newText"]
        .as_str()
        .unwrap()
        .contains("- question: "));
    server.shutdown();
}

#[test]
fn tojson_fix_for_a_dict_written_with_its_python_str() {
    let (_dir, root) = workspace();
    let template = root.join("tools.j2");
    let text = format!("Tools: {{{{ tools }}}}\n{}", STABLE.repeat(4));
    std::fs::write(
        root.join("tools.samples.yaml"),
        "- tools: {search: {q: str}, fetch: {url: str}}\n- tools: {fetch: {url: str}, search: {q: str}}\n",
    )
    .unwrap();
    let mut server = Server::start(&root, 300);
    server.open(&template, &text);
    let diagnostics = server.diagnostics(&template);
    assert_eq!(codes(&diagnostics), ["PL002"], "{diagnostics:?}");
    let reply = server.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri(&template)},
               "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
               "context": {"diagnostics": []}}),
    );
    let fix = reply["result"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["title"].as_str().unwrap().contains("tojson"))
        .expect("a tojson fix")
        .clone();
    assert_eq!(fix["isPreferred"], true);
    let edit = &fix["edit"]["changes"][uri(&template)][0];
    assert_eq!(edit["newText"], " | tojson");
    assert_eq!(edit["range"]["start"], json!({"line": 0, "character": 15}));
    // Applied (unsaved), the renders share their prefix again.
    server.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(&template), "version": 2},
               "contentChanges": [{"range": edit["range"], "text": " | tojson"}]}),
    );
    assert_eq!(server.diagnostics(&template), Vec::<Value>::new());
    server.shutdown();
}

#[test]
fn malformed_json_rpc_is_answered_and_survived() {
    let (_dir, root) = workspace();
    let mut server = Server::start(&root, 300);
    // Not JSON.
    server.send_raw(b"Content-Length: 9\r\n\r\n{not json");
    let reply = server.wait_for(|m| m.get("error").is_some());
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    assert_eq!(reply["id"], Value::Null);
    // No Content-Length.
    server.send_raw(b"Content-Type: x\r\n\r\n");
    let reply = server.wait_for(|m| m.get("error").is_some());
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    // JSON, but not a request: InvalidRequest with its id.
    server.send(json!({"jsonrpc": "2.0", "id": 77, "method": 5}));
    let reply = server.wait_for(|m| m["id"] == 77);
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    // A request with params of the wrong shape: InvalidParams.
    let reply = server.request("textDocument/hover", json!({"textDocument": 3}));
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    // A notification with bad params is dropped.
    server.notify("textDocument/didOpen", json!({"nope": true}));
    server.assert_alive();
    server.shutdown();
}

#[test]
fn unknown_methods_get_method_not_found_and_notifications_are_ignored() {
    let (_dir, root) = workspace();
    let mut server = Server::start(&root, 300);
    server.notify("prefixlint/unknownNotification", json!({"x": 1}));
    server.notify("$/cancelRequest", json!({"id": 999}));
    let reply = server.request("workspace/symbol", json!({"query": "x"}));
    assert_eq!(reply["error"]["code"], -32601, "{reply}");
    server.assert_alive();
    server.shutdown();
}

#[test]
fn a_document_that_is_not_utf8_is_reported_not_fatal() {
    let (_dir, root) = workspace();
    let template = root.join("prompt.j2");
    let mut server = Server::start(&root, 300);
    // Raw bytes that are not UTF-8 inside the JSON string of a didOpen.
    let mut body = format!(
        r#"{{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{{"textDocument":{{"uri":"{}","languageId":"jinja","version":1,"text":"Hello "#,
        uri(&template)
    )
    .into_bytes();
    body.extend_from_slice(b"\xff\xfe\xc3 {{ name }}\\n\"}}}");
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    frame.extend_from_slice(&body);
    server.send_raw(&frame);
    server.diagnostics(&template);
    // A file on disk that is not UTF-8, reported through a watched-file change.
    let latin1 = root.join("latin1.j2");
    std::fs::write(&latin1, b"Caf\xe9 {{ name }}\n").unwrap();
    server.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": uri(&latin1), "type": 2}]}),
    );
    let diagnostics = server.diagnostics(&latin1);
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    assert!(
        diagnostics[0]["message"]
            .as_str()
            .unwrap()
            .contains("UTF-8"),
        "{diagnostics:?}"
    );
    server.assert_alive();
    server.shutdown();
}

#[test]
fn a_client_that_disconnects_mid_request_ends_the_server_cleanly() {
    let (_dir, root) = workspace();
    let template = root.join("prompt.j2");
    // Mid-message: a header promising more than ever comes.
    let mut server = Server::start(&root, 300);
    server.send_raw(b"Content-Length: 500\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":5,");
    server.stdin = None;
    let output = server.child.wait_with_output().unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(!String::from_utf8_lossy(&output.stderr).contains("panicked"));
    // Mid-request: the check is running when the client goes.
    let mut server = Server::start(&root, 300);
    server.open(&template, &timestamp_first());
    server.request_async(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri(&template)}, "position": {"line": 0, "character": 17}}),
    );
    server.stdin = None;
    let output = server.child.wait_with_output().unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(!String::from_utf8_lossy(&output.stderr).contains("panicked"));
}

#[test]
fn a_template_that_exhausts_its_fuel_is_a_diagnostic() {
    let (_dir, root) = workspace();
    let template = root.join("spin.j2");
    let mut server = Server::start(&root, 300);
    server.open(
        &template,
        "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}\n",
    );
    let diagnostics = server.diagnostics(&template);
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    assert_eq!(diagnostics[0]["severity"], 1, "{diagnostics:?}");
    server.assert_alive();
    server.shutdown();
}

/// Templates that overflowed the stack, allocated gigabytes or grew a list past 3 GB
/// (issue 42 §1): each is an error diagnostic, and the server lives on.
#[test]
fn hostile_templates_are_diagnostics_and_the_server_survives() {
    let (_dir, root) = workspace();
    let mut server = Server::start(&root, 50);
    let doubling: String = (0..41)
        .map(|i| format!("{{% set l{} = l{i} + l{i} %}}", i + 1))
        .collect();
    for (name, text, says) in [
        (
            "minus.j2",
            format!("{{{{ {}1 }}}}\n", "-".repeat(20_000)),
            "nests more",
        ),
        (
            "trim.j2",
            format!("{{{{ 'x'{} }}}}\n", " | trim".repeat(200_000)),
            "nests more",
        ),
        (
            "width.j2",
            "{{ '{:>4000000000}'.format('x') }}\n".to_owned(),
            "width 4000000000",
        ),
        (
            "grow.j2",
            format!("{{% set l0 = [1, 2] %}}{doubling}{{{{ l41|length }}}}\n"),
            "fuel",
        ),
    ] {
        let template = root.join(name);
        server.open(&template, &text);
        let diagnostics = server.diagnostics(&template);
        assert_eq!(diagnostics.len(), 1, "{name}: {diagnostics:?}");
        assert_eq!(diagnostics[0]["severity"], 1, "{name}: {diagnostics:?}");
        let message = diagnostics[0]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{name}: {message}");
        server.assert_alive();
    }
    server.shutdown();
}

#[test]
fn a_thousand_edits_do_not_grow_memory() {
    let (_dir, root) = workspace();
    let template = root.join("prompt.j2");
    let mut server = Server::start(&root, 0);
    server.open(&template, &timestamp_first());
    server.diagnostics(&template);
    let text = timestamp_first();
    let position =
        json!({"textDocument": {"uri": uri(&template)}, "position": {"line": 0, "character": 17}});
    // Each edit is checked (a hover waits for a fresh check), alternating two texts.
    let edit = |server: &mut Server, n: usize| {
        let line = format!("Question {n}: {{{{ question }}}}\n");
        let end_line = text.lines().count() as i64;
        server.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri(&template), "version": n + 2},
                   "contentChanges": [{"range": {"start": {"line": end_line - 1, "character": 0},
                                                  "end": {"line": end_line, "character": 0}},
                                        "text": line}]}),
        );
        let reply = server.request("textDocument/hover", position.clone());
        assert!(reply.get("error").is_none(), "{reply}");
    };
    for n in 0..100 {
        edit(&mut server, n);
    }
    let before = server.rss_kib();
    for n in 100..1100 {
        edit(&mut server, n);
    }
    let after = server.rss_kib();
    eprintln!("VmRSS after 100 edits: {before} KiB; after 1,000 more: {after} KiB");
    assert!(
        after < before + 16 * 1024,
        "memory grew by {} KiB over 1,000 edits",
        after - before
    );
    server.assert_alive();
    server.shutdown();
}

fn nvim() -> PathBuf {
    let path = std::env::var_os("PREFIXLINT_TEST_NVIM")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|dir| dir.join("nvim"))
                    .find(|candidate| candidate.is_file())
            })
        });
    path.expect("Neovim is missing: run `bash scripts/test.sh`, which installs it (scripts/setup.d/50-neovim.sh)")
}

#[test]
fn neovim_session_sees_the_finding_clears_it_hovers_and_suppresses() {
    let (_dir, root) = workspace();
    let template = root.join("prompt.j2");
    std::fs::write(&template, timestamp_first()).unwrap();
    // What `check --fix --unsafe-fixes` writes for the same text, in a folder of its own.
    let cli_dir = root.join("cli");
    std::fs::create_dir(&cli_dir).unwrap();
    let fixed = cli_dir.join("prompt.j2");
    std::fs::write(&fixed, timestamp_first()).unwrap();
    let cli = Command::new(support::binary())
        .args([
            "check",
            "--fix",
            "--unsafe-fixes",
            "--no-config",
            "prompt.j2",
        ])
        .env(support::NO_CACHE.0, support::NO_CACHE.1)
        .current_dir(&cli_dir)
        .output()
        .unwrap();
    assert!(cli.status.code() == Some(0), "{cli:?}");
    assert_ne!(std::fs::read_to_string(&fixed).unwrap(), timestamp_first());
    let (stdout, stderr) = nvim_session(
        &root,
        &[
            ("PL_FILE", template.as_os_str()),
            ("PL_FIXED", fixed.as_os_str()),
        ],
    );
    for step in [
        "diagnostic: PL001 line 1: `{{ now }}` renders a clock value",
        "after the move action: no PL001, the text check --fix writes",
        "after moving line 1 to the end: no PL001",
        "after undo: PL001 again",
        "hover: - **4** tokens come before it",
        "action: Move line 1 to the end of the template (unsafe: changes what the model reads)",
        "line 1 now: Current time: {{ now }}{# prefixlint: ignore[PL001] reason: explain why this is acceptable #}",
        "after the suppression: no PL001",
    ] {
        assert!(stdout.contains(step), "missing `{step}` in:\n{stdout}\nstderr:\n{stderr}");
    }
    // The editor never saved: the file on disk is as it was.
    assert_eq!(
        std::fs::read_to_string(&template).unwrap(),
        timestamp_first()
    );
}

/// Runs tests/server/nvim_session.lua in a headless Neovim in `root`, with the session's
/// variables (`PL_FILE`, and `PL_LINE` and/or `PL_FIXED`); it must exit 0. Its stdout and
/// stderr.
fn nvim_session(root: &Path, session: &[(&str, &std::ffi::OsStr)]) -> (String, String) {
    let script = support::repo_root().join("tests/server/nvim_session.lua");
    let mut command = Command::new(nvim());
    command
        .args(["--headless", "-u", "NONE", "-i", "NONE", "-n", "-c"])
        .arg(format!("luafile {}", script.display()))
        .env("PL_BIN", support::binary())
        .env(support::NO_CACHE.0, support::NO_CACHE.1)
        .env("PL_ROOT", root)
        .env("XDG_STATE_HOME", root.join(".state"))
        .env("XDG_DATA_HOME", root.join(".data"))
        .current_dir(root)
        .stdin(Stdio::null());
    for (name, value) in session {
        command.env(name, value);
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    (stdout, stderr)
}

/// Answer rules long enough that a volatile line before them costs the cache.
const HOST_INSTRUCTIONS: &str = "Answer from the documents only, cite each one by its title, keep the answer under two hundred words, and say plainly when the documents do not answer the question. Never guess a number and never invent a title; write in the user's language and end with a one-line summary of the answer you gave.";

/// Runs tests/server/nvim_session.lua (its host session) on a host file whose template has a request id on
/// host line `line`: the real Neovim client must show PL001 there, at `column`, and lose it
/// after an unsaved edit moves the line down; the file on disk stays as it was.
fn neovim_host_session(file_name: &str, text: &str, line: usize, column: usize) {
    neovim_host_session_of(file_name, text, line, column, "{{ request_id }}");
}

/// [`neovim_host_session`] for a template whose request id is written `field` (its
/// format's way: `{request_id}` in a `{var}` template).
fn neovim_host_session_of(file_name: &str, text: &str, line: usize, column: usize, field: &str) {
    let (_dir, root) = workspace();
    let host = root.join(file_name);
    std::fs::write(&host, text).unwrap();
    let (stdout, stderr) = nvim_session(
        &root,
        &[
            ("PL_FILE", host.as_os_str()),
            ("PL_LINE", std::ffi::OsStr::new(&line.to_string())),
        ],
    );
    for step in [
        format!("diagnostic: PL001 line {line} column {column}: `{field}` renders a per-request identifier"),
        "after moving the line down: no PL001".to_owned(),
    ] {
        assert!(
            stdout.contains(&step),
            "missing `{step}` in:\n{stdout}\nstderr:\n{stderr}"
        );
    }
    assert_eq!(std::fs::read_to_string(&host).unwrap(), text);
}

/// A YAML host file in the real Neovim client: the finding of its embedded template is at
/// the host's line, and an unsaved edit moves it away.
#[test]
fn neovim_shows_an_embedded_templates_finding_at_the_yaml_hosts_line() {
    let text = format!(
        "name: support\nagent:\n  templates:\n    system_template: |\n      Request {{{{ request_id }}}}.\n      {HOST_INSTRUCTIONS} {HOST_INSTRUCTIONS}\n"
    );
    neovim_host_session("agent.yaml", &text, 5, 15);
}

/// A Python host file in the real Neovim client: the finding of the template in a
/// `*_PROMPT` constant (dedented as the code does) is at the host's line and column.
#[test]
fn neovim_shows_an_embedded_templates_finding_at_the_python_hosts_line() {
    let text = format!(
        "import textwrap\n\nSYSTEM_PROMPT = textwrap.dedent(\"\"\"\\\n    You are the support agent.\n    Request {{{{ request_id }}}}.\n    {HOST_INSTRUCTIONS} {HOST_INSTRUCTIONS}\n\"\"\")\n"
    );
    neovim_host_session("agent.py", &text, 5, 13);
}

/// A Python `{var}` prompt (a constant the module formats, as LangChain's default format
/// and `str.format` read it) in the real Neovim client: the finding is at the host's line
/// and the field's column.
#[test]
fn neovim_shows_a_var_prompts_finding_at_the_python_hosts_line() {
    let text = format!(
        "SYSTEM_PROMPT = \"\"\"You are the support agent.\nRequest {{request_id}}.\n{HOST_INSTRUCTIONS} {HOST_INSTRUCTIONS}\n\"\"\"\n\n\ndef build(request_id):\n    return SYSTEM_PROMPT.format(request_id=request_id)\n"
    );
    neovim_host_session_of("agent.py", &text, 2, 9, "{request_id}");
}

/// A TOML table of prompts in the real Neovim client: the finding of the `system` value
/// is at the TOML file's line, not in a render of the whole file.
#[test]
fn neovim_shows_a_toml_prompts_finding_at_the_toml_hosts_line() {
    let text = format!(
        "[review_prompt]\nsystem = \"\"\"\nYou review pull requests.\nRequest {{{{ request_id }}}}.\n{HOST_INSTRUCTIONS} {HOST_INSTRUCTIONS}\n\"\"\"\n\n[settings]\nmodel = \"small\"\n"
    );
    neovim_host_session("prompts.toml", &text, 4, 9);
}

#[test]
fn an_open_include_is_read_from_its_unsaved_buffer() {
    let (_dir, root) = workspace();
    let template = root.join("prompt.j2");
    let include = root.join("stable.md");
    let text = "{% include \"stable.md\" %}\nQuestion: {{ question }}\n";
    std::fs::write(&template, text).unwrap();
    std::fs::write(&include, STABLE.repeat(4)).unwrap();
    let mut server = Server::start(&root, 0);
    server.open(&template, text);
    assert_eq!(server.diagnostics(&template), Vec::<Value>::new());
    // The include gets a clock on its first line, unsaved: the template reports it.
    server.open(
        &include,
        &format!("Now: {{{{ now }}}}\n{}", STABLE.repeat(4)),
    );
    let diagnostics = server.diagnostics(&template);
    assert_eq!(codes(&diagnostics), ["PL001"], "{diagnostics:?}");
    server.shutdown();
}

#[test]
fn the_config_is_reloaded_and_its_errors_shown_in_it() {
    let (_dir, root) = workspace();
    let template = root.join("prompt.txt");
    let config = root.join("prefixlint.yaml");
    std::fs::write(&template, timestamp_first()).unwrap();
    let mut server = Server::start(&root, 0);
    // `*.txt` is no template under the default globs: nothing is published for it.
    server.open(&config, "");
    server.open(&template, &timestamp_first());
    // Saved with an include glob for it: the open template is checked.
    std::fs::write(&config, "include: [\"*.txt\"]\n").unwrap();
    server.notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": uri(&config)}, "text": "include: [\"*.txt\"]\n"}),
    );
    assert_eq!(codes(&server.diagnostics(&template)), ["PL001"]);
    // A typo in the unsaved config: an error in the config file.
    server.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(&config), "version": 2},
               "contentChanges": [{"text": "include: [\"*.txt\"]\nfail_onn: error\n"}]}),
    );
    let errors = server.diagnostics(&config);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["range"]["start"]["line"], 1, "{errors:?}");
    server.shutdown();
}

/// A `.prompty` file in the real Neovim client: the code action on its PL001 moves the line
/// into the last user turn, and the buffer then holds exactly what `check --fix
/// --unsafe-fixes` writes for the file (one implementation, two front ends).
#[test]
fn neovim_applies_the_move_into_a_prompty_files_last_user_turn() {
    let (_dir, root) = workspace();
    let fixtures = support::repo_root().join("fixtures/volatile-before-stable/fix-chat");
    let host = root.join("booking.prompty");
    let text = std::fs::read_to_string(fixtures.join("booking.prompty")).unwrap();
    std::fs::write(&host, &text).unwrap();
    // What the command line writes for it, in a folder of its own.
    let cli_dir = root.join("cli");
    std::fs::create_dir(&cli_dir).unwrap();
    let fixed = cli_dir.join("booking.prompty");
    std::fs::write(&fixed, &text).unwrap();
    let cli = Command::new(support::binary())
        .args([
            "check",
            "--fix",
            "--unsafe-fixes",
            "--no-config",
            "booking.prompty",
        ])
        .env(support::NO_CACHE.0, support::NO_CACHE.1)
        .current_dir(&cli_dir)
        .output()
        .unwrap();
    assert!(cli.status.code() == Some(0), "{cli:?}");
    assert_eq!(
        std::fs::read_to_string(&fixed).unwrap(),
        std::fs::read_to_string(fixtures.join("booking.prompty.fixed")).unwrap()
    );
    let (stdout, stderr) = nvim_session(
        &root,
        &[
            ("PL_FILE", host.as_os_str()),
            ("PL_LINE", std::ffi::OsStr::new("13")),
            ("PL_FIXED", fixed.as_os_str()),
        ],
    );
    for step in [
        "diagnostic: PL001 line 13",
        "action: Move line 13 to the end of the last user turn (unsafe: changes what the model reads)",
        "after the move action: no PL001, the text check --fix writes",
    ] {
        assert!(
            stdout.contains(step),
            "missing `{step}` in:\n{stdout}\nstderr:\n{stderr}"
        );
    }
    // The editor never saved: the file on disk is as it was.
    assert_eq!(std::fs::read_to_string(&host).unwrap(), text);
}

/// PL012's fix through the same code as `check --fix`: the code action adds the
/// breakpoint the rule advises, and once applied the finding is gone.
#[test]
fn breakpoint_fix_is_a_code_action() {
    let (_dir, root) = workspace();
    let template = root.join("body.j2");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/cache-breakpoint-placement/fail/no_breakpoint.j2"),
    )
    .unwrap();
    let mut server = Server::start(&root, 300);
    server.open(&template, &text);
    let diagnostics = server.diagnostics(&template);
    assert_eq!(codes(&diagnostics), ["PL012"], "{diagnostics:?}");
    let reply = server.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri(&template)},
               "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
               "context": {"diagnostics": []}}),
    );
    let fix = reply["result"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| {
            a["title"]
                .as_str()
                .unwrap()
                .contains("Add cache_control to system[0]")
        })
        .unwrap_or_else(|| panic!("a breakpoint fix: {reply:#}"))
        .clone();
    assert_eq!(fix["isPreferred"], true, "a safe fix: {fix:#}");
    let edit = &fix["edit"]["changes"][uri(&template)][0];
    assert_eq!(
        edit["newText"],
        r#", "cache_control": {"type": "ephemeral"}"#
    );
    server.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(&template), "version": 2},
               "contentChanges": [{"range": edit["range"], "text": edit["newText"]}]}),
    );
    assert_eq!(server.diagnostics(&template), Vec::<Value>::new());
    server.shutdown();
}
