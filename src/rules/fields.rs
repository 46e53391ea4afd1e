//! Volatile-field patterns: variable names and value shapes that change per request.
//! Built in from `rules/fields/*.yaml`; users add more with `volatile_fields:` in config.

use crate::error::{Error, Result};
use regex::Regex;
use serde::Deserialize;
use std::sync::OnceLock;

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
];

/// How synthesized samples fill a variable of this kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
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
    Text,
}

/// How often a value of a kind changes, which is what a cache miss it causes costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
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

impl Cadence {
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

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldKindDef {
    pub kind: String,
    pub description: String,
    #[serde(default = "default_synth")]
    pub synth: SynthKind,
    /// How often the value changes (default: on every request).
    #[serde(default)]
    pub cadence: Cadence,
    /// Regexes matched (case-insensitively) against variable paths like `user.email`.
    #[serde(default)]
    pub names: Vec<String>,
    #[serde(default)]
    pub shapes: Vec<ShapeDef>,
}

fn default_synth() -> SynthKind {
    SynthKind::Text
}

#[derive(Debug, Clone, Deserialize)]
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
    /// The value-shape id, for a value match.
    pub shape: Option<String>,
}

/// The user's kinds, compiled when the config is read (a bad regex is a config error), and
/// the built-in ones, compiled once per process on first use: a run the results cache serves
/// whole never classifies anything, and compiling them was most of such a run's start.
#[derive(Debug)]
pub struct VolatileFields {
    user: Vec<FieldKind>,
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
        Ok(VolatileFields { user })
    }

    /// Every kind, the user's first.
    pub fn kinds(&self) -> impl Iterator<Item = &FieldKind> {
        static BUILTIN: OnceLock<Vec<FieldKind>> = OnceLock::new();
        let builtin = BUILTIN.get_or_init(|| {
            Self::builtin_defs()
                .iter()
                .map(|def| compile(def).expect("the embedded field files' regexes are valid"))
                .collect()
        });
        self.user.iter().chain(builtin)
    }

    /// Matches a dotted variable path; the last part is tried alone too (`ctx.request_id`).
    /// What is read off a clock or an id is volatile too: `e.created_at.strftime` is
    /// matched by its prefix `e.created_at`. Not so for people: `customer.company` is data
    /// about a customer, not their identity, so per-user kinds match the whole path only.
    pub fn classify_name(&self, path: &str) -> Option<FieldMatch> {
        if let Some(found) = self.classify_exact(path) {
            return Some(found);
        }
        let mut prefix = path;
        loop {
            prefix = prefix.rsplit_once('.')?.0;
            if let Some(found) = self
                .classify_exact(prefix)
                .filter(|found| found.cadence != Cadence::User)
            {
                return Some(found);
            }
        }
    }

    fn classify_exact(&self, path: &str) -> Option<FieldMatch> {
        let leaf = path.rsplit('.').next().unwrap_or(path);
        self.kinds().find_map(|k| {
            k.names
                .iter()
                .any(|re| re.is_match(path) || re.is_match(leaf))
                .then(|| FieldMatch {
                    kind: k.kind.clone(),
                    description: k.description.clone(),
                    synth: k.synth,
                    cadence: k.cadence,
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
                    shape: Some(shape.id.clone()),
                })
        })
    }
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
        for name in ["question", "tools", "product", "examples", "weather"] {
            assert_eq!(f.classify_name(name), None, "{name}");
        }
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
            assert_eq!(f.classify_name(name), None, "{name}");
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
