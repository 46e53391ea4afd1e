//! The `measure` report: the JSON contract (`version: 1`) and the table for people.

pub mod fleet;

use super::model::{percentile, TtftModel};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

pub const REPORT_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MeasureFormat {
    Table,
    Json,
}

#[derive(Debug, Clone, Serialize)]
pub struct MeasureReport {
    pub version: u32,
    pub server: ServerInfo,
    pub templates: Vec<TemplateMeasure>,
    pub ttft_model: Option<TtftModel>,
    /// What stopped the run or a template, when anything did (exit code 2).
    pub errors: Vec<String>,
    /// `--replica` runs: cache hits across the replicas behind the router.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fleet: Option<fleet::FleetReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ServerInfo {
    pub url: String,
    pub engine: String,
    pub engine_detected_by: Vec<String>,
    pub model: Option<String>,
    pub api: String,
    pub tokenizer: String,
    pub isolation: String,
    pub cache_block_tokens: usize,
    /// The engine profile that made the predictions.
    pub cache_profile: String,
    pub ttft_definition: String,
    pub notes: Vec<String>,
    /// Prefix-cache counters scraped from `/metrics`: their change over the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<BTreeMap<String, f64>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TemplateMeasure {
    pub path: String,
    /// Median TTFT of the cold requests for the samples that also ran warm.
    pub ttft_cold_ms: Option<f64>,
    /// Median TTFT of the warm requests.
    pub ttft_warm_ms: Option<f64>,
    pub speedup: Option<f64>,
    pub ttft_cold_p90_ms: Option<f64>,
    pub ttft_warm_p90_ms: Option<f64>,
    pub requests: Vec<RequestRecord>,
    /// For each `check` finding: the TTFT the TTFT model says fixing it would save.
    pub findings: Vec<FindingSaving>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Cold,
    Warm,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Cold => "cold",
            Phase::Warm => "warm",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RequestRecord {
    pub sample: usize,
    pub phase: Phase,
    pub repeat: usize,
    pub prompt_tokens_local: usize,
    pub prompt_tokens_server: Option<usize>,
    pub predicted_cached_tokens: usize,
    pub measured_cached_tokens: Option<usize>,
    pub ttft_ms: f64,
    /// Why prediction and measurement disagree, when they do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mismatch: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FindingSaving {
    pub rule: String,
    pub message: String,
    pub line: usize,
    /// Stable tokens that the divergence keeps out of the cache.
    pub lost_tokens: usize,
    pub ttft_saved_ms: Option<f64>,
}

impl TemplateMeasure {
    pub fn new(path: String) -> Self {
        TemplateMeasure {
            path,
            ttft_cold_ms: None,
            ttft_warm_ms: None,
            speedup: None,
            ttft_cold_p90_ms: None,
            ttft_warm_p90_ms: None,
            requests: Vec::new(),
            findings: Vec::new(),
        }
    }

    /// Fills the medians, p90s and speedup from the requests. Cold timings are those of the
    /// samples that also ran warm, so the two compare prompts of the same length.
    pub fn summarize(&mut self) {
        let warm_samples: Vec<usize> = self
            .requests
            .iter()
            .filter(|r| r.phase == Phase::Warm)
            .map(|r| r.sample)
            .collect();
        let ttfts = |keep: &dyn Fn(&RequestRecord) -> bool| -> Vec<f64> {
            self.requests
                .iter()
                .filter(|r| keep(r))
                .map(|r| r.ttft_ms)
                .collect()
        };
        let warm = ttfts(&|r| r.phase == Phase::Warm);
        let mut cold = ttfts(&|r| r.phase == Phase::Cold && warm_samples.contains(&r.sample));
        if cold.is_empty() {
            cold = ttfts(&|r| r.phase == Phase::Cold);
        }
        self.ttft_cold_ms = percentile(&cold, 50.0).map(round1);
        self.ttft_cold_p90_ms = percentile(&cold, 90.0).map(round1);
        self.ttft_warm_ms = percentile(&warm, 50.0).map(round1);
        self.ttft_warm_p90_ms = percentile(&warm, 90.0).map(round1);
        self.speedup = match (percentile(&cold, 50.0), percentile(&warm, 50.0)) {
            (Some(c), Some(w)) if w > 0.0 => Some((c / w * 100.0).round() / 100.0),
            _ => None,
        };
    }

    pub fn mismatches(&self) -> impl Iterator<Item = &RequestRecord> {
        self.requests.iter().filter(|r| r.mismatch.is_some())
    }
}

pub fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// Why the server cached a different number of tokens than predicted, or `None` if it did not.
pub fn explain_mismatch(
    local_tokens: usize,
    server_tokens: Option<usize>,
    predicted: usize,
    measured: Option<usize>,
    block: usize,
) -> Option<String> {
    let measured = measured?;
    if measured == predicted {
        return None;
    }
    if let Some(server) = server_tokens.filter(|&s| s != local_tokens) {
        return Some(format!(
            "the server counts {server} prompt tokens, prefixlint {local_tokens}: a different tokenizer or chat template (try --tokenizer server)"
        ));
    }
    Some(if measured == 0 {
        "the server cached nothing: prompt caching is off, or the prefix was evicted".into()
    } else if measured < predicted && block > 1 && predicted - measured < block {
        format!(
            "block rounding: the server caches whole blocks of {block} tokens (--engine NAME:block_size=N)"
        )
    } else if measured < predicted && measured % 16 == 0 && block == 1 {
        "block rounding: the hit is a multiple of 16 tokens; the server caches whole blocks (--engine NAME:block_size=N)".into()
    } else if measured < predicted {
        format!("the server reused {measured} of the {predicted} tokens shared with an earlier request: the prefix was (partly) evicted")
    } else {
        format!("the server reused {measured} tokens, more than the {predicted} shared with this run's earlier requests: a prefix left by an earlier run or another client")
    })
}

pub fn to_json(report: &MeasureReport) -> String {
    let mut text = serde_json::to_string_pretty(report).unwrap_or_else(|_| "{}".into());
    text.push('\n');
    text
}

pub fn to_table(report: &MeasureReport) -> String {
    let mut out = String::new();
    let s = &report.server;
    let _ = writeln!(
        out,
        "server {} · {} · {} API · tokenizer {}{}",
        s.url,
        s.engine,
        s.api,
        s.tokenizer,
        s.model
            .as_deref()
            .map(|m| format!(" · model {m}"))
            .unwrap_or_default()
    );
    for note in &s.notes {
        let _ = writeln!(out, "note: {note}");
    }
    for t in &report.templates {
        let _ = writeln!(out, "\n{}", t.path);
        let _ = writeln!(
            out,
            "  {:>6}  {:<5}  {:>7} {:>7}  {:>9} {:>9}  {:>9}",
            "sample", "phase", "tokens", "server", "predicted", "measured", "TTFT ms"
        );
        for r in &t.requests {
            let opt = |v: Option<usize>| v.map_or("-".to_owned(), |v| v.to_string());
            let _ = writeln!(
                out,
                "  {:>6}  {:<5}  {:>7} {:>7}  {:>9} {:>9}  {:>9.1}{}",
                r.sample,
                r.phase.as_str(),
                r.prompt_tokens_local,
                opt(r.prompt_tokens_server),
                r.predicted_cached_tokens,
                opt(r.measured_cached_tokens),
                r.ttft_ms,
                if r.mismatch.is_some() { "  ≠" } else { "" }
            );
        }
        let ms = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.1} ms"));
        let _ = writeln!(
            out,
            "  TTFT cold p50 {} p90 {} · warm p50 {} p90 {} · speedup {}",
            ms(t.ttft_cold_ms),
            ms(t.ttft_cold_p90_ms),
            ms(t.ttft_warm_ms),
            ms(t.ttft_warm_p90_ms),
            t.speedup.map_or("-".to_owned(), |v| format!("{v:.1}×"))
        );
        for r in t.mismatches() {
            let _ = writeln!(
                out,
                "  ≠ sample {} {}: predicted {} cached, measured {}: {}",
                r.sample,
                r.phase.as_str(),
                r.predicted_cached_tokens,
                r.measured_cached_tokens.unwrap_or(0),
                r.mismatch.as_deref().unwrap_or("")
            );
        }
        for f in &t.findings {
            let _ = writeln!(
                out,
                "  {} line {}: {} · {} stable tokens uncached{}",
                f.rule,
                f.line,
                f.message,
                f.lost_tokens,
                f.ttft_saved_ms
                    .map(|ms| format!(" · fixing it saves ≈ {ms:.1} ms TTFT per request"))
                    .unwrap_or_default()
            );
        }
    }
    if let Some(metrics) = &s.metrics {
        let _ = writeln!(out, "\nprefix-cache counters over the run (from /metrics):");
        for (name, delta) in metrics {
            let _ = writeln!(out, "  {name} +{delta}");
        }
    }
    match &report.ttft_model {
        Some(model) => {
            let _ = writeln!(out, "\n{model}");
        }
        None if report.fleet.is_some() => {}
        None => {
            let _ = writeln!(out, "\nTTFT model: not enough distinct prompt sizes to fit");
        }
    }
    // Errors are not repeated here: `measure` prints each one on stderr.
    if let Some(fleet) = &report.fleet {
        out.push_str(&fleet::to_table(fleet));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(sample: usize, phase: Phase, ttft_ms: f64) -> RequestRecord {
        RequestRecord {
            sample,
            phase,
            repeat: 0,
            prompt_tokens_local: 10,
            prompt_tokens_server: Some(10),
            predicted_cached_tokens: 0,
            measured_cached_tokens: Some(0),
            ttft_ms,
            mismatch: None,
        }
    }

    #[test]
    fn cold_median_uses_the_samples_that_ran_warm() {
        let mut t = TemplateMeasure::new("t.j2".into());
        t.requests = vec![
            request(0, Phase::Cold, 1000.0),
            request(1, Phase::Warm, 10.0),
            request(1, Phase::Cold, 100.0),
        ];
        t.summarize();
        assert_eq!(t.ttft_cold_ms, Some(100.0));
        assert_eq!(t.ttft_warm_ms, Some(10.0));
        assert_eq!(t.speedup, Some(10.0));
    }

    #[test]
    fn mismatch_reasons() {
        assert_eq!(explain_mismatch(10, Some(10), 5, Some(5), 1), None);
        assert!(explain_mismatch(10, Some(12), 5, Some(3), 1)
            .unwrap()
            .contains("tokenizer"));
        assert!(explain_mismatch(10, Some(10), 5, Some(0), 1)
            .unwrap()
            .contains("off"));
        assert!(explain_mismatch(100, Some(100), 40, Some(32), 16)
            .unwrap()
            .contains("block"));
        assert!(explain_mismatch(100, Some(100), 40, Some(20), 1)
            .unwrap()
            .contains("evicted"));
        assert!(explain_mismatch(100, Some(100), 4, Some(20), 1)
            .unwrap()
            .contains("earlier run"));
    }
}
