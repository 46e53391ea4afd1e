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
use crate::providers::{HostedModel, ProviderOverride};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;

/// `cache_control` breakpoints Anthropic allows per request. The figure, with its source
/// and date, is `max_breakpoints` in `rules/providers/anthropic.yaml` (a test keeps the two
/// equal); a profile carries it as [`CacheProfile::max_breakpoints`].
pub const ANTHROPIC_MAX_BREAKPOINTS: usize = 4;

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
    Bedrock,
}

impl CacheProfileKind {
    pub const ALL: [CacheProfileKind; 10] = [
        CacheProfileKind::Tokens,
        CacheProfileKind::Vllm,
        CacheProfileKind::Sglang,
        CacheProfileKind::LlamaCpp,
        CacheProfileKind::Tgi,
        CacheProfileKind::Openai,
        CacheProfileKind::Anthropic,
        CacheProfileKind::Gemini,
        CacheProfileKind::Deepseek,
        CacheProfileKind::Bedrock,
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
            CacheProfileKind::Bedrock => "bedrock",
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
            "bedrock" => CacheProfileKind::Bedrock,
            _ => return None,
        };
        Some(kind)
    }

    /// The hosted APIs: their figures come from `rules/providers/*.yaml`.
    pub fn is_hosted(self) -> bool {
        crate::providers::for_engine(self.name()).is_some()
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CacheProfileConfig {
    pub name: String,
    /// vLLM and TGI: the KV block size in tokens.
    pub block_size: Option<usize>,
    /// SGLang: `--page-size`.
    pub page_size: Option<usize>,
    /// TGI: flashinfer, flashdecoding or paged.
    pub backend: Option<String>,
    /// Hosted APIs: the model id, which sets the minimum and the prices.
    pub model: Option<String>,
    /// Anthropic and Bedrock: the cache TTL whose write price applies (`5m`, `1h`).
    pub ttl: Option<String>,
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

/// A name, or the mapping of [`CacheProfileConfig`].
impl schemars::JsonSchema for CacheProfileSetting {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Engine".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let options = generator.subschema_for::<CacheProfileConfig>();
        schemars::json_schema!({
            "description": "An engine name (vllm, sglang, llama.cpp, tgi, openai, anthropic, ...) or a mapping with `name` and its options.",
            "anyOf": [{"type": "string"}, options],
        })
    }
}

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
                "ttl" => config.ttl = Some(value.to_owned()),
                _ => {
                    return Err(Error::input_with_help(
                        format!("--engine {spec}: unknown option `{key}`"),
                        "options: block_size, page_size, backend, model, ttl, min_tokens",
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
    /// Hosted APIs: the model's figures and prices from `rules/providers/*.yaml`, with
    /// the config's `providers:` applied, and the date of that data.
    pub hosted: Option<HostedModel>,
}

impl Default for CacheProfile {
    fn default() -> Self {
        CacheProfile::of(CacheProfileKind::Tokens)
    }
}

impl CacheProfile {
    /// A profile with its defaults (a hosted API with its default model).
    pub fn of(kind: CacheProfileKind) -> CacheProfile {
        let (unit_tokens, backend) = match kind {
            CacheProfileKind::Vllm => (16, None),
            CacheProfileKind::Tgi => (TgiBackend::Flashinfer.block(), Some(TgiBackend::Flashinfer)),
            _ => (1, None),
        };
        let hosted = crate::providers::for_engine(kind.name()).and_then(|provider| {
            crate::providers::resolve(provider, None, None, &Default::default(), kind.name()).ok()
        });
        CacheProfile {
            kind,
            name: kind.name(),
            unit_tokens: hosted.as_ref().map_or(unit_tokens, |h| h.step_tokens),
            min_tokens: hosted.as_ref().map_or(0, |h| h.min_tokens),
            recomputes_last_token: kind.recomputes_last_token(),
            model: hosted.as_ref().map(|h| h.model.clone()),
            backend,
            hosted,
        }
    }

    /// The breakpoints a request may carry (Anthropic, Bedrock), from the provider data.
    pub fn max_breakpoints(&self) -> Option<usize> {
        self.hosted.as_ref().and_then(|h| h.max_breakpoints)
    }

    /// The model's prices (hosted APIs with prices in the data or the config).
    pub fn prices(&self) -> Option<&crate::providers::Prices> {
        self.hosted.as_ref().and_then(|h| h.prices.as_ref())
    }

    /// Records which tokenizer made the counts, so reports can say whether they are the
    /// provider's own ([`HostedModel::token_counts_note`]).
    pub fn counted_with(mut self, tokenizer: &str) -> CacheProfile {
        if let Some(hosted) = &mut self.hosted {
            hosted.counted_with = Some(tokenizer.to_owned());
        }
        self
    }

    /// Resolves `--engine` / `engine:`; `context` names where it came from in messages.
    pub fn from_config(config: &CacheProfileConfig, context: &str) -> Result<CacheProfile> {
        CacheProfile::from_config_with(config, context, &BTreeMap::new())
    }

    /// [`Self::from_config`] with config `providers:` applied to the hosted APIs' figures.
    pub fn from_config_with(
        config: &CacheProfileConfig,
        context: &str,
        providers: &BTreeMap<String, ProviderOverride>,
    ) -> Result<CacheProfile> {
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
        if let Some(provider) = crate::providers::for_engine(kind.name()) {
            let mut providers = providers.clone();
            // `min_tokens` on the command line is the minimum of this model.
            if let (Some(minimum), Some(model)) = (config.min_tokens, &config.model) {
                providers
                    .entry(provider.provider.clone())
                    .or_default()
                    .models
                    .entry(model.clone())
                    .or_default()
                    .min_tokens
                    .get_or_insert(minimum);
            }
            let hosted = crate::providers::resolve(
                provider,
                config.model.as_deref(),
                config.ttl.as_deref(),
                &providers,
                context,
            )?;
            engine.unit_tokens = hosted.step_tokens;
            engine.min_tokens = hosted.min_tokens;
            engine.model = Some(hosted.model.clone());
            engine.hosted = Some(hosted);
        } else if config.model.is_some() {
            return Err(not_for("model"));
        } else if config.ttl.is_some() {
            return Err(not_for("ttl"));
        }
        if let Some(minimum) = config.min_tokens {
            engine.min_tokens = minimum;
            if let Some(hosted) = &mut engine.hosted {
                hosted.min_tokens = minimum;
            }
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
        match &self.hosted {
            Some(hosted) => parts.push(hosted.describe()),
            None => parts.extend(self.model.clone()),
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
        if let Some(note) = self
            .hosted
            .as_ref()
            .and_then(HostedModel::token_counts_note)
        {
            parts.push(note);
        }
        format!("{}: {}", self.name, parts.join(", "))
    }
}

/// The minimum cacheable length for Anthropic breakpoints in a request body that names
/// `body_model`, and whose figure it is: `min_tokens` set on the profile wins, then the
/// body's own model, then `--engine anthropic:model=…`, then the default model. The one
/// place PL012 reads the minimum from; the figures are `rules/providers/anthropic.yaml`'s.
pub fn anthropic_minimum(profile: &CacheProfile, body_model: Option<&str>) -> (usize, String) {
    let anthropic = profile.kind == CacheProfileKind::Anthropic;
    let table_value = profile.model.as_deref().and_then(anthropic_data_minimum);
    if anthropic && table_value != Some(profile.min_tokens) {
        return (profile.min_tokens, "min_tokens".into());
    }
    if let Some((model, minimum)) = body_model.and_then(|m| Some((m, anthropic_data_minimum(m)?))) {
        return (minimum, model.to_owned());
    }
    if anthropic {
        let model = profile.model.clone().unwrap_or_default();
        return (profile.min_tokens, model);
    }
    let default = CacheProfile::of(CacheProfileKind::Anthropic);
    (default.min_tokens, default.model.unwrap_or_default())
}

/// A Claude model's minimum in the provider data, without overrides.
fn anthropic_data_minimum(model: &str) -> Option<usize> {
    let provider = crate::providers::for_engine(CacheProfileKind::Anthropic.name())?;
    crate::providers::resolve(provider, Some(model), None, &BTreeMap::new(), "anthropic")
        .ok()
        .map(|hosted| hosted.min_tokens)
}

/// Anthropic's lookback: a breakpoint finds an earlier entry up to this many block
/// boundaries back, its own included. The figure, with its source and date, is
/// `lookback_blocks` in `rules/providers/anthropic.yaml` (a test keeps the two equal).
pub const ANTHROPIC_LOOKBACK_BLOCKS: usize = 20;

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
        assert_eq!(e.model.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(e.min_tokens, 1024);
        assert_eq!(e.cached_tokens(1023, 2000), 0);
        assert_eq!(e.cached_tokens(1024, 2000), 1024);
        assert_eq!(e.cached_tokens(1500, 1500), 1500);
        let haiku = engine("anthropic:model=claude-haiku-4-5-20251001");
        assert_eq!(haiku.min_tokens, 4096);
        assert_eq!(haiku.cached_tokens(4095, 9000), 0);
        assert_eq!(haiku.cached_tokens(4096, 9000), 4096);
        // claude-opus-4-1 is not claude-opus-4.
        assert_eq!(engine("anthropic:model=claude-opus-4-5").min_tokens, 4096);
        assert_eq!(engine("anthropic:model=claude-opus-4-1").min_tokens, 1024);
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
        // Google's two caching pages disagree; the larger minimum is picked.
        let flash = engine("gemini");
        assert_eq!(flash.cached_tokens(2047, 3000), 0);
        assert_eq!(flash.cached_tokens(2049, 3000), 2049);
        assert_eq!(engine("gemini:model=gemini-2.5-pro").min_tokens, 4096);
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
        assert!(resolve("vllm:model=gpt-4o").is_err());
        assert!(resolve("openai:ttl=1h").is_err());
        assert!(resolve("openai:model=gpt-4o").is_ok());
        assert!(resolve("tgi:backend=cuda").is_err());
        assert!(resolve("anthropic:model=claude-next").is_err());
        assert!(resolve("openai:min_tokens=2048").is_ok());
    }

    #[test]
    fn hosted_figures_come_from_the_provider_data() {
        let gpt = engine("openai:model=gpt-4.1");
        let hosted = gpt.hosted.as_ref().unwrap();
        assert_eq!((gpt.unit_tokens, gpt.min_tokens), (128, 1024));
        assert_eq!(hosted.data_date, "2026-12-01");
        assert_eq!(gpt.prices().unwrap().cached_input, 500_000);
        let claude = engine("anthropic:model=claude-sonnet-4-5,ttl=1h");
        assert_eq!(claude.prices().unwrap().cache_write, 6_000_000);
        assert_eq!(
            claude.max_breakpoints(),
            Some(ANTHROPIC_MAX_BREAKPOINTS),
            "the constant is the data's figure"
        );
        let lookback = crate::providers::for_engine("anthropic")
            .and_then(|p| p.lookback_blocks.as_ref())
            .map(|f| f.value);
        assert_eq!(lookback, Some(ANTHROPIC_LOOKBACK_BLOCKS));
        let bedrock = engine("bedrock:model=us.anthropic.claude-3-5-haiku-20241022-v1:0");
        assert_eq!(bedrock.min_tokens, 2048);
        assert_eq!(bedrock.max_breakpoints(), Some(4));
        assert_eq!(engine("vllm").hosted, None);
        let described = engine("anthropic").counted_with("default").describe();
        assert!(
            described.starts_with("anthropic: claude-sonnet-4-5, data of 2026-12-01, TTL 5m, token-level, nothing below 1,024"),
            "{described}"
        );
        assert!(described.ends_with(
            "token counts are approximate: Anthropic's tokenizer is not public; counted with `default`"
        ));
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
