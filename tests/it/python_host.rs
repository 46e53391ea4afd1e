//! Jinja templates embedded in Python (src/host/python.rs) against Python itself: every
//! extracted text must equal, byte for byte, the string CPython computes for it, and every
//! template a Jinja consumer receives in the fixtures must be extracted.
//!
//! The ground truth comes from tests/python/embedded_python.py, which runs each file as a
//! module with the venv's Python (`PREFIXLINT_TEST_PYTHON`; missing is a failure) and
//! records the strings it binds and the templates its Jinja consumers receive.

use crate::support;
use crate::support::Rng;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use prefixlint::host::python::{extract, map_mismatch, may_hold_templates};
use prefixlint::host::EmbeddedTemplate;

#[derive(serde::Deserialize)]
struct Computed {
    calls: Vec<Call>,
    names: BTreeMap<String, Vec<String>>,
}

#[derive(serde::Deserialize)]
struct Call {
    api: String,
    text: String,
}

/// What Python computes for each file, keyed by the path as given.
fn computed_by_python(files: &[PathBuf]) -> BTreeMap<String, Computed> {
    let script = support::repo_root().join("tests/python/embedded_python.py");
    let output = Command::new(support::python())
        .arg(script)
        .args(files)
        .env("PYTHONWARNINGS", "ignore")
        .output()
        .expect("the venv's Python runs");
    assert!(
        output.status.success(),
        "embedded_python.py failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON from embedded_python.py")
}

fn fixtures() -> Vec<PathBuf> {
    let folder = support::repo_root().join("tests/fixtures/hosts/python");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .expect("the fixture folder")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "py"))
        .collect();
    files.sort();
    assert!(files.len() >= 7, "fixtures in {}", folder.display());
    files
}

fn key_of(path: &Path) -> String {
    path.to_str().expect("a UTF-8 path").to_owned()
}

fn assert_maps_back(source: &str, template: &EmbeddedTemplate) {
    if let Some(why) = map_mismatch(source, template) {
        panic!("{why}");
    }
}

fn has_jinja_markup(text: &str) -> bool {
    text.contains("{{") || text.contains("{%")
}

#[test]
fn every_fixture_template_is_the_string_python_computes() {
    let files = fixtures();
    let computed = computed_by_python(&files);
    for file in &files {
        let source = std::fs::read_to_string(file).expect("a fixture");
        assert!(may_hold_templates(source.as_bytes()), "{}", file.display());
        let templates = extract(&source).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let python = &computed[&key_of(file)];
        let python_values: Vec<&str> = python
            .calls
            .iter()
            .map(|call| call.text.as_str())
            .chain(python.names.values().flatten().map(String::as_str))
            .collect();
        for template in &templates {
            assert_maps_back(&source, template);
            if !is_a_string_value(template) {
                continue;
            }
            assert!(
                python_values.contains(&template.text.as_str()),
                "{}: {} (line {}) is {:?}, which Python never computed; Python has {:#?}",
                file.display(),
                template.key,
                template.anchor_line,
                template.text,
                python_values
            );
        }
        for call in python
            .calls
            .iter()
            .filter(|call| has_jinja_markup(&call.text))
        {
            assert!(
                templates.iter().any(|template| template.text == call.text),
                "{}: {} received {:?}, which was not extracted",
                file.display(),
                call.api,
                call.text
            );
        }
    }
}

/// Whether a template's text is one string the module computes: not an f-string (whose
/// text keeps its fields as written) nor a `{var}` chat request (its messages joined with
/// role lines).
fn is_a_string_value(template: &EmbeddedTemplate) -> bool {
    use prefixlint::formats::TemplateFormat;
    match template.format {
        TemplateFormat::FString => false,
        TemplateFormat::Jinja => true,
        _ => !template.key.contains(".from_messages("),
    }
}

/// Which templates each fixture holds, where, in which format, and how their text starts.
#[test]
fn fixture_templates_by_key_and_line() {
    let mut listing = String::new();
    for file in fixtures() {
        let source = std::fs::read_to_string(&file).expect("a fixture");
        let name = file.file_name().expect("a name").to_string_lossy();
        writeln!(listing, "{name}:").unwrap();
        for template in extract(&source).expect("parses") {
            let start: String = template.text.chars().take(48).collect();
            writeln!(
                listing,
                "  {} {} {} {:?}",
                template.anchor_line, template.key, template.format, start
            )
            .unwrap();
        }
    }
    insta::assert_snapshot!(listing);
}

/// Bad input never panics: every fixture cut short anywhere, and with a byte flipped
/// anywhere, gives templates or a syntax error.
#[test]
fn damaged_fixtures_give_templates_or_syntax_errors() {
    let mut random = Rng::new(0xDA4A_6ED0);
    for file in fixtures() {
        let source = std::fs::read_to_string(&file).expect("a fixture");
        let cuts = (0..source.len())
            .step_by(11)
            .filter(|&at| source.is_char_boundary(at));
        for cut in cuts {
            let _ = extract(&source[..cut]);
            let mut damaged = source.clone().into_bytes();
            let at = random.below(damaged.len());
            if damaged[at].is_ascii() {
                const BYTES: &[u8] = b"\\'\"{}()[]#\n\t:= ";
                damaged[at] = BYTES[random.below(BYTES.len())];
                let damaged = String::from_utf8(damaged).expect("still UTF-8");
                if let Err(error) = extract(&damaged) {
                    assert!(error.line >= 1 && error.column >= 1, "{error}");
                }
            }
        }
    }
}

const WORDS: &[&str] = &[
    "Hello",
    "you are",
    "a.b",
    "é",
    "→",
    "😀",
    " ",
    "  ",
    "{{ name }}",
    "{{ items | join(sep) }}",
    "{% if x %}yes{% endif %}",
    "{%- for i in items -%}{{ i }}{%- endfor %}",
];
const ESCAPES: &[&str] = &[
    r"\n",
    r"\t",
    r"\\",
    r"\x41",
    r"\x1c",
    r"\u00e9",
    r"\u2028",
    r"\U0001F600",
    r"\N{BULLET}",
    r"\N{no-break space}",
    r"\101",
    r"\0",
    r"\7",
    r"\'",
    r#"\""#,
    r"\q",
    r"\r",
    r"\f",
];
const RAW_PIECES: &[&str] = &[r"\n", r"\d", r"\\", r"\{"];
const INDENTS: &[&str] = &["", "    ", "  ", "\t", "    \t", "        ", " \t "];

/// A random string literal holding `{{ value }}`, valid in a module whose lines end with
/// `newline`.
fn random_literal(random: &mut Rng, newline: &str) -> String {
    let raw = random.chance(25);
    let prefix = if raw {
        random.pick(&["r", "R"])
    } else {
        random.pick(&["", "", "u", "U"])
    };
    let triple = random.chance(60);
    let quote = match (triple, random.chance(50)) {
        (true, true) => "\"\"\"",
        (true, false) => "'''",
        (false, true) => "\"",
        (false, false) => "'",
    };
    let piece = |random: &mut Rng| -> String {
        match random.below(10) {
            0..=5 => random.pick(WORDS).to_owned(),
            6..=8 if raw => random.pick(RAW_PIECES).to_owned(),
            6..=8 => random.pick(ESCAPES).to_owned(),
            // A line continuation (in a raw string, a backslash kept before the line break).
            _ => format!("\\{newline}"),
        }
    };
    let mut body = String::new();
    if triple {
        if random.chance(50) {
            body.push_str(if raw { "" } else { "\\" });
            body.push_str(newline);
        }
        let lines = 1 + random.below(5);
        let value_line = random.below(lines);
        for line in 0..lines {
            if line > 0 {
                body.push_str(newline);
            }
            if line != value_line && random.chance(15) {
                // A blank line, or one of only whitespace.
                body.push_str(random.pick(&["", "  ", "\t"]));
                continue;
            }
            body.push_str(random.pick(INDENTS));
            for _ in 0..random.below(4) {
                body.push_str(&piece(random));
            }
            if line == value_line {
                body.push_str("{{ value }}");
            }
            body.push_str(random.pick(&["", " tail", "  "]));
        }
        if random.chance(50) {
            body.push_str(newline);
            body.push_str(random.pick(INDENTS));
        }
    } else {
        for _ in 0..random.below(4) {
            body.push_str(&piece(random));
        }
        body.push_str("{{ value }}");
        for _ in 0..random.below(3) {
            body.push_str(&piece(random));
        }
    }
    // Nothing may end right before the closing quote with an odd backslash.
    if body.ends_with('\\') && !body.ends_with("\\\\") {
        body.push('.');
    }
    format!("{prefix}{quote}{body}{quote}")
}

/// A random expression Python can evaluate to a string, wrapped as code wraps templates.
fn random_expression(random: &mut Rng, newline: &str) -> String {
    let literal = random_literal(random, newline);
    match random.below(15) {
        0 | 1 => literal,
        2 => format!("dedent({literal})"),
        3 => format!("textwrap.dedent({literal})"),
        4 => format!("inspect.cleandoc({literal})"),
        5 => format!("cleandoc({literal})"),
        6 => format!("{literal}.strip()"),
        7 => format!("{literal}.lstrip()"),
        8 => format!("{literal}.rstrip()"),
        9 => format!("dedent({literal}).strip()"),
        10 => format!("cleandoc({literal}).rstrip(\"\\n \")"),
        11 => {
            let second = random_literal(random, newline);
            format!("({newline}    {literal}{newline}    # joined{newline}    {second}{newline})")
        }
        12 => {
            let second = random_literal(random, newline);
            format!("{literal} + {second}")
        }
        13 => {
            let second = random_literal(random, newline);
            format!("dedent({literal} {second}).lstrip(\"\\n\")")
        }
        _ => format!("({literal})"),
    }
}

#[test]
fn random_literals_extract_what_python_computes() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let mut random = Rng::new(0x5EED_F00D_C0DE);
    let mut files = Vec::new();
    let mut sources = Vec::new();
    for (index, newline) in ["\n", "\r\n"].into_iter().enumerate() {
        let mut source = [
            "import inspect",
            "import textwrap",
            "from inspect import cleandoc",
            "from textwrap import dedent",
            "",
        ]
        .join(newline);
        for case in 0..200 {
            let expression = random_expression(&mut random, newline);
            write!(source, "CASE_{case}_PROMPT = {expression}{newline}").unwrap();
        }
        let path = folder.path().join(format!("random_{index}.py"));
        std::fs::write(&path, &source).expect("written");
        files.push(path);
        sources.push(source);
    }
    let computed = computed_by_python(&files);
    for (file, source) in files.iter().zip(&sources) {
        let templates = extract(source).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let python = &computed[&key_of(file)];
        let mut checked = 0;
        for (name, values) in python
            .names
            .iter()
            .filter(|(name, _)| name.starts_with("CASE_"))
        {
            let line = source
                .lines()
                .position(|line| line.starts_with(&format!("{name} = ")))
                .expect("the case's line")
                + 1;
            let template = templates
                .iter()
                .find(|template| &template.key == name)
                .unwrap_or_else(|| {
                    panic!("{name} (line {line}) was not extracted; Python has {values:?}")
                });
            assert_eq!(
                [template.text.as_str()],
                values.as_slice(),
                "{name} at line {line} of {}",
                file.display()
            );
            assert_eq!(template.anchor_line, line, "{name}");
            assert_maps_back(source, template);
            checked += 1;
        }
        assert_eq!(checked, 200);
        assert_eq!(templates.len(), 200);
    }
}
