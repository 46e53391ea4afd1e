//! The audit report: full (text for people), JSON (the versioned contract) and SARIF.

use super::AuditReport;
use crate::error::Result;
use crate::fmt::thousands;
use serde_json::json;
use std::fmt::Write as _;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AuditFormat {
    Full,
    Json,
    Sarif,
}

pub fn render(report: &AuditReport, format: AuditFormat) -> Result<String> {
    Ok(match format {
        AuditFormat::Full => full(report),
        AuditFormat::Json => {
            let mut text = serde_json::to_string_pretty(report).expect("the report serializes");
            text.push('\n');
            text
        }
        AuditFormat::Sarif => sarif(report),
    })
}

fn percent(part: usize, whole: usize) -> String {
    if whole == 0 {
        "0%".into()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

fn full(report: &AuditReport) -> String {
    let mut out = String::new();
    let s = &report.summary;
    for r in &report.requests {
        let Some(b) = &r.break_ else { continue };
        let session = r
            .session
            .as_deref()
            .map(|s| format!(" session {s}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{}:{}:{session}: {} break at {}, char {}: {} tokens lost",
            r.file,
            r.line,
            b.cause,
            b.path,
            b.offset,
            thousands(b.tokens_lost)
        );
        let _ = writeln!(
            out,
            "    was: {}",
            serde_json::to_string(&b.before).unwrap_or_default()
        );
        let _ = writeln!(
            out,
            "    now: {}",
            serde_json::to_string(&b.after).unwrap_or_default()
        );
        if let Some(t) = &b.template {
            let _ = writeln!(
                out,
                "    written by {}:{}:{}: {} {} `{}`",
                t.file, t.line, t.column, t.rule, t.rule_name, t.expression
            );
        }
    }
    if !out.is_empty() {
        out.push('\n');
    }
    let _ = writeln!(out, "engine: {}", report.engine);
    let _ = writeln!(
        out,
        "requests: {}   prompt tokens: {}",
        thousands(s.requests),
        thousands(s.prompt_tokens)
    );
    let _ = writeln!(
        out,
        "predicted cached: {} ({})",
        thousands(s.predicted_cached_tokens),
        percent(s.predicted_cached_tokens, s.prompt_tokens)
    );
    if s.requests_with_logged_cache > 0 {
        let _ = writeln!(
            out,
            "logged cached:    {} ({} requests with a count)",
            thousands(s.logged_cached_tokens),
            thousands(s.requests_with_logged_cache)
        );
    }
    if s.tokens_lost_by_cause.is_empty() {
        let _ = writeln!(out, "breaks: none");
    } else {
        let causes: Vec<String> = s
            .tokens_lost_by_cause
            .iter()
            .map(|(cause, n)| format!("{cause} {}", thousands(*n)))
            .collect();
        let _ = writeln!(
            out,
            "breaks: {}   tokens lost by cause: {}",
            s.breaks,
            causes.join(", ")
        );
    }
    if !s.worst_sessions.is_empty() {
        let worst: Vec<String> = s
            .worst_sessions
            .iter()
            .map(|w| format!("{} ({} lost)", w.session, thousands(w.tokens_lost)))
            .collect();
        let _ = writeln!(out, "worst sessions: {}", worst.join(", "));
    }
    if !s.missed_hits.is_empty() {
        let _ = writeln!(
            out,
            "shared a prefix but got no hit: {} requests",
            s.missed_hits.len()
        );
    }
    if s.skipped_lines > 0 {
        let _ = writeln!(out, "skipped lines: {}", s.skipped_lines);
        for k in &s.skipped {
            let _ = writeln!(out, "    {}:{}: {}", k.file, k.line, k.reason);
        }
    }
    out
}

/// One SARIF result per break: at the template line that wrote it (`--templates`), as a
/// `check` diagnostic, else at the log line under an `audit/CAUSE` rule.
fn sarif(report: &AuditReport) -> String {
    use crate::report::sarif::{hex, rule_descriptor, uri, FINGERPRINT_KEY, SCHEMA};
    use sha2::{Digest, Sha256};
    let results: Vec<serde_json::Value> = report
        .requests
        .iter()
        .filter_map(|r| {
            let b = r.break_.as_ref()?;
            let log = json!({"physicalLocation": {
                "artifactLocation": {"uri": uri(&r.file)},
                "region": {"startLine": r.line}
            }});
            let (rule, location, related, place) = match &b.template {
                Some(t) => (
                    t.rule.to_owned(),
                    json!({"physicalLocation": {
                        "artifactLocation": {"uri": uri(&t.file)},
                        "region": {"startLine": t.line, "startColumn": t.column}
                    }}),
                    json!([log]),
                    format!("{}:{}", t.file, t.expression),
                ),
                None => (
                    format!("audit/{}", b.cause),
                    log,
                    json!([]),
                    format!("{}:{}", r.file, b.path),
                ),
            };
            let fingerprint = hex(&Sha256::digest(format!("{rule}\0{place}\0{}", r.line)));
            Some(json!({
                "ruleId": rule,
                "level": "warning",
                "message": {"text": format!(
                    "The prefix breaks at {} (char {}): {}; {} tokens of the previous request are computed again.",
                    b.path, b.offset, b.cause, b.tokens_lost)},
                "locations": [location],
                "relatedLocations": related,
                "partialFingerprints": {FINGERPRINT_KEY: fingerprint},
                "properties": {"tokens_lost": b.tokens_lost, "path": b.path, "session": r.session}
            }))
        })
        .collect();
    let mut rules: Vec<serde_json::Value> =
        crate::rules::all().iter().map(rule_descriptor).collect();
    for cause in super::breaks::CAUSES {
        let text =
            format!("A logged request stops extending the previous one of its session: {cause}.");
        rules.push(json!({
            "id": format!("audit/{cause}"),
            "name": format!("AuditBreak{}", cause.split('-').map(|w| w[..1].to_uppercase() + &w[1..]).collect::<String>()),
            "shortDescription": {"text": format!("Prefix break in traffic: {cause}.")},
            "fullDescription": {"text": text},
            "help": {"text": text, "markdown": text},
            "defaultConfiguration": {"level": "warning"},
            "properties": {"tags": ["prefix-cache", "audit"]}
        }));
    }
    let sarif = json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "prefixlint",
                "version": env!("CARGO_PKG_VERSION"),
                "semanticVersion": env!("CARGO_PKG_VERSION"),
                "informationUri": env!("CARGO_PKG_REPOSITORY"),
                "rules": rules
            }},
            "columnKind": "unicodeCodePoints",
            "results": results
        }]
    });
    let mut text = serde_json::to_string_pretty(&sarif).expect("SARIF serializes");
    text.push('\n');
    text
}
