//! #11 §7 (every volatile site, each with its figure), §8 (precision) and #17 (PL001's
//! severity follows the cadence), on the real binary.

use crate::support;

use serde_json::Value;
use support::{prefixlint, text};

fn json_report(args: &[&str]) -> Value {
    let out = prefixlint()
        .args([
            "check",
            "--no-config",
            "--format",
            "json",
            "--fail-on",
            "info",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn diagnostics(template: &Value) -> Vec<Value> {
    template["diagnostics"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The number before " stable tokens" in a message.
fn stable_tokens(message: &str) -> usize {
    let before = message.split(" stable tokens").next().unwrap();
    before
        .rsplit(' ')
        .next()
        .unwrap()
        .replace(',', "")
        .parse()
        .unwrap()
}

#[test]
fn a_branch_on_line_1_and_a_timestamp_on_line_11_are_two_sites_with_their_figures() {
    let report = json_report(&["tests/fixtures/sites/review.j2"]);
    let template = &report["templates"][0];
    let found = diagnostics(template);
    let places: Vec<(&str, u64)> = found
        .iter()
        .map(|d| (d["rule"].as_str().unwrap(), d["line"].as_u64().unwrap()))
        .collect();
    // The branch name is not an identity: a plain divergence. The comment time is a clock.
    assert_eq!(places, [("PL002", 1), ("PL001", 11)], "{found:#?}");
    let first = stable_tokens(found[0]["message"].as_str().unwrap());
    let second = stable_tokens(found[1]["message"].as_str().unwrap());
    assert_eq!(
        first as u64,
        template["recoverable_tokens"].as_u64().unwrap()
    );
    assert!(second >= 400 && second < first, "{first} then {second}");
    // The first divergence keeps its exact figures.
    assert_eq!(template["shared_prefix_tokens"], 3);
    assert_eq!(
        template["recoverable_tokens_all_sites"].as_u64(),
        Some(first as u64)
    );
    let help = found[0]["help"].as_str().unwrap();
    assert!(
        help.contains(&format!(
            "moving it alone makes {} tokens cacheable",
            first - second
        )),
        "{help}"
    );
    assert!(help.contains("on line 11"), "{help}");
    assert!(help.contains("moving all 2 sites makes"), "{help}");
    assert!(found[1]["message"]
        .as_str()
        .unwrap()
        .contains("volatile site 2 of 2"));
    let concise = prefixlint()
        .args([
            "check",
            "--no-config",
            "--format",
            "concise",
            "tests/fixtures/sites/review.j2",
        ])
        .output()
        .unwrap();
    insta::assert_snapshot!(text(&concise.stdout));
}

#[test]
fn one_site_has_no_all_sites_figure() {
    let report = json_report(&["fixtures/volatile-before-stable/fail/now_function.j2"]);
    let template = &report["templates"][0];
    assert_eq!(diagnostics(template).len(), 1);
    assert!(
        template.get("recoverable_tokens_all_sites").is_none(),
        "{template}"
    );
}

#[test]
fn project_repository_and_file_names_are_plain_divergences() {
    let report = json_report(&["fixtures/divergence-before-stable/fail/project_names.j2"]);
    let rules: Vec<String> = diagnostics(&report["templates"][0])
        .iter()
        .map(|d| d["rule"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(rules, ["PL002", "PL002", "PL002"]);
}

#[test]
fn values_that_share_a_first_letter_are_no_mid_token_boundary() {
    let report = json_report(&["fixtures/mid-token-boundary/pass-shared-first-letter.j2"]);
    let rules: Vec<String> = diagnostics(&report["templates"][0])
        .iter()
        .map(|d| d["rule"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(rules, ["PL002"]);
}

#[test]
fn pl001_severity_and_label_follow_the_cadence() {
    let cases = [
        (
            "now_function.j2",
            "error",
            "changes on every request (clock)",
            "",
        ),
        (
            "daily_date.j2",
            "warning",
            "changes once a day (clock)",
            "one cache miss per prefix per day",
        ),
        (
            "deploy_version.j2",
            "info",
            "changes once per deploy (release)",
            "one cache miss per prefix per deploy",
        ),
    ];
    for (file, severity, label, cost) in cases {
        let path = format!("fixtures/volatile-before-stable/fail/{file}");
        let report = json_report(&[&path]);
        let found = diagnostics(&report["templates"][0]);
        assert_eq!(found.len(), 1, "{file}: {found:#?}");
        assert_eq!(found[0]["rule"], "PL001", "{file}");
        assert_eq!(found[0]["severity"], severity, "{file}");
        assert!(
            found[0]["message"].as_str().unwrap().contains(cost),
            "{file}"
        );
        // The label is in the full report.
        let full = prefixlint()
            .args(["check", "--no-config", &path])
            .output()
            .unwrap();
        assert!(
            text(&full.stdout).contains(label),
            "{file}: {}",
            text(&full.stdout)
        );
    }
}

#[test]
fn a_daily_value_fails_only_at_warning_and_a_deploy_value_only_at_info() {
    let exit = |path: &str, fail_on: &str| {
        prefixlint()
            .args([
                "check",
                "--no-config",
                "--format",
                "concise",
                "--fail-on",
                fail_on,
                path,
            ])
            .output()
            .unwrap()
            .status
            .code()
    };
    let daily = "fixtures/volatile-before-stable/fail/daily_date.j2";
    let deploy = "fixtures/volatile-before-stable/fail/deploy_version.j2";
    assert_eq!(exit(daily, "error"), Some(0));
    assert_eq!(exit(daily, "warning"), Some(1));
    assert_eq!(exit(deploy, "warning"), Some(0));
    assert_eq!(exit(deploy, "info"), Some(1));
}

#[test]
fn later_sites_in_an_include_and_inside_a_macro_point_at_this_template() {
    let report = json_report(&["tests/fixtures/sites/wrapped.j2"]);
    let found = diagnostics(&report["templates"][0]);
    let places: Vec<(&str, u64, u64)> = found
        .iter()
        .map(|d| {
            (
                d["rule"].as_str().unwrap(),
                d["line"].as_u64().unwrap(),
                d["column"].as_u64().unwrap(),
            )
        })
        .collect();
    // The include tag on line 12 brings `{{ now() }}`; `{{ x }}` in the macro on line 23
    // prints the request id passed on line 24, which is what makes it an id.
    assert_eq!(
        places,
        [("PL002", 1, 10), ("PL001", 12, 1), ("PL001", 23, 27)],
        "{found:#?}"
    );
    let figures: Vec<usize> = found
        .iter()
        .map(|d| stable_tokens(d["message"].as_str().unwrap()))
        .collect();
    assert!(figures.windows(2).all(|w| w[0] > w[1]), "{figures:?}");
    let full = prefixlint()
        .args(["check", "--no-config", "tests/fixtures/sites/wrapped.j2"])
        .output()
        .unwrap();
    let full = text(&full.stdout);
    assert!(
        full.contains("`{{ now() }}` writes the differing output"),
        "{full}"
    );
    assert!(
        full.contains("24:1: `{{ show(request_id) }}` prints it"),
        "{full}"
    );
}
