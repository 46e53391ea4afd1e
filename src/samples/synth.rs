//! Values of an inferred [`Shape`], one context per render. Names that look volatile (clock,
//! ids, people) and the request's input differ between renders as in production; settings
//! stay the same in every render. A text whose name says nothing of how often it changes is
//! assumed to change per request, as most of a template's inputs do (a task description, a
//! code listing, retrieved memories): it differs between renders too, and the places so
//! assumed are recorded, for the findings to say so.

use super::shape::{ObjectShape, Shape};
use crate::render::clock::Clock;
use crate::rules::{AssumedPlace, FieldClass, SynthKind, VolatileFields};
use minijinja::value::{DynObject, Enumerator, Object, ObjectRepr, Value};
use minijinja::{Error, State};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

/// Items in a synthesized top-level list; nested lists get one fewer.
const TOP_LIST_ITEMS: usize = 3;
const NESTED_LIST_ITEMS: usize = 2;
/// Beyond this depth values are plain text: bounds what a deep shape costs.
const MAX_DEPTH: usize = 12;

pub use crate::render::STAND_IN_TEMPLATE;

/// Where a value sits: `comments[].author` for people, `comments.author` for the
/// volatile-field patterns, which match dotted paths.
#[derive(Clone)]
struct Place {
    display: String,
    dotted: String,
    leaf: String,
    /// 1 for a top-level value, the item's position inside lists.
    ordinal: usize,
    depth: usize,
}

impl Place {
    fn root(name: &str) -> Place {
        Place {
            display: name.to_owned(),
            dotted: name.to_owned(),
            leaf: name.to_owned(),
            ordinal: 1,
            depth: 0,
        }
    }

    fn field(&self, name: &str) -> Place {
        Place {
            display: format!("{}.{name}", self.display),
            dotted: format!("{}.{name}", self.dotted),
            leaf: name.to_owned(),
            ordinal: self.ordinal,
            depth: self.depth + 1,
        }
    }

    fn item(&self, ordinal: usize) -> Place {
        Place {
            display: format!("{}[]", self.display),
            dotted: self.dotted.clone(),
            leaf: self.leaf.clone(),
            ordinal,
            depth: self.depth + 1,
        }
    }

    fn method(&self, name: &str) -> Place {
        // `get_name()` prints like a `name`, `to_text()` like a `text`.
        let leaf = name
            .strip_prefix("get_")
            .or_else(|| name.strip_prefix("to_"))
            .unwrap_or(name);
        Place {
            display: format!("{}.{name}()", self.display),
            dotted: format!("{}.{leaf}", self.dotted),
            leaf: leaf.to_owned(),
            ordinal: self.ordinal,
            depth: self.depth + 1,
        }
    }
}

/// Builds render `n`'s values; records which places got stand-ins.
pub struct Synthesizer<'f> {
    fields: &'f VolatileFields,
    render: usize,
    /// Whether a text of unknown cadence varies (synthesized samples) or stays the same
    /// (stand-ins beside a samples file, whose values are the user's word).
    assume_per_request: bool,
    pub stand_ins: BTreeSet<String>,
    /// The places whose cadence was assumed, with the value each had.
    pub assumed: BTreeSet<AssumedPlace>,
}

impl<'f> Synthesizer<'f> {
    /// Values that assume nothing: a text of unknown cadence is the same in every render.
    pub fn new(fields: &'f VolatileFields, render: usize) -> Self {
        Synthesizer {
            fields,
            render,
            assume_per_request: false,
            stand_ins: BTreeSet::new(),
            assumed: BTreeSet::new(),
        }
    }

    /// Values for synthesized samples: a text of unknown cadence differs per render.
    pub fn assuming(fields: &'f VolatileFields, render: usize) -> Self {
        Synthesizer {
            assume_per_request: true,
            ..Synthesizer::new(fields, render)
        }
    }

    pub fn variable(&mut self, name: &str, shape: &Shape) -> Value {
        self.value(shape, &Place::root(name))
    }

    /// A function the application passes in: a stand-in whose call returns a value in the
    /// shape the template uses the result in. Reported as a function, not an object.
    pub fn function(&mut self, name: &str, shape: &Shape) -> Value {
        let value = self.value(shape, &Place::root(name));
        self.stand_ins.remove(name);
        value
    }

    fn value(&mut self, shape: &Shape, place: &Place) -> Value {
        if place.depth > MAX_DEPTH {
            return self.scalar(SynthKind::Text, place);
        }
        match shape {
            Shape::Text => self.text(place),
            Shape::Number => match self.kind(place) {
                SynthKind::EpochSeconds | SynthKind::EpochMillis => self.text(place),
                _ => Value::from(place.ordinal + 2),
            },
            Shape::Bool => Value::from(true),
            Shape::IncludeName => Value::from(STAND_IN_TEMPLATE),
            Shape::Clock => self.clock(place),
            Shape::Recursion => Value::from(Vec::<Value>::new()),
            Shape::OneOf(values) => self.one_of(values, place),
            Shape::List(item) => {
                if **item == Shape::Recursion {
                    return Value::from(Vec::<Value>::new());
                }
                let count = if place.depth == 0 {
                    TOP_LIST_ITEMS
                } else {
                    NESTED_LIST_ITEMS
                };
                Value::from(
                    (1..=count)
                        .map(|i| self.value(item, &place.item(i)))
                        .collect::<Vec<_>>(),
                )
            }
            Shape::Tuple(parts) => Value::from(
                parts
                    .iter()
                    .enumerate()
                    .map(|(i, part)| self.value(part, &place.field(&i.to_string())))
                    .collect::<Vec<_>>(),
            ),
            Shape::Mapping { fields, entries } => {
                let mut map: Vec<(Value, Value)> = fields
                    .iter()
                    .map(|(name, field)| {
                        (
                            Value::from(name.as_str()),
                            self.value(field, &place.field(name)),
                        )
                    })
                    .collect();
                if let Some(entry) = entries {
                    for i in 1..=NESTED_LIST_ITEMS {
                        let key = format!("key {i}");
                        let value = self.value(entry, &place.item(i));
                        map.push((Value::from(key), value));
                    }
                }
                Value::from_pairs(map)
            }
            Shape::Object(object) => self.stand_in(object, place),
        }
    }

    fn kind(&self, place: &Place) -> SynthKind {
        self.fields
            .classify_name(&place.dotted)
            .map(|m| m.synth)
            .unwrap_or(SynthKind::Text)
    }

    fn text(&mut self, place: &Place) -> Value {
        match self.fields.classify_name(&place.dotted) {
            Some(found) => self.scalar(found.synth, place),
            None if self.assume_per_request => self.assumed_text(place),
            None => self.scalar(SynthKind::Text, place),
        }
    }

    /// A text whose name says nothing of how often it changes, assumed to change per
    /// request: `leaf 1` in the first render, another text from its first word on in each
    /// other one (`second leaf 1`), so that the shared prefix ends where it starts.
    fn assumed_text(&mut self, place: &Place) -> Value {
        let plain = format!("{} {}", place.leaf, place.ordinal);
        let text = match self.render {
            0 => plain,
            n => format!("{} {plain}", render_word(n)),
        };
        self.assumed.insert(AssumedPlace {
            path: place.dotted.clone(),
            text: text.clone(),
        });
        Value::from(text)
    }

    /// A scalar of `kind`: volatile kinds move with the render (and differ between list
    /// items); plain text is the same in every render.
    fn scalar(&self, kind: SynthKind, place: &Place) -> Value {
        let n = self.render;
        let clock = Clock::synthetic(n);
        let people = [
            "Ada Lovelace",
            "Grace Hopper",
            "Alan Turing",
            "Edsger Dijkstra",
            "Barbara Liskov",
        ];
        let person = people[(n + place.ordinal - 1) % people.len()];
        match kind {
            SynthKind::Timestamp => clock.datetime().value(),
            SynthKind::Date => Value::from(clock.at.format("%Y-%m-%d").to_string()),
            SynthKind::Time => Value::from(clock.at.format("%H:%M:%S").to_string()),
            SynthKind::EpochSeconds => Value::from(clock.at.timestamp()),
            SynthKind::EpochMillis => Value::from(clock.at.timestamp_millis()),
            SynthKind::Id => Value::from(synthetic_uuid(&place.display, n, place.ordinal)),
            SynthKind::Name => Value::from(person),
            SynthKind::Email => {
                let first = person.split(' ').next().unwrap_or("user").to_lowercase();
                Value::from(format!("{first}.{n}@example.com"))
            }
            SynthKind::Version => Value::from(format!("1.{}.{}", n + 1, place.ordinal - 1)),
            SynthKind::Passage => Value::from(passage(&place.display, n, place.ordinal)),
            SynthKind::Text => Value::from(format!("{} {}", place.leaf, place.ordinal)),
        }
    }

    /// A value compared with literals: one of them, so the branch that tests for it
    /// renders. The request's input cycles through them (each render meets another); any
    /// other value meets the first in every render, so it stays the same.
    fn one_of(&mut self, values: &[Value], place: &Place) -> Value {
        let class = self.fields.classify_name(&place.dotted).map(|m| m.class);
        if class == Some(FieldClass::Volatile) {
            // A clock, an id or a person still varies as in production.
            return self.text(place);
        }
        let at = if class == Some(FieldClass::Input) {
            (self.render + place.ordinal - 1) % values.len().max(1)
        } else {
            0
        };
        values.get(at).cloned().unwrap_or_default()
    }

    /// A value used as a datetime: the render's clock when its name is volatile, else a
    /// fixed time.
    fn clock(&self, place: &Place) -> Value {
        match self.kind(place) {
            SynthKind::Date => crate::render::datetime::PyDateTime::date(
                Clock::synthetic(self.render).at.date_naive(),
            )
            .value(),
            SynthKind::Text => Clock::synthetic(0).datetime().value(),
            _ => Clock::synthetic(self.render).datetime().value(),
        }
    }

    fn stand_in(&mut self, object: &ObjectShape, place: &Place) -> Value {
        self.stand_ins.insert(place.display.clone());
        let text = match self.text(place) {
            v if v.as_str().is_some() => v.as_str().unwrap_or_default().to_owned(),
            v => crate::render::python::py_str(&v),
        };
        let fields = object
            .fields
            .iter()
            .map(|(name, shape)| (name.clone(), self.value(shape, &place.field(name))))
            .collect();
        let methods = object
            .methods
            .iter()
            .map(|(name, shape)| (name.clone(), self.value(shape, &place.method(name))))
            .collect();
        let items = object.items.as_ref().map(|item| {
            (1..=NESTED_LIST_ITEMS)
                .map(|i| self.value(item, &place.item(i)))
                .collect()
        });
        let call = object
            .call
            .as_ref()
            .map(|result| self.value(result, &place.method("call")));
        Value::from_object(StandIn {
            name: place.display.clone(),
            text,
            fields,
            methods,
            items,
            call,
        })
    }
}

/// The word that starts render `n`'s assumed texts (`n` ≥ 1).
fn render_word(n: usize) -> String {
    const WORDS: [&str; 9] = [
        "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
    ];
    WORDS
        .get(n - 1)
        .map_or_else(|| format!("render-{}", n + 1), |word| (*word).to_owned())
}

/// Appends the texts in `value` that stand in for what nobody gave: its strings, through
/// lists, mappings' values and stand-in objects (not mapping keys, which are names).
pub fn collect_texts(value: &Value, out: &mut Vec<String>, depth: usize) {
    use minijinja::value::ValueKind;
    if depth > MAX_DEPTH + 4 {
        return;
    }
    if let Some(stand_in) = value.downcast_object_ref::<StandIn>() {
        out.push(stand_in.text.clone());
        let nested = stand_in
            .fields
            .values()
            .chain(stand_in.methods.values())
            .chain(stand_in.items.iter().flatten())
            .chain(stand_in.call.iter());
        for value in nested {
            collect_texts(value, out, depth + 1);
        }
        return;
    }
    match value.kind() {
        ValueKind::String => out.push(value.as_str().unwrap_or_default().to_owned()),
        ValueKind::Seq => {
            for item in value.try_iter().into_iter().flatten() {
                collect_texts(&item, out, depth + 1);
            }
        }
        ValueKind::Map => {
            for key in value.try_iter().into_iter().flatten() {
                collect_texts(&value.get_item(&key).unwrap_or_default(), out, depth + 1);
            }
        }
        _ => {}
    }
}

/// What a request's input reads like: texts of different lengths and openings, so that
/// renders differ from the input's first token on and the input moves what follows it.
/// Render `n` draws from group `n % 3` only, so that the default three renders share no
/// passage: text common to two renders would count as stable text after the input.
const PASSAGES: [[&str; 3]; 3] = [
    [
        "Why does the nightly export job fail with a timeout on the orders table?",
        "The login page shows a blank screen after the 3.2 upgrade. Steps: open /login in Firefox, enter valid credentials, press Enter. Expected: the dashboard. Actual: a white page and a 502 from /api/session in the network tab. It worked on 3.1.",
        "Please translate the attached onboarding checklist into German and keep the product names in English.",
    ],
    [
        "Summarize this for the weekly update: the storage team moved the ingest pipeline to the new cluster on Tuesday, cut write latency by a third, and found two dashboards that still read from the old one. Both are scheduled to move next sprint, after which the old cluster is shut down.",
        "Can you make the retry logic in the payment client back off exponentially, with a cap at thirty seconds?",
        "Which of our three pricing tiers includes single sign-on, and since when?",
    ],
    [
        "Dear support, my invoice for October lists the premium plan twice. I upgraded on the 4th and was charged for both the old and the new plan for the whole month. Please refund the difference and confirm which plan I am on now.",
        "List the open incidents older than a week.",
        "Draft a polite reply to a customer who asks why their parcel has been in customs for nine days, explaining the paperwork we need from them and how long clearance usually takes once it arrives.",
    ],
];

/// Input text for render `n` at `place`: a passage of render `n`'s group, chosen by the
/// variable's path and the list item, so two inputs of one render differ too.
fn passage(path: &str, n: usize, ordinal: usize) -> String {
    let salt: usize = path.bytes().map(usize::from).sum();
    let group = &PASSAGES[n % PASSAGES.len()];
    group[(salt + ordinal - 1) % group.len()].to_owned()
}

/// A deterministic UUID-shaped id, different per variable, render and list item.
fn synthetic_uuid(path: &str, n: usize, ordinal: usize) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{path}/{n}/{ordinal}").as_bytes());
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-4{}-a{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

/// Stands in for an object of the application: answers every attribute, method call,
/// call, iteration, comparison and print with a synthesized value, so the render goes on.
/// What the template was seen to use is answered from its inferred shape; anything else
/// with another stand-in.
#[derive(Debug)]
pub struct StandIn {
    pub name: String,
    text: String,
    fields: BTreeMap<String, Value>,
    methods: BTreeMap<String, Value>,
    items: Option<Vec<Value>>,
    call: Option<Value>,
}

impl StandIn {
    fn unknown(&self, suffix: &str, leaf: &str) -> Value {
        Value::from_object(StandIn {
            name: format!("{}{suffix}", self.name),
            text: format!("{leaf} 1"),
            fields: BTreeMap::new(),
            methods: BTreeMap::new(),
            items: None,
            call: None,
        })
    }
}

impl Object for StandIn {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        if let Some(name) = key.as_str() {
            return Some(
                self.fields
                    .get(name)
                    .cloned()
                    .unwrap_or_else(|| self.unknown(&format!(".{name}"), name)),
            );
        }
        let index = key.as_i64()?;
        let items = self.items.as_ref();
        Some(
            items
                .and_then(|items| {
                    let len = items.len() as i64;
                    let at = if index < 0 { len + index } else { index };
                    items.get(usize::try_from(at).ok()?).cloned()
                })
                .unwrap_or_else(|| self.unknown("[]", "item")),
        )
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        match &self.items {
            Some(items) => Enumerator::Values(items.clone()),
            None => Enumerator::Values(
                (1..=NESTED_LIST_ITEMS)
                    .map(|_| self.unknown("[]", "item"))
                    .collect(),
            ),
        }
    }

    fn is_true(self: &Arc<Self>) -> bool {
        true
    }

    fn call(self: &Arc<Self>, _state: &mut State<'_, '_>, _args: &[Value]) -> Result<Value, Error> {
        Ok(self
            .call
            .clone()
            .unwrap_or_else(|| self.unknown("()", "result")))
    }

    fn call_method(
        self: &Arc<Self>,
        state: &mut State<'_, '_>,
        method: &str,
        args: &[Value],
    ) -> Result<Value, Error> {
        if let Some(result) = self.methods.get(method) {
            return Ok(result.clone());
        }
        // A string method applies to what the object prints as.
        if let Ok(result) = Value::from(self.text.as_str()).call_method(state, method, args) {
            return Ok(result);
        }
        Ok(self.unknown(&format!(".{method}()"), method))
    }

    fn custom_cmp(self: &Arc<Self>, other: &DynObject) -> Option<Ordering> {
        let other = other.downcast_ref::<Self>()?;
        Some(self.text.cmp(&other.text))
    }

    fn render(self: &Arc<Self>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::render::stand_ins::note_stand_in_output(&self.text);
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::shape::infer_source;

    fn synth(source: &str, render: usize) -> (BTreeMap<String, Value>, BTreeSet<String>) {
        let fields = VolatileFields::new(&[]).unwrap();
        let shapes = infer_source(source).unwrap();
        let mut synth = Synthesizer::new(&fields, render);
        let values = shapes
            .variables()
            .iter()
            .map(|(name, shape)| (name.clone(), synth.variable(name, shape)))
            .collect();
        (values, synth.stand_ins)
    }

    fn render(source: &str, n: usize) -> String {
        let (values, _) = synth(source, n);
        let mut env = minijinja::Environment::new();
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_template("t", source).unwrap();
        env.get_template("t")
            .unwrap()
            .render(Value::from_pairs(values))
            .unwrap()
    }

    #[test]
    fn lists_of_objects_render_and_are_stable() {
        let source = "{% for c in comments %}{{ c.title }}: {{ c.body | upper }}\n{% endfor %}";
        assert_eq!(
            render(source, 0),
            "title 1: BODY 1\ntitle 2: BODY 2\ntitle 3: BODY 3\n"
        );
        assert_eq!(render(source, 0), render(source, 1));
    }

    #[test]
    fn volatile_names_vary_between_renders() {
        let source = "{% for e in events %}{{ e.created_at.strftime('%d %H') }} {{ e.request_id }}\n{% endfor %}";
        assert_ne!(render(source, 0), render(source, 1));
        let first = render(source, 0);
        let lines: Vec<&str> = first.lines().collect();
        assert_ne!(lines[0], lines[1], "list items differ from each other");
    }

    #[test]
    fn stand_ins_answer_anything() {
        let source = "{% if state.has_frontend() %}{{ state.name }}{% endif %}|{% for s in subtasks %}{{ s.output.to_label() }};{% endfor %}|{{ state.other.thing().x }}|{{ state.title() }}";
        let (_, stand_ins) = synth(source, 0);
        assert_eq!(
            stand_ins.into_iter().collect::<Vec<_>>(),
            ["state", "state.other", "subtasks[].output"]
        );
        // `state.name` is not a person's (identity is for people only): it stays stable.
        assert_eq!(
            render(source, 0),
            "name 1|label 1;label 2;label 3;|x 1|State 1"
        );
        assert_eq!(render(source, 0), render(source, 1));
    }

    #[test]
    fn the_requests_input_varies_settings_do_not() {
        let source =
            "{{ tool_docs }}|{% for m in messages %}{{ m.content }};{% endfor %}|{{ question }}";
        let renders: Vec<String> = (0..3).map(|n| render(source, n)).collect();
        let part = |r: &str, i: usize| r.split('|').nth(i).unwrap().to_owned();
        assert_eq!(part(&renders[0], 0), "tool_docs 1");
        assert_eq!(part(&renders[0], 0), part(&renders[2], 0));
        for i in [1, 2] {
            assert_ne!(part(&renders[0], i), part(&renders[1], i));
            assert_ne!(part(&renders[1], i), part(&renders[2], i));
        }
        // Items of one render differ too, and so do lengths.
        let items: Vec<&str> = renders[0].split('|').nth(1).unwrap().split(';').collect();
        assert_ne!(items[0], items[1]);
        assert_ne!(items[0].len(), items[1].len());
    }

    /// Synthesized samples assume a text of unknown cadence changes per request: the first
    /// render keeps `leaf n`, the others differ from their first word, and the places are
    /// recorded; settings, numbers and flags stay the same, and without the assumption
    /// (stand-ins beside a samples file) so does the text.
    #[test]
    fn a_text_whose_name_says_nothing_varies_and_is_recorded_as_assumed() {
        let fields = VolatileFields::new(&[]).unwrap();
        let shapes = infer_source(
            "{{ assignment }}|{{ tool_docs }}|{{ n + 1 }}|{% if flag %}y{% endif %}|{% for c in comments %}{{ c.body }};{% endfor %}",
        )
        .unwrap();
        let values = |n: usize, assuming: bool| {
            let mut synth = if assuming {
                Synthesizer::assuming(&fields, n)
            } else {
                Synthesizer::new(&fields, n)
            };
            let values: BTreeMap<String, String> = shapes
                .variables()
                .iter()
                .map(|(name, shape)| (name.clone(), synth.variable(name, shape).to_string()))
                .collect();
            (values, synth.assumed)
        };
        let (first, assumed) = values(0, true);
        let (second, _) = values(1, true);
        let (third, _) = values(2, true);
        assert_eq!(first["assignment"], "assignment 1");
        assert_eq!(second["assignment"], "second assignment 1");
        assert_eq!(third["assignment"], "third assignment 1");
        assert_eq!(
            second["comments"],
            "[{'body': 'second body 1'}, {'body': 'second body 2'}, {'body': 'second body 3'}]"
        );
        for constant in ["tool_docs", "n", "flag"] {
            assert_eq!(first[constant], second[constant], "{constant}");
        }
        let paths: BTreeSet<&str> = assumed.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, BTreeSet::from(["assignment", "comments.body"]));
        let (plain, none) = values(1, false);
        assert_eq!(plain["assignment"], "assignment 1");
        assert!(none.is_empty());
        assert_eq!(render_word(9), "tenth");
        assert_eq!(render_word(10), "render-11");
    }

    /// The texts that stand in: strings through lists, mappings' values and stand-in
    /// objects, not mapping keys or numbers.
    #[test]
    fn stand_in_texts_are_the_strings_of_the_values() {
        let (values, _) = synth(
            "{{ state.title() }}|{% for k, v in settings.items() %}{{ k }}={{ v }}{% endfor %}|{{ n + 1 }}|{% for e in events %}{{ e.summary }}{% endfor %}",
            0,
        );
        let mut texts = Vec::new();
        for value in values.values() {
            collect_texts(value, &mut texts, 0);
        }
        texts.sort();
        assert_eq!(
            texts,
            [
                "settings 1",
                "settings 2",
                "state 1",
                "summary 1",
                "summary 2",
                "summary 3"
            ]
        );
    }

    #[test]
    fn datetimes_and_numbers() {
        assert_eq!(
            render(
                "{{ deadline.strftime('%Y-%m-%d') }} {{ n + 1 }} {{ now_ts.isoformat() }}",
                0
            ),
            "2026-03-14 4 2026-03-14T09:26:53"
        );
    }
}
