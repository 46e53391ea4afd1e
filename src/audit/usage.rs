//! What a logged response says about its prompt and the cache, read in each API's own
//! convention.
//!
//! The conventions differ in whether the cached tokens are counted *inside* the input count
//! or *outside* it; `prompt` below is always the whole prompt, cached tokens included.
//!
//! | API | read | written | by TTL | input count | source |
//! | --- | --- | --- | --- | --- | --- |
//! | OpenAI Chat Completions / Responses | `prompt_tokens_details.cached_tokens` / `input_tokens_details.cached_tokens` | `…_tokens_details.cache_write_tokens` (newer models) | `cache_write_tokens_details.ttl_30m_tokens`, `ttl_12h_tokens` | inside `prompt_tokens` / `input_tokens` | platform.openai.com/docs/guides/prompt-caching; the `openai` SDK's `CompletionUsage`, `ResponseUsage` |
//! | Anthropic Messages | `cache_read_input_tokens` | `cache_creation_input_tokens` | `cache_creation.ephemeral_5m_input_tokens`, `ephemeral_1h_input_tokens` | outside: `input_tokens` counts only what follows the last breakpoint | platform.claude.com/docs/en/build-with-claude/prompt-caching; the `anthropic` SDK's `types.Usage` |
//! | Amazon Bedrock Converse | `cacheReadInputTokens` | `cacheWriteInputTokens` | `cacheDetails[].ttl` / `inputTokens` | outside: `inputTokens` excludes reads and writes (`totalTokens` = input + output + read + write) | docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_TokenUsage.html; botocore's bedrock-runtime model |
//! | DeepSeek | `prompt_cache_hit_tokens` | – | – | inside: `prompt_tokens` = hit + miss | api-docs.deepseek.com/guides/kv_cache |
//! | Gemini | `usageMetadata.cachedContentTokenCount` (absent: 0, as proto3 JSON leaves zeros out) | – | – | inside: `promptTokenCount` includes the cached content | ai.google.dev/api/generate-content#UsageMetadata |
//! | OpenTelemetry GenAI | `gen_ai.usage.cache_read.input_tokens` (deprecated: `gen_ai.usage.cache_read_input_tokens`) | `gen_ai.usage.cache_creation.input_tokens` | – | inside: both "SHOULD be included in `gen_ai.usage.input_tokens`" | opentelemetry.io/docs/specs/semconv/gen-ai/ |
//! | OpenInference | `llm.token_count.prompt_details.cache_read` | `llm.token_count.prompt_details.cache_write` | – | inside: `prompt_details` break `llm.token_count.prompt` down | github.com/Arize-ai/openinference `semantic_conventions.md` |
//! | llama.cpp | `timings.cache_n` | – | – | `prompt_tokens` counts all | llama.cpp `tools/server` |
//!
//! Anthropic's cache diagnostics (`diagnostics.cache_miss_reason`, beta header
//! `cache-diagnosis-2026-04-07`) name where a request first differs from the one named by
//! `diagnostics.previous_message_id`: `{"type": "system_changed", "cache_missed_input_tokens": N}`
//! (platform.claude.com/docs/en/build-with-claude/cache-diagnostics; the SDK's
//! `types.Diagnostics`).

use super::doc::Doc;
use super::pointer::pointer;
use serde::Serialize;
use serde_json::{Map, Value as Json};
use std::collections::BTreeMap;

/// The usage a response logs, in one convention.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    /// Tokens read from the cache.
    pub read: Option<usize>,
    /// The whole prompt, cached tokens included.
    pub prompt: Option<usize>,
    /// Tokens written to the cache, where the API reports writes.
    pub written: Option<usize>,
    /// The writes by TTL tier, where the API splits them.
    pub written_by_ttl: Option<ByTtl>,
    /// The server's own reason for a miss (Anthropic's cache diagnostics).
    pub miss_reason: Option<MissReason>,
}

/// Tokens written per TTL tier, by the API's tier name (`5m`, `1h`; OpenAI's `30m`, `12h`).
pub type ByTtl = BTreeMap<String, usize>;

/// How long an entry of a tier (`5m`, `1h`, `30m`, `12h`, …) lives, in seconds.
pub fn tier_seconds(tier: &str) -> Option<f64> {
    let unit = match tier.chars().last()? {
        's' => 1.0,
        'm' => 60.0,
        'h' => 3600.0,
        'd' => 86400.0,
        _ => return None,
    };
    let n: f64 = tier[..tier.len() - 1].parse().ok()?;
    Some(n * unit)
}

/// Anthropic's `diagnostics.cache_miss_reason`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MissReason {
    /// `model_changed`, `system_changed`, `tools_changed`, `messages_changed`,
    /// `previous_message_not_found` or `unavailable`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The server's estimate of the input tokens that would have been read.
    pub cache_missed_input_tokens: Option<usize>,
}

impl MissReason {
    /// The part of the request the reason names (`system`, `tools`, `messages`, `model`), or
    /// `None` where it names none (not found, unavailable).
    pub fn part(&self) -> Option<&'static str> {
        match self.kind.as_str() {
            "system_changed" => Some("system"),
            "tools_changed" => Some("tools"),
            "messages_changed" => Some("messages"),
            "model_changed" => Some("model"),
            _ => None,
        }
    }
}

/// The value at `keys` (object keys, none a number: as [`pointer`] finds it).
fn path<'a, D: Doc>(value: &'a D, keys: &[&str]) -> Option<&'a D> {
    keys.iter().try_fold(value, |v, key| v.get(key))
}

fn count<D: Doc>(value: Option<&D>) -> Option<usize> {
    match &*value?.json() {
        Json::Number(n) => n.as_u64().map(|n| n as usize),
        // OTLP JSON writes int64 as text.
        Json::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// The usage of a response, its `usage`, or a bare usage object.
pub fn of_response<D: Doc>(response: &D) -> Usage {
    let usage = ["usage", "usageMetadata", "usage_metadata"]
        .iter()
        .find_map(|k| response.get(k).filter(|u| u.is_object()))
        .unwrap_or(response);
    let at = |keys: &[&str]| count(path(usage, keys));
    let read_anthropic = at(&["cache_read_input_tokens"]);
    let read_bedrock = at(&["cacheReadInputTokens"]);
    let read = count(path(response, &["timings", "cache_n"]))
        .or_else(|| at(&["prompt_tokens_details", "cached_tokens"]))
        .or_else(|| at(&["input_tokens_details", "cached_tokens"]))
        .or(read_anthropic)
        .or(read_bedrock)
        .or_else(|| at(&["prompt_cache_hit_tokens"]))
        .or_else(|| at(&["cachedContentTokenCount"]))
        .or_else(|| at(&["cached_content_token_count"]))
        .or_else(|| {
            // Gemini writes proto3 JSON, which leaves a zero out: a usage with a prompt count
            // and no cached count read nothing.
            let gemini = at(&["promptTokenCount"]).or_else(|| at(&["prompt_token_count"]));
            gemini.map(|_| 0)
        });
    let written_anthropic = at(&["cache_creation_input_tokens"]);
    let written_bedrock = at(&["cacheWriteInputTokens"]);
    let prompt = at(&["prompt_tokens"])
        .or_else(|| at(&["promptTokenCount"]))
        .or_else(|| at(&["prompt_token_count"]))
        .or_else(|| {
            // Anthropic counts the read and the written parts outside `input_tokens`; the
            // Responses API counts its cached tokens inside (and has neither field).
            let input = at(&["input_tokens"])?;
            Some(
                input
                    .saturating_add(read_anthropic.unwrap_or(0))
                    .saturating_add(written_anthropic.unwrap_or(0)),
            )
        })
        .or_else(|| {
            // Bedrock too, outside `inputTokens`.
            let input = at(&["inputTokens"])?;
            Some(
                input
                    .saturating_add(read_bedrock.unwrap_or(0))
                    .saturating_add(written_bedrock.unwrap_or(0)),
            )
        })
        .or_else(|| {
            // DeepSeek without `prompt_tokens`: the two parts.
            Some(
                at(&["prompt_cache_hit_tokens"])?
                    .saturating_add(at(&["prompt_cache_miss_tokens"])?),
            )
        });
    let mut tiers = ByTtl::new();
    let mut tier = |name: &str, n: Option<usize>| {
        if let Some(n) = n {
            let sum = tiers.entry(name.to_owned()).or_default();
            *sum = sum.saturating_add(n);
        }
    };
    if let Some(t) = usage.get("cache_creation").filter(|c| c.is_object()) {
        tier("5m", count(t.get("ephemeral_5m_input_tokens")));
        tier("1h", count(t.get("ephemeral_1h_input_tokens")));
    }
    for d in usage
        .get("cacheDetails")
        .and_then(D::elements)
        .into_iter()
        .flatten()
    {
        let ttl = d.get("ttl").map(D::json);
        let name = ttl.as_deref().and_then(Json::as_str).unwrap_or("5m");
        tier(name, count(d.get("inputTokens")));
    }
    for details in ["prompt_tokens_details", "input_tokens_details"] {
        if let Some(t) = path(usage, &[details, "cache_write_tokens_details"]) {
            tier("30m", count(t.get("ttl_30m_tokens")));
            tier("12h", count(t.get("ttl_12h_tokens")));
        }
    }
    let written_by_ttl = (!tiers.is_empty()).then_some(tiers);
    let written_openai = at(&["prompt_tokens_details", "cache_write_tokens"])
        .or_else(|| at(&["input_tokens_details", "cache_write_tokens"]));
    Usage {
        read,
        prompt,
        written: written_anthropic.or(written_bedrock).or(written_openai),
        written_by_ttl,
        miss_reason: miss_reason(response),
    }
}

/// `diagnostics.cache_miss_reason` of an Anthropic response; `None` where absent or still
/// pending (`null`).
fn miss_reason<D: Doc>(response: &D) -> Option<MissReason> {
    let reason = pointer(response, "/diagnostics/cache_miss_reason")?;
    let kind = match reason.is_object() {
        true => reason.get("type")?.json().as_str()?.to_owned(),
        // A bare string, as some proxies flatten it.
        false => reason.json().as_str()?.to_owned(),
    };
    Some(MissReason {
        kind,
        cache_missed_input_tokens: count(reason.get("cache_missed_input_tokens")),
    })
}

/// The usage of a span, from its attributes (OpenTelemetry GenAI or OpenInference).
pub fn of_span(attributes: &Map<String, Json>) -> Usage {
    let int = |k: &str| count(attributes.get(k));
    Usage {
        read: int("gen_ai.usage.cache_read.input_tokens")
            .or_else(|| int("gen_ai.usage.cache_read_input_tokens"))
            .or_else(|| int("llm.token_count.prompt_details.cache_read")),
        prompt: int("gen_ai.usage.input_tokens").or_else(|| int("llm.token_count.prompt")),
        written: int("gen_ai.usage.cache_creation.input_tokens")
            .or_else(|| int("gen_ai.usage.cache_creation_input_tokens"))
            .or_else(|| int("llm.token_count.prompt_details.cache_write")),
        written_by_ttl: None,
        miss_reason: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_convention_gives_the_whole_prompt_and_the_reads() {
        for (name, response, read, prompt, written) in [
            (
                "openai chat",
                json!({"usage": {"prompt_tokens": 2000, "prompt_tokens_details": {"cached_tokens": 1024}}}),
                Some(1024),
                Some(2000),
                None,
            ),
            (
                "openai responses",
                json!({"usage": {"input_tokens": 2000, "input_tokens_details": {"cached_tokens": 1152}}}),
                Some(1152),
                Some(2000),
                None,
            ),
            (
                "anthropic",
                json!({"usage": {"input_tokens": 20, "cache_read_input_tokens": 1800, "cache_creation_input_tokens": 300}}),
                Some(1800),
                Some(2120),
                Some(300),
            ),
            (
                "bedrock",
                json!({"usage": {"inputTokens": 10, "outputTokens": 200, "totalTokens": 5227,
                                 "cacheReadInputTokens": 0, "cacheWriteInputTokens": 5017}}),
                Some(0),
                Some(5027),
                Some(5017),
            ),
            (
                "deepseek",
                json!({"usage": {"prompt_tokens": 1500, "prompt_cache_hit_tokens": 1280, "prompt_cache_miss_tokens": 220}}),
                Some(1280),
                Some(1500),
                None,
            ),
            (
                "deepseek, parts only",
                json!({"usage": {"prompt_cache_hit_tokens": 1280, "prompt_cache_miss_tokens": 220}}),
                Some(1280),
                Some(1500),
                None,
            ),
            (
                "gemini REST",
                json!({"usageMetadata": {"promptTokenCount": 5000, "cachedContentTokenCount": 4096}}),
                Some(4096),
                Some(5000),
                None,
            ),
            (
                "gemini, nothing cached (proto3 JSON leaves the zero out)",
                json!({"usageMetadata": {"promptTokenCount": 5000, "candidatesTokenCount": 3}}),
                Some(0),
                Some(5000),
                None,
            ),
            (
                "gemini SDK dump",
                json!({"usage_metadata": {"prompt_token_count": 5000, "cached_content_token_count": 4096}}),
                Some(4096),
                Some(5000),
                None,
            ),
            (
                "llama.cpp",
                json!({"timings": {"cache_n": 9}, "usage": {"prompt_tokens": 12}}),
                Some(9),
                Some(12),
                None,
            ),
        ] {
            let usage = of_response(&response);
            assert_eq!(
                (usage.read, usage.prompt, usage.written),
                (read, prompt, written),
                "{name}"
            );
        }
    }

    #[test]
    fn ttl_tiers_and_the_miss_reason() {
        let anthropic = of_response(&json!({
            "usage": {"input_tokens": 5, "cache_creation_input_tokens": 3000, "cache_read_input_tokens": 0,
                      "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000}},
            "diagnostics": {"cache_miss_reason": {"type": "tools_changed", "cache_missed_input_tokens": 2900}}
        }));
        let tiers = |pairs: &[(&str, usize)]| -> Option<ByTtl> {
            Some(pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect())
        };
        assert_eq!(
            anthropic.written_by_ttl,
            tiers(&[("5m", 1000), ("1h", 2000)])
        );
        let reason = anthropic.miss_reason.unwrap();
        assert_eq!(
            (reason.kind.as_str(), reason.cache_missed_input_tokens),
            ("tools_changed", Some(2900))
        );
        assert_eq!(reason.part(), Some("tools"));
        // Pending: `null`.
        let pending = of_response(&json!({"usage": {"input_tokens": 1},
                                           "diagnostics": {"cache_miss_reason": null}}));
        assert_eq!(pending.miss_reason, None);
        let bedrock = of_response(
            &json!({"usage": {"inputTokens": 1, "cacheWriteInputTokens": 7,
            "cacheDetails": [{"ttl": "1h", "inputTokens": 4}, {"ttl": "5m", "inputTokens": 3}]}}),
        );
        assert_eq!(bedrock.written_by_ttl, tiers(&[("5m", 3), ("1h", 4)]));
        let openai = of_response(
            &json!({"usage": {"input_tokens": 5000, "input_tokens_details": {
            "cached_tokens": 0, "cache_write_tokens": 4096,
            "cache_write_tokens_details": {"ttl_30m_tokens": 0, "ttl_12h_tokens": 4096}}}}),
        );
        assert_eq!(
            (openai.read, openai.prompt, openai.written),
            (Some(0), Some(5000), Some(4096))
        );
        assert_eq!(openai.written_by_ttl, tiers(&[("12h", 4096), ("30m", 0)]));
        assert_eq!(tier_seconds("12h"), Some(43200.0));
        assert_eq!(tier_seconds("5m"), Some(300.0));
        assert_eq!(tier_seconds("soon"), None);
    }

    #[test]
    fn counts_from_an_untrusted_log_saturate() {
        let max = u64::MAX;
        let usage = of_response(&json!({"usage": {"input_tokens": max,
            "cache_read_input_tokens": max, "cache_creation_input_tokens": max,
            "cache_creation": {"ephemeral_5m_input_tokens": max, "ephemeral_1h_input_tokens": -1}}}));
        assert_eq!(usage.prompt, Some(usize::MAX));
        let mut writes = crate::audit::hosted::CacheWrites::default();
        writes.add(&usage);
        writes.add(&usage);
        assert_eq!(writes.write_tokens, usize::MAX);
        assert_eq!(writes.write_tokens_by_ttl["5m"], usize::MAX);
    }

    #[test]
    fn span_attributes_current_deprecated_and_openinference() {
        let attrs = |pairs: &[(&str, Json)]| -> Map<String, Json> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect()
        };
        let current = of_span(&attrs(&[
            ("gen_ai.usage.input_tokens", json!(3000)),
            ("gen_ai.usage.cache_read.input_tokens", json!(2048)),
            ("gen_ai.usage.cache_creation.input_tokens", json!(900)),
        ]));
        assert_eq!(
            (current.read, current.prompt, current.written),
            (Some(2048), Some(3000), Some(900))
        );
        let deprecated = of_span(&attrs(&[(
            "gen_ai.usage.cache_read_input_tokens",
            json!("512"),
        )]));
        assert_eq!(deprecated.read, Some(512));
        let openinference = of_span(&attrs(&[
            ("llm.token_count.prompt", json!(1200)),
            ("llm.token_count.prompt_details.cache_read", json!(1024)),
        ]));
        assert_eq!(
            (openinference.read, openinference.prompt),
            (Some(1024), Some(1200))
        );
    }
}
