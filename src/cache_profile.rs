//! Cache profiles (engines and providers): what a server actually caches of a shared token prefix.
//!
//! The analysis measures `shared_prefix_tokens`, the longest token prefix every render
//! shares. No server caches exactly that: vLLM keeps whole 16-token blocks, every local
//! engine recomputes the last prompt token, OpenAI caches nothing below 1,024 tokens and
//! then in 128-token steps. A profile turns the token prefix into `cached_tokens_expected`:
//!
//! ```text
//! limit  = min(LCP, n)            (n = prompt length in tokens)
//! limit  = min(limit, n − 1)      (local engines: the last token is always recomputed)
//! cached = unit · ⌊limit / unit⌋  (whole blocks, pages or steps)
//! cached = 0 if cached < minimum  (hosted APIs)
//! ```
//!
//! For vLLM this is min(B·⌊LCP/B⌋, B·⌊(n−1)/B⌋), since ⌊·/B⌋ is monotone. With several
//! renders, n is the shortest one: the cached count only grows with n, so that is the
//! count every request is guaranteed.
//!
//! Selected with `check --engine NAME[:KEY=VALUE,...]` or config `engine:` (a name, or a
//! mapping with `name` and options). Without either, the profile is [`CacheProfileKind::Tokens`]:
//! token-level and at most n − 1, like llama.cpp, which is what any prefix-caching
//! server can do at best.

use crate::error::{Error, Result};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::fmt;

/// When the hosted-API tables below were last checked against published documentation.
pub const TABLE_CHECKED: &str = "2026-11-29";

/// Anthropic's minimum cacheable length per model, by model-id prefix (longest wins).
///
/// Checked [`TABLE_CHECKED`] against the published tables quoted by docs.orq.ai (proxy
/// prompt-caching page) and docs.litellm.ai (prompt caching, updated 2026-10-07).
/// Where they disagree (Sonnet 4.6: 2,048 against "Sonnet 4.x: 1,024") the larger value is
/// kept, so prefixlint warns rather than promises a hit. `min_tokens:` overrides it.
pub const ANTHROPIC_MINIMUMS: &[(&str, usize)] = &[
    ("claude-opus-5", 512),
    ("claude-sonnet-5", 1024),
    ("claude-opus-4-8", 1024),
    ("claude-opus-4-7", 4096),
    ("claude-opus-4-6", 4096),
    ("claude-opus-4-5", 4096),
    ("claude-haiku-4-5", 4096),
    ("claude-sonnet-4-6", 2048),
    ("claude-sonnet-4-5", 1024),
    ("claude-opus-4-1", 1024),
    ("claude-opus-4", 1024),
    ("claude-sonnet-4", 1024),
    ("claude-3-7-sonnet", 1024),
    ("claude-3-5-sonnet", 1024),
    ("claude-3-opus", 1024),
    ("claude-3-5-haiku", 2048),
    ("claude-3-haiku", 2048),
];
pub const ANTHROPIC_DEFAULT_MODEL: &str = "claude-sonnet-4-5";
/// `cache_control` breakpoints allowed per request.
pub const ANTHROPIC_MAX_BREAKPOINTS: usize = 4;

/// Gemini's implicit-caching minimums, by model-id prefix. Checked [`TABLE_CHECKED`]
/// against Google's implicit-caching announcement (2.5 Flash 1,024, 2.5 Pro 2,048).
pub const GEMINI_MINIMUMS: &[(&str, usize)] =
    &[("gemini-2.5-flash", 1024), ("gemini-2.5-pro", 2048)];
pub const GEMINI_DEFAULT_MODEL: &str = "gemini-2.5-flash";

/// DeepSeek caches in 64-token units and nothing below one unit, per its older context
/// caching docs; the current docs describe "cache prefix units" without a size.
pub const DEEPSEEK_UNIT: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheProfileKind {
    /// The default: token-level, at most n − 1.
    Tokens,
    Vllm,
    Sglang,
    LlamaCpp,
    Tgi,
    Openai,
    Anthropic,
    Gemini,
    Deepseek,
}

impl CacheProfileKind {
    pub const ALL: [CacheProfileKind; 9] = [
        CacheProfileKind::Tokens,
        CacheProfileKind::Vllm,
        CacheProfileKind::Sglang,
        CacheProfileKind::LlamaCpp,
        CacheProfileKind::Tgi,
        CacheProfileKind::Openai,
        CacheProfileKind::Anthropic,
        CacheProfileKind::Gemini,
        CacheProfileKind::Deepseek,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CacheProfileKind::Tokens => "tokens",
            CacheProfileKind::Vllm => "vllm",
            CacheProfileKind::Sglang => "sglang",
            CacheProfileKind::LlamaCpp => "llama.cpp",
            CacheProfileKind::Tgi => "tgi",
            CacheProfileKind::Openai => "openai",
            CacheProfileKind::Anthropic => "anthropic",
            CacheProfileKind::Gemini => "gemini",
            CacheProfileKind::Deepseek => "deepseek",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        let key = name.trim().to_ascii_lowercase().replace(['_', '-'], "");
        let kind = match key.as_str() {
            "tokens" | "token" | "default" => CacheProfileKind::Tokens,
            "vllm" => CacheProfileKind::Vllm,
            "sglang" => CacheProfileKind::Sglang,
            "llama.cpp" | "llamacpp" | "llamaserver" => CacheProfileKind::LlamaCpp,
            "tgi" => CacheProfileKind::Tgi,
            "openai" => CacheProfileKind::Openai,
            "anthropic" | "claude" => CacheProfileKind::Anthropic,
            "gemini" | "google" => CacheProfileKind::Gemini,
            "deepseek" => CacheProfileKind::Deepseek,
            _ => return None,
        };
        Some(kind)
    }

    /// Local engines compute the last prompt token again to get its logits.
    fn recomputes_last_token(self) -> bool {
        matches!(
            self,
            CacheProfileKind::Tokens
                | CacheProfileKind::Vllm
                | CacheProfileKind::Sglang
                | CacheProfileKind::LlamaCpp
                | CacheProfileKind::Tgi
        )
    }
}

/// TGI's attention backends: prefix caching works in blocks of their size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TgiBackend {
    Flashinfer,
    Flashdecoding,
    Paged,
}

impl TgiBackend {
    pub fn name(self) -> &'static str {
        match self {
            TgiBackend::Flashinfer => "flashinfer",
            TgiBackend::Flashdecoding => "flashdecoding",
            TgiBackend::Paged => "paged",
        }
    }

    fn block(self) -> usize {
        match self {
            TgiBackend::Flashinfer => 1,
            TgiBackend::Flashdecoding => 256,
            TgiBackend::Paged => 16,
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "flashinfer" => Some(TgiBackend::Flashinfer),
            "flashdecoding" => Some(TgiBackend::Flashdecoding),
            "paged" => Some(TgiBackend::Paged),
            _ => None,
        }
    }
}

/// The options of `engine:` (config) and `--engine NAME:KEY=VALUE,...` (command line).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheProfileConfig {
    pub name: String,
    /// vLLM and TGI: the KV block size in tokens.
    pub block_size: Option<usize>,
    /// SGLang: `--page-size`.
    pub page_size: Option<usize>,
    /// TGI: flashinfer, flashdecoding or paged.
    pub backend: Option<String>,
    /// Anthropic and Gemini: the model id, which sets the minimum.
    pub model: Option<String>,
    /// Overrides the minimum cacheable length (for models missing from the tables).
    pub min_tokens: Option<usize>,
}

/// `engine: vllm` or `engine: {name: vllm, block_size: 16}`.
impl<'de> Deserialize<'de> for CacheProfileSetting {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NameOrMap;
        impl<'de> Visitor<'de> for NameOrMap {
            type Value = CacheProfileSetting;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an engine name (e.g. vllm) or a mapping with `name` and options")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<CacheProfileSetting, E> {
                Ok(CacheProfileSetting(CacheProfileConfig {
                    name: v.to_owned(),
                    ..CacheProfileConfig::default()
                }))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<CacheProfileSetting, A::Error> {
                CacheProfileConfig::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(CacheProfileSetting)
            }
        }
        deserializer.deserialize_any(NameOrMap)
    }
}

/// The config's `engine:` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheProfileSetting(pub CacheProfileConfig);

impl CacheProfileConfig {
    /// `vllm`, `vllm:block_size=32`, `anthropic:model=claude-haiku-4-5,min_tokens=4096`.
    pub fn parse_cli(spec: &str) -> Result<Self> {
        let (name, options) = spec.split_once(':').unwrap_or((spec, ""));
        let mut config = CacheProfileConfig {
            name: name.to_owned(),
            ..CacheProfileConfig::default()
        };
        for option in options.split(',').filter(|o| !o.trim().is_empty()) {
            let (key, value) = option.split_once('=').ok_or_else(|| {
                Error::input_with_help(
                    format!("--engine {spec}: option `{option}` is not KEY=VALUE"),
                    "e.g. --engine vllm:block_size=32",
                )
            })?;
            let (key, value) = (key.trim(), value.trim());
            let number = || {
                value.parse::<usize>().map_err(|_| {
                    Error::input(format!(
                        "--engine {spec}: `{key}` needs a whole number, not `{value}`"
                    ))
                })
            };
            match key {
                "block_size" => config.block_size = Some(number()?),
                "page_size" => config.page_size = Some(number()?),
                "min_tokens" => config.min_tokens = Some(number()?),
                "backend" => config.backend = Some(value.to_owned()),
                "model" => config.model = Some(value.to_owned()),
                _ => {
                    return Err(Error::input_with_help(
                        format!("--engine {spec}: unknown option `{key}`"),
                        "options: block_size, page_size, backend, model, min_tokens",
                    ))
                }
            }
        }
        Ok(config)
    }
}

/// A resolved profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheProfile {
    pub kind: CacheProfileKind,
    pub name: &'static str,
    /// Hits are whole multiples of this many tokens (block, page or step).
    pub unit_tokens: usize,
    /// Below this many tokens nothing is cached.
    pub min_tokens: usize,
    /// At most n − 1 tokens are cached, since the last one is recomputed.
    pub recomputes_last_token: bool,
    pub model: Option<String>,
    pub backend: Option<TgiBackend>,
}

impl Default for CacheProfile {
    fn default() -> Self {
        CacheProfile::of(CacheProfileKind::Tokens)
    }
}

impl CacheProfile {
    /// A profile with its defaults.
    pub fn of(kind: CacheProfileKind) -> CacheProfile {
        let (unit_tokens, min_tokens, model, backend) = match kind {
            CacheProfileKind::Tokens | CacheProfileKind::LlamaCpp | CacheProfileKind::Sglang => {
                (1, 0, None, None)
            }
            CacheProfileKind::Vllm => (16, 0, None, None),
            CacheProfileKind::Tgi => (
                TgiBackend::Flashinfer.block(),
                0,
                None,
                Some(TgiBackend::Flashinfer),
            ),
            CacheProfileKind::Openai => (128, 1024, None, None),
            CacheProfileKind::Anthropic => (
                1,
                lookup(ANTHROPIC_MINIMUMS, ANTHROPIC_DEFAULT_MODEL).unwrap_or(1024),
                Some(ANTHROPIC_DEFAULT_MODEL.to_owned()),
                None,
            ),
            CacheProfileKind::Gemini => (
                1,
                lookup(GEMINI_MINIMUMS, GEMINI_DEFAULT_MODEL).unwrap_or(1024),
                Some(GEMINI_DEFAULT_MODEL.to_owned()),
                None,
            ),
            CacheProfileKind::Deepseek => (DEEPSEEK_UNIT, DEEPSEEK_UNIT, None, None),
        };
        CacheProfile {
            kind,
            name: kind.name(),
            unit_tokens,
            min_tokens,
            recomputes_last_token: kind.recomputes_last_token(),
            model,
            backend,
        }
    }

    /// Resolves `--engine` / `engine:`; `context` names where it came from in messages.
    pub fn from_config(config: &CacheProfileConfig, context: &str) -> Result<CacheProfile> {
        let kind = CacheProfileKind::from_name(&config.name).ok_or_else(|| {
            Error::input_with_help(
                format!("{context}: unknown engine `{}`", config.name),
                format!(
                    "known engines: {}",
                    CacheProfileKind::ALL.map(CacheProfileKind::name).join(", ")
                ),
            )
        })?;
        let mut engine = CacheProfile::of(kind);
        let not_for = |option: &str| {
            Error::input(format!(
                "{context}: `{option}` does not apply to engine `{}`",
                kind.name()
            ))
        };
        let positive = |option: &str, value: usize| {
            if value == 0 {
                Err(Error::input(format!(
                    "{context}: `{option}` must be at least 1"
                )))
            } else {
                Ok(value)
            }
        };
        if let Some(backend) = &config.backend {
            if kind != CacheProfileKind::Tgi {
                return Err(not_for("backend"));
            }
            let backend = TgiBackend::parse(backend).ok_or_else(|| {
                Error::input_with_help(
                    format!("{context}: unknown TGI backend `{backend}`"),
                    "backends: flashinfer (block 1), flashdecoding (block 256), paged (block 16)",
                )
            })?;
            engine.backend = Some(backend);
            engine.unit_tokens = backend.block();
        }
        if let Some(block) = config.block_size {
            if !matches!(kind, CacheProfileKind::Vllm | CacheProfileKind::Tgi) {
                return Err(not_for("block_size"));
            }
            engine.unit_tokens = positive("block_size", block)?;
        }
        if let Some(page) = config.page_size {
            if kind != CacheProfileKind::Sglang {
                return Err(not_for("page_size"));
            }
            engine.unit_tokens = positive("page_size", page)?;
        }
        if let Some(model) = &config.model {
            let table = match kind {
                CacheProfileKind::Anthropic => ANTHROPIC_MINIMUMS,
                CacheProfileKind::Gemini => GEMINI_MINIMUMS,
                _ => return Err(not_for("model")),
            };
            engine.model = Some(model.clone());
            match (lookup(table, model), config.min_tokens) {
                (Some(minimum), _) => engine.min_tokens = minimum,
                (None, Some(_)) => {}
                (None, None) => {
                    return Err(Error::input_with_help(
                        format!(
                            "{context}: no minimum cacheable length known for {} model `{model}` (table checked {TABLE_CHECKED})",
                            kind.name()
                        ),
                        format!(
                            "set `min_tokens` with the model's documented minimum; known models: {}",
                            table.iter().map(|(m, _)| *m).collect::<Vec<_>>().join(", ")
                        ),
                    ))
                }
            }
        }
        if let Some(minimum) = config.min_tokens {
            engine.min_tokens = minimum;
        }
        Ok(engine)
    }

    /// Tokens this engine serves from its cache when a request of `prompt_tokens`
    /// shares `shared_prefix_tokens` with an earlier one.
    pub fn cached_tokens(&self, shared_prefix_tokens: usize, prompt_tokens: usize) -> usize {
        let mut limit = shared_prefix_tokens.min(prompt_tokens);
        if self.recomputes_last_token {
            limit = limit.min(prompt_tokens.saturating_sub(1));
        }
        let unit = self.unit_tokens.max(1);
        let cached = limit / unit * unit;
        if cached < self.min_tokens {
            0
        } else {
            cached
        }
    }

    /// One line for reports: "vLLM: 16-token blocks, at most n−1".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(model) = &self.model {
            parts.push(model.clone());
        }
        if let Some(backend) = self.backend {
            parts.push(format!("{} backend", backend.name()));
        }
        if self.unit_tokens > 1 {
            parts.push(format!("{}-token units", self.unit_tokens));
        } else {
            parts.push("token-level".into());
        }
        if self.min_tokens > 0 {
            parts.push(format!(
                "nothing below {}",
                crate::fmt::thousands(self.min_tokens)
            ));
        }
        if self.recomputes_last_token {
            parts.push("at most n−1".into());
        }
        if self.kind == CacheProfileKind::Anthropic {
            parts.push("one cache_control breakpoint at the end of the shared prefix".into());
        }
        format!("{}: {}", self.name, parts.join(", "))
    }
}

/// The minimum cacheable length for Anthropic breakpoints in a request body that names
/// `body_model`, and whose figure it is: `min_tokens` set on the profile wins, then the
/// body's own model, then `--engine anthropic:model=…`, then the default model. The one
/// place PL012 reads the minimum from.
pub fn anthropic_minimum(profile: &CacheProfile, body_model: Option<&str>) -> (usize, String) {
    let anthropic = profile.kind == CacheProfileKind::Anthropic;
    let table_value = profile
        .model
        .as_deref()
        .and_then(|m| lookup(ANTHROPIC_MINIMUMS, m));
    if anthropic && table_value != Some(profile.min_tokens) {
        return (profile.min_tokens, "min_tokens".into());
    }
    if let Some((model, minimum)) =
        body_model.and_then(|m| Some((m, lookup(ANTHROPIC_MINIMUMS, m)?)))
    {
        return (minimum, model.to_owned());
    }
    if anthropic {
        let model = profile.model.clone().unwrap_or_default();
        return (profile.min_tokens, model);
    }
    let minimum = lookup(ANTHROPIC_MINIMUMS, ANTHROPIC_DEFAULT_MODEL).unwrap_or(1024);
    (minimum, ANTHROPIC_DEFAULT_MODEL.to_owned())
}

/// Anthropic's lookback: a breakpoint finds an earlier entry up to this many block
/// boundaries back, its own included.
pub const ANTHROPIC_LOOKBACK_BLOCKS: usize = 20;

/// The entry whose model-id prefix is the longest match, so dated ids such as
/// `claude-sonnet-4-5-20250929` find `claude-sonnet-4-5`.
fn lookup(table: &[(&str, usize)], model: &str) -> Option<usize> {
    let model = model.trim().to_ascii_lowercase();
    table
        .iter()
        .filter(|(prefix, _)| model.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, minimum)| *minimum)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine(spec: &str) -> CacheProfile {
        CacheProfile::from_config(&CacheProfileConfig::parse_cli(spec).unwrap(), "test").unwrap()
    }

    /// The vLLM formula as the notes state it, for comparison.
    fn vllm_reference(block: usize, lcp: usize, n: usize) -> usize {
        (block * (lcp / block)).min(block * (n.saturating_sub(1) / block))
    }

    #[test]
    fn default_is_token_level_at_most_n_minus_1() {
        let e = CacheProfile::default();
        assert_eq!(e.name, "tokens");
        assert_eq!(e.cached_tokens(0, 10), 0);
        assert_eq!(e.cached_tokens(7, 10), 7);
        assert_eq!(e.cached_tokens(9, 10), 9);
        assert_eq!(e.cached_tokens(10, 10), 9);
        assert_eq!(e.cached_tokens(0, 0), 0);
        assert_eq!(e.cached_tokens(1, 1), 0);
    }

    #[test]
    fn llama_cpp_matches_the_default() {
        let e = engine("llama.cpp");
        for (lcp, n) in [(0, 5), (4, 5), (5, 5), (100, 1000)] {
            assert_eq!(
                e.cached_tokens(lcp, n),
                CacheProfile::default().cached_tokens(lcp, n)
            );
        }
        assert_eq!(engine("llamacpp").kind, CacheProfileKind::LlamaCpp);
    }

    #[test]
    fn vllm_keeps_full_blocks_and_at_most_n_minus_1() {
        let e = engine("vllm");
        assert_eq!(e.unit_tokens, 16);
        assert_eq!(e.cached_tokens(15, 100), 0);
        assert_eq!(e.cached_tokens(16, 100), 16);
        assert_eq!(e.cached_tokens(31, 100), 16);
        assert_eq!(e.cached_tokens(32, 100), 32);
        // Fully shared prompt of 32 tokens: the last token is recomputed, so one block.
        assert_eq!(e.cached_tokens(32, 32), 16);
        assert_eq!(e.cached_tokens(33, 33), 32);
        assert_eq!(e.cached_tokens(16, 16), 0);
        assert_eq!(e.cached_tokens(17, 17), 16);
        for n in 0..70 {
            for lcp in 0..=n {
                assert_eq!(
                    e.cached_tokens(lcp, n),
                    vllm_reference(16, lcp, n),
                    "{lcp}/{n}"
                );
            }
        }
        let e32 = engine("vllm:block_size=32");
        assert_eq!(e32.cached_tokens(63, 100), 32);
        assert_eq!(e32.cached_tokens(64, 100), 64);
    }

    #[test]
    fn sglang_page_size() {
        let e = engine("sglang");
        assert_eq!(e.cached_tokens(17, 100), 17);
        assert_eq!(e.cached_tokens(100, 100), 99);
        let paged = engine("sglang:page_size=64");
        assert_eq!(paged.cached_tokens(63, 1000), 0);
        assert_eq!(paged.cached_tokens(64, 1000), 64);
        assert_eq!(paged.cached_tokens(128, 128), 64);
        assert_eq!(paged.cached_tokens(129, 129), 128);
    }

    #[test]
    fn tgi_by_backend() {
        assert_eq!(engine("tgi").unit_tokens, 1);
        assert_eq!(engine("tgi").cached_tokens(300, 300), 299);
        let fd = engine("tgi:backend=flashdecoding");
        assert_eq!(fd.unit_tokens, 256);
        assert_eq!(fd.cached_tokens(255, 1000), 0);
        assert_eq!(fd.cached_tokens(511, 1000), 256);
        assert_eq!(fd.cached_tokens(512, 512), 256);
        let paged = engine("tgi:backend=paged");
        assert_eq!(paged.cached_tokens(40, 100), 32);
    }

    #[test]
    fn openai_nothing_below_1024_then_128_steps() {
        let e = engine("openai");
        assert_eq!(e.cached_tokens(1023, 5000), 0);
        assert_eq!(e.cached_tokens(1024, 5000), 1024);
        assert_eq!(e.cached_tokens(1151, 5000), 1024);
        assert_eq!(e.cached_tokens(1152, 5000), 1152);
        assert_eq!(e.cached_tokens(5000, 5000), 4992);
        assert_eq!(e.cached_tokens(1024, 1024), 1024);
        assert_eq!(e.cached_tokens(2000, 1000), 0);
    }

    #[test]
    fn anthropic_minimum_by_model() {
        let e = engine("anthropic");
        assert_eq!(e.model.as_deref(), Some(ANTHROPIC_DEFAULT_MODEL));
        assert_eq!(e.min_tokens, 1024);
        assert_eq!(e.cached_tokens(1023, 2000), 0);
        assert_eq!(e.cached_tokens(1024, 2000), 1024);
        assert_eq!(e.cached_tokens(1500, 1500), 1500);
        let haiku = engine("anthropic:model=claude-haiku-4-5-20251001");
        assert_eq!(haiku.min_tokens, 4096);
        assert_eq!(haiku.cached_tokens(4095, 9000), 0);
        assert_eq!(haiku.cached_tokens(4096, 9000), 4096);
        // The longest prefix wins: claude-opus-4-1 is not claude-opus-4.
        assert_eq!(engine("anthropic:model=claude-opus-4-5").min_tokens, 4096);
        assert_eq!(
            engine("anthropic:model=claude-opus-4-20250514").min_tokens,
            1024
        );
        assert_eq!(
            engine("anthropic:model=claude-3-5-haiku-latest").min_tokens,
            2048
        );
        let custom = engine("anthropic:model=claude-next,min_tokens=512");
        assert_eq!(custom.min_tokens, 512);
    }

    #[test]
    fn the_breakpoint_minimum_follows_the_body_unless_set() {
        let default = CacheProfile::default();
        assert_eq!(anthropic_minimum(&default, None).0, 1024);
        assert_eq!(
            anthropic_minimum(&default, Some("claude-haiku-4-5-20251001")),
            (4096, "claude-haiku-4-5-20251001".into())
        );
        assert_eq!(anthropic_minimum(&default, Some("claude-next")).0, 1024);
        let opus = engine("anthropic:model=claude-opus-4-5");
        assert_eq!(anthropic_minimum(&opus, None).0, 4096);
        assert_eq!(anthropic_minimum(&opus, Some("claude-3-5-haiku")).0, 2048);
        let set = engine("anthropic:min_tokens=300");
        assert_eq!(
            anthropic_minimum(&set, Some("claude-3-5-haiku")),
            (300, "min_tokens".into())
        );
    }

    #[test]
    fn gemini_and_deepseek_units() {
        let flash = engine("gemini");
        assert_eq!(flash.cached_tokens(1023, 2000), 0);
        assert_eq!(flash.cached_tokens(1025, 2000), 1025);
        assert_eq!(engine("gemini:model=gemini-2.5-pro").min_tokens, 2048);
        let ds = engine("deepseek");
        assert_eq!(ds.cached_tokens(63, 1000), 0);
        assert_eq!(ds.cached_tokens(64, 1000), 64);
        assert_eq!(ds.cached_tokens(127, 1000), 64);
        assert_eq!(ds.cached_tokens(1000, 1000), 960);
    }

    #[test]
    fn bad_specs_are_errors() {
        let resolve = |spec: &str| {
            CacheProfileConfig::parse_cli(spec)
                .and_then(|c| CacheProfile::from_config(&c, "--engine"))
        };
        assert!(resolve("vlm").is_err());
        assert!(resolve("vllm:page_size=4").is_err());
        assert!(resolve("vllm:block_size=0").is_err());
        assert!(resolve("vllm:block_size=x").is_err());
        assert!(resolve("vllm:size").is_err());
        assert!(resolve("openai:model=gpt-4o").is_err());
        assert!(resolve("tgi:backend=cuda").is_err());
        assert!(resolve("anthropic:model=claude-next").is_err());
        assert!(resolve("openai:min_tokens=2048").is_ok());
    }

    #[test]
    fn config_accepts_a_name_or_a_mapping() {
        let plain: CacheProfileSetting = serde_yaml_ng::from_str("vllm").unwrap();
        assert_eq!(plain.0.name, "vllm");
        let mapping: CacheProfileSetting =
            serde_yaml_ng::from_str("{name: vllm, block_size: 32}").unwrap();
        assert_eq!(mapping.0.block_size, Some(32));
        assert!(serde_yaml_ng::from_str::<CacheProfileSetting>("{name: vllm, blok: 32}").is_err());
    }
}
