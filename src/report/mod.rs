//! Stage 6: reports. One data model ([`CheckReport`]), several renderings of it.

mod concise;
mod full;
pub mod github;
pub mod json;
pub mod output;
pub mod sarif;

use crate::analyse::Analysis;
use crate::engine::Engine;
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
#[derive(Debug, Clone)]
pub struct TemplateReport {
    /// As shown to the user: relative to the working directory, `/`-separated.
    pub path: String,
    pub source: Arc<str>,
    pub analysis: Analysis,
    pub findings: Vec<Finding>,
    /// Values rendered with stand-ins for application objects (`state`, `subtasks[].output`).
    pub stand_ins: Vec<String>,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
}

#[derive(Debug, Clone, Default)]
pub struct CheckReport {
    pub templates: Vec<TemplateReport>,
    /// The profile `cached_tokens_expected` was computed with.
    pub engine: Option<Engine>,
}

impl CheckReport {
    pub fn findings(&self) -> impl Iterator<Item = (&TemplateReport, &Finding)> {
        self.templates
            .iter()
            .flat_map(|t| t.findings.iter().map(move |f| (t, f)))
    }

    pub fn worst(&self) -> Option<Severity> {
        self.findings().map(|(_, f)| f.severity).max()
    }

    pub fn render(&self, format: Format, color: bool) -> String {
        match format {
            Format::Full => full::render(self, color),
            Format::Concise => concise::render(self),
            Format::Json => json::render(self),
            Format::Sarif => sarif::render(self),
            Format::Github => github::render(self),
        }
    }
}
