//! Jinja templates in Python source: the string literals that an application hands to
//! Jinja, found with a real Python parser (tree-sitter's Python grammar) and decoded as
//! CPython decodes them, with a [`HostMap`](crate::host::HostMap) from every byte of the
//! text back to the file.
//!
//! # Where a template is recognised
//! - **Named constants:** an assignment to a name that ends in `_prompt` or `_template`,
//!   in any case, or is `prompt`/`template` itself (`PLANNING_PROMPT = """..."""`,
//!   `system_prompt: str = "..."`, `self.user_template = "..."`), at module level, in a
//!   class body (keyed `Agent.SYSTEM_TEMPLATE`) or in a function. Such a value is a
//!   template only if it passes the Jinja test below, is not used with `.format(`,
//!   `.format_map(` or `%` anywhere in the module nor passed to a LangChain prompt in its
//!   default f-string format, and is not markup or SQL by its name
//!   (a word `html`, `htm`, `xml`, `css` or `sql`) or its text (`<!doctype`, `<html`).
//! - **Jinja calls:** the source argument (first, or `source=`/`content=`) of `Template(...)`
//!   and `jinja2.Template(...)` (not `string.Template`, nor a bare `Template` imported from
//!   `string`), and of any `.from_string(...)` (`Environment(...).from_string`,
//!   `env.from_string`, outlines' `Template.from_string`).
//! - **LangChain:** `PromptTemplate(template=..., template_format="jinja2")`,
//!   `X.from_template(..., template_format="jinja2")`, and the `(role, text)` tuples and
//!   plain strings of `X.from_messages([...], template_format="jinja2")`.
//! - **Haystack:** `PromptBuilder(template=...)` (or first argument), and
//!   `ChatPromptBuilder(template=...)` with a string or a list of
//!   `ChatMessage.from_system/from_user/from_assistant(...)`.
//!
//! A call's argument is a template whatever its name; it still must hold `{{` or `{%`.
//! When the argument is a name (or `self.NAME`, `cls.NAME`, `Class.NAME`) bound to a
//! string in the same module, the template is reported once, at the binding, keyed by
//! that name, with what the call applies to it; otherwise it is keyed by the call, e.g.
//! `PromptBuilder(template=)` or `ChatPromptTemplate.from_messages([1])`, at the call's
//! line. A name found both ways is reported once, as the call sees it.
//!
//! # What is evaluated
//! String literals (any of `r`/`u` prefixes, single or triple quotes, every escape,
//! line continuations, `\r\n` read as `\n`), implicit concatenation of adjacent literals,
//! parentheses, `+` of strings, names bound in the same module, and the functions the code
//! applies: `textwrap.dedent`/`dedent`, `inspect.cleandoc`/`cleandoc`, and
//! `.strip()`/`.lstrip()`/`.rstrip()` (with or without a literal set of characters), in
//! any combination, each computed as CPython 3.11 does. Anything else (f-strings, byte
//! strings, t-strings, `.format(...)`, calls to other functions, lone surrogates) has no
//! static value and is left out.
//!
//! # The Jinja test
//! The text must hold `{{` or `{%` (a template of comments only renders constant text).
//! A named constant is not Jinja when the text has a `str.format` replacement field
//! (`{name}`, `{0}`, `{}`, `{name.attr}`, `{name[key]}`, with `!r` and `:spec`, read as
//! `str.format` reads braces, so `{{`/`}}` are escapes) and no `{%` or `{#`: that is a
//! format string that escapes its literal braces.
//!
//! # Errors and limits
//! A file that does not parse, or a literal with an escape Python rejects (`\x4`,
//! `\N{NO SUCH NAME}`), is a [`PythonSyntaxError`]. More than 200 nested brackets are
//! one too (CPython's own limit: "too many nested parentheses"). Nothing here recurses
//! on the depth of the source: the syntax tree is walked with an explicit stack, and the
//! evaluation follows names and nested string expressions at most 32 levels deep.

mod literal;
mod mapped;

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use regex::Regex;
use tree_sitter::{Node, Parser, Tree};

use self::literal::{EscapeError, NotText};
use self::mapped::{MappedText, StripEnds};
use crate::formats::detect;
use crate::formats::TemplateFormat;
use crate::host::{EmbeddedTemplate, Extracted, HostKind, Unchecked};

/// CPython's tokenizer refuses more nested brackets than this (`MAXLEVEL`).
const MAX_NESTING: usize = 200;

/// How many names and nested string expressions deep an evaluation goes (a cycle of names
/// ends here; a long `+` chain is flattened, not nested).
const MAX_EVAL_DEPTH: usize = 32;

/// Cheap check on raw bytes: false means the file surely holds no prompt the extractor
/// finds: no Jinja markup (`{{`, `{%`) and none of the words prompt code is written with
/// (`prompt`, `instruction`, a `"system"` role, `template_format`, in any case). Source is
/// full of dict braces and f-strings, so a `{` alone says nothing.
pub fn may_hold_templates(bytes: &[u8]) -> bool {
    static WORDS: LazyLock<aho_corasick::AhoCorasick> = LazyLock::new(|| {
        aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build([
                "{{",
                "{%",
                "prompt",
                "instruction",
                "\"system\"",
                "'system'",
                "system_message",
                "template_format",
            ])
            .expect("valid patterns")
    });
    WORDS.is_match(bytes)
}

/// Where the source failed to parse (1-based line and column, and the parser's message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct PythonSyntaxError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// Every prompt template in a Python source file, in its format.
pub fn extract(source: &str) -> Result<Vec<EmbeddedTemplate>, PythonSyntaxError> {
    Ok(extract_all(source)?.templates)
}

/// [`extract`], with the prompt-like places that cannot be checked (a prompt loaded from
/// a hub, assembled at run time, or in a format no renderer knows).
pub fn extract_all(source: &str) -> Result<Extracted, PythonSyntaxError> {
    if !may_hold_templates(source.as_bytes()) {
        return Ok(Extracted::default());
    }
    let tree = parse(source)?;
    let module = Module::index(&tree, source)?;
    module.templates()
}

fn parse(source: &str) -> Result<Tree, PythonSyntaxError> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .expect("the Python grammar matches the tree-sitter runtime");
    let tree = parser
        .parse(source, None)
        .ok_or_else(|| syntax_error(source, 0, "the Python parser gave up".to_owned()))?;
    if let Some(node) = first_error(tree.root_node()) {
        let message = if node.is_missing() {
            if node.is_named() {
                format!("expected {}", node.kind().replace('_', " "))
            } else {
                format!("expected `{}`", node.kind())
            }
        } else {
            let text = &source[node.start_byte()..node.end_byte()];
            let first_line = text.lines().next().unwrap_or("").trim();
            let shown: String = first_line.chars().take(40).collect();
            if shown.is_empty() {
                "invalid syntax".to_owned()
            } else {
                format!("invalid syntax at `{shown}`")
            }
        };
        return Err(syntax_error(source, node.start_byte(), message));
    }
    Ok(tree)
}

/// The first ERROR or MISSING node in document order, found without recursion.
fn first_error(root: Node) -> Option<Node> {
    if !root.has_error() {
        return None;
    }
    let mut node = root;
    'descend: loop {
        if node.is_error() || node.is_missing() {
            return Some(node);
        }
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            if child.is_error() || child.is_missing() || child.has_error() {
                node = child;
                continue 'descend;
            }
        }
        return Some(node);
    }
}

fn syntax_error(source: &str, offset: usize, message: String) -> PythonSyntaxError {
    let (line, column) = crate::source::line_col(source, offset);
    PythonSyntaxError {
        line,
        column,
        message,
    }
}

impl EscapeError {
    fn into_syntax_error(self, source: &str) -> PythonSyntaxError {
        syntax_error(
            source,
            self.offset,
            format!("{} in a string literal", self.message),
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ScopeKind {
    Module,
    Class,
    Function,
}

struct Scope<'t> {
    kind: ScopeKind,
    name: &'t str,
    parent: Option<usize>,
}

/// What an assignment binds.
enum Target<'t> {
    Name(&'t str),
    /// `self.system_prompt`: the whole target as written, and its last name.
    Attribute {
        written: String,
        name: &'t str,
    },
}

impl Target<'_> {
    fn name(&self) -> &str {
        match self {
            Target::Name(name) => name,
            Target::Attribute { name, .. } => name,
        }
    }
}

struct Assignment<'t> {
    scope: usize,
    targets: Vec<Target<'t>>,
    value: Node<'t>,
    /// The statement's end byte (where the binding takes effect) and 1-based first line.
    end: usize,
    line: usize,
}

/// One Python module: its scopes, the assignments and the calls that may hold templates.
struct Module<'t> {
    source: &'t str,
    scopes: Vec<Scope<'t>>,
    assignments: Vec<Assignment<'t>>,
    /// `(scope, name)` to its assignments, in source order.
    bindings: HashMap<(usize, &'t str), Vec<usize>>,
    /// Class name to its scope (the first class of that name).
    classes: HashMap<&'t str, usize>,
    /// Calls whose callee may take a template, with their scope.
    calls: Vec<(Node<'t>, usize)>,
    /// Names used with `.format(`, `.format_map(` or `%`.
    formatted: HashSet<&'t str>,
    /// Names used with `.format(`/`.format_map(`, or read by LangChain in its default
    /// `{var}` format: their use declares the format.
    dot_formatted: HashSet<&'t str>,
    /// Names used with `%`.
    percent_formatted: HashSet<&'t str>,
    /// f-strings where prompts are built: a prompt keyword argument's value, a chat
    /// message's `content`, what a `*prompt*` function returns.
    fstring_sites: Vec<Site<'t>>,
    /// String literals with `.format(...)` applied: `"Summarize {text}".format(text=t)`.
    literal_formats: Vec<Site<'t>>,
    /// Prompts loaded at run time from where prefixlint cannot follow (`hub.pull(...)`,
    /// `load_prompt(...)`): the call and why.
    loaders: Vec<(Node<'t>, String)>,
    /// Names that `from string import Template` binds.
    string_templates: HashSet<&'t str>,
    /// The inner assignments of `a = b = "..."`, recorded with the outer one.
    chained: HashSet<usize>,
}

/// A string expression where the code builds a prompt, with its key and line.
struct Site<'t> {
    value: Node<'t>,
    scope: usize,
    key: String,
    line: usize,
}

/// Keyword arguments that take a prompt's text.
const PROMPT_KEYWORDS: &[&str] = &[
    "prompt",
    "system",
    "system_prompt",
    "system_message",
    "instructions",
    "instruction",
    "user_prompt",
    "template",
    "backstory",
    "goal",
    "role_description",
];

/// A template and what it is: `identity` is the node of the string value it was read
/// from (a binding's value, or a call's argument), so one literal is reported once.
struct Candidate {
    identity: usize,
    priority: Priority,
    template: EmbeddedTemplate,
    /// Bindings whose text this template holds (a chat request's messages named by
    /// constants): they are not reported again on their own.
    absorbs: Vec<usize>,
}

/// Which finding wins when one literal is found more than once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Priority {
    /// `X_PROMPT = "..."`.
    Named,
    /// `X_PROMPT = BASE.strip()`: another name applies something to the literal's binding.
    NamedDerived,
    /// A Jinja call's argument: the text as the call renders it.
    Call,
}

impl<'t> Module<'t> {
    fn index(tree: &'t Tree, source: &'t str) -> Result<Self, PythonSyntaxError> {
        let mut module = Module {
            source,
            scopes: vec![Scope {
                kind: ScopeKind::Module,
                name: "",
                parent: None,
            }],
            assignments: Vec::new(),
            bindings: HashMap::new(),
            classes: HashMap::new(),
            calls: Vec::new(),
            formatted: HashSet::new(),
            dot_formatted: HashSet::new(),
            percent_formatted: HashSet::new(),
            fstring_sites: Vec::new(),
            literal_formats: Vec::new(),
            loaders: Vec::new(),
            string_templates: HashSet::new(),
            chained: HashSet::new(),
        };
        let mut nesting = 0usize;
        let mut stack = vec![(tree.root_node(), 0usize)];
        let mut cursor = tree.walk();
        while let Some((node, scope)) = stack.pop() {
            if !node.is_named() {
                match node.kind() {
                    "(" | "[" | "{" => {
                        nesting += 1;
                        if nesting > MAX_NESTING {
                            return Err(syntax_error(
                                source,
                                node.start_byte(),
                                "too many nested parentheses".to_owned(),
                            ));
                        }
                    }
                    ")" | "]" | "}" => nesting = nesting.saturating_sub(1),
                    _ => {}
                }
                continue;
            }
            let mut body_scope = None;
            match node.kind() {
                // A string's parts hold no statements or calls we read.
                "string" | "comment" => continue,
                "class_definition" | "function_definition" => {
                    let kind = if node.kind() == "class_definition" {
                        ScopeKind::Class
                    } else {
                        ScopeKind::Function
                    };
                    let name = node
                        .child_by_field_name("name")
                        .map_or("", |name| module.text(name));
                    module.scopes.push(Scope {
                        kind,
                        name,
                        parent: Some(scope),
                    });
                    let new_scope = module.scopes.len() - 1;
                    if kind == ScopeKind::Class {
                        module.classes.entry(name).or_insert(new_scope);
                    }
                    body_scope = node
                        .child_by_field_name("body")
                        .map(|body| (body.id(), new_scope));
                }
                "assignment" => module.record_assignment(node, scope),
                "call" => module.record_call(node, scope),
                "binary_operator" => {
                    let is_modulo = node
                        .child_by_field_name("operator")
                        .is_some_and(|op| op.kind() == "%");
                    if let (true, Some(left)) = (is_modulo, node.child_by_field_name("left")) {
                        if let Some(name) = module.root_name(left) {
                            module.formatted.insert(name);
                            module.percent_formatted.insert(name);
                        }
                    }
                }
                "import_from_statement" => module.record_string_import(node),
                "return_statement" => module.record_return(node, scope),
                "dictionary" => module.record_message(node, scope),
                _ => {}
            }
            let children: Vec<Node<'t>> = node.children(&mut cursor).collect();
            for child in children.into_iter().rev() {
                let child_scope = match body_scope {
                    Some((body, new_scope)) if child.id() == body => new_scope,
                    _ => scope,
                };
                stack.push((child, child_scope));
            }
        }
        // A name that LangChain reads in its default f-string format is no Jinja template.
        let fstring_names: Vec<&'t str> = module
            .calls
            .iter()
            .flat_map(|&(call, _)| match module.template_arguments(call) {
                (arguments, Ok(TemplateFormat::Format)) => arguments,
                _ => Vec::new(),
            })
            .filter_map(|(argument, _)| module.root_name(argument))
            .collect();
        module.formatted.extend(fstring_names.iter().copied());
        module.dot_formatted.extend(fstring_names);
        Ok(module)
    }

    fn text(&self, node: Node) -> &'t str {
        &self.source[node.start_byte()..node.end_byte()]
    }

    fn record_assignment(&mut self, node: Node<'t>, scope: usize) {
        // `a = b = "..."` nests: only the outermost assignment is recorded, with every target.
        // (Not through `Node::parent`, which walks down from the root: quadratic in a module.)
        if self.chained.contains(&node.id()) {
            return;
        }
        let mut targets = Vec::new();
        let mut current = node;
        let value = loop {
            if let Some(left) = current.child_by_field_name("left") {
                match left.kind() {
                    "identifier" => targets.push(Target::Name(self.text(left))),
                    "attribute" => {
                        if let Some(name) = left.child_by_field_name("attribute") {
                            let written: String = self
                                .text(left)
                                .chars()
                                .filter(|ch| !ch.is_whitespace())
                                .collect();
                            targets.push(Target::Attribute {
                                written,
                                name: self.text(name),
                            });
                        }
                    }
                    _ => {}
                }
            }
            match current.child_by_field_name("right") {
                Some(right) if right.kind() == "assignment" => {
                    self.chained.insert(right.id());
                    current = right;
                }
                Some(right) => break Some(right),
                None => break None,
            }
        };
        let Some(value) = value else { return };
        if targets.is_empty() {
            return;
        }
        let index = self.assignments.len();
        for target in &targets {
            if let Target::Name(name) = target {
                self.bindings.entry((scope, name)).or_default().push(index);
            }
        }
        self.assignments.push(Assignment {
            scope,
            targets,
            value,
            end: node.end_byte(),
            line: node.start_position().row + 1,
        });
    }

    fn record_call(&mut self, node: Node<'t>, scope: usize) {
        let Some(function) = node.child_by_field_name("function") else {
            return;
        };
        if function.kind() == "attribute" {
            let attribute = function
                .child_by_field_name("attribute")
                .map(|name| self.text(name));
            if matches!(attribute, Some("format" | "format_map")) {
                let object = function.child_by_field_name("object");
                if let Some(name) = object.and_then(|object| self.root_name(object)) {
                    self.formatted.insert(name);
                    self.dot_formatted.insert(name);
                }
                if let Some(object) = object.map(|o| self.peel(o).0) {
                    if matches!(object.kind(), "string" | "concatenated_string") {
                        self.literal_formats.push(Site {
                            value: object,
                            scope,
                            key: format!("\"…\".{}()", attribute.unwrap_or("format")),
                            line: node.start_position().row + 1,
                        });
                    }
                }
                return;
            }
        }
        self.record_prompt_keywords(node, function, scope);
        let last = match function.kind() {
            "identifier" => self.text(function),
            "attribute" => function
                .child_by_field_name("attribute")
                .map_or("", |name| self.text(name)),
            _ => return,
        };
        if matches!(last, "load_prompt" | "pull" | "pull_prompt") {
            let object = (function.kind() == "attribute")
                .then(|| function.child_by_field_name("object"))
                .flatten()
                .map(|o| self.text(o));
            if last != "pull" || matches!(object, Some("hub")) {
                self.loaders.push((
                    node,
                    format!(
                        "a prompt loaded at run time by `{}(...)`, which prefixlint cannot follow",
                        self.text(function)
                    ),
                ));
            }
        }
        if matches!(
            last,
            "Template"
                | "from_string"
                | "PromptTemplate"
                | "from_template"
                | "from_messages"
                | "PromptBuilder"
                | "ChatPromptBuilder"
        ) {
            self.calls.push((node, scope));
        }
    }

    /// f-strings passed as a prompt keyword (`system_prompt=f"..."`, `instructions=f"..."`).
    fn record_prompt_keywords(&mut self, call: Node<'t>, function: Node<'t>, scope: usize) {
        let Some(args) = Args::of(call, self) else {
            return;
        };
        let callee = self.callee_path(function).join(".");
        for (name, value) in &args.keywords {
            if PROMPT_KEYWORDS.contains(name) && self.is_fstring(*value) {
                self.fstring_sites.push(Site {
                    value: *value,
                    scope,
                    key: format!("{callee}({name}=)"),
                    line: value.start_position().row + 1,
                });
            }
        }
    }

    /// What a function named like a prompt builder (`build_prompt`, `system_prompt`)
    /// returns, when it is an f-string.
    fn record_return(&mut self, node: Node<'t>, scope: usize) {
        let function = &self.scopes[scope];
        if function.kind != ScopeKind::Function || !is_prompt_builder(function.name) {
            return;
        }
        let name = function.name;
        let mut cursor = node.walk();
        let Some(value) = node.named_children(&mut cursor).next() else {
            return;
        };
        if self.is_fstring(value) {
            self.fstring_sites.push(Site {
                value,
                scope,
                key: format!("{name}()"),
                line: node.start_position().row + 1,
            });
        }
    }

    /// A chat message written as a dict, `{"role": "system", "content": f"..."}`: its
    /// content, when it is an f-string.
    fn record_message(&mut self, node: Node<'t>, scope: usize) {
        let mut role = None;
        let mut content = None;
        let mut cursor = node.walk();
        for pair in node.named_children(&mut cursor) {
            if pair.kind() != "pair" {
                continue;
            }
            let (Some(key), Some(value)) = (
                pair.child_by_field_name("key"),
                pair.child_by_field_name("value"),
            ) else {
                continue;
            };
            let key = self.literal(key).ok().flatten().map(|k| k.text());
            match key.as_deref() {
                Some("role") => {
                    role = self.literal(value).ok().flatten().map(|r| r.text());
                }
                Some("content") => content = Some(value),
                _ => {}
            }
        }
        if let (Some(role), Some(content)) = (role, content) {
            if self.is_fstring(content) {
                self.fstring_sites.push(Site {
                    value: content,
                    scope,
                    key: format!("{{\"role\": \"{role}\"}}.content"),
                    line: content.start_position().row + 1,
                });
            }
        }
    }

    /// An f-string, alone or concatenated with other string literals.
    fn is_fstring(&self, node: Node<'t>) -> bool {
        let node = self.peel(node).0;
        let is_f = |string: Node| {
            let token = self.text(string);
            let prefix = &token[..token.find(['"', '\'']).unwrap_or(0)];
            prefix.contains(['f', 'F'])
        };
        match node.kind() {
            "string" => is_f(node),
            "concatenated_string" => {
                let mut cursor = node.walk();
                let parts: Vec<Node> = node.named_children(&mut cursor).collect();
                parts
                    .iter()
                    .any(|part| part.kind() == "string" && is_f(*part))
            }
            _ => false,
        }
    }

    /// An f-string's text (see [`literal::decode_fstring`]), through the string functions
    /// applied to it; plain literals concatenated with it have their braces doubled, so
    /// the text reads as one f-string.
    fn fstring_text(&self, node: Node<'t>) -> Result<Option<MappedText>, PythonSyntaxError> {
        let (root, transforms) = self.peel(node);
        let parts: Vec<Node> = match root.kind() {
            "string" => vec![root],
            "concatenated_string" => {
                let mut cursor = root.walk();
                root.named_children(&mut cursor)
                    .filter(|part| part.kind() != "comment")
                    .collect()
            }
            _ => return Ok(None),
        };
        let mut text = MappedText::default();
        for part in parts {
            if part.kind() != "string" {
                return Ok(None);
            }
            match literal::decode_fstring(self.source, part.start_byte(), part.end_byte())
                .map_err(|e| e.into_syntax_error(self.source))?
            {
                Some(decoded) => text.append(decoded),
                None => {
                    let Some(plain) = self.literal(part)? else {
                        return Ok(None);
                    };
                    text.append(plain.braces_doubled());
                }
            }
        }
        for transform in transforms.iter().rev() {
            text = match transform {
                Transform::Dedent => text.dedent(),
                Transform::Cleandoc => text.cleandoc(),
                Transform::Strip(ends, None) => text.strip(*ends, None),
                Transform::Strip(..) => return Ok(None),
            };
        }
        Ok(Some(text))
    }

    fn record_string_import(&mut self, node: Node<'t>) {
        let from_string = node
            .child_by_field_name("module_name")
            .is_some_and(|module| self.text(module) == "string");
        if !from_string {
            return;
        }
        let mut cursor = node.walk();
        for name in node.children_by_field_name("name", &mut cursor) {
            match name.kind() {
                "dotted_name" if self.text(name) == "Template" => {
                    self.string_templates.insert("Template");
                }
                "aliased_import" => {
                    let original = name.child_by_field_name("name").map(|n| self.text(n));
                    let alias = name.child_by_field_name("alias").map(|n| self.text(n));
                    if let (Some("Template"), Some(alias)) = (original, alias) {
                        self.string_templates.insert(alias);
                    }
                }
                _ => {}
            }
        }
    }

    /// The name at the root of an expression under parentheses and the string functions
    /// (`dedent(X).strip()` is `X`; `self.X` is `X`).
    fn root_name(&self, node: Node<'t>) -> Option<&'t str> {
        let root = self.peel(node).0;
        match root.kind() {
            "identifier" => Some(self.text(root)),
            "attribute" => root.child_by_field_name("attribute").map(|n| self.text(n)),
            _ => None,
        }
    }

    /// The assignment a name (or `self.X`, `cls.X`, `Class.X`) refers to from `scope`, as
    /// seen at byte `at`: in the nearest scope that binds it (class bodies only from
    /// themselves, as Python resolves names), the last binding completed before `at`, else
    /// the last (a function runs after the module has bound its names).
    fn resolve(&self, node: Node<'t>, scope: usize, at: usize) -> Option<(usize, &'t str)> {
        let (scope, name) = match node.kind() {
            "identifier" => (Some(scope), self.text(node)),
            "attribute" => {
                let object = node.child_by_field_name("object")?;
                let name = self.text(node.child_by_field_name("attribute")?);
                if object.kind() != "identifier" {
                    return None;
                }
                let class = match self.text(object) {
                    "self" | "cls" => self.enclosing_class(scope),
                    class => self.classes.get(class).copied(),
                };
                let class = class?;
                let list = self.bindings.get(&(class, name))?;
                return Some((Self::binding_before(&self.assignments, list, at), name));
            }
            _ => return None,
        };
        let mut current = scope;
        let mut own = true;
        while let Some(index) = current {
            let scope = &self.scopes[index];
            if own || scope.kind != ScopeKind::Class {
                if let Some(list) = self.bindings.get(&(index, name)) {
                    return Some((Self::binding_before(&self.assignments, list, at), name));
                }
            }
            own = false;
            current = scope.parent;
        }
        None
    }

    fn binding_before(assignments: &[Assignment], list: &[usize], at: usize) -> usize {
        list.iter()
            .rev()
            .copied()
            .find(|&index| assignments[index].end <= at)
            .unwrap_or(*list.last().expect("a binding list is never empty"))
    }

    fn enclosing_class(&self, scope: usize) -> Option<usize> {
        let mut current = Some(scope);
        while let Some(index) = current {
            if self.scopes[index].kind == ScopeKind::Class {
                return Some(index);
            }
            current = self.scopes[index].parent;
        }
        None
    }

    /// The binding that holds the literal a name leads to: names bound to names (`A = B`,
    /// `A = B.strip()`) are followed, at most [`MAX_EVAL_DEPTH`] steps.
    fn literal_binding(&self, node: Node<'t>, scope: usize) -> Option<(usize, &'t str)> {
        let mut found = self.resolve(node, scope, node.start_byte())?;
        for _ in 0..MAX_EVAL_DEPTH {
            let binding = &self.assignments[found.0];
            let root = self.peel(binding.value).0;
            match self.resolve(root, binding.scope, root.start_byte()) {
                Some(next) => found = next,
                None => break,
            }
        }
        Some(found)
    }

    /// A name's key: prefixed with the classes whose bodies bind it (`Agent.SYSTEM_TEMPLATE`).
    fn qualified(&self, scope: usize, name: &str) -> String {
        let mut classes = Vec::new();
        let mut current = Some(scope);
        while let Some(index) = current {
            let scope = &self.scopes[index];
            if scope.kind == ScopeKind::Class {
                classes.push(scope.name);
            } else {
                break;
            }
            current = scope.parent;
        }
        classes.reverse();
        classes.push(name);
        classes.join(".")
    }

    /// Splits an expression into its root and the string functions applied to it, outermost
    /// first: `dedent(X).strip()` is `X` with `[strip, dedent]`.
    fn peel(&self, mut node: Node<'t>) -> (Node<'t>, Vec<Transform<'t>>) {
        let mut transforms = Vec::new();
        loop {
            node = unparenthesize(node);
            let Some((transform, operand)) = self.transform_of(node) else {
                return (node, transforms);
            };
            transforms.push(transform);
            node = operand;
        }
    }

    /// The string function a call applies, and its operand.
    fn transform_of(&self, call: Node<'t>) -> Option<(Transform<'t>, Node<'t>)> {
        if call.kind() != "call" {
            return None;
        }
        let function = call.child_by_field_name("function")?;
        let args = Args::of(call, self)?;
        let (object, name) = match function.kind() {
            "identifier" => (None, self.text(function)),
            "attribute" => (
                function.child_by_field_name("object"),
                self.text(function.child_by_field_name("attribute")?),
            ),
            _ => return None,
        };
        // `dedent(x)` and `cleandoc(x)` as imported names, or through their modules.
        let through = |module_name: &str| match object {
            None => true,
            Some(object) => object.kind() == "identifier" && self.text(object) == module_name,
        };
        let single_argument = || match (args.positional.as_slice(), args.keywords.is_empty()) {
            ([only], true) if !args.splat => Some(*only),
            _ => None,
        };
        match name {
            "dedent" if through("textwrap") => Some((Transform::Dedent, single_argument()?)),
            "cleandoc" if through("inspect") => Some((Transform::Cleandoc, single_argument()?)),
            "strip" | "lstrip" | "rstrip" => {
                let ends = match name {
                    "strip" => StripEnds::Both,
                    "lstrip" => StripEnds::Start,
                    _ => StripEnds::End,
                };
                if !args.keywords.is_empty() || args.splat || args.positional.len() > 1 {
                    return None;
                }
                let chars = args.positional.first().copied();
                Some((Transform::Strip(ends, chars), object?))
            }
            _ => None,
        }
    }

    /// The value of a string expression, or `None` when it has no static value.
    fn eval(
        &self,
        node: Node<'t>,
        scope: usize,
        depth: usize,
    ) -> Result<Option<MappedText>, PythonSyntaxError> {
        if depth > MAX_EVAL_DEPTH {
            return Ok(None);
        }
        let (root, transforms) = self.peel(node);
        let Some(mut text) = self.eval_root(root, scope, depth)? else {
            return Ok(None);
        };
        for transform in transforms.iter().rev() {
            text = match transform {
                Transform::Dedent => text.dedent(),
                Transform::Cleandoc => text.cleandoc(),
                Transform::Strip(ends, None) => text.strip(*ends, None),
                Transform::Strip(ends, Some(chars)) => {
                    let chars = unparenthesize(*chars);
                    if chars.kind() == "none" {
                        text.strip(*ends, None)
                    } else {
                        let Some(set) = self.literal(chars)? else {
                            return Ok(None);
                        };
                        let set: Vec<char> = set.chars.iter().map(|c| c.ch).collect();
                        text.strip(*ends, Some(&set))
                    }
                }
            };
        }
        Ok(Some(text))
    }

    fn eval_root(
        &self,
        node: Node<'t>,
        scope: usize,
        depth: usize,
    ) -> Result<Option<MappedText>, PythonSyntaxError> {
        match node.kind() {
            "string" | "concatenated_string" => self.literal(node),
            "binary_operator" => {
                // `a + b + c` nests to the left: flattened without recursion.
                let mut operands = Vec::new();
                let mut pending = vec![node];
                while let Some(current) = pending.pop() {
                    let current = unparenthesize(current);
                    let is_plus = current.kind() == "binary_operator"
                        && current
                            .child_by_field_name("operator")
                            .is_some_and(|op| op.kind() == "+");
                    if is_plus {
                        let (Some(left), Some(right)) = (
                            current.child_by_field_name("left"),
                            current.child_by_field_name("right"),
                        ) else {
                            return Ok(None);
                        };
                        pending.push(right);
                        pending.push(left);
                    } else if current.id() == node.id() {
                        return Ok(None);
                    } else {
                        operands.push(current);
                    }
                }
                let mut text = MappedText::default();
                for operand in operands {
                    match self.eval(operand, scope, depth + 1)? {
                        Some(part) => text.append(part),
                        None => return Ok(None),
                    }
                }
                Ok(Some(text))
            }
            "identifier" | "attribute" => {
                let Some((index, _)) = self.resolve(node, scope, node.start_byte()) else {
                    return Ok(None);
                };
                let assignment = &self.assignments[index];
                self.eval(assignment.value, assignment.scope, depth + 1)
            }
            _ => Ok(None),
        }
    }

    /// The value of a string literal or of adjacent literals; `None` for bytes, f-strings
    /// and anything else.
    fn literal(&self, node: Node<'t>) -> Result<Option<MappedText>, PythonSyntaxError> {
        let decode_one = |string: Node| -> Result<Option<MappedText>, PythonSyntaxError> {
            match literal::decode(self.source, string.start_byte(), string.end_byte()) {
                Ok(Ok(text)) => Ok(Some(text)),
                Ok(Err(NotText::NotStr | NotText::Surrogate)) => Ok(None),
                Err(error) => Err(error.into_syntax_error(self.source)),
            }
        };
        match node.kind() {
            "string" => decode_one(node),
            "concatenated_string" => {
                let mut text = MappedText::default();
                let mut cursor = node.walk();
                for part in node.named_children(&mut cursor) {
                    match part.kind() {
                        "string" => match decode_one(part)? {
                            Some(value) => text.append(value),
                            None => return Ok(None),
                        },
                        "comment" => {}
                        _ => return Ok(None),
                    }
                }
                Ok(Some(text))
            }
            _ => Ok(None),
        }
    }

    fn templates(&self) -> Result<Extracted, PythonSyntaxError> {
        let mut found: HashMap<usize, Candidate> = HashMap::new();
        let mut unchecked = Vec::new();
        let mut add = |candidate: Candidate| {
            let keep_old = found
                .get(&candidate.identity)
                .is_some_and(|old| old.priority >= candidate.priority);
            if !keep_old {
                found.insert(candidate.identity, candidate);
            }
        };
        for &(call, scope) in &self.calls {
            let line = call.start_position().row + 1;
            let (arguments, format) = self.template_arguments(call);
            let format = match format {
                Ok(format) => format,
                Err(reason) => {
                    if let Some((_, key)) = arguments.first() {
                        unchecked.push(Unchecked {
                            key: key.clone(),
                            line,
                            reason,
                        });
                    }
                    continue;
                }
            };
            if format != TemplateFormat::Jinja && self.is_from_messages(call) {
                if let Some(candidate) = self.chat_candidate(call, scope, format, line)? {
                    add(candidate);
                }
                continue;
            }
            for (argument, key) in arguments {
                match self.call_candidate(argument, scope, key.clone(), line, format)? {
                    Some(candidate) => add(candidate),
                    None if format != TemplateFormat::Jinja && self.is_dynamic(argument, scope) => {
                        unchecked.push(Unchecked {
                            key,
                            line,
                            reason: "a prompt assembled at run time (its text has no static value)"
                                .to_owned(),
                        })
                    }
                    None => {}
                }
            }
        }
        for assignment in &self.assignments {
            match self.named_candidate(assignment)? {
                Named::Template(candidate) => add(candidate),
                Named::Unchecked(place) => unchecked.push(place),
                Named::Not => {}
            }
        }
        for site in &self.fstring_sites {
            if let Some(text) = self.fstring_text(site.value)? {
                add(Candidate {
                    identity: site.value.id(),
                    priority: Priority::Call,
                    template: embedded(
                        site.key.clone(),
                        site.line,
                        &text,
                        TemplateFormat::FString,
                        None,
                    ),
                    absorbs: Vec::new(),
                });
            }
        }
        for site in &self.literal_formats {
            let Some(text) = self.eval(site.value, site.scope, 0)? else {
                continue;
            };
            if detect::reads_as_prompt(&text.text()) {
                add(Candidate {
                    identity: site.value.id(),
                    priority: Priority::Named,
                    template: embedded(
                        site.key.clone(),
                        site.line,
                        &text,
                        TemplateFormat::Format,
                        None,
                    ),
                    absorbs: Vec::new(),
                });
            }
        }
        for (call, reason) in &self.loaders {
            unchecked.push(Unchecked {
                key: self
                    .callee_path(call.child_by_field_name("function").unwrap_or(*call))
                    .join(".")
                    + "()",
                line: call.start_position().row + 1,
                reason: reason.clone(),
            });
        }
        let absorbed: std::collections::HashSet<usize> = found
            .values()
            .flat_map(|candidate| candidate.absorbs.iter().copied())
            .collect();
        // Only a constant found by its name is absorbed: one another API also receives
        // (`PromptTemplate(template=X)`) is a template of its own.
        let mut templates: Vec<EmbeddedTemplate> = found
            .into_values()
            .filter(|candidate| {
                candidate.priority == Priority::Call || !absorbed.contains(&candidate.identity)
            })
            .map(|candidate| candidate.template)
            .collect();
        templates.sort_by_key(|template| (template.anchor_line, template.map.host_offset(0)));
        // Two templates keyed alike (two messages of one role) are told apart by line.
        let mut seen: HashMap<String, usize> = HashMap::new();
        for template in &mut templates {
            let count = seen.entry(template.key.clone()).or_default();
            *count += 1;
            if *count > 1 {
                template.key = format!("{} (line {})", template.key, template.anchor_line);
            }
        }
        unchecked.sort_by_key(|place| place.line);
        unchecked.dedup();
        Ok(Extracted {
            templates,
            unchecked,
        })
    }

    /// Whether an expression builds a prompt's text at run time from parts without a
    /// static value: `+` or `%` of strings, `"".join(...)`, or `.format(...)`/`.replace(...)`
    /// of a text that is itself built so (a template's `.format(...)` is its render, which
    /// the template's own check covers). `scope` is where the expression is evaluated.
    fn is_dynamic(&self, node: Node<'t>, scope: usize) -> bool {
        let node = self.peel(node).0;
        match node.kind() {
            "binary_operator" => true,
            "call" => {
                let Some(function) = node.child_by_field_name("function") else {
                    return false;
                };
                let Some(name) = function.child_by_field_name("attribute") else {
                    return false;
                };
                match self.text(name) {
                    "join" => true,
                    "format" | "format_map" | "replace" => function
                        .child_by_field_name("object")
                        .is_some_and(|object| {
                            !matches!(self.eval(object, scope, 0), Ok(Some(_)))
                                && self.is_dynamic(object, scope)
                        }),
                    _ => false,
                }
            }
            _ => false,
        }
    }

    fn is_from_messages(&self, call: Node<'t>) -> bool {
        call.child_by_field_name("function")
            .and_then(|f| match f.kind() {
                "attribute" => f.child_by_field_name("attribute"),
                _ => Some(f),
            })
            .is_some_and(|name| self.text(name) == "from_messages")
    }

    /// `ChatPromptTemplate.from_messages([...])` in a `{var}` format, as the chat request
    /// it makes: one template whose messages are `role:` lines and their texts (as a
    /// `.prompty` body's are), a `MessagesPlaceholder("history")` a `{history}` field.
    fn chat_candidate(
        &self,
        call: Node<'t>,
        scope: usize,
        format: TemplateFormat,
        line: usize,
    ) -> Result<Option<Candidate>, PythonSyntaxError> {
        let Some(args) = Args::of(call, self) else {
            return Ok(None);
        };
        let Some((list, key)) = args.first_or_keyword(&["messages"]) else {
            return Ok(None);
        };
        let callee = call
            .child_by_field_name("function")
            .map(|f| self.callee_path(f).join("."))
            .unwrap_or_default();
        let mut text = MappedText::default();
        let mut any = false;
        let mut absorbs = Vec::new();
        for item in self.list_items(list) {
            let (role, content): (String, Option<MappedText>) = match item.kind() {
                "tuple" => {
                    let mut cursor = item.walk();
                    let parts: Vec<Node> = item
                        .named_children(&mut cursor)
                        .filter(|part| part.kind() != "comment")
                        .collect();
                    let [role, content] = parts.as_slice() else {
                        return Ok(None);
                    };
                    let Some(role) = self.literal(*role)? else {
                        return Ok(None);
                    };
                    if let Some((index, _)) = self.literal_binding(self.peel(*content).0, scope) {
                        absorbs.push(self.assignments[index].value.id());
                    }
                    (role.text(), self.eval(*content, scope, 0)?)
                }
                "call" => {
                    // `MessagesPlaceholder("history")`: the conversation, a field.
                    let function = item.child_by_field_name("function").map(|f| self.text(f));
                    let name = Args::of(item, self)
                        .and_then(|a| a.first_or_keyword(&["variable_name"]))
                        .and_then(|(node, _)| self.literal(node).ok().flatten());
                    match (function, name) {
                        (Some(function), Some(name))
                            if function.ends_with("MessagesPlaceholder") =>
                        {
                            let mut field = MappedText::default();
                            for ch in format!("{{{}}}", name.text()).chars() {
                                field.push_decoded(
                                    ch,
                                    item.start_byte(),
                                    item.end_byte() - item.start_byte(),
                                );
                            }
                            ("placeholder".to_owned(), Some(field))
                        }
                        _ => return Ok(None),
                    }
                }
                _ => ("human".to_owned(), self.eval(item, scope, 0)?),
            };
            let Some(content) = content else {
                return Ok(None);
            };
            let role = match role.as_str() {
                "system" => "system",
                "ai" | "assistant" => "assistant",
                _ => "user",
            };
            // The role lines are the host's, not the text's: they map to the message.
            let item_len = item.end_byte() - item.start_byte();
            if any {
                for ch in "\n\n".chars() {
                    text.push_decoded(ch, item.start_byte(), item_len);
                }
            }
            for ch in format!("{role}:\n").chars() {
                text.push_decoded(ch, item.start_byte(), item_len);
            }
            text.append(content);
            any = true;
        }
        if !any {
            return Ok(None);
        }
        let decision = detect::decide(Some(format), None, &text.text());
        Ok(Some(Candidate {
            identity: call.id(),
            priority: Priority::Call,
            template: embedded(
                format!("{callee}({key})"),
                line,
                &text,
                format,
                decision.and_then(|d| d.note()),
            ),
            absorbs,
        }))
    }

    /// A template call's argument, keyed by the call unless it is a bound name. A Jinja
    /// call's must hold Jinja markup; another format's is a prompt whatever it holds.
    fn call_candidate(
        &self,
        argument: Node<'t>,
        scope: usize,
        call_key: String,
        call_line: usize,
        format: TemplateFormat,
    ) -> Result<Option<Candidate>, PythonSyntaxError> {
        let Some(text) = self.eval(argument, scope, 0)? else {
            return Ok(None);
        };
        if format == TemplateFormat::Jinja && !has_jinja_markup(&text) {
            return Ok(None);
        }
        let root = self.peel(argument).0;
        let (identity, key, anchor_line) = match self.literal_binding(root, scope) {
            Some((index, name)) => {
                let binding = &self.assignments[index];
                (
                    binding.value.id(),
                    self.qualified(binding.scope, name),
                    binding.line,
                )
            }
            None => (argument.id(), call_key, call_line),
        };
        Ok(Some(Candidate {
            identity,
            priority: Priority::Call,
            template: embedded(key, anchor_line, &text, format, None),
            absorbs: Vec::new(),
        }))
    }

    /// A named constant (`PLANNING_PROMPT = ...`) that holds a prompt template: Jinja by
    /// the Jinja test, `{var}` where the module formats it or its text reads as a prompt
    /// with fields, an f-string, or a constant prompt; a name that is a prompt by its name
    /// and built at run time is unchecked.
    fn named_candidate(&self, assignment: &Assignment<'t>) -> Result<Named, PythonSyntaxError> {
        let Some(target) = assignment
            .targets
            .iter()
            .find(|target| is_prompt_name(target.name()))
        else {
            return self.shaped_candidate(assignment);
        };
        if is_markup_name(target.name()) {
            return Ok(Named::Not);
        }
        let root = self.peel(assignment.value).0;
        let key_of = |target: &Target| match target {
            Target::Name(name) => self.qualified(assignment.scope, name),
            Target::Attribute { written, .. } => written.clone(),
        };
        if self.is_fstring(assignment.value) {
            let Some(text) = self.fstring_text(assignment.value)? else {
                return Ok(Named::Not);
            };
            return Ok(Named::Template(Candidate {
                identity: assignment.value.id(),
                priority: Priority::Named,
                template: embedded(
                    key_of(target),
                    assignment.line,
                    &text,
                    TemplateFormat::FString,
                    None,
                ),
                absorbs: Vec::new(),
            }));
        }
        let resolved = self.literal_binding(root, assignment.scope);
        let names = || std::iter::once(target.name()).chain(resolved.map(|(_, name)| name));
        let dot_formatted = names().any(|name| self.dot_formatted.contains(name));
        let percent = names().any(|name| self.percent_formatted.contains(name));
        let formatted = names().any(|name| self.formatted.contains(name));
        let Some(text) = self.eval(assignment.value, assignment.scope, 0)? else {
            if names_a_prompt(target.name())
                && self.is_dynamic(assignment.value, assignment.scope)
                && assignment.scope == 0
            {
                return Ok(Named::Unchecked(Unchecked {
                    key: key_of(target),
                    line: assignment.line,
                    reason: "a prompt assembled at run time (its text has no static value)"
                        .to_owned(),
                }));
            }
            return Ok(Named::Not);
        };
        let value = text.text();
        let (format, note) = if !formatted && is_jinja_constant(&text) {
            (TemplateFormat::Jinja, None)
        } else if dot_formatted {
            // The module formats it: a `{var}` template, whatever its braces say to Jinja.
            if !(names_a_prompt(target.name()) || detect::reads_as_prompt(&value)) {
                return Ok(Named::Not);
            }
            (TemplateFormat::Format, None)
        } else if percent {
            if !names_a_prompt(target.name()) {
                return Ok(Named::Not);
            }
            return Ok(Named::Unchecked(Unchecked {
                key: key_of(target),
                line: assignment.line,
                reason: "a prompt filled in with `%` (printf-style), a format prefixlint does not render".to_owned(),
            }));
        } else {
            match detect::from_content(&value) {
                Some(decision) if decision.format == TemplateFormat::Format => {
                    if !(detect::reads_as_prompt(&value) || names_a_prompt(target.name())) {
                        return Ok(Named::Not);
                    }
                    (decision.format, decision.note())
                }
                Some(decision) if decision.format != TemplateFormat::Jinja => {
                    (decision.format, decision.note())
                }
                Some(_) => return Ok(Named::Not),
                // A constant prompt: rendered as itself by whichever format reads its
                // braces as text.
                None if names_a_prompt(target.name()) && detect::reads_as_prompt(&value) => {
                    if detect::format_fields(&value).is_ok() {
                        (TemplateFormat::Format, None)
                    } else {
                        (TemplateFormat::Jinja, None)
                    }
                }
                None => return Ok(Named::Not),
            }
        };
        let (identity, priority, key, anchor_line) = match resolved {
            Some((index, name)) => {
                let binding = &self.assignments[index];
                let key = self.qualified(binding.scope, name);
                (
                    binding.value.id(),
                    Priority::NamedDerived,
                    key,
                    binding.line,
                )
            }
            None => (
                assignment.value.id(),
                Priority::Named,
                key_of(target),
                assignment.line,
            ),
        };
        Ok(Named::Template(Candidate {
            identity,
            priority,
            template: embedded(key, anchor_line, &text, format, note),
            absorbs: Vec::new(),
        }))
    }

    /// A constant not named like a prompt that is one by its shape: a text that reads as
    /// instructions to a model, with `{var}` fields, which the module formats.
    fn shaped_candidate(&self, assignment: &Assignment<'t>) -> Result<Named, PythonSyntaxError> {
        let Some(Target::Name(name)) = assignment.targets.first() else {
            return Ok(Named::Not);
        };
        if !self.dot_formatted.contains(name) || is_markup_name(name) {
            return Ok(Named::Not);
        }
        let root = self.peel(assignment.value).0;
        if !matches!(root.kind(), "string" | "concatenated_string") {
            return Ok(Named::Not);
        }
        let Some(text) = self.eval(assignment.value, assignment.scope, 0)? else {
            return Ok(Named::Not);
        };
        let value = text.text();
        let has_fields = matches!(detect::format_fields(&value), Ok(fields) if !fields.is_empty());
        if !(has_fields && detect::reads_as_prompt(&value)) {
            return Ok(Named::Not);
        }
        Ok(Named::Template(Candidate {
            identity: assignment.value.id(),
            priority: Priority::Named,
            template: embedded(
                self.qualified(assignment.scope, name),
                assignment.line,
                &text,
                TemplateFormat::Format,
                None,
            ),
            absorbs: Vec::new(),
        }))
    }

    /// The arguments of a call that its API reads as templates, each with the key it gets
    /// when it is not a bound name, and their format: Jinja for Jinja's APIs, LangChain's
    /// `template_format=` (its default is the `{var}` format it calls `f-string`), or why
    /// the format is unknown.
    fn template_arguments(
        &self,
        call: Node<'t>,
    ) -> (Vec<(Node<'t>, String)>, Result<TemplateFormat, String>) {
        const JINJA: Result<TemplateFormat, String> = Ok(TemplateFormat::Jinja);
        let Some(args) = Args::of(call, self) else {
            return (Vec::new(), JINJA);
        };
        let Some(function) = call.child_by_field_name("function") else {
            return (Vec::new(), JINJA);
        };
        let path = self.callee_path(function);
        let callee = path.join(".");
        let last = path.last().map_or("", String::as_str);
        let before_last = path.len().checked_sub(2).map(|i| path[i].as_str());
        let langchain_format = || match args.keyword("template_format") {
            None => Ok(TemplateFormat::Format),
            Some(value) => match self.literal(unparenthesize(value)).ok().flatten() {
                Some(name) => detect::declared(&name.text()).ok_or_else(|| {
                    format!(
                        "template_format `{}` is not a format prefixlint renders",
                        name.text()
                    )
                }),
                None => Err("a template_format computed at run time".to_owned()),
            },
        };
        let single = |names: &[&str]| -> Vec<(Node<'t>, String)> {
            args.first_or_keyword(names)
                .map(|(node, key)| vec![(node, format!("{callee}({key})"))])
                .unwrap_or_default()
        };
        let arguments = match last {
            "Template" => {
                let from_string_module = match path.len() {
                    1 => self.string_templates.contains("Template"),
                    _ => before_last == Some("string"),
                };
                if from_string_module {
                    Vec::new()
                } else {
                    single(&["source"])
                }
            }
            "from_string" => single(&["source", "content"]),
            "PromptTemplate" => {
                let arguments = args
                    .keyword("template")
                    .map(|node| vec![(node, format!("{callee}(template=)"))])
                    .unwrap_or_default();
                return (arguments, langchain_format());
            }
            "from_template" => return (single(&["template"]), langchain_format()),
            "from_messages" => {
                let Some((list, key)) = args.first_or_keyword(&["messages"]) else {
                    return (Vec::new(), JINJA);
                };
                let contents = self
                    .list_items(list)
                    .into_iter()
                    .enumerate()
                    .filter_map(|(index, item)| {
                        let content = match item.kind() {
                            "tuple" => {
                                let mut cursor = item.walk();
                                let parts: Vec<Node> = item
                                    .named_children(&mut cursor)
                                    .filter(|part| part.kind() != "comment")
                                    .collect();
                                match parts.as_slice() {
                                    [_, content] => *content,
                                    _ => return None,
                                }
                            }
                            _ => item,
                        };
                        Some((content, format!("{callee}({key}[{index}])")))
                    })
                    .collect();
                return (contents, langchain_format());
            }
            "PromptBuilder" => single(&["template"]),
            "ChatPromptBuilder" => {
                let Some((template, key)) = args.first_or_keyword(&["template"]) else {
                    return (Vec::new(), JINJA);
                };
                if unparenthesize(template).kind() != "list" {
                    return (vec![(template, format!("{callee}({key})"))], JINJA);
                }
                self.list_items(template)
                    .into_iter()
                    .enumerate()
                    .filter_map(|(index, item)| {
                        let function = item.child_by_field_name("function")?;
                        let method = function.child_by_field_name("attribute")?;
                        if item.kind() != "call"
                            || !matches!(
                                self.text(method),
                                "from_system" | "from_user" | "from_assistant"
                            )
                        {
                            return None;
                        }
                        let (text, _) = Args::of(item, self)?.first_or_keyword(&["text"])?;
                        Some((text, format!("{callee}({key}[{index}])")))
                    })
                    .collect()
            }
            _ => Vec::new(),
        };
        (arguments, JINJA)
    }

    /// The items of a list or tuple display.
    fn list_items(&self, node: Node<'t>) -> Vec<Node<'t>> {
        let node = unparenthesize(node);
        if !matches!(node.kind(), "list" | "tuple") {
            return Vec::new();
        }
        let mut cursor = node.walk();
        node.named_children(&mut cursor)
            .filter(|item| item.kind() != "comment")
            .map(unparenthesize)
            .collect()
    }

    /// The dotted path of a callee, calls marked with `()`: `Environment().from_string`.
    /// Long paths keep their last three parts.
    fn callee_path(&self, function: Node<'t>) -> Vec<String> {
        let mut parts = Vec::new();
        let mut node = function;
        let mut called = false;
        loop {
            let suffix = if called { "()" } else { "" };
            called = false;
            match node.kind() {
                "identifier" => {
                    parts.push(format!("{}{suffix}", self.text(node)));
                    break;
                }
                "attribute" => {
                    let name = node
                        .child_by_field_name("attribute")
                        .map_or("", |n| self.text(n));
                    parts.push(format!("{name}{suffix}"));
                    match node.child_by_field_name("object") {
                        Some(object) => node = object,
                        None => break,
                    }
                }
                "call" => match node.child_by_field_name("function") {
                    Some(function) => {
                        node = function;
                        called = true;
                    }
                    None => break,
                },
                "parenthesized_expression" => node = unparenthesize(node),
                _ => {
                    parts.push(format!("…{suffix}"));
                    break;
                }
            }
            if parts.len() == 3 {
                parts.push("…".to_owned());
                break;
            }
        }
        parts.reverse();
        parts
    }
}

/// A string function that the code applies to a value.
enum Transform<'t> {
    Dedent,
    Cleandoc,
    /// The ends, and the argument naming the characters (a literal, or `None`), if any.
    Strip(StripEnds, Option<Node<'t>>),
}

/// A call's arguments.
struct Args<'t> {
    positional: Vec<Node<'t>>,
    keywords: Vec<(&'t str, Node<'t>)>,
    /// A `*args` or `**kwargs`: positions after it are unknown.
    splat: bool,
}

impl<'t> Args<'t> {
    fn of(call: Node<'t>, module: &Module<'t>) -> Option<Self> {
        let list = call.child_by_field_name("arguments")?;
        if list.kind() != "argument_list" {
            return None;
        }
        let mut args = Args {
            positional: Vec::new(),
            keywords: Vec::new(),
            splat: false,
        };
        let mut cursor = list.walk();
        for argument in list.named_children(&mut cursor) {
            match argument.kind() {
                "keyword_argument" => {
                    if let (Some(name), Some(value)) = (
                        argument.child_by_field_name("name"),
                        argument.child_by_field_name("value"),
                    ) {
                        args.keywords.push((module.text(name), value));
                    }
                }
                "list_splat" | "dictionary_splat" => args.splat = true,
                "comment" => {}
                _ if !args.splat => args.positional.push(argument),
                _ => {}
            }
        }
        Some(args)
    }

    fn keyword(&self, name: &str) -> Option<Node<'t>> {
        self.keywords
            .iter()
            .find(|(keyword, _)| *keyword == name)
            .map(|(_, value)| *value)
    }

    /// The first positional argument (key ``), else the first of the keywords (`name=`).
    fn first_or_keyword(&self, names: &[&str]) -> Option<(Node<'t>, String)> {
        if let Some(first) = self.positional.first() {
            return Some((*first, String::new()));
        }
        names
            .iter()
            .find_map(|name| self.keyword(name).map(|value| (value, format!("{name}="))))
    }
}

fn unparenthesize(mut node: Node) -> Node {
    while node.kind() == "parenthesized_expression" {
        let mut cursor = node.walk();
        let inner: Vec<Node> = node
            .named_children(&mut cursor)
            .filter(|child| child.kind() != "comment")
            .collect();
        match inner.as_slice() {
            [only] => node = *only,
            _ => break,
        }
    }
    node
}

fn embedded(
    key: String,
    anchor_line: usize,
    text: &MappedText,
    format: TemplateFormat,
    format_note: Option<String>,
) -> EmbeddedTemplate {
    EmbeddedTemplate {
        kind: HostKind::Python,
        key,
        anchor_line,
        text: text.text(),
        map: text.host_map(),
        format,
        format_note,
    }
}

/// What an assignment is.
enum Named {
    Template(Candidate),
    Unchecked(Unchecked),
    Not,
}

/// A name that says its value is a prompt's text, not any template (`SYSTEM_PROMPT`,
/// `agent_instructions`, `system_message`), where `_template` may be a URL's or a path's.
fn names_a_prompt(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.contains("prompt")
        || lower.ends_with("instructions")
        || lower.ends_with("instruction")
        || lower.contains("system_message")
}

/// A function that builds a prompt: `build_prompt`, `system_prompt`, `make_instructions`.
fn is_prompt_builder(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.contains("prompt") || lower.contains("instruction")
}

/// `PLANNING_PROMPT`, `system_prompt`, `user_template`, `PROMPT`, `Template`,
/// `AGENT_INSTRUCTIONS`, `system_message`.
fn is_prompt_name(name: &str) -> bool {
    let lower = name.trim_start_matches('_').to_ascii_lowercase();
    ["prompt", "template", "instructions", "system_message"]
        .iter()
        .any(|word| lower == *word || lower.ends_with(&format!("_{word}")))
}

/// A name that says its template is markup or SQL (`HTML_TEMPLATE`, `sql_template`).
fn is_markup_name(name: &str) -> bool {
    name.to_ascii_lowercase()
        .split('_')
        .any(|word| matches!(word, "html" | "htm" | "xml" | "css" | "sql"))
}

fn has_jinja_markup(text: &MappedText) -> bool {
    text.chars
        .windows(2)
        .any(|pair| pair[0].ch == '{' && matches!(pair[1].ch, '{' | '%'))
}

/// The Jinja test for a named constant (see the module doc).
fn is_jinja_constant(text: &MappedText) -> bool {
    if !has_jinja_markup(text) {
        return false;
    }
    let text = text.text();
    let start: String = text
        .trim_start()
        .chars()
        .take(9)
        .collect::<String>()
        .to_ascii_lowercase();
    if start.starts_with("<!doctype") || start.starts_with("<html") {
        return false;
    }
    let has_tags = text.contains("{%") || text.contains("{#");
    has_tags || !has_format_field(&text)
}

/// Whether `str.format` would read a replacement field in the text.
fn has_format_field(text: &str) -> bool {
    static FIELD: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+)?(?:\.[A-Za-z_][A-Za-z0-9_]*|\[[^\]{}]*\])*(?:![rsa])?(?::[^{}]*)?$")
            .expect("a valid pattern")
    });
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'{' if bytes.get(at + 1) == Some(&b'{') => at += 2,
            b'}' if bytes.get(at + 1) == Some(&b'}') => at += 2,
            b'{' => {
                let Some(length) = text[at + 1..].find(['{', '}']) else {
                    return false;
                };
                let close = at + 1 + length;
                if bytes[close] == b'}' && FIELD.is_match(&text[at + 1..close]) {
                    return true;
                }
                at = close;
            }
            _ => at += 1,
        }
    }
    false
}

/// Why `template`'s host map does not hold for `source`, or `None` when it does: the map
/// covers the text in order; a verbatim stretch holds the text's own bytes; a decoded
/// stretch starts at an escape's backslash, a `\r\n` or `\r`, or an expanded tab; and each
/// `{{` of the text maps to a `{{` of the source. Every extraction keeps this; the unit
/// tests and tests/it/python_host.rs check it on each template they extract.
#[doc(hidden)]
pub fn map_mismatch(source: &str, template: &EmbeddedTemplate) -> Option<String> {
    let text = template.text.as_bytes();
    let host = source.as_bytes();
    let mut covered = 0;
    for segment in template.map.segments() {
        if segment.text_start != covered {
            return Some(format!(
                "a segment starts at text byte {}, not {covered}: {template:#?}",
                segment.text_start
            ));
        }
        covered += segment.text_len;
        let (Some(host_bytes), Some(text_bytes)) = (
            host.get(segment.host_start..segment.host_start + segment.host_len),
            text.get(segment.text_start..segment.text_start + segment.text_len),
        ) else {
            return Some(format!(
                "{segment:?} runs past the text or the host: {template:#?}"
            ));
        };
        let one_to_one_decoded = segment.text_len == 1
            && matches!(
                (text_bytes[0], host_bytes[0]),
                (b' ', b'\t') | (b'\n', b'\r')
            );
        if segment.text_len == segment.host_len && !one_to_one_decoded {
            if host_bytes != text_bytes {
                return Some(format!(
                    "verbatim at {}: the host has {:?}, the text {:?}: {template:#?}",
                    segment.host_start,
                    String::from_utf8_lossy(host_bytes),
                    String::from_utf8_lossy(text_bytes)
                ));
            }
        } else if template.format == TemplateFormat::Jinja
            && !matches!(host_bytes.first(), Some(b'\\' | b'\r' | b'\t'))
        {
            return Some(format!(
                "a decoded stretch at {}: {:?}",
                segment.host_start,
                String::from_utf8_lossy(host_bytes)
            ));
        }
    }
    if covered != text.len() {
        return Some(format!(
            "the map covers {covered} of {} text bytes: {template:#?}",
            text.len()
        ));
    }
    // A `{var}` chat request's role lines and an f-string's doubled braces are the
    // host's work, not its bytes.
    if template.format != TemplateFormat::Jinja {
        return None;
    }
    for (offset, _) in template.text.match_indices("{{") {
        let at = template.map.host_offset(offset);
        if source.get(at..at + 2) != Some("{{") {
            return Some(format!(
                "the `{{{{` at text byte {offset} maps to host byte {at}: {template:#?}"
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests;
