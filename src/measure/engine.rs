//! Which serving engine answers, how it isolates a cold request, how it rounds cache hits,
//! and where its streams report cached tokens.

use super::http::{self, Endpoint, Timeouts};
use serde_json::Value as Json;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Engine {
    #[value(name = "llama.cpp", aliases = ["llamacpp", "llama-cpp"])]
    LlamaCpp,
    #[value(name = "vllm")]
    Vllm,
    #[value(name = "sglang")]
    Sglang,
    #[value(name = "ollama")]
    Ollama,
    #[value(name = "deepseek")]
    DeepSeek,
    /// Any other OpenAI-compatible server.
    #[value(name = "openai")]
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

    /// How the engine turns a shared prefix into cached tokens.
    pub fn profile(self, block_size: Option<usize>) -> CacheProfile {
        let block = |default: usize| block_size.unwrap_or(default).max(1);
        match self {
            // Per-slot token-level LCP; a full hit still recomputes the last token.
            Engine::LlamaCpp | Engine::Ollama => CacheProfile {
                block: block(1),
                keep_last: true,
            },
            // Hashes full blocks (16 by default); the last token is always recomputed.
            Engine::Vllm => CacheProfile {
                block: block(16),
                keep_last: true,
            },
            // Radix tree, token level unless page_size > 1.
            Engine::Sglang => CacheProfile {
                block: block(1),
                keep_last: true,
            },
            // A disk cache in 64-token units.
            Engine::DeepSeek => CacheProfile {
                block: block(64),
                keep_last: true,
            },
            Engine::OpenAi => CacheProfile {
                block: block(1),
                keep_last: true,
            },
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheProfile {
    /// Hits are whole blocks of this many tokens.
    pub block: usize,
    /// A fully cached prompt still computes its last token (hit ≤ n − 1).
    pub keep_last: bool,
}

impl CacheProfile {
    /// Cached tokens the engine should report for a prompt of `n` tokens that shares
    /// `lcp` tokens with an earlier request.
    pub fn predict(&self, lcp: usize, n: usize) -> usize {
        let cap = if self.keep_last {
            n.saturating_sub(1)
        } else {
            n
        };
        let round = |x: usize| x / self.block * self.block;
        round(lcp).min(round(cap))
    }
}

/// What the engine reports per request, from any chunk of the stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageReport {
    pub prompt_tokens: Option<usize>,
    pub cached_tokens: Option<usize>,
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
    let get = |path: &str| -> Option<(u16, Vec<(String, String)>, Json)> {
        let (status, headers, body) =
            http::fetch(endpoint, "GET", path, None, timeouts, 1 << 20).ok()?;
        let json = serde_json::from_slice(&body).unwrap_or(Json::Null);
        Some((status, headers, json))
    };
    if let Some((status, headers, json)) = get("/props") {
        let server = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("server"))
            .map(|(_, v)| v.to_ascii_lowercase());
        if server.as_deref().is_some_and(|s| s.contains("llama.cpp")) {
            evidence.push("Server: llama.cpp header".into());
            return (Engine::LlamaCpp, evidence);
        }
        if status == 200 && json.get("default_generation_settings").is_some() {
            evidence.push("/props has default_generation_settings".into());
            return (Engine::LlamaCpp, evidence);
        }
    }
    if let Some((200, _, json)) = get("/v1/models") {
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
    if let Some((200, _, json)) = get("/api/version") {
        if json.get("version").is_some() {
            evidence.push("/api/version answers (Ollama)".into());
            return (Engine::Ollama, evidence);
        }
    }
    if let Some((200, _, json)) = get("/get_server_info") {
        if json.is_object() {
            evidence.push("/get_server_info answers (SGLang)".into());
            return (Engine::Sglang, evidence);
        }
    }
    if let Some((200, _, json)) = get("/version") {
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
    fn prediction_rounds_and_keeps_the_last_token() {
        let llama = Engine::LlamaCpp.profile(None);
        assert_eq!(llama.predict(1558, 1572), 1558);
        assert_eq!(llama.predict(1572, 1572), 1571);
        let vllm = Engine::Vllm.profile(None);
        assert_eq!(vllm.predict(1558, 1572), 1552);
        assert_eq!(vllm.predict(32, 32), 16);
        assert_eq!(Engine::Vllm.profile(Some(32)).predict(60, 100), 32);
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
                cached_tokens: Some(7)
            }
        );
        let mut u = UsageReport::default();
        u.absorb(&json!({"timings": {"cache_n": 5, "prompt_n": 3}}));
        assert_eq!(
            u,
            UsageReport {
                prompt_tokens: Some(8),
                cached_tokens: Some(5)
            }
        );
        let mut u = UsageReport::default();
        u.absorb(&json!({"meta_info": {"cached_tokens": 4, "prompt_tokens": 9}}));
        assert_eq!(
            u,
            UsageReport {
                prompt_tokens: Some(9),
                cached_tokens: Some(4)
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
                cached_tokens: Some(2)
            }
        );
        let mut u = UsageReport::default();
        u.absorb(&json!({"choices": [{"text": "x"}]}));
        assert_eq!(u, UsageReport::default());
    }
}
