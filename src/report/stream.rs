//! Reports written as the outcomes arrive, so memory stays flat in the number of templates.
//!
//! Each checked template is written (or, where its format prints it later, turned into its
//! short output) as soon as it comes, while its source is still there for the snippets;
//! then it is reduced to the figures the closing sections read (the summary table, the
//! counts, the baseline comparison, the job summary). The output is byte for byte what
//! [`CheckReport::render`] writes for the whole report.

use super::json::JsonStream;
use super::{concise, full, github, sarif, CheckReport, Format, TemplateOutcome};
use crate::cache_profile::CacheProfile;
use std::io::{self, Write};

pub struct ReportWriter<W: Write> {
    format: Format,
    color: bool,
    out: W,
    /// What the closing sections read: checked templates reduced to their figures and
    /// findings' places, the failures and the skipped files.
    report: CheckReport,
    /// Output that follows the failures (concise's finding lines).
    held: String,
    /// SARIF's results, which follow the run's notifications in the document.
    sarif_results: Vec<serde_json::Value>,
    json: JsonStream,
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
            report: CheckReport {
                engine,
                ..CheckReport::default()
            },
            held: String::new(),
            sarif_results: Vec::new(),
            json: JsonStream::default(),
        })
    }

    /// Writes what can be written of one outcome and keeps its short record.
    pub fn add(&mut self, outcome: TemplateOutcome) -> io::Result<()> {
        let TemplateOutcome::Checked(mut template) = outcome else {
            self.report.add(outcome);
            return Ok(());
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
        template.reduce();
        self.report.add(TemplateOutcome::Checked(template));
        self.out.write_all(now.as_bytes())
    }

    /// Writes the closing sections; returns the reduced report (figures, finding counts
    /// and severities, failures, skipped files) and the writer.
    pub fn finish(mut self) -> io::Result<(CheckReport, W)> {
        let tail = match self.format {
            Format::Full => full::render_tail(&self.report),
            Format::Github => github::render_tail(&self.report),
            Format::Json => self.json.footer(&self.report),
            Format::Concise => concise::render_around(&self.report, &self.held),
            Format::Sarif => {
                let results = std::mem::take(&mut self.sarif_results);
                let document = sarif::document(&self.report, results);
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
