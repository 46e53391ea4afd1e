//! The shared-prefix figures must equal a straightforward reference exactly:
//! Python Jinja2 + Hugging Face `tokenizers` + the longest common prefix of ids.

use crate::support;

use std::process::Command;
use support::*;

#[test]
fn figures_equal_the_python_reference() {
    let templates: Vec<String> = std::fs::read_dir(repo_root().join("fixtures/reference"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "j2"))
        .map(|p| {
            p.strip_prefix(repo_root())
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert!(
        templates.len() >= 8,
        "reference set too small: {templates:?}"
    );

    let dir = tempfile::tempdir().unwrap();
    let tokenizer = builtin_tokenizer_file(dir.path());
    let out = Command::new(python())
        .current_dir(repo_root())
        .arg("tests/python/reference.py")
        .arg(&tokenizer)
        .args(&templates)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "reference failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reference: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();

    let args: Vec<&str> = templates.iter().map(String::as_str).collect();
    let (_, ours) = check_json(&args);
    let ours = ours["templates"].as_array().unwrap();
    let reference = reference["templates"].as_array().unwrap();
    assert_eq!(ours.len(), reference.len());
    for expected in reference {
        let path = expected["path"].as_str().unwrap();
        let got = ours
            .iter()
            .find(|t| t["path"] == path)
            .unwrap_or_else(|| panic!("{path} missing"));
        for field in [
            "samples",
            "tokens",
            "shared_prefix_tokens",
            "recoverable_tokens",
        ] {
            assert_eq!(got[field], expected[field], "{path}: {field}");
        }
        println!(
            "{path}: shared {} of {} tokens, recoverable {} (equal to the reference)",
            got["shared_prefix_tokens"], got["tokens"]["min"], got["recoverable_tokens"]
        );
    }
}
