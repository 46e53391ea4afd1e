//! Stage 6: reports. One data model ([`CheckReport`]), several renderings of it.

mod concise;
mod full;
pub mod github;
pub mod json;
pub mod output;
pub mod sarif;
pub mod stream;

use crate::analyse::Analysis;
use crate::cache_profile::CacheProfile;
use crate::error::Error;
use crate::fmt::plural;
use crate::render::stand_ins::UnknownCallable;
use crate::rules::{Finding, Severity};
use crate::source;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// miette diagnostics with source snippets, and a summary table.
    Full,
    /// One line per finding, `path:line:col: CODE message`, for editors' problem matchers.
    Concise,
    /// The stable, versioned JSON report.
    Json,
    /// SARIF 2.1.0, for GitHub code scanning and other SARIF viewers.
    Sarif,
    /// GitHub Actions workflow commands (annotations); the default when GITHUB_ACTIONS=true.
    Github,
}

impl Format {
    /// `--format` when given; otherwise `github` inside GitHub Actions, else `full`.
    pub fn resolve(explicit: Option<Format>, github_actions: bool) -> Format {
        match explicit {
            Some(format) => format,
            None if github_actions => Format::Github,
            None => Format::Full,
        }
    }
}

/// Everything `check` found about one template.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct TemplateReport {
    /// As shown to the user: relative to the working directory, `/`-separated.
    pub path: String,
    pub source: Arc<str>,
    pub analysis: Analysis,
    pub findings: Vec<Finding>,
    /// Values rendered with stand-ins for application objects (`state`, `subtasks[].output`).
    pub stand_ins: Vec<String>,
    /// Filters and tests nobody declared, rendered with stand-ins: each is a note.
    #[serde(default)]
    pub unknown: Vec<UnknownCallable>,
    /// Where in its host file (`path`) an embedded template sits; `None` for a template
    /// file. Its findings' spans are host offsets and `source` is the host's text.
    #[serde(default)]
    pub embedded: Option<EmbeddedRef>,
    /// The format the template is written in (`templates[].format`).
    #[serde(default)]
    pub format: crate::formats::TemplateFormat,
    /// The input cost per 1,000 requests at the selected model's prices, now and with the
    /// findings fixed; `None` for engines without prices.
    #[serde(default)]
    pub cost: Option<crate::cost::TemplateCost>,
}

/// `templates[].embedded` in JSON.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EmbeddedRef {
    /// `yaml`, `python`, `prompty` or `prompt-poet`.
    pub kind: String,
    /// The YAML key path or the Python name.
    pub key: String,
    /// The host line where the template's text starts.
    pub line: usize,
}

/// Lines kept on each side of a finding's lines: miette quotes one line of context, SARIF
/// the finding's own line; the margin makes sure every format quotes what it did before.
const CONTEXT_LINES_KEPT: usize = 3;

impl TemplateReport {
    /// Keeps only the source lines the formats quote (each finding's lines, with context)
    /// and blanks the others to bare line breaks, moving the findings' spans along, so
    /// every line, column and quote stays as it was. Called once suppressions have read
    /// the whole text: a run over thousands of templates then holds a few lines of each.
    pub fn keep_quoted_source(&mut self) {
        let source = &*self.source;
        let len = source.len();
        let line_starts: Vec<usize> = std::iter::once(0)
            .chain(source.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let line_of = |offset: usize| line_starts.partition_point(|&s| s <= offset.min(len)) - 1;
        let last_line = line_starts.len() - 1;
        let mut keep = vec![false; line_starts.len()];
        for finding in &self.findings {
            let (a, b) = (finding.span.start, finding.span.end);
            let first = line_of(a.min(b)).saturating_sub(CONTEXT_LINES_KEPT);
            let last = (line_of(a.max(b)) + CONTEXT_LINES_KEPT).min(last_line);
            keep[first..=last].iter_mut().for_each(|k| *k = true);
        }
        let mut kept = String::new();
        let mut new_starts = Vec::with_capacity(line_starts.len());
        for (line, &start) in line_starts.iter().enumerate() {
            let end = line_starts.get(line + 1).copied().unwrap_or(len);
            new_starts.push(kept.len());
            if keep[line] {
                kept.push_str(&source[start..end]);
            } else if source[start..end].ends_with('\n') {
                kept.push('\n');
            }
        }
        let moved = |offset: usize| {
            let offset = offset.min(len);
            let line = line_of(offset);
            new_starts[line] + (offset - line_starts[line])
        };
        for finding in &mut self.findings {
            finding.span = moved(finding.span.start)..moved(finding.span.end);
        }
        self.source = Arc::from(kept);
    }
}

impl TemplateReport {
    /// A finding's 1-based start and (exclusive) end positions in the template.
    pub fn position(&self, finding: &Finding) -> Position {
        let (line, column) = source::line_col(&self.source, finding.span.start);
        let (end_line, end_column) = source::line_col(&self.source, finding.span.end);
        Position {
            line,
            column,
            end_line,
            end_column,
        }
    }
}

impl TemplateReport {
    /// What the figures cannot show: a single render proves nothing about divergence, and
    /// an empty render has nothing to cache. Every format prints these.
    pub fn notes(&self) -> Vec<String> {
        figure_notes(
            self.analysis.samples,
            self.analysis.tokens_max,
            &self.unknown,
        )
    }
}

fn figure_notes(samples: usize, tokens_max: usize, unknown: &[UnknownCallable]) -> Vec<String> {
    let mut notes: Vec<String> = unknown.iter().map(UnknownCallable::note).collect();
    if samples == 1 {
        notes.push(
            "one render cannot show a divergence: the shared-prefix figures are not evidence; give the samples file a second entry with different values"
                .to_owned(),
        );
    }
    if tokens_max == 0 && samples > 0 {
        notes.push("every render is empty: there is nothing to cache".to_owned());
    }
    notes
}

/// What the closing sections of a report (the table, the notes, the counts, the baseline
/// comparison, the job summary) read of one checked template. A streamed report keeps only
/// this of each template: its figures, its findings' severities, its stand-ins.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TemplateRow {
    pub path: String,
    pub samples: usize,
    pub tokens_min: usize,
    pub tokens_max: usize,
    pub shared_prefix_tokens: usize,
    pub cached_tokens_expected: usize,
    pub recoverable_tokens: usize,
    /// One entry per finding.
    pub severities: Vec<Severity>,
    pub stand_ins: Vec<String>,
    pub unknown: Vec<UnknownCallable>,
    pub cost: Option<crate::cost::TemplateCost>,
}

impl TemplateRow {
    pub fn of(template: &TemplateReport) -> TemplateRow {
        let a = &template.analysis;
        TemplateRow {
            // Several templates of one host file are told apart by their keys.
            path: match &template.embedded {
                Some(embedded) => format!("{}#{}", template.path, embedded.key),
                None => template.path.clone(),
            },
            samples: a.samples,
            tokens_min: a.tokens_min,
            tokens_max: a.tokens_max,
            shared_prefix_tokens: a.shared_prefix_tokens,
            cached_tokens_expected: a.cached_tokens_expected,
            recoverable_tokens: a.recoverable_tokens,
            severities: template.findings.iter().map(|f| f.severity).collect(),
            stand_ins: template.stand_ins.clone(),
            unknown: template.unknown.clone(),
            cost: template.cost.clone(),
        }
    }

    /// As [`Analysis::cacheable_percent`].
    pub fn cacheable_percent(&self) -> f64 {
        if self.tokens_min == 0 {
            return 0.0;
        }
        100.0 * self.shared_prefix_tokens as f64 / self.tokens_min as f64
    }

    /// As [`TemplateReport::notes`].
    pub fn notes(&self) -> Vec<String> {
        figure_notes(self.samples, self.tokens_max, &self.unknown)
    }
}

/// A run as the closing sections of a report see it.
#[derive(Debug, Clone, Copy)]
pub struct Closing<'a> {
    pub rows: &'a [TemplateRow],
    pub engine: Option<&'a CacheProfile>,
    pub errors: &'a [TemplateError],
    pub skipped: &'a [SkippedTemplate],
    pub unchecked: &'a [UncheckedPlace],
}

impl Closing<'_> {
    /// `3 templates checked, 1 failed, 2 skipped, 4 findings`: failed and skipped only when
    /// there are any.
    pub fn counts(&self) -> String {
        let mut parts = vec![format!(
            "{} template{} checked",
            self.rows.len(),
            plural(self.rows.len())
        )];
        if !self.errors.is_empty() {
            parts.push(format!("{} failed", self.errors.len()));
        }
        if !self.skipped.is_empty() {
            parts.push(format!("{} skipped", self.skipped.len()));
        }
        if !self.unchecked.is_empty() {
            parts.push(format!("{} unchecked", self.unchecked.len()));
        }
        let findings: usize = self.rows.iter().map(|r| r.severities.len()).sum();
        parts.push(format!("{findings} finding{}", plural(findings)));
        parts.join(", ")
    }

    pub fn worst(&self) -> Option<Severity> {
        self.rows
            .iter()
            .flat_map(|r| r.severities.iter().copied())
            .max()
    }
}

/// A report written as it ran ([`stream::ReportWriter`]): a row per checked template, the
/// failures and the skipped files.
#[derive(Debug, Default)]
pub struct StreamedReport {
    pub rows: Vec<TemplateRow>,
    pub engine: Option<CacheProfile>,
    pub errors: Vec<TemplateError>,
    pub skipped: Vec<SkippedTemplate>,
    pub unchecked: Vec<UncheckedPlace>,
}

impl StreamedReport {
    pub fn closing(&self) -> Closing<'_> {
        Closing {
            rows: &self.rows,
            engine: self.engine.as_ref(),
            errors: &self.errors,
            skipped: &self.skipped,
            unchecked: &self.unchecked,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
}

/// A template that could not be checked: it failed to read, parse, sample or render.
/// Every format shows it; any of them makes the run exit 2.
#[derive(Debug)]
pub struct TemplateError {
    /// The checked template, as shown to the user (as [`TemplateReport::path`]).
    pub path: String,
    pub error: Error,
    /// Where in `path` it failed, when the error points into that file.
    pub location: Option<Position>,
    /// One line for the formats that show the path apart: without the path the error
    /// message starts with, and with the place when that is another file (an include,
    /// the samples file).
    pub message: String,
}

impl TemplateError {
    /// `template_name` is the template's name inside the render environment, which is
    /// how render errors name it.
    pub fn new(path: String, template_name: &str, error: Error) -> Self {
        let full = error.to_string();
        let mut message = [path.as_str(), template_name]
            .iter()
            .find_map(|name| full.strip_prefix(&format!("{name}: ")))
            .unwrap_or(&full)
            .to_owned();
        let mut location = None;
        if let Error::Located(located) = &error {
            let text = located.src.inner();
            let start = located.span.offset();
            let (line, column) = source::line_col(text, start);
            let (end_line, end_column) = source::line_col(text, start + located.span.len());
            let name = located.src.name();
            if name == template_name || name == path {
                location = Some(Position {
                    line,
                    column,
                    end_line,
                    end_column,
                });
            } else {
                message.push_str(&format!(" (at {name}:{line}:{column})"));
            }
        }
        TemplateError {
            path,
            error,
            location,
            message,
        }
    }

    pub fn help(&self) -> Option<String> {
        miette::Diagnostic::help(&self.error).map(|help| help.to_string())
    }

    /// 1-based line and column; the file's start when the error has no place in it.
    pub fn line_column(&self) -> (usize, usize) {
        self.location.map_or((1, 1), |p| (p.line, p.column))
    }
}

/// A discovered file that was deliberately not checked (not a prompt, by the skip list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedTemplate {
    pub path: String,
    pub reason: String,
}

/// Prompt-like text that a run found and could not check (a format no renderer knows, a
/// prompt loaded where prefixlint cannot follow, a prompt assembled at run time): every
/// format says so (`unchecked[]` in JSON), so nothing prompt-like passes in silence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UncheckedPlace {
    pub path: String,
    /// 1-based line in `path`.
    pub line: usize,
    pub reason: String,
}

/// What became of one template (or discovered file).
#[derive(Debug)]
pub enum TemplateOutcome {
    /// Checked: its figures and its findings, after suppressions.
    Checked(Box<TemplateReport>),
    /// It could not be checked; the run goes on and exits 2.
    Failed(TemplateError),
    /// Deliberately not checked (not a prompt, by the skip list).
    Skipped(SkippedTemplate),
    /// Prompt-like text that cannot be checked.
    Unchecked(UncheckedPlace),
}

#[derive(Debug, Default)]
pub struct CheckReport {
    pub templates: Vec<TemplateReport>,
    /// The profile `cached_tokens_expected` was computed with.
    pub engine: Option<CacheProfile>,
    /// Templates that could not be checked, in discovery order.
    pub errors: Vec<TemplateError>,
    pub skipped: Vec<SkippedTemplate>,
    pub unchecked: Vec<UncheckedPlace>,
}

impl CheckReport {
    /// Files one outcome into its list; outcomes keep their order within each list.
    pub fn add(&mut self, outcome: TemplateOutcome) {
        match outcome {
            TemplateOutcome::Checked(template) => self.templates.push(*template),
            TemplateOutcome::Failed(error) => self.errors.push(error),
            TemplateOutcome::Skipped(skipped) => self.skipped.push(skipped),
            TemplateOutcome::Unchecked(place) => self.unchecked.push(place),
        }
    }

    pub fn findings(&self) -> impl Iterator<Item = (&TemplateReport, &Finding)> {
        self.templates
            .iter()
            .flat_map(|t| t.findings.iter().map(move |f| (t, f)))
    }

    /// `3 templates checked, 1 failed, 2 skipped, 4 findings`: failed and skipped only when
    /// there are any.
    pub fn counts(&self) -> String {
        self.closing(&self.rows()).counts()
    }

    pub fn worst(&self) -> Option<Severity> {
        self.findings().map(|(_, f)| f.severity).max()
    }

    /// The closing sections' row of each checked template.
    pub fn rows(&self) -> Vec<TemplateRow> {
        self.templates.iter().map(TemplateRow::of).collect()
    }

    pub fn closing<'a>(&'a self, rows: &'a [TemplateRow]) -> Closing<'a> {
        Closing {
            rows,
            engine: self.engine.as_ref(),
            errors: &self.errors,
            skipped: &self.skipped,
            unchecked: &self.unchecked,
        }
    }

    /// The whole report; the human-readable formats with control characters escaped, as
    /// [`stream::ReportWriter`] writes them.
    pub fn render(&self, format: Format, color: bool) -> String {
        let text = match format {
            Format::Full => full::render(self, color),
            Format::Concise => concise::render(self),
            Format::Json => return json::render(self),
            Format::Sarif => return sarif::render(self),
            Format::Github => github::render(self),
        };
        match format {
            Format::Full if color => crate::fmt::escape_controls_keep_colors(&text).into_owned(),
            _ => crate::fmt::escape_controls(&text).into_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A checked template of 100 lines with findings on lines 3 and 20-21 (one of them
    /// ending before it starts), and one at the very end.
    fn checked_template() -> TemplateReport {
        let source: String = (1..=100)
            .map(|n| format!("line {n} {{{{ value_{n} }}}} ünïcode\n"))
            .collect();
        let offset = |line: usize, column: usize| source::offset_of(&source, line, column);
        let finding = |code: &str, span: std::ops::Range<usize>| Finding {
            saving: None,
            cadence: None,
            rule: crate::rules::find(code).expect("a rule"),
            severity: Severity::Warning,
            message: format!("{code} here"),
            help: "move it".into(),
            span,
            label: "this".into(),
            related: Vec::new(),
        };
        let findings = vec![
            finding("PL001", offset(3, 8)..offset(3, 21)),
            finding("PL002", offset(20, 4)..offset(21, 9)),
            finding("PL003", offset(30, 9)..offset(30, 2)),
            finding("PL004", source.len()..source.len()),
        ];
        TemplateReport {
            path: "prompts/long.j2".into(),
            source: Arc::from(source.as_str()),
            analysis: Analysis {
                samples: 2,
                token_counts: vec![300, 310],
                tokens_min: 300,
                tokens_max: 310,
                shared_prefix_tokens: 12,
                recoverable_tokens: 250,
                stand_in_tokens: 0,
                divergence: None,
                cached_tokens_expected: 11,
                text_prefix_tokens: None,
                renders: Vec::new(),
                tokens: Vec::new(),
                bodies: Vec::new(),
                later_sites: Vec::new(),
            },
            findings,
            stand_ins: Vec::new(),
            unknown: Vec::new(),
            embedded: None,
            format: Default::default(),
            cost: None,
        }
    }

    /// A cost as `check` sets it with a hosted engine that has prices.
    /// A template without findings, checked over one sample, with a stand-in.
    fn quiet_template() -> TemplateReport {
        let mut t = checked_template();
        t.path = "prompts/quiet.j2".into();
        t.findings.clear();
        t.analysis.samples = 1;
        t.stand_ins = vec!["state".into()];
        t
    }

    fn priced(mut template: TemplateReport) -> TemplateReport {
        template.cost = Some(crate::cost::TemplateCost {
            model: "gpt-4.1".into(),
            prices_date: "2026-12-01".into(),
            currency: "USD".into(),
            now: 620_000,
            fixed: 120_500,
            cached_now: 11,
            cached_fixed: 256,
        });
        template
    }

    #[test]
    fn keeping_only_the_quoted_source_changes_no_format() {
        let full = CheckReport {
            templates: vec![checked_template()],
            ..CheckReport::default()
        };
        let mut kept = checked_template();
        kept.keep_quoted_source();
        assert!(
            kept.source.len() < full.templates[0].source.len() / 2,
            "most lines are blanked: {} of {} bytes kept",
            kept.source.len(),
            full.templates[0].source.len()
        );
        assert!(!kept.source.contains("line 10 "), "far lines are blanked");
        let kept = CheckReport {
            templates: vec![kept],
            ..CheckReport::default()
        };
        for format in [
            Format::Full,
            Format::Concise,
            Format::Json,
            Format::Sarif,
            Format::Github,
        ] {
            assert_eq!(
                kept.render(format, false),
                full.render(format, false),
                "{format:?}"
            );
        }
    }

    #[test]
    fn without_findings_only_the_line_breaks_are_kept() {
        let mut template = checked_template();
        template.findings.clear();
        template.keep_quoted_source();
        assert_eq!(&*template.source, "\n".repeat(100));
    }

    /// A report with one failure and one skipped file, and no checked template.
    fn report() -> CheckReport {
        CheckReport {
            errors: vec![TemplateError::new(
                "prompts/a.j2".into(),
                "prompts/a.j2",
                Error::located(
                    "prompts/a.j2",
                    "Hello\n{{ x | nope }}\n",
                    13..17,
                    "prompts/a.j2: unknown filter `nope`",
                    "here",
                    Some("declare it under `filters:`".into()),
                ),
            )],
            skipped: vec![SkippedTemplate {
                path: "ci/deploy.yml.j2".into(),
                reason: "a YAML template, not a prompt".into(),
            }],
            ..CheckReport::default()
        }
    }

    /// Every format, written an outcome at a time in the order a run produces them
    /// (failures and skipped files between the templates), is the whole report's render.
    #[test]
    fn streamed_reports_are_the_whole_report_byte_for_byte() {
        for format in [
            Format::Full,
            Format::Concise,
            Format::Json,
            Format::Sarif,
            Format::Github,
        ] {
            let mut whole = report();
            whole.templates = vec![priced(checked_template()), quiet_template()];
            whole.engine = Some(CacheProfile::default());
            let expected = whole.render(format, false);
            let mut parts = report();
            let mut out = Vec::new();
            let mut writer =
                stream::ReportWriter::new(format, false, whole.engine.clone(), &mut out).unwrap();
            writer
                .add(TemplateOutcome::Checked(Box::new(priced(
                    checked_template(),
                ))))
                .unwrap();
            writer
                .add(TemplateOutcome::Failed(parts.errors.remove(0)))
                .unwrap();
            writer
                .add(TemplateOutcome::Skipped(parts.skipped.remove(0)))
                .unwrap();
            writer
                .add(TemplateOutcome::Checked(Box::new(quiet_template())))
                .unwrap();
            let (streamed, _) = writer.finish().unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), expected, "{format:?}");
            assert_eq!(streamed.closing().counts(), whole.counts());
            assert_eq!(streamed.closing().worst(), whole.worst());
            assert_eq!(streamed.rows, whole.rows());
        }
        let mut empty = Vec::new();
        let writer = stream::ReportWriter::new(Format::Json, false, None, &mut empty).unwrap();
        writer.finish().unwrap();
        assert_eq!(
            String::from_utf8(empty).unwrap(),
            CheckReport::default().render(Format::Json, false)
        );
    }

    /// A template written again from its written form (as the results cache keeps it, the
    /// row through its stored JSON) writes the same bytes as the template itself.
    #[test]
    fn templates_written_from_their_written_form_are_the_same_bytes() {
        for format in [
            Format::Full,
            Format::Concise,
            Format::Json,
            Format::Sarif,
            Format::Github,
        ] {
            let engine = Some(CacheProfile::default());
            let mut first = Vec::new();
            let mut writer =
                stream::ReportWriter::new(format, false, engine.clone(), &mut first).unwrap();
            let mut written = Vec::new();
            for template in [priced(checked_template()), quiet_template()] {
                written.push(writer.add_checked(template).unwrap());
                let mut parts = report();
                writer
                    .add(TemplateOutcome::Failed(parts.errors.remove(0)))
                    .unwrap();
            }
            writer.finish().unwrap();
            assert_eq!(
                written.iter().all(Option::is_some),
                stream::written_form(format, false).is_some(),
                "{format:?}"
            );
            if format == Format::Sarif {
                continue;
            }
            let mut again = Vec::new();
            let mut writer =
                stream::ReportWriter::new(format, false, engine.clone(), &mut again).unwrap();
            for written in written.into_iter().flatten() {
                let stored = serde_json::to_vec(&written.row).unwrap();
                let row: TemplateRow = serde_json::from_slice(&stored).unwrap();
                assert_eq!(row, written.row);
                writer.add_written(&written).unwrap();
                let mut parts = report();
                writer
                    .add(TemplateOutcome::Failed(parts.errors.remove(0)))
                    .unwrap();
            }
            writer.finish().unwrap();
            assert_eq!(
                String::from_utf8(again).unwrap(),
                String::from_utf8(first).unwrap(),
                "{format:?}"
            );
        }
        assert_ne!(
            stream::written_form(Format::Full, true),
            stream::written_form(Format::Full, false)
        );
    }

    #[test]
    fn a_failure_has_its_place_and_a_message_without_the_path() {
        let failure = &report().errors[0];
        assert_eq!(failure.line_column(), (2, 8));
        assert_eq!(failure.message, "unknown filter `nope`");
        assert_eq!(
            failure.help().as_deref(),
            Some("declare it under `filters:`")
        );
    }

    #[test]
    fn an_error_in_another_file_names_that_place() {
        let error = Error::located("partials/b.j2", "x\n{{ y }}", 2..9, "boom", "", None);
        let failure = TemplateError::new("a.j2".into(), "a.j2", error);
        assert_eq!(failure.location, None);
        assert_eq!(failure.line_column(), (1, 1));
        assert_eq!(failure.message, "boom (at partials/b.j2:2:1)");
    }

    #[test]
    fn failures_and_skipped_files_show_in_every_format() {
        let report = report();
        assert_eq!(
            report.counts(),
            "0 templates checked, 1 failed, 1 skipped, 0 findings"
        );
        let json: serde_json::Value =
            serde_json::from_str(&report.render(Format::Json, false)).unwrap();
        assert_eq!(
            json["errors"],
            serde_json::json!([{
                "path": "prompts/a.j2",
                "message": "unknown filter `nope`",
                "line": 2,
                "column": 8,
                "help": "declare it under `filters:`"
            }])
        );
        assert_eq!(
            json["skipped"],
            serde_json::json!([{"path": "ci/deploy.yml.j2", "reason": "a YAML template, not a prompt"}])
        );
        let concise = report.render(Format::Concise, false);
        assert_eq!(
            concise,
            "prompts/a.j2:2:8: error: unknown filter `nope`\n\
             ci/deploy.yml.j2:1:1: note: skipped: a YAML template, not a prompt\n"
        );
        let full = report.render(Format::Full, false);
        assert!(!full.contains("renders"), "no table: {full}");
        assert!(full.contains("skipped ci/deploy.yml.j2: a YAML template, not a prompt\n"));
        assert!(full.contains("failed prompts/a.j2:2:8: unknown filter `nope`\n"));
        assert!(full.ends_with("0 templates checked, 1 failed, 1 skipped, 0 findings\n"));
        let github = report.render(Format::Github, false);
        assert!(github.contains(
            "::error file=prompts/a.j2,line=2,col=8,title=prefixlint%3A template could not be checked::prompts/a.j2:2:8: unknown filter `nope`%0Ahelp: declare it under `filters:`\n"
        ));
        assert!(github
            .contains("prefixlint: skipped ci/deploy.yml.j2: a YAML template, not a prompt\n"));
        let sarif: serde_json::Value =
            serde_json::from_str(&report.render(Format::Sarif, false)).unwrap();
        let invocation = &sarif["runs"][0]["invocations"][0];
        assert_eq!(invocation["executionSuccessful"], false);
        let ids: Vec<&str> = invocation["toolExecutionNotifications"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["descriptor"]["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["template-error", "template-skipped"]);
        let markdown = github::step_summary(&report);
        assert!(
            markdown.contains("| `prompts/a.j2:2:8` | unknown filter 'nope' |"),
            "{markdown}"
        );
    }
}
