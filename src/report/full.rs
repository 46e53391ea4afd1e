//! miette's graphical diagnostics, then a summary table.

use super::{CheckReport, Closing, TemplateReport};
use crate::fmt::{cut_lines, thousands, wrap_lines};
use crate::rules::{Finding, Severity};
use crate::settings::DEFAULT_WIDTH;
use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteDiagnostic, NamedSource};

pub fn render(report: &CheckReport, color: bool) -> String {
    let mut out: String = report
        .templates
        .iter()
        .map(|t| diagnostics(t, color, DEFAULT_WIDTH))
        .collect();
    out.push_str(&render_tail(&report.closing(&report.rows()), None));
    out
}

/// A template's findings as miette diagnostics: written as soon as the template is checked,
/// since they quote its source.
pub fn diagnostics(template: &TemplateReport, color: bool, width: usize) -> String {
    if template.findings.is_empty() {
        return String::new();
    }
    let theme = if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_width(width)
        .with_links(false);
    let mut out = String::new();
    for finding in &template.findings {
        let diagnostic = to_miette(template, finding);
        let _ = handler.render_report(&mut out, diagnostic.as_ref());
        out.push('\n');
    }
    // miette wraps the message and the help; a quoted source line it leaves whole.
    if width < DEFAULT_WIDTH {
        out = cut_lines(&out, width);
    }
    out
}

/// What follows the diagnostics: the stand-in notes and the summary; `narrow`: the width
/// the lines are fitted to, when it is below the default.
pub fn render_tail(report: &Closing, narrow: Option<usize>) -> String {
    let tail = stand_in_notes(report) + &summary(report, narrow);
    match narrow {
        Some(width) => wrap_lines(&tail, width),
        None => tail,
    }
}

/// What `--quiet -v` prints after the diagnostics: the notes, without the summary.
pub fn render_notes(report: &Closing, narrow: Option<usize>) -> String {
    let notes = stand_in_notes(report) + &figure_notes(report);
    match narrow {
        Some(width) => wrap_lines(&notes, width),
        None => notes,
    }
}

/// Which values were stand-ins for application objects: their text is made up.
fn stand_in_notes(report: &Closing) -> String {
    report
        .rows
        .iter()
        .filter(|t| !t.stand_ins.is_empty())
        .map(|t| {
            format!(
                "note: {} rendered with stand-ins for application objects: {}\n",
                t.path,
                t.stand_ins.join(", ")
            )
        })
        .collect::<String>()
        + if report.rows.iter().any(|t| !t.stand_ins.is_empty()) {
            "\n"
        } else {
            ""
        }
}

/// A finding as a miette diagnostic: code, url, help and a labelled span in its template.
pub fn to_miette(template: &TemplateReport, finding: &Finding) -> miette::Report {
    let severity = match finding.severity {
        Severity::Error => miette::Severity::Error,
        Severity::Warning => miette::Severity::Warning,
        Severity::Info => miette::Severity::Advice,
    };
    let mut help = finding.help.clone();
    for related in &finding.related {
        help.push_str(&format!("\n{}:{}", related.template, related.text));
    }
    let span = finding.span.start..finding.span.end.max(finding.span.start);
    let diagnostic = MietteDiagnostic::new(finding.message.clone())
        .with_code(format!("{}({})", finding.rule.code, finding.rule.name))
        .with_severity(severity)
        .with_help(help)
        .with_url(finding.rule.url())
        .with_label(LabeledSpan::new_primary_with_span(
            Some(finding.label.clone()),
            span,
        ));
    miette::Report::new(diagnostic).with_source_code(NamedSource::new(
        &template.path,
        template.source.to_string(),
    ))
}

/// Each template: its renders, tokens, shared prefix and the share that is cacheable; then
/// the notes, the skipped files and the counts. No table when nothing was checked.
pub fn summary(report: &Closing, narrow: Option<usize>) -> String {
    // Sections, each printed only when it has something, one blank line apart.
    let mut sections: Vec<String> = Vec::new();
    if !report.rows.is_empty() {
        sections.push(table(report, narrow));
        if let Some(engine) = report.engine {
            let mut lines = format!("engine caches = {}\n", engine.describe());
            if let Some(cost) = report.rows.iter().find_map(|r| r.cost.as_ref()) {
                lines.push_str(&format!(
                    "cost = input per 1,000 requests at {} prices of {} ({}); a → b: with the findings fixed\n",
                    cost.model, cost.prices_date, cost.currency
                ));
            }
            sections.push(lines);
        }
    }
    let notes = figure_notes(report);
    let skipped: String = report
        .skipped
        .iter()
        .map(|s| format!("skipped {}: {}\n", s.path, s.reason))
        .collect();
    let unchecked: String = report
        .unchecked
        .iter()
        .map(|u| format!("unchecked {}:{}: {}\n", u.path, u.line, u.reason))
        .collect();
    let failed: String = report
        .errors
        .iter()
        .map(|failure| {
            let (line, column) = failure.line_column();
            format!(
                "failed {}:{line}:{column}: {}\n",
                failure.path, failure.message
            )
        })
        .collect();
    sections.extend(
        [notes, skipped, unchecked, failed]
            .into_iter()
            .filter(|s| !s.is_empty()),
    );
    sections.push(format!("{}\n", report.counts()));
    sections.join("\n")
}

/// A note a line on a template's figures.
fn figure_notes(report: &Closing) -> String {
    report
        .rows
        .iter()
        .flat_map(|t| {
            t.notes()
                .into_iter()
                .map(move |n| format!("note: {}: {n}\n", t.path))
        })
        .collect()
}

fn table(report: &Closing, narrow: Option<usize>) -> String {
    let costs = report.rows.iter().any(|r| r.cost.is_some());
    let mut headers = vec![
        "template",
        "renders",
        "tokens",
        "shared prefix",
        "engine caches",
        "cacheable",
        "recoverable",
        "findings",
    ];
    if costs {
        headers.push("cost / 1k requests");
    }
    let rows: Vec<Vec<String>> = report
        .rows
        .iter()
        .map(|a| {
            let tokens = if a.tokens_min == a.tokens_max {
                thousands(a.tokens_min)
            } else {
                format!("{}–{}", thousands(a.tokens_min), thousands(a.tokens_max))
            };
            let mut row = vec![
                a.path.clone(),
                a.samples.to_string(),
                tokens,
                thousands(a.shared_prefix_tokens),
                thousands(a.cached_tokens_expected),
                format!("{:.1}%", a.cacheable_percent()),
                thousands(a.recoverable_tokens),
                a.severities.len().to_string(),
            ];
            if costs {
                row.push(a.cost.as_ref().map_or("–".into(), |c| c.short()));
            }
            row
        })
        .collect();
    let headers: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
    let (headers, rows) = match narrow {
        Some(width) => fit_table(headers, rows, width),
        None => (headers, rows),
    };
    let widths = column_widths(&headers, &rows);
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, (cell, &w)) in cells.iter().zip(&widths).enumerate() {
            let pad = w - cell.chars().count();
            if i == 0 {
                s.push_str(&format!("{cell}{}", " ".repeat(pad)));
            } else {
                s.push_str(&format!("  {}{cell}", " ".repeat(pad)));
            }
        }
        s.trim_end().to_owned() + "\n"
    };
    let mut out = line(&headers);
    out.push_str(&line(
        &widths.iter().map(|&w| "─".repeat(w)).collect::<Vec<_>>(),
    ));
    for row in &rows {
        out.push_str(&line(row));
    }
    out
}

fn column_widths(headers: &[String], rows: &[Vec<String>]) -> Vec<usize> {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    widths
}

/// The columns left out first when the table is wider than the terminal: the figures the
/// others imply or that `--format json` has, most derivable first. The template, its shared
/// prefix, the share cacheable and the findings stay.
const DROPPED_FIRST: [&str; 5] = [
    "renders",
    "engine caches",
    "recoverable",
    "tokens",
    "cost / 1k requests",
];

/// Columns between two cells.
const GAP: usize = 2;

/// The table within `width`: columns dropped in [`DROPPED_FIRST`]'s order until it fits,
/// then the template paths wrapped onto more lines (at `/` where one falls in the room).
fn fit_table(
    mut headers: Vec<String>,
    mut rows: Vec<Vec<String>>,
    width: usize,
) -> (Vec<String>, Vec<Vec<String>>) {
    let total = |headers: &[String], rows: &[Vec<String>]| -> usize {
        let widths = column_widths(headers, rows);
        widths.iter().sum::<usize>() + GAP * widths.len().saturating_sub(1)
    };
    for name in DROPPED_FIRST {
        if total(&headers, &rows) <= width {
            break;
        }
        if let Some(i) = headers.iter().position(|h| h == name) {
            headers.remove(i);
            for row in &mut rows {
                row.remove(i);
            }
        }
    }
    let others = total(
        &headers[1..],
        &rows.iter().map(|r| r[1..].to_vec()).collect::<Vec<_>>(),
    );
    let room = width
        .saturating_sub(others + GAP)
        .max(headers[0].chars().count());
    let mut fitted = Vec::with_capacity(rows.len());
    for row in rows {
        let mut pieces = wrap_path(&row[0], room).into_iter();
        let mut first = row;
        first[0] = pieces.next().unwrap_or_default();
        fitted.push(first);
        for piece in pieces {
            let mut continued = vec![String::new(); headers.len()];
            continued[0] = format!("  {piece}");
            fitted.push(continued);
        }
    }
    (headers, fitted)
}

/// A path in pieces of at most `room` characters (the first) and `room - 2` (the others,
/// which are indented), broken after a `/` where one falls in the piece.
fn wrap_path(path: &str, room: usize) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut rest: Vec<char> = path.chars().collect();
    let mut limit = room.max(4);
    while rest.len() > limit {
        let cut = rest[..limit]
            .iter()
            .rposition(|&c| c == '/')
            .map_or(limit, |slash| slash + 1);
        pieces.push(rest[..cut].iter().collect());
        rest.drain(..cut);
        limit = room.saturating_sub(2).max(4);
    }
    pieces.push(rest.into_iter().collect());
    pieces
}
