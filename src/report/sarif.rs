//! SARIF 2.1.0, in the shape GitHub code scanning ingests: every rule in `tool.driver.rules`,
//! one result per finding with a repo-relative location and a fingerprint that survives
//! edits elsewhere in the file.

use super::{CheckReport, Closing, TemplateReport};
use crate::rules::{self, Finding, RuleMeta, Severity};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;

pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
pub const FINGERPRINT_KEY: &str = "prefixlint/v1";

pub fn render(report: &CheckReport) -> String {
    let mut out = serde_json::to_string_pretty(&to_sarif(report)).unwrap_or_default();
    out.push('\n');
    out
}

pub fn to_sarif(report: &CheckReport) -> Value {
    let results = report.templates.iter().flat_map(template_results).collect();
    document(&report.closing(&report.rows()), results)
}

/// One template's results: computed as soon as the template is checked, since the
/// fingerprints and snippets read its source.
pub fn template_results(template: &TemplateReport) -> Vec<Value> {
    let rules = rules::all();
    // Identical findings on identical lines get distinct fingerprints by occurrence.
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut results = Vec::new();
    for finding in &template.findings {
        let base = fingerprint_base(template, finding);
        let occurrence = seen.entry(base.clone()).or_insert(0);
        *occurrence += 1;
        results.push(result(template, finding, rules, &base, *occurrence));
    }
    results
}

/// The SARIF document around the results of every template.
pub fn document(report: &Closing, results: Vec<Value>) -> Value {
    let rules = rules::all();
    let mut document = json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "prefixlint",
                    "version": env!("CARGO_PKG_VERSION"),
                    "semanticVersion": env!("CARGO_PKG_VERSION"),
                    "informationUri": env!("CARGO_PKG_REPOSITORY"),
                    "rules": rules.iter().map(rule_descriptor).collect::<Vec<_>>(),
                }
            },
            // Our columns count characters (Unicode scalar values), not UTF-16 units.
            "columnKind": "unicodeCodePoints",
            "invocations": [invocation(report)],
            "results": results,
        }]
    });
    let properties = run_properties(report);
    if properties.as_object().is_some_and(|p| !p.is_empty()) {
        document["runs"][0]["properties"] = properties;
    }
    document
}

/// The run's figures that belong to no finding: the hosted API's data (its date, what was
/// picked where sources disagree, whether the counts are exact) and each template's cost.
fn run_properties(report: &Closing) -> Value {
    let mut properties = json!({});
    if let Some(engine) = report.engine.filter(|e| e.hosted.is_some()) {
        properties["engine"] = json!(super::json::engine(engine));
    }
    let costs: Vec<Value> = report
        .rows
        .iter()
        .filter_map(|row| {
            let cost = row.cost.as_ref()?;
            Some(json!({"path": row.path, "cost": super::json::cost(cost)}))
        })
        .collect();
    if !costs.is_empty() {
        properties["costs"] = json!(costs);
    }
    properties
}

/// The run itself: unsuccessful when a template could not be checked, with one
/// notification per such template (and one per note on a template's figures).
fn invocation(report: &Closing) -> Value {
    let mut notifications = Vec::new();
    for failure in report.errors {
        let mut text = sentence(&failure.message);
        if let Some(help) = failure.help() {
            text.push_str(&format!(" Help: {}", sentence(&help)));
        }
        let mut location = json!({ "artifactLocation": { "uri": uri(&failure.path) } });
        if let Some(pos) = failure.location {
            location["region"] = json!({
                "startLine": pos.line,
                "startColumn": pos.column,
                "endLine": pos.end_line,
                "endColumn": if pos.end_line == pos.line { pos.end_column.max(pos.column + 1) } else { pos.end_column },
            });
        }
        notifications.push(json!({
            "level": "error",
            "message": { "text": text },
            "descriptor": { "id": "template-error" },
            "locations": [{ "physicalLocation": location }],
        }));
    }
    for template in report.rows {
        for note in template.notes() {
            notifications.push(json!({
                "level": "note",
                "message": { "text": sentence(&note) },
                "descriptor": { "id": "template-note" },
                "locations": [{ "physicalLocation": {
                    "artifactLocation": { "uri": uri(&template.path) },
                    "region": { "startLine": 1, "startColumn": 1 },
                } }],
            }));
        }
    }
    for skipped in report.skipped {
        notifications.push(json!({
            "level": "note",
            "message": { "text": sentence(&format!("skipped: {}", skipped.reason)) },
            "descriptor": { "id": "template-skipped" },
            "locations": [{ "physicalLocation": {
                "artifactLocation": { "uri": uri(&skipped.path) },
            } }],
        }));
    }
    for place in report.unchecked {
        notifications.push(json!({
            "level": "warning",
            "message": { "text": sentence(&format!("prompt not checked: {}", place.reason)) },
            "descriptor": { "id": "template-unchecked" },
            "locations": [{ "physicalLocation": {
                "artifactLocation": { "uri": uri(&place.path) },
                "region": { "startLine": place.line, "startColumn": 1 },
            } }],
        }));
    }
    json!({
        "executionSuccessful": report.errors.is_empty(),
        "toolExecutionNotifications": notifications,
    })
}

pub(crate) fn rule_descriptor(rule: &RuleMeta) -> Value {
    json!({
        "id": rule.code,
        // SARIF's convention for the friendly name is PascalCase; tags keep the kebab-case name.
        "name": pascal_case(&rule.name),
        "shortDescription": { "text": sentence(&first_sentence(&rule.summary)) },
        "fullDescription": { "text": sentence(&rule.summary) },
        "help": {
            "text": format!("{}\n\n{}", sentence(&rule.summary), rule.docs.trim_end()),
            "markdown": format!("{}\n\n{}", sentence(&rule.summary), rule.docs.trim_end()),
        },
        "helpUri": rule.url(),
        "defaultConfiguration": { "level": level(rule.severity) },
        "properties": { "tags": ["prefix-cache", rule.name] },
    })
}

fn result(
    template: &TemplateReport,
    finding: &Finding,
    rules: &[RuleMeta],
    fingerprint_base: &str,
    occurrence: usize,
) -> Value {
    let pos = template.position(finding);
    let rule_index = rules
        .iter()
        .position(|r| r.code == finding.rule.code)
        .unwrap_or(0);
    let mut text = sentence(&finding.message);
    if !finding.help.is_empty() {
        text.push_str(&format!(" Help: {}", sentence(&finding.help)));
    }
    let fingerprint = hex(&Sha256::digest(format!("{fingerprint_base}\0{occurrence}")));
    json!({
        "ruleId": finding.rule.code,
        "ruleIndex": rule_index,
        "level": level(finding.severity),
        "message": { "text": text },
        "locations": [{
            "physicalLocation": {
                "artifactLocation": { "uri": uri(&template.path) },
                "region": {
                    "startLine": pos.line,
                    "startColumn": pos.column,
                    "endLine": pos.end_line,
                    // SARIF regions are end-exclusive; keep at least one character.
                    "endColumn": if pos.end_line == pos.line { pos.end_column.max(pos.column + 1) } else { pos.end_column },
                    "snippet": { "text": snippet(template, finding) },
                }
            },
            "message": { "text": sentence(&finding.label) },
        }],
        "partialFingerprints": { FINGERPRINT_KEY: fingerprint },
    })
}

/// What identifies a finding across commits: its rule, file, and the text of its line
/// (not the line number, which moves when lines above change).
fn fingerprint_base(template: &TemplateReport, finding: &Finding) -> String {
    let source = &template.source;
    let start = finding.span.start.min(source.len());
    let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = source[start..]
        .find('\n')
        .map_or(source.len(), |i| start + i);
    format!(
        "{}\0{}\0{}",
        finding.rule.code,
        template.path,
        source[line_start..line_end].trim()
    )
}

/// The template text of the finding's span.
fn snippet(template: &TemplateReport, finding: &Finding) -> String {
    let source = &template.source;
    let start = finding.span.start.min(source.len());
    let end = finding.span.end.clamp(start, source.len());
    source.get(start..end).unwrap_or_default().to_owned()
}

fn pascal_case(kebab: &str) -> String {
    kebab
        .split(['-', '_'])
        .map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

pub fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// A relative path as a URI reference: `/`-separated, with reserved characters escaped.
pub(crate) fn uri(path: &str) -> String {
    let mut out = String::new();
    for byte in path.replace('\\', "/").bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out.trim_start_matches("./").to_owned()
}

fn first_sentence(text: &str) -> String {
    match text.find(". ") {
        Some(i) => text[..=i].to_owned(),
        None => text.to_owned(),
    }
}

/// SARIF's guidance: messages are complete sentences ending with a period.
fn sentence(text: &str) -> String {
    let text = text.trim();
    if text.ends_with(['.', '!', '?']) {
        text.to_owned()
    } else {
        format!("{text}.")
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_relative_and_escaped() {
        assert_eq!(uri("./prompts/a b.j2"), "prompts/a%20b.j2");
        assert_eq!(uri("prompts\\x.j2"), "prompts/x.j2");
    }

    #[test]
    fn rule_names_become_pascal_case() {
        assert_eq!(
            pascal_case("volatile-before-stable"),
            "VolatileBeforeStable"
        );
    }

    #[test]
    fn sentences_end_with_a_period() {
        assert_eq!(sentence("a thing"), "a thing.");
        assert_eq!(sentence("done."), "done.");
    }
}
