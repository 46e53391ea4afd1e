//! Money: what a template's requests cost at a hosted model's prices (`check`), and what a
//! logged run spent, saved by cache reads and lost to each cause of a break (`audit`).
//!
//! Prices are integers (micro-dollars per million tokens, [`crate::providers::Prices`]), so
//! every sum is exact: tokens × price is in picodollars (10⁻¹² $), summed in `u128`, and
//! each figure is rounded once, half up, to the micro-dollar. JSON states dollars as
//! numbers with at most six decimals; the text formats print at least cents.
//!
//! A template's cost per 1,000 requests (`check`), for `n̄` the mean prompt length over its
//! renders and `c` the tokens the profile caches ([`crate::cache_profile`]'s
//! `cached_tokens_expected`):
//!
//! ```text
//! per 1,000 = 1000 · ((n̄ − c) · input + c · cached_input) + c · (cache_write − cached_input)
//! ```
//!
//! that is, 1,000 requests sent while the cache stays warm: each pays the input price for
//! what is not cached and the read price for what is, and the first one writes the cached
//! prefix instead of reading it (at the write price: Anthropic's 1.25× for 5 minutes, 2×
//! for 1 hour; the input price where writing costs nothing extra). `fixed` is the same with
//! `c` for the shared prefix the analysis says is reachable: the shared prefix plus the
//! stable tokens behind the first divergence (`recoverable_tokens`, everything stable moved
//! before everything that varies), at most the shortest render, through the same profile.
//! A template without findings has nothing to fix: `fixed` = `now`.

use crate::analyse::Analysis;
use crate::cache_profile::{CacheProfile, CacheProfileKind};
use crate::providers::{Micros, Prices};
use serde::{Deserialize, Serialize, Serializer};
use std::collections::BTreeMap;

/// Picodollars per micro-dollar.
const PICO_PER_MICRO: u128 = 1_000_000;

/// `numerator / denominator` picodollars in whole micro-dollars, rounded half up.
fn to_micros(numerator: u128, denominator: u128) -> Micros {
    let denominator = denominator * PICO_PER_MICRO;
    ((numerator + denominator / 2) / denominator) as Micros
}

/// One template's input cost at the selected model's prices (`templates[].cost` in JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TemplateCost {
    pub model: String,
    /// When the prices were checked (`config` for prices from config `providers:`).
    pub prices_date: String,
    pub currency: String,
    /// Per 1,000 requests as the template is now, in micro-dollars.
    pub now: Micros,
    /// Per 1,000 requests with its findings fixed, in micro-dollars.
    pub fixed: Micros,
    /// The cached tokens per request behind each figure.
    pub cached_now: usize,
    pub cached_fixed: usize,
}

impl TemplateCost {
    /// `$4.00` or, where fixing the findings changes it, `$4.00 → $2.47`.
    pub fn short(&self) -> String {
        if self.fixed == self.now {
            format_dollars(self.now)
        } else {
            format!(
                "{} → {}",
                format_dollars(self.now),
                format_dollars(self.fixed)
            )
        }
    }

    /// One sentence: `$4.00 per 1,000 requests at gpt-4.1 prices of 2026-12-01, $2.47 with
    /// the findings fixed`.
    pub fn sentence(&self) -> String {
        let mut out = format!(
            "{} per 1,000 requests at {} prices of {}",
            format_dollars(self.now),
            self.model,
            self.prices_date
        );
        if self.fixed != self.now {
            out.push_str(&format!(
                ", {} with the findings fixed (saves {})",
                format_dollars(self.fixed),
                format_dollars(self.now.saturating_sub(self.fixed))
            ));
        }
        out
    }
}

/// What 1,000 requests cost over renders of `token_counts` tokens when `cached` of each are
/// served from the cache (see the module docs); `None` without renders.
pub fn per_1000_requests(prices: &Prices, token_counts: &[usize], cached: usize) -> Option<Micros> {
    if token_counts.is_empty() {
        return None;
    }
    let renders = token_counts.len() as u128;
    let cached = cached as u128;
    let (input, read, write) = (
        prices.input as u128,
        prices.cached_input as u128,
        prices.cache_write as u128,
    );
    let requests: u128 = token_counts
        .iter()
        .map(|&n| {
            let n = (n as u128).max(cached);
            (n - cached) * input + cached * read
        })
        .sum();
    // The first request writes instead of reading (a write cheaper than a read lowers it).
    let first = renders * cached * write;
    let numerator = (1000 * requests + first).saturating_sub(renders * cached * read);
    Some(to_micros(numerator, renders))
}

/// The template's cost now and with its findings fixed, at the profile's prices; `None`
/// for an engine without prices (local engines, a hosted model with no price data).
pub fn template_cost(
    profile: &CacheProfile,
    analysis: &Analysis,
    has_findings: bool,
) -> Option<TemplateCost> {
    let hosted = profile.hosted.as_ref()?;
    let prices = hosted.prices.as_ref()?;
    let cached_now = analysis.cached_tokens_expected;
    let cached_fixed = if has_findings {
        let reachable =
            (analysis.shared_prefix_tokens + analysis.recoverable_tokens).min(analysis.tokens_min);
        profile
            .cached_tokens(reachable, analysis.tokens_min)
            .max(cached_now)
    } else {
        cached_now
    };
    Some(TemplateCost {
        model: hosted.model.clone(),
        prices_date: hosted.prices_date.clone()?,
        currency: hosted.currency.clone(),
        now: per_1000_requests(prices, &analysis.token_counts, cached_now)?,
        fixed: per_1000_requests(prices, &analysis.token_counts, cached_fixed)?,
        cached_now,
        cached_fixed,
    })
}

/// What a placement of Anthropic `cache_control` breakpoints reads and writes over the
/// renders, played as requests in order (`crate::analyse::placement::simulate`): the first
/// render apart, since it reads nothing and writes what the cache will serve the others.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Played {
    pub first_written: usize,
    /// Summed over the renders after the first.
    pub later_read: usize,
    pub later_written: usize,
}

/// What placement `then` saves against `now` per 1,000 requests, in micro-dollars, rounded
/// once, half away from zero; negative when it costs more. As [`per_1000_requests`]
/// counts, 1,000 requests like the `later` renders after the first (the steady state: each
/// reads what its breakpoints find and writes what they must, at `prices.cache_write`),
/// plus the first render's write once:
///
/// ```text
/// saving = 1000/later · (Δread · (input − cached_input) − Δwritten_later · (write − input))
///          − Δwritten_first · (write − input)
/// ```
///
/// with Δ = `then` − `now`. A read saves its discount; a written token costs the write
/// premium over the input price it would otherwise pay. `None` without later renders.
pub fn placement_saving(prices: &Prices, later: usize, now: Played, then: Played) -> Option<i64> {
    if later == 0 {
        return None;
    }
    let signed = |n: usize| n as i128;
    let discount = signed(prices.input as usize) - signed(prices.cached_input as usize);
    let premium = signed(prices.cache_write as usize) - signed(prices.input as usize);
    let read = signed(then.later_read) - signed(now.later_read);
    let written = signed(then.later_written) - signed(now.later_written);
    let first = signed(then.first_written) - signed(now.first_written);
    let later = later as i128;
    // Picodollars × `later`.
    let numerator = 1000 * (read * discount - written * premium) - later * first * premium;
    let denominator = later * PICO_PER_MICRO as i128;
    let half = denominator / 2;
    let rounded = if numerator >= 0 {
        (numerator + half) / denominator
    } else {
        (numerator - half) / denominator
    };
    Some(rounded as i64)
}

/// A Claude model's prices with the write price of one TTL, as PL012 weighs a placement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakpointPrices {
    pub model: String,
    pub prices_date: String,
    pub currency: String,
    /// The TTL whose write price `prices.cache_write` is (`5m`, `1h`).
    pub ttl: String,
    pub prices: Prices,
}

/// The prices of the Claude model a request body is sent to, writing at `ttl`: the
/// selected engine's (config `providers:` overrides included) when it is Anthropic's and
/// the body names no other model; else the provider data's for the body's model, or for
/// the engine's or the default model. `None` for a model without prices.
pub fn anthropic_prices(
    profile: &CacheProfile,
    body_model: Option<&str>,
    ttl: &str,
) -> Option<BreakpointPrices> {
    let provider = crate::providers::for_engine(CacheProfileKind::Anthropic.name())?;
    let engine = profile
        .hosted
        .as_ref()
        .filter(|_| profile.kind == CacheProfileKind::Anthropic);
    let same = |a: &str, b: &str| {
        crate::providers::model_matches(a, b) || crate::providers::model_matches(b, a)
    };
    if let Some(hosted) = engine.filter(|h| body_model.is_none_or(|m| same(&h.model, m))) {
        let mut prices = hosted.prices?;
        if hosted.ttl.as_ref().is_none_or(|t| t.name != ttl) {
            // The engine's TTL is another: the write multiplier of the one asked for.
            let multiplier = provider
                .ttls
                .iter()
                .find(|t| t.name == ttl)?
                .write_multiplier
                .as_ref()?
                .value;
            prices.cache_write = (prices.input as f64 * multiplier).round() as Micros;
        }
        return Some(BreakpointPrices {
            model: hosted.model.clone(),
            prices_date: hosted.prices_date.clone()?,
            currency: hosted.currency.clone(),
            ttl: ttl.to_owned(),
            prices,
        });
    }
    let model = body_model
        .or(engine.map(|h| h.model.as_str()))
        .unwrap_or(&provider.default_model);
    let hosted = crate::providers::resolve(
        provider,
        Some(model),
        Some(ttl),
        &BTreeMap::new(),
        "cache_control",
    )
    .ok()?;
    Some(BreakpointPrices {
        model: hosted.model.clone(),
        prices_date: hosted.prices_date.clone()?,
        currency: hosted.currency,
        ttl: ttl.to_owned(),
        prices: hosted.prices?,
    })
}

/// A signed saving: `$1.23`, or `-$0.04` when it costs more.
pub fn format_signed_dollars(micros: i64) -> String {
    if micros < 0 {
        format!("-{}", format_dollars(micros.unsigned_abs()))
    } else {
        format_dollars(micros as Micros)
    }
}

/// Micro-dollars as a JSON number of dollars (exact to six decimals).
pub fn dollars(micros: Micros) -> f64 {
    micros as f64 / 1_000_000.0
}

/// `$4.00`, `$0.014`, `$0.000123`: at least cents, then as many digits as it takes.
pub fn format_dollars(micros: Micros) -> String {
    let whole = micros / 1_000_000;
    let mut fraction = format!("{:06}", micros % 1_000_000);
    while fraction.len() > 2 && fraction.ends_with('0') {
        fraction.pop();
    }
    format!("${}.{fraction}", crate::fmt::thousands(whole as usize))
}

fn as_dollars<S: Serializer>(micros: &Micros, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(dollars(*micros))
}

fn map_as_dollars<S: Serializer>(map: &BTreeMap<String, Micros>, s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(map.iter().map(|(k, v)| (k, dollars(*v))))
}

/// What an audited log cost at the profile's prices (the audit summary's `cost`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditCost {
    pub model: String,
    pub prices_date: String,
    pub currency: String,
    /// The prompts' input: uncached tokens at the input price, cached ones at the read price.
    #[serde(serialize_with = "as_dollars")]
    pub spent: Micros,
    /// What the cache reads saved against paying the input price for them.
    #[serde(serialize_with = "as_dollars")]
    pub saved: Micros,
    /// What each cause of a break cost: its lost tokens paid at the input price instead
    /// of the read price.
    #[serde(serialize_with = "map_as_dollars")]
    pub lost_by_cause: BTreeMap<String, Micros>,
}

/// The audit's cost from its sums: `prompt_tokens` over the log, `cached_tokens` of them
/// served from the cache (as logged where the log says, else as predicted), the tokens
/// lost by cause. Writes are priced as uncached input (the log's write counts are not
/// priced apart).
pub fn audit_cost(
    profile: &CacheProfile,
    prompt_tokens: usize,
    cached_tokens: usize,
    lost_by_cause: &BTreeMap<String, usize>,
) -> Option<AuditCost> {
    let hosted = profile.hosted.as_ref()?;
    let prices = hosted.prices.as_ref()?;
    let (input, read) = (prices.input as u128, prices.cached_input as u128);
    let cached = cached_tokens.min(prompt_tokens) as u128;
    let uncached = prompt_tokens as u128 - cached;
    let discount = input.saturating_sub(read);
    Some(AuditCost {
        model: hosted.model.clone(),
        prices_date: hosted.prices_date.clone()?,
        currency: hosted.currency.clone(),
        spent: to_micros(uncached * input + cached * read, 1),
        saved: to_micros(cached * discount, 1),
        lost_by_cause: lost_by_cause
            .iter()
            .map(|(cause, &tokens)| (cause.clone(), to_micros(tokens as u128 * discount, 1)))
            .collect(),
    })
}

/// What a template's warm requests cost per 1,000 at the profile's prices, as predicted and
/// as the server measured them (`measure`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeasureCost {
    pub model: String,
    pub prices_date: String,
    pub currency: String,
    pub predicted: Micros,
    /// `None` when a warm request's cached tokens were not reported.
    pub measured: Option<Micros>,
}

impl Serialize for MeasureCost {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct PerThousand {
            predicted: f64,
            measured: Option<f64>,
        }
        #[derive(Serialize)]
        struct Shape<'a> {
            model: &'a str,
            prices_date: &'a str,
            per_1000_requests: PerThousand,
            currency: &'a str,
        }
        Shape {
            model: &self.model,
            prices_date: &self.prices_date,
            per_1000_requests: PerThousand {
                predicted: dollars(self.predicted),
                measured: self.measured.map(dollars),
            },
            currency: &self.currency,
        }
        .serialize(s)
    }
}

/// One warm request as `measure` saw it: its prompt tokens, and the tokens served from the
/// cache.
#[derive(Debug, Clone, Copy)]
pub struct Served {
    pub prompt_tokens: usize,
    pub cached_tokens: usize,
}

/// 1,000 requests like `served` (their mean), each paying the input price for what was not
/// cached and the read price for what was; `None` without requests.
pub fn per_1000_served(prices: &Prices, served: &[Served]) -> Option<Micros> {
    if served.is_empty() {
        return None;
    }
    let sum: u128 = served
        .iter()
        .map(|r| {
            let cached = r.cached_tokens.min(r.prompt_tokens) as u128;
            (r.prompt_tokens as u128 - cached) * prices.input as u128
                + cached * prices.cached_input as u128
        })
        .sum();
    Some(to_micros(1000 * sum, served.len() as u128))
}

/// `measure`'s cost of a template's warm requests: predicted and measured.
pub fn measure_cost(
    profile: &CacheProfile,
    predicted: &[Served],
    measured: Option<&[Served]>,
) -> Option<MeasureCost> {
    let hosted = profile.hosted.as_ref()?;
    let prices = hosted.prices.as_ref()?;
    Some(MeasureCost {
        model: hosted.model.clone(),
        prices_date: hosted.prices_date.clone()?,
        currency: hosted.currency.clone(),
        predicted: per_1000_served(prices, predicted)?,
        measured: measured.and_then(|m| per_1000_served(prices, m)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache_profile::CacheProfileConfig;

    fn profile(spec: &str) -> CacheProfile {
        CacheProfile::from_config(&CacheProfileConfig::parse_cli(spec).unwrap(), "test").unwrap()
    }

    /// Hand-computed from rules/providers/openai.yaml (gpt-4.1: $2.00 input, $0.50
    /// cached, no write premium) and anthropic.yaml (claude-sonnet-4-5: $3.00, $0.30,
    /// writes $3.75 for 5 minutes).
    #[test]
    fn per_1000_requests_by_hand() {
        let gpt = *profile("openai:model=gpt-4.1").prices().unwrap();
        // 2,000 tokens, nothing cached: 1000 · 2000 · $2/M = $4.
        assert_eq!(per_1000_requests(&gpt, &[2000], 0), Some(4_000_000));
        // 1,024 cached: 1000 · (976 · 2 + 1024 · 0.5)/M + 1024 · (2 − 0.5)/M
        // = $2.464 + $0.001536 = $2.465536.
        assert_eq!(per_1000_requests(&gpt, &[2000], 1024), Some(2_465_536));
        // Two renders of 2,000 and 3,000 tokens: the mean, 2,500.
        assert_eq!(per_1000_requests(&gpt, &[2000, 3000], 0), Some(5_000_000));
        assert_eq!(per_1000_requests(&gpt, &[], 0), None);
        let claude = *profile("anthropic:model=claude-sonnet-4-5")
            .prices()
            .unwrap();
        // 1,500 tokens, 1,200 cached: 1000 · (300 · 3 + 1200 · 0.3)/M + 1200 · (3.75 − 0.3)/M
        // = $1.26 + $0.00414 = $1.26414.
        assert_eq!(per_1000_requests(&claude, &[1500], 1200), Some(1_264_140));
        let hour = *profile("anthropic:model=claude-sonnet-4-5,ttl=1h")
            .prices()
            .unwrap();
        // The 1-hour write: 1200 · (6 − 0.3)/M = $0.00684.
        assert_eq!(per_1000_requests(&hour, &[1500], 1200), Some(1_266_840));
        // gpt-5.2: $1.75 input, $0.175 cached. One token per request: $0.00175 per 1,000.
        let gpt5 = *profile("openai:model=gpt-5.2").prices().unwrap();
        assert_eq!(per_1000_requests(&gpt5, &[1], 0), Some(1_750));
        // Rounded once, half up: 1000 · (1.75 + 0.175) + (1.75 − 0.175) = 1,926.575
        // micro-dollars.
        assert_eq!(per_1000_requests(&gpt5, &[2], 1), Some(1_927));
    }

    #[test]
    fn measured_requests_by_hand() {
        let gpt = profile("openai:model=gpt-4.1");
        let served = |prompt_tokens, cached_tokens| Served {
            prompt_tokens,
            cached_tokens,
        };
        // 1000 · ((2,000 − 1,024) · $2 + 1,024 · $0.5)/M = $2.464; and with 1,152 cached
        // on the second: mean of $2.464 and $2.272 = $2.368.
        let predicted = [served(2000, 1024), served(2000, 1024)];
        let measured = [served(2000, 1024), served(2000, 1152)];
        let cost = measure_cost(&gpt, &predicted, Some(&measured)).unwrap();
        assert_eq!(
            (cost.predicted, cost.measured),
            (2_464_000, Some(2_368_000))
        );
        assert_eq!(
            serde_json::to_value(&cost).unwrap()["per_1000_requests"],
            serde_json::json!({"predicted": 2.464, "measured": 2.368})
        );
        assert_eq!(measure_cost(&profile("vllm"), &predicted, None), None);
    }

    #[test]
    fn dollars_are_printed_with_at_least_cents() {
        assert_eq!(format_dollars(4_000_000), "$4.00");
        assert_eq!(format_dollars(2_465_536), "$2.465536");
        assert_eq!(format_dollars(14_000), "$0.014");
        assert_eq!(format_dollars(1_234_500_000), "$1,234.50");
        assert_eq!(dollars(2_465_536), 2.465536);
    }

    #[test]
    fn audit_cost_by_hand() {
        let gpt = profile("openai:model=gpt-4.1");
        let lost = BTreeMap::from([("tools-changed".to_owned(), 3000)]);
        let cost = audit_cost(&gpt, 10_000, 4_000, &lost).unwrap();
        // 6,000 · $2/M + 4,000 · $0.5/M = $0.014; saved 4,000 · $1.5/M = $0.006.
        assert_eq!((cost.spent, cost.saved), (14_000, 6_000));
        assert_eq!(cost.lost_by_cause["tools-changed"], 4_500);
        assert_eq!(
            serde_json::to_value(&cost).unwrap(),
            serde_json::json!({"model": "gpt-4.1", "prices_date": "2026-12-01", "currency": "USD",
                "spent": 0.014, "saved": 0.006, "lost_by_cause": {"tools-changed": 0.0045}})
        );
        assert_eq!(audit_cost(&profile("vllm"), 10, 5, &lost), None);
        assert_eq!(
            audit_cost(&profile("bedrock:model=claude-opus-4"), 10, 5, &lost),
            None
        );
    }
}
