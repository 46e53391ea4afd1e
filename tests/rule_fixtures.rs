//! Every rule has fixtures under `fixtures/<rule-name>/`: each template in `fail/` must
//! trigger the rule, and no template in `pass/` may.

mod common;

use common::*;
use std::path::Path;

fn templates_in(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<String> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            !name.ends_with(".yaml") && !name.ends_with(".md") && p.is_file()
        })
        .map(|p| {
            p.strip_prefix(repo_root())
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    found.sort();
    found
}

fn codes_reported(template: &str) -> Vec<String> {
    let (code, json) = check_json(&[template, "--fail-on", "info"]);
    assert!(code == 0 || code == 1, "{template}: exit {code}");
    json["templates"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["rule"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn each_rule_fires_on_its_fail_fixtures_and_not_on_its_pass_fixtures() {
    let mut missing = Vec::new();
    for rule in prefixlint::rules::all() {
        let dir = repo_root().join("fixtures").join(&rule.name);
        let (fail, pass) = (
            templates_in(&dir.join("fail")),
            templates_in(&dir.join("pass")),
        );
        if fail.is_empty() || pass.is_empty() {
            missing.push(rule.name.clone());
            continue;
        }
        for template in &fail {
            assert!(
                codes_reported(template).contains(&rule.code),
                "{} should fire on {template}",
                rule.code
            );
        }
        for template in &pass {
            assert!(
                !codes_reported(template).contains(&rule.code),
                "{} should not fire on {template}",
                rule.code
            );
        }
    }
    assert!(
        missing.is_empty(),
        "rules without pass/fail fixtures: {missing:?}"
    );
}
