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
use crate::host::{EmbeddedTemplate, HostKind};

/// CPython's tokenizer refuses more nested brackets than this (`MAXLEVEL`).
const MAX_NESTING: usize = 200;

/// How many names and nested string expressions deep an evaluation goes (a cycle of names
/// ends here; a long `+` chain is flattened, not nested).
const MAX_EVAL_DEPTH: usize = 32;

/// Cheap check on raw bytes: false means the file surely holds no Jinja template (no `{{`
/// and no `{%`).
pub fn may_hold_templates(bytes: &[u8]) -> bool {
    // Two vectorized searches beat one `{` at a time: source is full of dict braces.
    memchr::memmem::find(bytes, b"{{").is_some() || memchr::memmem::find(bytes, b"{%").is_some()
}

/// Where the source failed to parse (1-based line and column, and the parser's message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct PythonSyntaxError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// Every Jinja template string literal in a Python source file.
pub fn extract(source: &str) -> Result<Vec<EmbeddedTemplate>, PythonSyntaxError> {
    if !may_hold_templates(source.as_bytes()) {
        return Ok(Vec::new());
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
    /// Names that `from string import Template` binds.
    string_templates: HashSet<&'t str>,
    /// The inner assignments of `a = b = "..."`, recorded with the outer one.
    chained: HashSet<usize>,
}

/// A template and what it is: `identity` is the node of the string value it was read
/// from (a binding's value, or a call's argument), so one literal is reported once.
struct Candidate {
    identity: usize,
    priority: Priority,
    template: EmbeddedTemplate,
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
                        }
                    }
                }
                "import_from_statement" => module.record_string_import(node),
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
                (arguments, false) => arguments,
                (_, true) => Vec::new(),
            })
            .filter_map(|(argument, _)| module.root_name(argument))
            .collect();
        module.formatted.extend(fstring_names);
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
                if let Some(name) = function
                    .child_by_field_name("object")
                    .and_then(|object| self.root_name(object))
                {
                    self.formatted.insert(name);
                }
                return;
            }
        }
        let last = match function.kind() {
            "identifier" => self.text(function),
            "attribute" => function
                .child_by_field_name("attribute")
                .map_or("", |name| self.text(name)),
            _ => return,
        };
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

    fn templates(&self) -> Result<Vec<EmbeddedTemplate>, PythonSyntaxError> {
        let mut found: HashMap<usize, Candidate> = HashMap::new();
        let mut add = |candidate: Candidate| {
            let keep_old = found
                .get(&candidate.identity)
                .is_some_and(|old| old.priority >= candidate.priority);
            if !keep_old {
                found.insert(candidate.identity, candidate);
            }
        };
        for &(call, scope) in &self.calls {
            let (arguments, jinja) = self.template_arguments(call);
            if !jinja {
                continue;
            }
            for (argument, key) in arguments {
                let line = call.start_position().row + 1;
                if let Some(candidate) = self.call_candidate(argument, scope, key, line)? {
                    add(candidate);
                }
            }
        }
        for assignment in &self.assignments {
            if let Some(candidate) = self.named_candidate(assignment)? {
                add(candidate);
            }
        }
        let mut templates: Vec<EmbeddedTemplate> = found
            .into_values()
            .map(|candidate| candidate.template)
            .collect();
        templates.sort_by_key(|template| (template.anchor_line, template.map.host_offset(0)));
        Ok(templates)
    }

    /// A Jinja call's template argument, keyed by the call unless it is a bound name.
    fn call_candidate(
        &self,
        argument: Node<'t>,
        scope: usize,
        call_key: String,
        call_line: usize,
    ) -> Result<Option<Candidate>, PythonSyntaxError> {
        let Some(text) = self.eval(argument, scope, 0)? else {
            return Ok(None);
        };
        if !has_jinja_markup(&text) {
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
            template: embedded(key, anchor_line, &text),
        }))
    }

    /// A named constant (`PLANNING_PROMPT = ...`) that holds a Jinja template.
    fn named_candidate(
        &self,
        assignment: &Assignment<'t>,
    ) -> Result<Option<Candidate>, PythonSyntaxError> {
        let Some(target) = assignment
            .targets
            .iter()
            .find(|target| is_prompt_name(target.name()))
        else {
            return Ok(None);
        };
        if self.formatted.contains(target.name()) || is_markup_name(target.name()) {
            return Ok(None);
        }
        let root = self.peel(assignment.value).0;
        let resolved = self.literal_binding(root, assignment.scope);
        if resolved.is_some_and(|(_, name)| self.formatted.contains(name)) {
            return Ok(None);
        }
        let Some(text) = self.eval(assignment.value, assignment.scope, 0)? else {
            return Ok(None);
        };
        if !is_jinja_constant(&text) {
            return Ok(None);
        }
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
            None => {
                let key = match target {
                    Target::Name(name) => self.qualified(assignment.scope, name),
                    Target::Attribute { written, .. } => written.clone(),
                };
                (assignment.value.id(), Priority::Named, key, assignment.line)
            }
        };
        Ok(Some(Candidate {
            identity,
            priority,
            template: embedded(key, anchor_line, &text),
        }))
    }

    /// The arguments of a call that its API reads as templates, each with the key it gets
    /// when it is not a bound name, and whether they are Jinja (LangChain's default format
    /// is the f-string).
    fn template_arguments(&self, call: Node<'t>) -> (Vec<(Node<'t>, String)>, bool) {
        let Some(args) = Args::of(call, self) else {
            return (Vec::new(), true);
        };
        let Some(function) = call.child_by_field_name("function") else {
            return (Vec::new(), true);
        };
        let path = self.callee_path(function);
        let callee = path.join(".");
        let last = path.last().map_or("", String::as_str);
        let before_last = path.len().checked_sub(2).map(|i| path[i].as_str());
        let jinja2_format = || {
            args.keyword("template_format")
                .and_then(|value| self.literal(unparenthesize(value)).ok().flatten())
                .is_some_and(|value| value.text() == "jinja2")
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
                return (arguments, jinja2_format());
            }
            "from_template" => return (single(&["template"]), jinja2_format()),
            "from_messages" => {
                let Some((list, key)) = args.first_or_keyword(&["messages"]) else {
                    return (Vec::new(), true);
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
                return (contents, jinja2_format());
            }
            "PromptBuilder" => single(&["template"]),
            "ChatPromptBuilder" => {
                let Some((template, key)) = args.first_or_keyword(&["template"]) else {
                    return (Vec::new(), true);
                };
                if unparenthesize(template).kind() != "list" {
                    return (vec![(template, format!("{callee}({key})"))], true);
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
        (arguments, true)
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

fn embedded(key: String, anchor_line: usize, text: &MappedText) -> EmbeddedTemplate {
    EmbeddedTemplate {
        kind: HostKind::Python,
        key,
        anchor_line,
        text: text.text(),
        map: text.host_map(),
        format: crate::formats::TemplateFormat::Jinja,
    }
}

/// `PLANNING_PROMPT`, `system_prompt`, `user_template`, `PROMPT`, `Template`.
fn is_prompt_name(name: &str) -> bool {
    let lower = name.trim_start_matches('_').to_ascii_lowercase();
    ["prompt", "template"]
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
        } else if !matches!(host_bytes.first(), Some(b'\\' | b'\r' | b'\t')) {
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
