//! Which server answers, how it isolates a cold request, and where its streams report
//! cached tokens. How it rounds cache hits is the engine profile of [`crate::cache_profile`].

use crate::cache_profile::{CacheProfile as Profile, CacheProfileKind};
use crate::http::{self, Endpoint, Timeouts};
use serde_json::Value as Json;
use std::time::Duration;

/// The kind of server `measure` talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    LlamaCpp,
    Vllm,
    Sglang,
    Ollama,
    DeepSeek,
    /// Any other OpenAI-compatible server.
    OpenAi,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::LlamaCpp => "llama.cpp",
            Engine::Vllm => "vllm",
            Engine::Sglang => "sglang",
            Engine::Ollama => "ollama",
            Engine::DeepSeek => "deepseek",
            Engine::OpenAi => "openai",
        }
    }

    /// The cache profile that predicts this server's hits (see [`crate::cache_profile`]).
    pub fn default_profile(self) -> Profile {
        Profile::of(match self {
            Engine::LlamaCpp => CacheProfileKind::LlamaCpp,
            Engine::Vllm => CacheProfileKind::Vllm,
            Engine::Sglang => CacheProfileKind::Sglang,
            Engine::DeepSeek => CacheProfileKind::Deepseek,
            // Ollama runs llama.cpp; an unknown local server is modelled token by token.
            Engine::Ollama | Engine::OpenAi => CacheProfileKind::Tokens,
        })
    }

    /// The server behind a profile named with `--engine` (or the config's `engine:`).
    pub fn from_profile(kind: CacheProfileKind) -> Engine {
        match kind {
            CacheProfileKind::LlamaCpp => Engine::LlamaCpp,
            CacheProfileKind::Vllm => Engine::Vllm,
            CacheProfileKind::Sglang => Engine::Sglang,
            CacheProfileKind::Deepseek => Engine::DeepSeek,
            _ => Engine::OpenAi,
        }
    }

    /// How a request is kept from reusing any earlier prefix.
    pub fn isolation(self) -> Isolation {
        match self {
            Engine::LlamaCpp => Isolation::CachePromptFalse,
            Engine::Vllm => Isolation::CacheSalt,
            Engine::Sglang => Isolation::FlushCache,
            // No per-request switch: the cold request is the template's first, and its
            // prefix must not have been sent before (documented fallback).
            Engine::Ollama | Engine::DeepSeek | Engine::OpenAi => Isolation::None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// llama.cpp: `cache_prompt: false` computes the whole prompt (its KV still stays in the slot).
    CachePromptFalse,
    /// vLLM: a `cache_salt` no other request used.
    CacheSalt,
    /// SGLang: `POST /flush_cache` before the request.
    FlushCache,
    None,
}

impl Isolation {
    /// A short stable name for the JSON report.
    pub fn name(self) -> &'static str {
        match self {
            Isolation::CachePromptFalse => "cache_prompt_false",
            Isolation::CacheSalt => "cache_salt",
            Isolation::FlushCache => "flush_cache",
            Isolation::None => "none",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Isolation::CachePromptFalse => "cold requests send cache_prompt:false",
            Isolation::CacheSalt => "cold requests carry a fresh cache_salt",
            Isolation::FlushCache => "POST /flush_cache before each cold request",
            Isolation::None => {
                "no cache isolation on this engine: a cold request is only cold if no earlier request shared its prefix"
            }
        }
    }
}

/// The KV cache geometry a server reports about itself, and where each figure came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    pub block_size: usize,
    /// Blocks allocated for the KV cache (vLLM's count includes its one reserved null block).
    pub num_blocks: Option<usize>,
    /// Where the figures were read, e.g. `/metrics vllm:cache_config_info`.
    pub source: &'static str,
}

pub const VLLM_GEOMETRY_SOURCE: &str = "/metrics vllm:cache_config_info";

/// Reads the geometry from a `/metrics` scrape: vLLM's `vllm:cache_config_info` labels
/// `block_size` and `num_gpu_blocks`. None when the scrape has no such series.
// Kept apart so that it moves onto the shared Prometheus parser in one place.
pub fn geometry_from_metrics(text: &str) -> Option<Geometry> {
    match crate::capacity::server::parse_vllm_metrics(text).ok()? {
        crate::capacity::server::ServerCapacity::Vllm {
            block_size,
            num_gpu_blocks,
            ..
        } => Some(Geometry {
            block_size: usize::try_from(block_size).ok().filter(|b| *b > 0)?,
            num_blocks: usize::try_from(num_gpu_blocks).ok(),
            source: VLLM_GEOMETRY_SOURCE,
        }),
        _ => None,
    }
}

/// Asks the server's `/metrics` for its geometry (see [`geometry_from_metrics`]).
pub fn read_geometry(endpoint: &Endpoint, timeouts: Timeouts) -> Option<Geometry> {
    let timeouts = Timeouts {
        request: timeouts.request.min(Duration::from_secs(10)),
        ..timeouts
    };
    let fetched = http::fetch(endpoint, "GET", "/metrics", None, timeouts, 16 << 20).ok()?;
    if fetched.status != 200 {
        return None;
    }
    geometry_from_metrics(&String::from_utf8_lossy(&fetched.body))
}

/// What the engine reports per request, from any chunk of the stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageReport {
    pub prompt_tokens: Option<usize>,
    pub cached_tokens: Option<usize>,
    /// vLLM: prompt tokens this request wrote into the prefix cache as new blocks
    /// (`usage.prompt_tokens_details.created_cache_tokens`).
    pub created_cache_tokens: Option<usize>,
}

impl UsageReport {
    /// Folds in what one chunk reports; later chunks win.
    pub fn absorb(&mut self, chunk: &Json) {
        let get = |path: &[&str]| -> Option<usize> {
            let mut v = chunk;
            for key in path {
                v = v.get(key)?;
            }
            v.as_u64().map(|n| n as usize)
        };
        let cached = get(&["usage", "prompt_tokens_details", "cached_tokens"])
            .or_else(|| get(&["timings", "cache_n"]))
            .or_else(|| get(&["meta_info", "cached_tokens"]))
            .or_else(|| get(&["usage", "prompt_cache_hit_tokens"]))
            .or_else(|| get(&["prompt_eval_cached_count"]))
            .or_else(|| get(&["usage", "prompt_eval_cached_count"]));
        let prompt = get(&["usage", "prompt_tokens"])
            .or_else(|| get(&["meta_info", "prompt_tokens"]))
            .or_else(|| get(&["prompt_eval_count"]))
            .or_else(|| Some(get(&["timings", "prompt_n"])? + get(&["timings", "cache_n"])?));
        if cached.is_some() {
            self.cached_tokens = cached;
        }
        if let Some(created) = get(&["usage", "prompt_tokens_details", "created_cache_tokens"]) {
            self.created_cache_tokens = Some(created);
        }
        if prompt.is_some() {
            self.prompt_tokens = prompt;
        }
    }
}

/// Looks at the server and names its engine: `/props` (llama.cpp), `/v1/models`'
/// `owned_by`, the `Server` header, Ollama's `/api/version`, SGLang's `/get_server_info`,
/// vLLM's `/version`. Unknown servers are generic OpenAI-compatible ones.
pub fn detect(endpoint: &Endpoint, connect: Duration) -> (Engine, Vec<String>) {
    let timeouts = Timeouts {
        connect,
        request: Duration::from_secs(10),
    };
    let mut evidence = Vec::new();
    let get = |path: &str| -> Option<(http::Fetched, Json)> {
        let fetched = http::fetch(endpoint, "GET", path, None, timeouts, 1 << 20).ok()?;
        let json = serde_json::from_slice(&fetched.body).unwrap_or(Json::Null);
        Some((fetched, json))
    };
    if let Some((props, json)) = get("/props") {
        let server = props.header("server").map(str::to_ascii_lowercase);
        if server.as_deref().is_some_and(|s| s.contains("llama.cpp")) {
            evidence.push("Server: llama.cpp header".into());
            return (Engine::LlamaCpp, evidence);
        }
        if props.status == 200 && json.get("default_generation_settings").is_some() {
            evidence.push("/props has default_generation_settings".into());
            return (Engine::LlamaCpp, evidence);
        }
    }
    if let Some((_, json)) = get("/v1/models").filter(|(f, _)| f.status == 200) {
        let owner = json
            .pointer("/data/0/owned_by")
            .and_then(Json::as_str)
            .unwrap_or("")
            .to_ascii_lowercase();
        let engine = match owner.as_str() {
            "llamacpp" | "llama.cpp" => Some(Engine::LlamaCpp),
            "vllm" => Some(Engine::Vllm),
            "sglang" => Some(Engine::Sglang),
            "library" | "ollama" => Some(Engine::Ollama),
            "deepseek" => Some(Engine::DeepSeek),
            _ => None,
        };
        if let Some(engine) = engine {
            evidence.push(format!("/v1/models owned_by {owner}"));
            return (engine, evidence);
        }
    }
    if let Some((_, json)) = get("/api/version").filter(|(f, _)| f.status == 200) {
        if json.get("version").is_some() {
            evidence.push("/api/version answers (Ollama)".into());
            return (Engine::Ollama, evidence);
        }
    }
    if let Some((_, json)) = get("/get_server_info").filter(|(f, _)| f.status == 200) {
        if json.is_object() {
            evidence.push("/get_server_info answers (SGLang)".into());
            return (Engine::Sglang, evidence);
        }
    }
    if let Some((_, json)) = get("/version").filter(|(f, _)| f.status == 200) {
        if json.get("version").is_some() {
            evidence.push("/version answers (vLLM)".into());
            return (Engine::Vllm, evidence);
        }
    }
    evidence.push("no engine-specific endpoint answered".into());
    (Engine::OpenAi, evidence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn profiles_round_and_keep_the_last_token() {
        let llama = Engine::LlamaCpp.default_profile();
        assert_eq!(llama.cached_tokens(1558, 1572), 1558);
        assert_eq!(llama.cached_tokens(1572, 1572), 1571);
        let vllm = Engine::Vllm.default_profile();
        assert_eq!(vllm.cached_tokens(1558, 1572), 1552);
        assert_eq!(Engine::from_profile(CacheProfileKind::Tgi), Engine::OpenAi);
    }

    #[test]
    fn geometry_from_a_real_vllm_scrape() {
        // vllm-cpu 0.32.0 on CPU, default block size (tests/fixtures/metrics/README.md).
        let scrape = include_str!("../../tests/fixtures/metrics/vllm-cpu-0.32.0-bs128.prom");
        assert_eq!(
            geometry_from_metrics(scrape),
            Some(Geometry {
                block_size: 128,
                num_blocks: Some(8192),
                source: VLLM_GEOMETRY_SOURCE,
            })
        );
        assert_eq!(geometry_from_metrics("vllm:num_requests_running 0\n"), None);
        // Before the engine has sized its cache the count is "None": no geometry yet.
        assert_eq!(
            geometry_from_metrics(
                "vllm:cache_config_info{block_size=\"None\",num_gpu_blocks=\"None\"} 1.0\n"
            ),
            None
        );
    }

    #[test]
    fn usage_fields_of_each_engine() {
        let mut u = UsageReport::default();
        u.absorb(
            &json!({"usage": {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 7}}}),
        );
        assert_eq!(
            u,
            UsageReport {
                prompt_tokens: Some(10),
                cached_tokens: Some(7),
                created_cache_tokens: None,
            }
        );
        let mut u = UsageReport::default();
        u.absorb(&json!({"timings": {"cache_n": 5, "prompt_n": 3}}));
        assert_eq!(
            u,
            UsageReport {
                prompt_tokens: Some(8),
                cached_tokens: Some(5),
                created_cache_tokens: None,
            }
        );
        let mut u = UsageReport::default();
        u.absorb(&json!({"meta_info": {"cached_tokens": 4, "prompt_tokens": 9}}));
        assert_eq!(
            u,
            UsageReport {
                prompt_tokens: Some(9),
                cached_tokens: Some(4),
                created_cache_tokens: None,
            }
        );
        let mut u = UsageReport::default();
        u.absorb(&json!({"usage": {"prompt_tokens": 100, "prompt_cache_hit_tokens": 64}}));
        assert_eq!(u.cached_tokens, Some(64));
        let mut u = UsageReport::default();
        u.absorb(&json!({"prompt_eval_count": 12, "prompt_eval_cached_count": 2}));
        assert_eq!(
            u,
            UsageReport {
                prompt_tokens: Some(12),
                cached_tokens: Some(2),
                created_cache_tokens: None,
            }
        );
        let mut u = UsageReport::default();
        u.absorb(&json!({"usage": {"prompt_tokens": 1713, "prompt_tokens_details": {"cached_tokens": 1664, "created_cache_tokens": 0}}}));
        assert_eq!(u.created_cache_tokens, Some(0));
        let mut u = UsageReport::default();
        u.absorb(&json!({"choices": [{"text": "x"}]}));
        assert_eq!(u, UsageReport::default());
    }
}
