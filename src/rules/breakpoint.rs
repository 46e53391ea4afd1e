//! What both divergence rules need: where the shared prefix breaks in the checked
//! template, what broke it, and whether that looks volatile.

use super::fields::{Cadence, FieldClass};
use super::text_difference::{drift_at, same_json_at, Drift};
use super::{FieldMatch, Label, RuleContext};
use crate::analyse::same_data::same_data_different_text;
use crate::analyse::Divergence;
use crate::fmt::shorten;
use crate::render::instrument::OriginKind;
use regex::Regex;
use std::ops::Range;
use std::sync::OnceLock;

#[derive(Clone)]
pub struct Breakpoint {
    /// Byte span in the checked template.
    pub span: Range<usize>,
    /// The template source there, e.g. `{{ now }}`, trimmed for messages.
    pub snippet: String,
    pub kind: OriginKind,
    /// Why it looks volatile, if it does.
    pub volatile: Option<FieldMatch>,
    /// The request's input it prints, if it does (`{{ question }}`): a PL002 that says so.
    pub input: Option<FieldMatch>,
    /// The variable it prints whose cadence synthesized samples assumed, by its path
    /// (`comments.body`): a PL002 that says so, and how to declare it per deploy.
    pub assumed: Option<String>,
    /// The values are equal JSON data serialized differently (PL003).
    pub same_json: bool,
    /// The renders differ there only in line endings or trailing whitespace (PL004).
    pub drift: Option<Drift>,
    pub related: Vec<Label>,
}

impl Breakpoint {
    /// The template's breakpoint, located on the first call and remembered in `ctx` for
    /// the other rules that read it (it classifies values and compares JSON: not free).
    pub fn find(ctx: &RuleContext) -> Option<Breakpoint> {
        ctx.breakpoint.get_or_init(|| Self::locate(ctx)).clone()
    }

    fn locate(ctx: &RuleContext) -> Option<Breakpoint> {
        let divergence = ctx.analysis.divergence.as_ref()?;
        let own = ctx.template.name.as_ref();
        let source = ctx.template.source.as_ref();
        let Some(cause) = &divergence.cause else {
            let pair = diverging_pair(ctx, divergence);
            return Some(Breakpoint {
                span: 0..0,
                snippet: String::new(),
                kind: OriginKind::Text,
                volatile: None,
                input: None,
                assumed: None,
                same_json: pair.is_some_and(|(a, b)| same_json_at(a, b, divergence.offset)),
                drift: pair.and_then(|(a, b)| drift_at(a, b, divergence.offset)),
                related: Vec::new(),
            });
        };
        let culprit = ctx.origins.get(cause.origin as usize)?;
        let mut related = Vec::new();
        let span = if culprit.template.as_ref() == own {
            culprit.span.clone()
        } else {
            // The output comes from an included file: point at the include that brought it
            // in, or else at the nearest place of this template that led there.
            related.push(Label {
                template: culprit.template.to_string(),
                span: culprit.span.clone(),
                text: format!(
                    "{}:{}: `{}` writes the divergent output",
                    culprit.line,
                    culprit.column,
                    shorten(culprit.text.trim())
                ),
            });
            include_tag_for(ctx, source, own, &culprit.template)
                .or_else(|| {
                    cause
                        .enclosing
                        .iter()
                        .rev()
                        .chain(cause.anchor.iter())
                        .filter_map(|id| ctx.origins.get(*id as usize))
                        .find(|o| o.template.as_ref() == own)
                        .map(|o| o.span)
                })
                .unwrap_or(0..0)
        };
        let snippet = shorten(culprit.text.trim());
        let (volatile, input) = match culprit.kind {
            OriginKind::Expression => (
                classify(ctx, &culprit.text, &cause.values),
                classify_input(ctx, &culprit.text),
            ),
            OriginKind::Text => (None, None),
        };
        let assumed = match (culprit.kind, &volatile, &input) {
            (OriginKind::Expression, None, None) => {
                classify_assumed(ctx, &culprit.text, &cause.values)
            }
            _ => None,
        };
        let pair = diverging_pair(ctx, divergence);
        let same_json = (cause.values.len() > 1 && same_json_data(&cause.values))
            || pair.is_some_and(|(a, b)| same_json_at(a, b, divergence.offset));
        let drift = pair.and_then(|(a, b)| drift_at(a, b, divergence.offset));
        Some(Breakpoint {
            span,
            snippet,
            kind: culprit.kind,
            volatile,
            input,
            assumed,
            same_json,
            drift,
            related,
        })
    }

    /// How the culprit is named in messages.
    pub fn subject(&self) -> String {
        match self.kind {
            OriginKind::Expression => format!("`{}`", self.snippet),
            OriginKind::Text => {
                "the text here (a branch or loop that differs between renders)".into()
            }
        }
    }
}

/// Why an expression's output looks volatile, from the names it reads or else its values;
/// the cadence is refined by what the expression shows (a date-only `strftime` format,
/// date-shaped values change once a day).
pub fn classify(ctx: &RuleContext, expression: &str, values: &[String]) -> Option<FieldMatch> {
    let snippet = shorten(expression.trim());
    let mut found = variable_paths(&snippet)
        .iter()
        .filter_map(|name| ctx.fields.classify_name(name))
        .find(|found| found.class == FieldClass::Volatile)
        .or_else(|| values.iter().find_map(|v| ctx.fields.classify_value(v)))?;
    if found.cadence == Cadence::Request && shows_only_dates(ctx, expression, values) {
        found.cadence = Cadence::Day;
    }
    Some(found)
}

/// The request's input an expression prints (`{{ problem_statement }}`,
/// `{{ m.content }}` in a loop over `messages`), by the names it reads.
pub fn classify_input(ctx: &RuleContext, expression: &str) -> Option<FieldMatch> {
    let snippet = shorten(expression.trim());
    variable_paths(&snippet)
        .iter()
        .filter_map(|name| ctx.fields.classify_name(name))
        .find(|found| found.class == FieldClass::Input)
}

/// The variable an expression prints whose cadence the synthesized samples assumed, found
/// by the values it printed (`{{ c.body }}` printed `comments.body`'s): its path, or `None`
/// when the samples are the user's word or it prints no such value.
pub fn classify_assumed(ctx: &RuleContext, expression: &str, values: &[String]) -> Option<String> {
    if ctx.assumed.is_empty() {
        return None;
    }
    let found: Vec<&str> = ctx
        .assumed
        .iter()
        .filter(|place| values.iter().any(|value| value.contains(&place.text)))
        .map(|place| place.path.as_str())
        .collect();
    // Two places can print alike (`repo.title`, `comments.title`): the one whose last part
    // the expression reads.
    let leaves: Vec<String> = variable_paths(&shorten(expression.trim()))
        .iter()
        .map(|path| path.rsplit('.').next().unwrap_or(path).to_owned())
        .collect();
    found
        .iter()
        .find(|path| {
            leaves
                .iter()
                .any(|leaf| path.rsplit('.').next() == Some(leaf))
        })
        .or(found.first())
        .map(|path| (*path).to_owned())
}

/// A `strftime` format without time-of-day fields, or values that are all dates.
fn shows_only_dates(ctx: &RuleContext, expression: &str, values: &[String]) -> bool {
    static FORMAT: OnceLock<Regex> = OnceLock::new();
    let format = FORMAT.get_or_init(|| {
        Regex::new(r#"strftime(?:_now)?\s*\(\s*(?:"([^"]*)"|'([^']*)')"#).expect("valid regex")
    });
    if let Some(caps) = format.captures(expression) {
        let fmt = caps.get(1).or(caps.get(2)).map_or("", |m| m.as_str());
        return date_only_format(fmt);
    }
    !values.is_empty()
        && values.iter().all(|v| {
            ctx.fields
                .classify_value(v)
                .is_some_and(|m| m.cadence == Cadence::Day)
        })
}

/// True when a strftime format prints no time of day (`%d %B %Y`, `%Y-%m-%d`, `%A`).
pub fn date_only_format(format: &str) -> bool {
    const TIME_OF_DAY: &[char] = &[
        'H', 'I', 'M', 'S', 'p', 'P', 'f', 'T', 'X', 'c', 's', 'R', 'r', 'k', 'l',
    ];
    let mut chars = format.chars();
    let mut any_field = false;
    while let Some(c) = chars.next() {
        if c != '%' {
            continue;
        }
        // Flags and widths (`%-d`, `%3f`, `%.3f`) come before the field letter.
        let field = chars
            .by_ref()
            .find(|c| !matches!(c, '-' | '_' | '0'..='9' | '.' | '#' | '^' | ':'));
        match field {
            Some('%') => {}
            Some(letter) if TIME_OF_DAY.contains(&letter) => return false,
            Some(_) => any_field = true,
            None => {}
        }
    }
    any_field
}

/// The span of the `{% include %}` (or import) tag in `source` that names `target`.
pub(super) fn include_tag_for(
    ctx: &RuleContext,
    source: &str,
    own: &str,
    target: &str,
) -> Option<Range<usize>> {
    let includes = ctx.template.includes();
    crate::render::template_references(source)
        .into_iter()
        .find(|r| includes.resolve(own, &r.name).found().as_deref() == Some(target))
        .map(|r| r.tag)
}

/// Dotted variable paths an expression reads, before any filter: `{{ user.name | upper }}` → `user.name`.
pub fn variable_paths(expression: &str) -> Vec<String> {
    static STRING: OnceLock<Regex> = OnceLock::new();
    static PATH: OnceLock<Regex> = OnceLock::new();
    let string = STRING
        .get_or_init(|| Regex::new(r#""([^"\\]|\\.)*"|'([^'\\]|\\.)*'"#).expect("valid regex"));
    let path = PATH.get_or_init(|| {
        Regex::new(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*").expect("valid regex")
    });
    const KEYWORDS: [&str; 14] = [
        "and", "or", "not", "in", "is", "if", "else", "true", "false", "none", "True", "False",
        "None", "loop",
    ];
    let inner = expression
        .trim_start_matches("{{")
        .trim_end_matches("}}")
        .trim_matches(['-', '+']);
    let without_strings = string.replace_all(inner, "\"\"");
    let before_filters = without_strings.split('|').next().unwrap_or_default();
    path.find_iter(before_filters)
        .map(|m| m.as_str().to_owned())
        .filter(|p| !KEYWORDS.contains(&p.as_str()))
        .collect()
}

/// Equal JSON data (keys in any order, lists as multisets), different text.
fn same_json_data(values: &[String]) -> bool {
    same_data_different_text(values)
}

/// The texts of render 0 and of the render that first differs from it.
fn diverging_pair<'a>(
    ctx: &RuleContext<'a>,
    divergence: &Divergence,
) -> Option<(&'a str, &'a str)> {
    let renders = &ctx.analysis.renders;
    Some((renders.first()?, renders.get(divergence.other)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_skip_filters_strings_and_keywords() {
        assert_eq!(variable_paths("{{ user.name | upper }}"), ["user.name"]);
        assert_eq!(
            variable_paths("{{- strftime_now(\"%Y-%m-%d\") -}}"),
            ["strftime_now"]
        );
        assert_eq!(variable_paths("{{ a if not b else 'x' }}"), ["a", "b"]);
    }

    #[test]
    fn date_only_formats() {
        for format in ["%d %B %Y", "%Y-%m-%d", "%A, %-d %b", "%F", "%x", "100%% %Y"] {
            assert!(date_only_format(format), "{format}");
        }
        for format in [
            "%Y-%m-%d %H:%M",
            "%c",
            "%T",
            "%Y-%m-%dT%H:%M:%S%.3fZ",
            "%s",
            "plain",
            "",
        ] {
            assert!(!date_only_format(format), "{format}");
        }
    }

    #[test]
    fn json_key_order_is_same_data() {
        assert!(same_json_data(&[
            r#"{"a": 1, "b": 2}"#.into(),
            r#"{"b": 2, "a": 1}"#.into()
        ]));
        assert!(!same_json_data(&[
            r#"{"a": 1}"#.into(),
            r#"{"a": 2}"#.into()
        ]));
        assert!(!same_json_data(&["x".into(), "y".into()]));
    }
}
