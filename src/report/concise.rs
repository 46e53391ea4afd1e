use super::CheckReport;

/// `path:line:col: CODE message`, one finding a line, as problem matchers expect. The
/// shape is a contract; the severity is in the other formats.
pub fn render(report: &CheckReport) -> String {
    let mut out = String::new();
    for (template, finding) in report.findings() {
        let pos = template.position(finding);
        out.push_str(&format!(
            "{}:{}:{}: {} {}\n",
            template.path, pos.line, pos.column, finding.rule.code, finding.message
        ));
    }
    out
}
