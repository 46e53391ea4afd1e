//! Reports written as the outcomes arrive, so memory stays flat in the number of templates.
//!
//! Each checked template is written (or, where its format prints it later, turned into its
//! short output) as soon as it comes, while its source is still there for the snippets;
//! then only its row is kept ([`TemplateRow`]: the figures the closing sections read, the
//! summary table, the counts, the baseline comparison, the job summary). The output is byte for byte what
//! [`CheckReport::render`] writes for the whole report.

use super::json::JsonStream;
use super::{concise, full, github, sarif, Format, StreamedReport, TemplateOutcome, TemplateRow};
use crate::cache_profile::CacheProfile;
use std::io::{self, Write};

pub struct ReportWriter<W: Write> {
    format: Format,
    color: bool,
    out: W,
    /// What the closing sections read: a row per checked template, the failures and the
    /// skipped files.
    report: StreamedReport,
    /// Output that follows the failures (concise's finding lines).
    held: String,
    /// SARIF's results, which follow the run's notifications in the document.
    sarif_results: Vec<serde_json::Value>,
    json: JsonStream,
    /// A `--fix`/`--diff` run's fixes, for JSON's `fixes`.
    fixes: Option<serde_json::Value>,
}

impl<W: Write> ReportWriter<W> {
    /// Starts the report; `engine` is the profile `cached_tokens_expected` is computed with.
    pub fn new(
        format: Format,
        color: bool,
        engine: Option<CacheProfile>,
        mut out: W,
    ) -> io::Result<Self> {
        if format == Format::Json {
            out.write_all(JsonStream::header(engine.as_ref()).as_bytes())?;
        }
        Ok(ReportWriter {
            format,
            color,
            out,
            report: StreamedReport {
                engine,
                ..StreamedReport::default()
            },
            held: String::new(),
            sarif_results: Vec::new(),
            json: JsonStream::default(),
            fixes: None,
        })
    }

    /// Writes what can be written of one outcome and keeps its short record.
    pub fn add(&mut self, outcome: TemplateOutcome) -> io::Result<()> {
        let template = match outcome {
            TemplateOutcome::Checked(template) => template,
            TemplateOutcome::Failed(error) => {
                self.report.errors.push(error);
                return Ok(());
            }
            TemplateOutcome::Skipped(skipped) => {
                self.report.skipped.push(skipped);
                return Ok(());
            }
        };
        let now = match self.format {
            Format::Full => full::diagnostics(&template, self.color),
            Format::Github => github::template_group(&template),
            Format::Json => self.json.template(&template),
            Format::Concise => {
                self.held.push_str(&concise::finding_lines(&template));
                String::new()
            }
            Format::Sarif => {
                self.sarif_results
                    .extend(sarif::template_results(&template));
                String::new()
            }
        };
        self.report.rows.push(TemplateRow::of(&template));
        // The template (its source, findings and figures) goes here.
        drop(template);
        self.out.write_all(now.as_bytes())
    }

    /// The fixes the JSON report lists under `fixes` (`check --fix`).
    pub fn set_fixes(&mut self, fixes: serde_json::Value) {
        self.fixes = Some(fixes);
    }

    /// Writes the closing sections; returns the rows, failures and skipped files, and the
    /// writer.
    pub fn finish(mut self) -> io::Result<(StreamedReport, W)> {
        let closing = self.report.closing();
        let tail = match self.format {
            Format::Full => full::render_tail(&closing),
            Format::Github => github::render_tail(&closing),
            Format::Json => self.json.footer(&closing, self.fixes.as_ref()),
            Format::Concise => concise::render_around(&closing, &self.held),
            Format::Sarif => {
                let results = std::mem::take(&mut self.sarif_results);
                let document = sarif::document(&closing, results);
                let mut text = serde_json::to_string_pretty(&document).unwrap_or_default();
                text.push('\n');
                text
            }
        };
        self.out.write_all(tail.as_bytes())?;
        self.out.flush()?;
        Ok((self.report, self.out))
    }
}
