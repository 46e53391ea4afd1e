//! Qwen3's chat template (the embedded default's, `assets/qwen3/tokenizer_config.json`,
//! the same bytes as `fixtures/chat-templates/Qwen-Qwen3-0.6B.jinja`), rendered natively.
//!
//! Each step below names the template line it replicates. Every value the template
//! concatenates, compares or calls a string method on must be a string here; anything else
//! (and an empty conversation, where `messages[0].role` fails) answers `None`.

use super::template::{attr, is_false, printed, text, tojson, within_limits};
use super::template::{NativeTemplate, Variables};
use minijinja::value::{Value, ValueKind};

/// The template's source, as `ChatTemplate::source` holds it.
pub const SOURCE: &str = include_str!("../../../fixtures/chat-templates/Qwen-Qwen3-0.6B.jinja");

pub struct Qwen3;

pub static QWEN3: Qwen3 = Qwen3;

/// Names the template assigns, loops over or calls: a context variable of one of these
/// names could change what the VM does (`namespace` is a global function).
const ASSIGNED: [&str; 9] = [
    "namespace",
    "ns",
    "message",
    "index",
    "content",
    "reasoning_content",
    "tool_call",
    "tool",
    "loop",
];

const TOOLS_HEAD: &str = "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>";
const TOOLS_TAIL: &str = "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n";

/// Fuel bound per message, per tool call and per tool: several times the VM's instructions
/// for the longest path through each loop body (the assistant branch with `</think>` split,
/// the reverse scan, the tool-call body), tested against the measured fuel.
const FUEL_BASE: u64 = 2_000;
const FUEL_PER_MESSAGE: u64 = 1_000;
const FUEL_PER_TOOL_CALL: u64 = 500;
const FUEL_PER_TOOL: u64 = 200;

impl NativeTemplate for Qwen3 {
    fn name(&self) -> &'static str {
        "qwen3"
    }

    fn accepts(&self, variables: &Variables) -> bool {
        !variables.names_any(&ASSIGNED)
    }

    fn render(&self, messages: &[Value], tools: &Value, variables: &Variables) -> Option<String> {
        let (text, bound) = self.render_unbounded(messages, tools, variables)?;
        within_limits(bound, &text, &variables.limits).then_some(text)
    }
}

impl Qwen3 {
    /// The text, and a bound on the fuel the VM spends rendering it, before the limits.
    pub fn render_unbounded(
        &self,
        messages: &[Value],
        tools: &Value,
        variables: &Variables,
    ) -> Option<(String, u64)> {
        let n = messages.len();
        // `messages[0].role` on an empty list is an error in the VM.
        if n == 0 {
            return None;
        }
        // `if tools` / `for tool in tools`: none or a list.
        let tools: &[Value] = match tools.kind() {
            ValueKind::None | ValueKind::Undefined => &[],
            ValueKind::Seq => tools.downcast_object_ref::<Vec<Value>>()?,
            _ => return None,
        };
        // Every message a map with a string role; the contents the template reads, strings
        // (a tool's may be undefined: `{{ message.content }}` prints nothing).
        let mut roles: Vec<&str> = Vec::with_capacity(n);
        let mut owned_roles: Vec<Value> = Vec::with_capacity(n);
        let mut contents: Vec<Value> = Vec::with_capacity(n);
        for message in messages {
            if message.kind() != ValueKind::Map {
                return None;
            }
            let role = attr(message, "role");
            text(&role)?;
            let content = attr(message, "content");
            // A tool's content is only printed (`{{ message.content }}`).
            if matches!(role.as_str(), Some("user" | "system" | "assistant")) {
                text(&content)?;
            }
            owned_roles.push(role);
            contents.push(content);
        }
        for role in &owned_roles {
            roles.push(role.as_str()?);
        }
        // The contents of users, systems and assistants are strings; a tool's is printed.
        let printed_contents: Vec<std::borrow::Cow<'_, str>> = roles
            .iter()
            .zip(&contents)
            .map(|(role, content)| match *role {
                "tool" => printed(content),
                _ => std::borrow::Cow::Borrowed(text(content).unwrap_or("")),
            })
            .collect();
        let content_of = |i: usize| -> &str { &printed_contents[i] };
        let mut bytes: u64 = 0;
        let mut tool_calls_seen: u64 = 0;

        let mut out =
            String::with_capacity(256 + printed_contents.iter().map(|c| c.len()).sum::<usize>());
        // `{%- if tools %}` … `{%- else %}` … `{%- endif %}`
        if !tools.is_empty() {
            out.push_str("<|im_start|>system\n");
            if roles[0] == "system" {
                out.push_str(content_of(0));
                out.push_str("\n\n");
            }
            out.push_str(TOOLS_HEAD);
            for tool in tools {
                out.push('\n');
                out.push_str(tojson(tool)?.as_str()?);
            }
            out.push_str(TOOLS_TAIL);
        } else if roles[0] == "system" {
            out.push_str("<|im_start|>system\n");
            out.push_str(content_of(0));
            out.push_str("<|im_end|>\n");
        }

        // The reverse scan: the last user message that is not a tool response wrapped as one.
        let mut last_query_index = n - 1;
        for i in (0..n).rev() {
            if roles[i] == "user" {
                let content = content_of(i);
                if !(content.starts_with("<tool_response>")
                    && content.ends_with("</tool_response>"))
                {
                    last_query_index = i;
                    break;
                }
            }
        }

        for (i, message) in messages.iter().enumerate() {
            let role = roles[i];
            bytes += role.len() as u64 + content_of(i).len() as u64;
            match role {
                "user" => push_turn(&mut out, role, content_of(i)),
                "system" if i > 0 => push_turn(&mut out, role, content_of(i)),
                "assistant" => {
                    let whole = content_of(i);
                    let reasoning_value = attr(message, "reasoning_content");
                    let (content, reasoning): (&str, &str) =
                        if !reasoning_value.is_undefined() && !reasoning_value.is_none() {
                            (whole, text(&reasoning_value)?)
                        } else if whole.contains("</think>") {
                            let content = whole.rsplit("</think>").next()?.trim_start_matches('\n');
                            let reasoning = whole
                                .split("</think>")
                                .next()?
                                .trim_end_matches('\n')
                                .rsplit("<think>")
                                .next()?
                                .trim_start_matches('\n');
                            (content, reasoning)
                        } else {
                            (whole, "")
                        };
                    bytes += reasoning.len() as u64;
                    out.push_str("<|im_start|>");
                    out.push_str(role);
                    if i > last_query_index && (i == n - 1 || !reasoning.is_empty()) {
                        out.push_str("\n<think>\n");
                        out.push_str(reasoning.trim_matches('\n'));
                        out.push_str("\n</think>\n\n");
                        out.push_str(content.trim_start_matches('\n'));
                    } else {
                        out.push('\n');
                        out.push_str(content);
                    }
                    // `{%- if message.tool_calls %}`: a non-empty list, else nothing.
                    let tool_calls = attr(message, "tool_calls");
                    if tool_calls.is_true() {
                        if tool_calls.kind() != ValueKind::Seq {
                            return None;
                        }
                        let calls = tool_calls.downcast_object_ref::<Vec<Value>>()?;
                        for (j, call) in calls.iter().enumerate() {
                            tool_calls_seen += 1;
                            if (j == 0 && !content.is_empty()) || j > 0 {
                                out.push('\n');
                            }
                            if call.kind() != ValueKind::Map {
                                return None;
                            }
                            // `{%- if tool_call.function %}{%- set tool_call = tool_call.function %}`
                            let function = attr(call, "function");
                            let call = if function.is_true() {
                                if function.kind() != ValueKind::Map {
                                    return None;
                                }
                                function
                            } else {
                                call.clone()
                            };
                            let name = attr(&call, "name");
                            let arguments = attr(&call, "arguments");
                            out.push_str("<tool_call>\n{\"name\": \"");
                            let name = printed(&name);
                            bytes += name.len() as u64;
                            out.push_str(&name);
                            out.push_str("\", \"arguments\": ");
                            // `is string` prints it, anything else goes through `tojson`.
                            if let Some(arguments) = text(&arguments) {
                                bytes += arguments.len() as u64;
                                out.push_str(arguments);
                            } else {
                                out.push_str(tojson(&arguments)?.as_str()?);
                            }
                            out.push_str("}\n</tool_call>");
                        }
                    } else if !tool_calls.is_undefined() && tool_calls.kind() != ValueKind::Seq {
                        // A falsy value of another kind: the VM skips it, but keep to lists.
                        return None;
                    }
                    out.push_str("<|im_end|>\n");
                }
                "tool" => {
                    if i == 0 || roles[i - 1] != "tool" {
                        out.push_str("<|im_start|>user");
                    }
                    out.push_str("\n<tool_response>\n");
                    out.push_str(content_of(i));
                    out.push_str("\n</tool_response>");
                    if i == n - 1 || roles[i + 1] != "tool" {
                        out.push_str("<|im_end|>\n");
                    }
                }
                _ => {}
            }
        }
        // `{%- if add_generation_prompt %}` … `enable_thinking is defined and … is false`
        if variables.get("add_generation_prompt").is_true() {
            out.push_str("<|im_start|>assistant\n");
            if is_false(&variables.get("enable_thinking")) {
                out.push_str("<think>\n\n</think>\n\n");
            }
        }
        let bound = FUEL_BASE
            + FUEL_PER_MESSAGE * n as u64
            + FUEL_PER_TOOL_CALL * tool_calls_seen
            + FUEL_PER_TOOL * tools.len() as u64
            + bytes
            + out.len() as u64;
        Some((out, bound))
    }
}

/// `'<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n'`
fn push_turn(out: &mut String, role: &str, content: &str) {
    out.push_str("<|im_start|>");
    out.push_str(role);
    out.push('\n');
    out.push_str(content);
    out.push_str("<|im_end|>\n");
}
