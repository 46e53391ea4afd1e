//! Volatile-field patterns: variable names and value shapes that change per request.
//! Built in from `rules/fields/*.yaml`; users add more with `volatile_fields:` in config.

use crate::error::{Error, Result};
use regex::Regex;
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

const FIELD_FILES: &[(&str, &str)] = &[
    ("clock.yaml", include_str!("../../rules/fields/clock.yaml")),
    ("date.yaml", include_str!("../../rules/fields/date.yaml")),
    // Before ids: `build_id` is a release, not a request.
    (
        "release.yaml",
        include_str!("../../rules/fields/release.yaml"),
    ),
    ("ids.yaml", include_str!("../../rules/fields/ids.yaml")),
    (
        "identity.yaml",
        include_str!("../../rules/fields/identity.yaml"),
    ),
    ("email.yaml", include_str!("../../rules/fields/email.yaml")),
    // Before inputs: `system_message` and `tool_docs` are settings, not the request's input.
    (
        "setting.yaml",
        include_str!("../../rules/fields/setting.yaml"),
    ),
    ("input.yaml", include_str!("../../rules/fields/input.yaml")),
];

/// How synthesized samples fill a variable of this kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SynthKind {
    Timestamp,
    Date,
    Time,
    EpochSeconds,
    EpochMillis,
    Id,
    Name,
    Email,
    /// A release identifier: a new one per deploy.
    Version,
    /// The request's own content: a question, an article, a problem statement, a history.
    /// A different text, of a different length, in every render.
    Passage,
    /// The same text in every render.
    Text,
}

/// What a kind of value is to the cache, which decides the rule that reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FieldClass {
    /// A value that changes while the request's content does not (a clock, an id, a
    /// person, a release): PL001, with a severity that follows its cadence.
    #[default]
    Volatile,
    /// The request's own input (a question, an article, the history): it must differ
    /// between requests, so synthesized renders vary it, and text rendered after it is
    /// lost to the cache (PL002, stated per request).
    Input,
    /// A setting of the deployment (agent and tool names, tool docs, schemas, the model):
    /// the same for every request, so synthesized renders keep it constant.
    Setting,
}

/// How often a value of a kind changes, which is what a cache miss it causes costs.
/// Config spells it `request`, `user`, `day` or `deploy`; reports [`Cadence::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Cadence {
    /// A new value for every request (a timestamp, a request id): the prefix never repeats.
    #[default]
    Request,
    /// One value per user (a name, an email): each user's prefix is cached apart.
    User,
    /// One value per day (a date): one cache miss per prefix per day.
    Day,
    /// One value per deploy or version: one cache miss per prefix per deploy.
    Deploy,
}

impl serde::Serialize for Cadence {
    fn serialize<S: serde::Serializer>(&self, out: S) -> Result<S::Ok, S::Error> {
        out.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Cadence {
    fn deserialize<D: serde::Deserializer<'de>>(input: D) -> Result<Self, D::Error> {
        let name = String::deserialize(input)?;
        match name.as_str() {
            "request" => Some(Cadence::Request),
            "user" => Some(Cadence::User),
            "day" => Some(Cadence::Day),
            "deploy" => Some(Cadence::Deploy),
            other => Cadence::from_name(other),
        }
        .ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown cadence `{name}`: expected request, user, day or deploy"
            ))
        })
    }
}

impl schemars::JsonSchema for Cadence {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Cadence".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "How often the value changes: request, user, day or deploy.",
        })
    }
}

impl Cadence {
    /// The JSON report's name for it (`"cadence"` on a diagnostic).
    pub fn name(self) -> &'static str {
        match self {
            Cadence::Request => "per-request",
            Cadence::User => "per-user",
            Cadence::Day => "daily",
            Cadence::Deploy => "per-deploy",
        }
    }

    /// A JSON name back (the results cache stores findings).
    pub fn from_name(name: &str) -> Option<Cadence> {
        [
            Cadence::Request,
            Cadence::User,
            Cadence::Day,
            Cadence::Deploy,
        ]
        .into_iter()
        .find(|c| c.name() == name)
    }

    /// The label of a finding, e.g. "changes on every request".
    pub fn describe(self) -> &'static str {
        match self {
            Cadence::Request => "changes on every request",
            Cadence::User => "differs for every user",
            Cadence::Day => "changes once a day",
            Cadence::Deploy => "changes once per deploy",
        }
    }

    /// What a cache miss at this cadence costs.
    pub fn cost(self) -> &'static str {
        match self {
            Cadence::Request => "no request shares the prefix after it",
            Cadence::User => "requests of different users share no prefix after it",
            Cadence::Day => "one cache miss per prefix per day",
            Cadence::Deploy => "one cache miss per prefix per deploy",
        }
    }
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FieldKindDef {
    pub kind: String,
    pub description: String,
    #[serde(default = "default_synth")]
    pub synth: SynthKind,
    /// How often the value changes (default: on every request).
    #[serde(default)]
    pub cadence: Cadence,
    /// Volatile (the default), the request's input, or a deployment setting.
    #[serde(default)]
    pub class: FieldClass,
    /// Regexes matched (case-insensitively) against variable paths like `user.email`.
    #[serde(default)]
    pub names: Vec<String>,
    #[serde(default)]
    pub shapes: Vec<ShapeDef>,
}

fn default_synth() -> SynthKind {
    SynthKind::Text
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShapeDef {
    pub id: String,
    pub description: String,
    pub regex: String,
}

#[derive(Debug)]
pub struct FieldKind {
    pub kind: String,
    pub description: String,
    pub synth: SynthKind,
    pub cadence: Cadence,
    pub class: FieldClass,
    names: Vec<Regex>,
    shapes: Vec<(ShapeDef, Regex)>,
}

/// Why a name or value was judged volatile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldMatch {
    pub kind: String,
    pub description: String,
    pub synth: SynthKind,
    pub cadence: Cadence,
    pub class: FieldClass,
    /// The value-shape id, for a value match.
    pub shape: Option<String>,
}

/// A place that synthesized samples varied between renders because its name says nothing
/// of how often it changes: its cadence was assumed (per request, as most of a template's
/// inputs are). Findings on what it prints say so.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct AssumedPlace {
    /// Its dotted path (`comments.body`), as `per_deploy_fields:` would name it.
    pub path: String,
    /// A value it had in one render.
    pub text: String,
}

/// The user's kinds, compiled when the config is read (a bad regex is a config error), and
/// the built-in ones, compiled once per process on first use: a run the results cache serves
/// whole never classifies anything, and compiling them was most of such a run's start.
#[derive(Debug)]
pub struct VolatileFields {
    user: Vec<FieldKind>,
    /// [`Self::classify_name`]'s answers by path: a run asks about the same few names in
    /// every render of every template, and each answer costs up to two regex searches per
    /// pattern (about a tenth of a `check` run's CPU on synthesized samples, issue 31).
    names: NameMemo,
}

/// Paths remembered at most: a run with more distinct variable names classifies the rest
/// afresh (the answers are the same, so this bounds memory only).
const NAME_MEMO_ENTRIES: usize = 1 << 16;

#[derive(Debug, Default)]
struct NameMemo(RwLock<HashMap<Box<str>, Option<FieldMatch>>>);

impl NameMemo {
    fn get_or(
        &self,
        path: &str,
        classify: impl FnOnce() -> Option<FieldMatch>,
    ) -> Option<FieldMatch> {
        let read = self.0.read().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = read.get(path) {
            return found.clone();
        }
        drop(read);
        let found = classify();
        let mut write = self.0.write().unwrap_or_else(|e| e.into_inner());
        if write.len() < NAME_MEMO_ENTRIES {
            write.insert(path.into(), found.clone());
        }
        found
    }
}

impl VolatileFields {
    pub fn builtin_defs() -> &'static [FieldKindDef] {
        static DEFS: OnceLock<Vec<FieldKindDef>> = OnceLock::new();
        DEFS.get_or_init(|| {
            FIELD_FILES
                .iter()
                .map(|(file, text)| {
                    serde_yaml_ng::from_str(text)
                        .unwrap_or_else(|e| panic!("embedded field file {file} is invalid: {e}"))
                })
                .collect()
        })
    }

    /// The embedded field files' text: what the results cache keys the built-in kinds on.
    pub fn builtin_source() -> impl Iterator<Item = &'static str> {
        FIELD_FILES.iter().map(|(_, text)| *text)
    }

    /// Built-in kinds plus the user's (which are checked first, so they can override).
    pub fn new(extra: &[FieldKindDef]) -> Result<Self> {
        let user = extra.iter().map(compile).collect::<Result<Vec<_>>>()?;
        Ok(VolatileFields {
            user,
            names: NameMemo::default(),
        })
    }

    /// Every kind, the user's first.
    pub fn kinds(&self) -> impl Iterator<Item = &FieldKind> {
        self.user.iter().chain(Self::builtin_kinds())
    }

    /// The built-in kinds, their regexes compiled on first use (about 10 ms of one core).
    fn builtin_kinds() -> &'static [FieldKind] {
        static BUILTIN: OnceLock<Vec<FieldKind>> = OnceLock::new();
        BUILTIN.get_or_init(|| {
            Self::builtin_defs()
                .iter()
                .map(|def| compile(def).expect("the embedded field files' regexes are valid"))
                .collect()
        })
    }

    /// Compiles the built-in kinds on a thread of their own, so that a run which is about
    /// to synthesize samples finds them ready: compiled where the first sample needs them,
    /// every worker that reaches a name meanwhile waits for the one compiling.
    pub fn compile_builtin_in_background() {
        // Without the thread, the first use compiles them as before.
        let _ = std::thread::Builder::new()
            .name("prefixlint-fields".into())
            .spawn(|| {
                let _span = tracing::info_span!(target: crate::profile::TIMELINE, "compile fields")
                    .entered();
                Self::builtin_kinds();
            });
    }

    /// Matches a dotted variable path; the last part is tried alone too (`ctx.request_id`).
    /// What is read off a clock or an id is volatile too: `e.created_at.strftime` is
    /// matched by its prefix `e.created_at`. Not so for people: `customer.company` is data
    /// about a customer, not their identity, so per-user kinds match the whole path only.
    /// Volatile kinds win; otherwise the outermost part that names an input or a setting
    /// decides: `messages.content` is part of the input, `examples.question` of a setting.
    pub fn classify_name(&self, path: &str) -> Option<FieldMatch> {
        self.names.get_or(path, || self.classify_name_afresh(path))
    }

    fn classify_name_afresh(&self, path: &str) -> Option<FieldMatch> {
        self.classify_volatile(path)
            .or_else(|| self.classify_input_or_setting(path))
    }

    fn classify_volatile(&self, path: &str) -> Option<FieldMatch> {
        if let Some(found) = self.classify_exact(path, FieldClass::Volatile) {
            return Some(found);
        }
        let mut prefix = path;
        loop {
            prefix = prefix.rsplit_once('.')?.0;
            if let Some(found) = self
                .classify_exact(prefix, FieldClass::Volatile)
                .filter(|found| found.cadence != Cadence::User)
            {
                return Some(found);
            }
        }
    }

    fn classify_input_or_setting(&self, path: &str) -> Option<FieldMatch> {
        path.split('.').find_map(|part| {
            self.classify_exact(part, FieldClass::Setting)
                .or_else(|| self.classify_exact(part, FieldClass::Input))
        })
    }

    fn classify_exact(&self, path: &str, class: FieldClass) -> Option<FieldMatch> {
        let leaf = path.rsplit('.').next().unwrap_or(path);
        self.kinds().filter(|k| k.class == class).find_map(|k| {
            k.names
                .iter()
                .any(|re| re.is_match(path) || re.is_match(leaf))
                .then(|| FieldMatch {
                    kind: k.kind.clone(),
                    description: k.description.clone(),
                    synth: k.synth,
                    cadence: k.cadence,
                    class: k.class,
                    shape: None,
                })
        })
    }

    pub fn classify_value(&self, value: &str) -> Option<FieldMatch> {
        self.kinds().find_map(|k| {
            k.shapes
                .iter()
                .find(|(_, re)| re.is_match(value))
                .map(|(shape, _)| FieldMatch {
                    kind: k.kind.clone(),
                    description: shape.description.clone(),
                    synth: k.synth,
                    cadence: k.cadence,
                    class: k.class,
                    shape: Some(shape.id.clone()),
                })
        })
    }
}

/// The kind config `per_deploy_fields:` declares: its names (each a whole name, or a regex
/// matched whole) are deployment settings, kept constant in synthesized renders.
pub fn per_deploy_kind(names: &[String]) -> Option<FieldKindDef> {
    (!names.is_empty()).then(|| FieldKindDef {
        kind: "per_deploy_fields".into(),
        description: "a per-deploy setting (per_deploy_fields in prefixlint.yaml)".into(),
        synth: SynthKind::Text,
        cadence: Cadence::Deploy,
        class: FieldClass::Setting,
        names: names.iter().map(|name| format!("^(?:{name})$")).collect(),
        shapes: Vec::new(),
    })
}

fn compile(def: &FieldKindDef) -> Result<FieldKind> {
    let regex = |pattern: &str, case_insensitive: bool| {
        regex::RegexBuilder::new(pattern)
            .case_insensitive(case_insensitive)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| {
                Error::input(format!(
                    "volatile field `{}`: invalid regex `{pattern}`: {e}",
                    def.kind
                ))
            })
    };
    Ok(FieldKind {
        kind: def.kind.clone(),
        description: def.description.clone(),
        synth: def.synth,
        cadence: def.cadence,
        class: def.class,
        names: def
            .names
            .iter()
            .map(|p| regex(p, true))
            .collect::<Result<_>>()?,
        shapes: def
            .shapes
            .iter()
            .map(|s| Ok((s.clone(), regex(&s.regex, false)?)))
            .collect::<Result<_>>()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields() -> VolatileFields {
        VolatileFields::new(&[]).unwrap()
    }

    #[test]
    fn names() {
        let f = fields();
        for (name, kind) in [
            ("now", "clock"),
            ("timestamp", "clock"),
            ("created_at", "clock"),
            ("request_id", "id"),
            ("ctx.trace_id", "id"),
            ("uuid", "id"),
            ("user.name", "identity"),
            ("user_name", "identity"),
            ("user.email", "email"),
            ("date_string", "date"),
            ("e.created_at.strftime", "clock"),
            ("now.isoformat", "clock"),
        ] {
            assert_eq!(
                f.classify_name(name).map(|m| m.kind),
                Some(kind.to_string()),
                "{name}"
            );
        }
        for name in ["weather", "title", "body", "answer", "score"] {
            assert_eq!(f.classify_name(name), None, "{name}");
        }
    }

    /// The remembered answers are the answers: asked again, from several threads, and past
    /// the memo's size, `classify_name` says what classifying afresh says.
    #[test]
    fn remembered_names_classify_as_afresh() {
        let f = fields();
        let mut names: Vec<String> = [
            "now",
            "request_id",
            "user.name",
            "user.email",
            "e.created_at.strftime",
            "question",
            "messages.content",
            "examples.question",
            "weather",
            "release",
            "a.b.c",
            "",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        names.extend((0..50).map(|n| format!("field_{n}.trace_id")));
        let afresh: Vec<_> = names.iter().map(|n| f.classify_name_afresh(n)).collect();
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..3 {
                        for (name, want) in names.iter().zip(&afresh) {
                            assert_eq!(&f.classify_name(name), want, "{name}");
                        }
                    }
                });
            }
        });
        assert_eq!(f.names.0.read().unwrap().len(), names.len());
        let full = fields();
        for n in 0..NAME_MEMO_ENTRIES + 10 {
            full.names.get_or(&format!("x{n}"), || None);
        }
        assert_eq!(full.names.0.read().unwrap().len(), NAME_MEMO_ENTRIES);
        assert_eq!(
            full.classify_name("request_id").map(|m| m.kind),
            Some("id".to_string())
        );
    }

    #[test]
    fn inputs_and_settings_are_classes_of_their_own() {
        let f = fields();
        let class = |name: &str| f.classify_name(name).map(|m| m.class);
        for name in [
            "question",
            "problem_statement",
            "user_input",
            "messages.content",
            "documents.text",
            "retrieved_passages",
            "chat_history",
            "observation",
            "last_message",
            "issue",
            "article",
            "task",
        ] {
            assert_eq!(class(name), Some(FieldClass::Input), "{name}");
        }
        for name in [
            "tools",
            "tools.name",
            "tool_docs",
            "command_docs",
            "system_message",
            "examples.question",
            "output_schema",
            "model",
            "language",
            "cluster_name",
            "managed_agents.description",
        ] {
            assert_eq!(class(name), Some(FieldClass::Setting), "{name}");
        }
        // Volatile kinds win over both: an id of a message is still an id.
        for (name, kind) in [
            ("message_id", "id"),
            ("conversation_id", "id"),
            ("today", "date"),
            ("current_date", "date"),
        ] {
            assert_eq!(
                f.classify_name(name).map(|m| m.kind),
                Some(kind.into()),
                "{name}"
            );
        }
        assert_eq!(
            f.classify_name("question").map(|m| (m.cadence, m.synth)),
            Some((Cadence::Request, SynthKind::Passage))
        );
    }

    #[test]
    fn cadence_names_round_trip() {
        for cadence in [
            Cadence::Request,
            Cadence::User,
            Cadence::Day,
            Cadence::Deploy,
        ] {
            let json = serde_json::to_string(&cadence).unwrap();
            assert_eq!(serde_json::from_str::<Cadence>(&json).unwrap(), cadence);
        }
        assert_eq!(
            serde_yaml_ng::from_str::<Cadence>("day").unwrap(),
            Cadence::Day
        );
        assert_eq!(Cadence::Day.name(), "daily");
    }

    #[test]
    fn identity_is_only_for_people() {
        let f = fields();
        for name in [
            "user",
            "user.name",
            "user_name",
            "customer",
            "customer_name",
            "author",
            "author.name",
            "comment.author",
            "author_email",
        ] {
            assert!(
                matches!(
                    f.classify_name(name).map(|m| m.kind).as_deref(),
                    Some("identity" | "email")
                ),
                "{name}"
            );
        }
        for name in [
            "name",
            "project.name",
            "project_name",
            "repository.name",
            "repo_name",
            "branch",
            "branch_name",
            "file.name",
            "filename",
            "tool.name",
            "model_name",
        ] {
            assert_ne!(
                f.classify_name(name).map(|m| m.class),
                Some(FieldClass::Volatile),
                "{name}"
            );
        }
    }

    #[test]
    fn cadence_follows_the_kind() {
        let f = fields();
        for (name, cadence) in [
            ("now", Cadence::Request),
            ("request_id", Cadence::Request),
            ("date_string", Cadence::Day),
            ("user.name", Cadence::User),
            ("user.email", Cadence::User),
            ("app_version", Cadence::Deploy),
            ("git_sha", Cadence::Deploy),
            ("build_id", Cadence::Deploy),
        ] {
            assert_eq!(
                f.classify_name(name).map(|m| m.cadence),
                Some(cadence),
                "{name}"
            );
        }
    }

    #[test]
    fn shapes() {
        let f = fields();
        for (value, shape) in [
            ("2026-03-14T09:26:53Z", "iso-8601-timestamp"),
            ("2026-03-14 09:26", "iso-8601-timestamp"),
            ("2026-03-14", "iso-8601-date"),
            ("14 Mar 2026", "human-date"),
            ("March 14, 2026", "human-date"),
            ("09:26:53", "time-of-day"),
            ("1773480413", "unix-epoch-s"),
            ("1773480413123", "unix-epoch-ms"),
            ("0b1c2d3e-1111-4abc-8def-0123456789ab", "uuid"),
            ("01ARZ3NDEKTSV4RRFFQ69G5FAV", "ulid"),
            ("deadbeefdeadbeefcafe", "long-hex"),
            ("ada@example.com", "email"),
        ] {
            assert_eq!(
                f.classify_value(value).and_then(|m| m.shape),
                Some(shape.to_string()),
                "{value}"
            );
        }
        for value in ["Ada Lovelace", "What is a KV cache?", "42", "v2"] {
            assert_eq!(f.classify_value(value), None, "{value}");
        }
    }
}
