//! The native renderers against minijinja: the same text wherever they answer.

use super::qwen3::{Qwen3, QWEN3, SOURCE};
use super::{lookup, NativeTemplate, Variables};
use crate::chat::{json_value, message_value, ChatTemplate, ChatTemplateSource, ContextBase};
use crate::render::clock::Clock;
use crate::render::{Limits, Renderer};
use minijinja::Value;
use serde_json::{json, Map, Value as Json};

/// A small seeded generator (xorshift64*): the same cases on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

const PIECES: [&str; 16] = [
    "hello",
    " world",
    "<think>",
    "</think>",
    "\n",
    "\n\n",
    "<tool_response>",
    "</tool_response>",
    "é中文🙂",
    "{\"a\": 1}",
    "<|im_end|>",
    "'\"&<>",
    "  ",
    "Answer 42.",
    "\r\n",
    "x",
];

fn text(rng: &mut Rng) -> String {
    let mut text = String::new();
    for _ in 0..rng.below(7) {
        let piece: &&str = rng.pick(&PIECES);
        text.push_str(piece);
    }
    text
}

/// A content: mostly text; sometimes a tool response wrapped as the template checks, and
/// rarely null, absent or not a string.
fn content(rng: &mut Rng) -> Option<Json> {
    match rng.below(100) {
        0..=84 => Some(Json::from(text(rng))),
        85..=94 => Some(Json::from(format!(
            "<tool_response>{}</tool_response>",
            text(rng)
        ))),
        95..=96 => Some(Json::Null),
        97 => None,
        98 => Some(json!([{"type": "text", "text": text(rng)}])),
        _ => Some(json!(7)),
    }
}

fn arguments(rng: &mut Rng) -> Option<Json> {
    match rng.below(10) {
        0..=3 => Some(Json::from(format!("{{\"q\": \"{}\"}}", text(rng)))),
        4..=7 => Some(
            json!({"q": text(rng), "n": rng.below(5), "deep": {"list": [1.5, null, true, "<&>"]}}),
        ),
        8 => None,
        _ => Some(json!([1, "two"])),
    }
}

fn tool_call(rng: &mut Rng) -> Json {
    let mut inner = Map::new();
    if !rng.chance(5) {
        inner.insert(
            "name".into(),
            Json::from(format!("tool_{}{}", rng.below(4), text(rng))),
        );
    }
    if let Some(arguments) = arguments(rng) {
        inner.insert("arguments".into(), arguments);
    }
    match rng.below(10) {
        0..=6 => json!({"id": "call_1", "type": "function", "function": Json::Object(inner)}),
        7 => Json::Object(inner),
        8 => json!({"id": "call_2", "function": {}, "name": "outer", "arguments": "{}"}),
        _ => json!({"function": null, "name": "n", "arguments": {"k": "v"}}),
    }
}

fn message(rng: &mut Rng, role: &str) -> Json {
    let mut message = Map::new();
    message.insert("role".into(), Json::from(role));
    if let Some(content) = content(rng) {
        message.insert("content".into(), content);
    }
    if role == "assistant" {
        if rng.chance(30) {
            let key = *rng.pick(&["reasoning_content", "thinking", "reasoning"]);
            let value = match rng.below(4) {
                0 => Json::Null,
                1 => Json::from(""),
                _ => Json::from(text(rng)),
            };
            message.insert(key.into(), value);
        }
        match rng.below(10) {
            0..=5 => {}
            6 => {
                message.insert("tool_calls".into(), json!([]));
            }
            7 => {
                message.insert("tool_calls".into(), Json::Null);
            }
            _ => {
                let calls = (0..1 + rng.below(3)).map(|_| tool_call(rng)).collect();
                message.insert("tool_calls".into(), Json::Array(calls));
            }
        }
    }
    Json::Object(message)
}

fn conversation(rng: &mut Rng) -> Vec<Json> {
    let mut messages = Vec::new();
    if rng.chance(60) {
        messages.push(message(rng, "system"));
    }
    let long = rng.chance(5);
    let turns = if long {
        20 + rng.below(40)
    } else {
        rng.below(9)
    };
    for _ in 0..turns {
        let role = match rng.below(100) {
            0..=39 => "user",
            40..=74 => "assistant",
            75..=92 => "tool",
            93..=95 => "system",
            96..=97 => "developer",
            _ => "",
        };
        let mut message = message(rng, role);
        if rng.chance(1) {
            message["role"] = json!(3);
        }
        messages.push(message);
    }
    messages
}

fn tools(rng: &mut Rng) -> Option<Json> {
    match rng.below(10) {
        0..=4 => None,
        5 => Some(json!([])),
        6 => Some(Json::Null),
        _ => Some(Json::Array(
            (0..1 + rng.below(3))
                .map(|i| {
                    json!({"type": "function", "function": {"name": format!("tool_{i}"),
                        "description": text(rng), "parameters": {"type": "object",
                        "properties": {"q": {"type": "string", "enum": ["é", "<a>", 1.25]}}}}})
                })
                .collect(),
        )),
    }
}

/// Config variables: none, or the ones the template reads in their several states.
fn variables(rng: &mut Rng) -> Map<String, Json> {
    let value = match rng.below(12) {
        0..=5 => return Map::new(),
        6 => json!({"enable_thinking": false}),
        7 => json!({"enable_thinking": true}),
        8 => json!({"enable_thinking": null, "date_string": "26 Jul 2024"}),
        9 => json!({"enable_thinking": "false"}),
        10 => json!({"add_generation_prompt": false, "enable_thinking": false}),
        _ => json!({"add_generation_prompt": 0, "enable_thinking": 0}),
    };
    value.as_object().unwrap().clone()
}

struct Case {
    messages: Vec<Value>,
    tools: Value,
    generation: bool,
    variables: Map<String, Json>,
}

fn case(rng: &mut Rng) -> Case {
    Case {
        messages: conversation(rng).iter().map(message_value).collect(),
        tools: tools(rng)
            .as_ref()
            .map_or_else(|| Value::from(()), json_value),
        generation: rng.chance(70),
        variables: variables(rng),
    }
}

struct Vm {
    template: ChatTemplate,
    renderer: Renderer,
    prepared: crate::render::Prepared,
}

impl Vm {
    fn new(source: &str, limits: Limits) -> Vm {
        let mut template =
            ChatTemplate::from_source(ChatTemplateSource::Embedded, None, false).unwrap();
        template.source = source.to_owned();
        let (renderer, prepared) = template.renderer_with(limits).unwrap();
        Vm {
            template,
            renderer,
            prepared,
        }
    }

    fn render(&self, case: &Case) -> Result<String, String> {
        let context = ContextBase::new(&self.template, case.generation, &case.variables)
            .context(case.messages.clone(), case.tools.clone());
        self.renderer
            .render(&self.prepared, &context, Clock::synthetic(0))
            .map(|r| r.text)
            .map_err(|e| e.to_string())
    }

    fn variables(&self, case: &Case, limits: Limits) -> Variables {
        let base = ContextBase::new(&self.template, case.generation, &case.variables);
        Variables::new(base.variables().unwrap(), limits)
    }
}

#[test]
fn the_embedded_default_and_the_fixture_are_the_qwen3_source() {
    let embedded = ChatTemplate::from_source(ChatTemplateSource::Embedded, None, false).unwrap();
    assert_eq!(embedded.source, SOURCE);
    assert_eq!(lookup(&embedded.source).map(|t| t.name()), Some("qwen3"));
}

/// Seeded random conversations: wherever the native renderer answers, minijinja renders
/// the same bytes; it answers for most of them; and its fuel bound is at least twice what
/// the VM spent (measured on every tenth case).
#[test]
fn qwen3_renders_what_minijinja_renders() {
    let limits = Limits::default();
    let vm = Vm::new(SOURCE, limits);
    let probed = Vm::new(
        &format!("{SOURCE}{{{{ {}() }}}}", crate::render::FUEL_PROBE),
        limits,
    );
    let mut rng = Rng(0x5eed_0009);
    let (mut native, mut fallback, mut vm_failed, mut ordinary, mut ordinary_native) =
        (0, 0, 0, 0, 0);
    let mut worst_ratio = 0.0f64;
    const CASES: usize = 20_000;
    for n in 0..CASES {
        let case = case(&mut rng);
        let expected = vm.render(&case);
        let variables = vm.variables(&case, limits);
        assert!(QWEN3.accepts(&variables));
        let answer = QWEN3.render(&case.messages, &case.tools, &variables);
        match (&answer, &expected) {
            (Some(text), Ok(expected)) => {
                assert_eq!(text, expected, "case {n}");
                native += 1;
            }
            (Some(text), Err(e)) => {
                panic!("case {n}: native answered {text:?}, minijinja failed: {e}")
            }
            (None, Err(_)) => vm_failed += 1,
            (None, Ok(_)) => fallback += 1,
        }
        // Ordinary: every message a user, assistant or system turn with string content.
        let plain = case.messages.iter().all(|m| {
            let role = m.get_attr("role").unwrap();
            matches!(role.as_str(), Some("user" | "assistant" | "system"))
                && m.get_attr("content").unwrap().as_str().is_some()
                && m.get_attr("tool_calls").unwrap().is_undefined()
        }) && !case.messages.is_empty();
        if plain {
            ordinary += 1;
            ordinary_native += usize::from(answer.is_some());
        }
        if n % 10 == 0 {
            if let (Some((text, bound)), Ok(with_fuel)) = (
                Qwen3.render_unbounded(&case.messages, &case.tools, &variables),
                probed.render(&case),
            ) {
                let used: u64 = with_fuel[text.len()..].parse().unwrap();
                worst_ratio = worst_ratio.max(used as f64 / bound as f64);
                assert!(used * 2 <= bound, "case {n}: fuel {used}, bound {bound}");
            }
        }
    }
    eprintln!(
        "qwen3: {native} native, {fallback} fell back, {vm_failed} failed in minijinja too, of {CASES}; ordinary {ordinary_native}/{ordinary}; worst fuel used/bound {worst_ratio:.3}"
    );
    assert_eq!(
        ordinary_native, ordinary,
        "every ordinary conversation is native"
    );
    assert!(native * 2 > CASES, "most conversations are native");
}

/// The fuel bound holds on long inputs too: big contents and many turns.
#[test]
fn the_fuel_bound_holds_on_long_conversations() {
    let limits = Limits::default();
    let probed = Vm::new(
        &format!("{SOURCE}{{{{ {}() }}}}", crate::render::FUEL_PROBE),
        limits,
    );
    let big = "é<think>中\n".repeat(5_000) + "</think>\n\nend";
    for turns in [1, 10, 200] {
        let messages: Vec<Json> = (0..turns)
            .flat_map(|i| {
                [
                    json!({"role": "user", "content": format!("q{i} {big}")}),
                    json!({"role": "assistant", "content": big.clone(),
                           "tool_calls": [{"function": {"name": "f", "arguments": {"a": big.clone()}}}]}),
                    json!({"role": "tool", "content": big.clone()}),
                ]
            })
            .collect();
        let case = Case {
            messages: messages.iter().map(message_value).collect(),
            tools: json_value(&json!([{"name": big.clone()}])),
            generation: true,
            variables: Map::new(),
        };
        let variables = probed.variables(&case, limits);
        let (text, bound) = Qwen3
            .render_unbounded(&case.messages, &case.tools, &variables)
            .unwrap();
        let mut unlimited = limits;
        unlimited.fuel = u64::MAX / 128;
        unlimited.max_output_bytes = usize::MAX / 16;
        let probed = Vm::new(
            &format!("{SOURCE}{{{{ {}() }}}}", crate::render::FUEL_PROBE),
            unlimited,
        );
        let with_fuel = probed.render(&case).unwrap();
        assert_eq!(&with_fuel[..text.len()], text);
        let used: u64 = with_fuel[text.len()..].parse().unwrap();
        assert!(
            used * 2 <= bound,
            "{turns} turns: fuel {used}, bound {bound}"
        );
    }
}

/// One byte changed anywhere in the source, and the template has no native renderer.
#[test]
fn a_changed_byte_disables_the_native_renderer() {
    assert!(lookup(SOURCE).is_some());
    for at in [0, 1, SOURCE.len() / 2, SOURCE.len() - 1] {
        let mut bytes = SOURCE.as_bytes().to_vec();
        bytes[at] = if bytes[at] == b' ' { b'\t' } else { b' ' };
        let changed = String::from_utf8(bytes).unwrap();
        assert!(lookup(&changed).is_none(), "byte {at}");
    }
    assert!(lookup(&format!("{SOURCE}\n")).is_none());
    assert!(lookup(&SOURCE[..SOURCE.len() - 1]).is_none());
}

/// A variable that shadows a name the template assigns (or the `namespace` global) keeps
/// the template on minijinja; the variables it reads do not.
#[test]
fn variables_that_shadow_the_templates_names_keep_it_on_minijinja() {
    let template = ChatTemplate::from_source(ChatTemplateSource::Embedded, None, false).unwrap();
    let accepts = |variables: Json| {
        let base = ContextBase::new(&template, true, variables.as_object().unwrap());
        base.variables()
            .map(|v| Variables::new(v, Limits::default()))
            .is_some_and(|v| QWEN3.accepts(&v))
    };
    assert!(accepts(
        json!({"enable_thinking": false, "date_string": "x"})
    ));
    for name in ["namespace", "ns", "content", "loop", "messages", "tools"] {
        assert!(!accepts(json!({ name: 1 })), "{name}");
    }
}

#[test]
fn the_switch_reads_zero_as_off() {
    assert!(super::enabled_by(None));
    assert!(super::enabled_by(Some(std::ffi::OsStr::new("1"))));
    assert!(!super::enabled_by(Some(std::ffi::OsStr::new("0"))));
}
