//! Prompt templates inside YAML (and JSON) values, found with zero config.
//!
//! A string value is a template when it holds template syntax and sits where prompts sit:
//! under a key named like one (`prompt`, `template`, `system`, `instructions`, `messages`,
//! `content`, `jinja`, `*_prompt`, `*_template`), inside a `templates:` or `prompts:`
//! mapping (SWE-agent's `agent.templates`, NeMo Guardrails' `prompts:`), anywhere in a
//! smolagents prompt file, or when it reads as prose. A Python `{var}` value needs more: a
//! prompt's place and a text that reads as instructions (`{time} {level}` is a log format).
//! The format is the host's word when it has one: a sibling `template_format:` (LangChain,
//! Semantic Kernel's prompt YAML, whose default is its own syntax), CrewAI's `agents.yaml` /
//! `tasks.yaml` (their `role`/`goal`/`backstory` and `description`/`expected_output` are
//! `{var}` templates, with or without a field); else the text decides
//! ([`crate::formats::detect`]). A declared format no renderer knows is reported unchecked.
//! Files that are something else with `{{ }}` in them stay quiet: GitHub workflows and
//! actions, Ansible, Helm, compose files, Kubernetes manifests and OpenAPI documents.

pub mod scalar;

use super::{EmbeddedTemplate, Extracted, HostKind, HostMap, Segment, Unchecked};
use crate::formats::detect::{self, Decision};
use crate::formats::TemplateFormat;
use regex::Regex;
use scalar::Style;
use std::path::Path;
use std::sync::OnceLock;

/// A YAML node with what the extractor needs of it: the structure, and for each scalar its
/// value, how it is written and where.
#[derive(Debug)]
pub enum Node {
    Scalar(Scalar),
    Mapping(Vec<(Scalar, Node)>),
    Sequence(Vec<Node>),
    /// An alias, or a key that is not a scalar: never a template.
    Other,
}

#[derive(Debug, Clone)]
pub struct Scalar {
    /// The value as the parser decoded it.
    pub value: String,
    pub style: Style,
    /// Byte offsets of the scalar in the host (quotes included; a block scalar from its
    /// indicator).
    pub start: usize,
    pub end: usize,
    /// 1-based line of `start`.
    pub line: usize,
    /// The indentation of the line the scalar starts on (an indentation indicator counts
    /// from it).
    pub line_indent: usize,
}

/// A host file that does not parse as YAML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlSyntaxError {
    pub message: String,
    /// Byte offset of the problem.
    pub offset: usize,
}

/// What decides which values are templates, from config `embedded:`.
#[derive(Debug, Clone, Copy)]
pub struct Recognition<'a> {
    /// Zero-config recognition (config `embedded: {recognize: false}` turns it off).
    pub recognize: bool,
    /// Key patterns the config names for this file: values there are templates, Jinja
    /// syntax or not. `*` is one key, `**` any number, `[*]` any list index.
    pub keys: &'a [String],
}

impl Recognition<'_> {
    pub const ZERO_CONFIG: Recognition<'static> = Recognition {
        recognize: true,
        keys: &[],
    };
}

/// The templates in a YAML host file. `path` is the file's path (its folders tell Ansible
/// roles and Helm charts apart).
pub fn extract(
    path: &Path,
    source: &str,
    recognition: Recognition,
) -> Result<Vec<EmbeddedTemplate>, YamlSyntaxError> {
    Ok(extract_all(path, source, recognition)?.templates)
}

/// [`extract`] with the prompt-like values it cannot check (a format no renderer knows).
pub fn extract_all(
    path: &Path,
    source: &str,
    recognition: Recognition,
) -> Result<Extracted, YamlSyntaxError> {
    let recognize = recognition.recognize && !quiet_by_path(path);
    if !recognize && recognition.keys.is_empty() {
        return Ok(Extracted::default());
    }
    let documents = parse(source)?;
    Ok(extract_documents(
        HostKind::Yaml,
        source,
        &documents,
        recognize,
        recognition.keys,
        text_and_map,
    ))
}

/// How a host decodes a string value into its text and map (YAML's scalars, TOML's
/// strings).
pub type Decode = fn(&str, &Scalar) -> (String, HostMap);

/// The templates in a host's parsed documents (YAML's, or a JSON or TOML file's one), each
/// string's text decoded by `decode`.
pub fn extract_documents(
    kind: HostKind,
    source: &str,
    documents: &[Node],
    recognize: bool,
    keys: &[String],
    decode: Decode,
) -> Extracted {
    let patterns: Vec<Regex> = keys.iter().map(|k| key_pattern(k)).collect();
    let mut found = Extracted::default();
    for document in documents {
        let recognize = recognize && !quiet_document(document);
        let everything = recognize && is_agent_prompt_file(document);
        let framework = if recognize {
            Framework::of(document)
        } else {
            None
        };
        let mut walk = Walk {
            kind,
            decode,
            source,
            recognize,
            everything,
            framework,
            patterns: &patterns,
            found: &mut found,
        };
        walk.node(document, &mut Vec::new(), None, Context::default());
    }
    found
}

/// A framework whose files say by their shape which values are prompts, and in which
/// format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framework {
    /// CrewAI's `agents.yaml` (`role`, `goal`, `backstory`) or `tasks.yaml`
    /// (`description`, `expected_output`): `{var}` interpolation.
    CrewAi,
}

impl Framework {
    /// A mapping of names to agents or tasks, each with CrewAI's keys.
    fn of(document: &Node) -> Option<Framework> {
        let Node::Mapping(entries) = document else {
            return None;
        };
        let crew = entries.iter().filter(|(_, value)| match value {
            Node::Mapping(keys) => {
                let has = |name: &str| keys.iter().any(|(k, _)| k.value == name);
                (has("role") && (has("goal") || has("backstory")))
                    || (has("description") && has("expected_output"))
            }
            _ => false,
        });
        (crew.count() > 0).then_some(Framework::CrewAi)
    }

    /// Whether the value at `steps` is one of the framework's prompts.
    fn prompt_at(self, steps: &[Step]) -> bool {
        match (self, steps) {
            (Framework::CrewAi, [Step::Key(_), Step::Key(key)]) => matches!(
                *key,
                "role" | "goal" | "backstory" | "description" | "expected_output"
            ),
            _ => false,
        }
    }
}

/// What a value's ancestors say about it.
#[derive(Debug, Clone, Copy, Default)]
struct Context {
    /// An ancestor is a `templates:`/`prompts:` collection.
    under_prompts: bool,
    /// The nearest `template_format:` at or above the value's mapping.
    declared: Option<TemplateFormat>,
}

/// One step of a value's path: a mapping key or a list index.
#[derive(Debug, Clone)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

fn path_string(steps: &[Step]) -> String {
    let mut out = String::new();
    for step in steps {
        match step {
            Step::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

struct Walk<'a, 'f> {
    kind: HostKind,
    decode: Decode,
    source: &'a str,
    recognize: bool,
    /// A file whose every Jinja value is a prompt (smolagents' prompt YAML).
    everything: bool,
    framework: Option<Framework>,
    patterns: &'f [Regex],
    found: &'f mut Extracted,
}

impl<'a> Walk<'a, '_> {
    /// `key_line` is the line of the key that owns this node (suppressions read it).
    fn node(
        &mut self,
        node: &'a Node,
        steps: &mut Vec<Step<'a>>,
        key_line: Option<usize>,
        context: Context,
    ) {
        match node {
            Node::Scalar(scalar) => self.scalar(scalar, steps, key_line, context),
            Node::Sequence(items) => {
                for (i, item) in items.iter().enumerate() {
                    steps.push(Step::Index(i));
                    let line = match item {
                        Node::Scalar(s) => Some(s.line),
                        _ => key_line,
                    };
                    self.node(item, steps, line, context);
                    steps.pop();
                }
            }
            Node::Mapping(entries) => {
                let mut context = context;
                // LangChain and Semantic Kernel say which template language a value is in.
                let format = entries.iter().find_map(|(k, v)| match v {
                    Node::Scalar(v) if k.value == "template_format" => Some(v),
                    _ => None,
                });
                if let Some(format) = format {
                    match detect::declared(&format.value) {
                        Some(declared) => context.declared = Some(declared),
                        None => {
                            // A format no renderer knows: its template is not checked, and
                            // the report says so.
                            let template = entries.iter().find(|(k, _)| k.value == "template");
                            if self.recognize {
                                if let Some((key, Node::Scalar(_))) = template {
                                    steps.push(Step::Key(&key.value));
                                    self.found.unchecked.push(Unchecked {
                                        key: path_string(steps),
                                        line: key.line,
                                        reason: format!(
                                            "template_format `{}` is not a format prefixlint renders",
                                            format.value
                                        ),
                                    });
                                    steps.pop();
                                }
                            }
                            return;
                        }
                    }
                } else if entries.iter().any(|(k, v)| {
                    k.value == "_type"
                        && matches!(v, Node::Scalar(v) if matches!(v.value.as_str(), "prompt" | "few_shot"))
                }) {
                    // A LangChain prompt saved as YAML: its default is the `{var}` format.
                    context.declared = Some(TemplateFormat::Format);
                } else if is_semantic_kernel_prompt(entries) {
                    // Semantic Kernel's prompt YAML: its own syntax unless it says otherwise.
                    context.declared = Some(TemplateFormat::SemanticKernel);
                }
                for (key, value) in entries {
                    let lower = key.value.to_ascii_lowercase();
                    let collection = matches!(lower.as_str(), "templates" | "prompts");
                    steps.push(Step::Key(&key.value));
                    let inner = Context {
                        under_prompts: context.under_prompts || collection,
                        ..context
                    };
                    self.node(value, steps, Some(key.line), inner);
                    steps.pop();
                }
            }
            Node::Other => {}
        }
    }

    fn scalar(
        &mut self,
        scalar: &'a Scalar,
        steps: &[Step<'a>],
        key_line: Option<usize>,
        context: Context,
    ) {
        let path = path_string(steps);
        let named = self.patterns.iter().any(|p| p.is_match(&path));
        let framework = self
            .framework
            .filter(|framework| framework.prompt_at(steps));
        let declared = context
            .declared
            .filter(|_| template_key(steps))
            .or(framework.map(|Framework::CrewAi| TemplateFormat::CrewAi));
        let decision = detect::decide(declared, None, &scalar.value);
        let recognized = self.recognize
            && match (&decision, declared) {
                // The host says it is a prompt and in which format.
                (Some(_), Some(_)) => !scalar.value.trim().is_empty(),
                (Some(decision), None) => self.recognized(&scalar.value, steps, context, decision),
                (None, _) => false,
            };
        if !(named || recognized) {
            return;
        }
        let format = decision
            .as_ref()
            .map_or(TemplateFormat::Jinja, |d| d.format);
        let (text, map) = (self.decode)(self.source, scalar);
        self.found.templates.push(EmbeddedTemplate {
            kind: self.kind,
            key: path,
            anchor_line: key_line.unwrap_or(scalar.line),
            text,
            map,
            format,
            format_note: decision.and_then(|d| d.note()),
        });
    }

    /// A value whose host declares no format: a template by its place and its text.
    fn recognized(
        &self,
        value: &str,
        steps: &[Step],
        context: Context,
        decision: &Decision,
    ) -> bool {
        if detect::is_html_page(value) {
            return false;
        }
        let place = self.everything || context.under_prompts || prompt_key(steps);
        match decision.format {
            // `{var}` braces are everywhere (log formats, URLs, paths): a prompt's place and
            // a text that reads as one.
            TemplateFormat::Format => {
                (place && (detect::reads_as_prompt(value) || context.under_prompts))
                    || (self.everything && decision.confidence >= detect::Confidence::Certain)
            }
            _ => place || is_prose(value),
        }
    }
}

/// The value of a `template:` key (or a key that names a prompt) takes its mapping's
/// `template_format:`.
fn template_key(steps: &[Step]) -> bool {
    prompt_key(steps)
}

/// Semantic Kernel's prompt YAML: a `template:` beside `input_variables:` or
/// `execution_settings:` (and a `name:`).
fn is_semantic_kernel_prompt(entries: &[(Scalar, Node)]) -> bool {
    let has = |name: &str| entries.iter().any(|(k, _)| k.value == name);
    has("template") && has("name") && (has("input_variables") || has("execution_settings"))
}

/// The scalar's text and its map to the host: exact where decoding it again from the host
/// gives the parser's value, else every byte at the scalar's start.
pub fn text_and_map(source: &str, scalar: &Scalar) -> (String, HostMap) {
    // A block scalar ends at its first less-indented line, which the decoder finds.
    let end = match scalar.style {
        Style::Literal | Style::Folded => source.len(),
        _ => scalar.end.min(source.len()),
    };
    let start = match scalar.style {
        Style::Literal | Style::Folded => block_indicator(source, scalar.start),
        _ => scalar.start,
    };
    let decoded = scalar::decode(source, start, end, scalar.style, scalar.line_indent);
    if decoded.text == scalar.value {
        return (decoded.text, HostMap::new(decoded.segments));
    }
    let coarse = HostMap::new(vec![Segment {
        text_start: 0,
        text_len: scalar.value.len(),
        host_start: scalar.start,
        host_len: scalar.value.len() + 1,
    }]);
    (scalar.value.clone(), coarse)
}

/// The `|` or `>` of a block scalar whose content starts at `content`: the parser's span
/// starts at the content, and the header is the last non-blank line before it.
fn block_indicator(source: &str, content: usize) -> usize {
    let mut line_start = source[..content].rfind('\n').map_or(0, |i| i + 1);
    if source[line_start..content].trim().is_empty() {
        // The content starts its line: the header is on an earlier one.
        while line_start > 0 {
            let previous = source[..line_start - 1].rfind('\n').map_or(0, |i| i + 1);
            let line = &source[previous..line_start - 1];
            line_start = previous;
            if !line.trim().is_empty() {
                let code = line.find(" #").map_or(line, |i| &line[..i]);
                if let Some(at) = code.rfind(['|', '>']) {
                    return previous + at;
                }
                break;
            }
        }
    }
    content
}

/// The nearest key above the value (through list indexes) names a prompt.
fn prompt_key(steps: &[Step]) -> bool {
    let Some(key) = steps.iter().rev().find_map(|s| match s {
        Step::Key(k) => Some(k),
        Step::Index(_) => None,
    }) else {
        return false;
    };
    let key = key.to_ascii_lowercase();
    const NAMES: &[&str] = &[
        "prompt",
        "prompts",
        "template",
        "templates",
        "system",
        "system_message",
        "instruction",
        "instructions",
        "message",
        "messages",
        "content",
        "jinja",
        "user",
        "assistant",
    ];
    const SUFFIXES: &[&str] = &[
        "_prompt",
        "_template",
        "_instruction",
        "_instructions",
        "_message",
    ];
    NAMES.contains(&key.as_str()) || SUFFIXES.iter().any(|s| key.ends_with(s))
}

/// Jinja syntax outside GitHub's `${{ }}` and Go templates' `{{ .Field }}`.
pub fn has_jinja(text: &str) -> bool {
    crate::formats::detect::has_jinja(text)
}

/// Prose: a value that reads as sentences, not as a setting.
fn is_prose(text: &str) -> bool {
    static TAGS: OnceLock<Regex> = OnceLock::new();
    let tags = TAGS
        .get_or_init(|| Regex::new(r"(?s)\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}").expect("valid regex"));
    let bare = tags.replace_all(text, " ");
    let words = bare
        .split_whitespace()
        .filter(|w| w.chars().any(char::is_alphabetic))
        .count();
    words >= 12 && bare.contains(['.', '?', ':', '!'])
}

/// Files that hold `{{ }}` and are not prompts, by where they live.
fn quiet_by_path(path: &Path) -> bool {
    let parts: Vec<String> = path
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_ascii_lowercase())
        .collect();
    let name = parts.last().map(String::as_str).unwrap_or("");
    let dirs = &parts[..parts.len().saturating_sub(1)];
    let in_dir = |d: &str| dirs.iter().any(|p| p == d);
    // GitHub workflows and actions, GitLab CI.
    if dirs
        .windows(2)
        .any(|w| w[0] == ".github" && w[1] == "workflows")
        || matches!(name, "action.yml" | "action.yaml" | ".gitlab-ci.yml")
    {
        return true;
    }
    // Helm charts, compose files, Ansible's layout.
    if matches!(
        name,
        "chart.yaml" | "values.yaml" | "requirements.yml" | "galaxy.yml"
    ) || name.starts_with("docker-compose")
        || name.starts_with("compose.")
        || [
            "group_vars",
            "host_vars",
            "roles",
            "handlers",
            "playbooks",
            "inventory",
        ]
        .iter()
        .any(|d| in_dir(d))
    {
        return true;
    }
    // A Helm chart's templates folder sits beside its Chart.yaml.
    let parent = path.parent();
    parent.is_some_and(|p| {
        p.file_name().is_some_and(|n| n == "templates")
            && p.parent()
                .is_some_and(|chart| chart.join("Chart.yaml").is_file())
    })
}

/// Documents that hold `{{ }}` and are not prompts, by their shape.
fn quiet_document(document: &Node) -> bool {
    match document {
        Node::Mapping(entries) => {
            let has = |name: &str| entries.iter().any(|(k, _)| k.value == name);
            // GitHub workflows and actions; Kubernetes manifests; compose files.
            (has("jobs") && (has("on") || has("true")))
                || has("openapi")
                || has("swagger")
                || (has("runs") && (has("inputs") || has("name")))
                || (has("apiVersion") && has("kind"))
                || (has("services")
                    && entries
                        .iter()
                        .any(|(k, v)| k.value == "services" && services_with_images(v)))
        }
        // Ansible plays and task lists.
        Node::Sequence(items) => items.iter().any(|item| match item {
            Node::Mapping(entries) => entries.iter().any(|(k, _)| {
                ANSIBLE_KEYS.contains(&k.value.as_str()) || k.value.starts_with("ansible.")
            }),
            _ => false,
        }),
        _ => false,
    }
}

const ANSIBLE_KEYS: &[&str] = &[
    "hosts",
    "tasks",
    "roles",
    "handlers",
    "become",
    "register",
    "when",
    "loop",
    "with_items",
    "notify",
    "import_tasks",
    "include_tasks",
    "import_role",
    "include_role",
    "import_playbook",
    "gather_facts",
    "pre_tasks",
    "post_tasks",
    "delegate_to",
    "changed_when",
    "failed_when",
    // Modules, which only a task has as a key.
    "copy",
    "shell",
    "command",
    "apt",
    "yum",
    "dnf",
    "service",
    "systemd",
    "lineinfile",
    "blockinfile",
    "debug",
    "set_fact",
    "include_vars",
    "get_url",
];

fn services_with_images(node: &Node) -> bool {
    match node {
        Node::Mapping(services) => services.iter().any(|(_, service)| match service {
            Node::Mapping(keys) => keys.iter().any(|(k, _)| {
                matches!(
                    k.value.as_str(),
                    "image" | "build" | "ports" | "volumes" | "environment"
                )
            }),
            _ => false,
        }),
        _ => false,
    }
}

/// smolagents' prompt YAML: `system_prompt` beside its `planning`, `managed_agent` or
/// `final_answer` sections.
fn is_agent_prompt_file(document: &Node) -> bool {
    let Node::Mapping(entries) = document else {
        return false;
    };
    let has = |name: &str| entries.iter().any(|(k, _)| k.value == name);
    has("system_prompt") && (has("planning") || has("managed_agent") || has("final_answer"))
}

/// A config key pattern as a regex over value paths.
fn key_pattern(pattern: &str) -> Regex {
    let mut re = String::from("^");
    let mut rest = pattern;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("**") {
            re.push_str(".*");
            rest = after;
        } else if let Some(after) = rest.strip_prefix("[*]") {
            re.push_str(r"\[\d+\]");
            rest = after;
        } else if let Some(after) = rest.strip_prefix('*') {
            re.push_str(r"[^.\[\]]+");
            rest = after;
        } else {
            let c = rest.chars().next().unwrap_or_default();
            re.push_str(&regex::escape(&c.to_string()));
            rest = &rest[c.len_utf8()..];
        }
    }
    re.push('$');
    Regex::new(&re).unwrap_or_else(|_| Regex::new("^$").expect("valid regex"))
}

/// Parses a YAML stream into its documents.
pub fn parse(source: &str) -> Result<Vec<Node>, YamlSyntaxError> {
    events::parse(source)
}

mod events;

#[cfg(test)]
mod tests;
