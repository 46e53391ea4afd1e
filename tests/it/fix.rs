//! `check --fix`, `--unsafe-fixes`, `--diff` and `--select` on copies of the fixtures: every
//! fixture with a PL001-PL005 finding is fixed without shrinking its shared prefix (and a
//! move keeps every render's lines), each `fixtures/<rule>/fix/NAME` becomes exactly
//! `NAME.fixed`, a second run has nothing to do, `--diff` writes nothing, and a file that
//! cannot be written is an error while the others are fixed.

use crate::support;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use support::*;

const PREFIX_RULES: [(&str, &str); 5] = [
    ("volatile-before-stable", "PL001"),
    ("divergence-before-stable", "PL002"),
    ("unstable-serialization", "PL003"),
    ("whitespace-drift", "PL004"),
    ("mid-token-boundary", "PL005"),
];

/// A copy of the repository's `fixtures/` (templates include files from other rules'
/// folders), in a temporary folder that is the copy's parent.
fn fixtures_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("fixtures");
    for entry in walkdir::WalkDir::new(repo_root().join("fixtures")) {
        let entry = entry.unwrap();
        let relative = entry
            .path()
            .strip_prefix(repo_root().join("fixtures"))
            .unwrap();
        let target = tree.join(relative);
        if entry.file_type().is_dir() {
            fs::create_dir_all(&target).unwrap();
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
    (dir, tree)
}

fn digest(tree: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    walkdir::WalkDir::new(tree)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| (e.path().to_path_buf(), fs::read(e.path()).unwrap()))
        .collect()
}

fn in_dir(dir: &Path) -> std::process::Command {
    let mut cmd = prefixlint();
    cmd.current_dir(dir);
    cmd
}

/// `check --format json` of one template: its codes and shared prefix.
fn checked(dir: &Path, template: &Path) -> (Vec<String>, u64, usize) {
    let r = run(in_dir(dir).arg("check").arg(template).args([
        "--format",
        "json",
        "--fail-on",
        "error",
        "--no-config",
    ]));
    let json: serde_json::Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", r.stdout, r.stderr));
    let template = &json["templates"][0];
    let codes = template["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["rule"].as_str().unwrap().to_owned())
        .collect();
    (
        codes,
        template["shared_prefix_tokens"].as_u64().unwrap(),
        template["samples"].as_u64().unwrap() as usize,
    )
}

/// Each sample's render, its lines sorted: a move keeps them.
fn sorted_render_lines(dir: &Path, template: &Path, samples: usize) -> Vec<Vec<String>> {
    (0..samples)
        .map(|n| {
            let r = run(in_dir(dir).arg("render").arg(template).args([
                "--sample",
                &n.to_string(),
                "--now",
                "2026-11-29T08:00:00Z",
                "--no-config",
            ]));
            assert_eq!(r.code, 0, "{}", r.stderr);
            let mut lines: Vec<String> = r.stdout.lines().map(str::to_owned).collect();
            lines.sort();
            lines
        })
        .collect()
}

/// The fail fixtures of a rule, as the rule snapshot tests (`src/rules/mod.rs`) find them
/// (templates only).
fn fail_cases(rule_dir: &Path) -> Vec<PathBuf> {
    let is_template = |p: &Path| {
        p.extension()
            .is_some_and(|e| ["j2", "jinja", "jinja2", "prompt"].contains(&e.to_str().unwrap()))
    };
    let mut cases: Vec<PathBuf> = Vec::new();
    if let Ok(entries) = fs::read_dir(rule_dir.join("fail")) {
        cases.extend(
            entries
                .map(|e| e.unwrap().path())
                .filter(|p| is_template(p)),
        );
    }
    cases.extend(
        fs::read_dir(rule_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| is_template(p))
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("fail")),
    );
    cases.sort();
    cases
}

#[test]
fn every_fixture_with_a_prefix_finding_is_fixed_and_keeps_its_prefix_and_lines() {
    let (dir, tree) = fixtures_copy();
    let mut fixed = 0;
    for (rule_dir, code) in PREFIX_RULES {
        for case in fail_cases(&tree.join(rule_dir)) {
            let shown = case.strip_prefix(dir.path()).unwrap().display().to_string();
            let (codes, prefix, samples) = checked(dir.path(), &case);
            assert!(codes.iter().any(|c| c == code), "{shown}: no {code} before");
            let lines = sorted_render_lines(dir.path(), &case, samples);
            let r = run(in_dir(dir.path()).arg("check").arg(&case).args([
                "--fix",
                "--unsafe-fixes",
                "--no-config",
                "--format",
                "json",
            ]));
            assert!(
                r.code == 0 || r.code == 1,
                "{shown}: {}\n{}",
                r.stdout,
                r.stderr
            );
            let report: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
            let fixes = &report["fixes"][0]["fixes"];
            let (codes_after, prefix_after, _) = checked(dir.path(), &case);
            assert!(
                !codes_after.iter().any(|c| c == code),
                "{shown}: {code} is still there after --fix --unsafe-fixes: {fixes:#}"
            );
            assert!(
                prefix_after >= prefix,
                "{shown}: prefix {prefix} → {prefix_after}"
            );
            let moved =
                fixes.as_array().unwrap().iter().any(|f| {
                    f["applied"] == true && f["title"].as_str().unwrap().starts_with("Move")
                });
            if moved {
                assert_eq!(
                    lines,
                    sorted_render_lines(dir.path(), &case, samples),
                    "{shown}: the move changed the renders' lines"
                );
            }
            fixed += 1;
        }
    }
    // Every rule's fail fixtures, counted so a lost folder cannot pass quietly.
    assert_eq!(fixed, 17, "fixtures fixed");
}

/// `fixtures/<rule>/fix/NAME` → `NAME.fixed`, and a second `--fix` changes nothing.
#[test]
fn each_fix_fixture_becomes_its_fixed_text_and_a_second_run_has_nothing_to_do() {
    let (dir, tree) = fixtures_copy();
    let mut cases = 0;
    for rule in fs::read_dir(&tree).unwrap() {
        let fix_dir = rule.unwrap().path().join("fix");
        let Ok(entries) = fs::read_dir(&fix_dir) else {
            continue;
        };
        let mut templates: Vec<PathBuf> = entries
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "j2"))
            .collect();
        templates.sort();
        for template in templates {
            let shown = template
                .strip_prefix(dir.path())
                .unwrap()
                .display()
                .to_string();
            let expected = fs::read(template.with_extension("j2.fixed"))
                .unwrap_or_else(|e| panic!("{shown}: no .fixed beside it: {e}"));
            let fix = || {
                run(in_dir(dir.path()).arg("check").arg(&template).args([
                    "--fix",
                    "--unsafe-fixes",
                    "--no-config",
                ]))
            };
            let first = fix();
            assert!(
                first.code == 0 || first.code == 1,
                "{shown}: {}",
                first.stderr
            );
            let after = fs::read(&template).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&after),
                String::from_utf8_lossy(&expected),
                "{shown}: the fixed text differs from its .fixed\n{}",
                first.stdout
            );
            let second = fix();
            assert!(
                second.stdout.contains("Fixed 0 findings in 0 files."),
                "{shown}: a second run fixed more:\n{}",
                second.stdout
            );
            assert_eq!(
                fs::read(&template).unwrap(),
                after,
                "{shown}: changed again"
            );
            cases += 1;
        }
    }
    assert!(cases >= 12, "only {cases} fix fixtures");
}

#[test]
fn diff_prints_the_fixes_writes_nothing_and_exits_1() {
    let (dir, tree) = fixtures_copy();
    let before = digest(&tree);
    let r = run(in_dir(dir.path()).args([
        "check",
        "fixtures/volatile-before-stable/fail/timestamp_first.j2",
        "fixtures/whitespace-drift/fail-trailing.j2",
        "--diff",
        "--unsafe-fixes",
        "--no-config",
    ]));
    assert_eq!(r.code, 1, "{}", r.stderr);
    insta::assert_snapshot!("diff_stdout", r.stdout);
    insta::assert_snapshot!("diff_stderr", r.stderr);
    assert_eq!(before, digest(&tree), "--diff wrote to the tree");
    // Without --unsafe-fixes the move is only offered: nothing to change, exit 0.
    let safe_only = run(in_dir(dir.path()).args([
        "check",
        "fixtures/volatile-before-stable/fail/timestamp_first.j2",
        "--diff",
        "--no-config",
    ]));
    assert_eq!(safe_only.code, 0, "{}", safe_only.stderr);
    assert_eq!(safe_only.stdout, "");
    assert!(
        safe_only.stderr.contains("--unsafe-fixes"),
        "{}",
        safe_only.stderr
    );
    assert_eq!(before, digest(&tree));
}

#[test]
fn the_json_report_lists_each_templates_fixes() {
    let (dir, _tree) = fixtures_copy();
    let r = run(in_dir(dir.path()).args([
        "check",
        "fixtures/volatile-before-stable/fail/timestamp_first.j2",
        "fixtures/whitespace-drift/fail-trailing.j2",
        "--fix",
        "--no-config",
        "--format",
        "json",
    ]));
    let json: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    insta::assert_json_snapshot!("json_fixes", json["fixes"]);
}

#[cfg(unix)]
#[test]
fn a_read_only_file_is_an_error_and_the_others_are_fixed_keeping_mode_and_line_endings() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let stable =
        fs::read_to_string(repo_root().join("fixtures/volatile-before-stable/stable.md")).unwrap();
    let crlf = format!(
        "Current time: {{{{ now }}}}\r\n{}\r\nQuestion: {{{{ question }}}}\r\n",
        stable.trim_end().replace('\n', "\r\n")
    );
    let lf = crlf.replace("\r\n", "\n");
    fs::write(dir.path().join("a_crlf.j2"), &crlf).unwrap();
    fs::write(dir.path().join("b_locked.j2"), &lf).unwrap();
    fs::set_permissions(
        dir.path().join("a_crlf.j2"),
        fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    fs::set_permissions(
        dir.path().join("b_locked.j2"),
        fs::Permissions::from_mode(0o444),
    )
    .unwrap();
    let r = run(in_dir(dir.path()).args(["check", ".", "--fix", "--unsafe-fixes", "--no-config"]));
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    let stderr = flat(&r.stderr);
    assert!(
        stderr.contains("cannot fix b_locked.j2: the file is read-only"),
        "{stderr}"
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("b_locked.j2")).unwrap(),
        lf
    );
    let fixed = fs::read_to_string(dir.path().join("a_crlf.j2")).unwrap();
    assert_ne!(fixed, crlf, "the writable file was not fixed");
    assert!(fixed.ends_with("Current time: {{ now }}\r\n"), "{fixed:?}");
    assert_eq!(fixed.matches('\n').count(), fixed.matches("\r\n").count());
    let mode = fs::metadata(dir.path().join("a_crlf.j2"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o640);
    let left: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "a temporary file was left: {left:?}");
}

#[test]
fn select_limits_what_is_reported_and_fixed() {
    let (dir, tree) = fixtures_copy();
    let template = "fixtures/suppression-without-reason/fail/no_reason.j2";
    let before = fs::read(tree.join("suppression-without-reason/fail/no_reason.j2")).unwrap();
    let r = run(in_dir(dir.path()).args([
        "check",
        template,
        "--fix",
        "--unsafe-fixes",
        "--select",
        "PL001",
        "--no-config",
        "--format",
        "json",
    ]));
    let json: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let fixes = json["fixes"][0]["fixes"].as_array().unwrap();
    assert!(fixes.iter().all(|f| f["rule"] == "PL001"), "{fixes:?}");
    let after =
        fs::read_to_string(tree.join("suppression-without-reason/fail/no_reason.j2")).unwrap();
    assert_ne!(after.as_bytes(), before, "PL001's move was not applied");
    assert!(
        after.contains("ignore[PL001] #}"),
        "PL010's fix ran: {after}"
    );
    let unknown = run(in_dir(dir.path()).args(["check", template, "--select", "PL999"]));
    assert_eq!(unknown.code, 2);
    assert!(
        unknown.stderr.contains("unknown rule `PL999`"),
        "{}",
        unknown.stderr
    );
}

#[test]
fn a_fix_never_touches_an_included_file() {
    let (dir, tree) = fixtures_copy();
    let header = tree.join("volatile-before-stable/header.txt");
    let stable = tree.join("volatile-before-stable/stable.md");
    let (header_before, stable_before) = (fs::read(&header).unwrap(), fs::read(&stable).unwrap());
    let r = run(in_dir(dir.path()).args([
        "check",
        "fixtures/volatile-before-stable/fail",
        "--fix",
        "--unsafe-fixes",
        "--no-config",
    ]));
    assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
    assert!(
        r.stdout.contains("Fixed 7 findings in 7 files."),
        "{}",
        r.stdout
    );
    assert_eq!(fs::read(&header).unwrap(), header_before);
    assert_eq!(fs::read(&stable).unwrap(), stable_before);
}

#[test]
fn unsafe_fixes_alone_are_refused() {
    let r = run(prefixlint().args(["check", "fixtures/prompts", "--unsafe-fixes"]));
    assert_eq!(r.code, 2);
    assert!(flat(&r.stderr).contains("`--unsafe-fixes` applies with `--fix` or `--diff`"));
}

/// A `--chat-request` file: PL002 points at the expression that writes the divergence
/// (`{{ now() }}` in the system message), and the move takes its line to the end of the
/// last user message's `content: |` block, measured on what the server sees. A user
/// message the move cannot reach (a quoted scalar) is refused with that reason.
#[test]
fn a_chat_requests_volatile_line_moves_into_its_last_user_message() {
    let (dir, tree) = fixtures_copy();
    let request = "fixtures/volatile-before-stable/fix-chat/request.yaml";
    let path = dir.path().join(request);
    let args = |more: &[&str]| {
        let mut cmd = in_dir(dir.path());
        cmd.args([
            "check",
            "--chat-request",
            request,
            "--chat-template",
            CHAT_TEMPLATE,
        ])
        .args(["--no-config", "--no-cache"])
        .args(more);
        cmd
    };
    let before = run(&mut args(&["--format", "concise"]));
    assert!(
        before
            .stdout
            .contains("request.yaml:5:21: PL002 message 1 renders differently"),
        "{}",
        before.stdout
    );
    let tree_before = digest(&tree);
    let diff = run(&mut args(&["--diff", "--unsafe-fixes"]));
    assert_eq!(diff.code, 1, "{}\n{}", diff.stdout, diff.stderr);
    assert_eq!(tree_before, digest(&tree), "--diff wrote to the tree");
    let first = run(&mut args(&["--fix", "--unsafe-fixes", "--format", "json"]));
    let json: serde_json::Value = serde_json::from_str(&first.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", first.stdout, first.stderr));
    let fixes = &json["fixes"][0];
    assert_eq!(fixes["shared_prefix_tokens_before"], 53, "{fixes:#}");
    assert_eq!(fixes["shared_prefix_tokens_after"], 176, "{fixes:#}");
    assert_eq!(
        fixes["fixes"][0]["title"], "Move line 5 to the end of the last user message",
        "{fixes:#}"
    );
    let expected = fs::read_to_string(repo_root().join(format!("{request}.fixed"))).unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), expected);
    let after = json["templates"][0].clone();
    assert_eq!(after["shared_prefix_tokens"], 176, "{after:#}");
    assert_eq!(after["diagnostics"], serde_json::json!([]), "{after:#}");
    let second = run(&mut args(&["--fix", "--unsafe-fixes"]));
    assert!(
        second.stdout.contains("Fixed 0 findings in 0 files."),
        "{}",
        second.stdout
    );
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        expected,
        "changed again"
    );
    // The user's question as a quoted scalar: there is no block to move the line into.
    let quoted = fs::read_to_string(repo_root().join(request))
        .unwrap()
        .replace(
            "    content: |\n      {{ question }}\n",
            "    content: \"{{ question }}\"\n",
        );
    fs::write(&path, &quoted).unwrap();
    let refused = run(&mut args(&["--fix", "--unsafe-fixes"]));
    assert!(
        flat(&refused.stdout).contains("PL002 (unsafe, not fixed): no fix — the request has no user message with a `content: |` block to move it into"),
        "{}",
        refused.stdout
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), quoted);
}

/// The chat template the chat-template fixes are checked in (its system header writes a
/// fixed "Today Date" unless told otherwise: the same in every render).
const CHAT_TEMPLATE: &str = "fixtures/chat-templates/meta-llama-Llama-3.1-8B-Instruct.jinja";

/// `check --format json` of one template with `args`: its codes and shared prefix.
fn checked_with(dir: &Path, template: &str, args: &[&str]) -> (Vec<String>, u64) {
    let r = run(in_dir(dir)
        .args([
            "check",
            template,
            "--format",
            "json",
            "--fail-on",
            "error",
            "--no-config",
        ])
        .args(["--no-cache"])
        .args(args));
    let json: serde_json::Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", r.stdout, r.stderr));
    let template = &json["templates"][0];
    let codes = template["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["rule"].as_str().unwrap().to_owned())
        .collect();
    (codes, template["shared_prefix_tokens"].as_u64().unwrap())
}

/// PL001 in a chat request: the volatile line moves to the end of the last user turn (a
/// user-turn template's end, a `.prompty` body's last `user:` section, prompt-poet's last
/// user part), measured on what the server sees. Each `fix-chat/NAME` becomes `NAME.fixed`,
/// the shared prefix grows, `--diff` writes nothing, and a second `--fix` has nothing to do.
#[test]
fn in_a_chat_template_the_volatile_line_moves_into_the_last_user_turn() {
    let (dir, tree) = fixtures_copy();
    let chat = ["--chat-template", CHAT_TEMPLATE];
    let cases: [(&str, &[&str], u64, u64); 5] = [
        (
            "user_turn.j2",
            &[&chat[..], &["--chat-role", "user"]].concat(),
            74,
            181,
        ),
        ("booking.prompty", &chat, 53, 176),
        ("parts.yml.j2", &chat, 53, 181),
        // Without a chat template a `.prompty` body's turns are the same.
        ("booking.prompty", &[], 15, 120),
        // prompt-poet on its own: the parts' contents, one after another.
        ("parts.yml.j2", &[], 13, 120),
    ];
    for (name, args, before, after) in cases {
        let shown = format!("{name} {}", args.join(" "));
        let template = format!("fixtures/volatile-before-stable/fix-chat/{name}");
        let path = dir.path().join(&template);
        let original = fs::read(&path).unwrap();
        let (codes, prefix) = checked_with(dir.path(), &template, args);
        assert!(codes.iter().any(|c| c == "PL001"), "{shown}: {codes:?}");
        assert_eq!(prefix, before, "{shown}: shared prefix before");
        let tree_before = digest(&tree);
        let diff = run(in_dir(dir.path())
            .args([
                "check",
                &template,
                "--diff",
                "--unsafe-fixes",
                "--no-config",
                "--no-cache",
            ])
            .args(args));
        assert_eq!(diff.code, 1, "{shown}: {}\n{}", diff.stdout, diff.stderr);
        assert!(
            diff.stdout.contains("+") && diff.stdout.contains("Current time"),
            "{}",
            diff.stdout
        );
        assert_eq!(
            tree_before,
            digest(&tree),
            "{shown}: --diff wrote to the tree"
        );
        let fix = || {
            run(in_dir(dir.path())
                .args([
                    "check",
                    &template,
                    "--fix",
                    "--unsafe-fixes",
                    "--no-config",
                    "--no-cache",
                ])
                .args(["--format", "json"])
                .args(args))
        };
        let first = fix();
        assert!(
            first.code == 0 || first.code == 1,
            "{shown}: {}",
            first.stderr
        );
        let json: serde_json::Value = serde_json::from_str(&first.stdout).unwrap();
        let fixes = &json["fixes"][0];
        assert_eq!(
            fixes["shared_prefix_tokens_before"], before,
            "{shown}: {fixes:#}"
        );
        assert_eq!(
            fixes["shared_prefix_tokens_after"], after,
            "{shown}: {fixes:#}"
        );
        assert_eq!(fixes["tokens_gained"], after - before, "{shown}");
        let title = fixes["fixes"][0]["title"].as_str().unwrap();
        assert!(title.contains("user"), "{shown}: {title}");
        let expected = fs::read_to_string(repo_root().join(format!("{template}.fixed"))).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), expected, "{shown}");
        let (codes, prefix) = checked_with(dir.path(), &template, args);
        assert!(!codes.iter().any(|c| c == "PL001"), "{shown}: {codes:?}");
        assert_eq!(prefix, after, "{shown}: shared prefix after");
        let second = fix();
        let json: serde_json::Value = serde_json::from_str(&second.stdout).unwrap();
        assert_eq!(
            json["fixes"],
            serde_json::json!([]),
            "{shown}: a second run fixed more"
        );
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            expected,
            "{shown}: changed again"
        );
        fs::write(&path, original).unwrap();
    }
}

/// A template checked as the system message writes no user turn: the move is refused with
/// that reason (moving it to the end of the system message would still change every
/// request before the conversation), and the file is left as it was.
#[test]
fn a_system_prompt_in_a_chat_template_is_not_moved() {
    let (dir, tree) = fixtures_copy();
    let template = "fixtures/volatile-before-stable/fix-chat/system_prompt.j2";
    let before = digest(&tree);
    let r = run(in_dir(dir.path()).args([
        "check",
        template,
        "--fix",
        "--unsafe-fixes",
        "--chat-template",
        CHAT_TEMPLATE,
        "--no-config",
        "--no-cache",
    ]));
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains("system_prompt.j2: shared prefix 53 → 53 tokens (+0)"),
        "{}",
        r.stdout
    );
    assert!(
        flat(&r.stdout).contains("PL001 (unsafe, not fixed): no fix — in the chat template this template is the `system` message"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("Fixed 0 findings in 0 files."),
        "{}",
        r.stdout
    );
    assert_eq!(before, digest(&tree), "the system prompt was changed");
}

/// The prompt-poet file a move fixed is still YAML that PyYAML reads as its parts, the
/// moved line now the user part's last.
#[test]
fn a_fixed_prompt_poet_file_is_still_its_parts() {
    let fixed = repo_root().join("fixtures/volatile-before-stable/fix-chat/parts.yml.j2.fixed");
    let script = r#"
import sys, yaml
parts = yaml.safe_load(open(sys.argv[1]))
assert [p["role"] for p in parts] == ["system", "user"], parts
assert parts[0]["content"].startswith("You are the booking assistant"), parts
assert parts[1]["content"] == "Traveller question:\n{{ question }}\nCurrent time: {{ now() }}\n", parts
print("ok")
"#;
    let py = run(std::process::Command::new(support::python())
        .args(["-c", script])
        .arg(&fixed));
    assert_eq!(py.stdout.trim(), "ok", "{}", py.stderr);
}

const HOST_RULES: &str = "You are the support assistant of ACME Outdoor Gear, a retailer of tents, backpacks and climbing equipment.
Answer in the customer's language, politely and concisely, and never invent order details.
Only discuss ACME products, orders, shipping, returns and warranty questions.
If a question is outside this scope, say so briefly and offer to help with an ACME topic instead.
Never ask for full card numbers, passwords or one-time codes.
";

/// Templates inside YAML and Python files: only the template's text changes, the host
/// keeps its quoting and indentation, and Python's own parsers read the fixed template back.
#[test]
fn embedded_templates_are_fixed_inside_their_hosts() {
    let dir = tempfile::tempdir().unwrap();
    let indented = HOST_RULES
        .lines()
        .map(|l| format!("    {l}\n"))
        .collect::<String>();
    let yaml = format!(
        "# An agent's prompts.\nprompts:\n  system: |\n    Current time: {{{{ now }}}}\n{indented}    Question: {{{{ question }}}}\n  greeting: \"Hello {{{{ who }}}}\"\n"
    );
    let python = format!(
        "\"\"\"Prompts.\"\"\"\n\nSYSTEM = \"\"\"Request id: {{{{ request_id }}}}\n{HOST_RULES}Question: {{{{ question }}}}\n\"\"\"\n\n\ndef build(env):\n    return env.from_string(SYSTEM)\n"
    );
    fs::write(dir.path().join("agent.yaml"), &yaml).unwrap();
    fs::write(dir.path().join("prompts.py"), &python).unwrap();
    let r = run(in_dir(dir.path()).args(["check", ".", "--fix", "--unsafe-fixes", "--no-config"]));
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    for template in ["agent.yaml#prompts.system", "prompts.py#SYSTEM"] {
        assert!(
            r.stdout.contains(&format!("{template}: shared prefix")),
            "{}",
            r.stdout
        );
    }
    let fixed_yaml = fs::read_to_string(dir.path().join("agent.yaml")).unwrap();
    let fixed_python = fs::read_to_string(dir.path().join("prompts.py")).unwrap();
    // Only the volatile line moved: the rest of each host is byte for byte as it was.
    let without = |text: &str, line: &str| text.replacen(line, "", 1);
    assert_eq!(
        without(&fixed_yaml, "    Current time: {{ now }}\n"),
        without(&yaml, "    Current time: {{ now }}\n")
    );
    assert_eq!(
        without(&fixed_python, "Request id: {{ request_id }}\n"),
        without(&python, "Request id: {{ request_id }}\n")
    );
    let script = r#"
import ast, sys, yaml
data = yaml.safe_load(open(sys.argv[1]))
assert data["prompts"]["system"].endswith("Question: {{ question }}\nCurrent time: {{ now }}\n"), data
assert data["prompts"]["greeting"] == "Hello {{ who }}", data
tree = ast.parse(open(sys.argv[2]).read())
system = next(n.value.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "SYSTEM")
assert system.startswith("You are the support assistant"), system
assert system.endswith("Question: {{ question }}\nRequest id: {{ request_id }}\n"), system
print("ok")
"#;
    let py = run(std::process::Command::new(support::python())
        .args(["-c", script])
        .arg(dir.path().join("agent.yaml"))
        .arg(dir.path().join("prompts.py")));
    assert_eq!(py.stdout.trim(), "ok", "{}", py.stderr);
}

/// The safe fixes are the same in a chat template and in `.prompty` and prompt-poet hosts,
/// proven on what the server sees: a system message gets its `| tojson` (only moves need a
/// user turn), a prompt-poet part its `| tojson`, a `.prompty` comment its reason.
#[test]
fn safe_fixes_apply_in_a_chat_template_and_in_prompty_and_prompt_poet_files() {
    let (dir, tree) = fixtures_copy();
    let chat = ["--chat-template", CHAT_TEMPLATE];
    let cases: [(&str, &[&str]); 4] = [
        ("unstable-serialization/fix/python_repr.j2", &chat),
        ("unstable-serialization/fix/tools_parts.yml.j2", &chat),
        ("suppression-without-reason/fix/placeholder.prompty", &chat),
        ("suppression-without-reason/fix/placeholder.prompty", &[]),
    ];
    for (name, args) in cases {
        let shown = format!("{name} {}", args.join(" "));
        let template = format!("fixtures/{name}");
        let path = dir.path().join(&template);
        let original = fs::read(&path).unwrap();
        let before = digest(&tree);
        let diff = run(in_dir(dir.path())
            .args(["check", &template, "--diff", "--no-config", "--no-cache"])
            .args(args));
        assert_eq!(diff.code, 1, "{shown}: {}\n{}", diff.stdout, diff.stderr);
        assert_eq!(before, digest(&tree), "{shown}: --diff wrote to the tree");
        let fix = || {
            run(in_dir(dir.path())
                .args(["check", &template, "--fix", "--no-config", "--no-cache"])
                .args(args))
        };
        let first = fix();
        assert!(
            first.stdout.contains("(safe, fixed)")
                && first.stdout.contains("Fixed 1 finding in 1 file."),
            "{shown}: {}\n{}",
            first.stdout,
            first.stderr
        );
        let expected = fs::read_to_string(repo_root().join(format!("{template}.fixed"))).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), expected, "{shown}");
        let second = fix();
        assert!(
            second.stdout.contains("Fixed 0 findings in 0 files."),
            "{shown}: a second run fixed more:\n{}",
            second.stdout
        );
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            expected,
            "{shown}: changed again"
        );
        fs::write(&path, original).unwrap();
    }
}

/// PL012's fix moves `cache_control` only where it saves money: a breakpoint whose writes
/// cost more than its reads save is noted, not applied, and `--diff` writes nothing.
#[test]
fn a_breakpoint_that_costs_more_than_it_saves_is_not_applied() {
    let (dir, tree) = fixtures_copy();
    let before = digest(&tree);
    let r = run(in_dir(dir.path()).args([
        "check",
        "fixtures/cache-breakpoint-placement/fail/write_premium_outweighs_reads.j2",
        "--diff",
        "--no-config",
    ]));
    assert_eq!(
        r.code, 0,
        "nothing would change: {}\n{}",
        r.stdout, r.stderr
    );
    assert_eq!(r.stdout, "");
    assert!(
        r.stderr.contains(
            "PL012 (safe, not fixed): no fix — no placement reads more or costs less than the breakpoints written here"
        ),
        "{}",
        r.stderr
    );
    let fixable = run(in_dir(dir.path()).args([
        "check",
        "fixtures/cache-breakpoint-placement/fix/last_tool_in_loop.j2",
        "--diff",
        "--no-config",
    ]));
    assert_eq!(fixable.code, 1, "{}", fixable.stderr);
    assert!(
        fixable
            .stdout
            .contains(r#"{% if loop.last %}, "cache_control": {"type": "ephemeral"}{% endif %}"#),
        "{}",
        fixable.stdout
    );
    assert_eq!(before, digest(&tree), "--diff wrote to the tree");
}

/// `check --diff | head`: a reader that closes the pipe early ends nothing but the diff (the
/// exit code says what would change, no panic).
#[test]
fn diff_into_a_closed_pipe_keeps_its_exit_code() {
    let (dir, _tree) = fixtures_copy();
    let mut child = in_dir(dir.path())
        .args([
            "check",
            "fixtures/volatile-before-stable/fail/timestamp_first.j2",
            "--diff",
            "--unsafe-fixes",
            "--no-config",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The reader is gone before the diff is written.
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(output.status.code(), Some(1), "{stderr}");
}
