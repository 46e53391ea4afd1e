//! Every reference template of fixtures/template-formats/reference, over every sample,
//! renders through `prefixlint render --format` byte for byte as the format's own library
//! renders it (tests/python/formats_reference.py, in the venv of
//! scripts/setup.d/61-format-libraries.sh): CPython's `str.format` and LangChain's
//! `PromptTemplate.format`, CrewAI's `interpolate_only`, Semantic Kernel's
//! `KernelPromptTemplate`, CPython evaluating the f-strings, and chevron rendering
//! Mustache. Where the library fails, prefixlint fails too (exit 2). Then random fields
//! (values of every type, conversions, format specs) generated and formatted by CPython,
//! and random Mustache templates rendered by chevron, on seeds the renderers were not
//! tuned on.

use crate::support::*;
use serde_json::Value;
use std::process::Command;

fn libraries_python() -> String {
    std::env::var("PREFIXLINT_FORMAT_LIBRARIES_PYTHON").expect(
        "PREFIXLINT_FORMAT_LIBRARIES_PYTHON is not set: source scripts/setup.d/61-format-libraries.sh (scripts/test.sh does)",
    )
}

const DIR: &str = "fixtures/template-formats/reference";

fn reference(format: &str, template: &str, samples: &str) -> Vec<Value> {
    let out = Command::new(libraries_python())
        .current_dir(repo_root())
        .args([
            "tests/python/formats_reference.py",
            "render",
            format,
            template,
            samples,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the reference failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let parsed: Value = serde_json::from_slice(&out.stdout).unwrap();
    parsed["renders"].as_array().unwrap().clone()
}

#[test]
fn every_reference_template_renders_as_its_library_renders_it() {
    let mut compared = 0;
    let mut differing = Vec::new();
    for format in ["format", "crewai", "semantic-kernel", "fstring", "mustache"] {
        let template = format!("{DIR}/values.{format}.txt");
        let samples = format!("{DIR}/values.{format}.samples.yaml");
        let expected = reference(format, &template, &samples);
        assert!(expected.len() >= 2, "{template}: too few samples");
        for (n, libraries) in expected.iter().enumerate() {
            let ours = run(prefixlint().args([
                "render",
                &template,
                "--format",
                format,
                "--samples",
                &samples,
                "--sample",
                &n.to_string(),
                "--no-config",
                "--now",
                "2026-12-01T09:00:00Z",
            ]));
            for (library, render) in libraries.as_object().unwrap() {
                compared += 1;
                match render.as_str() {
                    Some(text) if ours.code == 0 && ours.stdout == text => {}
                    // LangChain refuses `.`/`[]` fields and nested specs that str.format
                    // takes; prefixlint renders them as str.format does.
                    None if library == "langchain" => {}
                    None if ours.code == 2 => {}
                    _ => differing.push(format!(
                        "{template} sample {n}, {library}:\n  library: {render}\n  prefixlint (exit {}): {:?}{}",
                        ours.code, ours.stdout, ours.stderr
                    )),
                }
            }
        }
    }
    assert!(compared >= 10, "only {compared} renders compared");
    assert!(differing.is_empty(), "{}", differing.join("\n"));
}

/// LangChain accepts a plain `{var}` template and renders it as prefixlint does (the
/// reference template above uses fields LangChain refuses; this one it accepts).
#[test]
fn langchain_renders_a_plain_template_as_prefixlint_does() {
    let template = "fixtures/template-formats/rules/support.format.txt";
    let dir = tempfile::tempdir().unwrap();
    let samples = dir.path().join("s.yaml");
    std::fs::write(
        &samples,
        "- {day_of_week: Monday, current_date: 2026-12-07, question: \"Why is {x} shown?\"}\n- {day_of_week: 3, current_date: null, question: [a, 1.5]}\n",
    )
    .unwrap();
    let samples = samples.to_str().unwrap();
    let expected = reference("format", template, samples);
    for (n, libraries) in expected.iter().enumerate() {
        let ours = run(prefixlint().args([
            "render",
            template,
            "--format",
            "format",
            "--samples",
            samples,
            "--sample",
            &n.to_string(),
            "--no-config",
        ]));
        assert_eq!(ours.code, 0, "{}", ours.stderr);
        assert_eq!(
            Some(ours.stdout.as_str()),
            libraries["langchain"].as_str(),
            "sample {n}"
        );
        assert_eq!(
            Some(ours.stdout.as_str()),
            libraries["cpython"].as_str(),
            "sample {n}"
        );
    }
}

#[test]
fn random_fields_format_as_cpython_formats_them() {
    for seed in [11, 23, 37] {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(libraries_python())
            .current_dir(repo_root())
            .arg("tests/python/formats_reference.py")
            .arg("generate")
            .arg(dir.path())
            .args([&seed.to_string(), "1500"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let template = dir.path().join("random.format.txt");
        let expected = std::fs::read_to_string(dir.path().join("expected.txt")).unwrap();
        let fields = std::fs::read_to_string(&template).unwrap();
        assert!(
            fields.split('\u{1e}').count() > 200,
            "seed {seed}: too few valid fields"
        );
        let ours = run(prefixlint().args([
            "render",
            template.to_str().unwrap(),
            "--format",
            "format",
            "--samples",
            dir.path()
                .join("random.format.samples.yaml")
                .to_str()
                .unwrap(),
            "--no-config",
        ]));
        assert_eq!(ours.code, 0, "seed {seed}: {}", ours.stderr);
        let differing: Vec<String> = fields
            .split('\u{1e}')
            .zip(expected.split('\u{1e}'))
            .zip(ours.stdout.split('\u{1e}'))
            .filter(|((_, want), got)| want != got)
            .map(|((field, want), got)| format!("{field}: CPython {want:?}, prefixlint {got:?}"))
            .collect();
        assert!(
            differing.is_empty(),
            "seed {seed}:\n{}",
            differing.join("\n")
        );
    }
}

/// Random Mustache templates (sections over lists, maps, scalars and missing names,
/// inverted sections, dotted names, `.`, escaped and raw tags, comments, delimiter changes,
/// standalone lines) render as chevron renders them, or fail (exit 2) where chevron fails.
#[test]
fn random_mustache_templates_render_as_chevron_renders_them() {
    for seed in [3, 17] {
        let dir = tempfile::tempdir().unwrap();
        let count = 150;
        let out = Command::new(libraries_python())
            .current_dir(repo_root())
            .arg("tests/python/formats_reference.py")
            .arg("generate-mustache")
            .arg(dir.path())
            .args([&seed.to_string(), &count.to_string()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let expected: Vec<Option<String>> =
            serde_json::from_slice(&std::fs::read(dir.path().join("expected.json")).unwrap())
                .unwrap();
        assert_eq!(expected.len(), count);
        let rendered = expected.iter().filter(|e| e.is_some()).count();
        assert!(
            rendered > count * 9 / 10,
            "seed {seed}: chevron rendered only {rendered}"
        );
        let samples = dir.path().join("samples.yaml");
        let mut differing = Vec::new();
        for (n, want) in expected.iter().enumerate() {
            let template = dir.path().join(format!("{n}.mustache.txt"));
            let ours = run(prefixlint().args([
                "render",
                template.to_str().unwrap(),
                "--format",
                "mustache",
                "--samples",
                samples.to_str().unwrap(),
                "--no-config",
            ]));
            let same = match want {
                Some(text) => ours.code == 0 && &ours.stdout == text,
                None => ours.code == 2,
            };
            if !same {
                differing.push(format!(
                    "{:?}\n  chevron: {want:?}\n  prefixlint (exit {}): {:?}{}",
                    std::fs::read_to_string(&template).unwrap(),
                    ours.code,
                    ours.stdout,
                    ours.stderr
                ));
            }
        }
        assert!(
            differing.is_empty(),
            "seed {seed}:\n{}",
            differing.join("\n")
        );
    }
}
