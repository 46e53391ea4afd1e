//! CI's short fuzz run, on stable Rust: every `cargo fuzz` target (`fuzz/targets/*.rs`, the
//! same bodies the libFuzzer binaries in `fuzz/fuzz_targets/` call) runs over its seed
//! corpus and a fixed number of inputs mutated from it (bit flips, interesting bytes,
//! insertions, deletions, repeats, splices between seeds, truncation), from a fixed random
//! seed, so a failure reproduces. Not coverage-guided: the long runs are `cargo fuzz`'s
//! (fuzz/README.md); this catches a panic, a failed invariant or a hang on every change.
//!
//! `PREFIXLINT_FUZZ_INPUTS=N` sets the mutated inputs per target (default: each target's
//! own count below, about a minute in all on a debug build); `PREFIXLINT_FUZZ_SEED=N` picks
//! another random sequence. A failing input is written under the test's temporary folder
//! and named in the failure, ready to copy into `tests/bad_inputs/` or a corpus.

#[path = "../../fuzz/targets/audit_input.rs"]
mod audit_input;
#[path = "../../fuzz/targets/config_samples.rs"]
mod config_samples;
#[path = "../../fuzz/targets/fix_producers.rs"]
mod fix_producers;
#[path = "../../fuzz/targets/gguf.rs"]
mod gguf;
#[path = "../../fuzz/targets/host_files.rs"]
mod host_files;
#[path = "../../fuzz/targets/lsp_transport.rs"]
mod lsp_transport;
#[path = "../../fuzz/targets/prometheus.rs"]
mod prometheus;
#[path = "../../fuzz/targets/render_pipeline.rs"]
mod render_pipeline;
#[path = "../../fuzz/targets/request_body.rs"]
mod request_body;
#[path = "../../fuzz/targets/sse.rs"]
mod sse;
#[path = "../../fuzz/targets/template_formats.rs"]
mod template_formats;

use crate::support::Rng;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// One input may take this long (debug build, shared cores) before it counts as a hang.
const HANG: Duration = Duration::from_secs(30);

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Bytes that tend to matter to parsers: delimiters, escapes, limits of integer fields.
const INTERESTING: &[u8] = b"\x00\x01\x7f\x80\xff{}[]()\"'\\\n\r\t :=,#%-+.0123456789eEIiNn";

/// Mutations of a seed: one (half the time), two (a quarter), … up to eight, so that most
/// inputs stay close enough to a seed to get past its format's first checks.
fn mutate(seeds: &[Vec<u8>], rng: &mut Rng) -> Vec<u8> {
    let mut data = seeds[rng.below(seeds.len())].clone();
    let mutations = 1 + (rng.next() | 0x80).trailing_zeros() as usize;
    for _ in 0..mutations {
        let len = data.len();
        // Weighted: small local changes most, truncation least.
        match [0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 4, 5, 5, 6, 7, 7][rng.below(16)] {
            0 if len > 0 => {
                let at = rng.below(len);
                data[at] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let at = rng.below(len);
                data[at] = INTERESTING[rng.below(INTERESTING.len())];
            }
            2 => {
                let at = rng.below(len + 1);
                let byte = if rng.below(2) == 0 {
                    INTERESTING[rng.below(INTERESTING.len())]
                } else {
                    rng.next() as u8
                };
                data.insert(at, byte);
            }
            3 if len > 0 => {
                let at = rng.below(len);
                let n = 1 + rng.below((len - at).min(64));
                data.drain(at..at + n);
            }
            4 if len > 0 => {
                // Repeat a piece: nesting, long runs, repeated headers.
                let at = rng.below(len);
                let n = 1 + rng.below((len - at).min(32));
                let piece = data[at..at + n].to_vec();
                for _ in 0..=rng.below(8) {
                    data.splice(at..at, piece.iter().copied());
                }
            }
            5 => {
                // A piece of another seed.
                let other = &seeds[rng.below(seeds.len())];
                if !other.is_empty() {
                    let from = rng.below(other.len());
                    let n = 1 + rng.below((other.len() - from).min(256));
                    let at = rng.below(len + 1);
                    data.splice(at..at, other[from..from + n].iter().copied());
                }
            }
            6 if len > 0 => data.truncate(rng.below(len)),
            _ if len >= 4 => {
                // A little-endian integer field set to a limit (GGUF lengths and counts).
                let at = rng.below(len - 3);
                let value: u32 = [0, 1, 0x7fff_ffff, 0xffff_ffff, 0x100][rng.below(5)];
                data[at..at + 4].copy_from_slice(&value.to_le_bytes());
            }
            _ => data.push(rng.next() as u8),
        }
    }
    data
}

/// Runs `body` over the seeds and `default_inputs` mutations of them on a worker thread;
/// fails on the first panic or hang, naming the input.
fn fuzz(name: &'static str, body: fn(&[u8]), seeds: Vec<Vec<u8>>, default_inputs: usize) {
    assert!(!seeds.is_empty(), "{name}: no seeds");
    let inputs = std::env::var("PREFIXLINT_FUZZ_INPUTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default_inputs);
    let seed = std::env::var("PREFIXLINT_FUZZ_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0x005e_ed0f_f022);
    let (to_harness, from_worker) = mpsc::channel::<(usize, Vec<u8>, Option<String>)>();
    let seed_count = seeds.len();
    let started = Instant::now();
    std::thread::Builder::new()
        .name(format!("fuzz-{name}"))
        .spawn(move || {
            let mut rng = Rng::new(seed | 1);
            for n in 0..seed_count + inputs {
                let data = match seeds.get(n) {
                    Some(seed) => seed.clone(),
                    None => mutate(&seeds, &mut rng),
                };
                // Announce the input first, so a hang is reported with it.
                if to_harness.send((n, data.clone(), None)).is_err() {
                    return;
                }
                let outcome = catch_unwind(AssertUnwindSafe(|| body(&data)));
                let failure = outcome.err().map(|panic| {
                    panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "a panic".into())
                });
                if let Some(failure) = failure {
                    let _ = to_harness.send((n, data, Some(failure)));
                    return;
                }
            }
        })
        .expect("a worker thread");
    let mut ran = 0;
    loop {
        match from_worker.recv_timeout(HANG) {
            Ok((n, _, None)) => ran = n + 1,
            Ok((n, data, Some(failure))) => {
                let saved = save(name, n, &data);
                panic!(
                    "{name}: input {n} ({} bytes, saved as {}) failed: {failure}",
                    data.len(),
                    saved.display()
                );
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!(
                    "{name}: input {} ran over {HANG:?} (a hang?); rerun with PREFIXLINT_FUZZ_SEED={seed} to see it",
                    ran.saturating_sub(1)
                );
            }
        }
    }
    assert_eq!(ran, seed_count + inputs, "{name}: the worker stopped early");
    eprintln!(
        "{name}: {seed_count} seeds and {inputs} mutated inputs in {:.1?}",
        started.elapsed()
    );
}

fn save(name: &str, n: usize, data: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-smoke");
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("{name}-input-{n}"));
    let _ = std::fs::write(&path, data);
    path
}

/// Files under `dirs` whose names end in one of `suffixes`, sorted.
fn files(dirs: &[&str], suffixes: &[&str]) -> Vec<PathBuf> {
    fn walk(dir: &Path, suffixes: &[&str], out: &mut Vec<PathBuf>) {
        // A seed folder that cannot be read fails the run: fuzzing without the seeds would
        // pass while checking far less.
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let entry = entry.unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            let path = entry.path();
            if path.is_dir() {
                walk(&path, suffixes, out);
            } else if suffixes.iter().any(|s| path.to_string_lossy().ends_with(s)) {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    for dir in dirs {
        walk(&repo().join(dir), suffixes, &mut out);
    }
    assert!(
        !out.is_empty(),
        "no seed files ({suffixes:?}) under {dirs:?}"
    );
    out.sort();
    out
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn prometheus_parser() {
    // The real scrapes in pieces of 24 lines (HELP, TYPE and samples together), so that
    // each input is small and a mutation lands in a sample more often than not.
    let mut seeds: Vec<Vec<u8>> = files(&["tests/fixtures/metrics"], &[".prom"])
        .iter()
        .flat_map(|p| {
            let text = String::from_utf8(read(p)).expect("a UTF-8 scrape");
            let lines: Vec<&str> = text.lines().collect();
            lines
                .chunks(24)
                .map(|piece| (piece.join("\n") + "\n").into_bytes())
                .collect::<Vec<_>>()
        })
        .collect();
    seeds.push(read(
        &repo().join("fixtures/capacity/server/vllm-cache-config-info.txt"),
    ));
    seeds.push(
        b"# HELP m Help with \\\\ and \\n\n# TYPE m counter\nm{a=\"x\\\"y\",b=\"back\\\\slash\",c=\"new\\nline\"} 1.5e3 1700000000000\nm_bucket{le=\"+Inf\"} +Inf\nn NaN\nneg -Inf -1\nex{a=\"1\",} 2 # {trace_id=\"t\"} 1\n# EOF\n"
            .to_vec(),
    );
    fuzz("prometheus", prometheus::run, seeds, 8000);
}

/// A GGUF v3 file with no tensors and these metadata entries.
fn gguf_file(entries: &[(&str, GgufValue)]) -> Vec<u8> {
    fn string(out: &mut Vec<u8>, s: &str) {
        out.extend((s.len() as u64).to_le_bytes());
        out.extend(s.as_bytes());
    }
    let mut out = b"GGUF".to_vec();
    out.extend(3u32.to_le_bytes());
    out.extend(0u64.to_le_bytes());
    out.extend((entries.len() as u64).to_le_bytes());
    for (key, value) in entries {
        string(&mut out, key);
        match value {
            GgufValue::Text(text) => {
                out.extend(8u32.to_le_bytes());
                string(&mut out, text);
            }
            GgufValue::U32(n) => {
                out.extend(4u32.to_le_bytes());
                out.extend(n.to_le_bytes());
            }
            GgufValue::Bool(b) => {
                out.extend(7u32.to_le_bytes());
                out.push(u8::from(*b));
            }
            GgufValue::Texts(texts) => {
                out.extend(9u32.to_le_bytes());
                out.extend(8u32.to_le_bytes());
                out.extend((texts.len() as u64).to_le_bytes());
                for text in texts {
                    string(&mut out, text);
                }
            }
            GgufValue::I32s(ints) => {
                out.extend(9u32.to_le_bytes());
                out.extend(5u32.to_le_bytes());
                out.extend((ints.len() as u64).to_le_bytes());
                for n in ints {
                    out.extend(n.to_le_bytes());
                }
            }
            GgufValue::F32s(floats) => {
                out.extend(9u32.to_le_bytes());
                out.extend(6u32.to_le_bytes());
                out.extend((floats.len() as u64).to_le_bytes());
                for f in floats {
                    out.extend(f.to_le_bytes());
                }
            }
        }
    }
    out
}

enum GgufValue {
    Text(String),
    U32(u32),
    Bool(bool),
    Texts(Vec<String>),
    I32s(Vec<i32>),
    F32s(Vec<f32>),
}

/// GPT-2's byte → printable character table.
fn byte_chars() -> Vec<char> {
    let printable = |b: u32| (33..=126).contains(&b) || (161..=172).contains(&b) || b >= 174;
    let mut extra = 0;
    (0..256u32)
        .map(|b| {
            if printable(b) {
                char::from_u32(b).unwrap()
            } else {
                extra += 1;
                char::from_u32(255 + extra).unwrap()
            }
        })
        .collect()
}

/// Small but valid `gpt2`, `llama` and `bert` tokenizers, as llama.cpp writes them.
fn gguf_seeds() -> Vec<Vec<u8>> {
    use GgufValue::*;
    let texts = |list: &[&str]| Texts(list.iter().map(|s| s.to_string()).collect());
    let mut bpe_tokens: Vec<String> = byte_chars().iter().map(char::to_string).collect();
    bpe_tokens.extend(["he", "ll", "hell", "Ġw", "<|endoftext|>"].map(String::from));
    let mut bpe_types = vec![1; bpe_tokens.len()];
    *bpe_types.last_mut().unwrap() = 3;
    let gpt2 = gguf_file(&[
        ("general.architecture", Text("llama".into())),
        ("tokenizer.ggml.model", Text("gpt2".into())),
        ("tokenizer.ggml.pre", Text("qwen2".into())),
        ("tokenizer.ggml.tokens", Texts(bpe_tokens.clone())),
        ("tokenizer.ggml.token_type", I32s(bpe_types)),
        (
            "tokenizer.ggml.merges",
            texts(&["h e", "l l", "he ll", "Ġ w"]),
        ),
        (
            "tokenizer.ggml.bos_token_id",
            U32(bpe_tokens.len() as u32 - 1),
        ),
        ("tokenizer.ggml.add_bos_token", Bool(true)),
    ]);
    let mut spm_tokens: Vec<String> = ["<unk>", "<s>", "</s>"].map(String::from).to_vec();
    spm_tokens.extend((0..=255).map(|b| format!("<0x{b:02X}>")));
    spm_tokens.extend(["▁", "▁h", "e", "l", "o", "▁hello", "▁world"].map(String::from));
    let mut spm_types = vec![2, 3, 3];
    spm_types.extend(std::iter::repeat_n(6, 256));
    spm_types.extend(std::iter::repeat_n(1, 7));
    let scores: Vec<f32> = (0..spm_tokens.len()).map(|i| -(i as f32)).collect();
    let llama = gguf_file(&[
        ("tokenizer.ggml.model", Text("llama".into())),
        ("tokenizer.ggml.tokens", Texts(spm_tokens)),
        ("tokenizer.ggml.scores", F32s(scores)),
        ("tokenizer.ggml.token_type", I32s(spm_types)),
        ("tokenizer.ggml.bos_token_id", U32(1)),
        ("tokenizer.ggml.eos_token_id", U32(2)),
    ]);
    let bert = gguf_file(&[
        ("tokenizer.ggml.model", Text("bert".into())),
        (
            "tokenizer.ggml.tokens",
            texts(&[
                "[PAD]", "[UNK]", "[CLS]", "[SEP]", "▁hello", "▁world", "▁h", "ello", "▁,", "▁!",
            ]),
        ),
        (
            "tokenizer.ggml.token_type",
            I32s(vec![3, 3, 3, 3, 1, 1, 1, 1, 1, 1]),
        ),
        ("tokenizer.ggml.unknown_token_id", U32(1)),
        ("tokenizer.ggml.bos_token_id", U32(2)),
        ("tokenizer.ggml.seperator_token_id", U32(3)),
    ]);
    // And a header with no entries, for the mutations to grow.
    let empty = gguf_file(&[]);
    vec![gpt2, llama, bert, empty]
}

#[test]
fn gguf_seeds_are_tokenizers_that_load() {
    use prefixlint::tokenize::{GgufTokenizer, TokenEngine};
    // The last seed is a bare header.
    for seed in &gguf_seeds()[..3] {
        let tokenizer = GgufTokenizer::from_bytes(seed, "seed.gguf", true)
            .unwrap_or_else(|e| panic!("{:?}", miette::Report::new(e)));
        let tokens = tokenizer.encode_prompt("hello world").unwrap();
        assert!(tokens.len() > 2, "{:?}", tokens.ids);
    }
}

#[test]
fn gguf_reader() {
    fuzz("gguf", gguf::run, gguf_seeds(), 8000);
}

fn frame(body: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

#[test]
fn lsp_transport() {
    let initialize = frame(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{},"rootUri":"file:///tmp/p"}}"#,
    );
    let open = frame(
        r#"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///tmp/p/a.j2","languageId":"jinja","version":1,"text":"Hello {{ now }}\n"}}}"#,
    );
    let hover = frame(
        r#"{"jsonrpc":"2.0","id":"h1","method":"textDocument/hover","params":{"textDocument":{"uri":"file:///tmp/p/a.j2"},"position":{"line":0,"character":9}}}"#,
    );
    let response = frame(r#"{"jsonrpc":"2.0","id":7,"result":null}"#);
    let seeds = vec![
        [initialize.clone(), open.clone(), hover.clone()].concat(),
        [
            b"\r\n".to_vec(),
            response,
            b"Content-Type: x\r\n".to_vec(),
            open,
        ]
        .concat(),
        b"Content-Length: 5\r\n\r\n{bad}".to_vec(),
        b"Content-Length: x\r\n\r\n".to_vec(),
        b"Content-Type: application/json\r\n\r\n{}".to_vec(),
        frame(r#"{"jsonrpc":"2.0","id":{"a":1},"method":5}"#),
        frame(r#"[1,2,3]"#),
        b"Content-Length: 99999999999\r\n\r\n".to_vec(),
        [initialize, b"Content-Length: 100\r\n\r\n{\"trunc".to_vec()].concat(),
        hover,
    ];
    fuzz("lsp_transport", lsp_transport::run, seeds, 20000);
}

#[test]
fn sse_parser() {
    let seeds: Vec<Vec<u8>> = [
        "\x05data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]\n\n",
        "\x10event: message\ndata: one\ndata: two\nid: 3\nretry: 10\n\n: a comment\r\n\r\n",
        "\x00data:no space\r\ndata\r\n\r\n",
        "\x40data: {\"usage\":{\"prompt_tokens\":12,\"prompt_tokens_details\":{\"cached_tokens\":8}}}\n\n",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    fuzz("sse", sse::run, seeds, 20000);
}

#[test]
fn config_and_samples_files() {
    let seeds: Vec<Vec<u8>> = files(&["fixtures", "tests/bad_inputs"], &[".yaml"])
        .iter()
        .filter(|p| p.file_name().is_some_and(|n| n != "case.yaml"))
        .map(|p| read(p))
        .filter(|data| data.len() <= 16 * 1024)
        .collect();
    fuzz("config_samples", config_samples::run, seeds, 1500);
}

#[test]
fn host_file_extractors() {
    // Every host file of the fixtures up to 16 KiB: YAML, JSON, TOML, Python, text prompts.
    let seeds: Vec<Vec<u8>> = files(
        &["fixtures/host-formats", "fixtures/hosts"],
        &[".yaml", ".yml", ".json", ".toml", ".py", ".md", ".txt"],
    )
    .iter()
    .map(|p| read(p))
    .filter(|data| data.len() <= 16 * 1024)
    .collect();
    fuzz("host_files", host_files::run, seeds, 1500);
}

#[test]
fn request_body_reader() {
    // Request bodies as templates render them (Anthropic with cache_control, OpenAI with
    // prompt_cache_key, a Responses input), and the logged requests, one line each.
    let mut seeds: Vec<Vec<u8>> = vec![
        br#"{"model": "claude-sonnet-4-5", "max_tokens": 1024, "tools": [{"name": "t", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral", "ttl": "1h"}}], "system": [{"type": "text", "text": "Be brief.\u00e9", "cache_control": {"type": "ephemeral"}}], "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}, {"role": "assistant", "content": "Hello"}]}"#.to_vec(),
        br#"{"model": "gpt-4.1", "messages": [{"role": "system", "content": "Rules"}, {"role": "user", "content": "Q"}], "prompt_cache_key": "conv-1"}"#.to_vec(),
        br#" {"model": "o4-mini", "instructions": "x", "input": [{"role": "user", "content": "y"}], "cache_control": {"type": "ephemeral"}} "#.to_vec(),
    ];
    let log =
        String::from_utf8(read(&repo().join("fixtures/audit/requests.jsonl"))).expect("UTF-8 log");
    seeds.extend(
        log.lines()
            .filter(|line| line.len() <= 4 * 1024)
            .take(40)
            .map(|line| line.as_bytes().to_vec()),
    );
    fuzz("request_body", request_body::run, seeds, 6000);
}

#[test]
fn render_pipeline() {
    // Every template under fixtures/ up to 4 KiB, each in both dialects (first byte).
    let seeds: Vec<Vec<u8>> = files(&["fixtures"], &[".j2", ".jinja"])
        .iter()
        .map(|p| read(p))
        .filter(|data| data.len() <= 4 * 1024)
        .enumerate()
        .map(|(n, data)| [vec![n as u8 & 1], data].concat())
        .collect();
    fuzz("render_pipeline", render_pipeline::run, seeds, 800);
}

#[test]
fn template_formats() {
    // The formats' fixtures (and the Jinja ones, read as the other formats), each in every
    // format (first byte), plus hostile shapes the parsers must bound.
    let mut seeds: Vec<Vec<u8>> = files(&["fixtures/template-formats"], &[".txt"])
        .iter()
        .chain(files(&["fixtures/volatile-before-stable"], &[".j2"]).iter())
        .map(|p| read(p))
        .filter(|data| data.len() <= 4 * 1024)
        .enumerate()
        .map(|(n, data)| [vec![n as u8], data].concat())
        .collect();
    for hostile in [
        "{x:>4000000000}",
        "{x:{y:{z}}}",
        "{a[{b}]}",
        "{datetime.now():%Y {x!r}",
        "{{$a}} {{p.f $x k=\"v\"}} {{ 'q\\'' }}",
        "{((((((((((x))))))))))}",
        "{{#a}}{{#a}}{{#a}}{{#a}}{{.}}{{/a}}{{/a}}{{/a}}{{/a}}",
        "{{=<% %>=}}<%{x}%> <%# y %><%/ y %><%={{ }}=%>{{^z}}\n{{{w}}}\n{{/z}}",
        "{{#a}}{{^a}}{{/a}}{{/a}}{{/a}}x",
    ] {
        for format in 0..5u8 {
            seeds.push([vec![format], hostile.as_bytes().to_vec()].concat());
        }
    }
    fuzz("template_formats", template_formats::run, seeds, 3000);
}

#[test]
fn fix_producers() {
    // Every template under fixtures/ up to 4 KiB, with a rule and a span picked by 3 bytes.
    let seeds: Vec<Vec<u8>> = files(&["fixtures"], &[".j2", ".jinja"])
        .iter()
        .map(|p| read(p))
        .filter(|data| data.len() <= 4 * 1024)
        .enumerate()
        .map(|(n, data)| [vec![n as u8, (n * 37) as u8, 24], data].concat())
        .collect();
    fuzz("fix_producers", fix_producers::run, seeds, 3000);
}

#[test]
fn audit_log_reader() {
    // The committed logs in pieces of 4 lines (at most 16 per file, 16 KiB each), each with a
    // format byte: detected, then each forced format in turn; over 127 also a 64-byte line cap.
    let mut seeds = Vec::new();
    for path in files(
        &[
            "fixtures/audit",
            "tests/fixtures/audit-agents",
            "tests/fixtures/audit-hosted",
        ],
        &[".jsonl"],
    ) {
        let data = read(&path);
        let lines: Vec<&[u8]> = data.split_inclusive(|&b| b == b'\n').collect();
        for piece in lines.chunks(4).take(16) {
            let n = seeds.len();
            let format = (n % 6) as u8 | if n % 5 == 4 { 128 } else { 0 };
            let mut seed = vec![format];
            seed.extend(piece.concat().into_iter().take(16 * 1024));
            seeds.push(seed);
        }
    }
    fuzz("audit_input", audit_input::run, seeds, 4000);
}
