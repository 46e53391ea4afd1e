//! Issue 8: server faults in `measure`. Each gets a clear error naming the URL, exit 2,
//! within seconds, and the JSON report of what was measured before the fault is written.

use crate::support;

use assert_cmd::Command;
use serde_json::Value;
use std::time::{Duration, Instant};
use support::fault_server::{Fault, FaultServer, SSE_HEAD};

struct Outcome {
    code: i32,
    stderr: String,
    report: Value,
    elapsed: Duration,
}

/// Runs measure on the clean fixture against `url`; the JSON report goes to a file.
fn measure(url: &str, extra: &[&str]) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.json");
    let start = Instant::now();
    let output = Command::cargo_bin("prefixlint")
        .unwrap()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["measure", "fixtures/measure/clean.j2", "--server", url])
        .args([
            "--engine",
            "openai",
            "--model",
            "m",
            "--repeats",
            "1",
            "--no-config",
        ])
        .args(["--timeout", "2", "--connect-timeout", "2", "--output"])
        .arg(&out)
        .args(extra)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let report = std::fs::read_to_string(&out)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    Outcome {
        code: output.status.code().unwrap_or(-1),
        stderr: flatten(&String::from_utf8_lossy(&output.stderr)),
        report,
        elapsed: start.elapsed(),
    }
}

/// miette wraps long messages for the terminal: undo that, so messages match whole.
fn flatten(text: &str) -> String {
    text.replace('│', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Exit 2, the message, the URL, no panic, quick, and a report that records the error.
fn assert_fails(outcome: &Outcome, url: &str, message: &str) {
    let Outcome {
        code,
        stderr,
        report,
        elapsed,
    } = outcome;
    assert_eq!(*code, 2, "{stderr}");
    assert!(stderr.contains(url), "the error names {url}:\n{stderr}");
    assert!(stderr.contains(message), "expected `{message}`:\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(*elapsed < Duration::from_secs(20), "took {elapsed:?}");
    assert_eq!(
        report["version"], 1,
        "the report is written even when the run fails"
    );
    assert!(
        report["errors"][0].as_str().unwrap().contains(message),
        "{report}"
    );
}

fn fault(fault: Fault, message: &str) {
    let server = FaultServer::start(0, fault);
    let outcome = measure(&server.url, &[]);
    assert_fails(&outcome, &format!("{}/v1/completions", server.url), message);
}

#[test]
fn connection_refused() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let outcome = measure(&url, &[]);
    assert_fails(&outcome, &format!("{url}/v1/completions"), "cannot connect");
}

/// What a new user sees first when the server is not up: one error naming the URL, exit 2,
/// and nothing else (no server line, notes or TTFT model around it, no second copy).
#[test]
fn connection_refused_prints_only_the_error() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let output = Command::cargo_bin("prefixlint")
        .unwrap()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["measure", "fixtures/measure/clean.j2", "--server", &url])
        .args(["--no-config", "--connect-timeout", "2"])
        .env("NO_COLOR", "1")
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = flatten(&String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stdout, "", "nothing on stdout");
    assert_eq!(stderr.matches("cannot connect").count(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!("{url}/v1/completions")),
        "{stderr}"
    );
    let server_line = format!("server {url} ·");
    for noise in ["note:", "TTFT model", "openai", &server_line] {
        assert!(!stderr.contains(noise), "`{noise}` in {stderr}");
    }
}

#[test]
fn dns_failure() {
    let url = "http://prefixlint-no-such-host.invalid:1";
    let outcome = measure(url, &[]);
    assert_fails(&outcome, url, "cannot resolve host");
}

#[test]
fn first_byte_timeout() {
    fault(Fault::Silent, "timed out waiting for the first byte");
}

#[test]
fn slow_drip_stream_hits_the_request_deadline() {
    fault(
        Fault::Drip(Duration::from_millis(100)),
        "timed out reading the response",
    );
}

#[test]
fn http_4xx_with_body() {
    fault(
        Fault::Status(400, r#"{"error":"model `m` not found"}"#),
        "HTTP 400",
    );
    fault(
        Fault::Status(404, r#"{"error":"no such route"}"#),
        "no such route",
    );
}

#[test]
fn http_5xx_with_body() {
    fault(
        Fault::Status(503, r#"{"error":"loading model"}"#),
        "loading model",
    );
}

#[test]
fn non_sse_body() {
    fault(
        Fault::Raw("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"choices\":[]}".into()),
        "not an SSE stream",
    );
}

#[test]
fn not_http_at_all() {
    fault(Fault::Raw("SSH-2.0-OpenSSH_9.6\r\n\r\n".into()), "not HTTP");
}

#[test]
fn malformed_json_chunk() {
    fault(
        Fault::Raw(format!("{SSE_HEAD}data: {{\"choices\": [oops\n\n")),
        "is not valid JSON",
    );
}

#[test]
fn stream_truncated_mid_event() {
    fault(
        Fault::Raw(format!("{SSE_HEAD}data: {{\"choices\":[{{\"text\"")),
        "truncated in the middle of an event",
    );
}

#[test]
fn stream_without_done() {
    fault(
        Fault::Raw(format!(
            "{SSE_HEAD}data: {{\"choices\":[{{\"text\":\"x\"}}]}}\n\n"
        )),
        "without `data: [DONE]`",
    );
}

#[test]
fn chunked_body_cut_short() {
    fault(
        Fault::Raw("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n40\r\ndata: {\"choices\"".into()),
        "closed early",
    );
}

#[test]
fn missing_usage_field() {
    fault(
        Fault::Raw(format!("{SSE_HEAD}data: {{\"choices\":[{{\"text\":\"x\",\"finish_reason\":\"length\"}}]}}\n\ndata: [DONE]\n\n")),
        "no cached-token count",
    );
}

#[test]
fn huge_response() {
    fault(Fault::Endless, "larger than");
}

#[test]
fn huge_non_sse_body() {
    fault(
        Fault::Raw("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 999999999999\r\n\r\n".into()),
        "larger than",
    );
}

#[test]
fn results_before_the_fault_are_kept() {
    // The warm-up and two template requests succeed, then the server fails.
    let server = FaultServer::start(3, Fault::Status(500, r#"{"error":"out of memory"}"#));
    let outcome = measure(&server.url, &[]);
    assert_fails(&outcome, &server.url, "out of memory");
    let requests = outcome.report["templates"][0]["requests"]
        .as_array()
        .unwrap();
    assert_eq!(requests.len(), 2, "{}", outcome.report);
    assert_eq!(requests[0]["phase"], "cold");
}

#[test]
fn thresholds_do_not_hide_errors() {
    let server = FaultServer::start(0, Fault::Status(500, "{}"));
    let outcome = measure(&server.url, &["--min-speedup", "2", "--fail-on-mismatch"]);
    assert_eq!(outcome.code, 2, "{}", outcome.stderr);
}

#[test]
fn bad_server_urls() {
    for (url, message) in [
        ("https://127.0.0.1:1", "https is not supported"),
        ("127.0.0.1:8000", "not an http:// URL"),
    ] {
        let outcome = measure(url, &[]);
        assert_eq!(outcome.code, 2, "{}", outcome.stderr);
        assert!(outcome.stderr.contains(message), "{}", outcome.stderr);
    }
}

#[test]
fn connect_timeout() {
    // A listener that never accepts: once its backlog is full the kernel drops new SYNs,
    // so a connect hangs until our --connect-timeout.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut held = Vec::new();
    let full = (0..4096).any(|_| {
        match std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
            Ok(stream) => {
                held.push(stream);
                false
            }
            Err(_) => true,
        }
    });
    assert!(full, "the accept backlog never filled");
    let url = format!("http://{addr}");
    let outcome = measure(&url, &[]);
    assert_fails(
        &outcome,
        &format!("{url}/v1/completions"),
        "connecting timed out",
    );
    drop(listener);
}
