//! Synthesized samples follow how a template uses each variable: templates that failed
//! when every variable was a string now render, with the right figures.

use crate::support;

use std::fs;
use std::path::Path;
use support::*;

/// Enough stable text after the varying part for a divergence to matter.
const STABLE: &str = "Rules:\n\
Answer with the facts you are sure of, say plainly when you are not sure, and never invent citations.\n\
Prefer short paragraphs and numbered steps. Show commands in code blocks and explain each flag once.\n\
When a question is ambiguous, ask one clarifying question before answering it in full.\n\
Keep the tone friendly and precise, and finish with a one-line summary of the answer.\n";

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

fn check(dir: &Path, file: &str) -> (i32, serde_json::Value, String) {
    let r =
        run(prefixlint()
            .current_dir(dir)
            .args(["check", "--no-config", "--format", "json", file]));
    let json = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\n{}", r.stdout, r.stderr));
    (r.code, json, r.stderr)
}

fn render(dir: &Path, file: &str, sample: usize) -> String {
    render_with(dir, file, sample, &[])
}

/// `render` at a fixed time: without `--now` it reads the current time.
fn render_at(dir: &Path, file: &str, now: &str) -> String {
    render_with(dir, file, 0, &["--now", now])
}

fn render_with(dir: &Path, file: &str, sample: usize, extra: &[&str]) -> String {
    let r = run(prefixlint()
        .current_dir(dir)
        .args([
            "render",
            "--no-config",
            file,
            "--sample",
            &sample.to_string(),
        ])
        .args(extra));
    assert_eq!(r.code, 0, "{}", r.stderr);
    r.stdout
}

#[test]
fn a_stable_loop_over_objects_renders_and_is_not_volatile() {
    let dir = tempfile::tempdir().unwrap();
    // `examples` is a deployment setting: the same few-shot examples for every request.
    write(
        dir.path(),
        "review.j2",
        &format!(
            "Examples:\n{{% for ex in examples %}}- {{{{ ex.title }}}}: {{{{ ex.body }}}}\n{{% endfor %}}{STABLE}"
        ),
    );
    let (code, json, stderr) = check(dir.path(), "review.j2");
    assert_eq!(code, 0, "{stderr}");
    let t = &json["templates"][0];
    assert_eq!(t["samples"], 3);
    // One list of three examples, the same in every render: nothing diverges.
    assert_eq!(t["tokens"]["min"], t["tokens"]["max"]);
    assert_eq!(t["shared_prefix_tokens"], t["tokens"]["min"]);
    assert_eq!(t["diagnostics"].as_array().unwrap().len(), 0);
    assert!(t.get("first_divergence").is_none());
    assert_eq!(
        render(dir.path(), "review.j2", 0)
            .lines()
            .take(4)
            .collect::<Vec<_>>(),
        [
            "Examples:",
            "- title 1: body 1",
            "- title 2: body 2",
            "- title 3: body 3"
        ]
    );
}

#[test]
fn a_loop_over_objects_whose_names_say_nothing_is_assumed_per_request() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "review.j2",
        &format!(
            "Open comments:\n{{% for c in comments %}}- {{{{ c.title }}}}: {{{{ c.body }}}}\n{{% endfor %}}{STABLE}"
        ),
    );
    let (code, json, stderr) = check(dir.path(), "review.j2");
    assert_eq!(code, 1, "{stderr}");
    let t = &json["templates"][0];
    // Both fields of the comments, each with the path to declare it by.
    assert_eq!(t["diagnostics"].as_array().unwrap().len(), 2, "{t}");
    for (d, field) in t["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .zip(["title", "body"])
    {
        let message = d["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("`{{{{ c.{field} }}}}` differs between renders"))
                && message.contains(&format!(
                    "cadence assumed: nothing says how often `comments.{field}` changes"
                )),
            "{message}"
        );
    }
    // The first render is what `render` shows; the others differ from their first word.
    assert_eq!(
        render(dir.path(), "review.j2", 0).lines().nth(1),
        Some("- title 1: body 1")
    );
    assert_eq!(
        render(dir.path(), "review.j2", 1).lines().nth(1),
        Some("- second title 1: second body 1")
    );
}

#[test]
fn a_loop_whose_items_carry_a_clock_is_found() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "events.j2",
        &format!(
            "{{% for e in events %}}{{{{ e.created_at.strftime('%d %b %H:%M') }}}} {{{{ e.summary | trim }}}}\n{{% endfor %}}{STABLE}"
        ),
    );
    let (code, json, stderr) = check(dir.path(), "events.j2");
    assert_eq!(code, 1, "{stderr}");
    let t = &json["templates"][0];
    assert_eq!(t["diagnostics"][0]["rule"], "PL001");
    assert!(t["shared_prefix_tokens"].as_u64().unwrap() < 3, "{t}");
}

#[test]
fn items_and_nested_loops_render() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "config.j2",
        "{% for name, tool in tools.items() %}## {{ name }}\n{% for p in tool.params %}- {{ p.field }}: {{ p.type }}{% if p.required %} (required){% endif %}\n{% endfor %}{% endfor %}{{ ', '.join(tags) }} / {{ limits['max_steps'] + 1 }}\n",
    );
    let text = render(dir.path(), "config.j2", 0);
    assert_eq!(
        text,
        "## key 1\n- field 1: type 1 (required)\n- field 2: type 2 (required)\n## key 2\n- field 1: type 1 (required)\n- field 2: type 2 (required)\ntags 1, tags 2, tags 3 / 4"
    );
}

#[test]
fn a_loop_over_a_string_no_longer_prints_one_character_per_line() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "docs.j2",
        // `chapters`, not `documents`: that is the request's input, which gets passages.
        "{% for d in chapters %}<doc>{{ d }}</doc>\n{% endfor %}",
    );
    assert_eq!(
        render(dir.path(), "docs.j2", 0),
        "<doc>chapters 1</doc>\n<doc>chapters 2</doc>\n<doc>chapters 3</doc>\n"
    );
}

#[test]
fn application_objects_get_stand_ins_and_the_report_names_them() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "plan.j2",
        &format!(
            "{STABLE}{{% if state.has_frontend() %}}Check the UI too.\n{{% endif %}}{{% for subtask in subtasks %}}## {{{{ subtask.title }}}}\n{{{{ subtask.output.to_markdown() }}}}\n{{% endfor %}}"
        ),
    );
    let (code, json, stderr) = check(dir.path(), "plan.j2");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        json["templates"][0]["stand_ins"],
        serde_json::json!(["state", "subtasks[].output"])
    );
    assert!(render(dir.path(), "plan.j2", 0).ends_with(
        "Check the UI too.\n## title 1\nmarkdown 1\n## title 2\nmarkdown 2\n## title 3\nmarkdown 3\n"
    ));
    let full = run(prefixlint().current_dir(dir.path()).args([
        "check",
        "--no-config",
        "--format",
        "full",
        "plan.j2",
    ]));
    assert!(
        full.stdout.contains(
            "note: plan.j2 rendered with stand-ins for application objects: state, subtasks[].output"
        ),
        "{}",
        full.stdout
    );
    // Templates without application objects keep the JSON they had: no `stand_ins` key.
    write(dir.path(), "plain.j2", "Hello {{ question }}\n");
    let (_, json, _) = check(dir.path(), "plain.j2");
    assert!(json["templates"][0].get("stand_ins").is_none());
}

#[test]
fn now_strftime_renders_and_is_found_before_stable_text() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "today.j2",
        &format!("Today is {{{{ now().strftime('%Y-%m-%d') }}}}.\n{STABLE}"),
    );
    let (code, json, stderr) = check(dir.path(), "today.j2");
    assert_eq!(code, 1, "{stderr}");
    let t = &json["templates"][0];
    assert_eq!(t["diagnostics"][0]["rule"], "PL001");
    assert_eq!(t["diagnostics"][0]["line"], 1);
    assert!(render_at(dir.path(), "today.j2", "2026-03-14T09:26:53Z")
        .starts_with("Today is 2026-03-14.\n"));
    assert!(
        render_at(dir.path(), "today.j2", "2026-03-15T10:27:54.007Z")
            .starts_with("Today is 2026-03-15.\n")
    );
    // A bare `now` prints like Python's str(datetime) and has the same methods.
    write(
        dir.path(),
        "bare.j2",
        "{{ now }} | {{ now.isoformat() }} | {{ now().year }}\n",
    );
    assert_eq!(
        render_at(dir.path(), "bare.j2", "2026-03-15T10:27:54.007Z"),
        "2026-03-15 10:27:54.007000 | 2026-03-15T10:27:54.007000 | 2026"
    );
}

#[test]
fn yaml_timestamps_in_samples_load_as_datetimes() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "ticket.j2",
        "Opened {{ created.strftime('%d %B %Y') }} ({{ created }}); quoted {{ quoted }}; due {{ due }}.\n",
    );
    write(
        dir.path(),
        "ticket.samples.yaml",
        "- created: 2024-05-01 10:00:00\n  quoted: '2024-05-01 10:00:00'\n  due: 2024-06-01\n- created: 2024-05-02T08:30:00Z\n  quoted: x\n  due: 2024-06-02\n",
    );
    assert_eq!(
        render(dir.path(), "ticket.j2", 0),
        "Opened 01 May 2024 (2024-05-01 10:00:00); quoted 2024-05-01 10:00:00; due 2024-06-01."
    );
    assert_eq!(
        render(dir.path(), "ticket.j2", 1),
        "Opened 02 May 2024 (2024-05-02 08:30:00+00:00); quoted x; due 2024-06-02."
    );
    // A timestamp that names no real day is an error at its place in the samples file.
    write(
        dir.path(),
        "ticket.samples.yaml",
        "- created: 2024-05-01 10:00:00\n  quoted: a\n  due: 2024-02-30\n",
    );
    let r = run(prefixlint()
        .current_dir(dir.path())
        .args(["check", "--no-config", "ticket.j2"]));
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("ticket.samples.yaml:3:8") && flat(&r.stderr).contains("2024-02-30"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_samples_file_keeps_stand_ins_for_the_objects_it_cannot_hold() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "status.j2",
        "{{ question }}{% if state.has_frontend() %} (web){% endif %}\n",
    );
    write(
        dir.path(),
        "status.samples.yaml",
        "- question: a\n- question: b\n",
    );
    assert_eq!(render(dir.path(), "status.j2", 1), "b (web)");
    let (_, json, _) = check(dir.path(), "status.j2");
    assert_eq!(
        json["templates"][0]["stand_ins"],
        serde_json::json!(["state"])
    );
}

#[test]
fn samples_prints_a_ready_to_edit_file() {
    let r = run(prefixlint().args(["samples", "--no-config", "tests/fixtures/shapes/agent.j2"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    insta::assert_snapshot!(r.stdout);
}

#[test]
fn samples_write_round_trips_and_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    fs::copy(
        repo_root().join("tests/fixtures/shapes/agent.j2"),
        dir.path().join("agent.j2"),
    )
    .unwrap();
    fs::create_dir_all(dir.path().join("partials")).unwrap();
    fs::copy(
        repo_root().join("tests/fixtures/shapes/partials/rules.md"),
        dir.path().join("partials/rules.md"),
    )
    .unwrap();
    let write = |dir: &Path| {
        run(prefixlint()
            .current_dir(dir)
            .args(["samples", "--no-config", "--write", "agent.j2"]))
    };
    let first = write(dir.path());
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(first.stdout.is_empty());
    let written = fs::read_to_string(dir.path().join("agent.samples.yaml")).unwrap();
    assert!(written.contains("# state: left out"), "{written}");
    // The written file is a valid samples file the template renders with.
    let (code, json, stderr) = check(dir.path(), "agent.j2");
    assert!(code < 2, "{stderr}");
    assert_eq!(json["templates"][0]["samples"], 3);
    assert_eq!(
        json["templates"][0]["stand_ins"],
        serde_json::json!(["state", "subtasks[].output"])
    );
    // A second --write refuses to replace the file the user may have edited.
    fs::write(
        dir.path().join("agent.samples.yaml"),
        "# edited\n- question: mine\n",
    )
    .unwrap();
    let second = write(dir.path());
    assert_eq!(second.code, 2);
    assert!(
        second.stderr.contains("already exists"),
        "{}",
        second.stderr
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("agent.samples.yaml")).unwrap(),
        "# edited\n- question: mine\n"
    );
}

#[test]
fn a_variable_that_names_an_include_renders() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "router.j2",
        "Route:{% include partial %}|{% if extra is defined %}{{ extra }}{% endif %}\n",
    );
    assert_eq!(render(dir.path(), "router.j2", 0), "Route:|extra 1");
    let r = run(prefixlint()
        .current_dir(dir.path())
        .args(["samples", "--no-config", "router.j2"]));
    assert!(
        r.stdout.contains("# names a template to include"),
        "{}",
        r.stdout
    );
}
