//! The `fleet` object of measure's JSON report (`measure --replica`), and its table for
//! people. Data only: `measure::fleet` fills it in.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

#[derive(Debug, Clone, Serialize)]
pub struct FleetReport {
    pub router: String,
    pub replicas: Vec<ReplicaReport>,
    pub sessions: usize,
    pub turns: usize,
    pub sessions_scattered: usize,
    /// Cached prompt tokens over all prompt tokens, as measured.
    pub hit_rate: Option<f64>,
    /// The same traffic on one server with every earlier prompt in its cache: the prediction.
    pub hit_rate_single_server: f64,
    /// Every session kept on one replica, sessions spread evenly over the replicas.
    pub hit_rate_perfect_affinity: f64,
    pub affinity_key: String,
    /// How many requests each method attributed.
    pub attributed_by: BTreeMap<String, usize>,
    pub scattered: Vec<ScatteredSession>,
    pub requests: Vec<FleetRequest>,
    pub advice: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReplicaReport {
    pub url: String,
    /// Requests attributed to this replica.
    pub requests: usize,
    /// From the replica's `/metrics` change over the run, else the attributed responses.
    pub prompt_tokens: Option<u64>,
    pub cached_tokens: Option<u64>,
    /// The prefix-cache counters' change over the run; gauges as they were at the end.
    pub metrics: BTreeMap<String, f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics_error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FleetRequest {
    pub session: usize,
    pub turn: usize,
    pub replica: Option<usize>,
    pub attributed_by: AttributedBy,
    pub prompt_tokens: usize,
    pub cached_tokens: Option<usize>,
    pub predicted_single_server: usize,
    pub predicted_affinity: usize,
    pub ttft_ms: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttributedBy {
    Metrics,
    Cache,
    Ttft,
    /// The first turn of a session, with no replica evidence: nothing to compare against.
    Unknown,
}

/// A session whose turns did not all land on one replica's cache.
#[derive(Debug, Clone, Serialize)]
pub struct ScatteredSession {
    pub session: usize,
    pub key: String,
    /// Replica indices in turn order, where the counters told.
    pub replicas: Vec<Option<usize>>,
    /// Cached tokens that staying on one replica would have given, minus those it got.
    pub lost_tokens: usize,
    /// The TTFT those tokens cost, by the fitted TTFT model.
    pub lost_ttft_ms: Option<f64>,
}

fn percent(rate: Option<f64>) -> String {
    rate.map(|r| format!("{:.1}%", r * 100.0))
        .unwrap_or_else(|| "n/a".into())
}

pub fn to_table(fleet: &FleetReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nfleet behind {} · {} sessions × {} turns · affinity key {}",
        fleet.router, fleet.sessions, fleet.turns, fleet.affinity_key
    );
    let _ = writeln!(
        out,
        "  {:<3} {:<32} {:>8} {:>13} {:>13}",
        "#", "replica", "requests", "prompt tokens", "cached tokens"
    );
    let number = |n: Option<u64>| n.map(|n| n.to_string()).unwrap_or_else(|| "n/a".into());
    for (i, r) in fleet.replicas.iter().enumerate() {
        let _ = writeln!(
            out,
            "  {:<3} {:<32} {:>8} {:>13} {:>13}{}",
            i,
            r.url,
            r.requests,
            number(r.prompt_tokens),
            number(r.cached_tokens),
            r.metrics_error
                .as_deref()
                .map(|e| format!("  ({e})"))
                .unwrap_or_default()
        );
    }
    let _ = writeln!(
        out,
        "  hit rate {} measured · {} on one server (predicted) · {} with perfect affinity",
        percent(fleet.hit_rate),
        percent(Some(fleet.hit_rate_single_server)),
        percent(Some(fleet.hit_rate_perfect_affinity)),
    );
    let _ = writeln!(
        out,
        "  sessions scattered over replicas: {} of {}",
        fleet.sessions_scattered, fleet.sessions
    );
    for s in &fleet.scattered {
        let path: Vec<String> = s
            .replicas
            .iter()
            .map(|r| r.map(|r| r.to_string()).unwrap_or_else(|| "?".into()))
            .collect();
        let _ = writeln!(
            out,
            "    session {} ({}): replicas {} · {} tokens recomputed{}",
            s.session,
            s.key,
            path.join("→"),
            s.lost_tokens,
            s.lost_ttft_ms
                .map(|ms| format!(" · ≈{ms:.0} ms TTFT lost"))
                .unwrap_or_default()
        );
    }
    for line in &fleet.advice {
        let _ = writeln!(out, "  advice: {line}");
    }
    out
}
