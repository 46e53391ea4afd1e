//! Snapshot tests of the real binary: what users see, on the bundled fixtures.

use crate::support;

use std::fs;
use support::*;

fn snapshot_run(args: &[&str]) -> String {
    let r = run(prefixlint().args(args));
    format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        r.code, r.stdout, r.stderr
    )
}

#[test]
fn full_report_on_the_bundled_prompts() {
    insta::assert_snapshot!(snapshot_run(&["check", "fixtures/prompts", "--no-config"]));
}

#[test]
fn concise_report() {
    insta::assert_snapshot!(snapshot_run(&[
        "check",
        "fixtures/prompts",
        "--no-config",
        "--format",
        "concise"
    ]));
}

#[test]
fn json_report_keeps_the_contract() {
    let (code, json) = check_json(&["fixtures/prompts"]);
    assert_eq!(code, 1);
    assert_eq!(json["version"], 1);
    let agent = json["templates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["path"] == "fixtures/prompts/support_agent.j2")
        .unwrap();
    for field in [
        "path",
        "samples",
        "tokens",
        "shared_prefix_tokens",
        "recoverable_tokens",
        "diagnostics",
    ] {
        assert!(agent.get(field).is_some(), "missing {field}");
    }
    let d = &agent["diagnostics"][0];
    for field in [
        "rule",
        "name",
        "severity",
        "message",
        "line",
        "column",
        "end_line",
        "end_column",
        "help",
    ] {
        assert!(d.get(field).is_some(), "missing diagnostic field {field}");
    }
    assert_eq!(d["rule"], "PL001");
    assert_eq!(d["name"], "volatile-before-stable");
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(1), Some(15))
    );
    assert_eq!(
        (d["end_line"].as_u64(), d["end_column"].as_u64()),
        (Some(1), Some(26))
    );
    insta::assert_json_snapshot!(json);
}

#[test]
fn rules_and_explain() {
    insta::assert_snapshot!(snapshot_run(&["rules"]));
    insta::assert_snapshot!(snapshot_run(&["explain", "PL001"]));
    let by_name = run(prefixlint().args(["explain", "volatile-before-stable"]));
    assert_eq!(by_name.code, 0);
    assert!(by_name.stdout.contains("## Why is this bad?"));
    let unknown = run(prefixlint().args(["explain", "PL999"]));
    assert_eq!(unknown.code, 2);
}

#[test]
fn exit_codes_follow_fail_on() {
    let clean = run(prefixlint().args([
        "check",
        "fixtures/prompts/support_agent_fixed.j2",
        "--no-config",
    ]));
    assert_eq!(clean.code, 0, "{}", clean.stdout);
    let warning = [
        "check",
        "fixtures/divergence-before-stable/fail/name_top.j2",
        "--no-config",
    ];
    assert_eq!(run(prefixlint().args(warning)).code, 1);
    assert_eq!(
        run(prefixlint().args(warning).args(["--fail-on", "error"])).code,
        0
    );
}

#[test]
fn a_samples_file_argument_checks_its_template() {
    let (_, json) = check_json(&["fixtures/prompts/personalized.samples.yaml"]);
    assert_eq!(
        json["templates"][0]["path"],
        "fixtures/prompts/personalized.j2"
    );
}

#[test]
fn synthesized_samples_catch_a_timestamp_at_the_top() {
    // No samples file: prefixlint varies `now` and `question` itself.
    let (code, json) = check_json(&["fixtures/volatile-before-stable/fail/timestamp_first.j2"]);
    assert_eq!(code, 1);
    let t = &json["templates"][0];
    assert_eq!(t["samples"], 3);
    assert_eq!(t["diagnostics"][0]["rule"], "PL001");
    assert!(t["shared_prefix_tokens"].as_u64().unwrap() < 20);
}

#[test]
fn discovery_skips_hidden_and_vendored_folders_and_survives_symlink_loops() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for folder in [".hidden", "node_modules", "target", ".git", "prompts/deep"] {
        fs::create_dir_all(root.join(folder)).unwrap();
        fs::write(root.join(folder).join("t.j2"), "Hello\n").unwrap();
    }
    fs::write(root.join("prompts/a.prompt"), "A\n").unwrap();
    fs::write(root.join("prompts/b.txt"), "not a template\n").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(root.join("prompts"), root.join("prompts/deep/loop")).unwrap();
    let r = run(prefixlint()
        .current_dir(root)
        .args(["check", "--no-config", "--format", "json"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let json: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let mut paths: Vec<&str> = json["templates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["path"].as_str().unwrap())
        .collect();
    paths.sort();
    assert!(paths.contains(&"prompts/a.prompt"), "{paths:?}");
    assert!(paths.contains(&"prompts/deep/t.j2"), "{paths:?}");
    assert!(
        paths.iter().all(|p| !p.contains("hidden")
            && !p.contains("node_modules")
            && !p.starts_with("target")),
        "{paths:?}"
    );
    // An explicit file in a skipped folder is still checked.
    let r = run(prefixlint().current_dir(root).args([
        "check",
        "--no-config",
        "--format",
        "json",
        ".hidden/t.j2",
    ]));
    assert!(r.stdout.contains(".hidden/t.j2"));
}

#[test]
fn config_is_found_upward_and_unknown_keys_are_located_errors() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("sub")).unwrap();
    fs::write(
        dir.path().join("prefixlint.yaml"),
        "min_lost_tokens: 10\nrulez:\n  PL001: off\n",
    )
    .unwrap();
    let r = run(prefixlint()
        .current_dir(dir.path().join("sub"))
        .args(["check"]));
    assert_eq!(r.code, 2);
    insta::assert_snapshot!(r.stderr.replace(&dir.path().display().to_string(), "[TMP]"));
}

#[test]
fn config_sets_severity_and_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("cfg.yaml");
    fs::write(
        &config,
        "rules:\n  volatile-before-stable: warning\nfail_on: error\n",
    )
    .unwrap();
    let template = "fixtures/volatile-before-stable/fail/timestamp_first.j2";
    let r = run(prefixlint()
        .args(["check", template, "--format", "json", "--config"])
        .arg(&config));
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(r.stdout.contains("\"severity\": \"warning\""));
    fs::write(&config, "rules:\n  PL001: off\n").unwrap();
    let r = run(prefixlint()
        .args(["check", template, "--format", "json", "--config"])
        .arg(&config));
    assert!(!r.stdout.contains("PL001"));
    fs::write(&config, "min_lost_tokens: 100000\n").unwrap();
    let r = run(prefixlint()
        .args(["check", template, "--format", "json", "--config"])
        .arg(&config));
    assert_eq!(r.code, 0);
}

#[test]
fn render_errors_name_the_file_and_place() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("broken.j2");
    fs::write(&t, "Hello {{ user.name }\n").unwrap();
    let r = run(prefixlint().args(["check", "--no-config"]).arg(&t));
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("broken.j2") && r.stderr.contains("syntax error"),
        "{}",
        r.stderr
    );

    // Lenient undefined (Jinja2's default) prints a missing variable as nothing, but reading
    // an attribute of it is an error.
    fs::write(&t, "Hello {{ missing.name }}\n").unwrap();
    fs::write(
        dir.path().join("broken.samples.yaml"),
        "- other: 1\n- other: 2\n",
    )
    .unwrap();
    let r = run(prefixlint().args(["check", "--no-config"]).arg(&t));
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("undefined") && r.stderr.contains("broken.j2:1:"),
        "{}",
        r.stderr
    );
}

#[test]
fn includes_outside_the_project_root_are_refused_without_printing_them() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("project/.git")).unwrap();
    fs::write(dir.path().join("secret.txt"), "TOP-SECRET-CONTENT\n").unwrap();
    fs::write(
        dir.path().join("project/t.j2"),
        "{% include \"../secret.txt\" %}\n",
    )
    .unwrap();
    let r = run(prefixlint().current_dir(dir.path().join("project")).args([
        "check",
        "--no-config",
        "t.j2",
    ]));
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("refused"), "{}", r.stderr);
    assert!(!r.stderr.contains("TOP-SECRET") && !r.stdout.contains("TOP-SECRET"));
}

#[test]
fn tokenizer_from_a_path_or_the_local_hugging_face_cache() {
    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir
        .path()
        .join("hub/models--acme--tiny-chat/snapshots/0123abcd");
    fs::create_dir_all(&snapshot).unwrap();
    let file = builtin_tokenizer_file(&snapshot);
    let template = "fixtures/prompts/support_agent.j2";
    let (_, default) = check_json(&[template]);
    let (_, by_path) = check_json(&[template, "--tokenizer", file.to_str().unwrap()]);
    let by_id = run(prefixlint()
        .env("HF_HOME", dir.path())
        .env_remove("HF_HUB_CACHE")
        .args([
            "check",
            template,
            "--no-config",
            "--format",
            "json",
            "--tokenizer",
            "acme/tiny-chat",
        ]));
    let by_id: serde_json::Value = serde_json::from_str(&by_id.stdout).unwrap();
    for json in [&by_path, &by_id] {
        assert_eq!(
            json["templates"][0]["shared_prefix_tokens"],
            default["templates"][0]["shared_prefix_tokens"]
        );
        assert_eq!(
            json["templates"][0]["tokens"],
            default["templates"][0]["tokens"]
        );
    }

    let missing = run(prefixlint()
        .env("HF_HOME", dir.path())
        .env_remove("HF_HUB_CACHE")
        .args([
            "check",
            template,
            "--no-config",
            "--tokenizer",
            "acme/not-downloaded",
        ]));
    assert_eq!(missing.code, 2);
    assert!(
        flat(&missing.stderr).contains("local Hugging Face cache"),
        "{}",
        missing.stderr
    );

    let corrupt = dir.path().join("corrupt.json");
    fs::write(&corrupt, "{\"model\": 42}").unwrap();
    let r = run(prefixlint()
        .args(["check", template, "--no-config", "--tokenizer"])
        .arg(&corrupt));
    assert_eq!(r.code, 2);
    assert!(
        flat(&r.stderr).contains("not a valid tokenizer.json") && r.stderr.contains("corrupt.json"),
        "{}",
        r.stderr
    );

    // A folder: the tokenizer loads while the first templates are parsed, and its failure
    // still stops the run before any template's report.
    let r = run(prefixlint()
        .args(["check", "fixtures/prompts", "--no-config", "--no-cache"])
        .args(["--format", "json", "--tokenizer"])
        .arg(&corrupt));
    assert_eq!(r.code, 2);
    assert_eq!(r.stdout, "", "{}", r.stderr);
    assert!(r.stderr.contains("corrupt.json"), "{}", r.stderr);
}

/// `PREFIXLINT_STAGE_TIMES=1` adds each stage's CPU time to stderr and changes nothing else.
#[test]
fn stage_times_go_to_stderr_and_leave_the_report_alone() {
    let args = [
        "check",
        "fixtures/prompts",
        "--no-config",
        "--no-cache",
        "--format",
        "json",
    ];
    let plain = run(prefixlint().args(args));
    let timed = run(prefixlint().args(args).env("PREFIXLINT_STAGE_TIMES", "1"));
    assert_eq!(timed.code, plain.code);
    assert_eq!(timed.stdout, plain.stdout);
    for stage in [
        "parse", "samples", "render", "tokenize", "analyse", "rules", "report",
    ] {
        assert!(
            timed.stderr.contains(&format!("  stage {stage} ")),
            "{stage}: {}",
            timed.stderr
        );
    }
    let rendered: u64 = timed
        .stderr
        .lines()
        .find_map(|line| line.trim().strip_prefix("rendered bytes "))
        .and_then(|n| n.parse().ok())
        .expect("rendered bytes");
    assert!(rendered > 0);
    assert!(!plain.stderr.contains("stage times"));
}
