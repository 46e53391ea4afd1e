//! What the hosted APIs report beyond a read count, summed over a log: cache writes (reads
//! per write, and the writes by TTL tier), the requests that missed because the previous
//! request's write was not yet visible ("written, then missed"), and how Anthropic's own
//! miss reasons agree with prefixlint's finding.

use super::input::RequestBody;
use super::usage::{MissReason, Usage};
use crate::cache_profile::CacheProfile;
use serde::Serialize;
use std::collections::BTreeMap;

/// The cause of a miss sent before the previous request's cache write was visible.
pub const WRITTEN_THEN_MISSED: &str = "written-then-missed";

/// How long after a response completes its cache write may still be invisible to the next
/// request, in seconds. Anthropic documents that a cache entry is available only once the
/// first response has begun (platform.claude.com/docs/en/build-with-claude/prompt-caching,
/// "concurrent requests"); users report back-to-back requests missing until a 2 s sleep
/// (anthropic-sdk-python#1451).
pub const WRITE_VISIBLE_SECONDS: f64 = 2.0;

/// Whether a request sent at `sent` came before the write of a request whose response was
/// complete at `done` (or sent then, where the log has no completion: the response cannot
/// have completed earlier) could be visible. Hosted APIs only (those with a cache TTL):
/// a self-hosted engine's cache is its own, and the next request sees it at once.
pub fn write_not_visible(profile: &CacheProfile, done: Option<f64>, sent: Option<f64>) -> bool {
    match (super::predict::ttl_seconds(profile), done, sent) {
        (Some(_), Some(done), Some(sent)) => sent - done < WRITE_VISIBLE_SECONDS,
        _ => false,
    }
}

/// Cache writes over the requests whose log reports them.
#[derive(Debug, Default, Serialize)]
pub struct CacheWrites {
    /// Requests whose log carries a write count.
    pub requests: usize,
    /// Tokens read from the cache by those requests.
    pub read_tokens: usize,
    /// Tokens written to the cache by those requests.
    pub write_tokens: usize,
    /// `read_tokens / write_tokens`: how many times a written token was read again (write
    /// amortization); `null` without writes.
    pub reads_per_write: Option<f64>,
    /// The written tokens by TTL tier, by the API's tier names (`5m`, `1h`; OpenAI's `30m`,
    /// `12h`), and `unspecified` where the API did not split them; tiers without tokens are
    /// left out.
    pub write_tokens_by_ttl: BTreeMap<String, usize>,
}

impl CacheWrites {
    pub fn add(&mut self, usage: &Usage) {
        let Some(written) = usage.written else {
            return;
        };
        self.requests += 1;
        // Sums saturate: a log's counts are not trusted to be small.
        self.read_tokens = self.read_tokens.saturating_add(usage.read.unwrap_or(0));
        self.write_tokens = self.write_tokens.saturating_add(written);
        let mut tiered = 0;
        for (tier, &n) in usage.written_by_ttl.iter().flatten() {
            tiered = n.saturating_add(tiered);
            if n > 0 {
                let sum = self.write_tokens_by_ttl.entry(tier.clone()).or_default();
                *sum = sum.saturating_add(n);
            }
        }
        let unspecified = written.saturating_sub(tiered);
        if unspecified > 0 {
            let sum = self
                .write_tokens_by_ttl
                .entry("unspecified".to_owned())
                .or_default();
            *sum = sum.saturating_add(unspecified);
        }
        self.reads_per_write =
            (self.write_tokens > 0).then(|| self.read_tokens as f64 / self.write_tokens as f64);
    }
}

/// The requests of the "written, then missed" cause.
#[derive(Debug, Serialize)]
pub struct WrittenThenMissed {
    pub requests: usize,
    /// The prefix tokens they would have read.
    pub tokens_lost: usize,
    /// [`WRITE_VISIBLE_SECONDS`].
    pub window_seconds: f64,
}

impl Default for WrittenThenMissed {
    fn default() -> Self {
        WrittenThenMissed {
            requests: 0,
            tokens_lost: 0,
            window_seconds: WRITE_VISIBLE_SECONDS,
        }
    }
}

impl WrittenThenMissed {
    pub fn add(&mut self, tokens_lost: usize) {
        self.requests += 1;
        self.tokens_lost = self.tokens_lost.saturating_add(tokens_lost);
    }
}

/// What prefixlint found for a request whose response carries a miss reason.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Finding {
    /// A break, with the part of the request it is in.
    Break {
        cause: &'static str,
        part: Option<&'static str>,
    },
    /// No break, but another model than the earlier request's.
    ModelSwitched,
    /// No break, and the log's count says the shared prefix was not read (the missed hit's
    /// reason: `ttl`, `written-then-missed`, `eviction-or-routing`).
    Missed(&'static str),
    /// The prompt extends the earlier request's.
    Extends,
    /// No earlier request to compare with.
    NoEarlier,
}

impl Finding {
    fn cause(self) -> &'static str {
        match self {
            Finding::Break { cause, .. } => cause,
            Finding::ModelSwitched => "model-switched",
            Finding::Missed(reason) => reason,
            Finding::Extends => "none",
            Finding::NoEarlier => "no-earlier-request",
        }
    }

    fn part(self) -> Option<&'static str> {
        match self {
            Finding::Break { part, .. } => part,
            Finding::ModelSwitched => Some("model"),
            _ => None,
        }
    }
}

/// One row of the agreement table: a server reason against a prefixlint finding.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AgreementRow {
    /// Anthropic's `cache_miss_reason.type`.
    pub server_reason: String,
    /// prefixlint's break cause; else `model-switched`, a missed hit's reason (`ttl`,
    /// `written-then-missed`, `eviction-or-routing`), `none` (the prompt extends the earlier
    /// one) or `no-earlier-request`.
    pub prefixlint_cause: &'static str,
    /// The part of the request prefixlint's finding is in: `tools`, `system`, `messages`,
    /// `model`, or `null`.
    pub prefixlint_part: Option<&'static str>,
    pub requests: usize,
    /// Whether both name the same part; `null` where the server's reason names none
    /// (`previous_message_not_found`, `unavailable`).
    pub agrees: Option<bool>,
    /// The server's estimate of the tokens it missed, summed.
    pub cache_missed_input_tokens: usize,
}

/// The server's miss reasons against prefixlint's findings.
#[derive(Debug, Default, Serialize)]
pub struct Agreement {
    /// Requests whose response carries a miss reason.
    pub requests: usize,
    /// Of those, the ones whose reason names a part of the request (`*_changed`).
    pub comparable: usize,
    /// Of those, the ones where prefixlint's finding is in the same part.
    pub agreeing: usize,
    pub table: Vec<AgreementRow>,
}

impl Agreement {
    pub fn add(&mut self, reason: &MissReason, finding: Finding) {
        self.requests += 1;
        let agrees = reason.part().map(|part| Some(part) == finding.part());
        if let Some(agrees) = agrees {
            self.comparable += 1;
            self.agreeing += usize::from(agrees);
        }
        let (cause, part) = (finding.cause(), finding.part());
        let missed = reason.cache_missed_input_tokens.unwrap_or(0);
        match self.table.iter_mut().find(|row| {
            row.server_reason == reason.kind
                && row.prefixlint_cause == cause
                && row.prefixlint_part == part
        }) {
            Some(row) => {
                row.requests += 1;
                row.cache_missed_input_tokens =
                    row.cache_missed_input_tokens.saturating_add(missed);
            }
            None => self.table.push(AgreementRow {
                server_reason: reason.kind.clone(),
                prefixlint_cause: cause,
                prefixlint_part: part,
                requests: 1,
                agrees,
                cache_missed_input_tokens: missed,
            }),
        }
    }

    /// Orders the table: by server reason, then the most requests first.
    pub fn seal(&mut self) {
        self.table.sort_by(|a, b| {
            a.server_reason
                .cmp(&b.server_reason)
                .then(b.requests.cmp(&a.requests))
                .then(a.prefixlint_cause.cmp(b.prefixlint_cause))
                .then(a.prefixlint_part.cmp(&b.prefixlint_part))
        });
    }
}

/// The part of the request a break path is in, as Anthropic's reasons name them: `tools`,
/// `system` (a system prompt beside the messages, or a system or developer message), or
/// `messages`.
pub fn part_of(body: &RequestBody, path: &str) -> Option<&'static str> {
    if path == "tools" || path.starts_with("tools[") || path.starts_with("tools.") {
        return Some("tools");
    }
    let base = path.split(".content").next().unwrap_or(path);
    let role = body
        .message_paths
        .iter()
        .position(|p| p == base)
        .and_then(|i| body.messages[i].get("role")?.as_str());
    match role {
        Some("system" | "developer") => Some("system"),
        Some(_) => Some("messages"),
        None => None,
    }
}

/// The full format's lines for the figures above (none where the log has none of them).
pub fn summary_lines(s: &super::Summary) -> String {
    use crate::fmt::thousands;
    use std::fmt::Write as _;
    let requests = |n: usize| match n {
        1 => "1 request".to_owned(),
        n => format!("{} requests", thousands(n)),
    };
    let mut out = String::new();
    let w = &s.cache_writes;
    if w.requests > 0 {
        // Shortest tier first, `unspecified` last.
        let mut by_length: Vec<(&String, &usize)> = w.write_tokens_by_ttl.iter().collect();
        by_length.sort_by(|a, b| {
            let seconds = |tier: &str| super::usage::tier_seconds(tier).unwrap_or(f64::INFINITY);
            seconds(a.0).total_cmp(&seconds(b.0))
        });
        let tiers: Vec<String> = by_length
            .into_iter()
            .map(|(tier, n)| format!("{tier} {}", thousands(*n)))
            .collect();
        let tiers = if tiers.is_empty() {
            String::new()
        } else {
            format!(" ({})", tiers.join(", "))
        };
        let per_write = w.reads_per_write.map_or_else(
            || "no writes".to_owned(),
            |r| format!("{r:.2} reads per write"),
        );
        let _ = writeln!(
            out,
            "cache writes:     {}{tiers}, read {} ({per_write}, {} requests with a count)",
            thousands(w.write_tokens),
            thousands(w.read_tokens),
            thousands(w.requests)
        );
    }
    let late = &s.written_then_missed;
    if late.requests > 0 {
        let _ = writeln!(
            out,
            "written, then missed: {}, {} tokens (sent less than {} s after the previous response completed: its cache write was not visible yet)",
            requests(late.requests),
            thousands(late.tokens_lost),
            late.window_seconds
        );
    }
    let a = &s.miss_reason_agreement;
    if a.requests > 0 {
        let _ = writeln!(
            out,
            "server miss reasons: {}, {} name a part of the request, prefixlint agrees on {} ({})",
            requests(a.requests),
            thousands(a.comparable),
            thousands(a.agreeing),
            if a.comparable == 0 {
                "–".to_owned()
            } else {
                format!("{:.1}%", a.agreeing as f64 * 100.0 / a.comparable as f64)
            }
        );
        let finding = |r: &AgreementRow| match r.prefixlint_part {
            Some(part) if r.prefixlint_cause != "model-switched" => {
                format!("{} in {part}", r.prefixlint_cause)
            }
            _ => r.prefixlint_cause.to_owned(),
        };
        let width = a
            .table
            .iter()
            .map(|r| finding(r).chars().count())
            .max()
            .unwrap_or(0)
            .max("prefixlint".len());
        let reason_width = a
            .table
            .iter()
            .map(|r| r.server_reason.len())
            .max()
            .unwrap_or(0)
            .max("server reason".len());
        let _ = writeln!(
            out,
            "    {:reason_width$}  {:width$}  requests  agrees",
            "server reason", "prefixlint"
        );
        for r in &a.table {
            let agrees = match r.agrees {
                Some(true) => "yes",
                Some(false) => "no",
                None => "–",
            };
            let _ = writeln!(
                out,
                "    {:reason_width$}  {:width$}  {:>8}  {agrees}",
                r.server_reason,
                finding(r),
                thousands(r.requests)
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache_profile::{CacheProfile, CacheProfileKind};
    use serde_json::json;

    fn reason(kind: &str, missed: Option<usize>) -> MissReason {
        MissReason {
            kind: kind.into(),
            cache_missed_input_tokens: missed,
        }
    }

    #[test]
    fn agreement_counts_comparable_reasons_by_part() {
        let mut a = Agreement::default();
        let clock = Finding::Break {
            cause: "clock",
            part: Some("system"),
        };
        a.add(&reason("system_changed", Some(100)), clock);
        a.add(&reason("system_changed", Some(50)), clock);
        a.add(
            &reason("tools_changed", Some(10)),
            Finding::Break {
                cause: "tool-order",
                part: Some("tools"),
            },
        );
        a.add(&reason("messages_changed", None), Finding::Extends);
        a.add(&reason("model_changed", None), Finding::ModelSwitched);
        a.add(&reason("unavailable", None), Finding::NoEarlier);
        a.seal();
        assert_eq!((a.requests, a.comparable, a.agreeing), (6, 5, 4));
        let rows: Vec<(&str, &str, Option<bool>, usize, usize)> = a
            .table
            .iter()
            .map(|r| {
                (
                    r.server_reason.as_str(),
                    r.prefixlint_cause,
                    r.agrees,
                    r.requests,
                    r.cache_missed_input_tokens,
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("messages_changed", "none", Some(false), 1, 0),
                ("model_changed", "model-switched", Some(true), 1, 0),
                ("system_changed", "clock", Some(true), 2, 150),
                ("tools_changed", "tool-order", Some(true), 1, 10),
                ("unavailable", "no-earlier-request", None, 1, 0),
            ]
        );
    }

    #[test]
    fn reads_per_write_and_tiers() {
        let mut w = CacheWrites::default();
        w.add(&Usage {
            read: Some(0),
            written: Some(3000),
            written_by_ttl: Some([("5m".to_owned(), 1000), ("1h".to_owned(), 2000)].into()),
            ..Usage::default()
        });
        w.add(&Usage {
            read: Some(9000),
            written: Some(0),
            ..Usage::default()
        });
        // A log without writes (OpenAI) is not counted.
        w.add(&Usage {
            read: Some(5000),
            ..Usage::default()
        });
        w.add(&Usage {
            read: Some(0),
            written: Some(1000),
            ..Usage::default()
        });
        assert_eq!((w.requests, w.read_tokens, w.write_tokens), (3, 9000, 4000));
        assert_eq!(w.reads_per_write, Some(2.25));
        let tiers: Vec<(&str, usize)> = w
            .write_tokens_by_ttl
            .iter()
            .map(|(k, v)| (k.as_str(), *v))
            .collect();
        assert_eq!(tiers, [("1h", 2000), ("5m", 1000), ("unspecified", 1000)]);
    }

    #[test]
    fn written_then_missed_only_within_the_window_and_on_hosted_apis() {
        let anthropic = CacheProfile::of(CacheProfileKind::Anthropic);
        let llama = CacheProfile::of(CacheProfileKind::LlamaCpp);
        assert!(write_not_visible(&anthropic, Some(100.0), Some(99.0)));
        assert!(write_not_visible(&anthropic, Some(100.0), Some(101.5)));
        assert!(!write_not_visible(&anthropic, Some(100.0), Some(102.0)));
        assert!(!write_not_visible(&anthropic, None, Some(101.0)));
        assert!(!write_not_visible(&llama, Some(100.0), Some(100.5)));
    }

    #[test]
    fn parts_of_break_paths() {
        let body = crate::audit::input::parse_body(&json!({
            "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
        }))
        .unwrap();
        assert_eq!(part_of(&body, "messages[0].content"), Some("system"));
        assert_eq!(part_of(&body, "messages[1].content"), Some("messages"));
        assert_eq!(part_of(&body, "tools"), Some("tools"));
        let anthropic = crate::audit::input::parse_body(
            &json!({"system": "S", "messages": [{"role": "user", "content": "U"}]}),
        )
        .unwrap();
        assert_eq!(part_of(&anthropic, "system"), Some("system"));
        assert_eq!(part_of(&anthropic, "messages[0].content"), Some("messages"));
    }
}
