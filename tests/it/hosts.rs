//! Templates where they live: inside YAML values, `.prompty` bodies and prompt-poet
//! `.yml.j2` files, checked with zero config by the real binary, every position a host
//! position (fixtures/hosts).

use crate::support;

use serde_json::Value;
use std::path::Path;
use support::*;

fn check(args: &[&str]) -> Run {
    run(prefixlint()
        .arg("check")
        .args(args)
        .args(["--no-config", "--no-cache"]))
}

fn json(args: &[&str]) -> (i32, Value) {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let r = check(&all);
    let parsed = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\n{}", r.stdout, r.stderr));
    (r.code, parsed)
}

/// `path embedded.kind embedded.key embedded.line` per template, then each finding.
fn summary(report: &Value) -> String {
    let mut out = String::new();
    for template in report["templates"].as_array().unwrap() {
        let embedded = &template["embedded"];
        out.push_str(&format!(
            "{} {} {} line {}\n",
            template["path"].as_str().unwrap(),
            embedded["kind"].as_str().unwrap_or("-"),
            embedded["key"].as_str().unwrap_or("-"),
            embedded["line"]
        ));
        for d in template["diagnostics"].as_array().unwrap() {
            out.push_str(&format!(
                "  {}:{} {} {}\n",
                d["line"],
                d["column"],
                d["rule"].as_str().unwrap(),
                d["severity"].as_str().unwrap()
            ));
        }
    }
    for error in report["errors"].as_array().unwrap() {
        out.push_str(&format!(
            "error {}:{}:{} {}\n",
            error["path"].as_str().unwrap(),
            error["line"],
            error["column"],
            error["message"].as_str().unwrap()
        ));
    }
    for skipped in report["skipped"].as_array().unwrap() {
        out.push_str(&format!(
            "skipped {}: {}\n",
            skipped["path"].as_str().unwrap(),
            skipped["reason"].as_str().unwrap()
        ));
    }
    out
}

#[test]
fn the_corpus_is_checked_in_place_with_zero_config() {
    let (_, report) = json(&[
        "fixtures/hosts/agents",
        "fixtures/hosts/rails",
        "fixtures/hosts/catalog",
        "fixtures/hosts/kernel",
        "fixtures/hosts/poet",
        "fixtures/hosts/support.prompty",
    ]);
    insta::assert_snapshot!(summary(&report));
}

#[test]
fn non_prompt_yaml_stays_quiet() {
    // Walked: nothing is a template, nothing is an error.
    let (code, report) = json(&["fixtures/hosts/controls"]);
    assert_eq!(summary(&report), "", "{report:#}");
    assert_eq!(code, 0);
    // Named one by one, as pre-commit does: each is skipped with its reason.
    let controls = [
        "fixtures/hosts/controls/workflows/ci.yml",
        "fixtures/hosts/controls/site.yml",
        "fixtures/hosts/controls/roles/web/tasks/main.yml",
        "fixtures/hosts/controls/chart/Chart.yaml",
        "fixtures/hosts/controls/chart/values.yaml",
        "fixtures/hosts/controls/chart/templates/deployment.yaml",
        "fixtures/hosts/controls/docker-compose.yml",
        "fixtures/hosts/controls/k8s/configmap.yaml",
    ];
    let (code, report) = json(&controls);
    assert_eq!(code, 0, "{report:#}");
    assert!(report["templates"].as_array().unwrap().is_empty());
    assert!(report["errors"].as_array().unwrap().is_empty());
    let skipped: Vec<&str> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap())
        .collect();
    assert_eq!(skipped.len(), controls.len(), "{report:#}");
    // LangChain's `{var}` prompt YAML is a prompt in its own format, not a Jinja one.
    let (_, report) = json(&["fixtures/hosts/kernel/fstring_prompt.yaml"]);
    let found = |list: &str| report[list].as_array().unwrap().len();
    assert_eq!(found("skipped"), 0, "{report:#}");
    assert_eq!(found("templates") + found("unchecked"), 1, "{report:#}");
}

#[test]
fn findings_are_at_host_lines_in_every_format() {
    let host = "fixtures/hosts/agents/swe_agent.yaml";
    let concise = check(&[host, "--format", "concise"]);
    insta::assert_snapshot!("concise", concise.stdout);
    let github = check(&[host, "--format", "github"]);
    assert!(
        github.stdout.contains(&format!("file={host},line=8,")),
        "{}",
        github.stdout
    );
    let sarif: Value = serde_json::from_str(&check(&[host, "--format", "sarif"]).stdout).unwrap();
    let result = &sarif["runs"][0]["results"][0];
    assert_eq!(
        result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        host
    );
    assert_eq!(
        result["locations"][0]["physicalLocation"]["region"]["startLine"],
        8
    );
    // The full report quotes the host file's own line.
    let full = check(&[host]);
    assert!(
        full.stdout.contains("Session {{ session_id }} opened"),
        "{}",
        full.stdout
    );
    assert!(
        full.stdout.contains(&format!("{host}:8:")),
        "{}",
        full.stdout
    );
}

#[test]
fn a_prompty_body_is_checked_with_its_sample() {
    let (_, report) = json(&["fixtures/hosts/support.prompty"]);
    let template = &report["templates"][0];
    assert_eq!(template["embedded"]["kind"], "prompty");
    assert_eq!(template["embedded"]["line"], 17);
    // The front matter is metadata: none of it is rendered.
    let render = run(prefixlint().args([
        "render",
        "fixtures/hosts/support.prompty",
        "--no-config",
        "--now",
        "2026-01-02T03:04:05Z",
    ]));
    assert_eq!(render.code, 0, "{}", render.stderr);
    assert!(
        render.stdout.starts_with("system:\nToday is "),
        "{}",
        render.stdout
    );
    assert!(
        render.stdout.contains("Jane asks: Where is my order?"),
        "{}",
        render.stdout
    );
    assert!(!render.stdout.contains("azure_openai"));
}

#[test]
fn render_takes_a_key_in_a_yaml_host() {
    let r = run(prefixlint().args([
        "render",
        "fixtures/hosts/kernel/langchain_prompt.yaml",
        "--key",
        "template",
        "--no-config",
    ]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.starts_with("Write three taglines for "),
        "{}",
        r.stdout
    );
    let missing = run(prefixlint().args([
        "render",
        "fixtures/hosts/agents/swe_agent.yaml",
        "--key",
        "agent.nope",
        "--no-config",
    ]));
    assert_eq!(missing.code, 2);
    assert!(
        flat(&missing.stderr).contains("no template at `agent.nope`"),
        "{}",
        missing.stderr
    );
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

/// Instructions long enough that a volatile value before them costs the cache.
const INSTRUCTIONS: &str = "Read the request, then answer it from the documents only. Cite each document you use by its title, keep the answer under two hundred words, and say plainly when the documents do not answer the request. Never guess a number, never invent a title, and never answer a question the documents do not cover. Write in the user's language, use short sentences, and end with a one-line summary of the answer.";

#[test]
fn suppressions_work_on_the_key_line() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = |comment: &str| {
        format!(
            "assistant:\n  system_prompt: | {comment}\n    Request {{{{ request_id }}}}.\n    {INSTRUCTIONS}\n"
        )
    };
    write(dir.path(), "plain.yaml", &yaml(""));
    write(
        dir.path(),
        "ignored.yaml",
        &yaml("# prefixlint: ignore[PL001] the id is for tracing"),
    );
    write(
        dir.path(),
        "bare.yaml",
        &yaml("# prefixlint: ignore[PL001]"),
    );
    let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let (_, plain) = json(&[&path("plain.yaml")]);
    let rules: Vec<&str> = plain["templates"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["rule"].as_str().unwrap())
        .collect();
    assert!(rules.contains(&"PL001"), "{plain:#}");
    assert_eq!(plain["templates"][0]["diagnostics"][0]["line"], 3);
    let (_, ignored) = json(&[&path("ignored.yaml")]);
    assert!(
        ignored["templates"][0]["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["rule"] != "PL001"),
        "{ignored:#}"
    );
    let (_, bare) = json(&[&path("bare.yaml")]);
    let rules: Vec<&str> = bare["templates"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["rule"].as_str().unwrap())
        .collect();
    assert!(
        rules.contains(&"PL010") && rules.contains(&"PL001"),
        "{bare:#}"
    );
}

#[test]
fn errors_point_at_the_host_line() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "broken.yaml",
        "name: demo\nprompts:\n  greeting: |\n    Hello {{ name }}.\n    {% if formal %}Dear sir.\n",
    );
    write(
        dir.path(),
        "bad.prompty",
        "---\nname: [unclosed\n---\nHello {{ x }}\n",
    );
    let broken = dir
        .path()
        .join("broken.yaml")
        .to_string_lossy()
        .into_owned();
    let prompty = dir
        .path()
        .join("bad.prompty")
        .to_string_lossy()
        .into_owned();
    let (code, report) = json(&[&broken, &prompty]);
    assert_eq!(code, 2);
    let errors = report["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2, "{report:#}");
    let yaml_error = errors
        .iter()
        .find(|e| e["path"].as_str().unwrap().ends_with("broken.yaml"))
        .unwrap();
    assert_eq!(yaml_error["line"], 5, "{report:#}");
    assert!(
        yaml_error["message"]
            .as_str()
            .unwrap()
            .contains("prompts.greeting"),
        "{report:#}"
    );
    let prompty_error = errors
        .iter()
        .find(|e| e["path"].as_str().unwrap().ends_with("bad.prompty"))
        .unwrap();
    // serde_yaml reports an unclosed flow sequence where the input ends.
    assert_eq!(prompty_error["line"], 3, "{report:#}");
}

#[test]
fn config_embedded_names_keys_and_turns_recognition_off() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "flow.yaml",
        "steps:\n  - say: \"Hi {{ name }}\"\nprompt: \"{{ question }} is asked\"\n",
    );
    write(
        dir.path(),
        "prefixlint.yaml",
        "embedded:\n  recognize: false\n  files:\n    - path: flow.yaml\n      keys: [\"steps[*].say\"]\n",
    );
    let r = run(prefixlint().current_dir(dir.path()).args([
        "check",
        ".",
        "--no-cache",
        "--format",
        "json",
    ]));
    let report: Value =
        serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", r.stdout, r.stderr));
    let keys: Vec<&str> = report["templates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["embedded"]["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["steps[0].say"], "{report:#}");
}

#[test]
fn the_results_cache_keys_on_the_host_file() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let text =
        format!("a:\n  system_prompt: |\n    Request {{{{ request_id }}}}.\n    {INSTRUCTIONS}\n");
    write(dir.path(), "agent.yaml", &text);
    let host = dir.path().join("agent.yaml").to_string_lossy().into_owned();
    let cache_dir = cache.path().to_string_lossy().into_owned();
    let run_once = || {
        let r = run(prefixlint().args([
            "check",
            &host,
            "--no-config",
            "--format",
            "json",
            "--cache-dir",
            &cache_dir,
        ]));
        serde_json::from_str::<Value>(&r.stdout).unwrap()
    };
    let first = run_once();
    let second = run_once();
    assert_eq!(first["templates"], second["templates"]);
    assert_eq!(second["templates"][0]["embedded"]["key"], "a.system_prompt");
    // An edit of the host re-checks its template.
    write(
        dir.path(),
        "agent.yaml",
        &text.replace("Request", "\n    Request"),
    );
    let third = run_once();
    assert_eq!(
        third["templates"][0]["diagnostics"][0]["line"], 4,
        "{third:#}"
    );
}

/// With a chat template, a `.prompty` body's role lines are the request's messages, and
/// the finding is still at the `.prompty` file's line.
#[test]
fn chat_templates_wrap_prompty_messages_as_the_server_would() {
    let chat_template = "fixtures/chat-templates/Apertus-8B-Instruct.jinja";
    let (_, plain) = json(&["fixtures/hosts/support.prompty"]);
    let (_, chat) = json(&[
        "fixtures/hosts/support.prompty",
        "--chat-template",
        chat_template,
    ]);
    let template = &chat["templates"][0];
    assert_eq!(template["embedded"]["kind"], "prompty", "{chat:#}");
    assert_eq!(template["diagnostics"][0]["rule"], "PL001");
    assert_eq!(template["diagnostics"][0]["line"], 18);
    // The chat template's own tokens come around the messages, and the role lines are gone.
    let tokens = |report: &Value| report["templates"][0]["tokens"]["min"].as_u64().unwrap();
    assert!(tokens(&chat) > tokens(&plain), "{chat:#}");
}

/// Jinja prompts named `.txt` or `.md` are checked when named on the command line, as
/// text hosts (their findings at the file's lines, their suppressions in it).
#[test]
fn text_and_markdown_prompts_are_checked_when_named() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "system.txt", "You help {{ user_name }}.\n");
    write(dir.path(), "guide.md", "# Guide\n{{ topic }}\n");
    let txt = dir.path().join("system.txt").to_string_lossy().into_owned();
    let md = dir.path().join("guide.md").to_string_lossy().into_owned();
    let (code, report) = json(&[&txt, &md]);
    assert_ne!(code, 2, "{report:#}");
    assert_eq!(
        report["templates"].as_array().unwrap().len(),
        2,
        "{report:#}"
    );
    assert_eq!(
        report["templates"][0]["embedded"]["kind"], "text",
        "{report:#}"
    );
}

/// A Python host: the finding is at the host's line and column, through `textwrap.dedent`;
/// a suppression on the assignment's line applies; an f-string is read as one; a `.py`
/// that does not parse, named on the command line (as pre-commit names every changed file),
/// is skipped with the reason, not an error.
#[test]
fn python_hosts_report_at_host_positions_and_take_suppressions_on_the_assignment_line() {
    let dir = tempfile::tempdir().unwrap();
    // The string opens on the assignment's line, so the comment goes on the line above.
    let python = |comment: &str| {
        format!(
            "import textwrap\n{comment}\nSYSTEM_PROMPT = textwrap.dedent(\"\"\"\\\n    Request {{{{ request_id }}}}.\n    {INSTRUCTIONS}\n\"\"\")\n\nGREETING_PROMPT = f\"Hello {{name}} {{{{ not_jinja }}}}\"\n"
        )
    };
    write(dir.path(), "plain.py", &python(""));
    write(
        dir.path(),
        "ignored.py",
        &python("# prefixlint: ignore[PL001] the id is for tracing"),
    );
    // A one-line assignment takes the comment on its own line.
    write(
        dir.path(),
        "inline.py",
        &format!("ROUTE_PROMPT = \"Request {{{{ request_id }}}}. {INSTRUCTIONS}\"  # prefixlint: ignore[PL001] tracing\n"),
    );
    write(dir.path(), "broken.py", "PROMPT = \"{{ x }}\"\ndef (:\n");
    let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let (_, plain) = json(&[&path("plain.py")]);
    let templates = plain["templates"].as_array().unwrap();
    assert_eq!(templates.len(), 2, "{plain:#}");
    assert_eq!(templates[0]["embedded"]["kind"], "python");
    assert_eq!(templates[0]["embedded"]["key"], "SYSTEM_PROMPT");
    assert_eq!(templates[1]["embedded"]["key"], "GREETING_PROMPT");
    assert_eq!(templates[1]["format"], "fstring");
    let pl001 = templates[0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["rule"] == "PL001")
        .unwrap_or_else(|| panic!("no PL001: {plain:#}"));
    assert_eq!((&pl001["line"], &pl001["column"]), (&4.into(), &13.into()));
    let (_, ignored) = json(&[&path("ignored.py")]);
    assert!(
        ignored["templates"][0]["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["rule"] != "PL001"),
        "{ignored:#}"
    );
    let (_, inline) = json(&[&path("inline.py")]);
    assert_eq!(inline["templates"][0]["embedded"]["key"], "ROUTE_PROMPT");
    assert!(
        inline["templates"][0]["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["rule"] != "PL001"),
        "{inline:#}"
    );
    let (code, broken) = json(&[&path("broken.py")]);
    assert_eq!(code, 0, "{broken:#}");
    assert!(broken["templates"].as_array().unwrap().is_empty());
    assert!(
        broken["skipped"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("not valid Python"),
        "{broken:#}"
    );
}
