//! README.md cannot drift from the binary:
//! - every ```console block is run: each `$ prefixlint ...` line against the real binary, its
//!   stdout then stderr compared with the lines under it (`[exit N]` last when it fails);
//! - the rule table is generated from `rules/*.yaml`;
//! - relative links point at files that exist, and `.ci/run` runs the README's test command.
//!
//! After a change in output, `PREFIXLINT_UPDATE_DOCS=1 cargo test --test readme` rewrites the
//! blocks and the table in place; review the diff like any other.

mod common;

use std::path::PathBuf;
use std::process::Command;

const UPDATE_ENV: &str = "PREFIXLINT_UPDATE_DOCS";
const RULES_BEGIN: &str =
    "<!-- rules table: generated from rules/*.yaml, checked by tests/readme.rs -->";
const RULES_END: &str = "<!-- end of rules table -->";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn readme_path() -> PathBuf {
    root().join("README.md")
}

fn updating() -> bool {
    let on = std::env::var_os(UPDATE_ENV).is_some_and(|v| !v.is_empty() && v != "0");
    if on {
        common::skip_outside_ci(&format!(
            "{UPDATE_ENV}=1 rewrites the docs instead of checking them"
        ));
    }
    on
}

/// Rewrites README.md from its current text. Tests run in parallel: the lock and the fresh
/// read keep one test's rewrite from undoing another's.
fn rewrite_readme(edit: impl FnOnce(&str) -> String) {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let text = std::fs::read_to_string(readme_path()).unwrap();
    std::fs::write(readme_path(), edit(&text)).unwrap();
}

/// README text with each example's output replaced by `outputs` (in example order).
fn splice_outputs(readme: &str, outputs: &[String]) -> String {
    let lines: Vec<&str> = readme.lines().collect();
    let examples = examples(readme);
    assert_eq!(
        examples.len(),
        outputs.len(),
        "README.md changed during the test"
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

/// One `$ command` of a console block, with the output the README shows for it.
#[derive(Debug)]
struct Example {
    /// 1-based line of the `$` in README.md.
    line: usize,
    command: String,
    /// Line range of the expected output in README.md (0-based, end exclusive).
    output: std::ops::Range<usize>,
}

/// Every `$ ` command in the ```console blocks.
fn examples(readme: &str) -> Vec<Example> {
    let lines: Vec<&str> = readme.lines().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        // ```console, or ````console for output that holds ``` itself (rule docs).
        let Some(fence) = lines[i]
            .trim_end()
            .strip_suffix("console")
            .filter(|f| f.len() >= 3 && f.chars().all(|c| c == '`'))
        else {
            i += 1;
            continue;
        };
        i += 1;
        let end = (i..lines.len())
            .find(|&j| lines[j].trim_end() == fence)
            .unwrap_or_else(|| panic!("README.md:{i}: unclosed {fence}console block"));
        while i < end {
            let Some(first) = lines[i].strip_prefix("$ ") else {
                panic!(
                    "README.md:{}: a console block holds `$ command` lines and their output; this line comes before any command",
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
            found.push(Example {
                line,
                command,
                output: start..i,
            });
        }
        i = end + 1;
    }
    found
}

/// Splits a command line the way sh does for what the README uses: words, '...' and "...".
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

/// What the README shows for a run: stdout, then stderr, then `[exit N]` when it is not 0.
fn run_example(example: &Example) -> String {
    let words = shell_words(&example.command);
    assert_eq!(
        words.first().map(String::as_str),
        Some("prefixlint"),
        "README.md:{}: console examples run prefixlint only: `{}`",
        example.line,
        example.command
    );
    for word in &words {
        assert!(
            !["|", ">", "<", "&&", ";"].contains(&word.as_str()),
            "README.md:{}: no shell operators in console examples: `{}`",
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
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap_or_else(|e| panic!("README.md:{}: {e}", example.line));
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
        "output line {}:\n  README: {:?}\n  binary: {:?}",
        at + 1,
        expected.get(at).copied().unwrap_or("<end>"),
        actual.get(at).copied().unwrap_or("<end>")
    )
}

#[test]
fn readme_console_examples_match_the_binary() {
    let readme = std::fs::read_to_string(readme_path()).unwrap();
    let lines: Vec<&str> = readme.lines().collect();
    let examples = examples(&readme);
    assert!(
        examples.len() >= 8,
        "the README's console examples were not found: {examples:?}"
    );
    let mut failures = Vec::new();
    let mut outputs = Vec::new();
    for example in &examples {
        let expected = normalize(&lines[example.output.clone()].join("\n"));
        let actual = run_example(example);
        if expected != actual {
            failures.push(format!(
                "README.md:{}: `$ {}` prints something else; {}",
                example.line,
                example.command,
                first_difference(&expected, &actual)
            ));
        }
        outputs.push(actual);
    }
    if updating() && !failures.is_empty() {
        rewrite_readme(|text| splice_outputs(text, &outputs));
        eprintln!(
            "{UPDATE_ENV}: rewrote {} example(s) in README.md",
            failures.len()
        );
        return;
    }
    assert!(
        failures.is_empty(),
        "{}\n\n{UPDATE_ENV}=1 cargo test --test readme rewrites them",
        failures.join("\n\n")
    );
}

#[derive(serde::Deserialize)]
struct RuleFile {
    code: String,
    name: String,
    severity: String,
    summary: String,
}

/// The table as `rules/*.yaml` says it, in code order.
fn rules_table() -> String {
    let mut rules: Vec<RuleFile> = std::fs::read_dir(root().join("rules"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|p| {
            serde_yaml_ng::from_str(&std::fs::read_to_string(&p).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        })
        .collect();
    rules.sort_by(|a, b| a.code.cmp(&b.code));
    let mut table =
        String::from("| code | name | default | what it catches |\n|---|---|---|---|\n");
    for rule in &rules {
        table.push_str(&format!(
            "| {} | `{}` | {} | {} |\n",
            rule.code,
            rule.name,
            rule.severity,
            rule.summary.trim().replace('|', "\\|").replace('\n', " ")
        ));
    }
    table
}

#[test]
fn readme_rule_table_is_generated_from_the_rule_files() {
    let readme = std::fs::read_to_string(readme_path()).unwrap();
    let start = readme
        .find(RULES_BEGIN)
        .unwrap_or_else(|| panic!("README.md has no `{RULES_BEGIN}` marker"))
        + RULES_BEGIN.len();
    let end = start
        + readme[start..]
            .find(RULES_END)
            .unwrap_or_else(|| panic!("README.md has no `{RULES_END}` marker"));
    let want = format!("\n{}", rules_table());
    if readme[start..end] == want {
        return;
    }
    if updating() {
        rewrite_readme(|text| {
            let start = text.find(RULES_BEGIN).unwrap() + RULES_BEGIN.len();
            let end = start + text[start..].find(RULES_END).unwrap();
            format!("{}{want}{}", &text[..start], &text[end..])
        });
        eprintln!("{UPDATE_ENV}: rewrote the rule table in README.md");
        return;
    }
    panic!(
        "the README's rule table differs from rules/*.yaml; it should read:\n{want}\n{UPDATE_ENV}=1 cargo test --test readme rewrites it"
    );
}

/// The binary embeds the same rules the README lists.
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
    let table = rules_table();
    let in_table: Vec<&str> = table
        .lines()
        .skip(2)
        .filter_map(|l| l.split('|').nth(1).map(str::trim))
        .collect();
    assert_eq!(listed, in_table);
}

#[test]
fn readme_links_point_at_files_that_exist() {
    let readme = std::fs::read_to_string(readme_path()).unwrap();
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let mut checked = 0;
    for caps in link.captures_iter(&readme) {
        let target = &caps[1];
        if target.starts_with("http://")
            || target.starts_with("https://")
            || target.starts_with('#')
        {
            continue;
        }
        let path = target.split('#').next().unwrap_or(target);
        assert!(
            root().join(path).exists(),
            "README.md links to {target}, which does not exist"
        );
        checked += 1;
    }
    assert!(checked >= 2, "only {checked} relative links found");
    assert!(
        readme.contains("](docs/engines.md)"),
        "docs/engines.md is linked"
    );
}

/// The README opens with the two commands a newcomer runs first: the main job on the
/// bundled templates, and the tests.
#[test]
fn readme_opens_with_the_main_job_and_the_test_command() {
    let readme = std::fs::read_to_string(readme_path()).unwrap();
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
    let readme = std::fs::read_to_string(readme_path()).unwrap();
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
    let found = examples(text);
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].command, "prefixlint rules  --help");
    assert_eq!(found[0].output, 4..6);
    assert_eq!(found[1].output, 7..7);
    let spliced = splice_outputs(text, &["new\n".into(), "a\nb\n".into()]);
    assert_eq!(
        spliced,
        "x\n```console\n$ prefixlint rules \\\n    --help\nnew\n$ prefixlint explain PL001\na\nb\n```\n"
    );
    let nested = "````console\n$ prefixlint explain PL004\n```jinja\n{{ x }}\n```\n````\n";
    let found = examples(nested);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].output, 2..5);
}
