//! Equality across tokenizer engines: the byte-level BPE engine must give exactly the ids and
//! offsets of `tokenizers` 0.23.2 (the reference the Python comparison also uses), on real
//! templates and on random text built to hit every pre-tokenizer branch.

use crate::support::Rng;
use prefixlint::tokenize::bpe::{BpeParts, ByteLevelBpe};
use prefixlint::tokenize::{builtin_json, cache, HfTokenizer, TokenEngine, TokenizerSpec, Tokens};
use std::path::Path;
use std::sync::OnceLock;

fn engines() -> &'static (ByteLevelBpe, HfTokenizer) {
    static ENGINES: OnceLock<(ByteLevelBpe, HfTokenizer)> = OnceLock::new();
    ENGINES.get_or_init(|| {
        let json = builtin_json().expect("embedded tokenizer");
        let parts = BpeParts::from_tokenizer_json(&json).expect("Qwen3 has a supported shape");
        // Through the cache format, as real runs load it.
        let parts = cache::decode(&cache::encode(&parts)).expect("cache round trip");
        let bpe = ByteLevelBpe::new(parts).expect("engine builds");
        let reference = HfTokenizer::from_json_bytes(&json, "builtin").expect("reference");
        (bpe, reference)
    })
}

/// `Some(tokens)` from the fast engine, `None` when it hands the text to the fallback.
fn fast(text: &str) -> Option<Tokens> {
    let mut tokens = Tokens::default();
    engines()
        .0
        .encode(text, &mut tokens.ids, &mut tokens.offsets)
        .ok()
        .map(|()| tokens)
}

fn assert_same(text: &str) {
    let expected = engines().1.encode(text).expect("reference encodes");
    if let Some(got) = fast(text) {
        assert_eq!(got.ids, expected.ids, "ids differ on {text:?}");
        assert_eq!(got.offsets, expected.offsets, "offsets differ on {text:?}");
    }
}

const PIECES: &[&str] = &[
    "a",
    "Z",
    "hello",
    " world",
    "'s",
    "'T",
    "'re",
    "'LL",
    "ſ",
    "'",
    "0",
    "42",
    "٣",
    "Ⅻ",
    "½",
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "\r",
    " \n ",
    "\u{a0}",
    "\u{2028}",
    "\u{3000}",
    "\u{85}",
    ".",
    ",",
    "!?",
    "{\"k\": 1}",
    "<|im_start|>",
    "<|im_end|>",
    "<think>",
    "</tool_call>",
    "<|im_",
    "é",
    "e\u{301}",
    "x\u{301}",
    "\u{308}",
    "東京",
    "한국어",
    "Ελληνικά",
    "русский",
    "😀",
    "👩‍💻",
    "🇩🇪",
    "\u{200d}",
    "\u{fe0f}",
    "---",
    "===",
    "## ",
    "- ",
    "`code`",
    "\\",
    "\u{0}",
    "\u{7f}",
    "ß",
    "İ",
    "ǅ",
    "\u{10ffff}",
    "\u{e000}",
    "ﬁ",
];

#[test]
fn random_text_encodes_identically() {
    let mut rng = Rng::new(0x5eed_1234_abcd_ef01);
    let mut refused = 0;
    for _ in 0..3000 {
        let len = 1 + rng.below(40);
        let text: String = (0..len).map(|_| PIECES[rng.below(PIECES.len())]).collect();
        if fast(&text).is_none() {
            refused += 1;
        }
        assert_same(&text);
    }
    // Nothing is refused: text that NFC changes is normalized on the fast path too.
    assert_eq!(refused, 0, "{refused} of 3000 refused");
}

#[test]
fn random_bytes_as_text_encode_identically() {
    let mut rng = Rng::new(0x0dd_ba11);
    for _ in 0..2000 {
        let len = rng.below(64);
        let bytes: Vec<u8> = (0..len).map(|_| (rng.next() & 0xff) as u8).collect();
        assert_same(&String::from_utf8_lossy(&bytes));
        let chars: String = (0..len)
            .filter_map(|_| char::from_u32((rng.next() % 0x3000) as u32))
            .collect();
        assert_same(&chars);
    }
}

#[test]
fn real_templates_encode_identically() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut checked = 0;
    for entry in walkdir::WalkDir::new(&root) {
        let entry = entry.expect("walk fixtures");
        if !entry.file_type().is_file() {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        assert!(fast(&text).is_some() || !text.is_ascii());
        assert_same(&text);
        checked += 1;
    }
    assert!(checked > 50, "only {checked} fixture files");
}

#[test]
fn non_nfc_text_stays_on_the_fast_path_and_matches() {
    let text = "Cafe\u{301} and cafe\u{301} again";
    // NFC changes this text; the fast engine normalizes it itself (issue 16).
    assert_eq!(
        fast(text),
        Some(engines().1.encode(text).expect("reference"))
    );
    let engine = TokenizerSpec::Builtin.load().expect("loads");
    let reference = engines().1.encode(text).expect("reference");
    assert_eq!(engine.encode(text).expect("encodes"), reference);
}

#[test]
fn token_text_matches_the_reference() {
    let (bpe, reference) = engines();
    for id in [
        0, 1, 220, 1000, 50_000, 151_642, 151_643, 151_644, 151_668, 999_999,
    ] {
        assert_eq!(bpe.token_text(id), reference.token_text(id), "id {id}");
    }
}

#[test]
fn the_cache_is_written_once_and_then_used() {
    let dir = tempfile::tempdir().expect("temp dir");
    // Its own folder, named to the loader: the process environment is never changed.
    let load = || TokenizerSpec::Builtin.load_with_cache(true, Some(dir.path()));
    let text = "<|im_start|>system\nYou are helpful. Today is 2026-03-14.<|im_end|>\n";
    let expected = engines().1.encode(text).expect("reference");
    let cold = load().expect("cold load");
    assert_eq!(cold.encode(text).expect("encodes"), expected);
    let entries: Vec<_> = std::fs::read_dir(dir.path())
        .expect("cache dir exists")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert!(entries[0].starts_with("bpe-v4-") && entries[0].ends_with(".bin"));
    let warm = load().expect("warm load");
    assert_eq!(warm.encode(text).expect("encodes"), expected);
    // A damaged entry is ignored and rewritten, never trusted.
    let entry = dir.path().join(&entries[0]);
    let mut bytes = std::fs::read(&entry).expect("read entry");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&entry, &bytes).expect("damage entry");
    let repaired = load().expect("load over damage");
    assert_eq!(repaired.encode(text).expect("encodes"), expected);
    assert!(cache::decode(&std::fs::read(&entry).expect("reread")).is_some());
}

#[test]
fn incremental_encoding_of_related_renders_equals_encoding_each() {
    let (bpe, _) = engines();
    let mut rng = Rng::new(0xfeed_f00d);
    let lines = [
        "You are a helpful assistant.\n",
        "Today is {date}.\n",
        "<|im_start|>user\n",
        "  indented line\n",
        "\n",
        "- item one\n",
        "\u{b}vertical tab\n",
        "Zürich café\n",
        "\u{e9} precomposed\n",
        "'s contraction\n",
        "   \n",
        "}\n",
        "1234 numbers\n",
    ];
    let mut checked = 0;
    for _ in 0..1500 {
        let shared: String = (0..rng.below(8))
            .map(|_| lines[rng.below(lines.len())])
            .collect();
        let texts: Vec<String> = (0..1 + rng.below(4))
            .map(|_| {
                let mut text = shared.clone();
                // Cut the shared part at a random char, then diverge.
                let mut cut = rng.below(text.len() + 1);
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                if rng.below(2) == 0 {
                    text.truncate(cut);
                }
                for _ in 0..rng.below(6) {
                    text.push_str(
                        &lines[rng.below(lines.len())].replace("{date}", &rng.next().to_string()),
                    );
                }
                text
            })
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let Ok(related) = bpe.encode_related(&refs) else {
            continue;
        };
        for (text, tokens) in refs.iter().zip(&related) {
            assert_eq!(Some(tokens.clone()), fast(text), "{refs:?}");
        }
        checked += 1;
    }
    assert!(checked > 500, "only {checked} cases ran");
}

/// `encode_lines` (each line's tokens remembered, per thread) gives the reference's ids and
/// offsets: on random lines built from every pre-tokenizer branch, repeated across texts so
/// most lines come from the cache, and on every fixture file.
#[test]
fn line_by_line_encoding_equals_the_reference() {
    let (bpe, reference) = engines();
    let mut rng = Rng::new(0x0011_1e5c_ace5);
    let lines: Vec<String> = (0..60)
        .map(|_| {
            let len = rng.below(12);
            let mut line: String = (0..len).map(|_| PIECES[rng.below(PIECES.len())]).collect();
            line.push('\n');
            line
        })
        .collect();
    let mut hits_possible = 0;
    for _ in 0..1500 {
        let text: String = (0..1 + rng.below(10))
            .map(|_| lines[rng.below(lines.len())].as_str())
            .collect();
        let mut got = Tokens::default();
        if bpe
            .encode_lines(&text, &mut got.ids, &mut got.offsets)
            .is_err()
        {
            continue;
        }
        let expected = reference.encode(&text).expect("reference encodes");
        assert_eq!(got.ids, expected.ids, "ids differ on {text:?}");
        assert_eq!(got.offsets, expected.offsets, "offsets differ on {text:?}");
        hits_possible += 1;
    }
    assert!(hits_possible > 1000, "only {hits_possible} texts encoded");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    for entry in walkdir::WalkDir::new(&root) {
        let entry = entry.expect("walk fixtures");
        let Ok(text) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        let mut got = Tokens::default();
        if bpe
            .encode_lines(&text, &mut got.ids, &mut got.offsets)
            .is_ok()
        {
            assert_eq!(Some(got), fast(&text), "{}", entry.path().display());
        }
    }
}
