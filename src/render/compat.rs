//! Python Jinja2 syntax that minijinja's parser rejects, rewritten before parsing where it
//! is cheap. Every rewrite keeps the source the same length, byte for byte, so that the
//! positions in diagnostics still point at what the user wrote.

use minijinja::machinery::{tokenize, Token};
use minijinja::syntax::SyntaxConfig;
use std::borrow::Cow;

/// Applies every rewrite; the source comes back unchanged when none applies.
pub fn python_syntax<'s>(source: &'s str, syntax: &SyntaxConfig) -> Cow<'s, str> {
    let tuples = bare_tuples(source, syntax);
    // A template that mutates a list or dict gets literals it can mutate.
    if !super::mutable::mutates(&tuples, syntax) {
        return tuples;
    }
    match super::mutable::rewrite_literals(&tuples, syntax) {
        Cow::Borrowed(_) => tuples,
        Cow::Owned(rewritten) => Cow::Owned(rewritten),
    }
}

/// `{{ a[0], a[1] }}` prints the tuple `('x', 'y')` in Jinja2; minijinja wants parentheses.
/// The blanks just inside the delimiters become them: `{{(a[0], a[1])}}`. An expression
/// without a blank on both sides is left alone (and fails to parse as before).
fn bare_tuples<'s>(source: &'s str, syntax: &SyntaxConfig) -> Cow<'s, str> {
    if !source.contains(',') {
        return Cow::Borrowed(source);
    }
    let mut rewrites: Vec<(usize, usize)> = Vec::new();
    let mut expression: Option<usize> = None;
    let mut depth = 0usize;
    let mut top_level_comma = false;
    for item in tokenize(source, false, syntax.clone()) {
        // A source that does not lex is for the parser to report.
        let Ok((token, span)) = item else {
            return Cow::Borrowed(source);
        };
        match token {
            Token::VariableStart => {
                expression = Some(span.end_offset as usize);
                depth = 0;
                top_level_comma = false;
            }
            Token::ParenOpen | Token::BracketOpen | Token::BraceOpen => depth += 1,
            Token::ParenClose | Token::BracketClose | Token::BraceClose => {
                depth = depth.saturating_sub(1)
            }
            Token::Comma if depth == 0 && expression.is_some() => top_level_comma = true,
            Token::VariableEnd => {
                if let Some(inner_start) = expression.take() {
                    let inner_end = span.start_offset as usize;
                    if top_level_comma {
                        if let Some(blanks) = blanks_around(source, inner_start, inner_end) {
                            rewrites.push(blanks);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    if rewrites.is_empty() {
        return Cow::Borrowed(source);
    }
    let mut bytes = source.as_bytes().to_vec();
    for (open, close) in rewrites {
        bytes[open] = b'(';
        bytes[close] = b')';
    }
    // Only ASCII blanks were replaced by ASCII, so this is still UTF-8.
    Cow::Owned(String::from_utf8(bytes).unwrap_or_else(|_| source.to_owned()))
}

/// The byte offsets of an ASCII blank right after `start` and right before `end`.
fn blanks_around(source: &str, start: usize, end: usize) -> Option<(usize, usize)> {
    let inner = source.get(start..end)?;
    let bytes = inner.as_bytes();
    let is_blank = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    if bytes.len() < 2 || !is_blank(bytes.first()?) || !is_blank(bytes.last()?) {
        return None;
    }
    Some((start, end - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(source: &str) -> String {
        python_syntax(source, &SyntaxConfig::default()).into_owned()
    }

    #[test]
    fn bare_tuples_get_parentheses_and_keep_their_length() {
        assert_eq!(rewrite("A {{ a[0], a[1] }} B"), "A {{(a[0], a[1])}} B");
        assert_eq!(rewrite("{{- x, y -}}"), "{{-(x, y)-}}");
        assert_eq!(rewrite("{{ 'é', 1 }}"), "{{('é', 1)}}");
        for unchanged in [
            "{{ f(a, b) }}",
            "{{ [1, 2] }}",
            "{{ {'a': 1, 'b': 2} }}",
            "{{a, b}}",
            "{% set x = 1, 2 %}{{ x }}",
            "text, with commas",
            "{{ unclosed, ",
        ] {
            assert_eq!(rewrite(unchanged), unchanged);
        }
    }

    #[test]
    fn a_rewritten_tuple_renders_like_jinja2() {
        let env = minijinja::Environment::new();
        let source = rewrite("{{ a[0], a[1] }}");
        let out = env
            .render_str(&source, minijinja::context! { a => vec!["x", "y"] })
            .unwrap();
        assert_eq!(out, "('x', 'y')");
        let value = env
            .compile_expression("(a[0], a[1])")
            .unwrap()
            .eval(minijinja::context! { a => vec!["x", "y"] })
            .unwrap();
        assert_eq!(super::super::python::py_str(&value), "('x', 'y')");
    }
}
