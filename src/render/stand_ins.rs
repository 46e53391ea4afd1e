//! Stand-ins for the application's own filters, tests and globals (`filters:`, `tests:` and
//! `globals:` in prefixlint.yaml), so that templates written against them still render; and
//! the texts that stand in for values nobody gave ([`StandInTexts`]), whose output is not
//! stable content.

use minijinja::value::{Rest, Serde, Value, ValueOrKwargs};
use minijinja::Environment;
use serde::{Deserialize, Deserializer};
use serde_json::Value as Json;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

/// What a declared filter, test or function returns.
///
/// ```yaml
/// filters:
///   lemmatize: identity           # returns its input
///   render_md: {string: "text"}   # always this string
///   tags: {list: [a, b]}          # always this list
///   answer: {constant: 42}        # always this value (any YAML)
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum StandIn {
    Identity,
    String(String),
    List(Vec<Json>),
    Constant(Json),
}

/// The config's shape for a stand-in: `identity`, or a one-key mapping. YAML deserializers
/// spell enum variants as tags (`!string x`), so the value is read as data first and then
/// matched the way JSON spells variants.
#[derive(Debug, Clone, PartialEq)]
pub struct StandInSetting(pub StandIn);

impl<'de> Deserialize<'de> for StandInSetting {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Json::deserialize(deserializer)?;
        stand_in_from(value).map(StandInSetting)
    }
}

/// `identity`, or one of `{string: ...}`, `{list: [...]}`, `{constant: ...}`.
impl schemars::JsonSchema for StandInSetting {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "StandIn".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "What the stand-in returns: identity (its input), or a string, a list or a constant.",
            "oneOf": [
                {"const": "identity"},
                {"type": "object", "properties": {"string": {"type": "string"}}, "required": ["string"], "additionalProperties": false},
                {"type": "object", "properties": {"list": {"type": "array"}}, "required": ["list"], "additionalProperties": false},
                {"type": "object", "properties": {"constant": true}, "required": ["constant"], "additionalProperties": false},
            ],
        })
    }
}

/// A plain value, or `{function: STAND-IN}`.
impl schemars::JsonSchema for GlobalStandIn {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "GlobalStandIn".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let stand_in = generator.subschema_for::<StandInSetting>();
        schemars::json_schema!({
            "description": "A value, or {function: STAND-IN} for a function the template calls.",
            "anyOf": [
                {"type": "object", "properties": {"function": stand_in}, "required": ["function"], "additionalProperties": false},
                true,
            ],
        })
    }
}

fn stand_in_from<E: serde::de::Error>(value: Json) -> Result<StandIn, E> {
    serde_json::from_value(value).map_err(|e| {
        E::custom(format!(
            "a stand-in is identity, {{string: ...}}, {{list: [...]}} or {{constant: ...}} ({e})"
        ))
    })
}

impl StandIn {
    /// The result for a call whose first argument (the filtered value, for a filter) is `input`.
    fn apply(&self, input: Option<&Value>) -> Value {
        match self {
            StandIn::Identity => input.cloned().unwrap_or(Value::from(())),
            StandIn::String(text) => Value::from(text.as_str()),
            StandIn::List(items) => Value::from(Serde(items)),
            StandIn::Constant(value) => Value::from(Serde(value)),
        }
    }
}

/// A declared global: a plain value, or `{function: STAND-IN}` for something the template calls.
///
/// ```yaml
/// globals:
///   company: ACME
///   get_tools: {function: {list: [search, calculator]}}
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum GlobalStandIn {
    Value(Json),
    Function(StandIn),
}

impl<'de> Deserialize<'de> for GlobalStandIn {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Json::deserialize(deserializer)?;
        match &value {
            Json::Object(map) if map.len() == 1 && map.contains_key("function") => Ok(
                GlobalStandIn::Function(stand_in_from(map["function"].clone())?),
            ),
            _ => Ok(GlobalStandIn::Value(value)),
        }
    }
}

/// Everything the config declares, installed into every render environment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StandIns {
    pub filters: BTreeMap<String, StandInSetting>,
    pub tests: BTreeMap<String, StandInSetting>,
    pub globals: BTreeMap<String, GlobalStandIn>,
}

impl StandIns {
    pub fn install(&self, env: &mut Environment<'static>) {
        for (name, StandInSetting(stand_in)) in &self.filters {
            let stand_in = stand_in.clone();
            // Any arguments, keyword ones too, are accepted and ignored.
            env.add_filter(
                name.clone(),
                move |value: Value, _args: Rest<ValueOrKwargs>| stand_in.apply(Some(&value)),
            );
        }
        for (name, StandInSetting(stand_in)) in &self.tests {
            let stand_in = stand_in.clone();
            env.add_test(
                name.clone(),
                move |value: Value, _args: Rest<ValueOrKwargs>| {
                    stand_in.apply(Some(&value)).is_true()
                },
            );
        }
        for (name, global) in &self.globals {
            match global {
                GlobalStandIn::Value(value) => {
                    env.add_global(name.clone(), Value::from(Serde(value)))
                }
                GlobalStandIn::Function(stand_in) => {
                    let stand_in = stand_in.clone();
                    env.add_function(name.clone(), move |args: Rest<ValueOrKwargs>| {
                        let first = args.iter().map(|a| &**a).find(|a| !a.is_kwargs());
                        stand_in.apply(first)
                    });
                }
            }
        }
    }
}

/// Whether a filter or test the application registers, and prefixlint does not know,
/// gets a stand-in (config `stand_ins:`; `undefined: strict` turns them off too).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum StandInMode {
    /// An unknown filter returns its input; an unknown test is the truth of the value.
    #[default]
    On,
    /// An unknown filter or test fails the template, as in Jinja2 without the application.
    Off,
}

/// What kind of callable a template used that Jinja2 does not define.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CallableKind {
    Filter,
    Test,
    /// Called by name, defined nowhere: the application passes it in with the context.
    Function,
    /// A template name only the application's own loader resolves (`"module:key"`).
    Loader,
}

/// A filter, test or function a template uses that is neither Jinja2's, declared in the
/// config nor given by its samples: it rendered with a stand-in, which a report note names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, Deserialize)]
pub struct UnknownCallable {
    pub kind: CallableKind,
    pub name: String,
}

impl UnknownCallable {
    /// The report note: what stood in, and the config line that makes the render exact.
    pub fn note(&self) -> String {
        match self.kind {
            CallableKind::Filter => format!(
                "`{name}` is not a Jinja2 filter: it rendered as the identity (it returns its input); if the application registers it, declare what it returns in prefixlint.yaml to make the render exact, e.g. `filters: {{{name}: identity}}` (or {{string: ...}}, {{list: [...]}}, {{constant: ...}}), or set `stand_ins: off` to make it an error",
                name = self.name
            ),
            CallableKind::Test => format!(
                "`{name}` is not a Jinja2 test: `is {name}` rendered as the truth of the value; if the application registers it, declare it in prefixlint.yaml to make the render exact, e.g. `tests: {{{name}: {{constant: true}}}}` (or identity), or set `stand_ins: off` to make it an error",
                name = self.name
            ),
            CallableKind::Function => format!(
                "`{name}` is not a Jinja2 function and no sample defines it: `{name}(...)` rendered a stand-in value in the shape the template uses; if the application passes it in, declare what it returns in prefixlint.yaml to make the render exact, e.g. `globals: {{{name}: {{function: {{list: [...]}}}}}}` (or identity, {{string: ...}}, {{constant: ...}}), or set `stand_ins: off` to make it an error",
                name = self.name
            ),
            CallableKind::Loader => format!(
                "`{name}` names a template the application's own loader finds (it is no file): the include rendered as an empty stand-in, so its text is not checked; to check it, include it by its path, or add the folder that holds it to `search_path:` in prefixlint.yaml and name it as a file; `stand_ins: off` makes it an error",
                name = self.name
            ),
        }
    }
}

/// The stand-in of an unknown filter: its input, whatever the arguments. What it returns
/// is not what the application's filter would: in a marked render, where it is printed it
/// is stand-in output.
pub fn identity_filter(value: Value, _args: Rest<ValueOrKwargs>) -> Value {
    if let Some(text) = value.as_str() {
        note_stand_in_output(text);
    }
    value
}

/// A text a stand-in made while the render runs (an object's print, a filter's result):
/// where the marked render prints it, it is stand-in output.
pub fn note_stand_in_output(text: &str) {
    CURRENT.with(|current| {
        if let Some(current) = current.borrow_mut().as_mut() {
            current.add_output(text);
        }
    });
}

/// Texts shorter than this are not looked for: a short word of a sample would mark the same
/// word in any printed value.
pub const MIN_STAND_IN_CHARS: usize = 3;

/// Texts that stand in for values nobody gave: the strings of synthesized samples that are
/// the same in every render (only those can write stable lines), and those of stand-in
/// objects. Where a marked render prints one (every occurrence, in any printed
/// value: `{{ tools | join(", ") }}` too), the output is marked as a stand-in's
/// ([`crate::render::instrument::SourceMap::stand_ins`]), and the stable count leaves it
/// out: a finding's stable tokens are the text the template itself fixes.
#[derive(Debug)]
pub struct StandInTexts {
    /// One finder per text: a template has a few such texts, searched in a few printed
    /// values, where building an automaton cost more than all the searches (measured).
    finders: Vec<memchr::memmem::Finder<'static>>,
}

impl StandInTexts {
    /// `None` when no text is long enough to look for.
    pub fn new(texts: impl IntoIterator<Item = String>) -> Option<Arc<StandInTexts>> {
        let mut texts: Vec<String> = texts
            .into_iter()
            .filter(|text| text.chars().count() >= MIN_STAND_IN_CHARS)
            .collect();
        texts.sort();
        texts.dedup();
        if texts.is_empty() {
            return None;
        }
        let finders = texts
            .iter()
            .map(|text| memchr::memmem::Finder::new(text.as_bytes()).into_owned())
            .collect();
        Some(Arc::new(StandInTexts { finders }))
    }

    /// The byte ranges of `text` covered by an occurrence of one of the texts (all
    /// occurrences, overlapping ones too), merged, in order.
    pub fn find_in(&self, text: &str) -> Vec<Range<usize>> {
        let mut ranges = Vec::new();
        for finder in &self.finders {
            occurrences(finder, text, &mut ranges);
        }
        merge(ranges)
    }
}

/// Every occurrence of `finder`'s text in `text`, overlapping ones too.
fn occurrences(finder: &memchr::memmem::Finder<'_>, text: &str, out: &mut Vec<Range<usize>>) {
    let needle = finder.needle().len();
    if needle > text.len() {
        return;
    }
    let mut at = 0;
    while let Some(found) = finder.find(&text.as_bytes()[at..]) {
        out.push(at + found..at + found + needle);
        at += found + 1;
    }
}

/// Sorted, overlapping and touching ranges joined.
pub fn merge(mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    ranges.sort_by_key(|r| (r.start, r.end));
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for range in ranges {
        match merged.last_mut() {
            Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
            _ => merged.push(range),
        }
    }
    merged
}

/// What the render in progress on this thread marks as stand-in output.
struct Current {
    texts: Option<Arc<StandInTexts>>,
    /// What stand-in filters returned in this render.
    outputs: Vec<String>,
}

impl Current {
    fn add_output(&mut self, text: &str) {
        if text.chars().count() >= MIN_STAND_IN_CHARS && !self.outputs.iter().any(|o| o == text) {
            self.outputs.push(text.to_owned());
        }
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Current>> = const { RefCell::new(None) };
}

/// Set while a marked render runs (renders are synchronous); restores what was before.
pub struct MarkingGuard(Option<Current>);

impl Drop for MarkingGuard {
    fn drop(&mut self) {
        let before = self.0.take();
        CURRENT.with(|current| *current.borrow_mut() = before);
    }
}

/// Marks stand-in output in the marked render about to run on this thread: `texts`, and
/// what stand-in filters return.
pub fn mark_while_rendering(texts: Option<Arc<StandInTexts>>) -> MarkingGuard {
    let now = Current {
        texts,
        outputs: Vec::new(),
    };
    MarkingGuard(CURRENT.with(|current| current.borrow_mut().replace(now)))
}

/// The ranges of a printed `text` that are stand-in output in the render in progress.
pub fn stand_in_ranges(text: &str) -> Vec<Range<usize>> {
    if text.len() < MIN_STAND_IN_CHARS {
        return Vec::new();
    }
    CURRENT.with(|current| {
        let current = current.borrow();
        let Some(current) = current.as_ref() else {
            return Vec::new();
        };
        let mut ranges = current
            .texts
            .as_ref()
            .map(|texts| texts.find_in(text))
            .unwrap_or_default();
        if current.outputs.is_empty() {
            return ranges;
        }
        for output in &current.outputs {
            occurrences(
                &memchr::memmem::Finder::new(output.as_bytes()),
                text,
                &mut ranges,
            );
        }
        merge(ranges)
    })
}

/// The stand-in of an unknown test: the truth of the value, as `{% if value %}` reads it.
pub fn truth_test(value: Value, _args: Rest<ValueOrKwargs>) -> bool {
    value.is_true()
}

/// The filters (`x | name`, `{% filter name %}`) and tests (`x is name`, `select('name')`
/// is not followed) a template source names, from its tokens; a source that does not lex
/// names none (its parse error is reported instead).
pub fn named_callables(
    source: &str,
    syntax: &minijinja::syntax::SyntaxConfig,
) -> Vec<(CallableKind, String)> {
    use minijinja::machinery::{tokenize, Token};
    let mut found = Vec::new();
    let mut previous: [Option<Token<'_>>; 2] = [None, None];
    for item in tokenize(source, false, syntax.clone()) {
        let Ok((token, _)) = item else {
            return Vec::new();
        };
        if let Token::Ident(name) = &token {
            let kind = match (&previous[0], &previous[1]) {
                (_, Some(Token::Pipe)) => Some(CallableKind::Filter),
                (Some(Token::BlockStart), Some(Token::Ident("filter"))) => {
                    Some(CallableKind::Filter)
                }
                (_, Some(Token::Ident("is"))) if *name != "not" => Some(CallableKind::Test),
                (Some(Token::Ident("is")), Some(Token::Ident("not"))) => Some(CallableKind::Test),
                _ => None,
            };
            if let Some(kind) = kind {
                found.push((kind, (*name).to_owned()));
            }
        }
        previous = [previous[1].take(), Some(token)];
    }
    found.sort();
    found.dedup();
    found
}

/// How to declare a missing filter, test or function in prefixlint.yaml, for error help.
pub fn declaration_help(section: &str, name: &str) -> String {
    let (example, kinds) = match section {
        "globals" => (
            "{function: identity}",
            "a global is a plain value, or {function: STAND-IN} for one the template calls, where STAND-IN is identity, {string: ...}, {list: [...]} or {constant: ...}",
        ),
        _ => (
            "identity",
            "a stand-in is identity (returns its input), {string: ...}, {list: [...]} or {constant: ...}",
        ),
    };
    format!(
        "if the application registers `{name}`, declare a stand-in for it in prefixlint.yaml:\n\n{section}:\n  {name}: {example}\n\n{kinds}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every occurrence of every text, overlapping ones merged; short texts are not looked
    /// for; no text, no finder.
    #[test]
    fn stand_in_texts_find_every_occurrence() {
        let texts =
            StandInTexts::new(["tools 1", "ols 1, t", "ab", "x 1"].map(String::from)).unwrap();
        let text = "Tools: tools 1, tools 2 and tools 1; ab; x 1";
        let ranges = texts.find_in(text);
        let found: Vec<&str> = ranges.iter().map(|r| &text[r.clone()]).collect();
        assert_eq!(found, ["tools 1, t", "tools 1", "x 1"]);
        assert!(StandInTexts::new(["ab".to_owned()]).is_none());
        assert_eq!(merge(vec![5..7, 0..2, 1..3, 3..4]), vec![0..4, 5..7]);
    }

    /// While a marked render runs, the printed texts that are stand-ins' (known beforehand,
    /// or returned by a stand-in filter meanwhile) are found; outside one, none are.
    #[test]
    fn printed_stand_ins_are_found_only_while_marking() {
        let texts = StandInTexts::new(["tool_docs 1".to_owned()]);
        assert!(stand_in_ranges("tool_docs 1").is_empty());
        {
            let _marking = mark_while_rendering(texts);
            assert_eq!(stand_in_ranges("Docs: tool_docs 1."), vec![6..17]);
            identity_filter(Value::from("Be brief."), Rest(Vec::new()));
            assert_eq!(stand_in_ranges("> Be brief. <"), vec![2..11]);
        }
        assert!(stand_in_ranges("Docs: tool_docs 1.").is_empty());
    }

    fn render(stand_ins: &StandIns, source: &str) -> String {
        let mut env = Environment::new();
        stand_ins.install(&mut env);
        env.render_str(source, ()).unwrap()
    }

    #[test]
    fn yaml_schema_covers_each_kind() {
        let filters: BTreeMap<String, StandInSetting> = serde_yaml_ng::from_str(
            "a: identity\nb: {string: x}\nc: {list: [1, 2]}\nd: {constant: {k: v}}\n",
        )
        .unwrap();
        assert_eq!(filters["a"].0, StandIn::Identity);
        assert_eq!(filters["b"].0, StandIn::String("x".into()));
        assert_eq!(filters["c"].0, StandIn::List(vec![1.into(), 2.into()]));
        assert_eq!(
            filters["d"].0,
            StandIn::Constant(serde_json::json!({"k": "v"}))
        );
        let err = serde_yaml_ng::from_str::<BTreeMap<String, StandInSetting>>("a: uppercase\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("identity") && err.contains("constant"),
            "{err}"
        );
    }

    #[test]
    fn globals_are_values_or_functions() {
        let globals: BTreeMap<String, GlobalStandIn> = serde_yaml_ng::from_str(
            "company: ACME\nconfig: {debug: false}\nget_tools: {function: {list: [search]}}\necho: {function: identity}\n",
        )
        .unwrap();
        assert_eq!(globals["company"], GlobalStandIn::Value("ACME".into()));
        assert_eq!(
            globals["get_tools"],
            GlobalStandIn::Function(StandIn::List(vec!["search".into()]))
        );
        let bad =
            serde_yaml_ng::from_str::<BTreeMap<String, GlobalStandIn>>("f: {function: shout}\n")
                .unwrap_err()
                .to_string();
        assert!(bad.contains("a stand-in is identity"), "{bad}");
        let stand_ins = StandIns {
            globals,
            ..StandIns::default()
        };
        assert_eq!(
            render(
                &stand_ins,
                "{{ company }} {{ config.debug }} {{ get_tools() }} {{ echo('x', 1, k=2) }}"
            ),
            "ACME False ['search'] x"
        );
    }

    #[test]
    fn filters_and_tests_return_their_stand_in() {
        let stand_ins = StandIns {
            filters: [
                ("lemmatize", StandIn::Identity),
                ("render_md", StandIn::String("<p>md</p>".into())),
                ("answer", StandIn::Constant(42.into())),
            ]
            .map(|(name, s)| (name.to_owned(), StandInSetting(s)))
            .into(),
            tests: [
                ("admin", StandIn::Constant(true.into())),
                ("nonempty", StandIn::Identity),
            ]
            .map(|(name, s)| (name.to_owned(), StandInSetting(s)))
            .into(),
            ..StandIns::default()
        };
        assert_eq!(
            render(
                &stand_ins,
                "{{ 'running' | lemmatize(lang='en') }} {{ 'x' | render_md }} {{ 1 | answer + 1 }} \
                 {{ 'u' is admin }} {{ '' is nonempty }}"
            ),
            "running <p>md</p> 43 True False"
        );
    }
}
