//! A volatile value before fixed instructions, in each format other than Jinja, is
//! reported where the template writes it (line and column of the field) with the fixed
//! text after it counted: the formats' renders feed the same source map, analysis and
//! rules as Jinja's (fixtures/template-formats/rules).

use prefixlint::config::Config;
use prefixlint::formats::TemplateFormat;
use prefixlint::request::TemplateText;
use prefixlint::TemplateOutcome;
use prefixlint::{LintOptions, Linter};
use std::path::{Path, PathBuf};

fn linter() -> Linter {
    Linter::new(
        Config::default(),
        LintOptions {
            cwd: PathBuf::from(env!("CARGO_MANIFEST_DIR")),
            ..LintOptions::default()
        },
    )
    .expect("the default config is valid")
}

/// (rule, line, column, message) of each finding of a fixture checked in `format`.
fn findings(file: &str, format: TemplateFormat) -> Vec<(String, usize, usize, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/template-formats/rules")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let outcome = linter().check_source_as(
        &path,
        TemplateText {
            text: &text,
            format,
        },
        None,
    );
    let TemplateOutcome::Checked(report) = outcome else {
        panic!("{file} was not checked: {outcome:?}");
    };
    assert_eq!(report.format, format, "{file}");
    report
        .findings
        .iter()
        .map(|f| {
            let at = report.position(f);
            (
                f.rule.code.to_string(),
                at.line,
                at.column,
                f.message.clone(),
            )
        })
        .collect()
}

/// The figures of a text checked in `format`: (shared prefix, recoverable, findings as
/// (rule, line, message)).
fn figures(
    name: &str,
    text: &str,
    format: TemplateFormat,
) -> (usize, usize, Vec<(String, usize, String)>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    let TemplateOutcome::Checked(report) =
        linter().check_source_as(&path, TemplateText { text, format }, None)
    else {
        panic!("{name} was not checked");
    };
    let findings = report
        .findings
        .iter()
        .map(|f| {
            (
                f.rule.code.to_string(),
                report.position(f).line,
                f.message.clone(),
            )
        })
        .collect();
    (
        report.analysis.shared_prefix_tokens,
        report.analysis.recoverable_tokens,
        findings,
    )
}

/// The baseline: the same prompt written as Jinja (`{{ name }}` for each field) gives the
/// same figures and the same findings, but for how the field is quoted.
#[test]
fn a_format_template_and_its_jinja_twin_have_the_same_figures() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/template-formats/rules");
    let fields = regex::Regex::new(r"\{([A-Za-z_][A-Za-z0-9_]*)\}").unwrap();
    // A Mustache tag `{{name}}`, or its Jinja twin's `{{ name }}`.
    let mustache = regex::Regex::new(r"\{\{ ?([A-Za-z_][A-Za-z0-9_]*) ?\}\}").unwrap();
    for (file, format) in [
        ("support.format.txt", TemplateFormat::Format),
        ("research.crewai.txt", TemplateFormat::CrewAi),
        ("support.mustache.txt", TemplateFormat::Mustache),
    ] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        let jinja = match format {
            TemplateFormat::Mustache => mustache.replace_all(&text, "{{ $1 }}"),
            _ => fields.replace_all(&text, "{{ $1 }}"),
        };
        let ours = figures(file, &text, format);
        let twin = figures("twin.j2", &jinja, TemplateFormat::Jinja);
        assert_eq!((ours.0, ours.1), (twin.0, twin.1), "{file}");
        let unquoted = |findings: &[(String, usize, String)]| -> Vec<(String, usize, String)> {
            findings
                .iter()
                .map(|(rule, line, message)| {
                    let message = mustache.replace_all(message, "{$1}").into_owned();
                    (rule.clone(), *line, message)
                })
                .collect()
        };
        assert_eq!(unquoted(&ours.2), unquoted(&twin.2), "{file}");
    }
}

/// The one PL001 of a fixture: where, and how many stable tokens it says follow.
fn volatile(file: &str, format: TemplateFormat) -> (usize, usize, String, usize) {
    let found = findings(file, format);
    let pl001: Vec<_> = found.iter().filter(|f| f.0 == "PL001").collect();
    assert_eq!(pl001.len(), 1, "{file}: {found:#?}");
    let (_, line, column, message) = pl001[0].clone();
    let stable: usize = message
        .split(" stable tokens")
        .next()
        .and_then(|head| head.rsplit(' ').next())
        .and_then(|n| n.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("{file}: no stable-token count in {message}"));
    (line, column, message, stable)
}

#[test]
fn a_date_in_a_python_format_prompt_is_reported_at_its_field() {
    let (line, column, message, stable) = volatile("support.format.txt", TemplateFormat::Format);
    assert_eq!((line, column), (1, 76), "{message}");
    assert!(
        message.starts_with("`{current_date}` renders a date"),
        "{message}"
    );
    // The fixed rules after it; the question at the end is not stable.
    assert!((120..400).contains(&stable), "{message}");
}

#[test]
fn a_date_in_a_crewai_task_is_reported_and_its_json_example_is_text() {
    let (line, column, message, stable) = volatile("research.crewai.txt", TemplateFormat::CrewAi);
    assert_eq!((line, column), (1, 59), "{message}");
    assert!(message.starts_with("`{current_date}`"), "{message}");
    // Everything after the date is fixed, the JSON example's braces included.
    assert!((100..250).contains(&stable), "{message}");
}

#[test]
fn a_date_in_a_mustache_prompt_is_reported_at_its_tag() {
    let (line, column, message, stable) =
        volatile("support.mustache.txt", TemplateFormat::Mustache);
    assert_eq!((line, column), (1, 78), "{message}");
    assert!(
        message.starts_with("`{{current_date}}` renders a date"),
        "{message}"
    );
    // The same figure as its `{var}` twin: the fixed rules after it, not the question.
    let (_, _, _, format_stable) = volatile("support.format.txt", TemplateFormat::Format);
    assert_eq!(stable, format_stable, "{message}");
}

/// A section over the traveller's saved places (a list read per request) renders once
/// per item, and the date read inside it is reported at its tag, with the fixed rules
/// after the section counted as stable.
#[test]
fn a_date_inside_a_mustache_section_is_reported_at_its_tag() {
    let (line, column, message, stable) = volatile("travel.mustache.txt", TemplateFormat::Mustache);
    assert_eq!((line, column), (4, 34), "{message}");
    assert!(message.starts_with("`{{saved_at}}`"), "{message}");
    assert!((150..300).contains(&stable), "{message}");
}

#[test]
fn a_clock_call_in_an_f_string_is_reported_without_running_it() {
    let (line, column, message, stable) = volatile("memory.fstring.txt", TemplateFormat::FString);
    assert_eq!((line, column), (1, 15), "{message}");
    assert!(message.contains("a clock value"), "{message}");
    assert!(message.contains("changes on every request"), "{message}");
    assert!((100..250).contains(&stable), "{message}");
}

#[test]
fn a_semantic_kernel_function_call_stands_in_and_is_classified_by_its_name() {
    let (line, column, message, stable) = volatile(
        "planner.semantic-kernel.txt",
        TemplateFormat::SemanticKernel,
    );
    assert_eq!((line, column), (1, 21), "{message}");
    assert!(message.starts_with("`{{time.now}}`"), "{message}");
    assert!((100..250).contains(&stable), "{message}");
}

/// `check --fix`'s engine on a text in `format`: each candidate applied, the fixed text
/// checked again in the same format (`fix::run::checked`, what `check --fix` and the editor
/// server's code actions verify with), and kept only when the verifier accepts it.
fn fixed(file: &str, format: TemplateFormat) -> (String, Vec<prefixlint::fix::FixRecord>) {
    use prefixlint::fix::engine::{fix_template, FixOptions};
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/template-formats/rules")
        .join(file);
    let original = std::fs::read_to_string(&path).unwrap();
    let linter = linter();
    let engine = linter.load_engine().unwrap();
    let check = |text: &str| {
        prefixlint::fix::run::checked(
            &linter,
            engine.as_ref(),
            &path,
            None,
            TemplateText { text, format },
        )
    };
    let options = FixOptions {
        unsafe_fixes: true,
        select: None,
    };
    let fixed = fix_template(&check, &original, &options).expect("the template checks");
    (fixed.text, fixed.records)
}

#[test]
fn a_format_template_is_fixed_by_moving_its_date_line_after_the_fixed_rules() {
    let (text, records) = fixed("support.format.txt", TemplateFormat::Format);
    let applied: Vec<_> = records.iter().filter(|r| r.applied).collect();
    assert_eq!(applied.len(), 1, "{records:#?}");
    // Line 1 diverges first at `{day_of_week}`, whose name says nothing of its cadence
    // (assumed per request: PL002); moving the line moves the date with it.
    assert_eq!((applied[0].rule.as_str(), applied[0].line), ("PL002", 1));
    assert!(
        applied[0].shared_prefix_tokens_after > applied[0].shared_prefix_tokens_before + 100,
        "{records:#?}"
    );
    // The greeting line with the date now ends the template; the fixed text still parses
    // and renders as a `{var}` template (the verifier re-checked it as one).
    assert!(
        text.starts_with("\nFollow these rules") || text.starts_with("Follow these rules"),
        "{text}"
    );
    assert!(text.trim_end().ends_with("{current_date}."), "{text}");
    prefixlint::formats::python_format::parse(&text).unwrap();
}

#[test]
fn a_mustache_template_is_fixed_by_moving_its_date_line_after_the_fixed_rules() {
    let (text, records) = fixed("support.mustache.txt", TemplateFormat::Mustache);
    let applied: Vec<_> = records.iter().filter(|r| r.applied).collect();
    assert_eq!(applied.len(), 1, "{records:#?}");
    // As its `{var}` twin: line 1 diverges first at `{{day_of_week}}` (assumed per
    // request: PL002); moving the line moves the date with it.
    assert_eq!((applied[0].rule.as_str(), applied[0].line), ("PL002", 1));
    assert!(
        applied[0].shared_prefix_tokens_after > applied[0].shared_prefix_tokens_before + 100,
        "{records:#?}"
    );
    assert!(text.trim_end().ends_with("{{current_date}}."), "{text}");
    prefixlint::formats::mustache::parse(&text).unwrap();
}

#[test]
fn a_crewai_task_is_fixed_and_its_json_example_survives() {
    let (text, records) = fixed("research.crewai.txt", TemplateFormat::CrewAi);
    // Line 1 diverges first at `{topic}` (cadence assumed: PL002), before the date.
    assert!(
        records
            .iter()
            .any(|r| r.applied && r.rule == "PL002" && r.line == 1),
        "{records:#?}"
    );
    assert!(text.trim_end().ends_with("as of {current_date}."), "{text}");
    assert!(
        text.contains(r#"{"findings": [{"claim": "...", "source": "..."}]}"#),
        "{text}"
    );
}

#[test]
fn an_f_string_gets_no_fix_and_says_why() {
    let found = findings("memory.fstring.txt", TemplateFormat::FString);
    assert!(!found.is_empty());
    let (text, records) = fixed("memory.fstring.txt", TemplateFormat::FString);
    let original = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/template-formats/rules/memory.fstring.txt"),
    )
    .unwrap();
    assert_eq!(text, original);
    let record = records
        .iter()
        .find(|r| r.rule == "PL001")
        .expect("a record");
    assert!(!record.applied);
    assert!(
        record
            .reason
            .as_deref()
            .unwrap_or("")
            .contains("an f-string is Python code"),
        "{record:?}"
    );
}

#[test]
fn an_f_string_finding_says_it_has_no_fix() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/template-formats/rules/memory.fstring.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    let TemplateOutcome::Checked(report) = linter().check_source_as(
        &path,
        TemplateText {
            text: &text,
            format: TemplateFormat::FString,
        },
        None,
    ) else {
        panic!("not checked");
    };
    let pl001 = report
        .findings
        .iter()
        .find(|f| f.rule.code.as_str() == "PL001")
        .unwrap();
    assert!(
        pl001
            .help
            .contains("no automatic fix: an f-string is Python code"),
        "{}",
        pl001.help
    );
}

/// `{% include "module:key" %}` that only the application's loader resolves renders as an
/// empty stand-in: the template is checked, and a note names the include and what maps it.
#[test]
fn an_application_loader_include_renders_as_a_stand_in_with_a_note() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/template-formats/loader/agent.j2");
    let text = std::fs::read_to_string(&path).unwrap();
    let TemplateOutcome::Checked(report) = linter().check_source(&path, &text, None) else {
        panic!("the template failed");
    };
    let notes = report.notes();
    assert!(
        notes.iter().any(|n| n
            .contains("`prompts:persona` names a template the application's own loader finds")
            && n.contains("search_path:")),
        "{notes:#?}"
    );
    // The included file that is a file is still rendered and counted.
    assert!(
        report.analysis.tokens_min > 60,
        "{}",
        report.analysis.tokens_min
    );
}

/// Synthesized samples take the type a field's spec formats: a strftime spec gets a
/// datetime, a numeric spec a number, so a template without samples still renders.
#[test]
fn synthesized_values_fit_their_format_specs() {
    let stable =
        "Answer in English, cite the policy section you rely on, and never promise refunds. "
            .repeat(12);
    let text = format!("Today is {{today:%A %d %B}}. Score {{score:.1f}} of {{total:,}}.\n{stable}\nQ: {{question}}\n");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("specs.txt");
    let outcome = linter().check_source_as(
        &path,
        TemplateText {
            text: &text,
            format: TemplateFormat::Format,
        },
        None,
    );
    let TemplateOutcome::Checked(report) = outcome else {
        panic!("not checked: {outcome:?}");
    };
    let pl001 = report
        .findings
        .iter()
        .find(|f| f.rule.code.as_str() == "PL001")
        .expect("the date");
    let at = report.position(pl001);
    assert_eq!((at.line, at.column), (1, 10), "{}", pl001.message);
}
