//! Native chat template renderers (`chat::native`) against minijinja on the logs the tests
//! use: the same text for every logged request they answer, and the same `audit` and
//! `simulate` reports with them on or off (`PREFIXLINT_NATIVE_TEMPLATES=0`).

use assert_cmd::Command;
use prefixlint::audit::input;
use prefixlint::chat::native::{self, Variables};
use prefixlint::chat::{json_value, message_value, ChatTemplate, ChatTemplateSource, ContextBase};
use prefixlint::render::clock::Clock;
use prefixlint::render::Limits;
use serde_json::{Map, Value as Json};
use std::io::Read;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every request log under the test fixtures (plain and gzipped JSONL).
fn logs() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.to_string_lossy();
            if path.is_dir() {
                walk(&path, out);
            } else if name.ends_with(".jsonl") || name.ends_with(".jsonl.gz") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&repo().join("tests/fixtures"), &mut out);
    walk(&repo().join("fixtures/audit"), &mut out);
    out.sort();
    out
}

fn lines(path: &Path) -> Vec<String> {
    let bytes = std::fs::read(path).unwrap();
    let mut text = String::new();
    if path.extension().is_some_and(|e| e == "gz") {
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut text)
            .unwrap();
    } else {
        text = String::from_utf8(bytes).unwrap();
    }
    text.lines().map(str::to_owned).collect()
}

/// The logged request bodies of a log's records, whatever API they were sent to.
fn bodies(path: &Path) -> Vec<input::RequestBody> {
    lines(path)
        .iter()
        .filter_map(|line| serde_json::from_str::<Json>(line).ok())
        .filter_map(|record| {
            let body = match input::detect(&record)? {
                input::InputFormat::Records => record.get("request")?.clone(),
                input::InputFormat::Batch => record.get("body")?.clone(),
                input::InputFormat::Body | input::InputFormat::Litellm => record,
                input::InputFormat::Otlp => return None,
            };
            input::parse_body(&body).ok()
        })
        .filter(|body| body.prompt.is_none())
        .collect()
}

#[test]
fn qwen3_renders_every_logged_request_as_minijinja_does() {
    let template = ChatTemplate::from_source(ChatTemplateSource::Embedded, None, false).unwrap();
    let native = native::lookup(&template.source).expect("Qwen3 has a native renderer");
    let (renderer, prepared) = template.renderer().unwrap();
    let (mut requests, mut answered, mut failed) = (0, 0, 0);
    for log in logs() {
        for (n, body) in bodies(&log).iter().enumerate() {
            let messages: Vec<_> = body.messages.iter().map(|m| message_value(m)).collect();
            let tools = body
                .tools
                .as_ref()
                .map_or_else(|| json_value(&Json::Null), |tools| json_value(tools));
            let base = ContextBase::new(&template, true, &Map::new());
            let variables = Variables::new(base.variables().unwrap(), Limits::default());
            let vm = renderer
                .render(
                    &prepared,
                    &base.context(messages.clone(), tools.clone()),
                    Clock::synthetic(0),
                )
                .map(|r| r.text);
            requests += 1;
            match native.render(&messages, &tools, &variables) {
                Some(text) => {
                    answered += 1;
                    assert_eq!(
                        Some(&text),
                        vm.as_ref().ok(),
                        "{} request {n}",
                        log.display()
                    );
                }
                None if vm.is_err() => failed += 1,
                None => eprintln!("fell back: {} request {n}", log.display()),
            }
        }
    }
    eprintln!(
        "qwen3: {answered} of {requests} logged requests rendered natively, {failed} fail in minijinja too"
    );
    assert!(requests > 400, "{requests} requests");
    assert_eq!(
        answered + failed,
        requests,
        "every request minijinja renders is native"
    );
}

fn run(args: &[&str], native: bool) -> (i32, String, String) {
    let mut command = Command::cargo_bin("prefixlint").unwrap();
    command
        .current_dir(repo())
        .args(args)
        .env("PREFIXLINT_NO_CACHE", "1");
    if !native {
        command.env("PREFIXLINT_NATIVE_TEMPLATES", "0");
    }
    let out = command.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `audit` (two engines) and `simulate` of every log: the same reports with the native
/// renderers and with minijinja alone.
#[test]
fn reports_are_the_same_with_native_templates_off() {
    let mut compared = 0;
    for log in logs() {
        let log = log.to_string_lossy().into_owned();
        for args in [
            vec![
                "audit",
                "--no-config",
                &log,
                "--engine",
                "llama.cpp",
                "--format",
                "json",
            ],
            vec![
                "audit",
                "--no-config",
                &log,
                "--engine",
                "vllm:block_size=16",
            ],
            vec![
                "simulate",
                "--no-config",
                &log,
                "--layers",
                "32",
                "--kv-heads",
                "8",
                "--head-dim",
                "128",
                "--weights",
                "16GB",
                "--overhead",
                "4GB",
                "--gpu-memory",
                "24GB",
                "--format",
                "json",
            ],
        ] {
            let on = run(&args, true);
            let off = run(&args, false);
            assert_eq!(on, off, "{args:?}");
            compared += usize::from(on.0 != 2);
        }
    }
    assert!(compared >= 10, "{compared} reports compared");
}
