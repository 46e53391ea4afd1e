//! GitHub Actions workflow commands (`::error file=..::message`), which the runner turns into
//! annotations on the pull request, and the Markdown job summary.

use super::{CheckReport, Closing, TemplateReport};
use crate::fmt::thousands;
use crate::rules::Severity;

/// One `::group::` per template with findings, one annotation per finding.
pub fn render(report: &CheckReport) -> String {
    let mut out: String = report.templates.iter().map(template_group).collect();
    out.push_str(&render_tail(&report.closing(&report.rows())));
    out
}

/// A template's annotations, in a group; nothing when it has no finding. Written as soon as
/// the template is checked.
pub fn template_group(template: &TemplateReport) -> String {
    let mut out = String::new();
    if template.findings.is_empty() {
        return out;
    }
    out.push_str(&format!("::group::{}\n", escape_data(&template.path)));
    for finding in &template.findings {
        let pos = template.position(finding);
        let command = match finding.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "notice",
        };
        let title = format!("{} ({})", finding.rule.code, finding.rule.name);
        // The location is repeated in the message: logs show the message, not the properties.
        let mut message = format!(
            "{}:{}:{}: {}",
            template.path, pos.line, pos.column, finding.message
        );
        if !finding.help.is_empty() {
            message.push_str(&format!("\nhelp: {}", finding.help));
        }
        message.push_str(&format!("\ndocs: {}", finding.rule.url()));
        out.push_str(&format!(
            "::{command} file={},line={},col={},endLine={},endColumn={},title={}::{}\n",
            escape_property(&template.path),
            pos.line,
            pos.column,
            pos.end_line,
            pos.end_column,
            escape_property(&title),
            escape_data(&message),
        ));
    }
    out.push_str("::endgroup::\n");
    out
}

/// What follows the templates' groups: failures, notes, skipped files and the counts.
pub fn render_tail(report: &Closing) -> String {
    let mut out = String::new();
    for failure in report.errors.iter() {
        out.push_str(&format!("::group::{}\n", escape_data(&failure.path)));
        let (line, column) = failure.line_column();
        let mut message = format!("{}:{line}:{column}: {}", failure.path, failure.message);
        if let Some(help) = failure.help() {
            message.push_str(&format!("\nhelp: {help}"));
        }
        out.push_str(&format!(
            "::error file={},line={line},col={column},title={}::{}\n",
            escape_property(&failure.path),
            escape_property("prefixlint: template could not be checked"),
            escape_data(&message),
        ));
        out.push_str("::endgroup::\n");
    }
    for template in report.rows {
        for note in template.notes() {
            out.push_str(&format!(
                "::notice file={},line=1,col=1,title={}::{}\n",
                escape_property(&template.path),
                escape_property("prefixlint: note"),
                escape_data(&format!("{}: {note}", template.path)),
            ));
        }
    }
    // Money where fixing the findings would save some: a notice on the template.
    for template in report.rows {
        if let Some(cost) = template.cost.as_ref().filter(|c| c.fixed < c.now) {
            out.push_str(&format!(
                "::notice file={},line=1,col=1,title={}::{}\n",
                escape_property(&template.path),
                escape_property("prefixlint: cost"),
                escape_data(&format!("{}: {}", template.path, cost.sentence())),
            ));
        }
    }
    // A hosted API's figures say the date of their data and whether counts are exact.
    if let Some(engine) = report.engine.filter(|e| e.hosted.is_some()) {
        out.push_str(&format!(
            "prefixlint: engine caches = {}\n",
            engine.describe()
        ));
    }
    // Prompt-like text that was not checked is annotated where it is: no silent pass.
    for place in report.unchecked.iter() {
        out.push_str(&format!(
            "::warning file={},line={},col=1,title={}::{}\n",
            escape_property(&place.path),
            place.line,
            escape_property("prefixlint: prompt not checked"),
            escape_data(&format!("{}:{}: {}", place.path, place.line, place.reason)),
        ));
    }
    // Skipped files are no problem to annotate: the log lists them.
    for skipped in report.skipped.iter() {
        out.push_str(&format!(
            "prefixlint: skipped {}: {}\n",
            skipped.path, skipped.reason
        ));
    }
    out.push_str(&format!("prefixlint: {}\n", report.counts()));
    out
}

/// The job summary: one table row per template (appended to `$GITHUB_STEP_SUMMARY`).
pub fn step_summary(report: &CheckReport) -> String {
    step_summary_of(&report.closing(&report.rows()))
}

/// [`step_summary`] of a run's closing view (a streamed report keeps only that).
pub fn step_summary_of(report: &Closing) -> String {
    let mut out = String::from("### prefixlint\n\n");
    if !report.errors.is_empty() {
        out.push_str("| template that could not be checked | error |\n| --- | --- |\n");
        for failure in report.errors.iter() {
            let (line, column) = failure.line_column();
            out.push_str(&format!(
                "| `{}:{line}:{column}` | {} |\n",
                markdown_cell(&failure.path),
                markdown_cell(&failure.message).replace('\n', " ")
            ));
        }
        out.push('\n');
    }
    if report.rows.is_empty() {
        out.push_str("No templates checked.\n");
        return out;
    }
    let costs = report.rows.iter().any(|r| r.cost.is_some());
    out.push_str(
        "| template | tokens | shared prefix | % cacheable | recoverable tokens | findings |",
    );
    out.push_str(if costs {
        " cost / 1,000 requests (now → fixed) |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n"
    } else {
        "\n| --- | ---: | ---: | ---: | ---: | ---: |\n"
    });
    for a in report.rows {
        let tokens = if a.tokens_min == a.tokens_max {
            thousands(a.tokens_min)
        } else {
            format!("{}–{}", thousands(a.tokens_min), thousands(a.tokens_max))
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {:.1}% | {} | {} |",
            markdown_cell(&a.path),
            tokens,
            thousands(a.shared_prefix_tokens),
            a.cacheable_percent(),
            thousands(a.recoverable_tokens),
            a.severities.len()
        ));
        if costs {
            let cell = a.cost.as_ref().map_or("–".into(), |c| c.short());
            out.push_str(&format!(" {cell} |"));
        }
        out.push('\n');
    }
    out.push('\n');
    out
}

/// Escaping for a command's message, as the runner's toolkit does it.
pub fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escaping for a property value (`file=`, `title=`): also `:` and `,`, which delimit properties.
pub fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

fn markdown_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('`', "'")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_the_actions_toolkit() {
        assert_eq!(escape_data("50%\r\ndone"), "50%25%0D%0Adone");
        assert_eq!(escape_property("a:b,c%"), "a%3Ab%2Cc%25");
    }
}
