//! What a renderer of a format that loops shares (Mustache today; Handlebars and Liquid
//! are to come): the output it writes with its source map, the sandbox's budget (fuel,
//! output size, depth), Python's truthiness of a sample's values, and the Jinja reading
//! samples infer shapes from.
//!
//! These formats loop and branch, so unlike the `{var}` formats a render is not linear in
//! the template: every step (a token written, a loop's pass, a filter applied) spends fuel
//! from `limits.fuel`, and the output is checked against `limits.max_output_bytes` after
//! every write, so a hostile template stops with a located error before it costs time or
//! memory.

use super::super::instrument::MarkEvent;
use super::super::Limits;
use minijinja::value::{Value, ValueKind};
use std::ops::Range;

/// Why a render failed, and where in the template.
#[derive(Debug)]
pub struct Failure {
    pub span: Range<usize>,
    pub message: String,
}

impl Failure {
    pub fn new(span: Range<usize>, message: impl Into<String>) -> Self {
        Failure {
            span,
            message: message.into(),
        }
    }
}

/// A render's text and source map, written under the sandbox's budget.
pub struct Output {
    pub text: String,
    pub events: Vec<(usize, MarkEvent)>,
    /// Output ranges that stand-ins wrote ([`SourceMap::stand_ins`](super::super::instrument::SourceMap)).
    pub stand_ins: Vec<Range<usize>>,
    max_len: usize,
    fuel: u64,
    /// Nested renders (loops, sections) in progress, against `limits.recursion`.
    pub depth: usize,
    max_depth: usize,
}

impl Output {
    pub fn new(limits: &Limits) -> Self {
        Output {
            text: String::new(),
            events: Vec::new(),
            stand_ins: Vec::new(),
            max_len: limits.max_output_bytes,
            fuel: limits.fuel,
            depth: 0,
            max_depth: limits.recursion,
        }
    }

    /// One step of work at `span`: out of fuel is an error there.
    pub fn spend(&mut self, span: &Range<usize>) -> Result<(), Failure> {
        if self.fuel == 0 {
            return Err(Failure::new(
                span.clone(),
                "render ran out of fuel (too much work: a huge loop or output?) (limits.fuel)",
            ));
        }
        self.fuel -= 1;
        Ok(())
    }

    /// Enters a nested render at `span` (a section, a loop, a block).
    pub fn enter(&mut self, span: &Range<usize>) -> Result<(), Failure> {
        if self.depth >= self.max_depth {
            return Err(Failure::new(
                span.clone(),
                format!(
                    "blocks nest more than {} deep while rendering (limits.recursion)",
                    self.max_depth
                ),
            ));
        }
        self.depth += 1;
        Ok(())
    }

    pub fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Literal text; `origin` is its text origin and the bytes of blank before it starts.
    pub fn text(
        &mut self,
        origin: Option<(u32, usize)>,
        text: &str,
        span: &Range<usize>,
    ) -> Result<(), Failure> {
        if let Some((id, lead)) = origin {
            if lead < text.len() {
                self.events
                    .push((self.text.len() + lead, MarkEvent::Text(id)));
            }
        }
        self.write(text, span)
    }

    /// A value an expression wrote.
    pub fn field(&mut self, origin: u32, text: &str, span: &Range<usize>) -> Result<(), Failure> {
        let at = self.text.len();
        self.events.push((at, MarkEvent::Open(origin)));
        // A sample's value that stands in for one nobody gave is not stable text (found
        // only while a marked render runs), as in the `{var}` formats.
        self.stand_ins.extend(
            super::super::stand_ins::stand_in_ranges(text)
                .into_iter()
                .map(|range| at + range.start..at + range.end),
        );
        self.write(text, span)?;
        self.events
            .push((self.text.len(), MarkEvent::Close(origin)));
        Ok(())
    }

    fn write(&mut self, text: &str, span: &Range<usize>) -> Result<(), Failure> {
        self.spend(span)?;
        if self.text.len().saturating_add(text.len()) > self.max_len {
            return Err(Failure::new(
                span.clone(),
                format!(
                    "render is over the {}-byte output limit (limits.max_output_bytes)",
                    self.max_len
                ),
            ));
        }
        self.text.push_str(text);
        Ok(())
    }
}

/// Python's `bool(value)`.
pub fn truthy(value: &Value) -> bool {
    match value.kind() {
        ValueKind::Number => match f64::try_from(value.clone()) {
            Ok(f) => f != 0.0,
            Err(_) => value.is_true(),
        },
        _ => value.is_true(),
    }
}

/// Python's `value == 0` (so `0`, `0.0` and `False`).
pub fn equals_zero(value: &Value) -> bool {
    match value.kind() {
        ValueKind::Bool => !value.is_true(),
        ValueKind::Number => f64::try_from(value.clone()).is_ok_and(|f| f == 0.0),
        _ => false,
    }
}

/// Python's `int(text)` of a key, for indexing a list.
pub fn py_int(text: &str) -> Option<i64> {
    let text = text.trim();
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
    {
        return None;
    }
    text.replace('_', "").parse().ok()
}

/// `seq[index]` as Python indexes a list or a string (negative from the end).
pub fn py_index(value: &Value, index: i64) -> Option<Value> {
    match value.kind() {
        ValueKind::Seq | ValueKind::Iterable => {
            let len = value.len()? as i64;
            let at = if index < 0 { len + index } else { index };
            (0..len)
                .contains(&at)
                .then(|| value.get_item(&Value::from(at)).ok())
                .flatten()
        }
        ValueKind::String => {
            let text = value.as_str()?;
            let len = text.chars().count() as i64;
            let at = if index < 0 { len + index } else { index };
            (0..len)
                .contains(&at)
                .then(|| {
                    text.chars()
                        .nth(at as usize)
                        .map(|c| Value::from(c.to_string()))
                })
                .flatten()
        }
        _ => None,
    }
}

/// `mapping[key]` for a string key; `None` where the mapping lacks it.
pub fn py_key(value: &Value, key: &str) -> Option<Value> {
    if value.kind() != ValueKind::Map {
        return None;
    }
    value
        .get_item(&Value::from(key))
        .ok()
        .filter(|v| !v.is_undefined())
}

/// The Jinja reading of a template (what samples infer its variables' shapes from), and
/// where each variable is first read.
#[derive(Debug, Default)]
pub struct Reading {
    pub jinja: String,
    pub uses: Vec<(String, Range<usize>)>,
    loops: usize,
}

impl Reading {
    /// A fresh loop variable's name.
    pub fn loop_variable(&mut self) -> String {
        self.loops += 1;
        format!("item_{}", self.loops)
    }

    /// Records that `path` (dotted, from the sample's root) is read at `span`.
    pub fn used(&mut self, path: &str, span: &Range<usize>) {
        if !path.is_empty() {
            self.uses.push((path.to_owned(), span.clone()));
        }
    }

    pub fn push(&mut self, jinja: &str) {
        self.jinja.push_str(jinja);
    }

    /// The first place that reads `path` (dotted), or a path under it or above it.
    pub fn first_use(&self, path: &str) -> Option<Range<usize>> {
        self.uses
            .iter()
            .find(|(read, _)| {
                read == path
                    || read.starts_with(&format!("{path}."))
                    || path.starts_with(&format!("{read}."))
            })
            .map(|(_, span)| span.clone())
    }
}

/// A dotted path of a template as a Jinja expression: names that are no Jinja name
/// written as one, numeric parts as indexes.
pub fn jinja_path<'a>(parts: impl IntoIterator<Item = &'a str>) -> String {
    let mut path = String::new();
    for (n, part) in parts.into_iter().enumerate() {
        if n > 0 {
            match part.parse::<i64>() {
                Ok(index) => {
                    path.push_str(&format!("[{index}]"));
                    continue;
                }
                Err(_) => path.push('.'),
            }
        }
        path.push_str(&super::jinja_name(part));
    }
    path
}
