//! The built-in `o200k_base` and `cl100k_base` against real Python `tiktoken` (pinned in
//! scripts/requirements/tiktoken.txt): the same ids on the stress corpus and more, through the
//! library and through the binary, with a cold and a warm tokenizer cache. Python or tiktoken
//! missing is a failure, not a skip.

use crate::support;

use prefixlint::tokenize::bpe::ByteLevelBpe;
use prefixlint::tokenize::tiktoken::Encoding;
use prefixlint::tokenize::{cache, TokenizerSpec};
use std::io::Write;
use std::process::{Command, Stdio};
use support::tokenizers::stress_corpus;

fn python() -> String {
    std::env::var("PREFIXLINT_TEST_PYTHON").unwrap_or_else(|_| {
        let venv = support::repo_root().join(".venv/bin/python");
        assert!(
            venv.is_file(),
            "no Python with tiktoken: run `bash scripts/test.sh` (it installs .venv and sets PREFIXLINT_TEST_PYTHON)"
        );
        venv.display().to_string()
    })
}

/// Python tiktoken's ids for each text (special tokens allowed).
fn tiktoken_ids(encoding: Encoding, texts: &[String]) -> Vec<Vec<u32>> {
    let ranks =
        support::repo_root().join(format!("assets/tiktoken/{}.ranks.zlib", encoding.name()));
    let mut child = Command::new(python())
        .arg(support::repo_root().join("tests/python/tiktoken_reference.py"))
        .arg(encoding.name())
        .arg(ranks)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python runs");
    let input = serde_json::to_vec(texts).unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "tiktoken_reference.py failed (is tiktoken installed? scripts/requirements/tiktoken.txt): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let reply: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(reply["tiktoken"], "0.14.0", "the pinned tiktoken");
    serde_json::from_value(reply["ids"].clone()).unwrap()
}

/// The stress corpus of tests/it/families.rs plus what tiktoken's regexes single out.
fn corpus() -> Vec<String> {
    let mut texts = stress_corpus();
    texts.extend(
        [
            "{\"model\": \"gpt-4o\", \"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}], \"temperature\": 0.2}",
            "I'd've SAID it's THEIR'S; You'Ll see. WE'RE 'RE' 'll 'S don'T",
            "1 12 123 1234 12345 123456 1,234,567.89 0x1F 3.14e-10 ²³ 10/20/2030 1/2",
            "path/to/file.rs:42:7 https://example.com/a/b?c=d&e=f#g //comment\n/* block */",
            "Текст на русском, ελληνικά, עברית, العربية, हिन्दी, ไทย, Tiếng Việt",
            "混合 mixed 日本語テキスト and 한국어 text — «quotes» „Anführung“",
            "a\n  ",
            "x  \n\n  ",
            "end with spaces   ",
            "\t\t\tindent\n\t\n\t",
            "<|endoftext|>after<|endofprompt|> <|fim_prefix|>x<|fim_middle|>y<|fim_suffix|>",
            "<|endoftext",
            "CamelCaseWord HTTPServer iPhone XMLHttpRequest ǅungla",
        ]
        .map(String::from),
    );
    for (c, n) in [
        ('a', 1000),
        (' ', 500),
        ('\n', 300),
        ('😀', 100),
        ('東', 200),
        ('9', 301),
        ('-', 257),
    ] {
        texts.push(c.to_string().repeat(n));
    }
    texts.push("ab".repeat(400));
    texts.push("The quick brown fox. ".repeat(40));
    texts
}

fn first_difference(
    encoding: Encoding,
    texts: &[String],
    ours: &[Vec<u32>],
    theirs: &[Vec<u32>],
) -> Option<String> {
    texts
        .iter()
        .zip(ours.iter().zip(theirs))
        .find(|(_, (a, b))| a != b)
        .map(|(text, (a, b))| {
            format!(
                "{}: {text:?}\n ours     {a:?}\n tiktoken {b:?}",
                encoding.name()
            )
        })
}

#[test]
fn the_engine_equals_tiktoken_on_the_stress_corpus() {
    let texts = corpus();
    for encoding in Encoding::ALL {
        let bpe = ByteLevelBpe::new(encoding.parts().unwrap()).unwrap();
        let ours: Vec<Vec<u32>> = texts
            .iter()
            .map(|text| {
                let (mut ids, mut offsets) = (Vec::new(), Vec::new());
                bpe.encode(text, &mut ids, &mut offsets).unwrap();
                // Offsets go through the text in order, on character boundaries.
                let mut previous = 0;
                for &(start, end) in &offsets {
                    assert!(start >= previous && end > start && end <= text.len());
                    assert!(text.is_char_boundary(start) && text.is_char_boundary(end));
                    previous = start;
                }
                ids
            })
            .collect();
        let theirs = tiktoken_ids(encoding, &texts);
        if let Some(difference) = first_difference(encoding, &texts, &ours, &theirs) {
            panic!("{difference}");
        }
    }
}

#[test]
fn the_spec_loads_from_a_warm_cache_identically() {
    let texts = corpus();
    for encoding in Encoding::ALL {
        let spec = TokenizerSpec::parse(encoding.name()).unwrap();
        assert_eq!(spec, TokenizerSpec::Tiktoken(encoding));
        let engine = spec.load().unwrap();
        assert_eq!(engine.name(), encoding.name());
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let ours: Vec<Vec<u32>> = engine
            .encode_prompts(&refs)
            .unwrap()
            .into_iter()
            .map(|t| t.ids)
            .collect();
        let direct = ByteLevelBpe::new(encoding.parts().unwrap()).unwrap();
        let cached = cache::decode(&cache::encode(direct.parts())).unwrap();
        assert_eq!(&cached, direct.parts());
        let theirs = tiktoken_ids(encoding, &texts);
        if let Some(difference) = first_difference(encoding, &texts, &ours, &theirs) {
            panic!("{difference}");
        }
    }
}

/// `render --tokens` ids, through the real binary with its own tokenizer cache folder.
fn rendered_ids(encoding: Encoding, cache_dir: &std::path::Path) -> Vec<u32> {
    let run = support::run(
        support::prefixlint()
            .args([
                "render",
                "--tokens",
                "--no-config",
                "--tokenizer",
                encoding.name(),
            ])
            .arg("fixtures/measure/clean.j2")
            .env("PREFIXLINT_CACHE_DIR", cache_dir),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.stdout
        .lines()
        .skip(1)
        // Token rows are indented; the last line is the total.
        .filter(|line| line.starts_with(' '))
        .map(|line| line.split_whitespace().nth(1).unwrap().parse().unwrap())
        .collect()
}

#[test]
fn the_binary_counts_as_tiktoken_cold_and_warm() {
    let rendered = support::run(support::prefixlint().args([
        "render",
        "--no-config",
        "fixtures/measure/clean.j2",
    ]));
    assert_eq!(rendered.code, 0, "{}", rendered.stderr);
    for encoding in Encoding::ALL {
        let dir = tempfile::tempdir().unwrap();
        let cold = rendered_ids(encoding, dir.path());
        assert!(
            cache::entry_path(dir.path(), encoding.key()).is_file(),
            "no bpe-v4 cache entry for {}",
            encoding.name()
        );
        let warm = rendered_ids(encoding, dir.path());
        assert_eq!(cold, warm);
        let theirs = tiktoken_ids(encoding, std::slice::from_ref(&rendered.stdout));
        assert_eq!(cold, theirs[0], "{}", encoding.name());
    }
}

#[test]
fn a_tiktoken_encoding_has_no_chat_template() {
    let run = support::run(support::prefixlint().args([
        "render",
        "--no-config",
        "--tokenizer",
        "o200k_base",
        "--messages",
        "fixtures/measure/clean.j2",
    ]));
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("o200k_base has no chat template"),
        "{}",
        run.stderr
    );
}

/// `check --format json`'s `templates[0].tokens` for the measure fixture.
fn checked_tokens(args: &[&str], cache_dir: &std::path::Path) -> serde_json::Value {
    let run = support::run(
        support::prefixlint()
            .arg("check")
            .args(args)
            .args([
                "--no-cache",
                "--format",
                "json",
                "fixtures/measure/clean.j2",
            ])
            .env("PREFIXLINT_CACHE_DIR", cache_dir),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    report["templates"][0]["tokens"].clone()
}

#[test]
fn config_tokenizer_takes_the_encoding_names() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prefixlint.yaml");
    std::fs::write(&config, "tokenizer: cl100k_base\n").unwrap();
    let from_config = checked_tokens(&["--config", config.to_str().unwrap()], dir.path());
    let from_flag = checked_tokens(&["--no-config", "--tokenizer", "cl100k_base"], dir.path());
    let default = checked_tokens(&["--no-config"], dir.path());
    assert_eq!(from_config, from_flag);
    assert_ne!(from_config, default, "the config's tokenizer was not used");
}
