//! Each rule on its fixtures, through the real binary: for every template named `fail*`
//! under `fixtures/<rule-name>/` the rule's code must be in the JSON report, and for every
//! `pass*` it must not. A `prefixlint.yaml` in the fixture folder is used as the config
//! (e.g. to select an engine); otherwise the run ignores any config.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

const TEMPLATE_EXTENSIONS: [&str; 4] = ["j2", "jinja", "jinja2", "prompt"];

/// Rules that must have both kinds of fixture.
const RULES_WITH_FIXTURES: [&str; 4] = [
    "unstable-serialization",
    "whitespace-drift",
    "mid-token-boundary",
    "below-cache-minimum",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn templates(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    found.retain(|p| {
        p.extension()
            .is_some_and(|e| TEMPLATE_EXTENSIONS.contains(&e.to_string_lossy().as_ref()))
    });
    found.sort();
    found
}

/// The rule codes reported for one template.
fn codes_for(template: &Path) -> Vec<String> {
    let dir = template.parent().expect("fixture in a folder");
    let config = dir.join("prefixlint.yaml");
    let mut cmd = Command::cargo_bin("prefixlint").expect("binary built");
    cmd.current_dir(root()).arg("check").arg(template);
    if config.is_file() {
        cmd.arg("--config").arg(&config);
    } else {
        cmd.arg("--no-config");
    }
    let output = cmd.args(["--format", "json"]).output().expect("runs");
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}: exit {:?}\n{}",
        template.display(),
        output.status.code(),
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("JSON report on stdout");
    report["templates"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["diagnostics"].as_array().cloned().unwrap_or_default())
        .filter_map(|d| d["rule"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn every_rule_passes_and_fails_its_fixtures() {
    let mut checked = Vec::new();
    for rule in prefixlint::rules::all() {
        let dir = root().join("fixtures").join(&rule.name);
        for template in templates(&dir) {
            let name = template.file_name().unwrap().to_string_lossy().to_string();
            let expect = if name.starts_with("fail") {
                true
            } else if name.starts_with("pass") {
                false
            } else {
                continue;
            };
            let codes = codes_for(&template);
            assert_eq!(
                codes.contains(&rule.code),
                expect,
                "{}: expected {} {} in {codes:?}",
                template.display(),
                rule.code,
                if expect { "present" } else { "absent" },
            );
            checked.push((rule.name.clone(), expect));
        }
    }
    for name in RULES_WITH_FIXTURES {
        for kind in [true, false] {
            assert!(
                checked.contains(&(name.to_owned(), kind)),
                "fixtures/{name}/ needs a {} fixture",
                if kind { "fail*" } else { "pass*" }
            );
        }
    }
}
