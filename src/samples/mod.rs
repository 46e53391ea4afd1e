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
use crate::render::stand_ins::{CallableKind, StandInTexts, UnknownCallable};
use crate::render::{Prepared, Renderer};
use crate::rules::{AssumedPlace, VolatileFields};
use crate::source;
use minijinja::Value;
use serde_json::{Map, Value as Json};
use shape::Shapes;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    /// Functions the template calls that nothing defined, given stand-ins (`get_tools`).
    pub functions: Vec<String>,
    /// The variables the template (and what it reaches) reads, as
    /// `Renderer::undeclared_variables` finds them, when they were found with the shapes
    /// (samples from a file, which PL011 reads them for).
    pub variables: Option<BTreeSet<String>>,
    /// The texts that stand in for values nobody gave (the strings synthesized samples hold
    /// in every render, those of stand-in objects): their output is not stable content.
    pub stand_in_texts: Option<Arc<StandInTexts>>,
    /// The places synthesized samples varied on an assumed cadence (empty for a samples
    /// file: its values are the user's word).
    pub assumed: Vec<AssumedPlace>,
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

/// Whether a template has a samples file: anything but a folder at its samples path (a
/// FIFO or a device there is then refused by [`load`], not taken for "no samples").
pub fn is_present(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|meta| !meta.is_dir())
}

/// Reads a template's samples file when its real path (links resolved) lies inside `root`,
/// the template's render root: a samples link out of the project is refused, not read
/// (its text could be quoted in an error).
pub fn load_inside(path: &Path, root: &Path) -> Result<Samples> {
    let real = path.canonicalize().map_err(|e| Error::io(path, e))?;
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    if !real.starts_with(&root) {
        return Err(Error::input_with_help(
            format!(
                "{} leads (through a link) outside the project root: not read",
                source::display_path(path)
            ),
            "a samples file is read only inside the project; copy it in, or name the template where its samples are",
        ));
    }
    load(path)
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
    // Generated samples files are often JSON (a subset of YAML): read those as JSON, many
    // times faster, where the two readings are sure to agree.
    if let Some(contexts) = json_fast_path(text) {
        return Ok(Samples {
            contexts,
            origin: Origin::File(PathBuf::from(display)),
            stand_ins: Vec::new(),
            functions: Vec::new(),
            variables: None,
            stand_in_texts: None,
            assumed: Vec::new(),
        });
    }
    // One pass when the file is what samples files are (a list of string-keyed mappings
    // of values JSON can hold); anything else takes the two passes below, for their errors.
    if let Ok(document) = yaml::parse(text) {
        if is_list_of_mappings(&document) {
            return Ok(Samples {
                contexts: document
                    .try_iter()
                    .map(|items| items.collect())
                    .unwrap_or_default(),
                origin: Origin::File(PathBuf::from(display)),
                stand_ins: Vec::new(),
                functions: Vec::new(),
                variables: None,
                stand_in_texts: None,
                assumed: Vec::new(),
            });
        }
    }
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
                functions: Vec::new(),
                variables: None,
                stand_in_texts: None,
                assumed: Vec::new(),
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
        functions: Vec::new(),
        variables: None,
        stand_in_texts: None,
        assumed: Vec::new(),
    })
}

/// The contexts of a samples file written as a JSON list of objects, read as JSON, when the
/// YAML reading gives the same values: no floats (number syntaxes differ), no character
/// YAML forbids or folds (controls, C1, line and paragraph separators, BOM, noncharacters),
/// no surrogate escapes, no key over YAML's 1,024-character simple-key limit. `None`
/// sends the file down the YAML path.
fn json_fast_path(text: &str) -> Option<Vec<Value>> {
    if !text.trim_start_matches([' ', '\n']).starts_with('[') {
        return None;
    }
    let unsafe_char = |c: char| {
        (c < ' ' && c != '\n')
            || ('\u{7f}'..='\u{9f}').contains(&c)
            || matches!(
                c,
                '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
            )
    };
    if text.chars().any(unsafe_char) || has_surrogate_escape(text) {
        return None;
    }
    let Ok(Json::Array(items)) = serde_json::from_str::<Json>(text) else {
        return None;
    };
    if items.is_empty() || !items.iter().all(Json::is_object) {
        return None;
    }
    items.iter().map(json_value).collect()
}

/// `\uD800`-`\uDFFF` in the text (JSON pairs them; YAML does not).
fn has_surrogate_escape(text: &str) -> bool {
    text.match_indices("\\u").any(|(at, _)| {
        let hex = text.as_bytes().get(at + 2..at + 4).unwrap_or_default();
        matches!(hex, [b'd' | b'D', b'8' | b'9' | b'a'..=b'f' | b'A'..=b'F'])
    })
}

/// The template value [`yaml::parse`] gives for the same JSON text.
pub(crate) fn json_value(json: &Json) -> Option<Value> {
    Some(match json {
        Json::Null => Value::from(()),
        Json::Bool(b) => Value::from(*b),
        Json::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Value::from(u),
            (None, Some(i)) => Value::from(i),
            _ => return None,
        },
        Json::String(s) => Value::from(s.as_str()),
        Json::Array(items) => {
            Value::from(items.iter().map(json_value).collect::<Option<Vec<_>>>()?)
        }
        Json::Object(map) => {
            let mut entries = Vec::with_capacity(map.len());
            for (key, value) in map {
                if key.chars().count() > 1000 {
                    return None;
                }
                entries.push((Value::from(key.as_str()), json_value(value)?));
            }
            Value::from_pairs(entries)
        }
    })
}

/// A non-empty list of mappings with string keys, whose integers fit 64 bits: exactly what
/// the typed pass of [`parse`] (`Vec<Map<String, Json>>`) accepts.
fn is_list_of_mappings(document: &Value) -> bool {
    use minijinja::value::ValueKind;
    fn fits_json(value: &Value) -> bool {
        match value.kind() {
            ValueKind::Number => {
                !value.is_integer()
                    || value.as_i64().is_some()
                    || u64::try_from(value.clone()).is_ok()
            }
            ValueKind::Seq => value
                .try_iter()
                .is_ok_and(|mut items| items.all(|v| fits_json(&v))),
            ValueKind::Map => value.try_iter().is_ok_and(|mut keys| {
                keys.all(|key| fits_json(&key) && value.get_item(&key).is_ok_and(|v| fits_json(&v)))
            }),
            _ => true,
        }
    }
    if document.kind() != ValueKind::Seq || document.len() == Some(0) {
        return false;
    }
    document.try_iter().is_ok_and(|mut items| {
        items.all(|item| {
            item.kind() == ValueKind::Map
                && item
                    .try_iter()
                    .is_ok_and(|mut keys| keys.all(|key| key.kind() == ValueKind::String))
                && fits_json(&item)
        })
    })
}

/// The shapes of the variables a template (and what it includes) reads.
pub fn infer(renderer: &Renderer, template: &Prepared) -> Shapes {
    infer_with(renderer, template, false).0
}

/// [`infer`], and the variables read (`Renderer::undeclared_variables`) from the same parse.
pub fn infer_reading(renderer: &Renderer, template: &Prepared) -> (Shapes, BTreeSet<String>) {
    infer_with(renderer, template, true)
}

fn infer_with(
    renderer: &Renderer,
    template: &Prepared,
    reading: bool,
) -> (Shapes, BTreeSet<String>) {
    let sources = renderer.reachable_sources(template);
    let syntax = renderer.syntax().clone();
    let mut parsed = shape::Parsed::new();
    for (name, source) in &sources {
        // A template that does not parse fails its own render with a located error.
        if let Ok(stmt) = minijinja::machinery::parse(source, name, syntax.clone()) {
            parsed.insert(name.as_str(), stmt);
        }
    }
    let globals = renderer.provided_names(template);
    let includes = template.includes();
    let mut shapes = shape::infer(&parsed, &template.name, &globals, &|parent, name| {
        includes.resolve(parent, name).found()
    });
    shapes.stand_in_functions = renderer.settings().stands_in_for_unknown();
    let mut read = BTreeSet::new();
    if reading {
        for stmt in parsed.values() {
            read.extend(crate::render::undeclared::undeclared_nested(stmt));
        }
        read.retain(|path: &String| !globals.contains(path.split('.').next().unwrap_or(path)));
    }
    (shapes, read)
}

/// Builds `count` contexts of the inferred shapes. Clock-like names get different times,
/// id-like names different ids, names and emails different people, the request's input
/// different texts; settings stay the same in every render, and so do numbers, flags and
/// values compared with literals. A text whose name says nothing of how often it changes
/// is assumed to change per request: it differs too ([`Samples::assumed`]). Application
/// objects get stand-ins. The texts made here that are the same in every render are
/// stand-ins' ([`Samples::stand_in_texts`]).
pub fn synthesize(shapes: &Shapes, fields: &VolatileFields, count: usize) -> Samples {
    let variables = shapes.variables();
    let functions = stand_in_functions(shapes);
    let mut stand_ins = BTreeSet::new();
    let mut assumed = BTreeSet::new();
    let contexts: Vec<Value> = (0..count)
        .map(|n| {
            let mut synthesizer = synth::Synthesizer::assuming(fields, n);
            let mut context: Vec<(Value, Value)> = variables
                .iter()
                .map(|(name, shape)| {
                    (
                        Value::from(name.as_str()),
                        synthesizer.variable(name, shape),
                    )
                })
                .collect();
            for (name, shape) in &functions {
                context.push((
                    Value::from(name.as_str()),
                    synthesizer.function(name, shape),
                ));
            }
            stand_ins.append(&mut synthesizer.stand_ins);
            assumed.append(&mut synthesizer.assumed);
            Value::from_pairs(context)
        })
        .collect();
    let texts = constant_texts(contexts.iter().map(|context| {
        let mut texts = Vec::new();
        synth::collect_texts(context, &mut texts, 0);
        texts
    }));
    Samples {
        contexts,
        origin: Origin::Synthesized,
        stand_ins: stand_ins.into_iter().collect(),
        functions: functions.into_iter().map(|(name, _)| name).collect(),
        variables: None,
        stand_in_texts: StandInTexts::new(texts),
        assumed: assumed.into_iter().collect(),
    }
}

/// The functions that get stand-ins, when the config allows them.
fn stand_in_functions(shapes: &Shapes) -> Vec<(String, shape::Shape)> {
    if shapes.stand_in_functions {
        shapes.functions()
    } else {
        Vec::new()
    }
}

/// What rendered with stand-ins for a template: the filters and tests its renderer stood
/// in for, and the functions its samples did.
pub fn unknown_callables(template: &Prepared, samples: &Samples) -> Vec<UnknownCallable> {
    let mut unknown = template.unknown.clone();
    unknown.extend(samples.functions.iter().map(|name| UnknownCallable {
        kind: CallableKind::Function,
        name: name.clone(),
    }));
    unknown.sort();
    unknown
}

/// Gives each loaded sample stand-ins for the application objects it does not define: a
/// YAML file cannot express an object with methods.
pub fn add_stand_ins(samples: &mut Samples, shapes: &Shapes, fields: &VolatileFields) {
    let mut objects: Vec<(String, shape::Shape)> = shapes
        .variables()
        .into_iter()
        .filter(|(_, shape)| shape.holds_object())
        .collect();
    let functions = stand_in_functions(shapes);
    let function_names: BTreeSet<&str> = functions.iter().map(|(name, _)| name.as_str()).collect();
    objects.extend(functions.iter().cloned());
    if objects.is_empty() {
        return;
    }
    let mut used_functions = BTreeSet::new();
    let mut stand_ins = BTreeSet::new();
    let mut texts = Vec::new();
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
            let value = if function_names.contains(name.as_str()) {
                used_functions.insert(name.clone());
                synthesizer.function(name, shape)
            } else {
                synthesizer.variable(name, shape)
            };
            synth::collect_texts(&value, &mut texts, 0);
            entries.push((Value::from(name.as_str()), value));
        }
        stand_ins.append(&mut synthesizer.stand_ins);
        *context = Value::from_pairs(entries);
    }
    samples.stand_ins = stand_ins.into_iter().collect();
    samples.functions = used_functions.into_iter().collect();
    samples.stand_in_texts = StandInTexts::new(texts);
}

/// The texts found in every render's values: only a value that is the same in every
/// render can write stable lines, so only those are looked for (a passage or an id that
/// differs per render never sits in one).
fn constant_texts(per_render: impl Iterator<Item = Vec<String>>) -> Vec<String> {
    let mut common: Option<BTreeSet<String>> = None;
    for texts in per_render {
        let texts: BTreeSet<String> = texts.into_iter().collect();
        common = Some(match common {
            None => texts,
            Some(common) => common.intersection(&texts).cloned().collect(),
        });
    }
    common.unwrap_or_default().into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON reading of a samples file gives the values the YAML reading gives.
    #[test]
    fn json_fast_path_equals_the_yaml_reading() {
        let texts = [
            r#"[{"a": 1, "b": -2, "c": 18446744073709551615, "d": true, "e": null}]"#,
            r#"[{"s": "caf\u00e9 \/ \b \f \n \t \"q\" \\ 東京", "t": "2024-05-01 10:00:00"}]"#,
            r#"[{"x": [1, [2, {"y": "z"}]], "x": "again"}, {"k": {}}, {"k": []}]"#,
            "[\n {\n  \"company\": {\"name\": \"Acme\", \"region\": \"US\"},\n  \"n\": 0\n }\n]\n",
        ];
        for text in texts {
            let fast = json_fast_path(text).expect("takes the JSON path");
            let yaml = yaml::parse(text).expect("valid YAML");
            let slow: Vec<Value> = yaml.try_iter().unwrap().collect();
            assert_eq!(format!("{fast:?}"), format!("{slow:?}"), "{text}");
        }
        // What the YAML reading may read differently goes down the YAML path.
        for text in [
            r#"[{"f": 1.5}]"#,
            r#"[{"s": "\ud83d\ude00"}]"#,
            "[{\"s\": \"a\u{2028}b\"}]",
            "[{\"s\": \"a\u{85}b\"}]",
            r#"{"a": 1}"#,
            "[]",
            r#"[1, 2]"#,
        ] {
            assert!(json_fast_path(text).is_none(), "{text}");
        }
    }
}
