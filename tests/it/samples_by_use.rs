//! Issue 40 §3 on the real binary: synthesized samples vary a value whose name says nothing
//! of how often it changes (its cadence is assumed, and the finding says so and how to
//! declare it per deploy), keep known per-deploy settings constant, assume nothing about a
//! samples file's values, and leave stand-in output (a synthesized conversation, an
//! undeclared filter's result) out of a finding's stable tokens.

use crate::support::*;
use std::fs;
use std::path::Path;

const DIR: &str = "fixtures/samples-by-use";

fn check_in(dir: &Path, args: &[&str]) -> Run {
    let r = run(prefixlint()
        .current_dir(dir)
        .args(["check", "--no-cache"])
        .args(args));
    assert!(
        matches!(r.code, 0 | 1),
        "{args:?}: exit {}\n{}{}",
        r.code,
        r.stdout,
        r.stderr
    );
    r
}

fn check(args: &[&str]) -> Run {
    check_in(&repo_root(), args)
}

fn json(r: &Run) -> serde_json::Value {
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

fn template(report: &serde_json::Value) -> &serde_json::Value {
    &report["templates"][0]
}

/// A folder holding `files` (name, text), for checks with a samples file of their own.
fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

fn fixture(name: &str) -> String {
    fs::read_to_string(repo_root().join(DIR).join(name)).unwrap()
}

#[test]
fn a_task_description_and_a_code_listing_are_reported_with_an_assumed_cadence() {
    let path = format!("{DIR}/review-task.j2");
    let concise = check(&["--no-config", "--format", "concise", &path]);
    assert_eq!(concise.code, 1);
    insta::assert_snapshot!(concise.stdout);
    let report = json(&check(&["--no-config", "--format", "json", &path]));
    let diagnostics = template(&report)["diagnostics"].as_array().unwrap().clone();
    assert_eq!(diagnostics.len(), 2, "{report}");
    for (d, name) in diagnostics.iter().zip(["assignment", "source_code"]) {
        assert_eq!(d["rule"], "PL002");
        // Assumed, not known: no `cadence` in the JSON.
        assert!(d.get("cadence").is_none(), "{d}");
        let help = d["help"].as_str().unwrap();
        assert!(
            help.contains(&format!("(`per_deploy_fields: [{name}]`)")),
            "{help}"
        );
    }
    // Before, both rendered the same in every sample and nothing was reported: the first
    // divergence is now at the task, not after the listing.
    assert!(template(&report)["shared_prefix_tokens"].as_u64().unwrap() < 20);
}

#[test]
fn the_samples_file_says_how_the_values_vary() {
    let samples =
        run(prefixlint().args(["samples", "--no-config", &format!("{DIR}/review-task.j2")]));
    assert_eq!(samples.code, 0, "{}", samples.stderr);
    insta::assert_snapshot!(samples.stdout);
}

#[test]
fn per_deploy_settings_stay_the_same_in_every_render() {
    let path = format!("{DIR}/house-style.j2");
    let config = format!("{DIR}/prefixlint.yaml");
    // `tool_docs` is a setting by its name, `house_style` by the config's declaration.
    let declared = check(&["--config", &config, "--format", "concise", &path]);
    assert_eq!(declared.code, 0, "{}", declared.stdout);
    assert_eq!(declared.stdout, "");
    // Undeclared, `house_style`'s name says nothing: assumed per request, with the hint.
    let undeclared = check(&["--no-config", "--format", "concise", &path]);
    assert_eq!(undeclared.code, 1);
    insta::assert_snapshot!(undeclared.stdout);
    let samples = run(prefixlint().args(["samples", "--config", &config, &path]));
    assert_eq!(samples.code, 0, "{}", samples.stderr);
    assert!(
        samples
            .stdout
            .contains("- house_style: house_style 1\n  question:")
            && !samples.stdout.contains("second house_style"),
        "{}",
        samples.stdout
    );
}

#[test]
fn a_samples_file_is_the_users_word() {
    let dir = folder(&[
        ("review-task.j2", &fixture("review-task.j2")),
        (
            "review-task.samples.yaml",
            "- {assignment: Fix the flaky login test., source_code: 'def login(): ...'}\n\
             - {assignment: Rename the config loader., source_code: 'def login(): ...'}\n",
        ),
    ]);
    let r = check_in(
        dir.path(),
        &["--no-config", "--format", "concise", "review-task.j2"],
    );
    assert_eq!(r.code, 1);
    // The difference is the file's: reported, with no assumption.
    assert!(
        r.stdout.contains("PL002 `{{ assignment }}` differs"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("assumed"), "{}", r.stdout);
    assert_eq!(r.stdout.lines().count(), 1, "{}", r.stdout);
}

#[test]
fn a_synthesized_conversation_is_not_stable_text() {
    let synthesized = check(&[
        "--no-config",
        "--format",
        "concise",
        &format!("{DIR}/few-shot.j2"),
    ]);
    insta::assert_snapshot!(synthesized.stdout);
    let recoverable = |dir: &Path| {
        let report = json(&check_in(
            dir,
            &["--no-config", "--format", "json", "few-shot.j2"],
        ));
        template(&report)["recoverable_tokens"].as_u64().unwrap()
    };
    let template_text = fixture("few-shot.j2");
    let alone = folder(&[("few-shot.j2", &template_text)]);
    let given = folder(&[
        ("few-shot.j2", &template_text),
        ("few-shot.samples.yaml", &fixture("few-shot.given.yaml")),
    ]);
    // The same renders: synthesized, the turns are nobody's text; from a samples file,
    // they are the user's, and count.
    let (synthesized, written) = (recoverable(alone.path()), recoverable(given.path()));
    assert!(synthesized + 12 <= written, "{synthesized} vs {written}");
    // What is left is the template's own text: as much as without the conversation, plus
    // its `: ` and line ends.
    let without = folder(&[(
        "few-shot.j2",
        &template_text.replace(
            "{% for turn in few_shot %}{{ turn.role }}: {{ turn.content }}\n{% endfor %}",
            "",
        ),
    )]);
    let fixed = recoverable(without.path());
    assert!(
        fixed <= synthesized && synthesized <= fixed + 6,
        "{fixed} vs {synthesized}"
    );
}

#[test]
fn an_undeclared_filters_output_is_not_stable_text() {
    let instructions = "Answer in the voice of the brand: warm, brief and exact. Use the customer's words \
        for their problem, never blame them, and give the next step first. Offer a refund only when \
        the order is late by more than five days, and say how long the refund takes. Close with the \
        name of the team, not of a person, and no marketing.\n";
    let plain = format!("Request: {{{{ question }}}}\n{instructions}");
    let filtered = format!(
        "Request: {{{{ question }}}}\n{{% filter brand_voice %}}{instructions}{{% endfilter %}}"
    );
    let dir = folder(&[("plain.j2", &plain), ("filtered.j2", &filtered)]);
    let recoverable = |name: &str| {
        let report = json(&check_in(
            dir.path(),
            &["--no-config", "--format", "json", "--fail-on", "info", name],
        ));
        template(&report)["recoverable_tokens"].as_u64().unwrap()
    };
    // The application's `brand_voice` rewrites the text: what the identity stand-in
    // returned is not what production sends.
    assert!(recoverable("plain.j2") >= 64);
    assert_eq!(recoverable("filtered.j2"), 0);
}

/// The findings (rule, line, message) of `text` checked in `format` with the default
/// config and synthesized samples.
fn findings_as(text: &str, format: prefixlint::formats::TemplateFormat) -> Vec<(String, String)> {
    let linter = prefixlint::Linter::new(
        prefixlint::config::Config::default(),
        prefixlint::LintOptions {
            cwd: repo_root(),
            ..prefixlint::LintOptions::default()
        },
    )
    .unwrap();
    let path = repo_root().join("review.txt");
    let outcome = linter.check_source_as(
        &path,
        prefixlint::request::TemplateText { text, format },
        None,
    );
    let prefixlint::TemplateOutcome::Checked(report) = outcome else {
        panic!("not checked: {outcome:?}");
    };
    report
        .findings
        .iter()
        .map(|f| (f.rule.code.to_string(), f.message.clone()))
        .collect()
}

/// A `{var}` template gets the same samples as its Jinja twin: its task is assumed to
/// change per request, and a setting's synthesized text (written by the format's own
/// renderer) is left out of the stable count, in the same words.
#[test]
fn a_format_template_varies_and_marks_stand_ins_as_its_jinja_twin_does() {
    use prefixlint::formats::TemplateFormat;
    let body = fixture("review-task.j2")
        .replace("{{ source_code }}", "{{ tool_docs }}")
        .replace("Code under review:", "Tools you may call:");
    let as_format = body.replace("{{ ", "{").replace(" }}", "}");
    let jinja = findings_as(&body, TemplateFormat::Jinja);
    let format = findings_as(&as_format, TemplateFormat::Format);
    assert_eq!(jinja.len(), 1, "{jinja:?}");
    let (rule, message) = &format[0];
    assert_eq!(rule, "PL002");
    assert!(message.contains("cadence assumed"), "{message}");
    assert!(message.contains("tokens of stand-in values)"), "{message}");
    assert_eq!(
        format,
        [(
            jinja[0].0.clone(),
            jinja[0].1.replace("`{{ assignment }}`", "`{assignment}`")
        )]
    );
}
