//! Templates in the formats other than Jinja, rendered natively into the same source map
//! the Jinja path builds: every text run and every field is an [`Origin`] in the
//! renderer's [`OriginTable`], and a render records where each one's output starts and
//! ends, so `analyse`, the rules and the reports read them as they read Jinja.
//!
//! Rendered natively, not translated to Jinja: each format's own semantics (CPython's
//! `format()`, CrewAI's replacement, Semantic Kernel's HTML escaping) are exact only in
//! code of their own. The `{var}`, f-string and Semantic Kernel formats do not loop, call
//! or include, so a render is linear in the template and its values and needs no fuel; its output is bounded like Jinja's
//! (`limits.max_output_bytes`), checked before any width or precision is made.
//!
//! Mustache loops (a list section renders once per item), so it is walked by an engine of
//! its own ([`mustache`], chevron's semantics) that spends `limits.fuel` per tag and write
//! and nests at most `limits.recursion` deep ([`engine::Output`]).
//!
//! Samples read a template through its Jinja reading ([`Native::jinja_reading`]): one
//! `{{ path }}` per field (for Mustache, a `for` or `if` per section), so shape inference
//! and PL011 work unchanged.

mod engine;
pub mod mustache;
pub mod spec;

use super::clock::Clock;
use super::instrument::{MarkEvent, Origin, OriginKind, OriginTable, SourceMap};
use super::python::{py_repr, py_str};
use super::Render;
use crate::error::{Error, Result};
use crate::formats::fstring::{self, ClockCall, Reads};
use crate::formats::{crewai, python_format, semantic_kernel, SyntaxError, TemplateFormat};
use engine::{Output, Reading};
use minijinja::value::{Value, ValueKind};
use spec::Formattable;
use std::ops::Range;
use std::sync::Arc;

/// How a format reads its values, beyond the common parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    /// `str.format` / LangChain: a missing name is a `KeyError`.
    PythonFormat,
    /// CrewAI's `interpolate_only`: `str()` of each value, replaced in turn.
    CrewAi,
    /// Semantic Kernel: a missing or `None` argument prints nothing; strings are
    /// HTML-escaped (its default, `allow_dangerously_set_content: false`).
    SemanticKernel,
    /// An f-string, read statically: names read the sample, clock calls the clock.
    FString,
    /// Mustache: rendered by an engine of its own ([`Engine`]).
    Mustache,
}

/// The formats that loop and branch, each rendered by an engine of its own.
#[derive(Debug)]
enum Engine {
    Mustache(mustache::Mustache),
}

/// A parsed template of another format, with its origins registered.
#[derive(Debug)]
pub struct Native {
    dialect: Dialect,
    parts: Vec<Part>,
    engine: Option<Engine>,
    /// Where an engine's template reads each variable first (for `first_use`).
    uses: Reading,
    /// The template's variables as Jinja reads them, one `{{ }}` each (for samples).
    jinja: String,
    /// Calls of the application's functions (Semantic Kernel), stood in for.
    pub calls: Vec<String>,
}

#[derive(Debug)]
enum Part {
    /// Literal output; `origin` is its text origin and `lead` the bytes of leading
    /// whitespace before it starts (the Jinja path marks a text run at its first
    /// non-blank character too).
    Text {
        text: String,
        origin: Option<(u32, usize)>,
    },
    Field {
        origin: u32,
        span: Range<usize>,
        field: Field,
    },
}

#[derive(Debug, Clone)]
struct Field {
    value: FieldValue,
    conversion: Option<char>,
    spec: Vec<SpecPiece>,
    /// `{x=}`: the text printed before the value.
    debug: Option<String>,
}

#[derive(Debug, Clone)]
enum SpecPiece {
    Text(String),
    Field(Field),
}

#[derive(Debug, Clone)]
enum FieldValue {
    Path {
        root: String,
        accessors: Vec<Access>,
    },
    Clock(ClockCall),
    Literal(String),
}

#[derive(Debug, Clone)]
enum Access {
    Attr(String),
    Key(String),
    Index(i64),
}

impl FieldValue {
    fn path(&self) -> Option<String> {
        let FieldValue::Path { root, accessors } = self else {
            return None;
        };
        let mut path = root.clone();
        for access in accessors {
            match access {
                Access::Attr(name) | Access::Key(name) => {
                    path.push('.');
                    path.push_str(name);
                }
                Access::Index(_) => break,
            }
        }
        Some(path)
    }
}

/// Parses `source` in `format` (not Jinja), registering its origins under `name`.
pub fn prepare(
    format: TemplateFormat,
    name: &Arc<str>,
    source: &str,
    origins: &OriginTable,
) -> std::result::Result<Native, SyntaxError> {
    let mut builder = Builder {
        name,
        source,
        origins,
        parts: Vec::new(),
        calls: Vec::new(),
    };
    let dialect = match format {
        TemplateFormat::Format => {
            builder.python_format(&python_format::parse(source)?);
            Dialect::PythonFormat
        }
        TemplateFormat::CrewAi => {
            builder.python_format(&crewai::parse(source));
            Dialect::CrewAi
        }
        TemplateFormat::FString => {
            builder.fstring(&fstring::parse(source)?);
            Dialect::FString
        }
        TemplateFormat::SemanticKernel => {
            builder.semantic_kernel(&semantic_kernel::parse(source)?);
            Dialect::SemanticKernel
        }
        TemplateFormat::Mustache => {
            let engine = mustache::Mustache::new(crate::formats::mustache::parse(source)?, &builder)?;
            return Ok(Native::with_engine(Dialect::Mustache, engine.reading(), Engine::Mustache(engine)));
        }
        other @ (TemplateFormat::Handlebars | TemplateFormat::Liquid | TemplateFormat::Jinja) => {
            return Err(SyntaxError::new(
                0,
                format!("{other} templates are not rendered yet: prefixlint cannot check this one (exclude it, or declare another format if it is not {other})"),
            ))
        }
    };
    let jinja = jinja_reading(&builder.parts);
    Ok(Native {
        dialect,
        parts: builder.parts,
        engine: None,
        uses: Reading::default(),
        jinja,
        calls: builder.calls,
    })
}

pub(super) struct Builder<'a> {
    name: &'a Arc<str>,
    source: &'a str,
    origins: &'a OriginTable,
    parts: Vec<Part>,
    calls: Vec<String>,
}

impl Builder<'_> {
    pub(super) fn register(&self, span: Range<usize>, kind: OriginKind) -> u32 {
        let (line, column) = crate::source::line_col(self.source, span.start);
        self.origins.register(Origin {
            template: self.name.clone(),
            text: self.source[span.clone()].into(),
            span,
            kind,
            line,
            column,
        }) as u32
    }

    fn text(&mut self, span: Range<usize>, text: String) {
        let origin = self.text_origin(span);
        self.parts.push(Part::Text { text, origin });
    }

    /// The origin of a literal text run at `span` (written as it stands in the source),
    /// and the bytes of blank before it: marked from its first non-blank character, as
    /// the Jinja path marks a text run (its leading whitespace is the same in the source
    /// and the output).
    pub(super) fn text_origin(&self, span: Range<usize>) -> Option<(u32, usize)> {
        let text = &self.source[span.clone()];
        let lead = text.len() - text.trim_start().len();
        (lead < text.len()).then(|| {
            (
                self.register(span.start + lead..span.end, OriginKind::Text),
                lead,
            )
        })
    }

    fn field(&mut self, span: Range<usize>, field: Field) {
        let origin = self.register(span.clone(), OriginKind::Expression);
        self.parts.push(Part::Field {
            origin,
            span,
            field,
        });
    }

    fn python_format(&mut self, template: &python_format::Template) {
        for piece in &template.pieces {
            match piece {
                python_format::Piece::Text { span, text } => self.text(span.clone(), text.clone()),
                python_format::Piece::Field(field) => {
                    self.field(field.span.clone(), python_field(field))
                }
            }
        }
    }

    fn fstring(&mut self, template: &fstring::FString) {
        for piece in &template.pieces {
            match piece {
                fstring::Piece::Text { span, text } => self.text(span.clone(), text.clone()),
                fstring::Piece::Field(field) => {
                    let debug = field.debug.then(|| {
                        // The text after `{` through `=` and the blanks after it.
                        let inner = &self.source[field.span.start + 1..field.span.end];
                        let at = debug_prefix_len(inner);
                        inner[..at].to_owned()
                    });
                    let mut converted = fstring_field(field);
                    converted.debug = debug;
                    self.field(field.span.clone(), converted)
                }
            }
        }
    }

    fn semantic_kernel(&mut self, template: &semantic_kernel::Template) {
        use semantic_kernel::Block;
        for block in &template.blocks {
            let span = block.span();
            let value = match block {
                Block::Text { .. } => {
                    self.text(span.clone(), self.source[span].to_owned());
                    continue;
                }
                Block::Variable { name, .. } => FieldValue::Path {
                    root: name.clone(),
                    accessors: Vec::new(),
                },
                Block::Value { value, .. } => FieldValue::Literal(value.clone()),
                Block::Call {
                    plugin, function, ..
                } => {
                    // The function's output is unknown: a stand-in read from the sample
                    // under the function's name, which the field classes classify.
                    let (root, accessors) = match plugin {
                        Some(plugin) => (plugin.clone(), vec![Access::Attr(function.clone())]),
                        None => (function.clone(), Vec::new()),
                    };
                    self.calls.push(self.source[span.clone()].to_owned());
                    FieldValue::Path { root, accessors }
                }
            };
            self.field(
                span,
                Field {
                    value,
                    conversion: None,
                    spec: Vec::new(),
                    debug: None,
                },
            );
        }
    }
}

/// The length of `x = ` in a debug field's inner text `x = !r:spec}`.
fn debug_prefix_len(inner: &str) -> usize {
    // The last `=` before any conversion or spec that ends the expression.
    let bytes = inner.as_bytes();
    let mut at = 0;
    let mut equals = None;
    let mut depth = 0i32;
    let mut quote: Option<u8> = None;
    while at < bytes.len() {
        let c = bytes[at];
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) if c == b'\\' => at += 1,
            Some(_) => {}
            None => match c {
                b'\'' | b'"' => quote = Some(c),
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' => depth -= 1,
                b'}' if depth == 0 => break,
                b'}' => depth -= 1,
                b'=' if depth == 0 => equals = Some(at),
                b'!' | b':' if depth == 0 && equals.is_some() => break,
                _ => {}
            },
        }
        at += 1;
    }
    let Some(equals) = equals else {
        return 0;
    };
    let mut end = equals + 1;
    while bytes.get(end).is_some_and(u8::is_ascii_whitespace) {
        end += 1;
    }
    end
}

fn python_field(field: &python_format::Field) -> Field {
    let accessors = field
        .name
        .accessors
        .iter()
        .map(|a| match a {
            python_format::Accessor::Attr(name) => Access::Attr(name.clone()),
            python_format::Accessor::Key(key) => Access::Key(key.clone()),
            python_format::Accessor::Index(i) => {
                Access::Index(i64::try_from(*i).unwrap_or(i64::MAX))
            }
        })
        .collect();
    Field {
        value: FieldValue::Path {
            root: field.name.root.clone(),
            accessors,
        },
        conversion: field.conversion,
        spec: field
            .spec
            .iter()
            .map(|part| match part {
                python_format::SpecPart::Text(text) => SpecPiece::Text(text.clone()),
                python_format::SpecPart::Field(inner) => SpecPiece::Field(python_field(inner)),
            })
            .collect(),
        debug: None,
    }
}

fn fstring_field(field: &fstring::Field) -> Field {
    let value = match &field.reads {
        Reads::Variable { root, accessors } => FieldValue::Path {
            root: root.clone(),
            accessors: accessors
                .iter()
                .map(|a| match a {
                    fstring::Access::Attr(name) => Access::Attr(name.clone()),
                    fstring::Access::Key(key) => Access::Key(key.clone()),
                    fstring::Access::Index(i) => Access::Index(*i),
                })
                .collect(),
        },
        Reads::Clock(call) => FieldValue::Clock(call.clone()),
        Reads::Opaque { name } => FieldValue::Path {
            root: name.clone(),
            accessors: Vec::new(),
        },
    };
    // A clock's strftime format given as the spec (`{datetime.now():%Y-%m-%d}`) is
    // applied by the clock call, not again as a spec.
    let spec_is_strftime = matches!(
        (&field.reads, field.spec.as_slice()),
        (
            Reads::Clock(ClockCall::DateTime { strftime: Some(f) } | ClockCall::Date { strftime: Some(f) }),
            [fstring::SpecPart::Text(spec)]
        ) if f == spec
    );
    Field {
        value,
        conversion: field.conversion,
        spec: if spec_is_strftime {
            Vec::new()
        } else {
            field
                .spec
                .iter()
                .map(|part| match part {
                    fstring::SpecPart::Text(text) => SpecPiece::Text(text.clone()),
                    fstring::SpecPart::Field(inner) => SpecPiece::Field(fstring_field(inner)),
                })
                .collect()
        },
        debug: None,
    }
}

/// The template's fields as Jinja, for samples: `{{ path }}`, `{{ path + 0 }}` where the
/// spec formats a number; roots that are no Jinja name are written as one.
fn jinja_reading(parts: &[Part]) -> String {
    let mut out = String::new();
    let add = |field: &Field, out: &mut String| {
        let mut fields = vec![field];
        for piece in &field.spec {
            if let SpecPiece::Field(inner) = piece {
                fields.push(inner);
            }
        }
        for (n, field) in fields.into_iter().enumerate() {
            let FieldValue::Path { root, accessors } = &field.value else {
                continue;
            };
            let mut path = jinja_name(root);
            for access in accessors {
                match access {
                    Access::Attr(name) if is_jinja_name(name) => {
                        path.push('.');
                        path.push_str(name);
                    }
                    Access::Attr(name) | Access::Key(name) => {
                        path.push('[');
                        path.push_str(&serde_json::to_string(name).unwrap_or_default());
                        path.push(']');
                    }
                    Access::Index(i) => path.push_str(&format!("[{i}]")),
                }
            }
            // A nested spec field is a width or a precision: a number; a spec with
            // strftime fields formats a datetime.
            let spec = (n == 0 && field.conversion.is_none())
                .then(|| spec_reads(&field.spec))
                .flatten();
            match spec {
                _ if n > 0 => out.push_str(&format!("{{{{ {path} + 0 }}}}\n")),
                Some(SpecReads::Number) => out.push_str(&format!("{{{{ {path} + 0 }}}}\n")),
                Some(SpecReads::DateTime) => {
                    out.push_str(&format!("{{{{ {path}.strftime(\"%Y\") }}}}\n"))
                }
                None => out.push_str(&format!("{{{{ {path} }}}}\n")),
            }
        }
    };
    for part in parts {
        if let Part::Field { field, .. } = part {
            add(field, &mut out);
        }
    }
    out
}

/// What a literal spec asks its value to be.
enum SpecReads {
    /// `d`, `x`, `.2f`, `.1%`, `,`: a number.
    Number,
    /// `%Y-%m-%d`: strftime fields, which only a datetime formats.
    DateTime,
}

fn spec_reads(spec: &[SpecPiece]) -> Option<SpecReads> {
    let [SpecPiece::Text(text)] = spec else {
        return None;
    };
    let strftime = text
        .char_indices()
        .any(|(i, c)| c == '%' && text[i + 1..].starts_with(|c: char| c.is_ascii_alphabetic()));
    if strftime {
        return Some(SpecReads::DateTime);
    }
    let number = text
        .chars()
        .last()
        .is_some_and(|c| "bcdoxXneEfFgG%".contains(c))
        || text.contains(',');
    number.then_some(SpecReads::Number)
}

const JINJA_KEYWORDS: &[&str] = &[
    "and", "or", "not", "in", "is", "if", "else", "true", "false", "none", "True", "False", "None",
    "loop", "self", "super", "varargs", "kwargs", "caller",
];

fn is_jinja_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !JINJA_KEYWORDS.contains(&name)
}

/// A root as a Jinja name: itself where it is one, else its characters made one
/// (`my-var` → `my_var`, `if` → `if_`); a sample may hold either.
fn jinja_name(root: &str) -> String {
    if is_jinja_name(root) {
        return root.to_owned();
    }
    let mut name: String = root
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert(0, '_');
    }
    if JINJA_KEYWORDS.contains(&name.as_str()) {
        name.push('_');
    }
    name
}

use engine::Failure;

impl Native {
    fn with_engine(dialect: Dialect, reading: Reading, engine: Engine) -> Self {
        let jinja = reading.jinja.clone();
        Native {
            dialect,
            parts: Vec::new(),
            engine: Some(engine),
            uses: reading,
            jinja,
            calls: Vec::new(),
        }
    }

    /// The template's variables as Jinja reads them (samples infer their shapes here).
    pub fn jinja_reading(&self) -> &str {
        &self.jinja
    }

    /// The first field that reads `path` (dotted), as a span of the template.
    pub fn first_use(&self, path: &str) -> Option<Range<usize>> {
        if self.engine.is_some() {
            return self.uses.first_use(path);
        }
        self.parts.iter().find_map(|part| match part {
            Part::Field { span, field, .. } => {
                let read = field.value.path()?;
                let root = read.split('.').next().unwrap_or_default();
                let wanted = path.split('.').next().unwrap_or_default();
                (read == path
                    || read.starts_with(&format!("{path}."))
                    || (root == wanted || jinja_name(root) == wanted) && path.starts_with(&read))
                .then(|| span.clone())
            }
            Part::Text { .. } => None,
        })
    }

    /// Renders over one sample (`context`, a map) under `clock`; `display` names the
    /// template in errors, `source` is its text.
    pub fn render(
        &self,
        context: &Value,
        clock: Clock,
        limits: &super::Limits,
        display: &str,
        source: &str,
    ) -> Result<Render> {
        let rendered = match &self.engine {
            Some(engine) => {
                let mut out = Output::new(limits);
                match engine {
                    Engine::Mustache(t) => t.render(context, &mut out),
                }
                .map(|()| Render {
                    text: out.text,
                    map: Some(SourceMap {
                        events: out.events,
                        stand_ins: out.stand_ins,
                    }),
                })
            }
            None => self.render_parts(context, clock, limits.max_output_bytes),
        };
        rendered.map_err(|failure| {
            Error::located(
                display,
                source,
                failure.span,
                format!("{display}: {}", failure.message),
                "here",
                Some(self.help().to_owned()),
            )
        })
    }

    fn help(&self) -> &'static str {
        match self.dialect {
            Dialect::PythonFormat | Dialect::CrewAi => {
                "give every sample a value for each field in NAME.samples.yaml, of a type its format spec accepts"
            }
            Dialect::SemanticKernel => {
                "Semantic Kernel passes strings, numbers, booleans and dates; give the sample a value of one of those"
            }
            Dialect::FString => {
                "an f-string is read without running it: each field reads the sample value of its name"
            }
            Dialect::Mustache => {
                "Mustache (chevron) reads the sample's values; give each sample the values its sections and tags read"
            }
        }
    }

    fn render_parts(
        &self,
        context: &Value,
        clock: Clock,
        max_len: usize,
    ) -> std::result::Result<Render, Failure> {
        if self.dialect == Dialect::CrewAi {
            crewai_inputs(context).map_err(|message| Failure {
                span: 0..0,
                message,
            })?;
        }
        let mut text = String::new();
        let mut events = Vec::new();
        let mut stand_ins = Vec::new();
        // CrewAI replaces each field's text everywhere in turn: a value holding another
        // field's `{name}` is replaced again, which only its own algorithm reproduces.
        let mut crewai_values: Vec<(String, String)> = Vec::new();
        for part in &self.parts {
            match part {
                Part::Text {
                    text: literal,
                    origin,
                } => {
                    if let Some((id, lead)) = origin {
                        events.push((text.len() + lead, MarkEvent::Text(*id)));
                    }
                    text.push_str(literal);
                }
                Part::Field {
                    origin,
                    span,
                    field,
                } => {
                    let remaining = max_len.saturating_sub(text.len());
                    let value =
                        self.field_text(field, context, clock, remaining)
                            .map_err(|message| Failure {
                                span: span.clone(),
                                message,
                            })?;
                    if self.dialect == Dialect::CrewAi {
                        if let Some(root) = field.value.path() {
                            crewai_values.push((root, value.clone()));
                        }
                    }
                    events.push((text.len(), MarkEvent::Open(*origin)));
                    // A sample's value that stands in for one nobody gave is not stable
                    // text (found only while a marked render runs).
                    if matches!(field.value, FieldValue::Path { .. }) {
                        let at = text.len();
                        stand_ins.extend(
                            super::stand_ins::stand_in_ranges(&value)
                                .into_iter()
                                .map(|range| at + range.start..at + range.end),
                        );
                    }
                    text.push_str(&value);
                    events.push((text.len(), MarkEvent::Close(*origin)));
                }
            }
            if text.len() > max_len {
                return Err(Failure {
                    span: 0..0,
                    message: format!(
                        "render is over the {max_len}-byte output limit (limits.max_output_bytes)"
                    ),
                });
            }
        }
        let mut map = Some(SourceMap { events, stand_ins });
        if self.dialect == Dialect::CrewAi
            && crewai_values.iter().any(|(_, value)| {
                crewai_values
                    .iter()
                    .any(|(name, _)| value.contains(&format!("{{{name}}}")))
            })
        {
            let replaced = self.crewai_replace(&crewai_values);
            if replaced != text {
                text = replaced;
                map = None;
            }
        }
        Ok(Render { text, map })
    }

    /// `interpolate_only`'s loop: each field's text replaced everywhere, in order.
    fn crewai_replace(&self, values: &[(String, String)]) -> String {
        let mut result: String = self
            .parts
            .iter()
            .map(|part| match part {
                Part::Text { text, .. } => text.clone(),
                Part::Field { field, .. } => {
                    format!("{{{}}}", field.value.path().unwrap_or_default())
                }
            })
            .collect();
        for (name, value) in values {
            result = result.replace(&format!("{{{name}}}"), value);
        }
        result
    }

    /// One field's output.
    fn field_text(
        &self,
        field: &Field,
        context: &Value,
        clock: Clock,
        max_len: usize,
    ) -> std::result::Result<String, String> {
        let value = match &field.value {
            FieldValue::Literal(text) => return Ok(text.clone()),
            FieldValue::Clock(call) => clock_value(call, clock)?,
            FieldValue::Path { root, accessors } => {
                match lookup(context, root) {
                    Some(value) => read(value, accessors, root)?,
                    None if self.dialect == Dialect::SemanticKernel => return Ok(String::new()),
                    None => {
                        return Err(match self.dialect {
                            Dialect::CrewAi => format!(
                                "KeyError: Template variable '{root}' not found in inputs dictionary (the sample has no `{root}`)"
                            ),
                            Dialect::FString => format!("NameError: the sample has no `{root}`"),
                            _ => format!("KeyError: '{root}' (the sample has no `{root}`)"),
                        })
                    }
                }
            }
        };
        match self.dialect {
            Dialect::CrewAi => return Ok(py_str(&value)),
            Dialect::SemanticKernel => return semantic_kernel_text(&value),
            _ => {}
        }
        let mut spec = String::new();
        for piece in &field.spec {
            match piece {
                SpecPiece::Text(text) => spec.push_str(text),
                SpecPiece::Field(inner) => {
                    spec.push_str(&self.field_text(inner, context, clock, max_len)?)
                }
            }
        }
        let no_format = field.conversion.is_none() && spec.is_empty();
        let converted;
        let formattable = match field.conversion {
            Some('r') => {
                converted = py_repr(&value);
                Formattable::Str(&converted)
            }
            Some('a') => {
                converted = ascii(&py_repr(&value));
                Formattable::Str(&converted)
            }
            Some(_) => {
                converted = py_str(&value);
                Formattable::Str(&converted)
            }
            // `{x=}` prints the repr unless a conversion or a spec is given.
            None if field.debug.is_some() && no_format => {
                converted = py_repr(&value);
                Formattable::Str(&converted)
            }
            None => {
                if let Some(datetime) = value.downcast_object_ref::<super::datetime::PyDateTime>() {
                    // `datetime.__format__` is `strftime` (and `str()` for an empty spec).
                    let text = if spec.is_empty() {
                        datetime.py_str()
                    } else {
                        datetime.strftime(&spec)?
                    };
                    return Ok(format!("{}{text}", field.debug.as_deref().unwrap_or("")));
                }
                formattable(&value)
            }
        };
        let text = spec::format(&formattable, &spec, max_len)?;
        Ok(format!("{}{text}", field.debug.as_deref().unwrap_or("")))
    }
}

/// CrewAI's `_validate_type` over every input (used or not): only `None`, `str`, `int`,
/// `float`, `bool`, and lists and dicts of those.
fn crewai_inputs(context: &Value) -> std::result::Result<(), String> {
    fn valid(value: &Value) -> std::result::Result<(), &'static str> {
        match value.kind() {
            ValueKind::None
            | ValueKind::Undefined
            | ValueKind::String
            | ValueKind::Number
            | ValueKind::Bool => Ok(()),
            ValueKind::Seq | ValueKind::Iterable => value
                .try_iter()
                .into_iter()
                .flatten()
                .try_for_each(|item| valid(&item)),
            ValueKind::Map => value
                .try_iter()
                .into_iter()
                .flatten()
                .try_for_each(|key| valid(&value.get_item(&key).unwrap_or_default())),
            _ => Err(
                match value.downcast_object_ref::<super::datetime::PyDateTime>() {
                    Some(at) if at.date_only => "date",
                    Some(_) => "datetime",
                    None => "object",
                },
            ),
        }
    }
    let Ok(keys) = context.try_iter() else {
        return Ok(());
    };
    for key in keys {
        if let Err(type_name) = valid(&context.get_item(&key).unwrap_or_default()) {
            return Err(format!(
                "ValueError: Invalid value for key '{key}': Unsupported type {type_name} in inputs. Only str, int, float, bool, dict, and list are allowed."
            ));
        }
    }
    Ok(())
}

/// The root's value in the sample: by its name, or by its Jinja name where it is none.
fn lookup(context: &Value, root: &str) -> Option<Value> {
    let found = context
        .get_item(&Value::from(root))
        .ok()
        .filter(|v| !v.is_undefined());
    found.or_else(|| {
        let name = jinja_name(root);
        (name != root)
            .then(|| context.get_item(&Value::from(name.as_str())).ok())
            .flatten()
            .filter(|v| !v.is_undefined())
    })
}

/// `getattr` and `[]` as `str.format` applies them; a mapping stands for the object an
/// application passes (a YAML sample can only write a mapping).
fn read(mut value: Value, accessors: &[Access], root: &str) -> std::result::Result<Value, String> {
    let mut path = root.to_owned();
    for access in accessors {
        let next = match access {
            Access::Attr(name) => {
                path.push('.');
                path.push_str(name);
                match value.kind() {
                    ValueKind::Map | ValueKind::Plain => value.get_attr(name).ok(),
                    _ => None,
                }
                .filter(|v| !v.is_undefined())
                .ok_or_else(|| {
                    format!(
                        "AttributeError: `{path}`: the sample's {} has no attribute `{name}`",
                        kind_name(&value)
                    )
                })?
            }
            Access::Key(key) => {
                path.push_str(&format!("[{key}]"));
                if value.kind() != ValueKind::Map {
                    return Err(format!(
                        "TypeError: `{path}`: a {} is not indexed by a string key",
                        kind_name(&value)
                    ));
                }
                value
                    .get_item(&Value::from(key.as_str()))
                    .ok()
                    .filter(|v| !v.is_undefined())
                    .ok_or_else(|| format!("KeyError: '{key}' (`{path}` is not in the sample)"))?
            }
            Access::Index(index) => {
                path.push_str(&format!("[{index}]"));
                match value.kind() {
                    ValueKind::String => {
                        let s = value.as_str().unwrap_or_default();
                        usize::try_from(*index)
                            .ok()
                            .and_then(|i| s.chars().nth(i))
                            .map(|c| Value::from(c.to_string()))
                            .ok_or_else(|| {
                                format!("IndexError: string index out of range (`{path}`)")
                            })?
                    }
                    ValueKind::Seq => value
                        .get_item(&Value::from(*index))
                        .ok()
                        .filter(|v| !v.is_undefined() && *index >= 0)
                        .ok_or_else(|| format!("IndexError: list index out of range (`{path}`)"))?,
                    ValueKind::Map => value
                        .get_item(&Value::from(*index))
                        .ok()
                        .filter(|v| !v.is_undefined())
                        .ok_or_else(|| {
                            format!("KeyError: {index} (`{path}` is not in the sample)")
                        })?,
                    _ => {
                        return Err(format!(
                            "TypeError: `{path}`: a {} is not subscriptable",
                            kind_name(&value)
                        ))
                    }
                }
            }
        };
        value = next;
    }
    Ok(value)
}

fn kind_name(value: &Value) -> &'static str {
    match value.kind() {
        ValueKind::String => "str",
        ValueKind::Number if value.is_integer() => "int",
        ValueKind::Number => "float",
        ValueKind::Bool => "bool",
        ValueKind::None => "NoneType",
        ValueKind::Seq | ValueKind::Iterable => "list",
        ValueKind::Map => "dict",
        _ => "object",
    }
}

/// A sample value as `format()` sees it.
fn formattable(value: &Value) -> Formattable<'_> {
    match value.kind() {
        ValueKind::String => Formattable::Str(value.as_str().unwrap_or_default()),
        ValueKind::Bool => Formattable::Bool(value.is_true()),
        ValueKind::Number if value.is_integer() => match i128::try_from(value.clone()) {
            Ok(i) => Formattable::Int(i),
            Err(_) => Formattable::Other {
                type_name: "int",
                text: py_str(value),
            },
        },
        ValueKind::Number => Formattable::Float(f64::try_from(value.clone()).unwrap_or(f64::NAN)),
        _ => Formattable::Other {
            type_name: kind_name(value),
            text: py_str(value),
        },
    }
}

/// Python's `ascii()` of a `repr()`: non-ASCII characters escaped.
fn ascii(repr: &str) -> String {
    let mut out = String::with_capacity(repr.len());
    for c in repr.chars() {
        let code = c as u32;
        match code {
            0..=0x7f => out.push(c),
            0x80..=0xff => out.push_str(&format!("\\x{code:02x}")),
            0x100..=0xffff => out.push_str(&format!("\\u{code:04x}")),
            _ => out.push_str(&format!("\\U{code:08x}")),
        }
    }
    out
}

/// Semantic Kernel's `str()` of an argument, HTML-escaped where it is a string; lists and
/// mappings are refused unless the prompt allows dangerous content.
fn semantic_kernel_text(value: &Value) -> std::result::Result<String, String> {
    match value.kind() {
        ValueKind::None | ValueKind::Undefined => Ok(String::new()),
        ValueKind::String => Ok(html_escape(value.as_str().unwrap_or_default())),
        ValueKind::Seq | ValueKind::Map | ValueKind::Iterable => Err(format!(
            "NotImplementedError: a {} argument is not encoded by Semantic Kernel unless allow_dangerously_set_content is true",
            kind_name(value)
        )),
        _ => Ok(py_str(value)),
    }
}

/// Python's `html.escape(s, quote=True)`.
fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            _ => out.push(c),
        }
    }
    out
}

/// What a clock or id call prints under the sample's clock.
fn clock_value(call: &ClockCall, clock: Clock) -> std::result::Result<Value, String> {
    let datetime = clock.datetime();
    Ok(match call {
        ClockCall::DateTime {
            strftime: Some(format),
        }
        | ClockCall::Date {
            strftime: Some(format),
        }
        | ClockCall::TimeString { strftime: format } => Value::from(datetime.strftime(format)?),
        ClockCall::DateTime { strftime: None } => datetime.value(),
        ClockCall::Date { strftime: None } => {
            super::datetime::PyDateTime::date(clock.at.date_naive()).value()
        }
        ClockCall::EpochSeconds => Value::from(clock.at.timestamp_millis() as f64 / 1000.0),
        ClockCall::EpochNanos => Value::from(clock.at.timestamp_nanos_opt().unwrap_or(0)),
        ClockCall::Id => {
            // A new id per render, the same for the same clock: a UUID's shape.
            let seed = clock.at.timestamp_millis() as u64;
            let mix = |n: u64| n.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29) ^ seed;
            let (a, b) = (mix(seed ^ 0x51), mix(seed ^ 0xA7));
            Value::from(format!(
                "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
                a >> 32,
                (a >> 16) & 0xffff,
                a & 0xfff,
                b >> 52,
                b & 0xffff_ffff_ffff
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::{Dialect as JinjaDialect, RenderSettings, Renderer};
    use super::*;

    fn render(format: TemplateFormat, source: &str, values: &[(&str, Value)]) -> Result<String> {
        let mut renderer = Renderer::new(RenderSettings::new(
            JinjaDialect::Jinja2,
            std::env::temp_dir(),
        ))?;
        let template = renderer.prepare_as("t.txt", source, format)?;
        let context = Value::from_pairs(
            values
                .iter()
                .map(|(k, v)| (Value::from(*k), v.clone()))
                .collect::<Vec<_>>(),
        );
        renderer
            .render(&template, &context, Clock::synthetic(0))
            .map(|r| r.text)
    }

    /// Widths, precisions and nesting that would make CPython allocate gigabytes, or a
    /// parser recurse: each is a clear, located error, made before any text.
    #[test]
    fn hostile_specs_and_nesting_are_errors_not_allocations() {
        let huge = [
            (
                "{x:>4000000000}",
                "width 4000000000 is over the output limit",
            ),
            (
                "{x:.4000000000f}",
                "precision 4000000000 is over the output limit",
            ),
            ("{x:>99999999999999999999}", "Too many decimal digits"),
            ("{x:{w}}", "width 5000000000 is over the output limit"),
            ("{x:{w:{w}}}", "max string recursion exceeded"),
        ];
        for (source, want) in huge {
            let err = render(
                TemplateFormat::Format,
                source,
                &[
                    ("x", Value::from(1.5)),
                    ("w", Value::from(5_000_000_000i64)),
                ],
            )
            .unwrap_err()
            .to_string();
            assert!(err.contains(want), "{source}: {err}");
        }
        let deep = format!("{{x[{}]}}", "[".repeat(100_000));
        assert!(render(TemplateFormat::Format, &deep, &[]).is_err());
        let brackets = format!("{{{}x{}}}", "(".repeat(100_000), ")".repeat(100_000));
        let err = render(TemplateFormat::FString, &brackets, &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("too many nested brackets"), "{err}");
        let blocks = "{{ ".repeat(100_000);
        assert!(render(TemplateFormat::SemanticKernel, &blocks, &[]).is_ok());
    }

    /// A render is bounded by the output limit: many fields of a long value stop there.
    #[test]
    fn output_is_bounded() {
        let long = Value::from("x".repeat(1 << 20));
        let source = "{x}".repeat(8);
        let err = render(TemplateFormat::Format, &source, &[("x", long)])
            .unwrap_err()
            .to_string();
        assert!(err.contains("output limit"), "{err}");
    }

    /// Every text run and field is an origin, and the map says which output bytes each
    /// wrote, as the Jinja path's markers do.
    #[test]
    fn the_source_map_covers_text_and_fields() {
        let mut renderer = Renderer::new(RenderSettings::new(
            JinjaDialect::Jinja2,
            std::env::temp_dir(),
        ))
        .unwrap();
        let template = renderer
            .prepare_as(
                "t.txt",
                "  Hi {name}!\n{{x}} {n:>4}",
                TemplateFormat::Format,
            )
            .unwrap();
        let context = Value::from_pairs(vec![
            (Value::from("name"), Value::from("Ada")),
            (Value::from("n"), Value::from(7)),
        ]);
        let render = renderer
            .render(&template, &context, Clock::synthetic(0))
            .unwrap();
        assert_eq!(render.text, "  Hi Ada!\n{x}    7");
        let map = render.map.unwrap();
        let origin = |offset| {
            let (event, _) = map.origin_at(offset).unwrap();
            let id = match event {
                MarkEvent::Open(id) | MarkEvent::Close(id) | MarkEvent::Text(id) => id,
            };
            renderer.origins().get(id as usize).unwrap()
        };
        assert_eq!(&*origin(2).text, "Hi ");
        assert_eq!(&*origin(5).text, "{name}");
        assert_eq!(origin(5).kind, OriginKind::Expression);
        assert_eq!(&*origin(10).text, "!\n{{x}} ");
        assert_eq!((origin(16).line, origin(16).column), (2, 7));
    }
    /// A Mustache section renders its body once per item, and each pass maps back to the
    /// same places of the template: the item's field to its tag, the body's text to its run.
    #[test]
    fn a_mustache_loop_maps_every_pass_to_its_tags() {
        let mut renderer = Renderer::new(RenderSettings::new(
            JinjaDialect::Jinja2,
            std::env::temp_dir(),
        ))
        .unwrap();
        let source = "Docs:\n{{#docs}}\n- {{title}}\n{{/docs}}\nEnd";
        let template = renderer
            .prepare_as("t.txt", source, TemplateFormat::Mustache)
            .unwrap();
        let docs = Value::from(vec![
            Value::from_pairs(vec![(Value::from("title"), Value::from("A<b"))]),
            Value::from_pairs(vec![(Value::from("title"), Value::from("C"))]),
        ]);
        let context = Value::from_pairs(vec![(Value::from("docs"), docs)]);
        let render = renderer
            .render(&template, &context, Clock::synthetic(0))
            .unwrap();
        assert_eq!(render.text, "Docs:\n- A&lt;b\n- C\nEnd");
        let map = render.map.unwrap();
        let origin = |offset| {
            let (event, _) = map.origin_at(offset).unwrap();
            let id = match event {
                MarkEvent::Open(id) | MarkEvent::Close(id) | MarkEvent::Text(id) => id,
            };
            renderer.origins().get(id as usize).unwrap()
        };
        // "- " of each pass, then each title, at line 3.
        for (offset, text) in [(6, "- "), (8, "{{title}}"), (15, "- "), (17, "{{title}}")] {
            assert_eq!(&*origin(offset).text, text, "byte {offset}");
            assert_eq!(origin(offset).line, 3, "byte {offset}");
        }
        assert_eq!(&*origin(19).text, "End");
    }

    /// Samples read a Mustache template as Jinja: a section whose body reads names is a
    /// loop over objects, one that reads none a condition, an inverted one `if not`.
    #[test]
    fn a_mustache_template_reads_as_jinja_loops_and_conditions() {
        let origins = OriginTable::default();
        let name: Arc<str> = Arc::from("t.txt");
        let source = "{{#docs}}{{title}}{{#tags}}{{.}}{{/tags}}{{/docs}}{{#flag}}x{{/flag}}{{^empty}}y{{/empty}}{{a.b}}";
        let native = prepare(TemplateFormat::Mustache, &name, source, &origins).unwrap();
        assert_eq!(
            native.jinja_reading(),
            "{% for item_1 in docs %}\n{{ item_1.title }}\n{% for item_2 in item_1.tags %}\n{{ item_2 }}\n{% endfor %}\n{% endfor %}\n{% if flag %}\n{% endif %}\n{% if not empty %}\n{% endif %}\n{{ a.b }}\n"
        );
        assert_eq!(native.first_use("docs"), Some(0..9));
        // A name that is no Jinja name reads under its Jinja name, as samples write it.
        let mut renderer = Renderer::new(RenderSettings::new(
            JinjaDialect::Jinja2,
            std::env::temp_dir(),
        ))
        .unwrap();
        let template = renderer
            .prepare_as("t.txt", "{{#none}}{{.}}{{/none}}", TemplateFormat::Mustache)
            .unwrap();
        let context = Value::from_pairs(vec![(Value::from("none_"), Value::from(vec!["a"]))]);
        let render = renderer.render(&template, &context, Clock::synthetic(0));
        assert_eq!(render.unwrap().text, "a");
        assert_eq!(
            native.first_use("a.b"),
            Some(source.len() - 7..source.len())
        );
    }
}
