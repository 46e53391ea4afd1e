use super::CheckReport;

/// `path:line:col: CODE message`, one finding a line, as problem matchers expect.
pub fn render(report: &CheckReport) -> String {
    let mut out = String::new();
    for (template, finding) in report.findings() {
        let pos = template.position(finding);
        out.push_str(&format!(
            "{}:{}:{}: {} [{}] {}\n",
            template.path,
            pos.line,
            pos.column,
            finding.rule.code,
            finding.severity.as_str(),
            finding.message
        ));
    }
    out
}
