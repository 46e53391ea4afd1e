//! Mustache rendered as chevron 0.14 renders it (`chevron/renderer.py`): a flat walk of
//! the tokens over a stack of scopes, a list section rendering its tokens once per item,
//! any other section pushing its value, and a falsy scope skipping what it holds; values
//! print as Python's `str()`, HTML-escaped (`&`, `"`, `<`, `>`) unless in `{{{ }}}`/`{{& }}`.

use super::engine::{
    equals_zero, jinja_path, py_index, py_int, py_key, truthy, Failure, Output, Reading,
};
use super::Builder;
use crate::formats::mustache::{Kind, Template, Token};
use crate::formats::SyntaxError;
use minijinja::value::{Value, ValueKind};

/// A Mustache template with its tokens' origins.
#[derive(Debug)]
pub struct Mustache {
    tokens: Vec<Token>,
    /// Per token: a literal's text origin, a variable's expression origin.
    origins: Vec<Origin>,
}

#[derive(Debug, Clone, Copy)]
enum Origin {
    None,
    Text(Option<(u32, usize)>),
    Expression(u32),
}

impl Mustache {
    pub(super) fn new(template: Template, builder: &Builder<'_>) -> Result<Self, SyntaxError> {
        if let Some(partial) = template.partials().next() {
            return Err(SyntaxError::new(
                partial.span.start,
                format!(
                    "the partial `{{{{> {}}}}}` is not rendered: prefixlint reads one template at a time and never loads partials",
                    partial.key
                ),
            ));
        }
        let origins = template
            .tokens
            .iter()
            .map(|token| match token.kind {
                Kind::Literal => Origin::Text(builder.text_origin(token.span.clone())),
                Kind::Variable | Kind::NoEscape => Origin::Expression(
                    builder.register(token.span.clone(), super::OriginKind::Expression),
                ),
                _ => Origin::None,
            })
            .collect();
        Ok(Mustache {
            tokens: template.tokens,
            origins,
        })
    }

    pub fn render(&self, context: &Value, out: &mut Output) -> Result<(), Failure> {
        let mut scopes = vec![context.clone()];
        self.render_tokens(0..self.tokens.len(), &mut scopes, out)
    }

    /// chevron's `render` over `tokens[range]`; `scopes` has the innermost scope last.
    fn render_tokens(
        &self,
        range: std::ops::Range<usize>,
        scopes: &mut Vec<Value>,
        out: &mut Output,
    ) -> Result<(), Failure> {
        let mut at = range.start;
        while at < range.end {
            let token = &self.tokens[at];
            out.spend(&token.span)?;
            // An end tag that closed a list section's early end (chevron counts only
            // sections of the same name, not inverted ones) pops one scope too many.
            let Some(current) = scopes.last().cloned() else {
                return Err(Failure::new(
                    token.span.clone(),
                    "an end tag before this one closed more sections than were open (chevron fails here: `list index out of range`)",
                ));
            };
            match token.kind {
                Kind::End => {
                    scopes.pop();
                }
                _ if !truthy(&current) && scopes.len() != 1 => {
                    if matches!(token.kind, Kind::Section | Kind::Inverted) {
                        scopes.push(Value::from(false));
                    }
                }
                Kind::Literal => {
                    let Origin::Text(origin) = self.origins[at] else {
                        unreachable!("a literal has a text origin")
                    };
                    out.text(origin, &token.key, &token.span)?;
                }
                Kind::Variable | Kind::NoEscape => {
                    let Origin::Expression(origin) = self.origins[at] else {
                        unreachable!("a variable has an expression origin")
                    };
                    let mut thing = get_key(&token.key, scopes);
                    if token.kind == Kind::Variable
                        && token.key == "."
                        && thing.kind() == ValueKind::Bool
                        && thing.is_true()
                        && scopes.len() >= 2
                    {
                        thing = scopes[scopes.len() - 2].clone();
                    }
                    let text = super::super::python::py_str(&thing);
                    let text = if token.kind == Kind::Variable {
                        html_escape(&text)
                    } else {
                        text
                    };
                    out.field(origin, &text, &token.span)?;
                }
                Kind::Section => {
                    let scope = get_key(&token.key, scopes);
                    if matches!(scope.kind(), ValueKind::Seq | ValueKind::Iterable) {
                        let end = self.section_end(at, range.end, &token.key);
                        out.enter(&token.span)?;
                        for item in scope.try_iter().into_iter().flatten() {
                            let mut inner = scopes.clone();
                            inner.push(item);
                            self.render_tokens(at + 1..end, &mut inner, out)?;
                        }
                        out.leave();
                        at = end + 1;
                        continue;
                    }
                    scopes.push(scope);
                }
                Kind::Inverted => {
                    let scope = get_key(&token.key, scopes);
                    scopes.push(Value::from(!truthy(&scope)));
                }
                Kind::Partial | Kind::SetDelimiter | Kind::UnclosedNoEscape => {}
            }
            at += 1;
        }
        Ok(())
    }

    /// Where chevron stops collecting a list section's tokens: the first `{{/key}}` not
    /// matched by a `{{#key}}` after `start` (sections only: an inverted section of the
    /// same name is not counted, as chevron does not count it).
    fn section_end(&self, start: usize, end: usize, key: &str) -> usize {
        let mut same = 0usize;
        for at in start + 1..end {
            let token = &self.tokens[at];
            if token.key != key {
                continue;
            }
            match token.kind {
                Kind::Section => same += 1,
                Kind::End if same == 0 => return at,
                Kind::End => same -= 1,
                _ => {}
            }
        }
        end
    }

    /// Sections read as loops where they read names (a list of objects fits them), as
    /// conditions where they read none; inverted sections as `if not`.
    pub fn reading(&self) -> Reading {
        let mut reading = Reading::default();
        // Which sections read a name before their end.
        let mut reads = vec![false; self.tokens.len()];
        let mut open: Vec<usize> = Vec::new();
        for (at, token) in self.tokens.iter().enumerate() {
            match token.kind {
                Kind::Section | Kind::Inverted => {
                    if let Some(&outer) = open.last() {
                        reads[outer] = true;
                    }
                    open.push(at);
                }
                Kind::End => {
                    open.pop();
                }
                Kind::Variable | Kind::NoEscape => {
                    if let Some(&outer) = open.last() {
                        reads[outer] = true;
                    }
                }
                _ => {}
            }
        }
        // Per open section: its loop variable, if it reads as a loop.
        let mut frames: Vec<(Option<String>, &'static str)> = Vec::new();
        for (at, token) in self.tokens.iter().enumerate() {
            let item = frames.iter().rev().find_map(|(var, _)| var.clone());
            let path = |key: &str| -> Option<String> {
                if key == "." {
                    return item.clone();
                }
                let parts = key.split('.');
                Some(match &item {
                    Some(var) => format!("{var}.{}", jinja_path(parts)),
                    None => jinja_path(parts),
                })
            };
            match token.kind {
                Kind::Variable | Kind::NoEscape => {
                    if let Some(path) = path(&token.key) {
                        if item.is_none() {
                            reading.used(&path, &token.span);
                        }
                        reading.push(&format!("{{{{ {path} }}}}\n"));
                    }
                }
                Kind::Section | Kind::Inverted => {
                    let path = path(&token.key).unwrap_or_else(|| "none".to_owned());
                    if item.is_none() {
                        reading.used(&path, &token.span);
                    }
                    if token.kind == Kind::Section && reads[at] {
                        let var = reading.loop_variable();
                        reading.push(&format!("{{% for {var} in {path} %}}\n"));
                        frames.push((Some(var), "{% endfor %}\n"));
                    } else {
                        let not = if token.kind == Kind::Inverted {
                            "not "
                        } else {
                            ""
                        };
                        reading.push(&format!("{{% if {not}{path} %}}\n"));
                        frames.push((None, "{% endif %}\n"));
                    }
                }
                Kind::End => {
                    if let Some((_, close)) = frames.pop() {
                        reading.push(close);
                    }
                }
                _ => {}
            }
        }
        reading
    }
}

/// chevron's `_get_key`: the key (dotted) in the innermost scope that has it; a falsy
/// value other than `0`/`False` reads as the empty string, and so does a missing key.
fn get_key(key: &str, scopes: &[Value]) -> Value {
    if key == "." {
        return scopes.last().cloned().unwrap_or_default();
    }
    match find_key(key, scopes) {
        Some(value) => value,
        // Samples synthesized from the Jinja reading name a root that is no Jinja name by
        // its Jinja name (`none` → `none_`), as the `{var}` formats read it.
        None => {
            let (root, rest) = key
                .split_once('.')
                .map_or((key, None), |(r, t)| (r, Some(t)));
            let renamed = super::jinja_name(root);
            match (renamed != root, scopes.first()) {
                (true, Some(sample)) => {
                    let key = rest.map_or(renamed.clone(), |rest| format!("{renamed}.{rest}"));
                    find_key(&key, std::slice::from_ref(sample)).unwrap_or_else(|| Value::from(""))
                }
                _ => Value::from(""),
            }
        }
    }
}

/// chevron's scope search: the value of `key` in the innermost scope that has it (a falsy
/// value other than `0`/`False` as the empty string), or `None` where no scope has it.
fn find_key(key: &str, scopes: &[Value]) -> Option<Value> {
    'scopes: for scope in scopes.iter().rev() {
        let mut value = scope.clone();
        for child in key.split('.') {
            let next = match value.kind() {
                ValueKind::Map => py_key(&value, child),
                ValueKind::Seq | ValueKind::Iterable | ValueKind::String => {
                    py_int(child).and_then(|index| py_index(&value, index))
                }
                _ => None,
            };
            match next {
                Some(next) => value = next,
                None => continue 'scopes,
            }
        }
        if equals_zero(&value) || truthy(&value) {
            return Some(value);
        }
        return Some(Value::from(""));
    }
    None
}

/// chevron's `_html_escape`: `&` first, then `"`, `<`, `>` (not `'`).
fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            _ => out.push(c),
        }
    }
    out
}
