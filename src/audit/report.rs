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

/// One SARIF result per break, located at the log line of the request.
fn sarif(report: &AuditReport) -> String {
    let results: Vec<serde_json::Value> = report
        .requests
        .iter()
        .filter_map(|r| {
            let b = r.break_.as_ref()?;
            Some(json!({
                "ruleId": format!("audit/{}", b.cause),
                "level": "warning",
                "message": {"text": format!(
                    "the prefix breaks at {} (char {}): {}; {} tokens of the previous request computed again",
                    b.path, b.offset, b.cause, b.tokens_lost)},
                "locations": [{"physicalLocation": {
                    "artifactLocation": {"uri": r.file},
                    "region": {"startLine": r.line}
                }}],
                "properties": {"tokens_lost": b.tokens_lost, "path": b.path, "session": r.session}
            }))
        })
        .collect();
    let rules: Vec<serde_json::Value> = super::breaks::CAUSES
        .iter()
        .map(|c| json!({"id": format!("audit/{c}"), "shortDescription": {"text": format!("prefix break: {c}")}}))
        .collect();
    let sarif = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "prefixlint", "version": env!("CARGO_PKG_VERSION"), "rules": rules}},
            "results": results
        }]
    });
    let mut text = serde_json::to_string_pretty(&sarif).expect("SARIF serializes");
    text.push('\n');
    text
}
