//! A template's outcome as LSP diagnostics: the findings `check` reports (same code,
//! message, severity, place and help, linked to the rule's docs as SARIF's `helpUri`), and
//! an error at its place, in whichever file it is about (the template, its samples file,
//! an include).

use super::documents::{self, Encoding};
use crate::error::Error;
use crate::report::{TemplateError, TemplateOutcome, TemplateReport};
use crate::rules::{Finding, Severity};
use lsp_types::{
    CodeDescription, Diagnostic, DiagnosticRelatedInformation, DiagnosticSeverity, Location,
    NumberOrString, Position, Range, Uri,
};
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Where a template's diagnostics go: the template itself, and the files its errors name.
pub struct Published {
    pub template: Vec<Diagnostic>,
    /// Diagnostics in other files (the samples file, an include), by URI.
    pub elsewhere: Vec<(Uri, Vec<Diagnostic>)>,
}

/// Turns an outcome into diagnostics. `text` is the template text that was checked,
/// `template_name` its name in the render environment, `root` the project root its
/// includes resolve against.
pub fn of_outcome(
    outcome: &TemplateOutcome,
    text: &str,
    template_name: &str,
    root: &Path,
    encoding: Encoding,
) -> Published {
    match outcome {
        TemplateOutcome::Checked(report) => Published {
            template: report
                .findings
                .iter()
                .map(|f| of_finding(report, f, text, root, encoding))
                .collect(),
            elsewhere: Vec::new(),
        },
        TemplateOutcome::Failed(error) => of_error(error, template_name, root, encoding),
        TemplateOutcome::Skipped(_) => Published {
            template: Vec::new(),
            elsewhere: Vec::new(),
        },
        // Prompt text the server cannot check is marked on its line, as `check` reports it.
        TemplateOutcome::Unchecked(place) => {
            let start = crate::source::offset_of(text, place.line, 1);
            let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
            Published {
                template: vec![Diagnostic {
                    range: documents::range(text, start..end, encoding),
                    severity: Some(DiagnosticSeverity::INFORMATION),
                    code: Some(NumberOrString::String("unchecked".into())),
                    source: Some("prefixlint".into()),
                    message: format!("prompt not checked: {}", place.reason),
                    ..Diagnostic::default()
                }],
                elsewhere: Vec::new(),
            }
        }
    }
}

fn severity(severity: Severity) -> DiagnosticSeverity {
    match severity {
        Severity::Error => DiagnosticSeverity::ERROR,
        Severity::Warning => DiagnosticSeverity::WARNING,
        Severity::Info => DiagnosticSeverity::INFORMATION,
    }
}

/// The message with its help, as the concise format prints them, for clients that show no
/// related information.
/// Control characters are escaped: an editor shows a message as text, never obeys it.
fn with_help(message: &str, help: Option<&str>) -> String {
    let text = match help {
        Some(help) if !help.is_empty() => format!("{message}\nhelp: {help}"),
        _ => message.to_owned(),
    };
    crate::fmt::escape_controls(&text).into_owned()
}

/// A finding's range in the buffer: its line and column in the report (whose source
/// keeps the quoted lines in place), mapped onto the checked text.
pub fn finding_span(
    report: &TemplateReport,
    finding: &Finding,
    text: &str,
) -> std::ops::Range<usize> {
    let place = report.position(finding);
    let start = crate::source::offset_of(text, place.line, place.column);
    let end = crate::source::offset_of(text, place.end_line, place.end_column);
    start..end.max(start)
}

fn of_finding(
    report: &TemplateReport,
    finding: &Finding,
    text: &str,
    root: &Path,
    encoding: Encoding,
) -> Diagnostic {
    let related: Vec<DiagnosticRelatedInformation> = finding
        .related
        .iter()
        .filter_map(|label| {
            // Labels start with `LINE:COLUMN: `, which is all we need of the other file.
            let mut parts = label.text.splitn(3, ':');
            let line: u32 = parts.next()?.trim().parse().ok()?;
            let column: u32 = parts.next()?.trim().parse().ok()?;
            let message =
                crate::fmt::escape_controls(parts.next().unwrap_or("").trim()).into_owned();
            let at = Position::new(line.saturating_sub(1), column.saturating_sub(1));
            Some(DiagnosticRelatedInformation {
                location: Location {
                    uri: documents::uri_from_path(&file_of(&label.template, root)),
                    range: Range::new(at, at),
                },
                message,
            })
        })
        .collect();
    Diagnostic {
        range: documents::range(text, finding_span(report, finding, text), encoding),
        severity: Some(severity(finding.severity)),
        code: Some(NumberOrString::String(finding.rule.code.to_string())),
        code_description: Uri::from_str(&finding.rule.url())
            .ok()
            .map(|href| CodeDescription { href }),
        source: Some("prefixlint".into()),
        message: with_help(&finding.message, Some(&finding.help)),
        related_information: (!related.is_empty()).then_some(related),
        tags: None,
        data: None,
    }
}

/// A file named in the render environment (project-relative) or in a message
/// (working-directory-relative, which the server sets to the project root).
fn file_of(name: &str, root: &Path) -> PathBuf {
    let path = Path::new(name);
    if path.is_absolute() {
        return path.to_path_buf();
    }
    let from_cwd = std::env::current_dir().map(|cwd| cwd.join(path));
    match from_cwd {
        Ok(candidate) if candidate.exists() => candidate,
        _ => root.join(path),
    }
}

fn of_error(
    error: &TemplateError,
    template_name: &str,
    root: &Path,
    encoding: Encoding,
) -> Published {
    let help = error.help();
    let at_start = Range::new(Position::new(0, 0), Position::new(0, 0));
    let diagnostic = |range: Range, message: &str| Diagnostic {
        range,
        severity: Some(DiagnosticSeverity::ERROR),
        code: None,
        code_description: None,
        source: Some("prefixlint".into()),
        message: with_help(message, help.as_deref()),
        related_information: None,
        tags: None,
        data: None,
    };
    let Error::Located(located) = &error.error else {
        return Published {
            template: vec![diagnostic(at_start, &error.message)],
            elsewhere: Vec::new(),
        };
    };
    let text = located.src.inner();
    let start = located.span.offset();
    let range = documents::range(text, start..start + located.span.len(), encoding);
    let name = located.src.name();
    if name == template_name || name == error.path {
        return Published {
            template: vec![diagnostic(range, &located.message)],
            elsewhere: Vec::new(),
        };
    }
    // Another file (the samples file, an include): the error goes there, and the template
    // says which file failed it.
    let other = documents::uri_from_path(&file_of(name, root));
    Published {
        template: vec![diagnostic(at_start, &error.message)],
        elsewhere: vec![(other, vec![diagnostic(range, &located.message)])],
    }
}
