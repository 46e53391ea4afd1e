//! The hosted APIs' caching rules and prices, as dated data: `rules/providers/*.yaml`, one
//! file per provider (OpenAI, Anthropic, Google Gemini, DeepSeek, Amazon Bedrock).
//!
//! Every number in those files sits in a mapping with its `source` (a URL) and the date it
//! was `checked`; where sources disagree, `alternatives` records the others and `picked`
//! says why this one was chosen, and reports say so ([`HostedModel::choices`]). Config
//! `providers:` overrides any figure ([`ProviderOverride`]), and reports name the
//! overridden ones. [`resolve`] turns a provider, a model id and a TTL into the
//! [`HostedModel`] a [`crate::cache_profile::CacheProfile`] carries: its minimum, step,
//! breakpoint limit, TTL and prices, with the date of the data behind them.
//!
//! Money is kept in integers: a price is micro-dollars per million tokens ([`Micros`]), so
//! `$0.175` is `175_000` and a cost in [`crate::cost`] is exact until its one rounding.

use crate::error::{Error, Result};
use crate::fmt::thousands;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The provider files, embedded so the binary is self-contained.
pub const PROVIDER_FILES: &[(&str, &str)] = &[
    (
        "openai.yaml",
        include_str!("../rules/providers/openai.yaml"),
    ),
    (
        "anthropic.yaml",
        include_str!("../rules/providers/anthropic.yaml"),
    ),
    (
        "google.yaml",
        include_str!("../rules/providers/google.yaml"),
    ),
    (
        "deepseek.yaml",
        include_str!("../rules/providers/deepseek.yaml"),
    ),
    (
        "bedrock.yaml",
        include_str!("../rules/providers/bedrock.yaml"),
    ),
];

/// One figure: its value, where it comes from and when that was checked.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Figure<T> {
    pub value: T,
    pub source: String,
    pub checked: String,
    #[serde(default)]
    pub note: Option<String>,
    /// Why `value` was chosen over the `alternatives`.
    #[serde(default)]
    pub picked: Option<String>,
    #[serde(default)]
    pub alternatives: Vec<Alternative<T>>,
}

/// What another source says about a figure.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Alternative<T> {
    pub value: T,
    pub source: String,
    pub checked: String,
    #[serde(default)]
    pub note: Option<String>,
}

/// `rules/providers/<provider>.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderData {
    /// The file's name and the key of config `providers:` (`openai`, `google`, …).
    pub provider: String,
    /// As people know it: `Google Gemini`.
    pub name: String,
    /// The `--engine` name that selects it.
    pub engine: String,
    pub currency: String,
    pub default_model: String,
    /// Whether the provider's tokenizer is public (prefixlint can count exactly with it).
    pub tokenizer_public: bool,
    /// The minimum for models that do not give their own.
    #[serde(default)]
    pub min_tokens: Option<Figure<usize>>,
    pub step_tokens: Figure<usize>,
    #[serde(default)]
    pub max_breakpoints: Option<Figure<usize>>,
    #[serde(default)]
    pub lookback_blocks: Option<Figure<usize>>,
    #[serde(default)]
    pub routing_prefix_tokens: Option<Figure<usize>>,
    /// The price of a cache read, as a multiple of the input price.
    #[serde(default)]
    pub read_multiplier: Option<Figure<f64>>,
    /// The price of a cache write, where one TTL applies to all writes.
    #[serde(default)]
    pub write_multiplier: Option<Figure<f64>>,
    pub ttls: Vec<TtlData>,
    pub models: Vec<ModelData>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TtlData {
    /// `5m`, `1h`, `24h`, `in-memory`: what `--engine NAME:ttl=…` selects.
    pub name: String,
    pub seconds: Figure<u64>,
    #[serde(default)]
    pub write_multiplier: Option<Figure<f64>>,
    #[serde(default)]
    pub default: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelData {
    pub id: String,
    /// The tokenizer the model uses, where prefixlint has it built in.
    #[serde(default)]
    pub tokenizer: Option<String>,
    #[serde(default)]
    pub min_tokens: Option<Figure<usize>>,
    #[serde(default)]
    pub prices: Option<PriceData>,
}

/// US dollars per million tokens, with their source.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceData {
    pub input: f64,
    pub cached_input: f64,
    #[serde(default)]
    pub cache_write_5m: Option<f64>,
    #[serde(default)]
    pub cache_write_1h: Option<f64>,
    pub source: String,
    pub checked: String,
    #[serde(default)]
    pub note: Option<String>,
    #[serde(default)]
    pub picked: Option<String>,
    #[serde(default)]
    pub alternatives: Vec<PriceAlternative>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceAlternative {
    pub input: f64,
    pub cached_input: f64,
    #[serde(default)]
    pub cache_write_5m: Option<f64>,
    #[serde(default)]
    pub cache_write_1h: Option<f64>,
    pub source: String,
    pub checked: String,
    #[serde(default)]
    pub note: Option<String>,
}

/// Every provider file, parsed once. The files are part of the binary and a test parses
/// each, so a failure here is a build that never passed its tests.
pub fn builtin() -> &'static [ProviderData] {
    static DATA: OnceLock<Vec<ProviderData>> = OnceLock::new();
    DATA.get_or_init(|| {
        PROVIDER_FILES
            .iter()
            .map(|(file, text)| {
                serde_yaml_ng::from_str(text)
                    .unwrap_or_else(|e| panic!("embedded provider file {file} is invalid: {e}"))
            })
            .collect()
    })
}

/// Each provider file's `engine:`, in [`PROVIDER_FILES`]' order (a test holds it to the
/// files): a profile that is no provider's (the default, `tokens`) parses none of them,
/// which was a tenth of a warm run's serial instructions.
const PROVIDER_ENGINES: [&str; 5] = ["openai", "anthropic", "gemini", "deepseek", "bedrock"];

/// The provider an `--engine` name selects (`gemini` → the `google` file).
pub fn for_engine(engine: &str) -> Option<&'static ProviderData> {
    if !PROVIDER_ENGINES.contains(&engine) {
        return None;
    }
    builtin().iter().find(|p| p.engine == engine)
}

/// Micro-dollars (per million tokens, for a price): exact integer money.
pub type Micros = u64;

/// Dollars as written in the data or the config, to micro-dollars: exact for up to six
/// decimals, an error beyond (a price of $0.0000001 per million tokens is not a price).
pub fn dollars_to_micros(dollars: f64) -> std::result::Result<Micros, String> {
    if !dollars.is_finite() || dollars < 0.0 {
        return Err(format!("{dollars} is not a price"));
    }
    let scaled = dollars * 1_000_000.0;
    let micros = scaled.round();
    if (scaled - micros).abs() > 1e-3 || micros > 1e15 {
        return Err(format!(
            "{dollars} has more than six decimals (prices are kept in micro-dollars)"
        ));
    }
    Ok(micros as Micros)
}

/// A model's prices in force: micro-dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prices {
    /// An uncached input token.
    pub input: Micros,
    /// A token read from the cache.
    pub cached_input: Micros,
    /// A token written to the cache, at the TTL in force (the input price where writing
    /// costs nothing extra).
    pub cache_write: Micros,
}

/// The TTL in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ttl {
    pub name: String,
    pub seconds: u64,
}

/// A hosted API's model as a cache profile uses it: the figures in force and the date of
/// the data behind them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostedModel {
    /// `openai`, `anthropic`, `google`, `deepseek`, `bedrock`.
    pub provider: String,
    /// `OpenAI`, `Google Gemini`, …
    pub provider_name: String,
    pub model: String,
    pub min_tokens: usize,
    pub step_tokens: usize,
    pub max_breakpoints: Option<usize>,
    pub ttl: Option<Ttl>,
    pub prices: Option<Prices>,
    pub currency: String,
    /// The latest `checked` date of the figures in force (minimum, step, prices).
    pub data_date: String,
    /// When the prices were checked (or `config` for prices from `providers:`).
    pub prices_date: Option<String>,
    /// The tokenizer the model uses, where prefixlint has it built in (`o200k_base`).
    pub tokenizer: Option<String>,
    pub tokenizer_public: bool,
    /// The tokenizer the counts were made with, when the command says (`check`, `audit`).
    pub counted_with: Option<String>,
    /// Where sources disagree: what was picked, over what.
    pub choices: Vec<String>,
    /// Figures taken from config `providers:`.
    pub overridden: Vec<String>,
}

impl HostedModel {
    /// Whether the token counts behind the figures are the provider's own, and if not,
    /// why: "token counts are approximate: Anthropic's tokenizer is not public; counted
    /// with `default`".
    pub fn token_counts_note(&self) -> Option<String> {
        let counted = self
            .counted_with
            .as_deref()
            .map(|t| format!("; counted with `{t}`"))
            .unwrap_or_default();
        if !self.tokenizer_public {
            return Some(format!(
                "token counts are approximate: {}'s tokenizer is not public{counted}",
                self.provider_name
            ));
        }
        match (&self.tokenizer, &self.counted_with) {
            (Some(exact), Some(used)) if exact != used => Some(format!(
                "token counts are approximate: {} uses {exact}{counted}; pass --tokenizer {exact} for exact counts",
                self.model
            )),
            (None, _) => Some(format!(
                "token counts are approximate: the tokenizer of {} is not known{counted}",
                self.model
            )),
            _ => None,
        }
    }

    /// "gpt-4.1, data of 2026-12-01" and what was picked or overridden.
    pub fn describe(&self) -> String {
        let mut out = format!("{}, data of {}", self.model, self.data_date);
        if let Some(ttl) = &self.ttl {
            out.push_str(&format!(", TTL {}", ttl.name));
        }
        for choice in &self.choices {
            out.push_str(&format!("; {choice}"));
        }
        if !self.overridden.is_empty() {
            out.push_str(&format!("; overridden: {}", self.overridden.join(", ")));
        }
        out
    }
}

/// Config `providers:`: any figure, by provider (`openai`, `anthropic`, `google`,
/// `deepseek`, `bedrock`), for a user whose measurement differs from ours.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderOverride {
    pub min_tokens: Option<usize>,
    pub step_tokens: Option<usize>,
    pub max_breakpoints: Option<usize>,
    /// By model id; a model missing from the data is added.
    #[serde(default)]
    pub models: BTreeMap<String, ModelOverride>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelOverride {
    pub min_tokens: Option<usize>,
    pub tokenizer: Option<String>,
    pub prices: Option<PriceOverride>,
}

/// US dollars per million tokens.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PriceOverride {
    pub input: Option<f64>,
    pub cached_input: Option<f64>,
    pub cache_write_5m: Option<f64>,
    pub cache_write_1h: Option<f64>,
}

/// One price field: its name (in the data, the config and the messages), the config's
/// value and the data's.
type PriceField = (
    &'static str,
    fn(&PriceOverride) -> Option<f64>,
    fn(&PriceData) -> Option<f64>,
);

/// Every price field, each read the same way: the config's, else the data's.
const PRICE_FIELDS: [PriceField; 4] = [
    ("input", |o| o.input, |d| Some(d.input)),
    ("cached_input", |o| o.cached_input, |d| Some(d.cached_input)),
    ("cache_write_5m", |o| o.cache_write_5m, |d| d.cache_write_5m),
    ("cache_write_1h", |o| o.cache_write_1h, |d| d.cache_write_1h),
];

/// Config `providers:` names only known providers.
pub fn check_overrides(
    overrides: &BTreeMap<String, ProviderOverride>,
    context: &str,
) -> Result<()> {
    for name in overrides.keys() {
        if !builtin().iter().any(|p| &p.provider == name) {
            return Err(Error::input_with_help(
                format!("{context}: providers: unknown provider `{name}`"),
                format!(
                    "providers: {}",
                    builtin()
                        .iter()
                        .map(|p| p.provider.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Whether `model` (as an API names it) is the data's `id`: the same, or with a date
/// (`claude-sonnet-4-5-20250929`, `gpt-4.1-2025-04-14`, `…@20250929`) or `-latest`, and
/// for Bedrock without its region and vendor prefix and version suffix
/// (`us.anthropic.claude-sonnet-4-20250514-v1:0`).
pub fn model_matches(id: &str, model: &str) -> bool {
    let model = model.trim().to_ascii_lowercase();
    let model = model.rsplit("anthropic.").next().unwrap_or(&model);
    let model = strip_version_suffix(model);
    let id = id.to_ascii_lowercase();
    if model == id {
        return true;
    }
    let Some(rest) = model.strip_prefix(id.as_str()) else {
        return false;
    };
    let Some(suffix) = rest.strip_prefix('-').or_else(|| rest.strip_prefix('@')) else {
        return false;
    };
    suffix == "latest" || is_date(suffix)
}

/// `-v1:0`, `-v2` at the end of a Bedrock model id.
fn strip_version_suffix(model: &str) -> &str {
    if let Some(at) = model.rfind("-v") {
        let tail = &model[at + 2..];
        if !tail.is_empty() && tail.chars().all(|c| c.is_ascii_digit() || c == ':') {
            return &model[..at];
        }
    }
    model
}

/// `20250929` or `2025-04-14`.
fn is_date(s: &str) -> bool {
    let digits: String = s.chars().filter(|c| *c != '-').collect();
    digits.len() == 8
        && digits.chars().all(|c| c.is_ascii_digit())
        && (s.len() == 8 || (s.len() == 10 && s.as_bytes()[4] == b'-' && s.as_bytes()[7] == b'-'))
}

/// A figure's value with a note on what was picked over what, when sources disagree.
fn pick<T: Copy + std::fmt::Display>(
    what: &str,
    figure: &Figure<T>,
    show: impl Fn(T) -> String,
    choices: &mut Vec<String>,
) -> T {
    if !figure.alternatives.is_empty() {
        let others: Vec<String> = figure
            .alternatives
            .iter()
            .map(|a| format!("{} ({}, checked {})", show(a.value), a.source, a.checked))
            .collect();
        choices.push(format!(
            "{what} {} ({}, checked {}) over {}: {}",
            show(figure.value),
            figure.source,
            figure.checked,
            others.join(", "),
            figure.picked.as_deref().unwrap_or("the sources disagree")
        ));
    }
    figure.value
}

/// The provider's model in force, with `overrides` (config `providers:`) applied; `ttl`
/// names one of the provider's TTLs (default: the one marked `default`).
pub fn resolve(
    provider: &ProviderData,
    model: Option<&str>,
    ttl: Option<&str>,
    overrides: &BTreeMap<String, ProviderOverride>,
    context: &str,
) -> Result<HostedModel> {
    let over = overrides
        .get(&provider.provider)
        .cloned()
        .unwrap_or_default();
    let model_id = model.unwrap_or(&provider.default_model).trim().to_owned();
    let data = provider
        .models
        .iter()
        .filter(|m| model_matches(&m.id, &model_id))
        .max_by_key(|m| m.id.len());
    let model_over = over
        .models
        .iter()
        .find(|(id, _)| model_matches(id, &model_id))
        .map(|(_, m)| m.clone())
        .unwrap_or_default();
    let mut choices = Vec::new();
    let mut overridden = Vec::new();
    let mut dates: Vec<&str> = Vec::new();
    let show_count = |n: usize| thousands(n);

    // The minimum: the config's for the model, the model's own, the config's for the
    // provider, the provider's.
    let data_min = data.and_then(|m| m.min_tokens.as_ref());
    let min_tokens = if let Some(n) = model_over.min_tokens {
        overridden.push(format!("min_tokens {}", thousands(n)));
        n
    } else if let Some(figure) = data_min {
        dates.push(&figure.checked);
        pick("min_tokens", figure, show_count, &mut choices)
    } else if let Some(n) = over.min_tokens {
        overridden.push(format!("min_tokens {}", thousands(n)));
        n
    } else if let Some(figure) = &provider.min_tokens {
        dates.push(&figure.checked);
        pick("min_tokens", figure, show_count, &mut choices)
    } else {
        let known: Vec<&str> = provider.models.iter().map(|m| m.id.as_str()).collect();
        return Err(Error::input_with_help(
            format!(
                "{context}: no minimum cacheable length known for {} model `{model_id}` (rules/providers/{}.yaml)",
                provider.engine, provider.provider
            ),
            format!(
                "set `min_tokens` with the model's documented minimum (`--engine {}:model={model_id},min_tokens=N` or config `providers: {{{}: {{models: {{{model_id}: {{min_tokens: N}}}}}}}}`); known models: {}",
                provider.engine,
                provider.provider,
                known.join(", ")
            ),
        ));
    };
    let step_tokens = match over.step_tokens {
        Some(n) => {
            overridden.push(format!("step_tokens {n}"));
            n
        }
        None => {
            dates.push(&provider.step_tokens.checked);
            pick(
                "step_tokens",
                &provider.step_tokens,
                show_count,
                &mut choices,
            )
        }
    };
    if step_tokens == 0 {
        return Err(Error::input(format!(
            "{context}: providers: {}: step_tokens must be at least 1",
            provider.provider
        )));
    }
    let max_breakpoints = match over.max_breakpoints {
        Some(n) => {
            overridden.push(format!("max_breakpoints {n}"));
            Some(n)
        }
        None => provider
            .max_breakpoints
            .as_ref()
            .map(|f| pick("max_breakpoints", f, show_count, &mut choices)),
    };

    let ttl_data = match ttl {
        Some(name) => Some(
            provider
                .ttls
                .iter()
                .find(|t| t.name.eq_ignore_ascii_case(name.trim()))
                .ok_or_else(|| {
                    Error::input_with_help(
                        format!("{context}: {} has no cache TTL `{name}`", provider.name),
                        format!(
                            "TTLs: {}",
                            provider
                                .ttls
                                .iter()
                                .map(|t| t.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    )
                })?,
        ),
        None => provider.ttls.iter().find(|t| t.default),
    };

    // Prices: the data's, field by field replaced by the config's.
    let data_prices = data.and_then(|m| m.prices.as_ref());
    let price_over = model_over.prices.clone().unwrap_or_default();
    let money = |what: &str, dollars: f64| -> Result<Micros> {
        dollars_to_micros(dollars).map_err(|why| {
            Error::input(format!(
                "{context}: providers: {}: {model_id}: {what}: {why}",
                provider.provider
            ))
        })
    };
    let mut given = [None; PRICE_FIELDS.len()];
    for (slot, (what, from_config, from_data)) in given.iter_mut().zip(PRICE_FIELDS) {
        *slot = match (from_config(&price_over), data_prices.and_then(from_data)) {
            (Some(d), _) => {
                overridden.push(format!("{what} ${d}"));
                Some(money(what, d)?)
            }
            (None, Some(d)) => Some(money(what, d)?),
            (None, None) => None,
        };
    }
    let [input, cached_input, write_5m, write_1h] = given;
    let prices = match (input, cached_input) {
        (Some(input), Some(cached_input)) => {
            let cache_write = match ttl_data.map(|t| t.name.as_str()) {
                Some("1h") => write_1h,
                _ => write_5m,
            }
            .unwrap_or(input);
            Some(Prices {
                input,
                cached_input,
                cache_write,
            })
        }
        (None, None) => None,
        _ => {
            return Err(Error::input_with_help(
                format!(
                    "{context}: providers: {}: {model_id}: prices need both `input` and `cached_input`",
                    provider.provider
                ),
                "prices are US dollars per million tokens, e.g. prices: {input: 2.00, cached_input: 0.50}",
            ))
        }
    };
    let from_config = price_over != PriceOverride::default();
    let prices_date = match (prices.is_some(), from_config, data_prices) {
        (false, _, _) => None,
        (true, true, _) => Some("config".to_owned()),
        (true, false, Some(p)) => {
            dates.push(&p.checked);
            if !p.alternatives.is_empty() {
                let others: Vec<String> = p
                    .alternatives
                    .iter()
                    .map(|a| {
                        format!(
                            "${}/${} ({}, checked {})",
                            a.input, a.cached_input, a.source, a.checked
                        )
                    })
                    .collect();
                choices.push(format!(
                    "prices ${}/${} per million input/cached tokens ({}, checked {}) over {}: {}",
                    p.input,
                    p.cached_input,
                    p.source,
                    p.checked,
                    others.join(", "),
                    p.picked.as_deref().unwrap_or("the sources disagree")
                ));
            }
            Some(p.checked.clone())
        }
        (true, false, None) => None,
    };
    let data_date = dates
        .iter()
        .max()
        .map(|d| d.to_string())
        .unwrap_or_else(|| "config".to_owned());
    Ok(HostedModel {
        provider: provider.provider.clone(),
        provider_name: provider.name.clone(),
        model: model_id,
        min_tokens,
        step_tokens,
        max_breakpoints,
        ttl: ttl_data.map(|t| Ttl {
            name: t.name.clone(),
            seconds: t.seconds.value,
        }),
        prices,
        currency: provider.currency.clone(),
        data_date,
        prices_date,
        tokenizer: model_over
            .tokenizer
            .or_else(|| data.and_then(|m| m.tokenizer.clone())),
        tokenizer_public: provider.tokenizer_public,
        counted_with: None,
        choices,
        overridden,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(name: &str) -> &'static ProviderData {
        builtin().iter().find(|p| p.provider == name).unwrap()
    }

    fn model(name: &str, model: &str) -> HostedModel {
        resolve(provider(name), Some(model), None, &BTreeMap::new(), "test").unwrap()
    }

    #[test]
    fn every_provider_file_parses_and_names_its_engine() {
        let engines: Vec<&str> = builtin().iter().map(|p| p.engine.as_str()).collect();
        assert_eq!(engines, PROVIDER_ENGINES);
        for engine in PROVIDER_ENGINES {
            assert_eq!(for_engine(engine).map(|p| p.engine.as_str()), Some(engine));
        }
        assert!(for_engine("tokens").is_none());
        for p in builtin() {
            assert!(
                p.models.iter().any(|m| m.id == p.default_model),
                "{}: default model {} is listed",
                p.provider,
                p.default_model
            );
            assert_eq!(
                p.ttls.iter().filter(|t| t.default).count(),
                1,
                "{}: one default TTL",
                p.provider
            );
            resolve(p, None, None, &BTreeMap::new(), "test").unwrap();
            for m in &p.models {
                resolve(p, Some(&m.id), None, &BTreeMap::new(), "test").unwrap();
            }
        }
    }

    #[test]
    fn money_is_exact_micro_dollars() {
        assert_eq!(dollars_to_micros(0.175), Ok(175_000));
        assert_eq!(dollars_to_micros(0.028), Ok(28_000));
        assert_eq!(dollars_to_micros(18.75), Ok(18_750_000));
        assert_eq!(dollars_to_micros(0.000001), Ok(1));
        assert!(dollars_to_micros(0.0000001).is_err());
        assert!(dollars_to_micros(-1.0).is_err());
        assert!(dollars_to_micros(f64::NAN).is_err());
    }

    #[test]
    fn models_match_dated_and_bedrock_ids_but_not_siblings() {
        assert!(model_matches(
            "claude-sonnet-4-5",
            "claude-sonnet-4-5-20250929"
        ));
        assert!(model_matches(
            "claude-sonnet-4-5",
            "claude-sonnet-4-5@20250929"
        ));
        assert!(model_matches("claude-3-5-haiku", "claude-3-5-haiku-latest"));
        assert!(model_matches("gpt-4.1", "gpt-4.1-2025-04-14"));
        assert!(model_matches(
            "claude-sonnet-4",
            "us.anthropic.claude-sonnet-4-20250514-v1:0"
        ));
        assert!(!model_matches("gpt-4.1", "gpt-4.1-mini"));
        assert!(!model_matches("claude-opus-4", "claude-opus-4-1"));
        assert!(!model_matches("claude-opus-4", "claude-opus-4-1-20250805"));
    }

    #[test]
    fn figures_come_from_the_data_with_their_dates() {
        let gpt = model("openai", "gpt-4.1");
        assert_eq!((gpt.min_tokens, gpt.step_tokens), (1024, 128));
        assert_eq!(
            gpt.prices,
            Some(Prices {
                input: 2_000_000,
                cached_input: 500_000,
                cache_write: 2_000_000
            })
        );
        assert_eq!(gpt.prices_date.as_deref(), Some("2026-12-01"));
        assert_eq!(gpt.tokenizer.as_deref(), Some("o200k_base"));
        let haiku = model("anthropic", "claude-haiku-4-5-20251001");
        assert_eq!(haiku.min_tokens, 4096);
        assert_eq!(haiku.max_breakpoints, Some(4));
        assert_eq!(haiku.prices.unwrap().cache_write, 1_250_000);
        let hour = resolve(
            provider("anthropic"),
            Some("claude-haiku-4-5"),
            Some("1h"),
            &BTreeMap::new(),
            "test",
        )
        .unwrap();
        assert_eq!(hour.prices.unwrap().cache_write, 2_000_000);
        assert_eq!(hour.ttl.unwrap().seconds, 3600);
        // An OpenAI model missing from the data: the provider's minimum, no prices.
        let unknown = model("openai", "gpt-9");
        assert_eq!(unknown.min_tokens, 1024);
        assert_eq!(unknown.prices, None);
        assert!(resolve(
            provider("anthropic"),
            Some("claude-next"),
            None,
            &BTreeMap::new(),
            "test"
        )
        .is_err());
    }

    #[test]
    fn disagreements_say_what_was_picked() {
        let sonnet = model("anthropic", "claude-sonnet-4-6");
        assert_eq!(sonnet.min_tokens, 2048);
        assert_eq!(sonnet.choices.len(), 1);
        assert!(
            sonnet.choices[0].starts_with("min_tokens 2,048 (https://docs.orq.ai/"),
            "{:?}",
            sonnet.choices
        );
        assert!(sonnet.choices[0].contains("over 1,024 (https://docs.litellm.ai/"));
        assert!(sonnet.describe().contains("min_tokens 2,048"));
        let deepseek = model("deepseek", "deepseek-chat");
        assert!(deepseek.choices[0].starts_with("prices $0.28/$0.028"));
    }

    #[test]
    fn gemini_and_bedrock_have_prices_with_their_choice() {
        let flash = model("google", "gemini-2.5-flash");
        assert_eq!(
            flash.prices,
            Some(Prices {
                input: 300_000,
                cached_input: 30_000,
                cache_write: 300_000
            })
        );
        assert_eq!(flash.prices_date.as_deref(), Some("2026-12-01"));
        assert!(
            flash
                .choices
                .iter()
                .any(|c| c.starts_with("prices $0.3/$0.03") && c.contains("over $0.3/$0.075")),
            "{:?}",
            flash.choices
        );
        assert_eq!(
            model("google", "gemini-2.5-pro")
                .prices
                .unwrap()
                .cached_input,
            125_000
        );
        // A cross-region Bedrock id is the model's in-region price (the data says so).
        let sonnet = model("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0");
        assert_eq!(
            sonnet.prices,
            Some(Prices {
                input: 3_000_000,
                cached_input: 300_000,
                cache_write: 3_750_000
            })
        );
        assert_eq!(model("bedrock", "claude-opus-4").prices, None);
    }

    #[test]
    fn the_config_overrides_any_figure() {
        let overrides: BTreeMap<String, ProviderOverride> = serde_yaml_ng::from_str(
            "openai:\n  step_tokens: 64\n  models:\n    gpt-4.1:\n      min_tokens: 2048\n      prices: {cached_input: 0.25}\n    my-tune:\n      prices: {input: 3, cached_input: 1.5}\n",
        )
        .unwrap();
        let gpt = resolve(provider("openai"), Some("gpt-4.1"), None, &overrides, "t").unwrap();
        assert_eq!((gpt.min_tokens, gpt.step_tokens), (2048, 64));
        assert_eq!(gpt.prices.unwrap().input, 2_000_000);
        assert_eq!(gpt.prices.unwrap().cached_input, 250_000);
        assert_eq!(gpt.prices_date.as_deref(), Some("config"));
        assert_eq!(
            gpt.overridden,
            ["min_tokens 2,048", "step_tokens 64", "cached_input $0.25"]
        );
        let tune = resolve(provider("openai"), Some("my-tune"), None, &overrides, "t").unwrap();
        assert_eq!(tune.prices.unwrap().cached_input, 1_500_000);
        let half: BTreeMap<String, ProviderOverride> =
            serde_yaml_ng::from_str("openai: {models: {x: {prices: {input: 1}}}}").unwrap();
        assert!(resolve(provider("openai"), Some("x"), None, &half, "t").is_err());
        let unknown: BTreeMap<String, ProviderOverride> =
            serde_yaml_ng::from_str("opneai: {min_tokens: 1}").unwrap();
        assert!(check_overrides(&unknown, "t").is_err());
    }

    #[test]
    fn counts_are_approximate_without_the_providers_tokenizer() {
        let mut claude = model("anthropic", "claude-sonnet-4-5");
        claude.counted_with = Some("default".into());
        assert_eq!(
            claude.token_counts_note().as_deref(),
            Some("token counts are approximate: Anthropic's tokenizer is not public; counted with `default`")
        );
        let mut gpt = model("openai", "gpt-4.1");
        gpt.counted_with = Some("o200k_base".into());
        assert_eq!(gpt.token_counts_note(), None);
        gpt.counted_with = Some("default".into());
        assert!(gpt
            .token_counts_note()
            .unwrap()
            .ends_with("pass --tokenizer o200k_base for exact counts"));
    }
}
