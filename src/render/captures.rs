//! Whether a template's output can be captured as a value before it is written: a
//! `{% set %}` block, a `{% filter %}` block, a macro's or `caller()`'s return value used as
//! a value, `super()`, a recursive loop's `loop(…)`. Where nothing can be, the instrumented
//! render writes exactly the plain render's text with the markers in between, so
//! [`super::Renderer::render`] takes the text from it and renders once. The reading is
//! lexical and errs towards "captured": a false "captured" costs a second render, a false
//! "not captured" would cost a wrong text, so anything this module does not recognise
//! counts as captured.

use super::stand_ins::CallableKind;
use minijinja::machinery::{tokenize, Token};
use minijinja::syntax::SyntaxConfig;
use std::collections::BTreeSet;

/// What one source shows, for the verdict over the template and what it reaches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceFacts {
    /// A construct that captures output, or one this reading cannot follow (a name to
    /// include that is not a literal, a source that does not lex).
    pub captures: bool,
    /// Names bound to macros or to imported modules (`{% macro NAME %}`, `import … as NAME`,
    /// `from … import NAME`).
    pub macro_names: BTreeSet<String>,
    /// Names read as values anywhere but at the head of a `{{ name(…) }}` or
    /// `{{ name.attr(…) }}` printed whole; attribute names after a dot are not listed.
    pub value_names: BTreeSet<String>,
    /// The templates it includes, imports or extends, by the literal name written.
    pub references: Vec<String>,
    /// The filters and tests it names, sorted (what `stand_ins::named_callables` returns).
    pub callables: Vec<(CallableKind, String)>,
}

/// Whether the output of a template whose reachable sources show `facts` can be captured:
/// a capturing construct in any of them, or a macro name read as a value in any of them
/// (an included template sees the includer's imports, so the names are pooled).
pub fn any_captured<'f>(facts: impl IntoIterator<Item = &'f SourceFacts> + Clone) -> bool {
    if facts.clone().into_iter().any(|f| f.captures) {
        return true;
    }
    let macros: BTreeSet<&str> = facts
        .clone()
        .into_iter()
        .flat_map(|f| f.macro_names.iter().map(String::as_str))
        .collect();
    !macros.is_empty()
        && facts
            .into_iter()
            .any(|f| f.value_names.iter().any(|n| macros.contains(n.as_str())))
}

/// Reads one source (as the environment parses it).
pub fn source_facts(source: &str, syntax: &SyntaxConfig) -> SourceFacts {
    let mut reader = FactsReader::default();
    for item in tokenize(source, false, syntax.clone()) {
        match item {
            Ok((token, _)) => reader.push(token),
            Err(_) => return SourceFacts::unreadable(),
        }
    }
    reader.finish()
}

impl SourceFacts {
    /// A source that does not lex: counted as captured, no callables named (as
    /// [`super::stand_ins::named_callables`] names none).
    pub fn unreadable() -> SourceFacts {
        SourceFacts {
            captures: true,
            ..SourceFacts::default()
        }
    }
}

/// Reads a source's facts from its tokens as a lexer yields them, so that a pass over the
/// tokens for something else (instrumenting) reads them too.
#[derive(Default)]
pub struct FactsReader<'s> {
    facts: SourceFacts,
    /// The open tag (`Some(true)` a block, `Some(false)` a variable) and its tokens so far.
    open: Option<bool>,
    tag: Vec<Token<'s>>,
}

impl<'s> FactsReader<'s> {
    pub fn push(&mut self, token: Token<'s>) {
        match (self.open, &token) {
            (None, Token::BlockStart) => self.open = Some(true),
            (None, Token::VariableStart) => self.open = Some(false),
            (Some(true), Token::BlockEnd) | (Some(false), Token::VariableEnd) => self.close(),
            (Some(_), _) => self.tag.push(token),
            (None, _) => {}
        }
    }

    fn close(&mut self) {
        let Some(block) = self.open.take() else {
            return;
        };
        callables_in(&self.tag, block, &mut self.facts.callables);
        if block {
            block_tag(&self.tag, &mut self.facts);
        } else {
            variable_tag(&self.tag, &mut self.facts);
        }
        self.tag.clear();
    }

    pub fn finish(mut self) -> SourceFacts {
        self.close();
        self.facts.callables.sort();
        self.facts.callables.dedup();
        self.facts
    }
}

/// The filters and tests a tag names, as [`super::stand_ins::named_callables`] finds them
/// (a name after `|`, after `{% filter`, after `is` or `is not`).
fn callables_in(tag: &[Token<'_>], block: bool, found: &mut Vec<(CallableKind, String)>) {
    for (i, token) in tag.iter().enumerate() {
        let Token::Ident(name) = token else {
            continue;
        };
        let before = |back: usize| i.checked_sub(back).map(|at| &tag[at]);
        let kind = match (before(2), before(1)) {
            (_, Some(Token::Pipe)) => Some(CallableKind::Filter),
            (None, Some(Token::Ident("filter"))) if block && i == 1 => Some(CallableKind::Filter),
            (_, Some(Token::Ident("is"))) if *name != "not" => Some(CallableKind::Test),
            (Some(Token::Ident("is")), Some(Token::Ident("not"))) => Some(CallableKind::Test),
            _ => None,
        };
        if let Some(kind) = kind {
            found.push((kind, (*name).to_owned()));
        }
    }
}

/// `{{ … }}`: a call printed whole (`name(…)`, `name.attr.attr(…)`, nothing after its
/// closing parenthesis) does not list its head name; every other name read is listed.
fn variable_tag(tag: &[Token<'_>], facts: &mut SourceFacts) {
    let skip_head = printed_call(tag);
    values_in(tag, usize::from(skip_head), facts);
}

/// Whether `tag` is `name(.attr)*( … )` and nothing else, parentheses balanced.
fn printed_call(tag: &[Token<'_>]) -> bool {
    let mut at = 0;
    if !matches!(tag.first(), Some(Token::Ident(_))) {
        return false;
    }
    at += 1;
    while let (Some(Token::Dot), Some(Token::Ident(_))) = (tag.get(at), tag.get(at + 1)) {
        at += 2;
    }
    if !matches!(tag.get(at), Some(Token::ParenOpen)) {
        return false;
    }
    let mut depth = 0usize;
    for (i, token) in tag.iter().enumerate().skip(at) {
        match token {
            Token::ParenOpen => depth += 1,
            Token::ParenClose => {
                depth -= 1;
                if depth == 0 {
                    return i + 1 == tag.len();
                }
            }
            _ => {}
        }
    }
    false
}

/// Lists the names read in `tag` from index `from` on (not those after a dot), and marks
/// the names no template may use without capturing.
fn values_in(tag: &[Token<'_>], from: usize, facts: &mut SourceFacts) {
    for (i, token) in tag.iter().enumerate().skip(from) {
        let Token::Ident(name) = token else {
            continue;
        };
        if i > 0 && matches!(tag[i - 1], Token::Dot) {
            continue;
        }
        // `super()` and `self.block()` return a block's output; `caller()` a call block's;
        // `loop(…)` in a recursive loop the loop's.
        if matches!(*name, "super" | "self" | "caller" | "recursive") {
            facts.captures = true;
        }
        facts.value_names.insert((*name).to_owned());
    }
}

fn block_tag(tag: &[Token<'_>], facts: &mut SourceFacts) {
    let Some(Token::Ident(keyword)) = tag.first() else {
        values_in(tag, 0, facts);
        return;
    };
    match *keyword {
        // Their bodies become values.
        "filter" | "call" => facts.captures = true,
        // `{% set x %}…{% endset %}` (no `=`) captures; `{% set x = … %}` does not.
        "set" if !tag.iter().any(|t| matches!(t, Token::Assign)) => facts.captures = true,
        "macro" => {
            if let Some(Token::Ident(name)) = tag.get(1) {
                facts.macro_names.insert((*name).to_owned());
            }
            // The parameters' defaults are read as values.
            values_in(tag, 2, facts);
        }
        "include" | "extends" | "import" | "from" => reference_tag(tag, facts),
        _ => values_in(tag, 1, facts),
    }
}

/// `{% include "name" [ignore missing] [with[out] context] %}`, `{% extends "name" %}`,
/// `{% import "name" as alias [with[out] context] %}`, `{% from "name" import a, b as c %}`:
/// anything else (a name that is not a literal, a list of names) counts as captured.
fn reference_tag(tag: &[Token<'_>], facts: &mut SourceFacts) {
    let (Some(Token::Ident(keyword)), Some(Token::Str(name))) = (tag.first(), tag.get(1)) else {
        facts.captures = true;
        return;
    };
    let rest = &tag[2..];
    let idents = |allowed: &[&str]| {
        rest.iter()
            .all(|t| matches!(t, Token::Ident(word) if allowed.contains(word)))
    };
    let understood = match *keyword {
        "include" => idents(&["ignore", "missing", "with", "without", "context"]),
        "extends" => rest.is_empty(),
        "import" => match rest {
            [Token::Ident("as"), Token::Ident(alias), tail @ ..] => {
                facts.macro_names.insert((*alias).to_owned());
                tail.iter().all(|t| {
                    matches!(t, Token::Ident(word) if ["with", "without", "context"].contains(word))
                })
            }
            _ => false,
        },
        _ => match rest {
            [Token::Ident("import"), names @ ..] => names.iter().all(|t| match t {
                Token::Ident(word) => {
                    if !["as", "with", "without", "context"].contains(word) {
                        facts.macro_names.insert((*word).to_owned());
                    }
                    true
                }
                Token::Comma => true,
                _ => false,
            }),
            _ => false,
        },
    };
    if !understood {
        facts.captures = true;
    }
    facts.references.push((*name).to_owned());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn captured(sources: &[&str]) -> bool {
        let syntax = SyntaxConfig::default();
        let facts: Vec<SourceFacts> = sources.iter().map(|s| source_facts(s, &syntax)).collect();
        any_captured(&facts)
    }

    /// The callables read with the facts are `named_callables`' on every fixture.
    #[test]
    fn callables_equal_named_callables() {
        let syntax = SyntaxConfig::default();
        let mut sources: Vec<String> = [
            "{{ a | f1 | f2(x | f3) }}{% filter f4 %}{% endfilter %}{% filter f5(1) | f6 %}{% endfilter %}",
            "{% if a is t1 and b is not t2 and c is not %}{{ d is t3(1) }}{% endif %}{{ x | }}",
            "{% set x | f7 %}{% endset %}{{ 'is' }} is t4 {{ y is defined }}",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures");
        for entry in walkdir::WalkDir::new(fixtures).into_iter().flatten() {
            let name = entry.path().to_string_lossy().into_owned();
            if [".j2", ".jinja", ".jinja2"]
                .iter()
                .any(|e| name.ends_with(e))
            {
                if let Ok(text) = std::fs::read_to_string(entry.path()) {
                    sources.push(text);
                }
            }
        }
        assert!(sources.len() > 40);
        for source in &sources {
            assert_eq!(
                source_facts(source, &syntax).callables,
                crate::render::stand_ins::named_callables(source, &syntax),
                "{source}"
            );
        }
    }

    #[test]
    fn plain_output_is_not_captured() {
        assert!(!captured(&[
            "Hi {{ name | upper }}{% if x %}{{ x }}{% endif %}{% for d in docs %}- {{ d.title }}\n{% endfor %}{% set y = 1 %}{{ y }}"
        ]));
        assert!(!captured(&[
            "{% include 'a.j2' %}{% include \"b.j2\" ignore missing with context %}{% extends 'c.j2' %}"
        ]));
    }

    #[test]
    fn each_capturing_construct_is_captured() {
        for source in [
            "{% set x %}body{% endset %}{{ x | trim }}",
            "{% set x | upper %}body{% endset %}{{ x }}",
            "{% filter upper %}body{% endfilter %}",
            "{% macro m() %}a{% endmacro %}{% call m() %}b{% endcall %}",
            "{% macro m() %}{{ caller() | trim }}{% endmacro %}",
            "{% block b %}x{% endblock %}{{ self.b() | trim }}",
            "{% extends 'p.j2' %}{% block b %}{{ super() ~ 1 }}{% endblock %}",
            "{% for x in xs recursive %}{{ loop(x.children) }}{% endfor %}",
            "{% include name %}",
            "{% include ['a.j2', 'b.j2'] %}",
            "{% include 'a.j2' if x else 'b.j2' %}",
            "{% import name as m %}",
        ] {
            assert!(captured(&[source]), "{source}");
        }
    }

    #[test]
    fn a_macro_printed_whole_is_not_captured_a_macro_read_as_a_value_is() {
        let macros = "{% macro doc(d, n=1) -%}[{{ n }}] {{ d.title }}{%- endmacro %}";
        assert!(!captured(&[&format!(
            "{macros}{{{{ doc(x, loop.index) }}}}"
        ),]));
        assert!(!captured(&[
            "{% import 'm.j2' as m %}{% for d in docs %}{{- m.doc(d, loop.index) -}}{% endfor %}",
            macros,
        ]));
        for source in [
            "{{ doc(x) | trim }}",
            "{{ doc(x) ~ '!' }}",
            "{% set y = doc(x) %}{{ y }}",
            "{% if doc(x) %}y{% endif %}",
            "{{ other(doc(x)) }}",
            "{{ (doc(x)) }}",
            "{{ doc }}",
        ] {
            assert!(captured(&[macros, source]), "{source}");
        }
        for source in [
            "{% import 'm.j2' as m %}{{ m.doc(x) | trim }}",
            "{% from 'm.j2' import doc as d %}{{ d(x)[0] }}",
            "{% from 'm.j2' import doc %}{% set y = doc(x) %}",
        ] {
            assert!(captured(&[source]), "{source}");
        }
    }
}

#[cfg(test)]
mod render_tests {
    use super::super::clock::Clock;
    use super::super::{Dialect, RenderSettings, Renderer};
    use minijinja::value::Value;

    fn context(pairs: &[(&str, Value)]) -> Value {
        Value::from_pairs(
            pairs
                .iter()
                .map(|(k, v)| (Value::from(*k), v.clone()))
                .collect::<Vec<_>>(),
        )
    }

    /// Each construct whose output becomes a value takes the two-render path, and its
    /// text is the plain render's (the markers inside the captured value would change it).
    #[test]
    fn capturing_templates_render_twice_with_the_plain_text() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("base.j2"),
            "[{% block b %} base {% endblock %}]",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("m.j2"),
            "{% macro doc(d) %}  <{{ d }}>  {% endmacro %}",
        )
        .unwrap();
        let cases = [
            ("set.j2", "{% set x %}  a {{ v }}  {% endset %}{{ x | trim | length }}", "3"),
            ("filter.j2", "{% filter trim %}  a {{ v }}  {% endfilter %}|", "a 1|"),
            ("call.j2", "{% macro m() %}({{ caller() | trim }}){% endmacro %}{% call m() %}  b {{ v }}  {% endcall %}", "(b 1)"),
            ("macro.j2", "{% macro m() %}  c {{ v }}  {% endmacro %}{{ m() | trim }}|{{ m() | length }}", "c 1|7"),
            ("import.j2", "{% import 'm.j2' as m %}{{ m.doc(v) | trim }}", "<1>"),
            ("from.j2", "{% from 'm.j2' import doc %}{% set y = doc(v) %}{{ y | length }}", "7"),
            ("super.j2", "{% extends 'base.j2' %}{% block b %}{{ super() | trim }}!{% endblock %}", "[base!]"),
            ("self.j2", "{% block b %} s {% endblock %}{{ self.b() | trim }}", " s s"),
            ("loop.j2", "{% for x in xs recursive %}{{ loop(x.c) | length if x.c else x.n }}{% endfor %}", "a5"),
        ];
        let mut renderer = Renderer::new(RenderSettings::new(
            Dialect::Jinja2,
            dir.path().to_path_buf(),
        ))
        .unwrap();
        let leaf = |n: &str| context(&[("n", Value::from(n)), ("c", Value::from(false))]);
        let xs = Value::from(vec![
            leaf("a"),
            context(&[
                ("n", Value::from("b")),
                ("c", Value::from(vec![leaf("x"), leaf("y"), leaf("zzz")])),
            ]),
        ]);
        let values = context(&[("v", Value::from(1)), ("xs", xs)]);
        for (name, source, want) in cases {
            let template = renderer.prepare(name, source).unwrap();
            assert!(template.renders_twice(), "{name}");
            let render = renderer
                .render(&template, &values, Clock::synthetic(0))
                .unwrap();
            assert_eq!(render.text, want, "{name}");
        }
    }

    /// A template whose output is never captured renders once: the same text and map as
    /// the two renders give; a sample value that looks like a marker is kept in the text.
    #[test]
    fn other_templates_render_once_with_the_same_text_and_map() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("part.j2"), "  part {{ v }}\n").unwrap();
        std::fs::write(
            dir.path().join("m.j2"),
            "{% macro doc(d) -%}  <{{ d }}>  {%- endmacro %}",
        )
        .unwrap();
        let source = "Hi {{ v }}!\n{% include 'part.j2' %}{% import 'm.j2' as m %}{% for i in [1, 2] %}{{- m.doc(i) }} {% endfor %}\n{{ v | upper }}";
        let settings = RenderSettings::new(Dialect::Jinja2, dir.path().to_path_buf());
        let mut once = Renderer::new(settings.clone()).unwrap();
        let template = once.prepare("t.j2", source).unwrap();
        assert!(!template.renders_twice());
        let mut twice = Renderer::new(settings).unwrap();
        let mut reference = twice.prepare("t.j2", source).unwrap();
        reference.captures_output = true;
        let marker_like = "\u{FDD0}7\u{FDD3}x\u{FDD2}";
        for v in [Value::from("a"), Value::from(marker_like)] {
            let values = context(&[("v", v)]);
            let got = once
                .render(&template, &values, Clock::synthetic(0))
                .unwrap();
            let want = twice
                .render(&reference, &values, Clock::synthetic(0))
                .unwrap();
            assert_eq!(got.text, want.text);
            assert_eq!(
                format!("{:?}", got.map.map(|m| m.events)),
                format!("{:?}", want.map.map(|m| m.events))
            );
        }
        let values = context(&[("v", Value::from(marker_like))]);
        let got = once
            .render(&template, &values, Clock::synthetic(0))
            .unwrap();
        assert!(got.text.contains(marker_like), "{:?}", got.text);
    }
}
