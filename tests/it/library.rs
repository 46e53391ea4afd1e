//! The library API drives the same pipeline as `prefixlint check`: a `Linter` checks paths
//! into one outcome per template, in discovery order, and a broken template is an outcome
//! of its own while the others still run.

use prefixlint::config::Config;
use prefixlint::{LintOptions, Linter, TemplateOutcome};
use std::path::{Path, PathBuf};

fn failures_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/failures")
}

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

#[test]
fn each_template_is_one_outcome_and_a_broken_one_does_not_stop_the_rest() {
    let linter = linter();
    let outcomes: Vec<TemplateOutcome> = linter
        .check(&[failures_fixture()])
        .expect("discovery succeeds")
        .collect();
    let describe = |o: &TemplateOutcome| match o {
        TemplateOutcome::Checked(t) => format!("checked {}", file_name(&t.path)),
        TemplateOutcome::Failed(e) => format!("failed {}", file_name(&e.path)),
        TemplateOutcome::Skipped(s) => format!("skipped {}", file_name(&s.path)),
        TemplateOutcome::Unchecked(u) => format!("unchecked {}", file_name(&u.path)),
    };
    let described: Vec<String> = outcomes.iter().map(describe).collect();
    assert!(
        described.contains(&"failed broken.j2".to_owned()),
        "{described:?}"
    );
    assert!(
        described.contains(&"checked good.j2".to_owned()),
        "{described:?}"
    );
    let checked_good = outcomes.iter().find_map(|o| match o {
        TemplateOutcome::Checked(t) if t.path.ends_with("good.j2") => Some(t),
        _ => None,
    });
    let good = checked_good.expect("good.j2 is checked");
    assert!(good.analysis.samples >= 2, "good.j2 renders its samples");
    assert!(
        good.analysis.renders.is_empty() && good.analysis.tokens.is_empty(),
        "renders and tokens are dropped once the rules have read them"
    );
}

#[test]
fn the_library_and_check_run_agree() {
    let linter = linter();
    let mut from_library = prefixlint::report::CheckReport::default();
    for outcome in linter.check(&[failures_fixture()]).unwrap() {
        from_library.add(outcome);
    }
    let from_check = prefixlint::check::run(&prefixlint::check::CheckOptions {
        paths: vec![failures_fixture()],
        config: Config::default(),
        settings: Default::default(),
        cwd: PathBuf::from(env!("CARGO_MANIFEST_DIR")),
        no_ignores: false,
    })
    .unwrap()
    .report;
    let shape = |r: &prefixlint::report::CheckReport| {
        (
            r.templates
                .iter()
                .map(|t| {
                    (
                        t.path.clone(),
                        t.analysis.shared_prefix_tokens,
                        t.findings.len(),
                    )
                })
                .collect::<Vec<_>>(),
            r.errors.iter().map(|e| e.path.clone()).collect::<Vec<_>>(),
        )
    };
    assert_eq!(shape(&from_library), shape(&from_check));
    assert!(!from_check.templates.is_empty());
}

#[test]
fn a_bad_config_fails_when_the_linter_is_built() {
    let mut config = Config::default();
    config
        .rules
        .insert("PL999".into(), prefixlint::config::RuleSetting::Off);
    let error = Linter::new(config, LintOptions::default())
        .err()
        .expect("an unknown rule key is an error");
    assert!(
        error.to_string().contains("unknown rule `PL999`"),
        "{error}"
    );
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The editor server's entry: a buffer that is not on disk is checked as the same text on
/// disk would be, its samples may come from a buffer too, and a broken buffer is a failure.
#[test]
fn an_in_memory_buffer_is_checked_like_the_file() {
    let linter = linter();
    let good = failures_fixture().join("good.j2");
    let on_disk: Vec<TemplateOutcome> =
        linter.check(std::slice::from_ref(&good)).unwrap().collect();
    let text = std::fs::read_to_string(&good).unwrap();
    let figures = |o: &TemplateOutcome| match o {
        TemplateOutcome::Checked(t) => Some((
            t.path.clone(),
            t.analysis.samples,
            t.analysis.shared_prefix_tokens,
            t.findings.len(),
        )),
        _ => None,
    };
    let buffer = linter.check_source(&good, &text, None);
    assert_eq!(figures(&buffer), figures(&on_disk[0]));
    assert!(figures(&buffer).is_some());

    // An edited buffer: the volatile value moves to the top, so the prefix shrinks.
    let edited = format!("Question: {{{{ question }}}}\n{text}");
    let edited = figures(&linter.check_source(&good, &edited, None)).unwrap();
    assert!(edited.2 < figures(&buffer).unwrap().2, "{edited:?}");

    // Samples from a buffer: three renders instead of the file's two.
    let samples = "- question: a\n- question: b\n- question: c\n";
    let three = figures(&linter.check_source(&good, &text, Some(samples))).unwrap();
    assert_eq!(three.1, 3);

    match linter.check_source(&good, "{{ unclosed", None) {
        TemplateOutcome::Failed(e) => assert!(e.path.ends_with("good.j2"), "{}", e.path),
        other => panic!("a broken buffer is a failure, not {other:?}"),
    }
}
