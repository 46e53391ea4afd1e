//! The rules every test keeps, checked on the test sources themselves (tests/README.md):
//! no test changes the process environment, every child that may run `check` is kept from
//! a results cache it did not make, and every place a test may do less than it says is
//! listed in tests/README.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every Rust file under the named folders, by its path in the crate, with its text.
fn sources(folders: &[&str]) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for folder in folders {
        rust_files(&root().join(folder), &mut files);
    }
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let name = path
                .strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect()
}

/// Lines outside `//` comments that contain `needle`, as `file:line`.
fn code_lines_with(files: &[(String, String)], needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (name, text) in files {
        for (index, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains(needle) {
                found.push(format!("{name}:{}", index + 1));
            }
        }
    }
    found
}

/// `std::env::set_var` races with every other test thread that reads the environment (and
/// is `unsafe` from Rust 2024): a test passes environment to its child process instead, or
/// the library takes the setting as an argument.
#[test]
fn no_test_changes_the_process_environment() {
    let files = sources(&["tests", "src", "benches", "examples"]);
    // Spelled in two halves, so this file does not find itself.
    for call in [concat!("set", "_var("), concat!("remove", "_var(")] {
        let found = code_lines_with(&files, call);
        assert!(
            found.is_empty(),
            "{call} changes the whole process's environment; pass the variable to the child (Command::env) or the setting to the library:\n{}",
            found.join("\n")
        );
    }
}

/// A test file that starts the binary (or hands it to a tool that does: pre-commit, the
/// Action's steps, a shell) sets `PREFIXLINT_NO_CACHE` on those children, so no test reads
/// a report that another test, another build or the user stored. tests/it/results_cache.rs
/// removes it and names its own folder in each test.
#[test]
fn every_test_that_starts_the_binary_keeps_it_from_a_shared_results_cache() {
    let starts_the_binary = ["CARGO_BIN_EXE_prefixlint", "binary()", "PREFIXLINT_BIN"];
    let mut unguarded = Vec::new();
    for (name, text) in sources(&["tests"]) {
        let starts = starts_the_binary.iter().any(|s| text.contains(s));
        let guarded = text.contains("PREFIXLINT_NO_CACHE") || text.contains("NO_CACHE.0");
        if starts && !guarded {
            unguarded.push(name);
        }
    }
    assert!(
        unguarded.is_empty(),
        "these start prefixlint without PREFIXLINT_NO_CACHE (use tests/support's prefixlint(), or .env(NO_CACHE.0, NO_CACHE.1)):\n{}",
        unguarded.join("\n")
    );
}

/// The helpers themselves set it on every command they build.
#[test]
fn the_shared_helpers_turn_the_results_cache_off() {
    let helper = "tests/support/mod.rs";
    let text = std::fs::read_to_string(root().join(helper)).unwrap();
    let body = text
        .split("pub fn prefixlint() -> Command {")
        .nth(1)
        .unwrap_or_else(|| panic!("{helper}: no prefixlint() helper"));
    let body = &body[..body.find("\n}").unwrap()];
    assert!(
        body.contains(".env(NO_CACHE.0, NO_CACHE.1)"),
        "{helper}: prefixlint() must set PREFIXLINT_NO_CACHE"
    );
    assert!(text.contains(r#"pub const NO_CACHE: (&str, &str) = ("PREFIXLINT_NO_CACHE", "1");"#));
}

/// The skip sites: `skip_outside_ci(` calls in tests/, by file.
fn skip_sites() -> BTreeMap<String, usize> {
    let mut sites = BTreeMap::new();
    for (name, text) in sources(&["tests"]) {
        let calls = text
            .lines()
            .map(|line| line.split("//").next().unwrap_or(""))
            .filter(|code| {
                code.contains("skip_outside_ci(") && !code.contains("fn skip_outside_ci(")
            })
            .count();
        if calls > 0 {
            sites.insert(name, calls);
        }
    }
    sites
}

/// The rows of tests/README.md's skip table, by the file each names (first column).
fn listed_skips() -> BTreeMap<String, usize> {
    let text = std::fs::read_to_string(root().join("tests/README.md")).unwrap();
    let table = text
        .split("<!-- skips: begin -->")
        .nth(1)
        .and_then(|rest| rest.split("<!-- skips: end -->").next())
        .expect("tests/README.md has the skips table between its markers");
    let mut listed = BTreeMap::new();
    for row in table.lines().filter(|l| l.starts_with('|')).skip(2) {
        let file = row.split('|').nth(1).unwrap().trim().trim_matches('`');
        *listed.entry(file.to_owned()).or_insert(0) += 1;
    }
    listed
}

/// Every place a test may skip is a `skip_outside_ci` call (which fails under `CI=true`),
/// and tests/README.md lists each one with its condition and why it is honest.
#[test]
fn every_skip_is_listed_in_the_tests_readme() {
    assert_eq!(
        skip_sites(),
        listed_skips(),
        "the skip_outside_ci call sites (left) and tests/README.md's table (right) differ"
    );
}

/// The finder above counts what it should.
#[test]
fn the_skip_counter_sees_calls_and_not_comments_or_the_definition() {
    let text = "pub fn skip_outside_ci(why: &str) {}\nskip_outside_ci(\"a\");\n// skip_outside_ci(\"b\")\n";
    let count = text
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .filter(|code| code.contains("skip_outside_ci(") && !code.contains("fn skip_outside_ci("))
        .count();
    assert_eq!(count, 1);
}
