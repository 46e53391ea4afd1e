//! Every template of the host corpus (fixtures/hosts), as `check` finds it, renders the
//! same through `prefixlint render --key` as through its application's own renderer:
//! PyYAML + Python Jinja2 for YAML values, the `prompty` package for `.prompty` bodies,
//! `prompt_poet.Prompt` for prompt-poet files (tests/python/embedded_reference.py).

use crate::support;

use serde_json::Value;
use std::process::Command;
use support::*;

/// The venv of scripts/setup.d/60-prompt-formats.sh, with the real `prompty` and
/// `prompt-poet` packages.
fn formats_python() -> String {
    std::env::var("PREFIXLINT_PROMPT_FORMATS_PYTHON").expect(
        "PREFIXLINT_PROMPT_FORMATS_PYTHON is not set: source scripts/setup.d/60-prompt-formats.sh (scripts/test.sh does)",
    )
}

const SAMPLES: &str = "fixtures/hosts/reference.samples.yaml";

#[test]
fn every_embedded_template_renders_as_its_application_renders_it() {
    let r = run(prefixlint().args([
        "check",
        "fixtures/hosts",
        "--no-config",
        "--no-cache",
        "--format",
        "json",
    ]));
    let report: Value = serde_json::from_str(&r.stdout).unwrap();
    let targets: Vec<(String, String)> = report["templates"]
        .as_array()
        .unwrap()
        .iter()
        // Jinja's: the other formats' hosts have their own reference (heavy/formats_reference).
        .filter(|t| t["format"] == "jinja")
        .map(|t| {
            (
                t["path"].as_str().unwrap().to_owned(),
                t["embedded"]["key"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(targets.len() >= 14, "the corpus shrank: {targets:?}");
    let out = Command::new(formats_python())
        .current_dir(repo_root())
        .arg("tests/python/embedded_reference.py")
        .arg(SAMPLES)
        .args(targets.iter().map(|(host, key)| format!("{host}#{key}")))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the reference failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reference: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut differing = Vec::new();
    for (expected, (host, key)) in reference["renders"]
        .as_array()
        .unwrap()
        .iter()
        .zip(&targets)
    {
        let mut render = prefixlint();
        render.args([
            "render",
            host,
            "--samples",
            SAMPLES,
            "--no-config",
            "--now",
            "2026-12-01T09:00:00Z",
        ]);
        if !host.ends_with(".prompty") && !host.ends_with(".j2") {
            render.args(["--key", key]);
        }
        let ours = run(&mut render);
        assert_eq!(ours.code, 0, "{host}#{key}: {}", ours.stderr);
        if ours.stdout != expected["render"].as_str().unwrap() {
            differing.push(format!(
                "{host}#{key}:\n  prefixlint: {:?}\n  reference:  {:?}",
                ours.stdout, expected["render"]
            ));
        }
    }
    assert!(differing.is_empty(), "{}", differing.join("\n"));
}
