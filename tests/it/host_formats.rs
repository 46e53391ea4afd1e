//! Prompts in every host and format, found with zero config by the real binary
//! (fixtures/host-formats): each template at its host line in its format, each volatile
//! value reported where the host file writes it, the non-prompt controls quiet, and what
//! cannot be checked listed under `unchecked`, never passed in silence.

use crate::support::*;
use serde_json::Value;
use std::path::Path;

const CORPUS: &str = "fixtures/host-formats";

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

/// `path#key kind format line` per template with its findings, then the skipped and the
/// unchecked places.
fn listing(report: &Value) -> String {
    let mut out = String::new();
    for template in report["templates"].as_array().unwrap() {
        let embedded = &template["embedded"];
        out.push_str(&format!(
            "{}#{} {} {} line {}\n",
            template["path"].as_str().unwrap(),
            embedded["key"].as_str().unwrap_or("-"),
            embedded["kind"].as_str().unwrap_or("file"),
            template["format"].as_str().unwrap_or("-"),
            embedded["line"]
        ));
        for d in template["diagnostics"].as_array().unwrap() {
            out.push_str(&format!(
                "  {}:{} {}\n",
                d["line"],
                d["column"],
                d["rule"].as_str().unwrap()
            ));
        }
    }
    for error in report["errors"].as_array().unwrap() {
        out.push_str(&format!(
            "error {}: {}\n",
            error["path"].as_str().unwrap(),
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
    for place in report["unchecked"].as_array().unwrap() {
        out.push_str(&format!(
            "unchecked {}:{}: {}\n",
            place["path"].as_str().unwrap(),
            place["line"],
            place["reason"].as_str().unwrap()
        ));
    }
    out
}

/// The corpus walked with zero config: every prompt found in its host and format, each
/// finding at the host's line and column, the controls (HTML pages, workflows, Ansible,
/// Helm, JSON and TOML settings, `.format` on non-prompts, a README-like note, a
/// requirements file) neither checked nor failed.
#[test]
fn every_host_and_format_is_found_in_place() {
    let (code, report) = json(&[CORPUS]);
    assert_eq!(code, 1, "{report:#}");
    let listing = listing(&report);
    assert!(
        !listing
            .lines()
            .any(|line| line.starts_with(&format!("{CORPUS}/controls"))
                && !line.starts_with("skipped")),
        "a control was checked:\n{listing}"
    );
    insta::assert_snapshot!(listing);
}

/// A finding is where the host file writes the volatile value: the column of the field in
/// the host's line, through TOML's, JSON's and Python's quoting.
#[test]
fn findings_point_at_the_field_in_the_host() {
    let (_, report) = json(&[CORPUS]);
    for template in report["templates"].as_array().unwrap() {
        let path = template["path"].as_str().unwrap();
        let host =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap();
        for d in template["diagnostics"].as_array().unwrap() {
            if d["rule"] != "PL001" {
                continue;
            }
            let line = host
                .lines()
                .nth(d["line"].as_u64().unwrap() as usize - 1)
                .unwrap();
            let at = &line[d["column"].as_u64().unwrap() as usize - 1..];
            assert!(
                at.starts_with('{'),
                "{path}:{}:{} points at {at:?}",
                d["line"],
                d["column"]
            );
        }
    }
}

/// Prompt-like text and nothing checked: a warning, and exit 1 under `--strict`.
#[test]
fn nothing_checked_is_never_silent() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("chat.yaml"),
        "name: Chat\ntemplate_format: handlebars\ntemplate: |\n  You help {{company}} customers.\n  {{#each history}}{{content}}{{/each}}\ninput_variables:\n  - name: company\n",
    )
    .unwrap();
    let folder = dir.path().to_string_lossy().into_owned();
    let plain = check(&[&folder]);
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    assert!(
        plain.stderr.contains("warning: prompt-like text found"),
        "{}",
        plain.stderr
    );
    assert!(plain.stdout.contains("1 unchecked"), "{}", plain.stdout);
    let strict = check(&[&folder, "--strict"]);
    assert_eq!(strict.code, 1, "{}", strict.stderr);
    for format in ["concise", "github", "sarif", "json"] {
        let out = check(&[&folder, "--format", format]).stdout;
        assert!(out.contains("chat.yaml"), "{format}: {out}");
        assert!(
            out.contains("Handlebars") || out.contains("handlebars"),
            "{format}: {out}"
        );
    }
}

const INSTRUCTIONS: &str = "Follow the house style in every answer.\nLead with the answer, then the reasons.\nUse the reader's own terms and define any other term the first time.\nWhen two sources disagree, say which one you followed and why.\nCheck every number, name and date before you write it down.\nPrefer short numbered steps and put commands in fenced code blocks.\nClose with one line that says what the reader should do next.\nNever invent a limit, a flag or an API name.";

/// Suppression comments in each host's own comment syntax: TOML's `#`, a JSON `"//"` key,
/// Markdown's `<!-- -->`, Python's `#`.
#[test]
fn suppressions_work_in_each_host() {
    let dir = tempfile::tempdir().unwrap();
    let body = format!("Request {{request_id}}.\n{INSTRUCTIONS}\n");
    let toml_body = body.clone();
    let json_body = serde_json::to_string(&body).unwrap();
    let files = |ignored: bool| {
        let toml_comment = if ignored {
            "# prefixlint: ignore[PL001] the id is for tracing\n"
        } else {
            ""
        };
        let json_comment = if ignored {
            "  \"//\": \"prefixlint: ignore[PL001] the id is for tracing\",\n"
        } else {
            ""
        };
        let md_comment = if ignored {
            "<!-- prefixlint: ignore[PL001] the id is for tracing -->\n"
        } else {
            ""
        };
        let py_comment = if ignored {
            "# prefixlint: ignore[PL001] the id is for tracing\n"
        } else {
            ""
        };
        vec![
            (
                "p.toml",
                format!("[review]\n{toml_comment}system = \"\"\"\n{toml_body}\"\"\"\n"),
            ),
            (
                "p.json",
                format!("{{\n{json_comment}  \"system_prompt\": {json_body}\n}}\n"),
            ),
            ("prompts/p.md", format!("{md_comment}{body}")),
            (
                "p.py",
                format!("{py_comment}SYSTEM_PROMPT = \"\"\"{body}\"\"\"\n"),
            ),
        ]
    };
    for ignored in [false, true] {
        let root = dir.path().join(if ignored { "ignored" } else { "plain" });
        for (name, text) in files(ignored) {
            let path = root.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let (_, report) = json(&[&root.to_string_lossy()]);
        let templates = report["templates"].as_array().unwrap();
        assert_eq!(templates.len(), 4, "{report:#}");
        for template in templates {
            let rules: Vec<&str> = template["diagnostics"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["rule"].as_str().unwrap())
                .collect();
            assert_eq!(
                rules.contains(&"PL001"),
                !ignored,
                "{}: {rules:?}",
                template["path"]
            );
        }
    }
}

/// A host file named on the command line with no prompt in it (as pre-commit names every
/// changed file) is skipped with its reason, read no further than the byte prefilter.
#[test]
fn changed_files_without_prompts_are_skipped() {
    let controls = [
        "fixtures/host-formats/controls/config/settings.json",
        "fixtures/host-formats/controls/config/app.toml",
        "fixtures/host-formats/controls/NOTES.md",
        "fixtures/host-formats/controls/requirements.txt",
        "fixtures/host-formats/controls/formatting.py",
    ];
    let (code, report) = json(&controls);
    assert_eq!(code, 0, "{report:#}");
    assert!(
        report["templates"].as_array().unwrap().is_empty(),
        "{report:#}"
    );
    assert!(
        report["unchecked"].as_array().unwrap().is_empty(),
        "{report:#}"
    );
    assert_eq!(
        report["skipped"].as_array().unwrap().len(),
        controls.len(),
        "{report:#}"
    );
}

/// `--fix --unsafe-fixes` writes a moved line back into a TOML multi-line string and into a
/// JSON string (its line breaks as `\n` escapes), and the files checked again have no PL001.
#[test]
fn fixes_are_written_back_into_toml_and_json_hosts() {
    let dir = tempfile::tempdir().unwrap();
    for file in ["reviewer/prompts.toml", "memory/prompts.json"] {
        let from = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(CORPUS)
            .join(file);
        let name = from.file_name().unwrap();
        std::fs::copy(&from, dir.path().join(name)).unwrap();
    }
    let folder = dir.path().to_string_lossy().into_owned();
    let fixed = check(&[&folder, "--fix", "--unsafe-fixes"]);
    assert_ne!(fixed.code, 2, "{}\n{}", fixed.stdout, fixed.stderr);
    let toml = std::fs::read_to_string(dir.path().join("prompts.toml")).unwrap();
    assert!(
        toml.contains("Check every number, name and date against the material before you write it down.\nRequest {request_id}.\n\"\"\""),
        "{toml}"
    );
    let json_text = std::fs::read_to_string(dir.path().join("prompts.json")).unwrap();
    let parsed: Value = serde_json::from_str(&json_text).unwrap();
    let prompt = parsed["fact_extraction"]["system_prompt"].as_str().unwrap();
    assert!(prompt.ends_with("\nToday is {today}."), "{prompt}");
    let (_, report) = json(&[&folder]);
    let rules: Vec<&str> = report["templates"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["diagnostics"].as_array().unwrap())
        .map(|d| d["rule"].as_str().unwrap())
        .collect();
    assert!(!rules.contains(&"PL001"), "{report:#}");
}
