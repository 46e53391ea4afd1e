//! Stage 2: the contexts each template is rendered with. They come from
//! `NAME.samples.yaml` beside `NAME.ext`, or are synthesized in the shape the template uses
//! each variable ([`shape`]), varied the way production varies them (clock, ids, names).

pub mod emit;
pub mod shape;
pub mod synth;
mod yaml;

use crate::config::yaml_error;
pub use crate::discover::samples_files::{samples_path, SAMPLES_SUFFIX};
use crate::error::{Error, Result};
use crate::render::clock::Clock;
use crate::render::{Prepared, Renderer};
use crate::rules::VolatileFields;
use crate::source;
use minijinja::Value;
use serde_json::{Map, Value as Json};
use shape::Shapes;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    File(PathBuf),
    Synthesized,
}

#[derive(Debug, Clone)]
pub struct Samples {
    /// One mapping per render. Values may be datetimes and stand-in objects, which JSON
    /// cannot hold.
    pub contexts: Vec<Value>,
    pub origin: Origin,
    /// Places (`state`, `subtasks[].output`) rendered with stand-ins for application objects.
    pub stand_ins: Vec<String>,
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

/// Reads a samples file: a YAML list of mappings, one per render.
pub fn load(path: &Path) -> Result<Samples> {
    let display = source::display_path(path);
    let text = source::read_text(path, &display)?;
    let mut samples = parse(&text, &display)?;
    samples.origin = Origin::File(path.to_path_buf());
    Ok(samples)
}

/// Parses samples text (no I/O, so fuzzing can reach it); `display` names it in errors.
/// Unquoted timestamps load as datetimes, as PyYAML loads them.
pub fn parse(text: &str, display: &str) -> Result<Samples> {
    let help = "write e.g.\n- user: Ada\n  question: What is a KV cache?\n- user: Linus\n  question: Why is my TTFT high?";
    // The typed pass checks the structure and gives its errors their place.
    match serde_yaml_ng::from_str::<Option<Vec<Map<String, Json>>>>(text) {
        Ok(Some(contexts)) if contexts.is_empty() => {
            return Err(Error::input_with_help(
                format!("{display}: the samples list is empty"),
                "give at least one mapping of variables; two or more show what varies",
            ));
        }
        Ok(Some(_)) => {}
        // An empty file (or only comments) gives no samples: the caller synthesizes them.
        Ok(None) => {
            return Ok(Samples {
                contexts: Vec::new(),
                origin: Origin::File(PathBuf::from(display)),
                stand_ins: Vec::new(),
            })
        }
        Err(e) => {
            return Err(yaml_error(
                &e,
                text,
                display,
                "samples must be a YAML list of mappings, one per render",
            )
            .with_help(help));
        }
    };
    let document =
        yaml::parse(text).map_err(|e| yaml_error(&e, text, display, "invalid sample value"))?;
    let contexts = document
        .try_iter()
        .map(|items| items.collect())
        .unwrap_or_default();
    Ok(Samples {
        contexts,
        origin: Origin::File(PathBuf::from(display)),
        stand_ins: Vec::new(),
    })
}

/// The shapes of the variables a template (and what it includes) reads.
pub fn infer(renderer: &Renderer, template: &Prepared) -> Shapes {
    let sources = renderer.reachable_sources(template);
    let syntax = renderer.syntax().clone();
    let mut parsed = shape::Parsed::new();
    for (name, source) in &sources {
        // A template that does not parse fails its own render with a located error.
        if let Ok(stmt) = minijinja::machinery::parse(source, name, syntax.clone()) {
            parsed.insert(name.as_str(), stmt);
        }
    }
    let globals = renderer.global_names();
    let includes = template.includes();
    shape::infer(&parsed, &template.name, &globals, &|parent, name| {
        includes.resolve(parent, name).found()
    })
}

/// Builds `count` contexts of the inferred shapes. Clock-like names get different times,
/// id-like names different ids, names and emails different people; every other value is
/// the same in every render. Application objects get stand-ins.
pub fn synthesize(shapes: &Shapes, fields: &VolatileFields, count: usize) -> Samples {
    let variables = shapes.variables();
    let mut stand_ins = BTreeSet::new();
    let contexts = (0..count)
        .map(|n| {
            let mut synthesizer = synth::Synthesizer::new(fields, n);
            let context: Vec<(Value, Value)> = variables
                .iter()
                .map(|(name, shape)| {
                    (
                        Value::from(name.as_str()),
                        synthesizer.variable(name, shape),
                    )
                })
                .collect();
            stand_ins.append(&mut synthesizer.stand_ins);
            Value::from_pairs(context)
        })
        .collect();
    Samples {
        contexts,
        origin: Origin::Synthesized,
        stand_ins: stand_ins.into_iter().collect(),
    }
}

/// Gives each loaded sample stand-ins for the application objects it does not define: a
/// YAML file cannot express an object with methods.
pub fn add_stand_ins(samples: &mut Samples, shapes: &Shapes, fields: &VolatileFields) {
    let objects: Vec<(String, shape::Shape)> = shapes
        .variables()
        .into_iter()
        .filter(|(_, shape)| shape.holds_object())
        .collect();
    if objects.is_empty() {
        return;
    }
    let mut stand_ins = BTreeSet::new();
    for (n, context) in samples.contexts.iter_mut().enumerate() {
        let missing: Vec<&(String, shape::Shape)> = objects
            .iter()
            .filter(|(name, _)| context.get_attr(name).map_or(true, |v| v.is_undefined()))
            .collect();
        if missing.is_empty() {
            continue;
        }
        let mut synthesizer = synth::Synthesizer::new(fields, n);
        let mut entries: Vec<(Value, Value)> = context
            .try_iter()
            .map(|keys| {
                keys.map(|key| {
                    let value = context.get_item(&key).unwrap_or_default();
                    (key, value)
                })
                .collect()
            })
            .unwrap_or_default();
        for (name, shape) in missing {
            entries.push((
                Value::from(name.as_str()),
                synthesizer.variable(name, shape),
            ));
        }
        stand_ins.append(&mut synthesizer.stand_ins);
        *context = Value::from_pairs(entries);
    }
    samples.stand_ins = stand_ins.into_iter().collect();
}
