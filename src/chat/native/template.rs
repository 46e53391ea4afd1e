//! What a native chat template renderer is given and must answer, and the minijinja
//! semantics the renderers share (taken from minijinja itself wherever it has them).

use crate::render::Limits;
use minijinja::value::{Value, ValueKind};

/// The context's variables other than `messages` and `tools` (`add_generation_prompt`, the
/// special tokens, config `chat_variables:`), and the sandbox limits the VM would render
/// under.
pub struct Variables {
    variables: Vec<(String, Value)>,
    pub limits: Limits,
}

impl Variables {
    pub fn new(variables: Vec<(String, Value)>, limits: Limits) -> Variables {
        Variables { variables, limits }
    }

    /// The variable's value, undefined where the context has none (as the VM looks it up:
    /// the last insert of a key wins, and the context was built with that order).
    pub fn get(&self, name: &str) -> Value {
        self.variables
            .iter()
            .rev()
            .find(|(key, _)| key == name)
            .map_or(Value::UNDEFINED, |(_, value)| value.clone())
    }

    /// Whether any variable is named one of `names`.
    pub fn names_any(&self, names: &[&str]) -> bool {
        self.variables
            .iter()
            .any(|(key, _)| names.contains(&key.as_str()))
    }
}

/// A chat template rendered natively: the text minijinja renders for the same context,
/// byte for byte, or `None` for any input it does not replicate exactly (the caller then
/// renders with minijinja).
pub trait NativeTemplate: Sync {
    /// A short name for messages and tests (`qwen3`).
    fn name(&self) -> &'static str;

    /// Whether this template can be rendered natively with these variables at all (none
    /// of them shadows a name the template assigns or a global it calls).
    fn accepts(&self, variables: &Variables) -> bool;

    /// The render of `messages` (template values, [`crate::chat::message_value`]) and
    /// `tools` (none without tools), or `None`.
    fn render(&self, messages: &[Value], tools: &Value, variables: &Variables) -> Option<String>;
}

/// A string value's text; `None` for any other kind (the templates would concatenate or
/// call string methods on it, which minijinja does differently or fails).
pub fn text(value: &Value) -> Option<&str> {
    if value.kind() == ValueKind::String {
        value.as_str()
    } else {
        None
    }
}

pub use crate::render::printed;

/// A map value's attribute, as `value.name` reads it (undefined where missing).
pub fn attr(value: &Value, name: &str) -> Value {
    value.get_attr(name).unwrap_or(Value::UNDEFINED)
}

/// `value is false`: only the boolean `false` (minijinja's `is_false`).
pub fn is_false(value: &Value) -> bool {
    value.kind() == ValueKind::Bool && !value.is_true()
}

/// The chat environment's `value | tojson`, the same function and memo as its filter.
pub fn tojson(value: &Value) -> Option<Value> {
    crate::render::transformers_tojson(value).ok()
}

/// Whether a render whose fuel is at most `bound`, with `text` as its output, fits the
/// sandbox: the VM must not fail where the native renderer answers.
pub fn within_limits(bound: u64, text: &str, limits: &Limits) -> bool {
    bound < limits.fuel && text.len() < limits.max_output_bytes
}
