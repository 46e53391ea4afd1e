//! Shape inference: what each variable must be for the template to render, read from how
//! the template uses it. `for c in comments` makes `comments` a list, `c.author` gives its
//! items an `author`, `state.has_frontend()` makes `state` an application object, and so on,
//! nested to any depth, through `{% set %}` aliases, macros, includes and imports.
//!
//! The template is walked once with an environment of local names; every use refines a node
//! of a small graph, which [`Shapes::shape`] then resolves into a [`Shape`] tree.

use minijinja::machinery::ast::{self, CallArg, Expr, Stmt};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What a synthesized value must look like.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// Printed, or used with string methods and filters.
    Text,
    /// Used in arithmetic or compared with numbers.
    Number,
    /// Only tested for truth (`{% if premium %}`).
    Bool,
    /// Used with datetime methods (`.strftime()`, `.isoformat()`, `.date()`).
    Clock,
    /// Names a template (`{% include partial %}`).
    IncludeName,
    List(Box<Shape>),
    /// Attributes or keys read (`fields`), and/or iterated with `.items()` (`entries`).
    Mapping {
        fields: BTreeMap<String, Shape>,
        entries: Option<Box<Shape>>,
    },
    /// A pair unpacked by `for a, b in pairs`.
    Tuple(Vec<Shape>),
    /// An object of the application: methods no data value has, or uses no data value
    /// allows at once. Rendered with a stand-in that answers anything.
    Object(ObjectShape),
    /// A list item that leads back to its own list (a recursive loop): no further depth.
    Recursion,
    /// A scalar compared with literals (`{% if label == 4 %}`, `mode == "chat"`): samples
    /// take these values, so the branch that tests for one renders too.
    OneOf(Vec<minijinja::Value>),
}

impl Shape {
    /// An application object somewhere inside: a YAML sample cannot express this value.
    pub fn holds_object(&self) -> bool {
        match self {
            Shape::Object(_) => true,
            Shape::List(item) => item.holds_object(),
            Shape::Tuple(parts) => parts.iter().any(Shape::holds_object),
            Shape::Mapping { fields, entries } => {
                fields.values().any(Shape::holds_object)
                    || entries.as_ref().is_some_and(|e| e.holds_object())
            }
            _ => false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ObjectShape {
    pub fields: BTreeMap<String, Shape>,
    /// What each method call returns.
    pub methods: BTreeMap<String, Shape>,
    pub items: Option<Box<Shape>>,
    /// What calling the object itself returns.
    pub call: Option<Box<Shape>>,
}

type NodeId = usize;

#[derive(Debug, Default, Clone, Copy)]
struct Uses {
    printed: bool,
    text: bool,
    number: bool,
    tested: bool,
    clock: bool,
    include: bool,
    sized: bool,
}

#[derive(Debug, Default, Clone)]
struct Node {
    fields: BTreeMap<String, NodeId>,
    item: Option<NodeId>,
    entry: Option<NodeId>,
    tuple: Vec<NodeId>,
    methods: BTreeMap<String, NodeId>,
    call: Option<NodeId>,
    uses: Uses,
    /// Literals it is compared equal with (or found in), in order of appearance.
    equals: Vec<minijinja::Value>,
}

/// The inferred shapes of a template's context variables.
#[derive(Debug, Default)]
pub struct Shapes {
    nodes: Vec<Node>,
    roots: BTreeMap<String, NodeId>,
    /// Functions the template calls that nothing defines get stand-ins in its samples
    /// (config `stand_ins:`, the renderer's setting).
    pub stand_in_functions: bool,
}

const STRING_METHODS: &[&str] = &[
    "lower",
    "upper",
    "strip",
    "lstrip",
    "rstrip",
    "split",
    "rsplit",
    "splitlines",
    "startswith",
    "endswith",
    "replace",
    "format",
    "join",
    "title",
    "capitalize",
    "casefold",
    "center",
    "ljust",
    "rjust",
    "zfill",
    "find",
    "rfind",
    "isdigit",
    "isalpha",
    "isalnum",
    "isspace",
    "islower",
    "isupper",
    "istitle",
    "isnumeric",
    "isdecimal",
    "partition",
    "rpartition",
    "swapcase",
    "expandtabs",
    "encode",
    "removeprefix",
    "removesuffix",
    "format_map",
    "translate",
];
const LIST_METHODS: &[&str] = &[
    "append", "extend", "insert", "pop", "remove", "sort", "reverse", "index", "count",
];
const DATETIME_METHODS: &[&str] = &[
    "strftime",
    "isoformat",
    "date",
    "time",
    "timestamp",
    "weekday",
    "isoweekday",
    "ctime",
    "replace",
    "astimezone",
    "utcoffset",
    "tzname",
    "timetuple",
];
/// Attributes a datetime has: reading them does not make a clock value a mapping.
pub const DATETIME_ATTRIBUTES: &[&str] = &[
    "year",
    "month",
    "day",
    "hour",
    "minute",
    "second",
    "microsecond",
    "tzinfo",
];
const TEXT_FILTERS: &[&str] = &[
    "upper",
    "lower",
    "title",
    "capitalize",
    "trim",
    "striptags",
    "replace",
    "truncate",
    "wordcount",
    "wordwrap",
    "center",
    "indent",
    "format",
    "escape",
    "e",
    "urlize",
    "urlencode",
    "split",
];
const PASSTHROUGH_FILTERS: &[&str] = &[
    "default", "d", "safe", "list", "sort", "reverse", "unique", "reject", "select", "slice",
    "batch", "string", "tojson", "pprint", "dictsort", "items", "min", "max",
];
const NUMBER_FILTERS: &[&str] = &["int", "float", "round", "abs", "filesizeformat"];

impl Shapes {
    /// The context variables the template reads, by name. A name the template calls
    /// (`{{ frobnicate(1) }}`) is a function of the application, declared as a global in
    /// the config, not a sample value.
    fn context_roots(&self) -> impl Iterator<Item = (&String, NodeId)> {
        self.roots
            .iter()
            .filter(|(_, &id)| self.nodes[id].call.is_none())
            .map(|(name, &id)| (name, id))
    }

    /// The functions the template calls that are neither globals, macros nor locals:
    /// the application passes them in. Each with its shape (an object whose call result
    /// is what the template does with it).
    pub fn functions(&self) -> Vec<(String, Shape)> {
        self.roots
            .iter()
            .filter(|(_, &id)| self.nodes[id].call.is_some())
            .map(|(name, &id)| (name.clone(), self.resolve(id, &mut Vec::new())))
            .collect()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.context_roots().map(|(name, _)| name.as_str())
    }

    pub fn is_empty(&self) -> bool {
        self.context_roots().next().is_none()
    }

    /// The resolved shape of context variable `name`.
    pub fn shape(&self, name: &str) -> Option<Shape> {
        let (_, id) = self.context_roots().find(|(n, _)| *n == name)?;
        Some(self.resolve(id, &mut Vec::new()))
    }

    /// Every variable with its shape, by name.
    pub fn variables(&self) -> Vec<(String, Shape)> {
        self.context_roots()
            .map(|(name, id)| (name.clone(), self.resolve(id, &mut Vec::new())))
            .collect()
    }

    /// Adds the variables of `other` (the messages of one request): a variable both read
    /// keeps this one's shape.
    pub fn merge(&mut self, other: Shapes) {
        let offset = self.nodes.len();
        let shift = |id: &mut NodeId| *id += offset;
        for mut node in other.nodes {
            node.fields.values_mut().for_each(shift);
            node.methods.values_mut().for_each(shift);
            node.tuple.iter_mut().for_each(shift);
            node.item.iter_mut().for_each(shift);
            node.entry.iter_mut().for_each(shift);
            node.call.iter_mut().for_each(shift);
            self.nodes.push(node);
        }
        for (name, id) in other.roots {
            self.roots.entry(name).or_insert(id + offset);
        }
    }

    fn node(&mut self) -> NodeId {
        self.nodes.push(Node::default());
        self.nodes.len() - 1
    }

    fn root(&mut self, name: &str) -> NodeId {
        if let Some(&id) = self.roots.get(name) {
            return id;
        }
        let id = self.node();
        self.roots.insert(name.to_owned(), id);
        id
    }

    fn field(&mut self, id: NodeId, name: &str) -> NodeId {
        if let Some(&f) = self.nodes[id].fields.get(name) {
            return f;
        }
        let f = self.node();
        self.nodes[id].fields.insert(name.to_owned(), f);
        f
    }

    fn item(&mut self, id: NodeId) -> NodeId {
        if let Some(i) = self.nodes[id].item {
            return i;
        }
        let i = self.node();
        self.nodes[id].item = Some(i);
        i
    }

    fn entry(&mut self, id: NodeId) -> NodeId {
        if let Some(e) = self.nodes[id].entry {
            return e;
        }
        let e = self.node();
        self.nodes[id].entry = Some(e);
        e
    }

    fn tuple_part(&mut self, id: NodeId, index: usize) -> NodeId {
        while self.nodes[id].tuple.len() <= index {
            let part = self.node();
            self.nodes[id].tuple.push(part);
        }
        self.nodes[id].tuple[index]
    }

    fn method(&mut self, id: NodeId, name: &str) -> NodeId {
        if let Some(&m) = self.nodes[id].methods.get(name) {
            return m;
        }
        let m = self.node();
        self.nodes[id].methods.insert(name.to_owned(), m);
        m
    }

    fn call_result(&mut self, id: NodeId) -> NodeId {
        if let Some(c) = self.nodes[id].call {
            return c;
        }
        let c = self.node();
        self.nodes[id].call = Some(c);
        c
    }

    /// A list whose items are `item` (`d.values()`, `v | map(attribute='x')`).
    fn list_of(&mut self, item: NodeId) -> NodeId {
        let list = self.node();
        self.nodes[list].item = Some(item);
        list
    }

    fn uses(&mut self, id: NodeId) -> &mut Uses {
        &mut self.nodes[id].uses
    }

    fn resolve(&self, id: NodeId, path: &mut Vec<NodeId>) -> Shape {
        if path.contains(&id) || path.len() > 32 {
            return Shape::Recursion;
        }
        path.push(id);
        let shape = self.resolve_node(id, path);
        path.pop();
        shape
    }

    fn resolve_node(&self, id: NodeId, path: &mut Vec<NodeId>) -> Shape {
        let node = &self.nodes[id];
        let uses = node.uses;
        let fields = |path: &mut Vec<NodeId>| -> BTreeMap<String, Shape> {
            node.fields
                .iter()
                .map(|(name, &f)| (name.clone(), self.resolve(f, path)))
                .collect()
        };
        let structured = node.item.is_some() || !node.fields.is_empty() || node.entry.is_some();
        let only_datetime_fields = node
            .fields
            .keys()
            .all(|f| DATETIME_ATTRIBUTES.contains(&f.as_str()));
        let object = !node.methods.is_empty()
            || node.call.is_some()
            || (node.item.is_some() && !node.fields.is_empty() && node.entry.is_none())
            || (structured && uses.text)
            || (uses.clock && !only_datetime_fields);
        if object {
            return Shape::Object(ObjectShape {
                fields: fields(path),
                methods: node
                    .methods
                    .iter()
                    .map(|(name, &m)| (name.clone(), self.resolve(m, path)))
                    .collect(),
                items: node.item.map(|i| Box::new(self.resolve(i, path))),
                call: node.call.map(|c| Box::new(self.resolve(c, path))),
            });
        }
        if uses.clock {
            return Shape::Clock;
        }
        if !node.tuple.is_empty() && !structured {
            return Shape::Tuple(node.tuple.iter().map(|&t| self.resolve(t, path)).collect());
        }
        if node.entry.is_some() || !node.fields.is_empty() {
            return Shape::Mapping {
                fields: fields(path),
                entries: node.entry.map(|e| Box::new(self.resolve(e, path))),
            };
        }
        if let Some(item) = node.item {
            return Shape::List(Box::new(self.resolve(item, path)));
        }
        if !node.equals.is_empty() && !uses.include {
            return Shape::OneOf(node.equals.clone());
        }
        if uses.include {
            Shape::IncludeName
        } else if uses.number && !uses.text {
            Shape::Number
        } else if uses.text || uses.printed {
            Shape::Text
        } else if uses.sized {
            Shape::List(Box::new(Shape::Text))
        } else if uses.tested {
            Shape::Bool
        } else {
            Shape::Text
        }
    }
}

/// A template's parsed source, by template name, for the walker to follow includes into.
pub type Parsed<'a> = BTreeMap<&'a str, Stmt<'a>>;

/// Infers the shapes of the context variables of `name`, following its includes, imports
/// and extends through `templates`, and resolving their names with `resolve`.
/// `globals` are provided by the environment, not read from the context.
pub fn infer<'a>(
    templates: &'a Parsed<'a>,
    name: &str,
    globals: &'a BTreeSet<String>,
    resolve: &'a dyn Fn(&str, &str) -> Option<String>,
) -> Shapes {
    let mut walker = Walker {
        shapes: Shapes::default(),
        templates,
        globals,
        resolve,
        scopes: vec![HashMap::new()],
        current: Vec::new(),
        expanding: Vec::new(),
        budget: WALK_BUDGET,
    };
    walker.template(name);
    walker.shapes
}

/// Parses one source and infers its shapes (no includes): for tests and tools.
pub fn infer_source(source: &str) -> Result<Shapes, minijinja::Error> {
    let stmt = minijinja::machinery::parse(source, "<template>", Default::default())?;
    let mut templates = Parsed::new();
    templates.insert("<template>", stmt);
    Ok(infer(
        &templates,
        "<template>",
        &[
            "range",
            "dict",
            "namespace",
            "now",
            "strftime_now",
            "lipsum",
            "cycler",
            "joiner",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        &|_, _| None,
    ))
}

/// Expressions and statements visited per template, macros and includes expanded: bounds
/// the walk of a template that expands macros in macros in loops.
const WALK_BUDGET: usize = 200_000;
/// How deep includes and macro calls are expanded.
const MAX_EXPANSION: usize = 24;

#[derive(Clone, Copy)]
enum Abs<'a> {
    Node(NodeId),
    Macro(&'a ast::Macro<'a>),
    Module(&'a str),
    /// `loop` of a `{% for ... recursive %}`: `loop(x)` iterates `x` like the loop's list.
    RecursiveLoop(NodeId),
    Opaque,
}

struct Walker<'a> {
    shapes: Shapes,
    templates: &'a Parsed<'a>,
    globals: &'a BTreeSet<String>,
    resolve: &'a dyn Fn(&str, &str) -> Option<String>,
    scopes: Vec<HashMap<&'a str, Abs<'a>>>,
    /// Templates being walked, innermost last: includes resolve against the last.
    current: Vec<&'a str>,
    expanding: Vec<*const ast::Macro<'a>>,
    budget: usize,
}

impl<'a> Walker<'a> {
    fn spend(&mut self) -> bool {
        if self.budget == 0 {
            return false;
        }
        self.budget -= 1;
        true
    }

    fn template(&mut self, name: &str) {
        let Some((&key, stmt)) = self.templates.get_key_value(name) else {
            return;
        };
        if self.current.contains(&key) || self.current.len() + self.expanding.len() > MAX_EXPANSION
        {
            return;
        }
        self.current.push(key);
        self.scopes.push(HashMap::new());
        self.stmt(stmt);
        self.scopes.pop();
        self.current.pop();
    }

    fn resolve_name(&self, name: &str) -> Option<&'a str> {
        let parent = self.current.last()?;
        let resolved = (self.resolve)(parent, name)?;
        self.templates
            .get_key_value(resolved.as_str())
            .map(|(&k, _)| k)
    }

    fn bind(&mut self, name: &'a str, value: Abs<'a>) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name, value);
        }
    }

    fn lookup(&mut self, name: &'a str) -> Abs<'a> {
        for scope in self.scopes.iter().rev() {
            if let Some(&value) = scope.get(name) {
                return value;
            }
        }
        if self.globals.contains(name)
            || matches!(
                name,
                "loop" | "self" | "caller" | "varargs" | "kwargs" | "super"
            )
        {
            return Abs::Opaque;
        }
        Abs::Node(self.shapes.root(name))
    }

    fn body(&mut self, stmts: &'a [Stmt<'a>]) {
        for stmt in stmts {
            self.stmt(stmt);
        }
    }

    fn stmt(&mut self, stmt: &'a Stmt<'a>) {
        if !self.spend() {
            return;
        }
        match stmt {
            Stmt::Template(t) => self.body(&t.children),
            Stmt::EmitExpr(e) => {
                if let Abs::Node(n) = self.expr(&e.expr) {
                    self.shapes.uses(n).printed = true;
                }
            }
            Stmt::EmitRaw(_) | Stmt::Continue(_) | Stmt::Break(_) => {}
            Stmt::ForLoop(f) => {
                let iterated = self.expr(&f.iter);
                let element = self.element(iterated);
                self.scopes.push(HashMap::new());
                self.assign(&f.target, element);
                let loop_var = match (f.recursive, iterated) {
                    (true, Abs::Node(list)) => Abs::RecursiveLoop(list),
                    _ => Abs::Opaque,
                };
                self.bind("loop", loop_var);
                if let Some(filter) = &f.filter_expr {
                    self.test(filter);
                }
                self.body(&f.body);
                self.scopes.pop();
                self.body(&f.else_body);
            }
            Stmt::IfCond(c) => {
                self.test(&c.expr);
                self.branch(&c.true_body);
                self.branch(&c.false_body);
            }
            Stmt::WithBlock(w) => {
                self.scopes.push(HashMap::new());
                for (target, value) in &w.assignments {
                    let value = self.expr(value);
                    self.assign(target, value);
                }
                self.body(&w.body);
                self.scopes.pop();
            }
            Stmt::Set(s) => {
                let value = self.expr(&s.expr);
                self.assign(&s.target, value);
            }
            Stmt::SetBlock(s) => {
                self.scoped(&s.body);
                if let Some(filter) = &s.filter {
                    self.expr(filter);
                }
                self.assign(&s.target, Abs::Opaque);
            }
            Stmt::AutoEscape(a) => self.body(&a.body),
            Stmt::FilterBlock(f) => {
                self.expr(&f.filter);
                self.body(&f.body);
            }
            Stmt::Block(b) => self.scoped(&b.body),
            Stmt::Extends(e) => self.template_reference(&e.name),
            Stmt::Include(i) => self.template_reference(&i.name),
            Stmt::Import(i) => {
                let module = self.module(&i.expr);
                self.assign(&i.name, module);
            }
            Stmt::FromImport(i) => {
                let module = self.module(&i.expr);
                for (name, alias) in &i.names {
                    let Expr::Var(var) = name else { continue };
                    let value = match module {
                        Abs::Module(m) => self.module_macro(m, var.id),
                        _ => Abs::Opaque,
                    };
                    self.assign(alias.as_ref().unwrap_or(name), value);
                }
            }
            Stmt::Macro(m) => {
                self.bind(m.name, Abs::Macro(m));
                // Walked once as written, so what it reads from the context counts even
                // where it is called with arguments this walk cannot follow.
                self.expand_macro(m, &[], true);
            }
            Stmt::CallBlock(c) => {
                self.call(&c.call);
                self.expand_macro(&c.macro_decl, &[], true);
            }
            Stmt::Do(d) => {
                self.call(&d.call);
            }
        }
    }

    /// An `if` opens no scope in Jinja2: a `set` inside it rebinds a local after it. A name
    /// it may or may not set is read from the context when the branch is not taken.
    fn branch(&mut self, stmts: &'a [Stmt<'a>]) {
        self.scopes.push(HashMap::new());
        self.body(stmts);
        let set = self.scopes.pop().unwrap_or_default();
        for (name, value) in set {
            let bound = self.scopes.iter().any(|scope| scope.contains_key(name));
            let after = match value {
                Abs::Macro(_) | Abs::Module(_) => value,
                _ if bound => value,
                _ => self.lookup(name),
            };
            self.bind(name, after);
        }
    }

    fn scoped(&mut self, stmts: &'a [Stmt<'a>]) {
        self.scopes.push(HashMap::new());
        self.body(stmts);
        self.scopes.pop();
    }

    /// `{% include %}` / `{% extends %}`: a literal name is walked in place, with the
    /// current locals (Jinja2 passes them); a variable must name a template.
    fn template_reference(&mut self, name: &'a Expr<'a>) {
        let names: Vec<String> = match name.as_const() {
            Some(value) if value.as_str().is_some() => {
                vec![value.as_str().unwrap_or_default().to_owned()]
            }
            Some(value) => value
                .try_iter()
                .map(|items| {
                    items
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            None => {
                if let Abs::Node(n) = self.expr(name) {
                    self.shapes.uses(n).include = true;
                }
                return;
            }
        };
        for name in names {
            if let Some(resolved) = self.resolve_name(&name) {
                self.template(resolved);
            }
        }
    }

    fn module(&mut self, expr: &'a Expr<'a>) -> Abs<'a> {
        match expr.as_const() {
            Some(value) => value
                .as_str()
                .and_then(|name| self.resolve_name(name))
                .map(Abs::Module)
                .unwrap_or(Abs::Opaque),
            None => {
                if let Abs::Node(n) = self.expr(expr) {
                    self.shapes.uses(n).include = true;
                }
                Abs::Opaque
            }
        }
    }

    fn module_macro(&self, module: &'a str, name: &str) -> Abs<'a> {
        let Some(Stmt::Template(t)) = self.templates.get(module) else {
            return Abs::Opaque;
        };
        t.children
            .iter()
            .find_map(|stmt| match stmt {
                Stmt::Macro(m) if m.name == name => Some(Abs::Macro(m)),
                _ => None,
            })
            .unwrap_or(Abs::Opaque)
    }

    /// Binds a `for`/`set`/`with` target to a value, unpacking tuples.
    fn assign(&mut self, target: &'a Expr<'a>, value: Abs<'a>) {
        match target {
            Expr::Var(var) => self.bind(var.id, value),
            // minijinja parses `a, b` targets as a list.
            Expr::List(list) => self.unpack(&list.items, value),
            Expr::Tuple(tuple) => self.unpack(&tuple.items, value),
            _ => {}
        }
    }

    fn unpack(&mut self, targets: &'a [Expr<'a>], value: Abs<'a>) {
        for (i, part) in targets.iter().enumerate() {
            let part_value = match value {
                Abs::Node(n) => Abs::Node(self.shapes.tuple_part(n, i)),
                _ => Abs::Opaque,
            };
            self.assign(part, part_value);
        }
    }

    /// What iterating `value` yields.
    fn element(&mut self, value: Abs<'a>) -> Abs<'a> {
        match value {
            Abs::Node(n) => Abs::Node(self.shapes.item(n)),
            _ => Abs::Opaque,
        }
    }

    /// An expression used as a condition.
    fn test(&mut self, expr: &'a Expr<'a>) {
        if let Abs::Node(n) = self.expr(expr) {
            self.shapes.uses(n).tested = true;
        }
    }

    fn expr(&mut self, expr: &'a Expr<'a>) -> Abs<'a> {
        if !self.spend() {
            return Abs::Opaque;
        }
        match expr {
            Expr::Var(var) => self.lookup(var.id),
            Expr::Const(_) => Abs::Opaque,
            Expr::Slice(s) => {
                let value = self.expr(&s.expr);
                for part in [&s.start, &s.stop, &s.step].into_iter().flatten() {
                    self.number(part);
                }
                if let Abs::Node(n) = value {
                    self.shapes.uses(n).sized = true;
                }
                value
            }
            Expr::UnaryOp(u) => {
                let value = self.expr(&u.expr);
                if let Abs::Node(n) = value {
                    match u.op {
                        ast::UnaryOpKind::Not => self.shapes.uses(n).tested = true,
                        ast::UnaryOpKind::Neg => self.shapes.uses(n).number = true,
                    }
                }
                Abs::Opaque
            }
            Expr::BinOp(b) => self.binop(b),
            Expr::Compare(c) => {
                let mut left = &c.expr;
                let mut left_value = self.expr(left);
                for op in &c.ops {
                    let right_value = self.expr(&op.expr);
                    let membership =
                        matches!(op.op, ast::CompareOpKind::In | ast::CompareOpKind::NotIn);
                    let equality = matches!(op.op, ast::CompareOpKind::Eq | ast::CompareOpKind::In);
                    self.compared_as(left_value, &op.expr, membership, equality);
                    if !membership {
                        self.compared_as(right_value, left, false, equality);
                    }
                    left = &op.expr;
                    left_value = right_value;
                }
                Abs::Opaque
            }
            Expr::IfExpr(i) => {
                self.test(&i.test_expr);
                let value = self.expr(&i.true_expr);
                if let Some(other) = &i.false_expr {
                    self.expr(other);
                }
                value
            }
            Expr::Filter(f) => self.filter(f),
            Expr::Test(t) => {
                let value = self.expr(&t.expr);
                self.args(&t.args);
                if let Abs::Node(n) = value {
                    let uses = self.shapes.uses(n);
                    match t.name {
                        "string" => uses.text = true,
                        "number" | "integer" | "float" | "divisibleby" | "odd" | "even" => {
                            uses.number = true
                        }
                        "true" | "false" | "boolean" => uses.tested = true,
                        "sequence" | "iterable" => uses.sized = true,
                        _ => {}
                    }
                }
                Abs::Opaque
            }
            Expr::GetAttr(g) => {
                let value = self.expr(&g.expr);
                match value {
                    Abs::Node(n) => Abs::Node(self.shapes.field(n, g.name)),
                    Abs::Module(m) => self.module_macro(m, g.name),
                    _ => Abs::Opaque,
                }
            }
            Expr::GetItem(g) => {
                let value = self.expr(&g.expr);
                let key = g.subscript_expr.as_const();
                if key.is_none() {
                    self.expr(&g.subscript_expr);
                }
                let Abs::Node(n) = value else {
                    return Abs::Opaque;
                };
                Abs::Node(match key {
                    Some(k) if k.as_str().is_some() => {
                        self.shapes.field(n, k.as_str().unwrap_or_default())
                    }
                    Some(k) if k.is_integer() => match k.as_i64() {
                        Some(i @ 0..=7) if !self.shapes.nodes[n].tuple.is_empty() => {
                            self.shapes.tuple_part(n, i as usize)
                        }
                        _ => self.shapes.item(n),
                    },
                    _ if self.shapes.nodes[n].entry.is_some() => self.shapes.entry(n),
                    _ => self.shapes.item(n),
                })
            }
            Expr::Call(c) => self.call(c),
            Expr::List(l) => {
                for item in &l.items {
                    self.expr(item);
                }
                Abs::Opaque
            }
            Expr::Tuple(t) => {
                for item in &t.items {
                    self.expr(item);
                }
                Abs::Opaque
            }
            Expr::Map(m) => {
                for e in m.keys.iter().chain(&m.values) {
                    self.expr(e);
                }
                Abs::Opaque
            }
        }
    }

    fn number(&mut self, expr: &'a Expr<'a>) {
        if let Abs::Node(n) = self.expr(expr) {
            self.shapes.uses(n).number = true;
        }
    }

    /// `value` compared with `other`: a number or string literal tells its kind.
    /// `equality` (`==`, `in`) also records the literal as a value samples should take.
    fn compared_as(&mut self, value: Abs<'a>, other: &Expr<'_>, membership: bool, equality: bool) {
        let Abs::Node(n) = value else { return };
        let Some(constant) = other.as_const() else {
            return;
        };
        let sample = if membership {
            constant.try_iter().ok().and_then(|mut items| items.next())
        } else {
            Some(constant)
        };
        let Some(sample) = sample else { return };
        let equals = &mut self.shapes.nodes[n].equals;
        if equality
            && equals.len() < 8
            && !equals.contains(&sample)
            && (sample.is_number() || sample.as_str().is_some())
        {
            equals.push(sample.clone());
        }
        if sample.is_number() {
            self.shapes.uses(n).number = true;
        } else if sample.as_str().is_some() {
            self.shapes.uses(n).text = true;
        }
    }

    fn binop(&mut self, b: &'a ast::BinOp<'a>) -> Abs<'a> {
        use ast::BinOpKind::*;
        let left = self.expr(&b.left);
        let right = self.expr(&b.right);
        match b.op {
            Add | Sub | Mul | Div | FloorDiv | Rem | Pow => {
                for (value, other, other_value) in [(left, &b.right, right), (right, &b.left, left)]
                {
                    let Abs::Node(n) = value else { continue };
                    // `+` joins strings as well as numbers: the other side tells which.
                    let other_kind = literal_kind(other).or(match other_value {
                        Abs::Node(m) if self.shapes.nodes[m].uses.text => Some(Kind::Text),
                        Abs::Node(m) if self.shapes.nodes[m].uses.number => Some(Kind::Number),
                        _ => None,
                    });
                    let uses = self.shapes.uses(n);
                    match (b.op, other_kind) {
                        (Add, Some(Kind::Text)) => uses.text = true,
                        (Add, None) => uses.printed = true,
                        _ => uses.number = true,
                    }
                }
                Abs::Opaque
            }
            Concat => {
                for value in [left, right] {
                    if let Abs::Node(n) = value {
                        self.shapes.uses(n).printed = true;
                    }
                }
                Abs::Opaque
            }
            ScAnd | ScOr => {
                for value in [left, right] {
                    if let Abs::Node(n) = value {
                        self.shapes.uses(n).tested = true;
                    }
                }
                // `x or 'default'` is `x` when it is set.
                left
            }
            Eq | Ne | Lt | Lte | Gt | Gte => {
                let equality = matches!(b.op, Eq);
                self.compared_as(left, &b.right, false, equality);
                self.compared_as(right, &b.left, false, equality);
                Abs::Opaque
            }
            In => {
                self.compared_as(left, &b.right, true, true);
                Abs::Opaque
            }
        }
    }

    fn args(&mut self, args: &'a [CallArg<'a>]) -> Vec<Abs<'a>> {
        args.iter()
            .map(|arg| match arg {
                CallArg::Pos(e)
                | CallArg::Kwarg(_, e)
                | CallArg::PosSplat(e)
                | CallArg::KwargSplat(e) => self.expr(e),
            })
            .collect()
    }

    /// A constant argument, by position or keyword.
    fn const_arg(args: &[CallArg<'_>], position: usize, keyword: &str) -> Option<String> {
        let by_keyword = args.iter().find_map(|a| match a {
            CallArg::Kwarg(k, e) if *k == keyword => e.as_const(),
            _ => None,
        });
        by_keyword
            .or_else(|| {
                args.iter()
                    .filter_map(|a| match a {
                        CallArg::Pos(e) => Some(e),
                        _ => None,
                    })
                    .nth(position)
                    .and_then(|e| e.as_const())
            })
            .and_then(|v| v.as_str().map(str::to_owned))
    }

    fn filter(&mut self, f: &'a ast::Filter<'a>) -> Abs<'a> {
        let input = match &f.expr {
            Some(e) => self.expr(e),
            None => Abs::Opaque,
        };
        self.args(&f.args);
        let Abs::Node(n) = input else {
            return Abs::Opaque;
        };
        let name = f.name;
        if TEXT_FILTERS.contains(&name) {
            self.shapes.uses(n).text = true;
            return Abs::Opaque;
        }
        if NUMBER_FILTERS.contains(&name) {
            self.shapes.uses(n).number = true;
            return Abs::Opaque;
        }
        match name {
            "length" | "count" => {
                self.shapes.uses(n).sized = true;
                Abs::Opaque
            }
            "first" | "last" | "random" => Abs::Node(self.shapes.item(n)),
            "join" => {
                let item = self.shapes.item(n);
                match Self::const_arg(&f.args, 1, "attribute") {
                    Some(attribute) => {
                        let field = self.field_path(item, &attribute);
                        self.shapes.uses(field).printed = true;
                    }
                    None => self.shapes.uses(item).printed = true,
                }
                Abs::Opaque
            }
            "sum" => {
                let item = self.shapes.item(n);
                let target = match Self::const_arg(&f.args, 0, "attribute") {
                    Some(attribute) => self.field_path(item, &attribute),
                    None => item,
                };
                self.shapes.uses(target).number = true;
                Abs::Opaque
            }
            "map" => {
                let item = self.shapes.item(n);
                match Self::const_arg(&f.args, usize::MAX, "attribute") {
                    Some(attribute) => {
                        let field = self.field_path(item, &attribute);
                        Abs::Node(self.shapes.list_of(field))
                    }
                    None => {
                        if Self::const_arg(&f.args, 0, "").is_some() {
                            self.shapes.uses(item).text = true;
                        }
                        Abs::Opaque
                    }
                }
            }
            "selectattr" | "rejectattr" => {
                let item = self.shapes.item(n);
                if let Some(attribute) = Self::const_arg(&f.args, 0, "") {
                    let field = self.field_path(item, &attribute);
                    self.shapes.uses(field).tested = true;
                }
                Abs::Node(n)
            }
            "groupby" => {
                let item = self.shapes.item(n);
                let group = self.shapes.node();
                if let Some(attribute) = Self::const_arg(&f.args, 0, "attribute") {
                    let key = self.field_path(item, &attribute);
                    self.shapes.nodes[group]
                        .fields
                        .insert("grouper".into(), key);
                }
                self.shapes.nodes[group].fields.insert("list".into(), n);
                self.shapes.nodes[group].fields.insert("items".into(), n);
                Abs::Node(self.shapes.list_of(group))
            }
            "attr" => match Self::const_arg(&f.args, 0, "") {
                Some(attribute) => Abs::Node(self.shapes.field(n, &attribute)),
                None => Abs::Opaque,
            },
            "dictsort" | "items" => Abs::Node(self.pairs(n)),
            _ if PASSTHROUGH_FILTERS.contains(&name) => Abs::Node(n),
            // An application's own filter: its input's kind is unknown.
            _ => Abs::Opaque,
        }
    }

    /// `a.b.c` as nested fields (filters take dotted attributes).
    fn field_path(&mut self, mut id: NodeId, dotted: &str) -> NodeId {
        for part in dotted.split('.') {
            id = match part.parse::<usize>() {
                Ok(_) => self.shapes.item(id),
                Err(_) => self.shapes.field(id, part),
            };
        }
        id
    }

    /// `d.items()`: a list of (key, value) pairs of mapping `d`.
    fn pairs(&mut self, dict: NodeId) -> NodeId {
        let value = self.shapes.entry(dict);
        let pair = self.shapes.node();
        let key = self.shapes.node();
        self.shapes.uses(key).text = true;
        self.shapes.nodes[pair].tuple = vec![key, value];
        self.shapes.list_of(pair)
    }

    fn call(&mut self, c: &'a ast::Call<'a>) -> Abs<'a> {
        match c.identify_call() {
            ast::CallType::Function(name) => {
                let callee = self.lookup(name);
                let args = self.args(&c.args);
                match callee {
                    Abs::Macro(m) => {
                        self.expand_macro(m, &bind_args(m, &c.args, &args), false);
                        Abs::Opaque
                    }
                    Abs::RecursiveLoop(list) => {
                        // `loop(item.children)`: the children are items like the loop's.
                        if let (Some(Abs::Node(children)), Some(item)) =
                            (args.first().copied(), self.shapes.nodes[list].item)
                        {
                            if children != list && self.shapes.nodes[children].item.is_none() {
                                self.shapes.nodes[children].item = Some(item);
                            }
                        }
                        Abs::Opaque
                    }
                    Abs::Node(n) => Abs::Node(self.shapes.call_result(n)),
                    _ => {
                        if name == "range" {
                            for arg in args {
                                if let Abs::Node(n) = arg {
                                    self.shapes.uses(n).number = true;
                                }
                            }
                        }
                        Abs::Opaque
                    }
                }
            }
            ast::CallType::Method(receiver, method) => {
                let value = self.expr(receiver);
                let args = self.args(&c.args);
                match value {
                    Abs::Node(n) => self.method_call(n, method, &c.args, &args),
                    Abs::Module(m) => {
                        if let Abs::Macro(mac) = self.module_macro(m, method) {
                            self.expand_macro(mac, &bind_args(mac, &c.args, &args), false);
                        }
                        Abs::Opaque
                    }
                    _ => {
                        // `", ".join(items)`: the list's items are printed.
                        if method == "join" && receiver.as_const().is_some() {
                            if let Some(Abs::Node(list)) = args.first().copied() {
                                let item = self.shapes.item(list);
                                self.shapes.uses(item).printed = true;
                            }
                        }
                        if method == "format" {
                            for arg in args {
                                if let Abs::Node(n) = arg {
                                    self.shapes.uses(n).printed = true;
                                }
                            }
                        }
                        Abs::Opaque
                    }
                }
            }
            ast::CallType::Block(_) => {
                self.args(&c.args);
                Abs::Opaque
            }
            ast::CallType::Object(callee) => {
                let value = self.expr(callee);
                self.args(&c.args);
                match value {
                    Abs::Node(n) => Abs::Node(self.shapes.call_result(n)),
                    _ => Abs::Opaque,
                }
            }
        }
    }

    fn method_call(
        &mut self,
        n: NodeId,
        method: &str,
        raw_args: &'a [CallArg<'a>],
        args: &[Abs<'a>],
    ) -> Abs<'a> {
        match method {
            "items" => Abs::Node(self.pairs(n)),
            "keys" => {
                self.shapes.entry(n);
                let key = self.shapes.node();
                self.shapes.uses(key).text = true;
                Abs::Node(self.shapes.list_of(key))
            }
            "values" => {
                let value = self.shapes.entry(n);
                Abs::Node(self.shapes.list_of(value))
            }
            "get" | "setdefault" | "pop" if raw_args.first().is_some_and(|a| matches!(a, CallArg::Pos(e) if e.as_const().is_some_and(|k| k.as_str().is_some()))) => {
                let key = Self::const_arg(raw_args, 0, "").unwrap_or_default();
                Abs::Node(self.shapes.field(n, &key))
            }
            "get" | "setdefault" => Abs::Node(self.shapes.entry(n)),
            "split" | "rsplit" | "splitlines" => {
                self.shapes.uses(n).text = true;
                let part = self.shapes.node();
                self.shapes.uses(part).text = true;
                Abs::Node(self.shapes.list_of(part))
            }
            _ if STRING_METHODS.contains(&method) => {
                self.shapes.uses(n).text = true;
                if method == "join" {
                    if let Some(Abs::Node(list)) = args.first().copied() {
                        let item = self.shapes.item(list);
                        self.shapes.uses(item).printed = true;
                    }
                }
                Abs::Opaque
            }
            _ if LIST_METHODS.contains(&method) => {
                self.shapes.item(n);
                Abs::Opaque
            }
            _ if DATETIME_METHODS.contains(&method) => {
                self.shapes.uses(n).clock = true;
                Abs::Opaque
            }
            _ => Abs::Node(self.shapes.method(n, method)),
        }
    }

    /// Walks a macro's body with its parameters bound to the caller's arguments. A macro
    /// reads the template's context, not the caller's locals.
    fn expand_macro(
        &mut self,
        m: &'a ast::Macro<'a>,
        params: &[(&'a str, Abs<'a>)],
        declaration: bool,
    ) {
        let key = m as *const ast::Macro<'a>;
        if self.expanding.contains(&key)
            || self.current.len() + self.expanding.len() > MAX_EXPANSION
        {
            return;
        }
        self.expanding.push(key);
        let mut scope: HashMap<&'a str, Abs<'a>> = HashMap::new();
        for arg in &m.args {
            if let Expr::Var(var) = arg {
                scope.insert(var.id, Abs::Opaque);
            }
        }
        if declaration {
            for default in &m.defaults {
                self.expr(default);
            }
        }
        for (name, value) in params {
            scope.insert(name, *value);
        }
        // Macros defined beside this one stay callable from it.
        let outer: HashMap<&'a str, Abs<'a>> = self
            .scopes
            .iter()
            .flat_map(|s| s.iter())
            .filter(|(_, v)| matches!(v, Abs::Macro(..) | Abs::Module(_)))
            .map(|(k, v)| (*k, *v))
            .collect();
        let saved = std::mem::replace(&mut self.scopes, vec![outer, scope]);
        self.body(&m.body);
        self.scopes = saved;
        self.expanding.pop();
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Number,
}

/// What an expression evaluates to, where its syntax alone says so.
fn literal_kind(expr: &Expr<'_>) -> Option<Kind> {
    use ast::BinOpKind::*;
    match expr {
        Expr::Const(c) if c.value.as_str().is_some() => Some(Kind::Text),
        Expr::Const(c) if c.value.is_number() => Some(Kind::Number),
        Expr::BinOp(b) => match b.op {
            Concat => Some(Kind::Text),
            Add => literal_kind(&b.left).or_else(|| literal_kind(&b.right)),
            Sub | Mul | Div | FloorDiv | Rem | Pow => Some(Kind::Number),
            _ => None,
        },
        Expr::Filter(f) => match f.name {
            "length" | "count" | "int" | "float" | "round" | "abs" | "sum" => Some(Kind::Number),
            "string" | "join" | "tojson" => Some(Kind::Text),
            name if TEXT_FILTERS.contains(&name) => Some(Kind::Text),
            _ => None,
        },
        Expr::Call(c) => match c.identify_call() {
            ast::CallType::Method(_, name)
                if STRING_METHODS.contains(&name)
                    && !matches!(
                        name,
                        "split" | "rsplit" | "splitlines" | "partition" | "rpartition"
                    ) =>
            {
                Some(Kind::Text)
            }
            _ => None,
        },
        _ => None,
    }
}

/// A macro's parameters bound to a call's arguments, by position then keyword.
fn bind_args<'a>(
    m: &'a ast::Macro<'a>,
    raw: &'a [CallArg<'a>],
    values: &[Abs<'a>],
) -> Vec<(&'a str, Abs<'a>)> {
    let params: Vec<&'a str> = m
        .args
        .iter()
        .filter_map(|a| match a {
            Expr::Var(v) => Some(v.id),
            _ => None,
        })
        .collect();
    let mut bound = Vec::new();
    let mut position = 0;
    for (arg, value) in raw.iter().zip(values) {
        match arg {
            CallArg::Pos(_) => {
                if let Some(name) = params.get(position) {
                    bound.push((*name, *value));
                }
                position += 1;
            }
            CallArg::Kwarg(name, _) => {
                if let Some(param) = params.iter().find(|p| **p == *name) {
                    bound.push((*param, *value));
                }
            }
            _ => {}
        }
    }
    bound
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(source: &str, name: &str) -> Shape {
        infer_source(source)
            .unwrap()
            .shape(name)
            .unwrap_or_else(|| panic!("{name} not inferred from {source}"))
    }

    fn mapping(fields: &[(&str, Shape)]) -> Shape {
        Shape::Mapping {
            fields: fields
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            entries: None,
        }
    }

    fn list(item: Shape) -> Shape {
        Shape::List(Box::new(item))
    }

    #[test]
    fn printed_is_text() {
        assert_eq!(shape("{{ question }}", "question"), Shape::Text);
    }

    #[test]
    fn loops_make_lists_of_what_the_body_reads() {
        assert_eq!(
            shape(
                "{% for c in comments %}{{ c.author }}: {{ c.body }}{% endfor %}",
                "comments"
            ),
            list(mapping(&[("author", Shape::Text), ("body", Shape::Text)]))
        );
        assert_eq!(
            shape("{% for s in sections %}{% for p in s.points %}{{ p.text }}{% endfor %}{% endfor %}", "sections"),
            list(mapping(&[("points", list(mapping(&[("text", Shape::Text)])))]))
        );
        assert_eq!(
            shape("{% for line in lines %}{{ line }}{% endfor %}", "lines"),
            list(Shape::Text)
        );
    }

    #[test]
    fn items_keys_values_and_get() {
        assert_eq!(
            shape(
                "{% for k, v in env.items() %}{{ k }}={{ v.value }}{% endfor %}",
                "env"
            ),
            Shape::Mapping {
                fields: BTreeMap::new(),
                entries: Some(Box::new(mapping(&[("value", Shape::Text)]))),
            }
        );
        assert!(matches!(
            shape("{% for v in d.values() %}{{ v }}{% endfor %}", "d"),
            Shape::Mapping {
                entries: Some(_),
                ..
            }
        ));
        assert!(matches!(
            shape("{% for k in d.keys() %}{{ k }}{% endfor %}", "d"),
            Shape::Mapping {
                entries: Some(_),
                ..
            }
        ));
        assert_eq!(
            shape("{{ cfg.get('model') }} {{ cfg['temperature'] + 1 }}", "cfg"),
            mapping(&[("model", Shape::Text), ("temperature", Shape::Number)])
        );
        assert!(matches!(
            shape(
                "{% for k, v in d | dictsort %}{{ k }}{{ v }}{% endfor %}",
                "d"
            ),
            Shape::Mapping {
                entries: Some(_),
                ..
            }
        ));
    }

    #[test]
    fn string_methods_make_text() {
        for source in [
            "{{ s.lower() }}",
            "{{ s.strip() }}",
            "{% if s.startswith('x') %}y{% endif %}",
            "{{ s.replace('a', 'b') }}",
            "{% for w in s.split(',') %}{{ w }}{% endfor %}",
            "{{ s | upper }}",
            "{{ s | trim }}",
        ] {
            assert_eq!(shape(source, "s"), Shape::Text, "{source}");
        }
        assert_eq!(shape("{{ ', '.join(tags) }}", "tags"), list(Shape::Text));
    }

    #[test]
    fn filters_and_indexing_make_lists() {
        assert_eq!(shape("{{ docs | length }}", "docs"), list(Shape::Text));
        assert_eq!(shape("{{ docs | first }}", "docs"), list(Shape::Text));
        assert_eq!(shape("{{ docs | join(', ') }}", "docs"), list(Shape::Text));
        assert_eq!(
            shape("{{ docs[0].title }}", "docs"),
            list(mapping(&[("title", Shape::Text)]))
        );
        assert_eq!(
            shape("{{ tools | map(attribute='name') | join(', ') }}", "tools"),
            list(mapping(&[("name", Shape::Text)]))
        );
    }

    #[test]
    fn plus_joins_strings_or_adds_numbers() {
        let shapes =
            infer_source("{{ greeting + ', ' + name }} {{ count + 1 }} {{ total - spent }}")
                .unwrap();
        assert_eq!(shapes.shape("greeting"), Some(Shape::Text));
        assert_eq!(shapes.shape("name"), Some(Shape::Text));
        assert_eq!(shapes.shape("count"), Some(Shape::Number));
        assert_eq!(shapes.shape("spent"), Some(Shape::Number));
    }

    #[test]
    fn a_set_inside_an_if_rebinds_after_it() {
        assert_eq!(
            shape(
                "{% for tool in tools %}{% if tool.function is defined %}{% set tool = tool.function %}{% endif %}{{ tool.name }}{% endfor %}",
                "tools"
            ),
            list(mapping(&[("function", mapping(&[("name", Shape::Text)]))]))
        );
    }

    #[test]
    fn numbers_and_truth() {
        assert_eq!(shape("{{ n + 1 }}", "n"), Shape::Number);
        assert_eq!(shape("{% if n > 3 %}many{% endif %}", "n"), Shape::Number);
        assert_eq!(
            shape("{% for i in range(n) %}.{% endfor %}", "n"),
            Shape::Number
        );
        assert_eq!(
            shape("{% if premium %}yes{% endif %}", "premium"),
            Shape::Bool
        );
        assert_eq!(
            shape("{% if x is defined %}{{ x }}{% endif %}", "x"),
            Shape::Text
        );
        // Compared with literals: samples take them, so the branch renders.
        assert_eq!(
            shape("{% if mode == 'fast' %}f{% endif %}", "mode"),
            Shape::OneOf(vec!["fast".into()])
        );
        assert_eq!(
            shape(
                "{% if label == 4 %}a{% elif label == 0 %}b{% elif label > 9 %}c{% endif %}",
                "label"
            ),
            Shape::OneOf(vec![4.into(), 0.into()])
        );
        assert_eq!(
            shape("{% if lang in ['en', 'de'] %}x{% endif %}", "lang"),
            Shape::OneOf(vec!["en".into()])
        );
        assert_eq!(
            shape("{% if mode != 'x' %}y{% endif %}", "mode"),
            Shape::Text
        );
    }

    #[test]
    fn application_objects_are_objects() {
        let Shape::Object(o) = shape("{% if state.has_frontend() %}web{% endif %}", "state") else {
            panic!("not an object")
        };
        assert_eq!(o.methods["has_frontend"], Shape::Bool);
        let Shape::List(item) = shape(
            "{% for s in subtasks %}{{ s.output.to_text() }}{% endfor %}",
            "subtasks",
        ) else {
            panic!("not a list")
        };
        let Shape::Mapping { fields, .. } = *item else {
            panic!("items not mappings")
        };
        let Shape::Object(output) = &fields["output"] else {
            panic!("output not an object")
        };
        assert_eq!(output.methods["to_text"], Shape::Text);
    }

    #[test]
    fn datetime_methods_make_clocks() {
        assert_eq!(
            shape("{{ created.strftime('%Y') }}", "created"),
            Shape::Clock
        );
        assert_eq!(
            shape("{{ created.isoformat() }} {{ created.year }}", "created"),
            Shape::Clock
        );
        // A field named like a datetime attribute is just a field without datetime methods.
        assert_eq!(
            shape("{{ movie.year }}", "movie"),
            mapping(&[("year", Shape::Text)])
        );
    }

    #[test]
    fn set_aliases_macros_and_includes() {
        assert_eq!(
            shape("{% set first = items[0] %}{{ first.name }}", "items"),
            list(mapping(&[("name", Shape::Text)]))
        );
        assert_eq!(
            shape(
                "{% macro show(c) %}{{ c.author }}{% endmacro %}{% for c in comments %}{{ show(c) }}{% endfor %}",
                "comments"
            ),
            list(mapping(&[("author", Shape::Text)]))
        );
        assert_eq!(
            shape("{% include partial %}", "partial"),
            Shape::IncludeName
        );
        // Loop variables and locals are not context variables.
        let shapes = infer_source(
            "{% set x = 1 %}{% for i in items %}{{ loop.index }}{{ i }}{{ x }}{% endfor %}",
        )
        .unwrap();
        assert_eq!(shapes.names().collect::<Vec<_>>(), ["items"]);
    }

    #[test]
    fn tuples_unpack() {
        assert_eq!(
            shape(
                "{% for name, score in results %}{{ name }} {{ score * 2 }}{% endfor %}",
                "results"
            ),
            list(Shape::Tuple(vec![Shape::Text, Shape::Number]))
        );
    }

    #[test]
    fn recursive_loops_end() {
        let s = shape(
            "{% for n in tree recursive %}{{ n.name }}{{ loop(n.children) }}{% endfor %}",
            "tree",
        );
        let Shape::List(item) = s else { panic!() };
        let Shape::Mapping { fields, .. } = *item else {
            panic!()
        };
        assert_eq!(fields["children"], list(Shape::Recursion));
    }

    #[test]
    fn includes_are_walked_with_the_current_locals() {
        let main = minijinja::machinery::parse(
            "{% for c in comments %}{% include 'comment.j2' %}{% endfor %}",
            "main.j2",
            Default::default(),
        )
        .unwrap();
        let comment = minijinja::machinery::parse(
            "{{ c.author }} {{ site }}",
            "comment.j2",
            Default::default(),
        )
        .unwrap();
        let mut templates = Parsed::new();
        templates.insert("main.j2", main);
        templates.insert("comment.j2", comment);
        let shapes = infer(&templates, "main.j2", &BTreeSet::new(), &|_, name| {
            Some(name.to_owned())
        });
        assert_eq!(
            shapes.shape("comments"),
            Some(list(mapping(&[("author", Shape::Text)])))
        );
        assert_eq!(shapes.shape("site"), Some(Shape::Text));
    }
}
