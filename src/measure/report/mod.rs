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
    /// Where `cache_block_tokens` came from: `--engine`, `engine: in the config`, the server's
    /// `/metrics vllm:cache_config_info`, or a profile's default (said so).
    pub cache_block_tokens_source: String,
    /// KV blocks the server allocated, as it reports them (vLLM counts its reserved null block).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_num_blocks: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_num_blocks_source: Option<String>,
    /// The engine profile that made the predictions.
    pub cache_profile: String,
    pub ttft_definition: String,
    pub notes: Vec<String>,
    /// Prefix-cache counters scraped from `/metrics`: their change over the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<BTreeMap<String, f64>>,
    /// `--metrics` on a server with a TTFT histogram (vLLM): its mean beside the streams'.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_from_metrics: Option<ServerTtft>,
}

/// The server's own TTFT (`vllm:time_to_first_token_seconds`, from the request's arrival to
/// its first token) over the run, and the TTFT measured from the streams (from just before
/// the request is written): the gap is the HTTP, queueing and tokenizing the server's clock
/// does not see.
#[derive(Debug, Clone, Serialize)]
pub struct ServerTtft {
    pub metric: String,
    /// Requests the histogram counted over the run (scraped after the warm-up, so the same ones).
    pub server_requests: u64,
    pub server_mean_ms: f64,
    /// Requests measured from the stream (the warm-up excluded).
    pub measured_requests: usize,
    pub measured_mean_ms: f64,
}

impl ServerTtft {
    /// From the counters' change over the run and the requests measured.
    pub fn from_deltas(
        metrics: &BTreeMap<String, f64>,
        templates: &[TemplateMeasure],
    ) -> Option<Self> {
        const METRIC: &str = "vllm:time_to_first_token_seconds";
        let count = *metrics.get(&format!("{METRIC}_count"))?;
        let sum = *metrics.get(&format!("{METRIC}_sum"))?;
        let measured: Vec<f64> = templates
            .iter()
            .flat_map(|t| &t.requests)
            .map(|r| r.ttft_ms)
            .collect();
        if count < 1.0 || measured.is_empty() {
            return None;
        }
        Some(ServerTtft {
            metric: METRIC.into(),
            server_requests: count as u64,
            server_mean_ms: round1(sum / count * 1000.0),
            measured_requests: measured.len(),
            measured_mean_ms: round1(measured.iter().sum::<f64>() / measured.len() as f64),
        })
    }
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
    /// With a hosted engine that has prices: the warm requests' input cost per 1,000, as
    /// predicted and as measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<crate::cost::MeasureCost>,
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
    /// vLLM: the prompt tokens this request added to the prefix cache, as the server reports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_cache_tokens: Option<usize>,
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
            cost: None,
        }
    }

    /// The warm requests' cost at the profile's prices (see [`crate::cost::measure_cost`]).
    pub fn price(&mut self, profile: &crate::cache_profile::CacheProfile) {
        use crate::cost::Served;
        let warm: Vec<&RequestRecord> = self
            .requests
            .iter()
            .filter(|r| r.phase == Phase::Warm)
            .collect();
        let predicted: Vec<Served> = warm
            .iter()
            .map(|r| Served {
                prompt_tokens: r.prompt_tokens_local,
                cached_tokens: r.predicted_cached_tokens,
            })
            .collect();
        let measured: Option<Vec<Served>> = warm
            .iter()
            .map(|r| {
                Some(Served {
                    prompt_tokens: r.prompt_tokens_server.unwrap_or(r.prompt_tokens_local),
                    cached_tokens: r.measured_cached_tokens?,
                })
            })
            .collect();
        self.cost = crate::cost::measure_cost(profile, &predicted, measured.as_deref());
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

/// What one request's prediction and measurement were made of, to explain a difference.
#[derive(Debug, Clone, Copy)]
pub struct Compared {
    pub local_tokens: usize,
    pub server_tokens: Option<usize>,
    /// Tokens this prompt shares with the earlier requests of its cache namespace.
    pub shared_prefix: usize,
    pub predicted: usize,
    pub measured: Option<usize>,
    /// The block size the prediction used.
    pub block: usize,
    /// The block size the server reports (vLLM's `vllm:cache_config_info`), when it does.
    pub server_block: Option<usize>,
}

/// Why prediction and measurement disagree, naming the real cause: a different token count,
/// block rounding (a block size other than the one predicted with), the last token (which an
/// engine always computes again), or eviction.
pub fn explain_mismatch(c: Compared) -> Option<String> {
    let measured = c.measured?;
    let (n, predicted, block) = (c.local_tokens, c.predicted, c.block.max(1));
    if measured == predicted {
        return None;
    }
    if let Some(server) = c.server_tokens.filter(|&s| s != n) {
        return Some(format!(
            "the server counts {server} prompt tokens, prefixlint {n}: a different tokenizer or chat template (try --tokenizer server)"
        ));
    }
    if measured == 0 {
        return Some(
            "the server cached nothing: prompt caching is off, or the prefix was evicted".into(),
        );
    }
    let round = |tokens: usize, unit: usize| tokens / unit * unit;
    let shared = c.shared_prefix.min(n);
    // The whole prompt was sent before, and the server served it less its last token.
    if shared == n && measured < predicted && measured == round(n.saturating_sub(1), block) {
        return Some(format!(
            "the last token: this whole prompt was sent before, but the server computes its last token again to start the answer, so it serves at most {} of {n} tokens, in whole blocks of {block}",
            n - 1
        ));
    }
    // The hit is the shared prefix (less the last token) in whole blocks of another size.
    let limit = shared.min(n.saturating_sub(1));
    if let Some(b) = c.server_block.filter(|&b| b != block && b > 0) {
        if measured == round(limit, b) {
            return Some(format!(
                "block rounding: the server caches whole blocks of {b} tokens (its /metrics vllm:cache_config_info), the prediction used {block}: {measured} is the {limit} shared tokens in whole blocks of {b}"
            ));
        }
    }
    let other_block = [16, 32, 64, 128, 256, 512, 1024]
        .into_iter()
        .filter(|&b| b != block)
        .find(|&b| measured == round(limit, b));
    if let Some(b) = other_block {
        let size = if b > block { "larger" } else { "smaller" };
        return Some(format!(
            "block rounding: the server caches whole blocks {size} than the {block} tokens predicted with: {measured} is the {limit} shared tokens in whole blocks of {b} (or of a multiple of {b}); give the server's block size (--engine NAME:block_size=N)"
        ));
    }
    Some(
        if measured < predicted && block > 1 && predicted - measured < block {
            format!(
            "block rounding: the server caches whole blocks of {block} tokens (--engine NAME:block_size=N)"
        )
        } else if measured < predicted {
            format!("eviction: the server reused {measured} of the {predicted} tokens shared with an earlier request; the rest of the prefix was evicted")
        } else {
            format!("the server reused {measured} tokens, more than the {predicted} shared with this run's earlier requests: a prefix left by an earlier run or another client")
        },
    )
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
    let _ = writeln!(
        out,
        "cache: blocks of {} tokens (from {}){}",
        s.cache_block_tokens,
        s.cache_block_tokens_source,
        match (s.cache_num_blocks, &s.cache_num_blocks_source) {
            (Some(blocks), Some(source)) => format!(", {blocks} blocks allocated (from {source})"),
            _ => String::new(),
        }
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
        if let Some(cost) = &t.cost {
            let _ = writeln!(
                out,
                "  cost per 1,000 warm requests at {} prices of {} ({}): predicted {}, measured {}",
                cost.model,
                cost.prices_date,
                cost.currency,
                crate::cost::format_dollars(cost.predicted),
                cost.measured
                    .map_or("-".to_owned(), crate::cost::format_dollars)
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
    if let Some(t) = &s.ttft_from_metrics {
        let _ = writeln!(
            out,
            "TTFT: mean {:.1} ms over {} requests from the streams; the server's {} says {:.1} ms over {} (its clock starts when the request arrives)",
            t.measured_mean_ms, t.measured_requests, t.metric, t.server_mean_ms, t.server_requests
        );
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
            created_cache_tokens: None,
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

    fn compared(
        n: usize,
        shared: usize,
        predicted: usize,
        measured: usize,
        block: usize,
    ) -> Compared {
        Compared {
            local_tokens: n,
            server_tokens: Some(n),
            shared_prefix: shared,
            predicted,
            measured: Some(measured),
            block,
            server_block: None,
        }
    }

    #[test]
    fn mismatch_reasons() {
        let reason = |c: Compared| explain_mismatch(c).unwrap_or_default();
        assert_eq!(explain_mismatch(compared(10, 5, 5, 5, 1)), None);
        let other_count = Compared {
            server_tokens: Some(12),
            ..compared(10, 5, 5, 3, 1)
        };
        assert!(reason(other_count).contains("tokenizer"));
        assert!(reason(compared(10, 5, 5, 0, 1)).contains("cached nothing"));
        // The vLLM CPU figures (tests/fixtures/metrics/README.md): 1,712 tokens shared,
        // blocks of 128 on the server, predicted with blocks of 16.
        let rounding = reason(compared(1713, 1712, 1712, 1664, 16));
        assert!(rounding.starts_with("block rounding"), "{rounding}");
        assert!(rounding.contains("larger than the 16"), "{rounding}");
        let smaller = reason(compared(1713, 1712, 1664, 1696, 128));
        assert!(smaller.contains("smaller than the 128"), "{smaller}");
        // An exact repeat predicted token by token: the server keeps back the last token.
        let last = reason(compared(100, 100, 100, 99, 1));
        assert!(last.starts_with("the last token"), "{last}");
        let last = reason(compared(1713, 1713, 1713, 1712, 16));
        assert!(last.starts_with("the last token"), "{last}");
        let told = Compared {
            server_block: Some(128),
            ..compared(1713, 1712, 1696, 1664, 32)
        };
        let told = reason(told);
        assert!(
            told.contains("whole blocks of 128 tokens (its /metrics"),
            "{told}"
        );
        let evicted = reason(compared(1713, 1712, 1664, 1280, 128));
        assert!(evicted.starts_with("eviction"), "{evicted}");
        assert!(reason(compared(100, 4, 4, 20, 1)).contains("earlier run"));
    }
}
