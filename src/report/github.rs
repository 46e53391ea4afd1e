//! GitHub Actions workflow commands (`::error file=..::message`), which the runner turns into
//! annotations on the pull request, and the Markdown job summary.

use super::CheckReport;
use crate::rules::{thousands, Severity};

/// One `::group::` per template with findings, one annotation per finding.
pub fn render(report: &CheckReport) -> String {
    let mut out = String::new();
    for template in report.templates.iter().filter(|t| !t.findings.is_empty()) {
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
    }
    let findings = report.findings().count();
    out.push_str(&format!(
        "prefixlint: {} template{} checked, {} finding{}\n",
        report.templates.len(),
        plural(report.templates.len()),
        findings,
        plural(findings)
    ));
    out
}

/// The job summary: one table row per template (appended to `$GITHUB_STEP_SUMMARY`).
pub fn step_summary(report: &CheckReport) -> String {
    let mut out = String::from("### prefixlint\n\n");
    if report.templates.is_empty() {
        out.push_str("No templates checked.\n");
        return out;
    }
    out.push_str(
        "| template | tokens | shared prefix | % cacheable | recoverable tokens | findings |\n",
    );
    out.push_str("| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for t in &report.templates {
        let a = &t.analysis;
        let tokens = if a.tokens_min == a.tokens_max {
            thousands(a.tokens_min)
        } else {
            format!("{}–{}", thousands(a.tokens_min), thousands(a.tokens_max))
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {:.1}% | {} | {} |\n",
            markdown_cell(&t.path),
            tokens,
            thousands(a.shared_prefix_tokens),
            a.cacheable_percent(),
            thousands(a.recoverable_tokens),
            t.findings.len()
        ));
    }
    out.push('\n');
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
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
