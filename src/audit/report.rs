//! The audit report: full (text for people), JSON (the versioned contract) and SARIF.
//!
//! [`AuditWriter`] writes it as the requests come, keeping nothing per request: a request's
//! JSON entry, break lines or SARIF result go out at once, and the closing part is written
//! from the [`Summary`]. The output is byte for byte what [`render`] writes for the whole
//! report.

use super::{AuditReport, Entry, Head, NotAudited, RequestAudit, Summary};
use crate::error::Result;
use crate::fmt::thousands;
use crate::report::json::{list_element, pretty, write_list_element, write_pretty};
use serde_json::json;
use std::fmt::Write as _;
use std::io::{self, Write};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AuditFormat {
    Full,
    Json,
    Sarif,
}

/// The whole report at once (the command streams it with [`AuditWriter`]).
pub fn render(report: &AuditReport, format: AuditFormat) -> Result<String> {
    Ok(match format {
        AuditFormat::Full => {
            let mut out = String::new();
            for entry in report.entries() {
                out.push_str(&match entry {
                    Entry::Audited(r) => break_lines(r),
                    Entry::NotAudited(n) => not_audited_line(n),
                });
            }
            out.push_str(&full_summary(
                !out.is_empty(),
                &report.engine,
                &report.summary,
            ));
            out
        }
        AuditFormat::Json => {
            let mut text = serde_json::to_string_pretty(report).expect("the report serializes");
            text.push('\n');
            text
        }
        AuditFormat::Sarif => {
            let results = report
                .entries()
                .filter_map(|entry| match entry {
                    Entry::Audited(r) => sarif_result(r),
                    Entry::NotAudited(n) => Some(sarif_failure(n)),
                })
                .collect();
            let mut text = serde_json::to_string_pretty(&sarif_document(
                results,
                report.summary.cost.as_ref(),
            ))
            .expect("SARIF serializes");
            text.push('\n');
            text
        }
    })
}

/// The report written a request at a time.
pub struct AuditWriter<W: Write> {
    format: AuditFormat,
    head: Head,
    out: W,
    /// The opening is written with the first request, so a run that reads none (an error)
    /// writes nothing.
    started: bool,
    /// Entries written in the open list (JSON requests, SARIF results), or break lines.
    written: usize,
    /// SARIF: the document around its results.
    around: Option<Around>,
    /// A request's JSON, made before it is written.
    scratch: Vec<u8>,
}

impl<W: Write> AuditWriter<W> {
    pub fn new(format: AuditFormat, head: Head, out: W) -> Self {
        AuditWriter {
            format,
            head,
            out,
            started: false,
            written: 0,
            around: None,
            scratch: Vec::new(),
        }
    }

    fn start(&mut self) -> io::Result<()> {
        if self.started {
            return Ok(());
        }
        self.started = true;
        match self.format {
            AuditFormat::Full => Ok(()),
            AuditFormat::Json => {
                let head = format!(
                    "{{\n  \"version\": {},\n  \"engine\": {},\n  \"chat_template\": {},\n  \"requests\": [",
                    self.head.version,
                    pretty(&self.head.engine, 1),
                    pretty(&self.head.chat_template, 1)
                );
                self.out.write_all(head.as_bytes())
            }
            AuditFormat::Sarif => {
                // The cost, known at the end, follows the results: the part before them is
                // the same with or without it.
                let around = Around::of(&sarif_document(vec![json!(Around::MARK)], None));
                self.out.write_all(around.before.as_bytes())?;
                self.around = Some(around);
                Ok(())
            }
        }
    }

    /// Writes what the report says about one request, audited or not.
    pub fn entry(&mut self, entry: Entry<'_>) -> io::Result<()> {
        match entry {
            Entry::Audited(r) => self.request(r),
            Entry::NotAudited(n) => self.not_audited(n),
        }
    }

    /// A request that could not be audited: a line (full), a SARIF result (error), and in
    /// JSON its entry in the summary's `not_audited`.
    pub fn not_audited(&mut self, n: &NotAudited) -> io::Result<()> {
        self.start()?;
        let text = match self.format {
            AuditFormat::Full => {
                self.written += 1;
                not_audited_line(n)
            }
            AuditFormat::Json => String::new(),
            AuditFormat::Sarif => list_element(&mut self.written, &sarif_failure(n), 4),
        };
        self.out.write_all(text.as_bytes())
    }

    /// Writes what the report says about one audited request.
    pub fn request(&mut self, r: &RequestAudit) -> io::Result<()> {
        self.start()?;
        let text = match self.format {
            AuditFormat::Full => break_lines(r),
            // Serialized into one buffer kept for the run (this is the serial thread).
            AuditFormat::Json => {
                self.scratch.clear();
                write_list_element(&mut self.scratch, &mut self.written, r, 2)?;
                return self.out.write_all(&self.scratch);
            }
            AuditFormat::Sarif => match sarif_result(r) {
                Some(result) => list_element(&mut self.written, &result, 4),
                None => String::new(),
            },
        };
        if self.format == AuditFormat::Full && !text.is_empty() {
            self.written += 1;
        }
        self.out.write_all(text.as_bytes())
    }

    /// Writes the closing part; returns the writer.
    pub fn finish(mut self, summary: &Summary) -> io::Result<W> {
        self.start()?;
        match self.format {
            AuditFormat::Full => {
                let text = full_summary(self.written > 0, &self.head.engine, summary);
                self.out.write_all(text.as_bytes())?;
            }
            AuditFormat::Json => {
                let close = if self.written == 0 { "]" } else { "\n  ]" };
                write!(self.out, "{close},\n  \"summary\": ")?;
                // Streamed: the missed hits are read back from their file as they are written.
                write_pretty(&mut self.out, summary, 1)?;
                self.out.write_all(b"\n}\n")?;
            }
            AuditFormat::Sarif => {
                let around = match &summary.cost {
                    Some(cost) => {
                        Around::of(&sarif_document(vec![json!(Around::MARK)], Some(cost)))
                    }
                    None => self.around.take().expect("started"),
                };
                let after = if self.written == 0 {
                    around.after_empty()
                } else {
                    &around.after
                };
                self.out.write_all(after.as_bytes())?;
            }
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

/// A pretty-printed document split around the one list written as it comes: everything up
/// to its `[`, and everything from the line break before its `]`.
struct Around {
    before: String,
    after: String,
}

impl Around {
    /// The placeholder element the document is printed with.
    const MARK: &'static str = "\u{0}prefixlint-stream";

    fn of(document: &serde_json::Value) -> Around {
        let text = serde_json::to_string_pretty(document).expect("the document serializes");
        let mark = serde_json::to_string(Around::MARK).expect("a string serializes");
        let at = text
            .find(&mark)
            .expect("the placeholder is in the document");
        let open = text[..at].rfind('[').expect("the placeholder is in a list");
        Around {
            before: text[..=open].to_owned(),
            after: format!("{}\n", &text[at + mark.len()..]),
        }
    }

    /// The end for an empty list: `[]`, as serde_json writes it.
    fn after_empty(&self) -> &str {
        let close = self.after.find(']').expect("the list closes");
        &self.after[close..]
    }
}

fn percent(part: usize, whole: usize) -> String {
    if whole == 0 {
        "0%".into()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

/// The full format's line for a request that was not audited.
fn not_audited_line(n: &NotAudited) -> String {
    let session = n
        .session
        .as_deref()
        .map(|s| format!(" session {s}"))
        .unwrap_or_default();
    format!(
        "{}:{}:{session}: not audited: {}\n",
        n.file, n.line, n.reason
    )
}

/// The full format's lines for a request's break (none without one).
fn break_lines(r: &RequestAudit) -> String {
    let mut out = String::new();
    let Some(b) = &r.break_ else {
        return out;
    };
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
    out
}

/// The full format's summary, after the break lines (`after_breaks`: a blank line first).
fn full_summary(after_breaks: bool, engine: &str, s: &Summary) -> String {
    let mut out = String::new();
    if after_breaks {
        out.push('\n');
    }
    let _ = writeln!(out, "engine: {engine}");
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
    if let Some(cost) = &s.cost {
        use crate::cost::format_dollars;
        let lost: Vec<String> = cost
            .lost_by_cause
            .iter()
            .map(|(cause, m)| format!("{cause} {}", format_dollars(*m)))
            .collect();
        let _ = writeln!(
            out,
            "cost at {} prices of {} ({}): spent {}, saved by cache reads {}{}",
            cost.model,
            cost.prices_date,
            cost.currency,
            format_dollars(cost.spent),
            format_dollars(cost.saved),
            if lost.is_empty() {
                String::new()
            } else {
                format!(", lost by cause: {}", lost.join(", "))
            }
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
    out.push_str(&super::hosted::summary_lines(s));
    if !s.not_audited.is_empty() {
        let _ = writeln!(
            out,
            "not audited: {} requests (listed above)",
            thousands(s.not_audited.len())
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

/// The SARIF result for a request's break: at the template line that wrote it
/// (`--templates`), as a `check` diagnostic, else at the log line under an `audit/CAUSE` rule.
fn sarif_result(r: &RequestAudit) -> Option<serde_json::Value> {
    use crate::report::sarif::{hex, uri, FINGERPRINT_KEY};
    use sha2::{Digest, Sha256};
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
}

/// The SARIF result for a request that was not audited, at its log line.
fn sarif_failure(n: &NotAudited) -> serde_json::Value {
    use crate::report::sarif::{hex, uri, FINGERPRINT_KEY};
    use sha2::{Digest, Sha256};
    let fingerprint = hex(&Sha256::digest(format!(
        "{NOT_AUDITED}\0{}\0{}",
        n.file, n.line
    )));
    json!({
        "ruleId": NOT_AUDITED,
        "level": "error",
        "message": {"text": format!("This request was not audited: {}.", n.reason)},
        "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": uri(&n.file)},
            "region": {"startLine": n.line}
        }}],
        "partialFingerprints": {FINGERPRINT_KEY: fingerprint},
        "properties": {"session": n.session}
    })
}

/// The SARIF rule of requests that could not be audited.
const NOT_AUDITED: &str = "audit/not-audited";

/// The SARIF document: the `check` rules and one `audit/CAUSE` rule per cause, then the
/// results.
fn sarif_document(
    results: Vec<serde_json::Value>,
    cost: Option<&crate::cost::AuditCost>,
) -> serde_json::Value {
    use crate::report::sarif::{rule_descriptor, SCHEMA};
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
    let text = "A logged request could not be rendered as the server would: the server's request model or the chat template fails on it.";
    rules.push(json!({
        "id": NOT_AUDITED,
        "name": "AuditNotAudited",
        "shortDescription": {"text": "A logged request was not audited."},
        "fullDescription": {"text": text},
        "help": {"text": text, "markdown": text},
        "defaultConfiguration": {"level": "error"},
        "properties": {"tags": ["prefix-cache", "audit"]}
    }));
    let mut document = json!({
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
    // Money over the whole log, after the results (so a streamed run writes it last).
    if let Some(cost) = cost {
        document["runs"][0]["properties"] = json!({ "cost": cost });
    }
    document
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::attribute::TemplatePlace;
    use crate::audit::breaks::Break;
    use crate::audit::input::Skipped;
    use crate::audit::{MissedHit, SessionLoss, REPORT_VERSION};

    fn request(line: usize, cause: Option<&'static str>, template: bool) -> RequestAudit {
        RequestAudit {
            file: "logs/a \"b\".jsonl".into(),
            line,
            session: (line % 3 != 0).then(|| format!("s{}", line % 4)),
            prompt_tokens: 100 + line,
            predicted_cached_tokens: line,
            logged_cached_tokens: (line % 2 == 0).then_some(line),
            logged_prompt_tokens: None,
            logged_cache_write_tokens: None,
            server_miss_reason: None,
            reply_tokens_exact: (line % 2 == 0).then_some(line % 4 == 0),
            break_: cause.map(|cause| Break {
                path: "messages[0].content".into(),
                offset: 14,
                cause,
                tokens_lost: 1234 + line,
                before: "Time: 12:00\n\u{e9}\t\"x\"".into(),
                after: "Time: 12:05\n".into(),
                template: template.then(|| TemplatePlace {
                    file: "prompts/system.j2".into(),
                    line: 1,
                    column: 7,
                    expression: "{{ now }}".into(),
                    rule: "PL001",
                    rule_name: "volatile-prefix",
                }),
                shared_tokens: 3,
                prompt_offset: 40,
            }),
        }
    }

    fn report(requests: Vec<RequestAudit>, missed: usize, failed_after: &[usize]) -> AuditReport {
        let mut summary = Summary::default();
        for r in &requests {
            summary.add(r);
        }
        for (i, after) in failed_after.iter().enumerate() {
            summary
                .not_audited
                .push(NotAudited {
                    file: "logs/a \"b\".jsonl".into(),
                    line: 100 + i,
                    session: Some("s\u{e9}".into()),
                    reason: format!("the chat template fails on it: case {after}"),
                })
                .unwrap();
        }
        summary.not_audited.seal().unwrap();
        for i in 0..missed {
            summary
                .missed_hits
                .push(MissedHit {
                    file: "logs/a.jsonl".into(),
                    line: i,
                    session: None,
                    shared_tokens: i,
                    reason: "eviction-or-routing",
                })
                .unwrap();
        }
        summary.missed_hits.seal().unwrap();
        summary.worst_sessions = vec![SessionLoss {
            session: "s1".into(),
            requests: 3,
            breaks: 1,
            tokens_lost: 99,
        }];
        summary.skipped_lines = 1;
        summary.skipped = vec![Skipped {
            file: "-".into(),
            line: 2,
            reason: "not JSON".into(),
        }];
        AuditReport {
            version: REPORT_VERSION,
            engine: "llama.cpp (1 slot)".into(),
            chat_template: "embedded \"qwen3\"".into(),
            requests,
            summary,
            not_audited_after: failed_after.to_vec(),
        }
    }

    fn streamed(report: &AuditReport, format: AuditFormat) -> String {
        let head = Head {
            version: report.version,
            engine: report.engine.clone(),
            chat_template: report.chat_template.clone(),
        };
        let mut writer = AuditWriter::new(format, head, Vec::new());
        for entry in report.entries() {
            writer.entry(entry).unwrap();
        }
        String::from_utf8(writer.finish(&report.summary).unwrap()).unwrap()
    }

    #[test]
    fn streamed_output_is_the_whole_report_byte_for_byte() {
        let cases = [
            vec![
                request(1, None, false),
                request(2, Some("clock"), true),
                request(3, Some("tool-order"), false),
                request(4, None, false),
            ],
            // No break at all: SARIF's results and full's break lines stay empty.
            vec![request(1, None, false), request(2, None, false)],
            vec![request(7, Some("id"), false)],
        ];
        // Requests not audited: between audited ones, first, last, and none.
        let failures: [&[usize]; 3] = [&[0, 2, 4], &[], &[1]];
        for (i, requests) in cases.into_iter().enumerate() {
            // Past the missed hits kept in memory, so some are read back from their file.
            let mut whole = report(requests, if i == 0 { 1500 } else { 2 }, failures[i]);
            // Money in the summary (a hosted engine with prices) in one case.
            if i == 1 {
                whole.summary.cost = Some(crate::cost::AuditCost {
                    model: "gpt-4.1".into(),
                    prices_date: "2026-12-01".into(),
                    currency: "USD".into(),
                    spent: 14_000,
                    saved: 6_000,
                    lost_by_cause: [("clock".to_owned(), 4_500)].into(),
                });
            }
            for format in [AuditFormat::Full, AuditFormat::Json, AuditFormat::Sarif] {
                let expected = render(&whole, format).unwrap();
                assert_eq!(streamed(&whole, format), expected, "{format:?}, case {i}");
            }
        }
    }
}
