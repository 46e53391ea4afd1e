//! Stage 5b: the rules. A rule is one module here, named after it (`history_rewrite.rs` for
//! PL007 `history-rewrite`), holding its check, its messages and its fix; its metadata and
//! docs are data in `rules/CODE-name.yaml` (embedded at build time), volatile-field patterns
//! in `rules/fields/*.yaml`. The [`with_rules!`] list below is the registry: the typed
//! [`RuleCode`], the embedded docs and [`RuleCode::rule`] are made of it, so adding a rule
//! is adding its module, its YAML and its line there (the tests at the end fail on a YAML
//! file, a module or a fixture folder that is missing, and snapshot each rule's findings on
//! its fixtures).

// One module per rule, listed by the registry below (declared out here, not by its macro:
// rustfmt formats only the modules it finds declared).
pub mod below_cache_minimum;
pub mod cache_breakpoint_placement;
pub mod chat_template_volatile;
pub mod divergence_before_stable;
pub mod history_rewrite;
pub mod mid_token_boundary;
pub mod openai_cache_routing;
pub mod suppression_without_reason;
pub mod undefined_in_sample;
pub mod unstable_serialization;
pub mod unused_suppression;
pub mod volatile_before_stable;
pub mod whitespace_drift;

// What several rules share.
mod breakpoint;
mod fields;
mod sites;
pub mod suppression_comment;
mod text_difference;

pub use fields::{
    per_deploy_kind, AssumedPlace, Cadence, FieldClass, FieldKind, FieldKindDef, FieldMatch,
    ShapeDef, SynthKind, VolatileFields,
};

use crate::analyse::Analysis;
use crate::cache_profile::CacheProfile;
use crate::edit::jinja::{self, Block, Tag};
use crate::edit::Fix;
use crate::render::instrument::OriginTable;
use crate::render::Prepared;
pub use crate::severity::Severity;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::ops::Range;
use std::sync::OnceLock;

/// The registry: every rule, in code order, as `CODE Type module "name";`, where
/// `module::Type` implements [`Rule`] and `rules/CODE-name.yaml` holds its docs. It hands
/// the list to the macro it is given: [`declare_rules!`] here, one snapshot test per rule
/// at the end of this file.
macro_rules! with_rules {
    ($then:ident) => {
        $then! {
            PL001 VolatileBeforeStable volatile_before_stable "volatile-before-stable";
            PL002 DivergenceBeforeStable divergence_before_stable "divergence-before-stable";
            PL003 UnstableSerialization unstable_serialization "unstable-serialization";
            PL004 WhitespaceDrift whitespace_drift "whitespace-drift";
            PL005 MidTokenBoundary mid_token_boundary "mid-token-boundary";
            PL006 BelowCacheMinimum below_cache_minimum "below-cache-minimum";
            PL007 HistoryRewrite history_rewrite "history-rewrite";
            PL008 ChatTemplateVolatile chat_template_volatile "chat-template-volatile";
            PL009 UnusedSuppression unused_suppression "unused-suppression";
            PL010 SuppressionWithoutReason suppression_without_reason "suppression-without-reason";
            PL011 UndefinedInSample undefined_in_sample "undefined-in-sample";
            PL012 CacheBreakpointPlacement cache_breakpoint_placement "cache-breakpoint-placement";
            PL013 OpenaiCacheRouting openai_cache_routing "openai-cache-routing";
        }
    };
}

/// Makes of the rule modules the typed [`RuleCode`], the registry ([`RuleCode::rule`]) and
/// the embedded docs ([`all`]).
macro_rules! declare_rules {
    ($($code:ident $rule:ident $module:ident $name:literal;)+) => {
        /// A rule's code, typed: `RuleCode::HistoryRewrite` is PL007 `history-rewrite`.
        /// Ordered as the codes are.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum RuleCode {
            $($rule,)+
        }

        impl RuleCode {
            /// Every rule, in code order.
            pub const ALL: &'static [RuleCode] = &[$(RuleCode::$rule,)+];

            /// `PL007`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(RuleCode::$rule => stringify!($code),)+
                }
            }

            /// `history-rewrite`.
            pub fn name(self) -> &'static str {
                match self {
                    $(RuleCode::$rule => $name,)+
                }
            }

            /// The rule's module: its check, messages and fix.
            pub fn rule(self) -> &'static dyn Rule {
                match self {
                    $(RuleCode::$rule => &$module::$rule,)+
                }
            }

            /// The rule's YAML file, as embedded: (file name, text).
            fn yaml(self) -> (&'static str, &'static str) {
                match self {
                    $(RuleCode::$rule => (
                        concat!(stringify!($code), "-", $name, ".yaml"),
                        include_str!(concat!("../../rules/", stringify!($code), "-", $name, ".yaml")),
                    ),)+
                }
            }

            /// The module's name (`history_rewrite`), which the tests hold to the rule's.
            #[cfg(test)]
            fn module(self) -> &'static str {
                match self {
                    $(RuleCode::$rule => stringify!($module),)+
                }
            }
        }
    };
}

with_rules!(declare_rules);

impl RuleCode {
    /// The rule's metadata and docs.
    pub fn meta(self) -> &'static RuleMeta {
        &all()[self as usize]
    }

    /// A code (`PL001`), exactly as written.
    fn parse(code: &str) -> Option<RuleCode> {
        RuleCode::ALL.iter().copied().find(|c| c.as_str() == code)
    }
}

impl std::fmt::Display for RuleCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Written as the code (`"PL001"`): the JSON report, SARIF and the results cache.
impl Serialize for RuleCode {
    fn serialize<S: Serializer>(&self, out: S) -> Result<S::Ok, S::Error> {
        out.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for RuleCode {
    fn deserialize<D: Deserializer<'de>>(input: D) -> Result<RuleCode, D::Error> {
        let code = String::deserialize(input)?;
        RuleCode::parse(&code)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown rule {code}")))
    }
}

/// A rule's identity and documentation, from `rules/<CODE>-<name>.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleMeta {
    pub code: RuleCode,
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

/// The rule files' text, as embedded, in code order: what [`all`] parses. The results
/// cache keys on it (a warm run then parses no rule file).
pub fn source() -> impl Iterator<Item = &'static str> {
    RuleCode::ALL.iter().map(|code| code.yaml().1)
}

/// Every rule's metadata, in code order (`prefixlint rules`, docs/rules.md).
pub fn all() -> &'static [RuleMeta] {
    static RULES: OnceLock<Vec<RuleMeta>> = OnceLock::new();
    RULES.get_or_init(|| {
        RuleCode::ALL
            .iter()
            .map(|&code| {
                let (file, text) = code.yaml();
                let meta: RuleMeta = serde_yaml_ng::from_str(text)
                    .unwrap_or_else(|e| panic!("embedded rule file {file} is invalid: {e}"));
                // The file's code and name are the registry's (a test reads every file).
                assert!(
                    meta.code == code && meta.name == code.name(),
                    "{file} says {} {}",
                    meta.code,
                    meta.name
                );
                meta
            })
            .collect()
    })
}

/// A rule by code (`PL001`) or name (`volatile-before-stable`), case-insensitive: what a
/// user writes (config keys, suppression comments, `explain`).
pub fn find(key: &str) -> Option<&'static RuleMeta> {
    all()
        .iter()
        .find(|r| r.code.as_str().eq_ignore_ascii_case(key) || r.name.eq_ignore_ascii_case(key))
}

pub fn meta(code: RuleCode) -> &'static RuleMeta {
    code.meta()
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

/// What a rule reads, which decides the stage that runs it (ruff's `LintSource`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// One template's renders and their analysis: [`Rule::check`], run by
    /// `check::run_rules` over [`analysis_rules`].
    Analysis,
    /// The samples file (PL011, run by `check::sample_findings`).
    Samples,
    /// The chat template around the renders (PL008, run by `check::chat`).
    ChatTemplate,
    /// A `--chat-request` conversation, turn by turn (PL007, run by `check::chat`).
    Conversation,
    /// The template's suppression comments (PL009, PL010, run by `suppress`).
    Suppressions,
}

/// Which fixes a rule offers; its docs' `## Fix safety` says why they are safe or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixAvailability {
    Never,
    /// Its own repairs ([`Rule::fix`]).
    Repair,
    /// Its own repairs, then the unsafe move of the unit that carries what breaks the
    /// prefix to the template's end (`edit::producers::move_to_end`).
    RepairOrMove,
}

pub trait Rule: Sync {
    fn code(&self) -> RuleCode;

    fn reads(&self) -> Reads;

    /// The findings on one template's renders. Only [`Reads::Analysis`] rules have them
    /// here; the others' checks take their own inputs (a `check` function in their
    /// module) and are called by the stage that has those.
    fn check(&self, _ctx: &RuleContext) -> Vec<Finding> {
        Vec::new()
    }

    fn fix_availability(&self) -> FixAvailability {
        FixAvailability::Never
    }

    /// The rule's own candidate fixes of one of its findings, best first, or why there is
    /// none. Candidates are proposals: `fix::engine` keeps the first the verifier accepts.
    fn fix(&self, _ctx: &FixContext) -> Result<Vec<Fix>, String> {
        Ok(Vec::new())
    }
}

/// The rules `check` runs on every template's analysis, in code order.
pub fn analysis_rules() -> &'static [&'static dyn Rule] {
    static RULES: OnceLock<Vec<&'static dyn Rule>> = OnceLock::new();
    RULES.get_or_init(|| {
        RuleCode::ALL
            .iter()
            .map(|code| code.rule())
            .filter(|rule| rule.reads() == Reads::Analysis)
            .collect()
    })
}

/// What a rule's fix sees: the template's source, the finding, the source's tags and
/// blocks, and what each render wrote where the check kept its renders.
pub struct FixContext<'a> {
    pub source: &'a str,
    pub finding: &'a Finding,
    pub tags: &'a [Tag],
    pub blocks: &'a [Block],
    written_at: &'a dyn Fn(usize) -> Option<Vec<String>>,
}

impl<'a> FixContext<'a> {
    /// `written_at(offset)`: per render, the output of the innermost expression around
    /// `offset` (`None` without the renders).
    pub fn new(
        source: &'a str,
        finding: &'a Finding,
        tags: &'a [Tag],
        blocks: &'a [Block],
        written_at: &'a dyn Fn(usize) -> Option<Vec<String>>,
    ) -> Self {
        FixContext {
            source,
            finding,
            tags,
            blocks,
            written_at,
        }
    }

    /// The finding's span.
    pub fn span(&self) -> Range<usize> {
        self.finding.span.clone()
    }

    /// The expression tag (`{{ … }}`) the finding points into.
    pub fn expression(&self) -> Option<&'a Tag> {
        jinja::expression_at(self.tags, &self.finding.span)
    }

    /// What each render wrote at the expression around `offset`.
    pub fn written_at(&self, offset: usize) -> Option<Vec<String>> {
        (self.written_at)(offset)
    }

    /// A fix of this finding's rule.
    pub fn fix(
        &self,
        safety: crate::edit::Safety,
        kind: crate::edit::FixKind,
        title: String,
        edits: Vec<crate::edit::Edit>,
    ) -> Fix {
        Fix {
            rule: self.finding.rule.code.as_str().to_owned(),
            safety,
            kind,
            title,
            edits,
        }
    }
}

/// A finding's rule, stored by code (the results cache) and found again on reading.
mod rule_by_code {
    use super::{RuleCode, RuleMeta};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(rule: &&'static RuleMeta, out: S) -> Result<S::Ok, S::Error> {
        rule.code.serialize(out)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(input: D) -> Result<&'static RuleMeta, D::Error> {
        RuleCode::deserialize(input).map(RuleCode::meta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::fix::engine::FixOptions;
    use crate::report::TemplateOutcome;
    use crate::{LintOptions, Linter};
    use std::path::{Path, PathBuf};

    fn repo() -> &'static Path {
        Path::new(env!("CARGO_MANIFEST_DIR"))
    }

    #[test]
    fn every_yaml_file_is_a_registered_rule_and_every_rule_has_one() {
        let mut files: Vec<String> = std::fs::read_dir(repo().join("rules"))
            .expect("rules/ is readable")
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter(|name| name.ends_with(".yaml"))
            .collect();
        files.sort();
        let registered: Vec<&str> = RuleCode::ALL.iter().map(|c| c.yaml().0).collect();
        assert_eq!(files, registered);
        // Each file says the code and name the registry gives it (`all` asserts it).
        assert_eq!(all().len(), RuleCode::ALL.len());
    }

    #[test]
    fn each_rule_is_its_own_module_named_after_it() {
        let mut codes: Vec<&str> = Vec::new();
        for &code in RuleCode::ALL {
            assert_eq!(
                code.rule().code(),
                code,
                "{code}'s module names another code"
            );
            assert_eq!(code.module(), code.name().replace('-', "_"));
            assert!(repo()
                .join(format!("src/rules/{}.rs", code.module()))
                .is_file());
            codes.push(code.as_str());
        }
        let mut sorted = codes.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(
            codes, sorted,
            "the registry lists the codes in order, once each"
        );
    }

    #[test]
    fn every_module_that_implements_a_rule_is_registered() {
        let registered: Vec<&str> = RuleCode::ALL.iter().map(|c| c.module()).collect();
        for entry in std::fs::read_dir(repo().join("src/rules")).expect("src/rules/") {
            let path = entry.expect("an entry").path();
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let module = path.file_stem().unwrap_or_default().to_string_lossy();
            if module != "mod" && text.contains("impl Rule for ") {
                assert!(
                    registered.contains(&module.as_ref()),
                    "src/rules/{module}.rs implements a rule the registry does not list"
                );
            }
        }
    }

    #[test]
    fn every_fixable_rule_documents_its_fix_safety() {
        for &code in RuleCode::ALL {
            let fixable = code.rule().fix_availability() != FixAvailability::Never;
            let documented = code.meta().docs.contains("## Fix safety");
            assert_eq!(fixable, documented, "{code}: fixable, `## Fix safety`");
        }
    }

    #[test]
    fn codes_and_names_are_found_and_written_as_codes() {
        assert_eq!(
            find("pl007").map(|r| r.code),
            Some(RuleCode::HistoryRewrite)
        );
        assert_eq!(
            find("History-Rewrite").map(|r| r.code),
            Some(RuleCode::HistoryRewrite)
        );
        assert!(find("PL999").is_none());
        let json = serde_json::to_string(&RuleCode::HistoryRewrite).unwrap();
        assert_eq!(json, "\"PL007\"");
        let back: RuleCode = serde_json::from_str(&json).unwrap();
        assert_eq!(back, RuleCode::HistoryRewrite);
    }

    // -----------------------------------------------------------------------------------
    // Each rule's findings on its fixtures, `fixtures/<rule-name>/`, snapshotted: message,
    // place, label, help, related places, and the fixes `check --fix --unsafe-fixes` would
    // apply for it. Templates in a `fail/` folder or named `fail*` must trigger the rule,
    // those in `pass/` or named `pass*` must not (`fix/` holds the fix tests' cases, with
    // their fixed text: `tests/it/fix.rs`).
    // Chat requests (`*.yaml` in those folders, other than samples) are checked as
    // `--chat-request`. The nearest `prefixlint.yaml` (the case's folder, then the rule's) is
    // the config; otherwise the run reads none.

    const TEMPLATE_EXTENSIONS: [&str; 4] = ["j2", "jinja", "jinja2", "prompt"];

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Expect {
        Fires,
        Quiet,
    }

    fn is_template(path: &Path) -> bool {
        path.is_file()
            && path
                .extension()
                .is_some_and(|e| TEMPLATE_EXTENSIONS.contains(&e.to_string_lossy().as_ref()))
    }

    fn is_chat_request(path: &Path) -> bool {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        path.is_file()
            && name.ends_with(".yaml")
            && !name.ends_with(".samples.yaml")
            && name != "prefixlint.yaml"
    }

    fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|entries| entries.filter_map(|e| e.ok()).map(|e| e.path()).collect())
            .unwrap_or_default();
        found.sort();
        found
    }

    /// The rule's fixtures, as paths relative to the repository (the tests' working folder).
    fn fixtures(rule_dir: &Path) -> Vec<(PathBuf, Expect)> {
        let mut cases = Vec::new();
        for (folder, expect) in [("fail", Expect::Fires), ("pass", Expect::Quiet)] {
            cases.extend(
                sorted_entries(&rule_dir.join(folder))
                    .into_iter()
                    .filter(|p| is_template(p) || is_chat_request(p))
                    .map(|p| (p, expect)),
            );
        }
        for path in sorted_entries(rule_dir)
            .into_iter()
            .filter(|p| is_template(p))
        {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with("fail") {
                cases.push((path, Expect::Fires));
            } else if name.starts_with("pass") {
                cases.push((path, Expect::Quiet));
            }
        }
        cases
    }

    /// What `check CASE` reports of `code` and what `check --fix --unsafe-fixes --select
    /// CODE --diff` would do, as text.
    fn snapshot(code: RuleCode, case: &Path, rule_dir: &Path) -> (usize, String) {
        let config_file = [case.parent().unwrap(), rule_dir]
            .iter()
            .map(|dir| dir.join("prefixlint.yaml"))
            .find(|c| c.is_file());
        let config = Config::resolve_for(
            config_file.as_deref(),
            config_file.is_none(),
            &[case.to_path_buf()],
            repo(),
        )
        .expect("the fixture's config loads");
        let request = is_chat_request(case);
        let paths = if request {
            Vec::new()
        } else {
            vec![case.to_path_buf()]
        };
        let settings = crate::settings::Settings::resolve(&Default::default(), &config)
            .expect("the fixture's settings resolve");
        let options = LintOptions {
            settings,
            cwd: repo().to_path_buf(),
            chat_requests: if request {
                vec![case.to_path_buf()]
            } else {
                Vec::new()
            },
            ..LintOptions::default()
        };
        let linter = Linter::new(config, options).expect("the fixture's config is valid");
        let mut out = String::new();
        let mut fired = 0;
        for outcome in linter.check(&paths).expect("the fixture is checked") {
            let report = match outcome {
                TemplateOutcome::Checked(report) => report,
                TemplateOutcome::Failed(failed) => {
                    panic!("{}: {}", case.display(), failed.message)
                }
                TemplateOutcome::Skipped(_) => panic!("{}: skipped", case.display()),
                TemplateOutcome::Unchecked(_) => panic!("{}: unchecked", case.display()),
            };
            for finding in report.findings.iter().filter(|f| f.rule.code == code) {
                fired += 1;
                let at = report.position(finding);
                out.push_str(&format!(
                    "{}:{}:{}-{}:{}: {} {}: {}\n",
                    report.path,
                    at.line,
                    at.column,
                    at.end_line,
                    at.end_column,
                    code,
                    finding.severity.as_str(),
                    finding.message
                ));
                let quoted = report.source.get(finding.span.clone()).unwrap_or("");
                out.push_str(&format!("  at: {quoted:?}\n"));
                out.push_str(&format!("  label: {}\n", finding.label));
                out.push_str(&format!("  help: {}\n", finding.help));
                for related in &finding.related {
                    out.push_str(&format!(
                        "  related: {}:{}\n",
                        related.template, related.text
                    ));
                }
            }
        }
        if fired == 0 {
            out.push_str(&format!("no {code} finding\n"));
        }
        let fix_options = FixOptions {
            unsafe_fixes: true,
            select: Some(vec![code.as_str().to_owned()]),
        };
        let fixes = crate::fix::run::run(&linter, &paths, repo(), &fix_options, false)
            .expect("the fix run runs");
        if !fixes.templates.is_empty() {
            out.push_str("\n--fix --unsafe-fixes --diff:\n");
            out.push_str(&crate::fix::summary(&fixes.templates, false));
            out.push_str(&fixes.diff);
        }
        (fired, out)
    }

    /// Every fixture of the rule, snapshotted; `fail` ones must fire, `pass` ones not.
    fn fixture_snapshots(code: RuleCode) {
        let dir = Path::new("fixtures").join(code.name());
        let cases = fixtures(&repo().join(&dir));
        assert!(
            cases.iter().any(|(_, e)| *e == Expect::Fires)
                && cases.iter().any(|(_, e)| *e == Expect::Quiet),
            "{code}: fixtures/{}/ needs a fail and a pass fixture",
            code.name()
        );
        for (case, expect) in cases {
            let relative = case.strip_prefix(repo()).unwrap_or(&case).to_path_buf();
            let (fired, text) = snapshot(code, &relative, &dir);
            match expect {
                Expect::Fires => assert!(fired > 0, "{code} is quiet on {}", relative.display()),
                Expect::Quiet => {
                    assert_eq!(fired, 0, "{code} fires on {}:\n{text}", relative.display())
                }
            }
            let name = relative
                .strip_prefix(&dir)
                .unwrap_or(&relative)
                .to_string_lossy()
                .replace('/', "__");
            insta::with_settings!({
                snapshot_path => "snapshots",
                prepend_module_to_snapshot => false,
                description => relative.display().to_string(),
                omit_expression => true,
            }, {
                insta::assert_snapshot!(format!("{}__{name}", code.name()), text);
            });
        }
    }

    /// One test per rule of the registry: a rule cannot lack one.
    macro_rules! fixture_tests {
        ($($code:ident $rule:ident $module:ident $name:literal;)+) => {
            $(
                #[test]
                fn $module() {
                    fixture_snapshots(RuleCode::$rule);
                }
            )+
        };
    }

    with_rules!(fixture_tests);
}
