//! README.md and every page in docs/ cannot drift from the binary:
//! - every ```console block of every page is run: each `$ prefixlint ...` line against the
//!   real binary, its stdout then stderr compared with the lines under it (`[exit N]` last
//!   when it fails). Each test run gives the binary its own empty cache folder, so no output
//!   comes from an earlier build's results cache;
//! - the rule reference in docs/rules.md is generated from `rules/*.yaml`;
//! - relative links point at files that exist, and `#anchors` at headings that exist;
//! - the facts the README and docs state about the code (cache file names, configuration
//!   keys, counts of tested files, benchmark figures) are checked against the code and
//!   bench/RESULTS.md.
//!
//! After a change in output, `PREFIXLINT_UPDATE_DOCS=1 cargo test --test it readme::` rewrites the
//! blocks and the rule reference in place; review the diff like any other.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const UPDATE_ENV: &str = "PREFIXLINT_UPDATE_DOCS";
const RULES_BEGIN: &str =
    "<!-- rule reference: generated from rules/*.yaml by tests/it/readme.rs -->";
const RULES_END: &str = "<!-- end of rule reference -->";
const CACHE_FILES_BEGIN: &str =
    "<!-- cache files: checked against the code by tests/it/readme.rs -->";
const CACHE_FILES_END: &str = "<!-- end of cache files -->";
const REFERENCE_BEGIN: &str = "<!-- reference: one line per docs/*.md page -->";
const REFERENCE_END: &str = "<!-- end of reference -->";
/// The line that opts the ```console block right under it out of being run, with a reason
/// after the colon: `<!-- docs-test: not run: needs a live vLLM server -->`.
const NOT_RUN_MARKER: &str = "<!-- docs-test: not run:";
/// How many console blocks may carry [`NOT_RUN_MARKER`] across all pages. Raising it is a
/// visible change to this file, reviewed like any other.
const NOT_RUN_LIMIT: usize = 0;
/// The README is a quickstart; the reference lives in docs/ (issue 41: at most 25 KB).
const README_MAX_BYTES: usize = 25 * 1024;
/// ARCHITECTURE.md is the map of `src/`; how the stages are made fast is in
/// docs/performance.md (issue 41: at most 15 KB).
const ARCHITECTURE_MAX_BYTES: usize = 15 * 1024;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn updating() -> bool {
    let on = std::env::var_os(UPDATE_ENV).is_some_and(|v| !v.is_empty() && v != "0");
    if on {
        support::skip_outside_ci(&format!(
            "{UPDATE_ENV}=1 rewrites the docs instead of checking them"
        ));
    }
    on
}

/// README.md, then every `*.md` under docs/ (pages added later are found without being
/// registered), as paths relative to the repository root.
fn doc_pages() -> Vec<String> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|e| e == "md") {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    walk(&root().join("docs"), &mut found);
    let mut pages: Vec<String> = found
        .iter()
        .map(|p| {
            p.strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/")
        })
        .collect();
    pages.sort();
    pages.insert(0, "README.md".into());
    pages
}

fn read_page(page: &str) -> String {
    std::fs::read_to_string(root().join(page)).unwrap_or_else(|e| panic!("{page}: {e}"))
}

/// Rewrites a page from its current text. Tests run in parallel: the lock and the fresh
/// read keep one test's rewrite from undoing another's.
fn rewrite_page(page: &str, edit: impl FnOnce(&str) -> String) {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let text = read_page(page);
    std::fs::write(root().join(page), edit(&text)).unwrap();
}

/// Page text with each example's output replaced by `outputs` (in example order).
fn splice_outputs(page: &str, text: &str, outputs: &[String]) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let examples = console_blocks(page, text).examples;
    assert_eq!(
        examples.len(),
        outputs.len(),
        "{page} changed during the test"
    );
    let mut updated: Vec<&str> = Vec::new();
    let mut copied = 0;
    for (example, output) in examples.iter().zip(outputs) {
        updated.extend(&lines[copied..example.output.start]);
        updated.extend(output.lines());
        copied = example.output.end;
    }
    updated.extend(&lines[copied..]);
    updated.join("\n") + "\n"
}

/// One `$ command` of a console block, with the output the page shows for it.
#[derive(Debug)]
struct Example {
    /// 1-based line of the `$` in the page.
    line: usize,
    command: String,
    /// Line range of the expected output in the page (0-based, end exclusive).
    output: std::ops::Range<usize>,
}

/// A console block opted out with [`NOT_RUN_MARKER`].
#[derive(Debug)]
struct NotRun {
    /// 1-based line of the marker.
    line: usize,
    reason: String,
}

#[derive(Debug, Default)]
struct ConsoleBlocks {
    examples: Vec<Example>,
    not_run: Vec<NotRun>,
}

/// Every `$ ` command in the page's ```console blocks, and the blocks opted out.
fn console_blocks(page: &str, text: &str) -> ConsoleBlocks {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = ConsoleBlocks::default();
    let mut i = 0;
    while i < lines.len() {
        // ```console, or ````console for output that holds ``` itself (rule docs).
        let Some(fence) = lines[i]
            .trim_end()
            .strip_suffix("console")
            .filter(|f| f.len() >= 3 && f.chars().all(|c| c == '`'))
        else {
            assert!(
                !lines[i].starts_with(NOT_RUN_MARKER)
                    || lines
                        .get(i + 1)
                        .is_some_and(|next| next.ends_with("console")),
                "{page}:{}: `{NOT_RUN_MARKER}` stands right above the ```console block it opts out",
                i + 1
            );
            i += 1;
            continue;
        };
        let marker = i
            .checked_sub(1)
            .and_then(|above| lines[above].strip_prefix(NOT_RUN_MARKER));
        i += 1;
        let end = (i..lines.len())
            .find(|&j| lines[j].trim_end() == fence)
            .unwrap_or_else(|| panic!("{page}:{i}: unclosed {fence}console block"));
        if let Some(reason) = marker {
            let reason = reason.trim_end().trim_end_matches("-->").trim().to_owned();
            assert!(
                !reason.is_empty(),
                "{page}:{}: a console block opted out of the tests says why",
                i - 1
            );
            found.not_run.push(NotRun {
                line: i - 1,
                reason,
            });
            i = end + 1;
            continue;
        }
        while i < end {
            let Some(first) = lines[i].strip_prefix("$ ") else {
                panic!(
                    "{page}:{}: a console block holds `$ command` lines and their output; this line comes before any command",
                    i + 1
                );
            };
            let line = i + 1;
            let mut command = first.to_owned();
            while command.ends_with('\\') {
                command.pop();
                i += 1;
                command.push(' ');
                command.push_str(lines[i].trim());
            }
            i += 1;
            let start = i;
            while i < end && !lines[i].starts_with("$ ") {
                i += 1;
            }
            found.examples.push(Example {
                line,
                command,
                output: start..i,
            });
        }
        i = end + 1;
    }
    found
}

/// Splits a command line the way sh does for what the docs use: words, '...' and "...".
fn shell_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                word.extend(chars.by_ref().take_while(|&c| c != '\''));
            }
            '"' => {
                in_word = true;
                word.extend(chars.by_ref().take_while(|&c| c != '"'));
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// What the docs show for a run: stdout, then stderr, then `[exit N]` when it is not 0.
/// `cache_dir` is the run's own user cache folder (tokenizer and results caches), empty when
/// the test starts: a doc's output never comes from another build's results.
fn run_example(page: &str, example: &Example, cache_dir: &Path) -> String {
    let words = shell_words(&example.command);
    assert_eq!(
        words.first().map(String::as_str),
        Some("prefixlint"),
        "{page}:{}: console examples run prefixlint only: `{}`",
        example.line,
        example.command
    );
    for word in &words {
        assert!(
            !["|", ">", "<", "&&", ";"].contains(&word.as_str()),
            "{page}:{}: no shell operators in console examples: `{}`",
            example.line,
            example.command
        );
    }
    let out = Command::new(env!("CARGO_BIN_EXE_prefixlint"))
        .args(&words[1..])
        .current_dir(root())
        // Checked afresh: `PREFIXLINT_UPDATE_DOCS=1` never writes a cached report into a doc.
        .env("PREFIXLINT_NO_CACHE", "1")
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .env("PREFIXLINT_CACHE_DIR", cache_dir)
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("PREFIXLINT_CACHE_STATS")
        .env_remove("PREFIXLINT_STAGE_TIMES")
        .output()
        .unwrap_or_else(|e| panic!("{page}:{}: {e}", example.line));
    let mut shown = String::from_utf8_lossy(&out.stdout).into_owned();
    if !shown.is_empty() && !shown.ends_with('\n') {
        shown.push('\n');
    }
    shown.push_str(&String::from_utf8_lossy(&out.stderr));
    let code = out.status.code().unwrap_or(-1);
    if code != 0 {
        if !shown.is_empty() && !shown.ends_with('\n') {
            shown.push('\n');
        }
        shown.push_str(&format!("[exit {code}]\n"));
    }
    normalize(&shown)
}

/// Markdown keeps no trailing spaces and no trailing blank lines.
fn normalize(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let keep = lines
        .iter()
        .rposition(|l| !l.is_empty())
        .map_or(0, |i| i + 1);
    lines[..keep].iter().map(|l| format!("{l}\n")).collect()
}

fn first_difference(expected: &str, actual: &str) -> String {
    let expected: Vec<&str> = expected.lines().collect();
    let actual: Vec<&str> = actual.lines().collect();
    let at = (0..expected.len().max(actual.len()))
        .find(|&i| expected.get(i) != actual.get(i))
        .unwrap_or(0);
    format!(
        "output line {}:\n  page:   {:?}\n  binary: {:?}",
        at + 1,
        expected.get(at).copied().unwrap_or("<end>"),
        actual.get(at).copied().unwrap_or("<end>")
    )
}

#[test]
fn console_examples_in_the_readme_and_docs_match_the_binary() {
    let cache_dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let mut counts = Vec::new();
    let mut not_run = Vec::new();
    let mut total = 0;
    for page in doc_pages() {
        let text = read_page(&page);
        let lines: Vec<&str> = text.lines().collect();
        let blocks = console_blocks(&page, &text);
        let mut page_failures = 0;
        let mut outputs = Vec::new();
        for example in &blocks.examples {
            let expected = normalize(&lines[example.output.clone()].join("\n"));
            let actual = run_example(&page, example, cache_dir.path());
            if expected != actual {
                page_failures += 1;
                failures.push(format!(
                    "{page}:{}: `$ {}` prints something else; {}",
                    example.line,
                    example.command,
                    first_difference(&expected, &actual)
                ));
            }
            outputs.push(actual);
        }
        if updating() && page_failures > 0 {
            rewrite_page(&page, |text| splice_outputs(&page, text, &outputs));
            eprintln!("{UPDATE_ENV}: rewrote {page_failures} example(s) in {page}");
        }
        total += blocks.examples.len();
        counts.push(format!("{page} {}", blocks.examples.len()));
        not_run.extend(
            blocks
                .not_run
                .iter()
                .map(|n| format!("{page}:{}: {}", n.line, n.reason)),
        );
    }
    eprintln!("console examples run: {total} ({})", counts.join(", "));
    eprintln!(
        "console blocks not run: {} (at most {NOT_RUN_LIMIT}){}",
        not_run.len(),
        not_run
            .iter()
            .map(|n| format!("\n  {n}"))
            .collect::<String>()
    );
    // Counted past the limit (a `<=` against a limit of 0 reads as absurd to clippy).
    let over_the_limit = not_run.len().saturating_sub(NOT_RUN_LIMIT);
    assert_eq!(
        over_the_limit,
        0,
        "{} console blocks are opted out of the tests, more than NOT_RUN_LIMIT ({NOT_RUN_LIMIT}) in tests/it/readme.rs:\n{}",
        not_run.len(),
        not_run.join("\n")
    );
    // The examples moved out of the README are still found (30 when the reference moved).
    assert!(
        total >= 30,
        "only {total} console examples found: {counts:?}"
    );
    if updating() {
        return;
    }
    assert!(
        failures.is_empty(),
        "{}\n\n{UPDATE_ENV}=1 cargo test --test it readme:: rewrites them",
        failures.join("\n\n")
    );
}

#[derive(serde::Deserialize)]
struct RuleFile {
    code: String,
    name: String,
    severity: String,
    summary: String,
    docs: String,
}

/// The rules as `rules/*.yaml` says them, in code order, with their file names.
fn rule_files() -> Vec<(String, RuleFile)> {
    let mut rules: Vec<(String, RuleFile)> = std::fs::read_dir(root().join("rules"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|p| {
            let rule = serde_yaml_ng::from_str(&std::fs::read_to_string(&p).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p.file_name().unwrap().to_string_lossy().into_owned(), rule)
        })
        .collect();
    rules.sort_by(|a, b| a.1.code.cmp(&b.1.code));
    rules
}

/// Markdown headings of a rule's docs one level down, under the rule's own heading; lines in
/// code blocks are left alone.
fn demote_headings(docs: &str) -> String {
    let mut fence: Option<String> = None;
    let mut out = String::new();
    for line in docs.lines() {
        let ticks: String = line.chars().take_while(|&c| c == '`').collect();
        if ticks.len() >= 3 {
            match &fence {
                None => fence = Some(ticks),
                Some(open) if line.trim_end() == open => fence = None,
                Some(_) => {}
            }
        } else if fence.is_none() && line.starts_with('#') {
            out.push('#');
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The generated part of docs/rules.md: a table of every rule, then each rule's docs.
fn rule_reference() -> String {
    let rules = rule_files();
    let mut text = String::from("| code | name | default | what it catches |\n|---|---|---|---|\n");
    for (_, rule) in &rules {
        text.push_str(&format!(
            "| [{}](#{}) | `{}` | {} | {} |\n",
            rule.code,
            slug(&format!("{} `{}`", rule.code, rule.name)),
            rule.name,
            rule.severity,
            rule.summary.trim().replace('|', "\\|").replace('\n', " ")
        ));
    }
    for (file, rule) in &rules {
        text.push_str(&format!(
            "\n## {} `{}`\n\nDefault severity: **{}**. {} ([rules/{file}](../rules/{file}))\n\n{}",
            rule.code,
            rule.name,
            rule.severity,
            rule.summary.trim(),
            demote_headings(rule.docs.trim_end())
        ));
    }
    text
}

#[test]
fn the_rule_reference_is_generated_from_the_rule_files() {
    let page = "docs/rules.md";
    let text = read_page(page);
    let start = text
        .find(RULES_BEGIN)
        .unwrap_or_else(|| panic!("{page} has no `{RULES_BEGIN}` marker"))
        + RULES_BEGIN.len();
    let end = start
        + text[start..]
            .find(RULES_END)
            .unwrap_or_else(|| panic!("{page} has no `{RULES_END}` marker"));
    let want = format!("\n{}", rule_reference());
    if text[start..end] == want {
        return;
    }
    if updating() {
        rewrite_page(page, |text| {
            let start = text.find(RULES_BEGIN).unwrap() + RULES_BEGIN.len();
            let end = start + text[start..].find(RULES_END).unwrap();
            format!("{}{want}{}", &text[..start], &text[end..])
        });
        eprintln!("{UPDATE_ENV}: rewrote the rule reference in {page}");
        return;
    }
    panic!(
        "the rule reference in {page} differs from rules/*.yaml; it should read:\n{want}\n{UPDATE_ENV}=1 cargo test --test it readme:: rewrites it"
    );
}

/// The binary embeds the same rules the docs list.
#[test]
fn every_rule_file_is_listed_by_the_binary() {
    let out = Command::new(env!("CARGO_BIN_EXE_prefixlint"))
        .env("PREFIXLINT_NO_CACHE", "1")
        .arg("rules")
        .output()
        .unwrap();
    let listed: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect();
    let in_files: Vec<String> = rule_files().into_iter().map(|(_, r)| r.code).collect();
    assert_eq!(listed, in_files);
}

/// Lines outside fenced code blocks, with their 1-based numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<String> = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let ticks: String = line
            .trim_start()
            .chars()
            .take_while(|&c| c == '`')
            .collect();
        if ticks.len() >= 3 {
            match &fence {
                None => fence = Some(ticks),
                Some(open) if line.trim() == open => fence = None,
                Some(_) => {}
            }
            continue;
        }
        if fence.is_none() {
            out.push((i + 1, line));
        }
    }
    out
}

/// The anchor GitHub gives a heading: lower case, spaces to `-`, other punctuation dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown page's headings (a repeated heading gets `-1`, `-2`, …).
fn anchors(text: &str) -> BTreeSet<String> {
    let link = regex::Regex::new(r"\[([^\]]*)\]\([^)]*\)").unwrap();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut found = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let title = link.replace_all(&line[hashes..], "$1");
        let base = slug(title.trim_end_matches('#'));
        let n = seen.entry(base.clone()).or_insert(0);
        found.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    found
}

#[test]
fn relative_links_point_at_files_and_anchors_that_exist() {
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let code_span = regex::Regex::new(r"`+[^`]*`+").unwrap();
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in doc_pages() {
        let text = read_page(&page);
        let page_dir = Path::new(&page)
            .parent()
            .unwrap_or(Path::new(""))
            .to_owned();
        for (number, line) in prose_lines(&text) {
            let line = code_span.replace_all(line, "");
            for caps in link.captures_iter(&line) {
                let target = &caps[1];
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (path, anchor) = match target.split_once('#') {
                    Some((path, anchor)) => (path, Some(anchor)),
                    None => (target, None),
                };
                let file = if path.is_empty() {
                    root().join(&page)
                } else {
                    root().join(&page_dir).join(path)
                };
                if !file.exists() {
                    broken.push(format!("{page}:{number}: {target}: no such file"));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                if file.extension().is_some_and(|e| e == "md") {
                    let heads = anchors(&std::fs::read_to_string(&file).unwrap());
                    if !heads.contains(anchor) {
                        broken.push(format!(
                            "{page}:{number}: {target}: no heading with anchor `{anchor}` in {}",
                            file.strip_prefix(root()).unwrap_or(&file).display()
                        ));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(checked >= 40, "only {checked} relative links found");
}

/// The README's Reference section lists every page in docs/, one line each.
#[test]
fn every_docs_page_has_a_line_in_the_readme_reference() {
    let readme = read_page("README.md");
    let start = readme
        .find(REFERENCE_BEGIN)
        .unwrap_or_else(|| panic!("README.md has no `{REFERENCE_BEGIN}` marker"));
    let end = start
        + readme[start..]
            .find(REFERENCE_END)
            .unwrap_or_else(|| panic!("README.md has no `{REFERENCE_END}` marker"));
    let section = &readme[start..end];
    let missing: Vec<String> = doc_pages()
        .into_iter()
        .skip(1)
        .filter(|page| {
            !section
                .lines()
                .any(|l| l.starts_with(&format!("- [{page}]({page})")))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "README.md's Reference section has no line for {missing:?}; add one each, in the form\n- [docs/NAME.md](docs/NAME.md): what the page covers"
    );
}

#[test]
fn the_readme_is_a_quickstart() {
    let size = std::fs::metadata(root().join("README.md")).unwrap().len() as usize;
    assert!(
        size <= README_MAX_BYTES,
        "README.md is {size} bytes, over {README_MAX_BYTES}: move reference material to a page in docs/"
    );
}

#[test]
fn the_architecture_is_a_map() {
    let size = std::fs::metadata(root().join("ARCHITECTURE.md"))
        .unwrap()
        .len() as usize;
    assert!(
        size <= ARCHITECTURE_MAX_BYTES,
        "ARCHITECTURE.md is {size} bytes, over {ARCHITECTURE_MAX_BYTES}: keep the map, the invariants and where things go; move the rest to a page in docs/"
    );
}

/// The README opens with the two commands a newcomer runs first: the main job on the
/// bundled templates, and the tests.
#[test]
fn readme_opens_with_the_main_job_and_the_test_command() {
    let readme = read_page("README.md");
    let first_block = readme
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the README has a ```sh block");
    let commands: Vec<&str> = first_block
        .lines()
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .collect();
    assert_eq!(
        commands,
        [
            "cargo run --release -- check fixtures/prompts",
            "bash scripts/test.sh"
        ],
        "the first ```sh block of README.md"
    );
    let before = &readme[..readme.find("```sh").unwrap()];
    assert_eq!(
        before.matches("\n## ").count(),
        0,
        "the two commands come before the first section"
    );
}

/// CI runs what the README tells people to run.
#[test]
fn ci_runs_the_readme_test_command() {
    let readme = read_page("README.md");
    let command = "bash scripts/test.sh";
    assert!(
        readme.contains(&format!("```sh\n{command}")),
        "the README shows `{command}` as the test command"
    );
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(
        ci.lines().any(|l| l.trim() == command),
        ".ci/run runs `{command}`"
    );
    for check in [
        "cargo fmt --check",
        "cargo clippy --all-targets --locked -- -D warnings",
    ] {
        assert!(
            ci.lines().any(|l| l.trim() == check),
            ".ci/run runs `{check}`"
        );
    }
}

/// The file names the README lists under "Where prefixlint writes outside your project",
/// as written there (`bpe-v4-<sha256>.bin`, `results/<project>/`).
fn documented_cache_files() -> BTreeSet<String> {
    let readme = read_page("README.md");
    let start = readme
        .find(CACHE_FILES_BEGIN)
        .unwrap_or_else(|| panic!("README.md has no `{CACHE_FILES_BEGIN}` marker"));
    let end = start + readme[start..].find(CACHE_FILES_END).unwrap();
    readme[start..end]
        .lines()
        .filter_map(|l| l.strip_prefix("- `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_owned)
        .collect()
}

/// The names the code gives what it writes into the user cache folder, from the functions
/// that name them.
#[test]
fn the_readme_lists_the_cache_files_the_code_names() {
    use prefixlint::tokenize::{cache, model_cache};
    let sha = "<sha256>";
    let name = |path: PathBuf| path.to_string_lossy().into_owned();
    let base = cache::cache_dir().expect("HOME is set in tests");
    let results = prefixlint::results_cache::default_dir(&root()).expect("a cache folder");
    let results_folder = results
        .strip_prefix(&base)
        .expect("the results cache is in the user cache folder")
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy()
        .into_owned();
    let from_code: BTreeSet<String> = [
        name(cache::entry_path(Path::new(""), sha)),
        name(cache::specials_path(Path::new(""), sha)),
        name(model_cache::entry_path(Path::new(""), sha)),
        name(cache::unsupported_marker(Path::new(""), sha)),
        format!("{results_folder}/<project>/"),
    ]
    .into();
    assert_eq!(documented_cache_files(), from_code);
}

/// What real runs leave in an empty cache folder is exactly what the README lists: the
/// embedded tokenizer, a WordPiece file (converted to the flat form, marked unsupported by
/// the BPE engine) and a `check` that stores results.
#[test]
fn real_runs_write_only_the_documented_cache_files() {
    let dir = tempfile::tempdir().unwrap();
    let wordpiece = support::tokenizers::wordpiece_tokenizer();
    let runs: [Vec<std::ffi::OsString>; 2] = [
        vec![
            "check".into(),
            "--no-config".into(),
            "fixtures/prompts/support_agent_fixed.j2".into(),
        ],
        vec![
            "render".into(),
            "--tokens".into(),
            "--no-config".into(),
            "--tokenizer".into(),
            wordpiece.into(),
            "fixtures/measure/clean.j2".into(),
        ],
    ];
    for args in runs {
        let out = Command::new(env!("CARGO_BIN_EXE_prefixlint"))
            .args(&args)
            .current_dir(root())
            .env("PREFIXLINT_CACHE_DIR", dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let patterns: Vec<(String, regex::Regex)> = documented_cache_files()
        .into_iter()
        .map(|doc| {
            let pattern = regex::escape(doc.trim_end_matches('/'))
                .replace("<sha256>", "[0-9a-f]{64}")
                .replace("<project>", "[0-9a-f]+");
            (doc, regex::Regex::new(&format!("^{pattern}$")).unwrap())
        })
        .collect();
    let entries = walkdir(dir.path());
    let mut matched = Vec::new();
    let mut used = BTreeSet::new();
    for entry in &entries {
        if let Some((doc, _)) = patterns.iter().find(|(_, re)| re.is_match(entry)) {
            used.insert(doc.clone());
            matched.push(format!("{entry}/"));
        }
    }
    // What a listed folder holds is its own business; the folders above it are the path.
    let unmatched: Vec<&String> = entries
        .iter()
        .filter(|entry| {
            let as_folder = format!("{entry}/");
            !matched.iter().any(|m| {
                *m == as_folder || entry.starts_with(m.as_str()) || m.starts_with(&as_folder)
            })
        })
        .collect();
    assert!(
        unmatched.is_empty(),
        "written but not in the README's list: {unmatched:?}"
    );
    let unused: Vec<&String> = patterns
        .iter()
        .map(|(doc, _)| doc)
        .filter(|doc| !used.contains(*doc))
        .collect();
    assert!(unused.is_empty(), "listed but not written: {unused:?}");
}

/// Every file and folder under `dir`, relative and `/`-separated.
fn walkdir(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().map(Result::unwrap) {
            let path = entry.path();
            out.push(
                path.strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/"),
            );
            if path.is_dir() {
                stack.push(path);
            }
        }
    }
    out.sort();
    out
}

/// docs/tokenizers.md says how many real tokenizer files the exactness tests run: the
/// embedded one and every file the setup installs (tests/it/families.rs, tests/it/flat_models.rs).
#[test]
fn the_tested_tokenizer_count_is_what_the_tests_run() {
    let text = read_page("docs/tokenizers.md");
    let claimed: usize = regex::Regex::new(r"tested on (\d+) real tokenizer files")
        .unwrap()
        .captures(&text)
        .expect("docs/tokenizers.md says how many tokenizer files are tested")[1]
        .parse()
        .unwrap();
    let installed = support::tokenizers::every_real_tokenizer();
    assert_eq!(
        claimed,
        installed.len() + 1,
        "the embedded Qwen3 and {} installed files: {:?}",
        installed.len(),
        installed.iter().map(|(n, _)| n).collect::<Vec<_>>()
    );
}

/// The speed figures docs/tokenizers.md quotes are bench/RESULTS.md's.
#[test]
fn the_tokenizer_speed_figures_are_in_the_results() {
    let text = read_page("docs/tokenizers.md").replace('\n', " ");
    let caps = regex::Regex::new(
        r"On all (\d+) real tokenizer files that `bench/tokenizers.sh` times .*? takes (\d\.\d+)-(\d\.\d+) of the time Python takes",
    )
    .unwrap()
    .captures(&text)
    .expect("docs/tokenizers.md quotes the tokenizer speed figures");
    let results = std::fs::read_to_string(root().join("bench/RESULTS.md")).unwrap();
    let line = format!(
        "{n} of {n} at ratio <= 0.5; ratios {}-{}",
        &caps[2],
        &caps[3],
        n = &caps[1]
    );
    assert!(
        results.contains(&line),
        "bench/RESULTS.md does not say `{line}`"
    );
}

/// The configuration page's example holds every key `prefixlint.yaml` takes, and the real
/// config reader accepts it.
#[test]
fn the_configuration_example_has_every_key_and_loads() {
    let page = read_page("docs/configuration.md");
    let example = page
        .split("```yaml\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("docs/configuration.md has a ```yaml example");
    prefixlint::config::Config::parse(example, "docs/configuration.md")
        .unwrap_or_else(|e| panic!("the example does not load: {e:?}"));
    let shown: BTreeSet<String> = example
        .lines()
        .filter(|l| !l.starts_with([' ', '#', '-']))
        .filter_map(|l| l.split(':').next())
        .map(str::to_owned)
        .collect();
    // `pub NAME:` fields of `struct Config` that serde reads (not `#[serde(skip)]`).
    let source = std::fs::read_to_string(root().join("src/config.rs")).unwrap();
    let body = source
        .split("pub struct Config {")
        .nth(1)
        .and_then(|rest| rest.split("\n}").next())
        .expect("src/config.rs defines struct Config");
    let mut keys = BTreeSet::new();
    let mut skip = false;
    for line in body.lines().map(str::trim) {
        if line.starts_with("#[serde(skip") {
            skip = true;
        } else if let Some(field) = line.strip_prefix("pub ") {
            let name = field.split(':').next().unwrap().trim().to_owned();
            if !std::mem::take(&mut skip) {
                keys.insert(name);
            }
        }
    }
    assert!(keys.len() >= 20, "config keys not found: {keys:?}");
    assert_eq!(
        shown, keys,
        "docs/configuration.md's example against struct Config"
    );
}

/// A setup step never promises that a test will be skipped: a missing tool fails its tests.
#[test]
fn no_setup_step_says_a_test_is_skipped() {
    for entry in std::fs::read_dir(root().join("scripts/setup.d")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap().to_lowercase();
        assert!(
            !text.contains("skipped") && !text.contains("will skip"),
            "{}: says a test is skipped; tests fail when what they need is missing",
            path.display()
        );
    }
}

#[test]
fn shell_words_split_like_sh() {
    assert_eq!(
        shell_words(r#"prefixlint check 'a b' "c d" e"#),
        ["prefixlint", "check", "a b", "c d", "e"]
    );
    assert_eq!(shell_words("a ''"), ["a", ""]);
}

#[test]
fn examples_are_found_with_their_output() {
    let text = "x\n```console\n$ prefixlint rules \\\n    --help\nout 1\nout 2\n$ prefixlint explain PL001\n```\n";
    let found = console_blocks("t.md", text).examples;
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].command, "prefixlint rules  --help");
    assert_eq!(found[0].output, 4..6);
    assert_eq!(found[1].output, 7..7);
    let spliced = splice_outputs("t.md", text, &["new\n".into(), "a\nb\n".into()]);
    assert_eq!(
        spliced,
        "x\n```console\n$ prefixlint rules \\\n    --help\nnew\n$ prefixlint explain PL001\na\nb\n```\n"
    );
    let nested = "````console\n$ prefixlint explain PL004\n```jinja\n{{ x }}\n```\n````\n";
    let found = console_blocks("t.md", nested).examples;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].output, 2..5);
}

#[test]
fn a_block_is_opted_out_only_by_the_marker_and_a_reason() {
    let text = "<!-- docs-test: not run: needs a live server -->\n```console\n$ prefixlint measure x --server http://h\nout\n```\n```console\n$ prefixlint rules\n```\n";
    let found = console_blocks("t.md", text);
    assert_eq!(found.examples.len(), 1);
    assert_eq!(found.examples[0].command, "prefixlint rules");
    assert_eq!(found.not_run.len(), 1);
    assert_eq!(found.not_run[0].reason, "needs a live server");
    assert_eq!(found.not_run[0].line, 1);
    let no_reason = "<!-- docs-test: not run: -->\n```console\n$ prefixlint rules\n```\n";
    assert!(std::panic::catch_unwind(|| console_blocks("t.md", no_reason)).is_err());
    let astray = "<!-- docs-test: not run: why -->\n\n```console\n$ prefixlint rules\n```\n";
    assert!(std::panic::catch_unwind(|| console_blocks("t.md", astray)).is_err());
}

#[test]
fn anchors_are_those_github_makes() {
    let text = "# `prefixlint check`\n## JSON report (`--format json`)\n## How often a value changes: PL001's severity\n```console\n## not a heading\n```\n## Notes\n## Notes\n### [docs/x.md](docs/x.md) link\n";
    let found = anchors(text);
    let want: BTreeSet<String> = [
        "prefixlint-check",
        "json-report---format-json",
        "how-often-a-value-changes-pl001s-severity",
        "notes",
        "notes-1",
        "docsxmd-link",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    assert_eq!(found, want);
}
