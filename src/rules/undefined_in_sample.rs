//! PL011 undefined-in-sample: docs in `rules/PL011-undefined-in-sample.yaml`.
//!
//! Under `undefined: lenient` (or `chainable`) a variable a sample leaves out renders as
//! nothing, as it does in the application. That is allowed, but worth knowing: the render
//! may not be the prompt production sends. It is not a rule over renders' tokens: it reads
//! the samples themselves (`check::sample_findings` calls [`check`]).

use super::{meta, Finding, Label, Reads, Rule, RuleCode};
use crate::render::uses::VariableUse;
use crate::render::UndefinedMode;
use minijinja::value::{Value, ValueKind};
use std::collections::{BTreeMap, BTreeSet};

pub struct UndefinedInSample;

impl Rule for UndefinedInSample {
    fn code(&self) -> RuleCode {
        RuleCode::UndefinedInSample
    }

    fn reads(&self) -> Reads {
        Reads::Samples
    }
}

/// One finding per variable some sample leaves undefined, at its first read.
/// `variables` are the dotted paths the template reads; `contexts` the samples, in file
/// order; `locate` finds a variable's first read.
pub fn check(
    variables: &BTreeSet<String>,
    contexts: &[Value],
    samples_file: &str,
    mode: UndefinedMode,
    locate: impl Fn(&str) -> Option<VariableUse>,
) -> Vec<Finding> {
    if mode == UndefinedMode::Strict {
        return Vec::new();
    }
    // The shortest undefined part of each path, with the samples (1-based) that lack it.
    let mut undefined: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (index, context) in contexts.iter().enumerate() {
        let missing: BTreeSet<String> = variables
            .iter()
            .filter_map(|path| undefined_part(context, path))
            .collect();
        for variable in missing {
            undefined.entry(variable).or_default().push(index + 1);
        }
    }
    let rule = meta(RuleCode::UndefinedInSample);
    let mode_name = match mode {
        UndefinedMode::Chainable => "chainable",
        _ => "lenient",
    };
    undefined
        .into_iter()
        .map(|(variable, samples)| {
            let which = match samples.as_slice() {
                [one] => format!("sample {one}"),
                many => format!(
                    "samples {}",
                    many.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
                ),
            };
            let found = locate(&variable);
            let (span, related) = match &found {
                Some(VariableUse {
                    include_tag: Some(tag),
                    template,
                    span,
                    line,
                    column,
                }) => (
                    tag.clone(),
                    vec![Label {
                        template: template.clone(),
                        span: span.clone(),
                        text: format!("{line}:{column}: `{variable}` is read here"),
                    }],
                ),
                Some(found) => (found.span.clone(), Vec::new()),
                None => (0..0, Vec::new()),
            };
            Finding {
                saving: None,
                cadence: None,
                rule,
                severity: rule.severity,
                message: format!(
                    "`{variable}` is undefined in {which} of {samples_file}, so it renders as nothing there (`undefined: {mode_name}`)"
                ),
                help: format!(
                    "if the application always sets `{variable}`, give it a value in every sample of {samples_file}; if it may really be missing, this render is what production sends"
                ),
                span,
                label: match found {
                    Some(VariableUse {
                        include_tag: Some(_),
                        ..
                    }) => format!("the included template reads `{variable}`"),
                    _ => format!("`{variable}` read here"),
                },
                related,
            }
        })
        .collect()
}

/// The attributes Python gives every `dict`: never undefined on a mapping a sample defines.
const PYTHON_DICT_METHODS: &[&str] = &[
    "clear",
    "copy",
    "fromkeys",
    "get",
    "items",
    "keys",
    "pop",
    "popitem",
    "setdefault",
    "update",
    "values",
];

/// The leading part of `path` that `context` does not define: `user` when there is no
/// `user`, `user.name` when `user` is a mapping without `name`. `None` when it is defined,
/// or when a value on the way is not a mapping (its attributes are not the samples' to say).
fn undefined_part(context: &Value, path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split('.').collect();
    let mut current = context.clone();
    for (depth, part) in parts.iter().enumerate() {
        if current.kind() != ValueKind::Map {
            return None;
        }
        let next = current
            .get_item(&Value::from(*part))
            .unwrap_or(Value::UNDEFINED);
        if next.is_undefined() {
            // In Jinja2 a dict's methods are attributes of every mapping (`settings.items()`).
            if depth > 0 && PYTHON_DICT_METHODS.contains(part) {
                return None;
            }
            return Some(parts[..=depth].join("."));
        }
        current = next;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contexts(yaml: &str) -> Vec<Value> {
        let parsed: Vec<serde_json::Value> = serde_yaml_ng::from_str(yaml).unwrap();
        parsed
            .into_iter()
            .map(|c| Value::from(minijinja::value::Serde(c)))
            .collect()
    }

    #[test]
    fn names_each_variable_once_with_the_samples_that_lack_it() {
        let variables: BTreeSet<String> = ["question", "user.name", "user.email", "tools"]
            .map(str::to_owned)
            .into();
        let samples = contexts(
            "- {question: a, user: {name: Ada}}\n- {user: {}}\n- {question: c, user: 'x'}\n",
        );
        let findings = check(
            &variables,
            &samples,
            "t.samples.yaml",
            UndefinedMode::Lenient,
            |_| None,
        );
        let messages: Vec<&str> = findings.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(messages.len(), 4, "{messages:#?}");
        assert!(messages[0].starts_with("`question` is undefined in sample 2 of t.samples.yaml"));
        assert!(messages[1].starts_with("`tools` is undefined in samples 1, 2, 3 of"));
        assert!(messages[2].starts_with("`user.email` is undefined in samples 1, 2 of"));
        assert!(messages[3].starts_with("`user.name` is undefined in sample 2 of"));
        assert!(findings
            .iter()
            .all(|f| f.rule.code == RuleCode::UndefinedInSample));
        assert!(check(
            &variables,
            &samples,
            "t.samples.yaml",
            UndefinedMode::Strict,
            |_| None
        )
        .is_empty());
    }

    #[test]
    fn a_dict_method_of_a_defined_mapping_is_not_undefined() {
        let variables: BTreeSet<String> = ["settings.items", "d.get", "d.missing", "items"]
            .map(str::to_owned)
            .into();
        let samples = contexts("- {settings: {a: 1}, d: {a: 2}}\n");
        let findings = check(
            &variables,
            &samples,
            "t.samples.yaml",
            UndefinedMode::Lenient,
            |_| None,
        );
        let messages: Vec<&str> = findings.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(messages.len(), 2, "{messages:#?}");
        assert!(messages[0].starts_with("`d.missing` is undefined in sample 1"));
        assert!(messages[1].starts_with("`items` is undefined in sample 1"));
    }
}
