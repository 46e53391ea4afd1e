//! Reports written as the outcomes arrive, so memory stays flat in the number of templates.
//!
//! Each checked template is written (or, where its format prints it later, turned into its
//! short output) as soon as it comes, while its source is still there for the snippets;
//! then only its row is kept ([`TemplateRow`]: the figures the closing sections read, the
//! summary table, the counts, the baseline comparison, the job summary). The output is byte for byte what
//! [`CheckReport::render`] writes for the whole report.

use super::json::JsonStream;
use super::{
    concise, full, github, sarif, Format, StreamedReport, TemplateOutcome, TemplateReport,
    TemplateRow,
};
use crate::cache_profile::CacheProfile;
use std::io::{self, Write};

/// One checked template as a format writes it: the row the closing sections read and the
/// text written for it (a JSON list element without its separator, the miette
/// diagnostics, the GitHub group, the concise lines). The results cache keeps it beside the
/// report, so a template it serves is written without being decoded and rendered again.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WrittenTemplate {
    pub row: TemplateRow,
    pub text: String,
}

/// The name of what [`ReportWriter::add_checked`] writes for a template in `format` (with
/// `color`), as the results cache keys it; `None` for SARIF, whose results are values the
/// document places at the end.
pub fn written_form(format: Format, color: bool) -> Option<&'static str> {
    match (format, color) {
        (Format::Json, _) => Some("json"),
        (Format::Full, false) => Some("full"),
        (Format::Full, true) => Some("full, color"),
        (Format::Github, _) => Some("github"),
        (Format::Concise, _) => Some("concise"),
        (Format::Sarif, _) => None,
    }
}

/// What follows the findings in the full and concise reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tail {
    /// The notes, the summary table and the counts.
    All,
    /// `--quiet -v`: the notes only.
    Notes,
    /// `--quiet`: nothing (failures stay: they are errors, not notes).
    Nothing,
}

impl Tail {
    pub fn of(output: crate::settings::Output) -> Tail {
        match (output.quiet, output.verbose) {
            (false, _) => Tail::All,
            (true, true) => Tail::Notes,
            (true, false) => Tail::Nothing,
        }
    }
}

pub struct ReportWriter<W: Write> {
    format: Format,
    color: bool,
    /// What full and concise print after the findings (machine formats are whole
    /// documents either way).
    tail: Tail,
    /// The width the full report is fitted to.
    width: usize,
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
            tail: Tail::All,
            width: crate::settings::DEFAULT_WIDTH,
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
        match outcome {
            TemplateOutcome::Checked(template) => self.add_checked(*template).map(drop),
            TemplateOutcome::Failed(error) => {
                self.report.errors.push(error);
                Ok(())
            }
            TemplateOutcome::Skipped(skipped) => {
                self.report.skipped.push(skipped);
                Ok(())
            }
            TemplateOutcome::Unchecked(place) => {
                self.report.unchecked.push(place);
                Ok(())
            }
        }
    }

    /// Writes a checked template; returns it as written ([`WrittenTemplate`]), which the
    /// results cache keeps, in the formats whose templates are written as text.
    pub fn add_checked(&mut self, template: TemplateReport) -> io::Result<Option<WrittenTemplate>> {
        let text = match self.format {
            Format::Full => Some(full::diagnostics(&template, self.color, self.width)),
            Format::Github => Some(github::template_group(&template)),
            Format::Json => Some(JsonStream::element(&template)),
            Format::Concise => Some(concise::finding_lines(&template)),
            Format::Sarif => {
                self.sarif_results
                    .extend(sarif::template_results(&template));
                None
            }
        };
        let row = TemplateRow::of(&template);
        // The template (its source, findings and figures) goes here.
        drop(template);
        let Some(text) = text else {
            self.report.rows.push(row);
            return Ok(None);
        };
        let written = WrittenTemplate { row, text };
        self.add_written(&written)?;
        Ok(Some(written))
    }

    /// Writes a template as [`Self::add_checked`] wrote it (in this writer's
    /// [`written_form`]): what a template served from the results cache needs.
    pub fn add_written(&mut self, written: &WrittenTemplate) -> io::Result<()> {
        self.report.rows.push(written.row.clone());
        match self.format {
            Format::Json => {
                self.out.write_all(self.json.separator().as_bytes())?;
                self.out.write_all(written.text.as_bytes())
            }
            Format::Concise => {
                self.held.push_str(&written.text);
                Ok(())
            }
            Format::Full | Format::Github => {
                let text = self.for_terminal(&written.text);
                self.out.write_all(text.as_bytes())
            }
            // Not a written form: SARIF's results are values placed at the end.
            Format::Sarif => Ok(()),
        }
    }

    /// What full and concise print after the findings (`--quiet` and `-v` say).
    pub fn set_tail(&mut self, tail: Tail) {
        self.tail = tail;
    }

    /// The width the full report's diagnostics and summary are fitted to. The results
    /// cache keeps what is written at the default width only ([`written_form`]).
    pub fn set_width(&mut self, width: usize) {
        self.width = width;
    }

    /// Text of a human-readable format with its control characters escaped (a template's
    /// escape sequences are shown, never obeyed; the full format keeps its own colours);
    /// JSON and SARIF escape them as their syntax does.
    fn for_terminal<'t>(&self, text: &'t str) -> std::borrow::Cow<'t, str> {
        match self.format {
            Format::Json | Format::Sarif => std::borrow::Cow::Borrowed(text),
            Format::Full if self.color => crate::fmt::escape_controls_keep_colors(text),
            Format::Full | Format::Concise | Format::Github => crate::fmt::escape_controls(text),
        }
    }

    /// The fixes the JSON report lists under `fixes` (`check --fix`).
    pub fn set_fixes(&mut self, fixes: serde_json::Value) {
        self.fixes = Some(fixes);
    }

    fn narrow(&self) -> Option<usize> {
        (self.width < crate::settings::DEFAULT_WIDTH).then_some(self.width)
    }

    /// Writes the closing sections; returns the rows, failures and skipped files, and the
    /// writer.
    pub fn finish(mut self) -> io::Result<(StreamedReport, W)> {
        let closing = self.report.closing();
        let tail = match self.format {
            Format::Full => match self.tail {
                Tail::All => full::render_tail(&closing, self.narrow()),
                Tail::Notes => full::render_notes(&closing, self.narrow()),
                Tail::Nothing => String::new(),
            },
            Format::Github => github::render_tail(&closing),
            Format::Json => self.json.footer(&closing, self.fixes.as_ref()),
            Format::Concise => match self.tail {
                Tail::All | Tail::Notes => concise::render_around(&closing, &self.held),
                Tail::Nothing => concise::render_findings(&closing, &self.held),
            },
            Format::Sarif => {
                let results = std::mem::take(&mut self.sarif_results);
                let document = sarif::document(&closing, results);
                let mut text = serde_json::to_string_pretty(&document).unwrap_or_default();
                text.push('\n');
                text
            }
        };
        let tail = self.for_terminal(&tail).into_owned();
        self.out.write_all(tail.as_bytes())?;
        self.out.flush()?;
        Ok((self.report, self.out))
    }
}
