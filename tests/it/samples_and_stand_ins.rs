//! Issue 23 §5 and §6 on the real binary: synthesized samples vary the request's input and
//! keep deployment settings constant, findings state their cadence, conditions on literals
//! get samples that meet them, an empty template gets a note; unknown filters and tests
//! render with stand-ins (and a note in every format), and Python's mutating list and dict
//! methods work. Renders are compared with Python Jinja2's.

use crate::support;

use support::*;

const DIR: &str = "fixtures/samples-and-stand-ins";

fn check(template: &str, format: &str, extra: &[&str]) -> Run {
    let r = run(prefixlint()
        .args(["check", "--no-config", "--no-cache", "--format", format])
        .args(extra)
        .arg(format!("{DIR}/{template}")));
    assert!(
        matches!(r.code, 0 | 1),
        "{template} {format}: exit {}\n{}{}",
        r.code,
        r.stdout,
        r.stderr
    );
    r
}

fn json(template: &str) -> serde_json::Value {
    let r = check(template, "json", &["--fail-on", "info"]);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

fn render(template: &str, sample: usize) -> String {
    let r = run(prefixlint()
        .args(["render", "--no-config"])
        .arg(format!("{DIR}/{template}"))
        .args(["--sample", &sample.to_string()]));
    assert_eq!(r.code, 0, "{template} sample {sample}: {}", r.stderr);
    r.stdout
}

/// Python Jinja2's render of `template` over each entry of its samples file, with the
/// stand-ins prefixlint uses for what the application registers: filters return their
/// input, tests the truth of the value.
fn python_renders(template: &str) -> Vec<String> {
    let script = format!(
        r#"
import json, sys, jinja2, yaml
env = jinja2.Environment(loader=jinja2.FileSystemLoader({DIR:?}))
env.filters["lemmatize"] = lambda value, *args, **kwargs: value
env.filters["shout"] = lambda value, *args, **kwargs: value
env.tests["admin"] = lambda value, *args, **kwargs: bool(value)
stem = {template:?}.rsplit(".", 1)[0]
with open({DIR:?} + "/" + stem + ".samples.yaml", encoding="utf-8") as f:
    samples = yaml.safe_load(f)
renders = [env.get_template({template:?}).render(**sample) for sample in samples]
sys.stdout.write(json.dumps(renders))
"#
    );
    let out = std::process::Command::new(python())
        .current_dir(repo_root())
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn diagnostics(report: &serde_json::Value) -> Vec<serde_json::Value> {
    report["templates"][0]["diagnostics"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn the_requests_input_varies_and_its_finding_says_per_request() {
    // Synthesized renders give the problem statement a different text each time, of a
    // different length; the command docs (a deployment setting) stay the same.
    let renders: Vec<String> = (0..3).map(|n| render("issue-first.j2", n)).collect();
    let statement = |r: &str| r.lines().nth(2).unwrap().to_owned();
    assert_ne!(statement(&renders[0]), statement(&renders[1]));
    assert_ne!(statement(&renders[1]), statement(&renders[2]));
    assert_ne!(statement(&renders[0]).len(), statement(&renders[1]).len());
    let docs = |r: &str| r.lines().last().unwrap().to_owned();
    assert_eq!(docs(&renders[0]), docs(&renders[1]));
    assert_eq!(docs(&renders[0]), docs(&renders[2]));

    let report = json("issue-first.j2");
    let found = diagnostics(&report);
    assert_eq!(found.len(), 1, "{found:#?}");
    let finding = &found[0];
    assert_eq!(finding["rule"], "PL002");
    assert_eq!(finding["cadence"], "per-request");
    assert_eq!(finding["line"], 3);
    let message = finding["message"].as_str().unwrap();
    assert!(
        message.starts_with("`{{ problem_statement }}` differs between renders before ")
            && message.ends_with("; it is the request's input, which changes on every request"),
        "{message}"
    );
}

#[test]
fn a_date_is_a_daily_warning() {
    let report = json("dated.j2");
    let found = diagnostics(&report);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0]["rule"], "PL001");
    assert_eq!(found[0]["severity"], "warning");
    assert_eq!(found[0]["cadence"], "daily");
    let message = found[0]["message"].as_str().unwrap();
    assert!(
        message.contains("renders a date before")
            && message.ends_with("; it changes once a day: one cache miss per prefix per day"),
        "{message}"
    );
}

#[test]
fn conditions_on_literals_get_samples_that_meet_them() {
    for n in 0..3 {
        let text = render("labels.j2", n);
        assert!(
            text.contains("The reviewer loved it.")
                && text.contains("Answer in one friendly sentence."),
            "sample {n}: {text}"
        );
    }
    // `mode` and `label` are not the request's input: the same in every render.
    assert_eq!(
        render("labels.j2", 0).lines().skip(1).collect::<Vec<_>>(),
        render("labels.j2", 2).lines().skip(1).collect::<Vec<_>>()
    );
}

#[test]
fn registered_filters_and_tests_render_like_jinja2_with_identity_stand_ins() {
    let python = python_renders("registered.j2");
    assert_eq!(python.len(), 2);
    for (n, expected) in python.iter().enumerate() {
        assert_eq!(&render("registered.j2", n), expected, "sample {n}");
    }
}

#[test]
fn mutating_list_and_dict_methods_render_like_jinja2() {
    let python = python_renders("collected.j2");
    assert_eq!(python.len(), 2);
    for (n, expected) in python.iter().enumerate() {
        assert_eq!(&render("collected.j2", n), expected, "sample {n}");
    }
    // And `check` renders it (each render from a fresh copy of its sample).
    let report = json("collected.j2");
    assert_eq!(report["errors"].as_array().unwrap().len(), 0, "{report:#}");
}

#[test]
fn each_stand_in_is_a_note_in_every_format() {
    let notes = [
        "`lemmatize` is not a Jinja2 filter",
        "`filters: {lemmatize: identity}`",
        "`shout` is not a Jinja2 filter",
        "`admin` is not a Jinja2 test",
        "`tests: {admin: {constant: true}}`",
    ];
    for format in ["full", "concise", "json", "sarif", "github"] {
        let r = check("registered.j2", format, &[]);
        for note in notes {
            assert!(r.stdout.contains(note), "{format}: {note}\n{}", r.stdout);
        }
    }
    let r = check("registered.j2", "concise", &[]);
    insta::assert_snapshot!("registered_concise", r.stdout);
}

#[test]
fn stand_ins_off_or_strict_undefined_make_an_unknown_filter_an_error_again() {
    let dir = tempfile::tempdir().unwrap();
    for config in ["stand_ins: off\n", "undefined: strict\n"] {
        let path = dir.path().join("prefixlint.yaml");
        std::fs::write(&path, config).unwrap();
        let r = run(prefixlint()
            .args(["check", "--no-cache", "--format", "concise", "--config"])
            .arg(&path)
            .arg(format!("{DIR}/registered.j2")));
        assert_eq!(r.code, 2, "{config}: {}{}", r.stdout, r.stderr);
        assert!(
            r.stdout.contains("unknown filter") || r.stderr.contains("unknown filter"),
            "{config}: {}{}",
            r.stdout,
            r.stderr
        );
    }
}

#[test]
fn an_empty_template_gets_a_note_in_every_format() {
    for format in ["full", "concise", "json", "sarif", "github"] {
        let r = check("empty.j2", format, &[]);
        assert!(
            r.stdout
                .contains("every render is empty: there is nothing to cache"),
            "{format}: {}",
            r.stdout
        );
    }
}

#[test]
fn cadence_texts_in_the_concise_format() {
    let mut out = String::new();
    for template in ["issue-first.j2", "dated.j2"] {
        out.push_str(&check(template, "concise", &["--fail-on", "info"]).stdout);
    }
    insta::assert_snapshot!("cadence_concise", out);
}
