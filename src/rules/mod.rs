//! Stage 5b: the rules. Metadata and docs live as data in `rules/*.yaml` (embedded at build
//! time), volatile-field patterns in `rules/fields/*.yaml`; each rule's logic is one module here.

mod below_cache_minimum;
mod breakpoint;
mod cache_breakpoints;
mod divergence_before_stable;
mod fields;
mod mid_token_boundary;
mod openai_routing;
mod sites;
mod text_difference;
pub mod undefined_in_sample;
mod unstable_serialization;
mod volatile_before_stable;
mod whitespace_drift;

pub use fields::{
    per_deploy_kind, AssumedPlace, Cadence, FieldClass, FieldKind, FieldKindDef, FieldMatch,
    ShapeDef, SynthKind, VolatileFields,
};

use crate::analyse::Analysis;
use crate::cache_profile::CacheProfile;
use crate::render::instrument::OriginTable;
use crate::render::Prepared;
pub use crate::severity::Severity;
use serde::Deserialize;
use std::ops::Range;
use std::sync::OnceLock;

/// A rule's identity and documentation, from `rules/<CODE>-<name>.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleMeta {
    pub code: String,
    pub name: String,
    pub severity: Severity,
    pub summary: String,
    pub docs: String,
}

impl RuleMeta {
    pub fn url(&self) -> String {
        format!(
            "{}/blob/main/rules/{}-{}.yaml",
            env!("CARGO_PKG_REPOSITORY"),
            self.code,
            self.name
        )
    }
}

/// Rule files, embedded so the binary is self-contained. [`all`] sorts them by code.
const RULE_FILES: &[(&str, &str)] = &[
    (
        "PL001-volatile-before-stable.yaml",
        include_str!("../../rules/PL001-volatile-before-stable.yaml"),
    ),
    (
        "PL002-divergence-before-stable.yaml",
        include_str!("../../rules/PL002-divergence-before-stable.yaml"),
    ),
    (
        "PL003-unstable-serialization.yaml",
        include_str!("../../rules/PL003-unstable-serialization.yaml"),
    ),
    (
        "PL004-whitespace-drift.yaml",
        include_str!("../../rules/PL004-whitespace-drift.yaml"),
    ),
    (
        "PL005-mid-token-boundary.yaml",
        include_str!("../../rules/PL005-mid-token-boundary.yaml"),
    ),
    (
        "PL006-below-cache-minimum.yaml",
        include_str!("../../rules/PL006-below-cache-minimum.yaml"),
    ),
    (
        "PL009-unused-suppression.yaml",
        include_str!("../../rules/PL009-unused-suppression.yaml"),
    ),
    (
        "PL010-suppression-without-reason.yaml",
        include_str!("../../rules/PL010-suppression-without-reason.yaml"),
    ),
    (
        "PL007-history-rewrite.yaml",
        include_str!("../../rules/PL007-history-rewrite.yaml"),
    ),
    (
        "PL008-chat-template-volatile.yaml",
        include_str!("../../rules/PL008-chat-template-volatile.yaml"),
    ),
    (
        "PL011-undefined-in-sample.yaml",
        include_str!("../../rules/PL011-undefined-in-sample.yaml"),
    ),
    (
        "PL012-cache-breakpoint-placement.yaml",
        include_str!("../../rules/PL012-cache-breakpoint-placement.yaml"),
    ),
    (
        "PL013-openai-cache-routing.yaml",
        include_str!("../../rules/PL013-openai-cache-routing.yaml"),
    ),
];

/// The rule files' text, as embedded: what [`all`] parses. The results cache keys on it
/// (a warm run then parses no rule file).
pub fn source() -> impl Iterator<Item = &'static str> {
    RULE_FILES.iter().map(|(_, text)| *text)
}

pub fn all() -> &'static [RuleMeta] {
    static RULES: OnceLock<Vec<RuleMeta>> = OnceLock::new();
    RULES.get_or_init(|| {
        let mut rules: Vec<RuleMeta> = RULE_FILES
            .iter()
            .map(|(file, text)| {
                serde_yaml_ng::from_str(text)
                    .unwrap_or_else(|e| panic!("embedded rule file {file} is invalid: {e}"))
            })
            .collect();
        // Listings (`prefixlint rules`, docs/rules.md) read in code order, wherever a
        // file was added to the list above.
        rules.sort_by(|a, b| a.code.cmp(&b.code));
        rules
    })
}

/// A rule by code (`PL001`) or name (`volatile-before-stable`), case-insensitive.
pub fn find(key: &str) -> Option<&'static RuleMeta> {
    all()
        .iter()
        .find(|r| r.code.eq_ignore_ascii_case(key) || r.name.eq_ignore_ascii_case(key))
}

pub fn meta(code: &str) -> &'static RuleMeta {
    find(code).unwrap_or_else(|| panic!("rule {code} is not registered"))
}

/// A labelled span in some template source.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Label {
    pub template: String,
    pub span: Range<usize>,
    /// Starts with `LINE:COLUMN: `, so the full report prints `path:LINE:COLUMN: text`, the
    /// form editors and terminals turn into links.
    pub text: String,
}

/// One finding of a rule, located in the checked template.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Finding {
    #[serde(with = "rule_by_code")]
    pub rule: &'static RuleMeta,
    pub severity: Severity,
    /// How often what the finding is about changes, where known: PL001's volatile value,
    /// or PL002's request input (`"cadence"` in the JSON report).
    #[serde(default)]
    pub cadence: Option<Cadence>,
    pub message: String,
    pub help: String,
    /// Byte range in the checked template's source.
    pub span: Range<usize>,
    pub label: String,
    /// Further places (other templates, such as an included file or a chat template).
    pub related: Vec<Label>,
    /// What acting on the finding saves, in tokens and money, and the template edits that
    /// do it, where the rule computes them (PL012's placement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saving: Option<Box<Saving>>,
}

/// A finding's saving: what its advice serves from the cache, priced, and the edits of the
/// checked template that carry it out (`crate::fix` applies them through its verifier).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Saving {
    /// Tokens per request served from the cache instead of billed at the input price
    /// (negative where dropping a breakpoint that writes more than is read saves money).
    pub tokens_per_request: i64,
    /// In money, where the model has prices.
    pub cost: Option<SavingCost>,
    /// The edits, best first applied together; empty when the template cannot take them
    /// (`not_editable` says why).
    pub edits: Vec<TemplateEdit>,
    pub not_editable: Option<String>,
    /// What the edits do, in the imperative ("Move cache_control to system[0]").
    pub title: String,
}

/// A saving per 1,000 requests at a model's prices, the write premium counted: negative
/// when the cache writes cost more than the reads save.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SavingCost {
    pub model: String,
    pub prices_date: String,
    pub currency: String,
    /// The TTL whose write price applies (`5m`, `1h`).
    pub write_ttl: String,
    /// Micro-dollars per 1,000 requests.
    pub per_1000_requests: i64,
}

/// Replace `range` of the checked template's source with `replacement`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TemplateEdit {
    pub range: Range<usize>,
    pub replacement: String,
}

/// What a rule sees: one template, its renders' analysis, and the settings.
pub struct RuleContext<'a> {
    pub template: &'a Prepared,
    pub analysis: &'a Analysis,
    pub origins: &'a OriginTable,
    pub fields: &'a VolatileFields,
    pub min_lost_tokens: usize,
    /// The engine profile whose caching the report models.
    pub engine: &'a CacheProfile,
    /// The places whose cadence synthesized samples assumed (empty for a samples file).
    pub assumed: &'a [AssumedPlace],
    /// The first divergence's [`breakpoint::Breakpoint`], found once: six rules read it.
    breakpoint: OnceLock<Option<breakpoint::Breakpoint>>,
}

impl<'a> RuleContext<'a> {
    pub fn new(
        template: &'a Prepared,
        analysis: &'a Analysis,
        origins: &'a OriginTable,
        fields: &'a VolatileFields,
        min_lost_tokens: usize,
        engine: &'a CacheProfile,
    ) -> Self {
        RuleContext {
            template,
            analysis,
            origins,
            fields,
            min_lost_tokens,
            engine,
            assumed: &[],
            breakpoint: OnceLock::new(),
        }
    }

    /// With the places whose cadence the synthesized samples assumed.
    pub fn with_assumed(mut self, assumed: &'a [AssumedPlace]) -> Self {
        self.assumed = assumed;
        self
    }
}

pub trait Rule: Sync {
    fn code(&self) -> &'static str;
    fn check(&self, ctx: &RuleContext) -> Vec<Finding>;
}

/// The rules `check` runs, in order.
pub fn registry() -> &'static [&'static dyn Rule] {
    &[
        &volatile_before_stable::VolatileBeforeStable,
        &divergence_before_stable::DivergenceBeforeStable,
        &unstable_serialization::UnstableSerialization,
        &whitespace_drift::WhitespaceDrift,
        &mid_token_boundary::MidTokenBoundary,
        &below_cache_minimum::BelowCacheMinimum,
        &cache_breakpoints::CacheBreakpointPlacement,
        &openai_routing::OpenaiCacheRouting,
    ]
}

/// A finding's rule, stored by code (the results cache) and found again on reading.
mod rule_by_code {
    use super::RuleMeta;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(rule: &&'static RuleMeta, out: S) -> Result<S::Ok, S::Error> {
        out.serialize_str(&rule.code)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(input: D) -> Result<&'static RuleMeta, D::Error> {
        let code = String::deserialize(input)?;
        super::find(&code).ok_or_else(|| serde::de::Error::custom(format!("unknown rule {code}")))
    }
}
