use super::{CheckReport, Closing, TemplateReport};

/// `path:line:col: CODE message`, one finding a line, as problem matchers expect. The
/// shape is a contract; the severity is in the other formats. A template that could not
/// be checked is `path:line:col: error: message`; a note on the figures, or on a file
/// that was skipped, is `path:1:1: note: message`.
pub fn render(report: &CheckReport) -> String {
    let findings: String = report.templates.iter().map(finding_lines).collect();
    render_around(&report.closing(&report.rows()), &findings)
}

/// One template's finding lines: written as soon as the template is checked, and printed
/// after the failures.
pub fn finding_lines(template: &TemplateReport) -> String {
    let mut out = String::new();
    for finding in &template.findings {
        let pos = template.position(finding);
        out.push_str(&format!(
            "{}:{}:{}: {} {}\n",
            template.path, pos.line, pos.column, finding.rule.code, finding.message
        ));
    }
    out
}

/// The whole output around the finding lines of every template: failures first, then the
/// findings, the notes on figures and the skipped files.
pub fn render_around(report: &Closing, finding_lines: &str) -> String {
    render_findings(report, finding_lines) + &notes(report)
}

/// The failures and the finding lines, without the notes (`--quiet`).
pub fn render_findings(report: &Closing, finding_lines: &str) -> String {
    let mut out = String::new();
    for failure in report.errors.iter() {
        let (line, column) = failure.line_column();
        out.push_str(&format!(
            "{}:{line}:{column}: error: {}\n",
            failure.path,
            one_line(&failure.message)
        ));
    }
    out.push_str(finding_lines);
    out
}

/// The notes on the figures and on the skipped files.
fn notes(report: &Closing) -> String {
    let mut out = String::new();
    for template in report.rows {
        for note in template.notes() {
            out.push_str(&format!("{}:1:1: note: {note}\n", template.path));
        }
        if let Some(cost) = &template.cost {
            out.push_str(&format!(
                "{}:1:1: note: cost: {}\n",
                template.path,
                cost.sentence()
            ));
        }
    }
    for skipped in report.skipped.iter() {
        out.push_str(&format!(
            "{}:1:1: note: skipped: {}\n",
            skipped.path, skipped.reason
        ));
    }
    for place in report.unchecked.iter() {
        out.push_str(&format!(
            "{}:{}:1: warning: unchecked: {}\n",
            place.path, place.line, place.reason
        ));
    }
    out
}

/// Problem matchers read one line per problem.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
