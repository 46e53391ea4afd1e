//! Every rule has fixtures under `fixtures/<rule-name>/`: templates in a `fail/` folder or
//! named `fail*` must trigger the rule; templates in `pass/` or named `pass*` must not.
//! Chat requests (`*.yaml` in those folders, other than samples) are checked with
//! `--chat-request`. The nearest `prefixlint.yaml` (the case's folder, then the rule's)
//! is used as the config (e.g. to pick an engine or a chat template); otherwise the run
//! ignores any config.

use crate::support;

use std::path::{Path, PathBuf};
use support::*;

const TEMPLATE_EXTENSIONS: [&str; 4] = ["j2", "jinja", "jinja2", "prompt"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Fires,
    Quiet,
}

fn is_template(path: &Path) -> bool {
    path.is_file()
        && path
            .extension()
            .is_some_and(|e| TEMPLATE_EXTENSIONS.contains(&e.to_string_lossy().as_ref()))
}

fn is_chat_request(path: &Path) -> bool {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    path.is_file()
        && name.ends_with(".yaml")
        && !name.ends_with(".samples.yaml")
        && name != "prefixlint.yaml"
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    found.sort();
    found
}

/// The rule's fixtures: `fail/` and `pass/` folders, and `fail*`/`pass*` files.
fn fixtures(rule_dir: &Path) -> Vec<(PathBuf, Expect)> {
    let mut cases = Vec::new();
    for (folder, expect) in [("fail", Expect::Fires), ("pass", Expect::Quiet)] {
        cases.extend(
            sorted_entries(&rule_dir.join(folder))
                .into_iter()
                .filter(|p| is_template(p) || is_chat_request(p))
                .map(|p| (p, expect)),
        );
    }
    for path in sorted_entries(rule_dir)
        .into_iter()
        .filter(|p| is_template(p))
    {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("fail") {
            cases.push((path, Expect::Fires));
        } else if name.starts_with("pass") {
            cases.push((path, Expect::Quiet));
        }
    }
    cases
}

fn codes_reported(case: &Path, rule_dir: &Path) -> Vec<String> {
    let config = [case.parent().unwrap(), rule_dir]
        .iter()
        .map(|dir| dir.join("prefixlint.yaml"))
        .find(|c| c.is_file());
    let mut cmd = prefixlint();
    cmd.arg("check");
    if is_chat_request(case) {
        cmd.arg("--chat-request");
    }
    cmd.arg(case)
        .args(["--format", "json", "--fail-on", "info"]);
    match config {
        Some(config) => cmd.arg("--config").arg(config),
        None => cmd.arg("--no-config"),
    };
    let r = run(&mut cmd);
    assert!(
        r.code == 0 || r.code == 1,
        "{}: exit {}\n{}",
        case.display(),
        r.code,
        r.stderr
    );
    let json: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON report");
    json["templates"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["diagnostics"].as_array().cloned().unwrap_or_default())
        .filter_map(|d| d["rule"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn each_rule_fires_on_its_fail_fixtures_and_not_on_its_pass_fixtures() {
    let mut missing = Vec::new();
    for rule in prefixlint::rules::all() {
        let dir = repo_root().join("fixtures").join(&rule.name);
        let cases = fixtures(&dir);
        if !cases.iter().any(|(_, e)| *e == Expect::Fires)
            || !cases.iter().any(|(_, e)| *e == Expect::Quiet)
        {
            missing.push(rule.name.clone());
            continue;
        }
        for (template, expect) in &cases {
            let fired = codes_reported(template, &dir).contains(&rule.code);
            assert_eq!(
                fired,
                *expect == Expect::Fires,
                "{} on {}: expected {:?}",
                rule.code,
                template.display(),
                expect
            );
        }
        println!("{} {}: {} fixtures", rule.code, rule.name, cases.len());
    }
    assert!(
        missing.is_empty(),
        "rules without both fail and pass fixtures: {missing:?}"
    );
}
