//! The machine-readable contract: `{"version": 1, "templates": [...], "errors": [...],
//! "skipped": [...], "unchecked": [...]}`. Field names are
//! relied on by outside checks; add fields, never rename or remove them.

use super::{CheckReport, Closing, SkippedTemplate, TemplateError, TemplateReport, UncheckedPlace};
use crate::cache_profile::CacheProfile;
use serde::{Deserialize, Serialize};

pub const VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JsonReport {
    pub version: u32,
    /// The engine profile behind `cached_tokens_expected`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<JsonEngine>,
    pub templates: Vec<JsonTemplate>,
    /// Templates that could not be checked; every discovered template is in `templates`
    /// or here.
    #[serde(default)]
    pub errors: Vec<JsonError>,
    /// Discovered files that were deliberately not checked.
    #[serde(default)]
    pub skipped: Vec<JsonSkipped>,
    /// Prompt-like text found that could not be checked, with its place and why.
    #[serde(default)]
    pub unchecked: Vec<JsonUnchecked>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JsonUnchecked {
    pub path: String,
    /// 1-based.
    pub line: usize,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JsonError {
    pub path: String,
    pub message: String,
    /// 1-based; `null` when the error has no place in this file.
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub help: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JsonSkipped {
    pub path: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JsonEngine {
    pub name: String,
    pub unit_tokens: usize,
    pub min_tokens: usize,
    pub recomputes_last_token: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// Hosted APIs: the provider data behind the figures (`rules/providers/*.yaml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<JsonProvider>,
}

/// `engine.provider`: which data the hosted API's figures come from, and its date.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JsonProvider {
    pub name: String,
    pub model: String,
    /// The latest date the figures in force were checked against their sources.
    pub data_date: String,
    /// US dollars per million tokens, when the data or the config has prices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<JsonPrices>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_breakpoints: Option<usize>,
    /// Where sources disagree: the figure picked, over which, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
    /// Figures from config `providers:` or `--engine` options.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overridden: Vec<String>,
    /// Whether the token counts are the provider's own (`exact`) or `approximate`.
    pub token_counts: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_counts_note: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JsonPrices {
    pub input: f64,
    pub cached_input: f64,
    pub cache_write: f64,
    pub per: String,
    pub currency: String,
    pub date: String,
}

/// `templates[].cost`: the input cost per 1,000 requests at the selected model's prices.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JsonCost {
    pub model: String,
    pub prices_date: String,
    pub per_1000_requests: JsonPerThousand,
    pub currency: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JsonPerThousand {
    /// As the template is now.
    pub now: f64,
    /// With its findings fixed: the shared prefix extended to what the analysis says is
    /// reachable (docs/costs.md).
    pub fixed: f64,
}

pub fn cost(c: &crate::cost::TemplateCost) -> JsonCost {
    JsonCost {
        model: c.model.clone(),
        prices_date: c.prices_date.clone(),
        per_1000_requests: JsonPerThousand {
            now: crate::cost::dollars(c.now),
            fixed: crate::cost::dollars(c.fixed),
        },
        currency: c.currency.clone(),
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JsonTemplate {
    pub path: String,
    /// `null` for a template file; for one inside a host file (`path`), where it sits.
    #[serde(default)]
    pub embedded: Option<super::EmbeddedRef>,
    /// The template's format: `jinja`, `format` (Python `{var}`), `fstring`,
    /// `semantic-kernel`, `handlebars`, `liquid` or `mustache`.
    #[serde(default)]
    pub format: crate::formats::TemplateFormat,
    pub samples: usize,
    pub tokens: TokenRange,
    pub shared_prefix_tokens: usize,
    /// What the selected engine caches of the shared prefix.
    #[serde(default)]
    pub cached_tokens_expected: usize,
    pub recoverable_tokens: usize,
    pub cacheable_percent: f64,
    /// Where the renders first differ, as a 1-based position in the rendered text of sample 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_divergence: Option<JsonDivergence>,
    /// With several volatile sites: the stable tokens that moving all of them would make
    /// cacheable (each diagnostic has its own figure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recoverable_tokens_all_sites: Option<usize>,
    /// What the figures cannot show, e.g. that one render cannot show a divergence.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub diagnostics: Vec<JsonDiagnostic>,
    /// Values rendered with stand-ins for application objects, which samples cannot hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stand_ins: Vec<String>,
    /// At the selected hosted model's prices; absent for engines without prices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<JsonCost>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokenRange {
    pub min: usize,
    pub max: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JsonDivergence {
    pub render_offset: usize,
    pub token: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JsonDiagnostic {
    pub rule: String,
    pub name: String,
    pub severity: String,
    pub message: String,
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
    pub help: String,
    pub url: String,
    /// How often what it is about changes: `per-request`, `per-user`, `daily` or
    /// `per-deploy`; absent when unknown (PL002 on text that is not the request's input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cadence: Option<String>,
    /// What acting on the finding saves (PL012's placement); absent for other findings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saving: Option<JsonSaving>,
}

/// A finding's saving: tokens per request served from the cache, and in money where the
/// model has prices.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JsonSaving {
    pub tokens_per_request: i64,
    /// `null` for a model without prices.
    pub cost: Option<JsonSavingCost>,
    /// The change that saves it: "Add cache_control to system[0]".
    pub change: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JsonSavingCost {
    pub model: String,
    pub prices_date: String,
    pub currency: String,
    /// The TTL whose write price is counted.
    pub write_ttl: String,
    /// Dollars saved per 1,000 requests; negative where the change costs more.
    pub per_1000_requests: f64,
}

pub fn to_json(report: &CheckReport) -> JsonReport {
    JsonReport {
        version: VERSION,
        engine: report.engine.as_ref().map(engine),
        templates: report.templates.iter().map(template).collect(),
        errors: report.errors.iter().map(error).collect(),
        skipped: report.skipped.iter().map(skipped).collect(),
        unchecked: report.unchecked.iter().map(unchecked).collect(),
    }
}

pub fn engine(e: &CacheProfile) -> JsonEngine {
    JsonEngine {
        name: e.name.to_owned(),
        unit_tokens: e.unit_tokens,
        min_tokens: e.min_tokens,
        recomputes_last_token: e.recomputes_last_token,
        model: e.model.clone(),
        backend: e.backend.map(|b| b.name().to_owned()),
        provider: e.hosted.as_ref().map(|h| JsonProvider {
            name: h.provider.clone(),
            model: h.model.clone(),
            data_date: h.data_date.clone(),
            prices: h.prices.as_ref().map(|p| JsonPrices {
                input: crate::cost::dollars(p.input),
                cached_input: crate::cost::dollars(p.cached_input),
                cache_write: crate::cost::dollars(p.cache_write),
                per: "million tokens".into(),
                currency: h.currency.clone(),
                date: h.prices_date.clone().unwrap_or_default(),
            }),
            ttl: h.ttl.as_ref().map(|t| t.name.clone()),
            max_breakpoints: h.max_breakpoints,
            choices: h.choices.clone(),
            overridden: h.overridden.clone(),
            token_counts: if h.token_counts_note().is_some() {
                "approximate".into()
            } else {
                "exact".into()
            },
            token_counts_note: h.token_counts_note(),
        }),
    }
}

pub fn template(t: &TemplateReport) -> JsonTemplate {
    JsonTemplate {
        path: t.path.clone(),
        embedded: t.embedded.clone(),
        format: t.format,
        samples: t.analysis.samples,
        tokens: TokenRange {
            min: t.analysis.tokens_min,
            max: t.analysis.tokens_max,
        },
        shared_prefix_tokens: t.analysis.shared_prefix_tokens,
        cached_tokens_expected: t.analysis.cached_tokens_expected,
        recoverable_tokens: t.analysis.recoverable_tokens,
        cacheable_percent: (t.analysis.cacheable_percent() * 10.0).round() / 10.0,
        first_divergence: t.analysis.divergence.as_ref().map(|d| JsonDivergence {
            render_offset: d.offset,
            token: t.analysis.shared_prefix_tokens,
        }),
        recoverable_tokens_all_sites: t.analysis.recoverable_tokens_all_sites(),
        notes: t.notes(),
        diagnostics: t
            .findings
            .iter()
            .map(|f| {
                let pos = t.position(f);
                JsonDiagnostic {
                    rule: f.rule.code.to_string(),
                    name: f.rule.name.clone(),
                    severity: f.severity.as_str().to_owned(),
                    message: f.message.clone(),
                    line: pos.line,
                    column: pos.column,
                    end_line: pos.end_line,
                    end_column: pos.end_column,
                    help: f.help.clone(),
                    url: f.rule.url(),
                    cadence: f.cadence.map(|c| c.name().to_owned()),
                    saving: f.saving.as_deref().map(|s| JsonSaving {
                        tokens_per_request: s.tokens_per_request,
                        cost: s.cost.as_ref().map(|c| JsonSavingCost {
                            model: c.model.clone(),
                            prices_date: c.prices_date.clone(),
                            currency: c.currency.clone(),
                            write_ttl: c.write_ttl.clone(),
                            per_1000_requests: c.per_1000_requests as f64 / 1_000_000.0,
                        }),
                        change: s.title.clone(),
                    }),
                }
            })
            .collect(),
        stand_ins: t.stand_ins.clone(),
        cost: t.cost.as_ref().map(cost),
    }
}

pub fn error(e: &TemplateError) -> JsonError {
    JsonError {
        path: e.path.clone(),
        message: e.message.clone(),
        line: e.location.map(|p| p.line),
        column: e.location.map(|p| p.column),
        help: e.help(),
    }
}

pub fn unchecked(place: &UncheckedPlace) -> JsonUnchecked {
    JsonUnchecked {
        path: place.path.clone(),
        line: place.line,
        reason: place.reason.clone(),
    }
}

pub fn skipped(s: &SkippedTemplate) -> JsonSkipped {
    JsonSkipped {
        path: s.path.clone(),
        reason: s.reason.clone(),
    }
}

/// The JSON document written a template at a time, byte for byte what [`render`] writes
/// for the whole report: the header and each template as it comes, the failures and the
/// skipped files at the end.
#[derive(Debug, Default)]
pub struct JsonStream {
    templates: usize,
}

impl JsonStream {
    /// `{`, the version, the engine and the opening of `templates`.
    pub fn header(engine_profile: Option<&CacheProfile>) -> String {
        let mut out = format!("{{\n  \"version\": {VERSION},\n");
        if let Some(profile) = engine_profile {
            out.push_str(&format!("  \"engine\": {},\n", pretty(&engine(profile), 1)));
        }
        out.push_str("  \"templates\": [");
        out
    }

    /// A template's element of `templates`, without the separator before it
    /// ([`Self::separator`]).
    pub fn element(t: &TemplateReport) -> String {
        format!("{}{}", "  ".repeat(2), pretty(&template(t), 2))
    }

    /// What goes before the next element of `templates` (the first takes no comma).
    pub fn separator(&mut self) -> &'static str {
        self.templates += 1;
        if self.templates == 1 {
            "\n"
        } else {
            ",\n"
        }
    }

    /// The end of `templates`, then `errors`, `skipped`, `unchecked`, `fixes` (a
    /// `--fix`/`--diff` run's, when given) and `}`.
    pub fn footer(&self, report: &Closing, fixes: Option<&serde_json::Value>) -> String {
        let close = if self.templates == 0 { "]" } else { "\n  ]" };
        let errors: Vec<JsonError> = report.errors.iter().map(error).collect();
        let skipped: Vec<JsonSkipped> = report.skipped.iter().map(skipped).collect();
        let unchecked: Vec<JsonUnchecked> = report.unchecked.iter().map(unchecked).collect();
        let fixes = fixes
            .map(|fixes| format!(",\n  \"fixes\": {}", pretty(fixes, 1)))
            .unwrap_or_default();
        format!(
            "{close},\n  \"errors\": {},\n  \"skipped\": {},\n  \"unchecked\": {}{fixes}\n}}\n",
            pretty(&errors, 1),
            pretty(&skipped, 1),
            pretty(&unchecked, 1)
        )
    }
}

/// The next element of a pretty-printed list that is written as it comes, `depth` levels
/// deep; `written` counts the elements before it (the first one takes no comma).
pub fn list_element(written: &mut usize, value: &impl Serialize, depth: usize) -> String {
    let mut out = Vec::new();
    write_list_element(&mut out, written, value, depth).expect("a Vec takes every write");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// [`list_element`], written straight to `out`.
pub fn write_list_element<W: std::io::Write>(
    out: &mut W,
    written: &mut usize,
    value: &impl Serialize,
    depth: usize,
) -> std::io::Result<()> {
    let separator: &[u8] = if *written == 0 { b"\n" } else { b",\n" };
    *written += 1;
    out.write_all(separator)?;
    indent(out, depth)?;
    write_pretty(out, value, depth)
}

/// serde_json's pretty form of `value` as it appears `depth` levels deep in a document:
/// its inner lines indented by two spaces a level (JSON strings hold no raw line breaks).
pub fn pretty(value: &impl Serialize, depth: usize) -> String {
    let mut out = Vec::new();
    match write_pretty(&mut out, value, depth) {
        Ok(()) => String::from_utf8(out).expect("serde_json writes UTF-8"),
        Err(_) => String::new(),
    }
}

/// [`pretty`], written to `out` as it is made (no text made first, then indented again).
pub fn write_pretty<W: std::io::Write>(
    out: &mut W,
    value: &impl Serialize,
    depth: usize,
) -> std::io::Result<()> {
    let mut serializer = serde_json::Serializer::with_formatter(out, PrettyAt::new(depth));
    value
        .serialize(&mut serializer)
        .map_err(std::io::Error::other)
}

fn indent<W: std::io::Write + ?Sized>(out: &mut W, depth: usize) -> std::io::Result<()> {
    for _ in 0..depth {
        out.write_all(b"  ")?;
    }
    Ok(())
}

/// serde_json's `PrettyFormatter` (two spaces a level), starting `depth` levels deep: every
/// line break it writes is followed by `depth` more levels of indent.
struct PrettyAt {
    current: usize,
    has_value: bool,
}

impl PrettyAt {
    fn new(depth: usize) -> PrettyAt {
        PrettyAt {
            current: depth,
            has_value: false,
        }
    }

    fn open<W: std::io::Write + ?Sized>(
        &mut self,
        out: &mut W,
        mark: &[u8],
    ) -> std::io::Result<()> {
        self.current += 1;
        self.has_value = false;
        out.write_all(mark)
    }

    fn close<W: std::io::Write + ?Sized>(
        &mut self,
        out: &mut W,
        mark: &[u8],
    ) -> std::io::Result<()> {
        self.current -= 1;
        if self.has_value {
            out.write_all(b"\n")?;
            indent(out, self.current)?;
        }
        out.write_all(mark)
    }

    fn item<W: std::io::Write + ?Sized>(
        &mut self,
        out: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        out.write_all(if first { b"\n" } else { b",\n" })?;
        indent(out, self.current)
    }
}

impl serde_json::ser::Formatter for PrettyAt {
    fn begin_array<W: std::io::Write + ?Sized>(&mut self, out: &mut W) -> std::io::Result<()> {
        self.open(out, b"[")
    }
    fn end_array<W: std::io::Write + ?Sized>(&mut self, out: &mut W) -> std::io::Result<()> {
        self.close(out, b"]")
    }
    fn begin_array_value<W: std::io::Write + ?Sized>(
        &mut self,
        out: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.item(out, first)
    }
    fn end_array_value<W: std::io::Write + ?Sized>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn begin_object<W: std::io::Write + ?Sized>(&mut self, out: &mut W) -> std::io::Result<()> {
        self.open(out, b"{")
    }
    fn end_object<W: std::io::Write + ?Sized>(&mut self, out: &mut W) -> std::io::Result<()> {
        self.close(out, b"}")
    }
    fn begin_object_key<W: std::io::Write + ?Sized>(
        &mut self,
        out: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.item(out, first)
    }
    fn begin_object_value<W: std::io::Write + ?Sized>(
        &mut self,
        out: &mut W,
    ) -> std::io::Result<()> {
        out.write_all(b": ")
    }
    fn end_object_value<W: std::io::Write + ?Sized>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

pub fn render(report: &CheckReport) -> String {
    let mut out = serde_json::to_string_pretty(&to_json(report)).unwrap_or_default();
    out.push('\n');
    out
}
