//! Token counts against a real llama.cpp server whose model carries Llama 3.1's tokenizer
//! (a BOS-adding one; tests/measure_support/llama_server.py builds it from the real files):
//! the local engine with the server's special tokens must equal `/tokenize` with
//! `add_special`, and `measure` must find local and server prompt tokens equal.

use crate::support;

use prefixlint::tokenize::TokenizerSpec;
use serde_json::{json, Value};
use std::sync::Mutex;
use support::llama::LlamaServer;
use support::tokenizers::{real_tokenizer, stress_corpus};

/// One real server at a time: they share the CPU cores.
static SERIAL: Mutex<()> = Mutex::new(());

fn llama31_server() -> LlamaServer {
    let tokenizer = real_tokenizer("llama3_1");
    let folder = tokenizer.parent().unwrap().to_str().unwrap().to_owned();
    LlamaServer::start_with(&["--tokenizer", &folder, "--pre", "llama-bpe"])
}

fn server_ids(server: &LlamaServer, text: &str) -> Vec<u32> {
    let answer = server.post("/tokenize", &json!({"content": text, "add_special": true}));
    answer["tokens"]
        .as_array()
        .unwrap_or_else(|| panic!("no tokens in {answer}"))
        .iter()
        .map(|id| id.as_u64().unwrap() as u32)
        .collect()
}

#[test]
fn the_server_adds_the_bos_prefixlint_counts_on_the_stress_corpus() {
    let _quiet = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = llama31_server();
    let engine = TokenizerSpec::File(real_tokenizer("llama3_1"))
        .load()
        .expect("loads");
    let mut mismatches = Vec::new();
    let corpus = stress_corpus();
    for text in &corpus {
        let local = engine.encode_prompt(text).unwrap().ids;
        let served = server_ids(&server, text);
        assert_eq!(local.first(), Some(&128000), "{text:?}");
        if local != served {
            mismatches.push(format!("{text:?}\n  local  {local:?}\n  server {served:?}"));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} texts differ:\n{}",
        mismatches.len(),
        corpus.len(),
        mismatches.join("\n")
    );
}

fn prompt_tokens(report: &Value) -> Vec<(u64, u64)> {
    report["templates"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["requests"].as_array().unwrap())
        .map(|r| {
            (
                r["prompt_tokens_local"].as_u64().unwrap(),
                r["prompt_tokens_server"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn measure_local_and_server_token_counts_agree_with_a_bos_adding_model() {
    let _quiet = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = llama31_server();
    let tokenizer = real_tokenizer("llama3_1");
    let tokenizer = tokenizer.to_str().unwrap();
    for api in ["completions", "chat"] {
        let args = [
            "fixtures/measure/clean.j2",
            "--api",
            api,
            "--tokenizer",
            tokenizer,
            "--repeats",
            "1",
            "--fail-on-mismatch",
        ];
        let (code, report, stderr) = server.measure(&args);
        assert_eq!(code, 0, "{api}: {stderr}\n{report:#}");
        let counts = prompt_tokens(&report);
        assert!(!counts.is_empty(), "{report:#}");
        for (local, served) in counts {
            assert_eq!(local, served, "{api}: {report:#}");
        }
    }
    // Without the BOS the local count is one short of what the server computes.
    let (_, report, _) = server.measure(&[
        "fixtures/measure/clean.j2",
        "--tokenizer",
        tokenizer,
        "--repeats",
        "1",
        "--no-special-tokens",
    ]);
    for (local, served) in prompt_tokens(&report) {
        assert_eq!(local + 1, served, "{report:#}");
    }
}
