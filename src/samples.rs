//! Stage 2: the contexts each template is rendered with. They come from
//! `NAME.samples.yaml` beside `NAME.ext`, or are synthesized from the variables the
//! template reads, varied the way production varies them (clock, ids, names).

use crate::config::yaml_error;
use crate::discover::Matcher;
use crate::error::{Error, Result};
use crate::render::clock::Clock;
use crate::rules::{SynthKind, VolatileFields};
use crate::source;
use serde_json::{Map, Value as Json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

pub const SAMPLES_SUFFIX: &str = ".samples.yaml";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    File(PathBuf),
    Synthesized,
}

#[derive(Debug, Clone)]
pub struct Samples {
    pub contexts: Vec<Map<String, Json>>,
    pub origin: Origin,
}

impl Samples {
    pub fn len(&self) -> usize {
        self.contexts.len()
    }
    pub fn is_empty(&self) -> bool {
        self.contexts.is_empty()
    }
    /// The clock of render `n`: it always moves, so `now()` is caught even with samples.
    pub fn clock(&self, n: usize) -> Clock {
        Clock::synthetic(n)
    }
}

/// `dir/name.ext` → `dir/name.samples.yaml`.
pub fn samples_path(template: &Path) -> PathBuf {
    let stem = template.file_stem().unwrap_or_default().to_string_lossy();
    template.with_file_name(format!("{stem}{SAMPLES_SUFFIX}"))
}

pub fn is_samples_file(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().ends_with(SAMPLES_SUFFIX))
}

/// The template a samples file belongs to: a sibling `name.*` that is a template.
pub fn template_for_samples(path: &Path, matcher: &Matcher) -> Option<PathBuf> {
    let name = path.file_name()?.to_string_lossy();
    let stem = name.strip_suffix(SAMPLES_SUFFIX)?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut candidates: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_stem().is_some_and(|s| s.to_string_lossy() == stem) && matcher.is_template(p)
        })
        .collect();
    candidates.sort();
    let found = candidates.into_iter().next()?;
    Some(match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.join(found.file_name()?),
        _ => PathBuf::from(found.file_name()?),
    })
}

/// Reads a samples file: a YAML list of mappings, one per render.
pub fn load(path: &Path) -> Result<Samples> {
    let display = source::display_path(path);
    let text = source::read_text(path, &display)?;
    let mut samples = parse(&text, &display)?;
    samples.origin = Origin::File(path.to_path_buf());
    Ok(samples)
}

/// Parses samples text (no I/O, so fuzzing can reach it); `display` names it in errors.
pub fn parse(text: &str, display: &str) -> Result<Samples> {
    let contexts: Vec<Map<String, Json>> = match serde_yaml_ng::from_str::<
        Option<Vec<Map<String, Json>>>,
    >(text)
    {
        Ok(Some(contexts)) => contexts,
        // An empty file (or only comments) gives no samples: the caller synthesizes them.
        Ok(None) => {
            return Ok(Samples {
                contexts: Vec::new(),
                origin: Origin::File(PathBuf::from(display)),
            })
        }
        Err(e) => {
            return Err(yaml_error(
                &e,
                text,
                display,
                "samples must be a YAML list of mappings, one per render",
            )
            .with_help("write e.g.\n- user: Ada\n  question: What is a KV cache?\n- user: Linus\n  question: Why is my TTFT high?"));
        }
    };
    if contexts.is_empty() {
        return Err(Error::input_with_help(
            format!("{display}: the samples list is empty"),
            "give at least one mapping of variables; two or more show what varies",
        ));
    }
    Ok(Samples {
        contexts,
        origin: Origin::File(PathBuf::from(display)),
    })
}

/// Builds `count` contexts for the variables a template reads (`user.name` nests).
/// Clock-like names get different times, id-like names different ids, names and emails
/// different people, and any other string a different value, as production would.
pub fn synthesize(variables: &BTreeSet<String>, fields: &VolatileFields, count: usize) -> Samples {
    let contexts = (0..count)
        .map(|n| {
            let mut context = Map::new();
            for path in variables {
                let parts: Vec<&str> = path.split('.').collect();
                let value = synth_value(path, parts.last().copied().unwrap_or(path), fields, n);
                insert_path(&mut context, &parts, value);
            }
            context
        })
        .collect();
    Samples {
        contexts,
        origin: Origin::Synthesized,
    }
}

fn synth_value(path: &str, leaf: &str, fields: &VolatileFields, n: usize) -> Json {
    let clock = Clock::synthetic(n);
    let kind = fields
        .classify_name(path)
        .map(|m| m.synth)
        .unwrap_or(SynthKind::Text);
    let people = [
        "Ada Lovelace",
        "Grace Hopper",
        "Alan Turing",
        "Edsger Dijkstra",
        "Barbara Liskov",
    ];
    match kind {
        SynthKind::Timestamp => Json::from(clock.iso8601()),
        SynthKind::Date => Json::from(clock.at.format("%Y-%m-%d").to_string()),
        SynthKind::Time => Json::from(clock.at.format("%H:%M:%S").to_string()),
        SynthKind::EpochSeconds => Json::from(clock.at.timestamp()),
        SynthKind::EpochMillis => Json::from(clock.at.timestamp_millis()),
        SynthKind::Id => Json::from(synthetic_uuid(path, n)),
        SynthKind::Name => Json::from(people[n % people.len()]),
        SynthKind::Email => {
            let first = people[n % people.len()]
                .split(' ')
                .next()
                .unwrap_or("user")
                .to_lowercase();
            Json::from(format!("{first}.{n}@example.com"))
        }
        SynthKind::Text => Json::from(format!("{leaf} {}", n + 1)),
    }
}

/// A deterministic UUID-shaped id, different per variable and render.
fn synthetic_uuid(path: &str, n: usize) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{path}/{n}").as_bytes());
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-4{}-a{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

fn insert_path(map: &mut Map<String, Json>, parts: &[&str], value: Json) {
    let Some((first, rest)) = parts.split_first() else {
        return;
    };
    if rest.is_empty() {
        // A nested use (`user.name`) wins over a flat one (`user`).
        map.entry(first.to_string()).or_insert(value);
        return;
    }
    let entry = map
        .entry(first.to_string())
        .or_insert_with(|| Json::Object(Map::new()));
    if !entry.is_object() {
        *entry = Json::Object(Map::new());
    }
    if let Json::Object(inner) = entry {
        insert_path(inner, rest, value);
    }
}
