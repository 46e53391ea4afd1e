//! `prefixlint samples`: synthesized samples written as a ready-to-edit `NAME.samples.yaml`,
//! with comments on the values that vary per request and on the application objects that
//! a YAML file cannot express (prefixlint keeps standing in for those).

use super::synth::{StandIn, STAND_IN_TEMPLATE};
use super::Samples;
use crate::render::datetime::PyDateTime;
use crate::rules::{FieldClass, VolatileFields};
use minijinja::value::{Value, ValueKind};
use std::collections::BTreeSet;
use std::fmt::Write;

/// How many renders a starter samples file holds: enough to show what varies, few
/// enough to edit.
const STARTER_RENDERS: std::ops::RangeInclusive<usize> = 2..=3;

/// The contexts of a starter `NAME.samples.yaml` (`prefixlint samples`, the editor's
/// "create samples" action): the inferred shapes, synthesized `synthesized_renders` times
/// within [`STARTER_RENDERS`].
pub fn starter_samples(
    shapes: &super::shape::Shapes,
    fields: &VolatileFields,
    synthesized_renders: usize,
) -> Samples {
    let count = synthesized_renders.clamp(*STARTER_RENDERS.start(), *STARTER_RENDERS.end());
    super::synthesize(shapes, fields, count)
}

pub fn samples_yaml(template: &str, samples: &Samples, fields: &VolatileFields) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Samples for {template}, in the shape the template uses each variable.\n\
         # One list item per render: give realistic values, and let only what varies\n\
         # between requests in production vary between items."
    );
    if samples.contexts.is_empty() {
        out.push_str("[]\n");
    }
    let notes = Notes {
        fields,
        assumed: samples.assumed.iter().map(|p| p.path.as_str()).collect(),
    };
    for (n, context) in samples.contexts.iter().enumerate() {
        let mut block = String::new();
        map_block(&mut block, context, 2, "", n == 0, &notes);
        out.push_str(&as_list_item(&block, 0));
    }
    out
}

/// A block written at `indent + 2`, turned into a list item at `indent`.
fn as_list_item(block: &str, indent: usize) -> String {
    let pad = " ".repeat(indent + 2);
    let mut lines = block.lines();
    let mut out = String::new();
    match lines.next() {
        Some(first) => {
            let _ = writeln!(
                out,
                "{}- {}",
                " ".repeat(indent),
                first.strip_prefix(&pad).unwrap_or(first.trim_start())
            );
        }
        None => {
            let _ = writeln!(out, "{}- {{}}", " ".repeat(indent));
        }
    }
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
    out
}

fn map_block(
    out: &mut String,
    map: &Value,
    indent: usize,
    path: &str,
    annotate: bool,
    notes: &Notes,
) {
    let pad = " ".repeat(indent);
    let keys: Vec<Value> = map.try_iter().map(|k| k.collect()).unwrap_or_default();
    let mut comments = Vec::new();
    let mut written = 0;
    for key in keys {
        let name = key.to_string();
        let value = map.get_item(&key).unwrap_or_default();
        let child = if path.is_empty() {
            name.clone()
        } else {
            format!("{path}.{name}")
        };
        if holds_stand_in(&value) {
            comments.push(format!(
                "{pad}# {name}: left out: it holds application objects ({}), which prefixlint stands in for; a YAML file cannot give them methods",
                stand_in_names(&value).join(", ")
            ));
            continue;
        }
        written += 1;
        let _ = write!(out, "{pad}{}:", scalar(&key));
        value_after_key(out, &value, indent, &child, annotate, notes);
    }
    if written == 0 {
        let _ = writeln!(out, "{pad}{{}}");
    }
    for comment in comments {
        let _ = writeln!(out, "{comment}");
    }
}

/// Writes a value after `key:`: inline for scalars, as a nested block otherwise.
fn value_after_key(
    out: &mut String,
    value: &Value,
    indent: usize,
    path: &str,
    annotate: bool,
    notes: &Notes,
) {
    match value.kind() {
        ValueKind::Map if value.len() != Some(0) => {
            out.push('\n');
            map_block(out, value, indent + 2, path, annotate, notes);
        }
        ValueKind::Seq if value.len() != Some(0) => {
            out.push('\n');
            seq_block(out, value, indent + 2, path, annotate, notes);
        }
        _ => {
            let _ = write!(out, " {}", scalar(value));
            if value.as_str() == Some(STAND_IN_TEMPLATE) {
                out.push_str("  # names a template to include: write a real one's name");
            } else if annotate {
                out.push_str(&notes.comment(path));
            }
            out.push('\n');
        }
    }
}

fn seq_block(
    out: &mut String,
    seq: &Value,
    indent: usize,
    path: &str,
    annotate: bool,
    notes: &Notes,
) {
    let pad = " ".repeat(indent);
    for (i, item) in seq.try_iter().into_iter().flatten().enumerate() {
        // Comments on the first item are enough.
        let annotate = annotate && i == 0;
        match item.kind() {
            ValueKind::Map | ValueKind::Seq if item.len() != Some(0) => {
                let mut block = String::new();
                if item.kind() == ValueKind::Map {
                    map_block(&mut block, &item, indent + 2, path, annotate, notes);
                } else {
                    seq_block(&mut block, &item, indent + 2, path, annotate, notes);
                }
                out.push_str(&as_list_item(&block, indent));
            }
            _ => {
                let _ = write!(out, "{pad}- {}", scalar(&item));
                if annotate {
                    out.push_str(&notes.comment(path));
                }
                out.push('\n');
            }
        }
    }
}

/// What the comments on values read: the field kinds, and the places whose cadence was
/// assumed.
struct Notes<'a> {
    fields: &'a VolatileFields,
    assumed: BTreeSet<&'a str>,
}

impl Notes<'_> {
    /// The comment after the value at `path` (empty when it needs none).
    fn comment(&self, path: &str) -> String {
        if let Some(volatile) = self
            .fields
            .classify_name(path)
            .filter(|m| m.class != FieldClass::Setting)
        {
            return format!("  # varies per request: {}", volatile.description);
        }
        if self.assumed.contains(path) {
            return "  # varies per request: assumed, as its name says nothing; if it is the same for every request, list it under per_deploy_fields: in prefixlint.yaml".into();
        }
        String::new()
    }
}

/// One YAML scalar: datetimes unquoted (they load back as datetimes), strings quoted
/// where YAML would read them as something else.
fn scalar(value: &Value) -> String {
    if let Some(at) = value.downcast_object_ref::<PyDateTime>() {
        return at.py_str();
    }
    match value.kind() {
        ValueKind::None | ValueKind::Undefined => "null".into(),
        ValueKind::Bool => value.is_true().to_string(),
        ValueKind::Number => value.to_string(),
        ValueKind::Map => "{}".into(),
        ValueKind::Seq => "[]".into(),
        _ => {
            let text = value
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| value.to_string());
            serde_yaml_ng::to_string(&text)
                .map(|s| s.trim_end().to_owned())
                .unwrap_or_else(|_| format!("{text:?}"))
        }
    }
}

fn holds_stand_in(value: &Value) -> bool {
    !stand_in_names(value).is_empty()
}

fn stand_in_names(value: &Value) -> Vec<String> {
    let mut names = Vec::new();
    collect_stand_ins(value, &mut names, 0);
    names.dedup();
    names
}

fn collect_stand_ins(value: &Value, names: &mut Vec<String>, depth: usize) {
    if depth > 16 {
        return;
    }
    if let Some(stand_in) = value.downcast_object_ref::<StandIn>() {
        names.push(stand_in.name.clone());
        return;
    }
    match value.kind() {
        ValueKind::Seq => {
            for item in value.try_iter().into_iter().flatten() {
                collect_stand_ins(&item, names, depth + 1);
            }
        }
        ValueKind::Map => {
            for key in value.try_iter().into_iter().flatten() {
                collect_stand_ins(&value.get_item(&key).unwrap_or_default(), names, depth + 1);
            }
        }
        _ => {}
    }
}
