//! Special tokens as the server adds them: every whole prompt gets the BOS (and EOS) its
//! tokenizer declares, equal to `tokenizers`' `encode(text, add_special_tokens=true)` on
//! real files; `--no-special-tokens` turns it off; padding never counts.

use crate::support;

use prefixlint::tokenize::TokenizerSpec;
use support::tokenizers::real_tokenizer;
use support::{check_json, prefixlint, run};

const TEXTS: &[&str] = &[
    "Hello, world!",
    "You are a helpful assistant.\n\nToday is 2026-11-30.",
    "",
    "  leading spaces and caf\u{e9} \u{6771}\u{4eac} \u{1F600}",
];

/// Files whose `tokenizer_config.json` agrees with the post-processor, so `tokenizers`
/// alone is the reference.
const POST_PROCESSOR_DECIDES: &[(&str, usize)] = &[
    ("llama2", 1),
    ("llama3", 0),
    ("llama3_1", 1),
    ("gemma3", 1),
    ("gemini", 1),
    ("gpt4o", 0),
    ("gpt35turbo", 0),
    ("gptoss", 0),
];

#[test]
fn prompts_get_the_special_tokens_tokenizers_adds() {
    for &(name, added) in POST_PROCESSOR_DECIDES {
        let path = real_tokenizer(name);
        let engine = TokenizerSpec::File(path.clone()).load().expect("loads");
        let reference = tokenizers::Tokenizer::from_file(&path).expect("reference loads");
        assert_eq!(engine.special_tokens().prefix.len(), added, "{name}");
        for text in TEXTS {
            let expected = reference.encode(*text, true).expect("encodes");
            let got = engine.encode_prompt(text).expect("encodes");
            assert_eq!(got.ids, expected.get_ids(), "{name} on {text:?}");
            // Added tokens cover no text; the text's own tokens keep their offsets.
            assert!(got.offsets[..added].iter().all(|&o| o == (0, 0)), "{name}");
            assert_eq!(engine.encode(text).unwrap().len() + added, got.len());
        }
        let bare = TokenizerSpec::File(path).load_with(false).expect("loads");
        assert!(bare.special_tokens().is_empty(), "{name}");
    }
}

#[test]
fn add_bos_token_in_the_config_is_honoured() {
    // DeepSeek V3: a ByteLevel post-processor, but `add_bos_token: true` beside it, which
    // llama.cpp's converter and transformers' Llama tokenizer classes follow.
    let engine = TokenizerSpec::File(real_tokenizer("deepseek_v3"))
        .load()
        .expect("loads");
    let bos = engine.special_tokens().prefix.clone();
    assert_eq!(bos.len(), 1);
    assert_eq!(
        engine.token_text(bos[0]).as_deref(),
        Some("<\u{ff5c}begin\u{2581}of\u{2581}sentence\u{ff5c}>")
    );
}

#[test]
fn a_chat_template_that_writes_bos_gets_no_second_one() {
    let engine = TokenizerSpec::File(real_tokenizer("llama3_1"))
        .load()
        .expect("loads");
    let text = "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>";
    let chat = engine.encode_chat(text).unwrap();
    assert_eq!(chat.ids, engine.encode(text).unwrap().ids);
    // A completions prompt gets the BOS regardless, as servers do.
    assert_eq!(engine.encode_prompt(text).unwrap().len(), chat.len() + 1);
}

fn template_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("hello.j2"),
        // `request_id` varies between synthesized renders, so there is a divergence to count.
        "You are a helpful assistant.\nAnswer {{ request_id }} briefly.\n",
    )
    .unwrap();
    dir
}

#[test]
fn check_counts_the_bos_and_no_special_tokens_drops_it() {
    let dir = template_dir();
    let template = dir.path().join("hello.j2");
    let tokenizer = real_tokenizer("llama3_1");
    let args = |extra: &[&str]| {
        let mut args = vec![
            template.to_str().unwrap().to_owned(),
            "--tokenizer".to_owned(),
            tokenizer.to_str().unwrap().to_owned(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    let with: Vec<String> = args(&[]);
    let without: Vec<String> = args(&["--no-special-tokens"]);
    let (code, served) = check_json(&with.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 0, "{served}");
    let (code, bare) = check_json(&without.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 0, "{bare}");
    let count = |json: &serde_json::Value, key: &str| {
        json["templates"][0]
            .pointer(key)
            .and_then(serde_json::Value::as_u64)
            .unwrap_or_else(|| panic!("no {key} in {json}"))
    };
    for key in [
        "/tokens/min",
        "/tokens/max",
        "/shared_prefix_tokens",
        "/first_divergence/token",
    ] {
        assert_eq!(count(&served, key), count(&bare, key) + 1, "{key}");
    }
}

#[test]
fn render_tokens_shows_the_added_bos() {
    let dir = template_dir();
    let tokenizer = real_tokenizer("llama3_1");
    let listing = |extra: &[&str]| {
        run(prefixlint()
            .args(["render", "--tokens", "--no-config", "--tokenizer"])
            .arg(&tokenizer)
            .arg(dir.path().join("hello.j2"))
            .args(extra))
    };
    let served = listing(&[]);
    assert_eq!(served.code, 0, "{}", served.stderr);
    let first = served.stdout.lines().nth(1).unwrap();
    assert!(
        first.contains("128000")
            && first.contains("0..0")
            && first.contains("\"<|begin_of_text|>\" (added)"),
        "{}",
        served.stdout
    );
    let bare = listing(&["--no-special-tokens"]);
    assert_eq!(bare.code, 0, "{}", bare.stderr);
    assert!(!bare.stdout.contains("(added)"), "{}", bare.stdout);
    let total = |out: &str| {
        out.lines()
            .last()
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse::<usize>()
            .unwrap()
    };
    assert_eq!(total(&served.stdout), total(&bare.stdout) + 1);
}

#[test]
fn padding_and_truncation_in_a_tokenizer_json_are_not_counted() {
    // A WordPiece tokenizer that pads to 16 and truncates at 4, as BERT exports do.
    let dir = tempfile::tempdir().unwrap();
    let vocab: serde_json::Map<String, serde_json::Value> = [
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", "world", "a", "b", "c", "d", "e",
    ]
    .iter()
    .enumerate()
    .map(|(i, t)| (t.to_string(), i.into()))
    .collect();
    let json = serde_json::json!({
        "version": "1.0",
        "truncation": {"direction": "Right", "max_length": 4, "strategy": "LongestFirst", "stride": 0},
        "padding": {"strategy": {"Fixed": 16}, "direction": "Right", "pad_to_multiple_of": null,
                    "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]"},
        "added_tokens": [
            {"id": 0, "content": "[PAD]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
            {"id": 2, "content": "[CLS]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
            {"id": 3, "content": "[SEP]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
        ],
        "normalizer": null,
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
        "decoder": null,
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab},
    });
    let path = dir.path().join("tokenizer.json");
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
    let engine = TokenizerSpec::File(path).load().expect("loads");
    let text = "hello world a b c d e";
    assert_eq!(engine.encode(text).unwrap().ids, vec![4, 5, 6, 7, 8, 9, 10]);
    // [CLS] … [SEP], as a server given this tokenizer adds them; never cut, never padded.
    assert_eq!(
        engine.encode_prompt(text).unwrap().ids,
        vec![2, 4, 5, 6, 7, 8, 9, 10, 3]
    );
}
