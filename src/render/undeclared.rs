//! The variables a parsed template reads, dotted for attribute access: what minijinja's
//! `Template::undeclared_variables(true)` returns, computed on an AST the caller already
//! holds (that method parses the source again each time). A port of minijinja 3.1.0's
//! `compiler/meta.rs` (`find_undeclared` with nested tracking; Apache-2.0, Armin Ronacher),
//! kept to its walk and its order; `undeclared_equals_minijinja` holds the two equal.

use minijinja::machinery::ast;
use std::collections::HashSet;
use std::fmt::Write;

struct Tracker<'a> {
    nested_out: HashSet<String>,
    assigned: Vec<HashSet<&'a str>>,
}

impl<'a> Tracker<'a> {
    fn is_assigned(&self, name: &str) -> bool {
        self.assigned.iter().any(|x| x.contains(name))
    }

    fn assign(&mut self, name: &'a str) {
        if let Some(last) = self.assigned.last_mut() {
            last.insert(name);
        }
    }

    fn assign_nested(&mut self, name: String) {
        self.nested_out.insert(name);
    }

    fn push(&mut self) {
        self.assigned.push(HashSet::new());
    }

    fn pop(&mut self) {
        self.assigned.pop();
    }
}

/// `Template::undeclared_variables(true)` of the template `stmt` was parsed from.
pub fn undeclared_nested(stmt: &ast::Stmt<'_>) -> HashSet<String> {
    let mut state = Tracker {
        nested_out: HashSet::new(),
        assigned: vec![HashSet::new()],
    };
    walk(stmt, &mut state);
    state.nested_out
}

fn visit_macro<'a>(m: &ast::Macro<'a>, state: &mut Tracker<'a>) {
    // minijinja assumes `caller` is there (it cannot know whether a call block calls it).
    state.assign("caller");
    m.args.iter().for_each(|arg| assign(arg, state));
    m.defaults.iter().for_each(|expr| visit_expr(expr, state));
    m.body.iter().for_each(|node| walk(node, state));
}

fn visit_expr_opt<'a>(expr: &Option<ast::Expr<'a>>, state: &mut Tracker<'a>) {
    if let Some(expr) = expr {
        visit_expr(expr, state);
    }
}

fn visit_callarg<'a>(callarg: &ast::CallArg<'a>, state: &mut Tracker<'a>) {
    match callarg {
        ast::CallArg::Pos(expr)
        | ast::CallArg::Kwarg(_, expr)
        | ast::CallArg::PosSplat(expr)
        | ast::CallArg::KwargSplat(expr) => visit_expr(expr, state),
    }
}

fn visit_expr<'a>(expr: &ast::Expr<'a>, state: &mut Tracker<'a>) {
    match expr {
        ast::Expr::Var(var) => {
            if !state.is_assigned(var.id) {
                state.assign_nested(var.id.to_string());
            }
        }
        ast::Expr::Const(_) => {}
        ast::Expr::UnaryOp(expr) => visit_expr(&expr.expr, state),
        ast::Expr::BinOp(expr) => {
            visit_expr(&expr.left, state);
            visit_expr(&expr.right, state);
        }
        ast::Expr::Compare(expr) => {
            visit_expr(&expr.expr, state);
            expr.ops.iter().for_each(|op| visit_expr(&op.expr, state));
        }
        ast::Expr::IfExpr(expr) => {
            visit_expr(&expr.test_expr, state);
            visit_expr(&expr.true_expr, state);
            visit_expr_opt(&expr.false_expr, state);
        }
        ast::Expr::Filter(expr) => {
            visit_expr_opt(&expr.expr, state);
            expr.args.iter().for_each(|x| visit_callarg(x, state));
        }
        ast::Expr::Test(expr) => {
            visit_expr(&expr.expr, state);
            expr.args.iter().for_each(|x| visit_callarg(x, state));
        }
        ast::Expr::GetAttr(expr) => {
            // A chain of attribute lookups that ends in an unassigned variable is read
            // as the dotted path.
            let mut attrs = vec![expr.name];
            let mut ptr = &expr.expr;
            loop {
                match ptr {
                    ast::Expr::Var(var) => {
                        if !state.is_assigned(var.id) {
                            let mut rv = var.id.to_string();
                            for attr in attrs.iter().rev() {
                                write!(rv, ".{attr}").ok();
                            }
                            state.assign_nested(rv);
                            return;
                        }
                        break;
                    }
                    ast::Expr::GetAttr(expr) => {
                        attrs.push(expr.name);
                        ptr = &expr.expr;
                    }
                    _ => break,
                }
            }
            visit_expr(&expr.expr, state)
        }
        ast::Expr::GetItem(expr) => {
            visit_expr(&expr.expr, state);
            visit_expr(&expr.subscript_expr, state);
        }
        ast::Expr::Slice(slice) => {
            visit_expr_opt(&slice.start, state);
            visit_expr_opt(&slice.stop, state);
            visit_expr_opt(&slice.step, state);
        }
        ast::Expr::Call(expr) => {
            visit_expr(&expr.expr, state);
            expr.args.iter().for_each(|x| visit_callarg(x, state));
        }
        ast::Expr::List(expr) => expr.items.iter().for_each(|x| visit_expr(x, state)),
        ast::Expr::Tuple(expr) => expr.items.iter().for_each(|x| visit_expr(x, state)),
        ast::Expr::Map(expr) => expr.keys.iter().zip(expr.values.iter()).for_each(|(k, v)| {
            visit_expr(k, state);
            visit_expr(v, state);
        }),
    }
}

fn assign<'a>(expr: &ast::Expr<'a>, state: &mut Tracker<'a>) {
    match expr {
        ast::Expr::Var(var) => state.assign(var.id),
        ast::Expr::List(list) => list.items.iter().for_each(|x| assign(x, state)),
        ast::Expr::Tuple(tuple) => tuple.items.iter().for_each(|x| assign(x, state)),
        _ => {}
    }
}

fn walk<'a>(node: &ast::Stmt<'a>, state: &mut Tracker<'a>) {
    match node {
        ast::Stmt::Template(stmt) => {
            state.assign("self");
            stmt.children.iter().for_each(|x| walk(x, state));
        }
        ast::Stmt::EmitExpr(expr) => visit_expr(&expr.expr, state),
        ast::Stmt::EmitRaw(_) => {}
        ast::Stmt::ForLoop(stmt) => {
            state.push();
            state.assign("loop");
            visit_expr(&stmt.iter, state);
            assign(&stmt.target, state);
            visit_expr_opt(&stmt.filter_expr, state);
            stmt.body.iter().for_each(|x| walk(x, state));
            state.pop();
            state.push();
            stmt.else_body.iter().for_each(|x| walk(x, state));
            state.pop();
        }
        ast::Stmt::IfCond(stmt) => {
            visit_expr(&stmt.expr, state);
            state.push();
            stmt.true_body.iter().for_each(|x| walk(x, state));
            state.pop();
            state.push();
            stmt.false_body.iter().for_each(|x| walk(x, state));
            state.pop();
        }
        ast::Stmt::WithBlock(stmt) => {
            state.push();
            for (target, expr) in &stmt.assignments {
                assign(target, state);
                visit_expr(expr, state);
            }
            stmt.body.iter().for_each(|x| walk(x, state));
            state.pop();
        }
        ast::Stmt::Set(stmt) => {
            assign(&stmt.target, state);
            visit_expr(&stmt.expr, state);
        }
        ast::Stmt::AutoEscape(stmt) => {
            state.push();
            stmt.body.iter().for_each(|x| walk(x, state));
            state.pop();
        }
        ast::Stmt::FilterBlock(stmt) => {
            state.push();
            stmt.body.iter().for_each(|x| walk(x, state));
            state.pop();
        }
        ast::Stmt::SetBlock(stmt) => {
            assign(&stmt.target, state);
            state.push();
            stmt.body.iter().for_each(|x| walk(x, state));
            state.pop();
        }
        ast::Stmt::Block(stmt) => {
            state.push();
            state.assign("super");
            stmt.body.iter().for_each(|x| walk(x, state));
            state.pop();
        }
        ast::Stmt::Extends(_) | ast::Stmt::Include(_) => {}
        ast::Stmt::Import(stmt) => assign(&stmt.name, state),
        ast::Stmt::FromImport(stmt) => stmt.names.iter().for_each(|(arg, alias)| {
            assign(alias.as_ref().unwrap_or(arg), state);
        }),
        ast::Stmt::Macro(stmt) => {
            state.assign(stmt.name);
            state.push();
            visit_macro(stmt, state);
            state.pop();
        }
        ast::Stmt::CallBlock(stmt) => {
            visit_expr(&stmt.call.expr, state);
            stmt.call.args.iter().for_each(|x| visit_callarg(x, state));
            state.push();
            visit_macro(&stmt.macro_decl, state);
            state.pop();
        }
        ast::Stmt::Continue(_) | ast::Stmt::Break(_) => {}
        ast::Stmt::Do(stmt) => {
            visit_expr(&stmt.call.expr, state);
            stmt.call.args.iter().for_each(|x| visit_callarg(x, state));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use minijinja::Environment;

    /// The port returns what minijinja's own method does, on every construct the walk
    /// distinguishes and on the repository's fixtures.
    #[test]
    fn undeclared_equals_minijinja() {
        let mut sources: Vec<String> = [
            "{{ a.b.c }}{{ d[e].f }}{{ g(h, k=i, *j, **l) }}{{ m | n(o) }}{{ p is q(r) }}",
            "{% for x in xs if x.ok %}{{ x.y }}{{ loop.index }}{% else %}{{ x }}{% endfor %}{{ x.z }}",
            "{% if c %}{% set s = 1 %}{{ s }}{% else %}{{ s.t }}{% endif %}{{ s }}",
            "{% with a = b.c, d = a %}{{ a.e }}{{ d }}{% endwith %}{{ a.f }}",
            "{% set (u, v) = w %}{{ u.x }}{% set blk %}{{ y }}{% endset %}{{ blk.z }}",
            "{% filter upper %}{{ f1 }}{% endfilter %}{% autoescape true %}{{ f2.g }}{% endautoescape %}",
            "{% macro m(a, b=c.d) %}{{ a }}{{ b }}{{ e.f }}{{ caller() }}{% endmacro %}{{ m(1) }}",
            "{% call(x) m(y) %}{{ x.a }}{{ z }}{% endcall %}",
            "{% import 'a' as mod %}{% from 'b' import p, q as r %}{{ mod.x }}{{ p }}{{ r.s }}{{ q }}",
            "{% block b %}{{ super() }}{{ self.x }}{{ t.u }}{% endblock %}{% extends 'x' %}{% include 'y' %}",
            "{% for i in r %}{% if i %}{% break %}{% else %}{% continue %}{% endif %}{% endfor %}{% do l.append(m.n) %}",
            "{{ -a.b }}{{ (a ~ b).c }}{{ [a.x, (b, c.y)] }}{{ {k.a: v.b} }}{{ s[1:e.f:g] }}{{ a if b.c else d.e }}{{ a < b.c < d }}",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures");
        for entry in walkdir::WalkDir::new(fixtures)
            .into_iter()
            .filter_map(|e| e.ok())
        {
            let path = entry.path();
            let name = path.to_string_lossy();
            if [".j2", ".jinja", ".jinja2"]
                .iter()
                .any(|ext| name.ends_with(ext))
            {
                if let Ok(text) = std::fs::read_to_string(path) {
                    sources.push(text);
                }
            }
        }
        assert!(sources.len() > 40, "{}", sources.len());
        let env = Environment::new();
        let mut compared = 0;
        for source in &sources {
            let Ok(stmt) = minijinja::machinery::parse(source, "t", Default::default()) else {
                continue;
            };
            let template = env.template_from_str(source).unwrap();
            assert_eq!(
                undeclared_nested(&stmt),
                template.undeclared_variables(true),
                "{source}"
            );
            compared += 1;
        }
        assert!(compared > 40, "{compared}");
    }
}
