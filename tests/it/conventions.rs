//! The command-line conventions of issue 44 §2: one exit-code table every command follows,
//! `--quiet`, `--color` with `NO_COLOR` and `CLICOLOR_FORCE`, and shell completions.

use crate::support::*;
use std::path::Path;
use std::process::Command;

/// A folder with a template that cannot be rendered (an unclosed block): input error.
fn broken_template(dir: &Path) -> String {
    let path = dir.join("broken.j2");
    std::fs::write(&path, "You are {% if user %}helpful.\n").unwrap();
    path.to_string_lossy().into_owned()
}

fn code(args: &[&str]) -> i32 {
    let r = run(prefixlint().args(args));
    assert!(
        !r.stderr.contains("panicked"),
        "{args:?} panicked:\n{}",
        r.stderr
    );
    r.code
}

/// README.md's exit-code table, command by command: 0 clean, 1 findings or breaks, 2 usage
/// or input errors, each case a command has.
#[test]
fn every_command_follows_the_exit_code_table() {
    let dir = tempfile::tempdir().unwrap();
    let broken = broken_template(dir.path());
    let missing = dir.path().join("missing.jsonl");
    let missing = missing.to_str().unwrap();
    let clean = "fixtures/prompts/support_agent_fixed.j2";
    let findings = "fixtures/prompts/support_agent.j2";
    let log = "fixtures/audit/requests.jsonl";
    let simulated = "tests/fixtures/simulate/vllm-33-blocks.jsonl.gz";
    let shape = [
        "--layers",
        "32",
        "--kv-heads",
        "8",
        "--head-dim",
        "128",
        "--weights",
        "16GB",
    ];
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec!["check", "--no-config", clean], 0),
        (vec!["check", "--no-config", findings], 1),
        (vec!["check", "--no-config", &broken], 2),
        (vec!["check", "--no-such-flag"], 2),
        (vec!["audit", "--no-config", log, "--fail-on", "never"], 0),
        (vec!["audit", "--no-config", log, "--fail-on", "break"], 1),
        (vec!["audit", "--no-config", missing], 2),
        (
            vec![
                "simulate",
                "--no-config",
                simulated,
                "--block-size",
                "32",
                "--kv-blocks",
                "33",
            ],
            0,
        ),
        (
            vec!["simulate", "--no-config", missing, "--kv-blocks", "33"],
            2,
        ),
        (
            [&["capacity", "--gpu-memory", "80GB"][..], &shape[..]].concat(),
            0,
        ),
        (
            [&["capacity", "--gpu-memory", "80XB"][..], &shape[..]].concat(),
            2,
        ),
        (vec!["render", "--no-config", findings], 0),
        (vec!["render", "--no-config", &broken], 2),
        (vec!["samples", "--no-config", findings], 0),
        (vec!["samples", "--no-config", missing], 2),
        (vec!["rules"], 0),
        (vec!["explain", "PL001"], 0),
        (vec!["explain", "PL999"], 2),
        (vec!["completions", "bash"], 0),
        (vec!["completions", "tcsh"], 2),
        (vec!["measure", "--server", "ftp://127.0.0.1:1", clean], 2),
        (vec!["no-such-command"], 2),
    ];
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(args, want)| {
            let got = code(args);
            (got != *want).then(|| format!("{args:?}: exit {got}, want {want}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn quiet_is_silent_on_a_clean_template() {
    for format in ["full", "concise"] {
        let r = run(prefixlint().args([
            "check",
            "--no-config",
            "fixtures/prompts/support_agent_fixed.j2",
            "--quiet",
            "--format",
            format,
        ]));
        assert_eq!(r.code, 0, "{format}: {}", r.stderr);
        assert_eq!(r.stdout, "", "{format}: stdout");
        assert_eq!(r.stderr, "", "{format}: stderr");
    }
}

/// Whether a full report has its summary: the table's header and the counts.
fn summarized(report: &str) -> bool {
    report.lines().any(|l| l.starts_with("template  ")) || report.contains(" checked")
}

#[test]
fn quiet_prints_the_findings_and_nothing_after_them() {
    let template = "fixtures/prompts/support_agent.j2";
    let full = run(prefixlint().args(["check", "--no-config", template]));
    let quiet = run(prefixlint().args(["check", "--no-config", template, "-q"]));
    assert_eq!(quiet.code, full.code);
    assert_eq!(quiet.code, 1);
    // The diagnostics are the full report's, byte for byte; the summary is gone.
    assert!(full.stdout.starts_with(&quiet.stdout));
    assert!(quiet.stdout.contains("PL001"), "{}", quiet.stdout);
    assert!(!summarized(&quiet.stdout), "{}", quiet.stdout);
    assert!(summarized(&full.stdout));

    let concise = run(prefixlint().args(["check", "--no-config", template, "--format", "concise"]));
    let concise_quiet = run(prefixlint().args([
        "check",
        "--no-config",
        template,
        "--format",
        "concise",
        "--quiet",
    ]));
    let findings: Vec<&str> = concise
        .stdout
        .lines()
        .filter(|l| !l.contains(": note: "))
        .collect();
    assert_eq!(concise_quiet.stdout.lines().collect::<Vec<_>>(), findings);
}

#[test]
fn quiet_verbose_adds_the_notes_but_not_the_summary() {
    let template = "fixtures/samples-and-stand-ins";
    let args = ["check", "--no-config", template, "--format", "concise"];
    let all = run(prefixlint().args(args));
    let notes: Vec<&str> = all
        .stdout
        .lines()
        .filter(|l| l.contains(": note: "))
        .collect();
    assert!(!notes.is_empty(), "the fixture has notes:\n{}", all.stdout);
    let quiet_verbose = run(prefixlint().args(args).args(["-q", "-v"]));
    assert_eq!(quiet_verbose.stdout, all.stdout);
    let quiet = run(prefixlint().args(args).arg("-q"));
    assert!(!quiet.stdout.contains(": note: "), "{}", quiet.stdout);

    let full = run(prefixlint().args(["check", "--no-config", template, "-q", "-v"]));
    assert!(full.stdout.contains("note: "), "{}", full.stdout);
    assert!(!summarized(&full.stdout), "{}", full.stdout);
}

const ESC: &str = "\u{1b}[";

/// The report on stdout (a pipe here), with the environment given; `None` removes a variable.
fn report_colored(args: &[&str], env: &[(&str, Option<&str>)]) -> bool {
    let mut cmd = prefixlint();
    cmd.args(["check", "--no-config", "fixtures/prompts/support_agent.j2"])
        .args(args)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE");
    for (name, value) in env {
        match value {
            Some(value) => cmd.env(name, value),
            None => cmd.env_remove(name),
        };
    }
    let r = run(&mut cmd);
    assert_eq!(r.code, 1, "{}", r.stderr);
    r.stdout.contains(ESC)
}

#[test]
fn color_follows_the_flag_then_no_color_then_clicolor_force() {
    // Auto on a pipe: plain.
    assert!(!report_colored(&[], &[]));
    assert!(report_colored(&["--color", "always"], &[]));
    assert!(report_colored(
        &["--color=always"],
        &[("NO_COLOR", Some("1"))]
    ));
    assert!(!report_colored(
        &["--color", "never"],
        &[("CLICOLOR_FORCE", Some("1"))]
    ));
    assert!(report_colored(&[], &[("CLICOLOR_FORCE", Some("1"))]));
    assert!(!report_colored(&[], &[("CLICOLOR_FORCE", Some("0"))]));
    assert!(!report_colored(
        &[],
        &[("CLICOLOR_FORCE", Some("1")), ("NO_COLOR", Some("1"))]
    ));
    // A global flag: before the command too.
    let r = run(prefixlint().args([
        "--color",
        "always",
        "check",
        "--no-config",
        "fixtures/prompts/support_agent.j2",
    ]));
    assert!(r.stdout.contains(ESC));
}

#[test]
fn color_applies_to_the_errors_on_stderr() {
    let missing = ["render", "--no-config", "no/such/template.j2"];
    let plain = run(prefixlint().args(missing).args(["--color", "never"]));
    let colored = run(prefixlint().args(missing).args(["--color", "always"]));
    assert_eq!(plain.code, 2);
    assert_eq!(colored.code, 2);
    assert!(!plain.stderr.contains(ESC), "{}", plain.stderr);
    assert!(colored.stderr.contains(ESC), "{}", colored.stderr);
}

fn completions(shell: &str) -> String {
    let r = run(prefixlint().args(["completions", shell]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("prefixlint"));
    r.stdout
}

/// `SHELL -n FILE`: the shell parses the script and runs nothing.
fn parses_in(shell: &str, script: &str) {
    assert!(
        Command::new(shell).arg("-c").arg("true").output().is_ok(),
        "{shell} is not installed: scripts/setup.d/52-shells.sh installs it"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prefixlint-completion");
    std::fs::write(&file, script).unwrap();
    let out = Command::new(shell).arg("-n").arg(&file).output().unwrap();
    assert!(
        out.status.success(),
        "{shell} -n: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn completions_parse_in_their_shells() {
    let bash = completions("bash");
    for command in [
        "check",
        "audit",
        "simulate",
        "completions",
        "--color",
        "--quiet",
    ] {
        assert!(bash.contains(command), "bash completion lacks {command}");
    }
    parses_in("bash", &bash);
    parses_in("zsh", &completions("zsh"));
    parses_in("fish", &completions("fish"));
    assert!(completions("powershell").contains("Register-ArgumentCompleter"));
}

#[test]
fn completions_in_bash_complete_the_commands() {
    // Loaded into a real bash and asked, as the shell asks it on <Tab>.
    let script = completions("bash");
    let probe = format!(
        "{script}\nCOMP_WORDS=(prefixlint si); COMP_CWORD=1; COMP_LINE='prefixlint si'; COMP_POINT=13\n_prefixlint prefixlint si prefixlint\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n"
    );
    let out = Command::new("bash").arg("-c").arg(probe).output().unwrap();
    let replies = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        replies.trim(),
        "simulate",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_man_page_is_roff_for_every_command() {
    let r = run(prefixlint().arg("man"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.starts_with(".ie") || r.stdout.contains(".TH prefixlint"),
        "{}",
        &r.stdout[..200.min(r.stdout.len())]
    );
    for command in ["check", "audit", "simulate", "capacity", "completions"] {
        assert!(r.stdout.contains(command), "man page lacks {command}");
    }
}

/// Every text output of the commands the issue names, at a width: each line of stdout and
/// stderr within it, URLs aside.
fn lines_over(width: usize) -> Vec<String> {
    let runs: [&[&str]; 9] = [
        &["check", "--no-config", "fixtures/prompts"],
        &["check", "--no-config", "fixtures/samples-and-stand-ins"],
        &["check", "--no-config", "fixtures/prompts", "-q", "-v"],
        &["audit", "--no-config", "fixtures/audit/requests.jsonl"],
        &[
            "simulate",
            "--no-config",
            "tests/fixtures/simulate/vllm-33-blocks.jsonl.gz",
            "--block-size",
            "32",
            "--kv-blocks",
            "33",
        ],
        &[
            "capacity",
            "--layers",
            "32",
            "--kv-heads",
            "8",
            "--head-dim",
            "128",
            "--gpu-memory",
            "80GB",
            "--weights",
            "16GB",
        ],
        &["rules"],
        &["explain", "PL001"],
        &["render", "--no-config", "no/such/template.j2"],
    ];
    let mut over = Vec::new();
    for args in runs {
        let r = run(prefixlint().args(args).env("COLUMNS", width.to_string()));
        assert!(
            r.code <= 2 && !r.stderr.contains("panicked"),
            "{args:?}: {}",
            r.stderr
        );
        for line in r.stdout.lines().chain(r.stderr.lines()) {
            if line.chars().count() > width && !line.contains("://") {
                over.push(format!("{args:?}: {line}"));
            }
        }
    }
    over
}

#[test]
fn every_line_fits_80_and_60_columns() {
    for width in [80, 60] {
        let over = lines_over(width);
        assert!(over.is_empty(), "wider than {width}:\n{}", over.join("\n"));
    }
}

#[test]
fn a_narrow_summary_table_drops_columns_and_keeps_the_template() {
    let args = ["check", "--no-config", "fixtures/prompts"];
    let wide = run(prefixlint().args(args).env("COLUMNS", "100"));
    let narrow = run(prefixlint().args(args).env("COLUMNS", "60"));
    assert!(wide.stdout.contains("renders") && wide.stdout.contains("recoverable"));
    let header = narrow
        .stdout
        .lines()
        .find(|l| l.starts_with("template"))
        .unwrap();
    assert!(!header.contains("renders"), "{header}");
    assert!(
        header.contains("shared prefix") && header.contains("findings"),
        "{header}"
    );
    // Every template still has its row; a path breaks after a `/`, so names stay whole.
    for path in ["support_agent.j2", "personalized.j2", "tools_agent.j2"] {
        assert!(narrow.stdout.contains(path), "{path}");
    }
}

#[test]
fn the_default_width_is_100_and_keeps_the_report_as_it_was() {
    let args = ["check", "--no-config", "fixtures/prompts"];
    let unset = run(prefixlint().args(args).env_remove("COLUMNS"));
    let hundred = run(prefixlint().args(args).env("COLUMNS", "100"));
    assert_eq!(unset.stdout, hundred.stdout);
}

const SCHEMA: &str = "prefixlint.schema.json";

#[test]
fn the_schema_file_is_current() {
    let r = run(prefixlint().arg("schema"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let file = std::fs::read_to_string(repo_root().join(SCHEMA)).unwrap_or_default();
    assert!(
        file == r.stdout,
        "{SCHEMA} differs from the config types: `cargo run -- schema > {SCHEMA}` rewrites it"
    );
}

/// Each YAML file validated against the schema by Python's `jsonschema`: the files it
/// rejects, one a line.
fn rejected_by_the_schema(files: &[std::path::PathBuf]) -> String {
    let script = r#"
import json, sys, yaml, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft7Validator.check_schema(schema)
validator = jsonschema.Draft7Validator(schema)
for path in sys.argv[2:]:
    errors = list(validator.iter_errors(yaml.safe_load(open(path)) or {}))
    if errors:
        print(path, "|", errors[0].message)
"#;
    let out = Command::new(python())
        .arg("-c")
        .arg(script)
        .arg(repo_root().join(SCHEMA))
        .args(files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn configs_under(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            configs_under(&path, found);
        } else if path
            .file_name()
            .is_some_and(|n| n == "prefixlint.yaml" || n == ".prefixlint.yaml")
        {
            found.push(path);
        }
    }
}

#[test]
fn every_config_in_the_fixtures_passes_the_schema() {
    let mut configs = Vec::new();
    configs_under(&repo_root().join("fixtures"), &mut configs);
    configs_under(&repo_root().join("tests/fixtures"), &mut configs);
    assert!(configs.len() >= 8, "{configs:?}");
    assert_eq!(rejected_by_the_schema(&configs), "");
}

#[test]
fn wrong_configs_fail_the_schema_as_they_fail_prefixlint() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("chat_template: 5\n", "5 is not of type"),
        ("fail_on: fatal\n", "'fatal' is not one of"),
        ("min_lost_tokens: -1\n", "-1 is less than the minimum"),
        ("tokeniser: default\n", "Additional properties"),
        ("limits: {fuel: many}\n", "'many' is not of type"),
        (
            "engine: {name: vllm, block: 16}\n",
            "is not valid under any of the given schemas",
        ),
        (
            "filters: {shout: {strin: x}}\n",
            "is not valid under any of the given schemas",
        ),
    ];
    let template = dir.path().join("t.j2");
    std::fs::write(&template, "Hello\n").unwrap();
    for (i, (yaml, message)) in cases.iter().enumerate() {
        let config = dir.path().join(format!("config{i}.yaml"));
        std::fs::write(&config, yaml).unwrap();
        let rejected = rejected_by_the_schema(std::slice::from_ref(&config));
        assert!(rejected.contains(message), "{yaml}: {rejected:?}");
        // prefixlint refuses it too: the schema says no more than the parser.
        let r = run(prefixlint()
            .args(["check", "--config"])
            .arg(&config)
            .arg(&template));
        assert_eq!(r.code, 2, "{yaml}: {}", r.stderr);
    }
    let good = dir.path().join("good.yaml");
    std::fs::write(
        &good,
        "tokenizer: default\nfail_on: error\nengine: {name: vllm, block_size: 16}\nfilters: {shout: identity}\nglobals: {company: ACME, get_tools: {function: {list: [a]}}}\n",
    )
    .unwrap();
    assert_eq!(rejected_by_the_schema(std::slice::from_ref(&good)), "");
}
