//! Python's mutating list and dict methods, which Jinja2 allows and minijinja's immutable
//! values do not have: `{% set _ = items.append(x) %}` in a loop, then `{{ items | join }}`.
//!
//! A template that calls one of them ([`mutates`]) gets its list literals (`[]`, `[a, b]`)
//! and empty dict literals (`{}`) rewritten, at the same byte offsets, into calls of a
//! constructor global that builds a [`PyList`] or [`PyDict`]: objects with interior
//! mutability that read like minijinja's own sequences and maps. Each render also gets
//! its context's lists and dicts as fresh mutable copies ([`mutable_copy`]), so what one
//! render appends never shows in the next. Growth is bounded ([`MAX_ITEMS`]), on top of
//! the sandbox's fuel and output limits.

use minijinja::machinery::{tokenize, Token};
use minijinja::syntax::SyntaxConfig;
use minijinja::value::{Enumerator, Kwargs, Object, ObjectRepr, Rest, Value, ValueKind};
use minijinja::{Environment, Error, ErrorKind, State};
use std::borrow::Cow;
use std::sync::{Arc, Mutex, MutexGuard};

/// The most items one list or dict may grow to.
pub const MAX_ITEMS: usize = 100_000;

/// The methods that change a list or a dict in place.
const MUTATING: &[&str] = &[
    "append",
    "extend",
    "insert",
    "pop",
    "remove",
    "update",
    "setdefault",
    "clear",
];

/// Candidate names of the constructor globals, one letter each so a rewrite keeps the
/// source's length (` [` becomes `L(`); the first one the template does not use is taken.
pub const LIST_NAMES: &[&str] = &["L", "Q", "Z"];
pub const DICT_NAMES: &[&str] = &["D", "K", "W"];

/// Registers the constructor globals.
pub fn install(env: &mut Environment<'static>) {
    for name in LIST_NAMES {
        env.add_function(*name, |items: Rest<Value>| {
            Value::from_object(PyList::new(items.0))
        });
    }
    for name in DICT_NAMES {
        env.add_function(*name, || Value::from_object(PyDict::new(Vec::new())));
    }
}

/// Whether `name` is one of the constructor globals (not a global of the application's).
pub fn is_constructor(name: &str) -> bool {
    LIST_NAMES.contains(&name) || DICT_NAMES.contains(&name)
}

/// Whether the source calls a mutating method (`.append(`, `.update(`, …).
pub fn mutates(source: &str, syntax: &SyntaxConfig) -> bool {
    if !MUTATING.iter().any(|m| source.contains(m)) {
        return false;
    }
    let mut previous: [Option<Token<'_>>; 2] = [None, None];
    for item in tokenize(source, false, syntax.clone()) {
        let Ok((token, _)) = item else {
            return false;
        };
        if matches!(token, Token::ParenOpen) {
            if let (Some(Token::Dot), Some(Token::Ident(name))) = (&previous[0], &previous[1]) {
                if MUTATING.contains(name) {
                    return true;
                }
            }
        }
        previous = [previous[1].take(), Some(token)];
    }
    false
}

/// Whether the source uses `name` as an identifier (a variable, a macro, an attribute).
pub fn names_identifier(source: &str, syntax: &SyntaxConfig, name: &str) -> bool {
    source.contains(name)
        && tokenize(source, false, syntax.clone())
            .any(|item| matches!(item, Ok((Token::Ident(found), _)) if found == name))
}

/// Rewrites list literals into `L(…)` and empty dict literals into `D()` calls, where a
/// blank before the literal makes room for the name; other literals are left as they are
/// (they still render, immutable). The source keeps its length byte for byte.
pub fn rewrite_literals<'s>(source: &'s str, syntax: &SyntaxConfig) -> Cow<'s, str> {
    let mut idents = std::collections::BTreeSet::new();
    let mut tokens = Vec::new();
    for item in tokenize(source, false, syntax.clone()) {
        let Ok((token, span)) = item else {
            return Cow::Borrowed(source);
        };
        if let Token::Ident(name) = token {
            idents.insert(name.to_owned());
        }
        tokens.push((token, span.start_offset as usize, span.end_offset as usize));
    }
    let free = |names: &[&'static str]| names.iter().find(|n| !idents.contains(**n)).copied();
    let (Some(list), Some(dict)) = (free(LIST_NAMES), free(DICT_NAMES)) else {
        return Cow::Borrowed(source);
    };
    let bytes = source.as_bytes();
    let room = |at: usize| at > 0 && bytes[at - 1] == b' ';
    let mut edits: Vec<(usize, u8)> = Vec::new();
    // For each open bracket: the offset of its rewritten form's name, if rewritten.
    let mut open: Vec<Option<usize>> = Vec::new();
    for (i, (token, start, _)) in tokens.iter().enumerate() {
        let previous = i.checked_sub(1).map(|p| &tokens[p].0);
        match token {
            Token::BracketOpen => {
                let rewrite = starts_literal(previous) && room(*start);
                if rewrite {
                    edits.push((start - 1, list.as_bytes()[0]));
                    edits.push((*start, b'('));
                }
                open.push(rewrite.then_some(*start));
            }
            Token::BracketClose => {
                if let Some(Some(_)) = open.pop() {
                    edits.push((*start, b')'));
                }
            }
            Token::BraceOpen
                if starts_literal(previous)
                    && room(*start)
                    && matches!(tokens.get(i + 1), Some((Token::BraceClose, _, _))) =>
            {
                let close = tokens[i + 1].1;
                edits.push((start - 1, dict.as_bytes()[0]));
                edits.push((*start, b'('));
                edits.push((close, b')'));
            }
            _ => {}
        }
    }
    if edits.is_empty() {
        return Cow::Borrowed(source);
    }
    let mut out = bytes.to_vec();
    for (at, byte) in edits {
        out[at] = byte;
    }
    // Only ASCII replaced ASCII.
    Cow::Owned(String::from_utf8(out).unwrap_or_else(|_| source.to_owned()))
}

/// Whether a `[` or `{` after this token starts a literal, not a subscript.
fn starts_literal(previous: Option<&Token<'_>>) -> bool {
    match previous {
        None => false,
        Some(Token::Ident(word)) => matches!(
            *word,
            "in" | "and" | "or" | "not" | "if" | "else" | "is" | "return"
        ),
        Some(
            Token::Assign
            | Token::ParenOpen
            | Token::Comma
            | Token::Colon
            | Token::BracketOpen
            | Token::VariableStart
            | Token::Plus
            | Token::Tilde
            | Token::Eq
            | Token::Ne,
        ) => true,
        _ => false,
    }
}

/// A fresh copy of a context value in which every list and dict is mutable, so a render's
/// `append` to a context list changes only that render's copy.
pub fn mutable_copy(value: &Value, depth: usize) -> Value {
    if depth > 64 {
        return value.clone();
    }
    let plain_seq = value.downcast_object_ref::<Vec<Value>>().is_some();
    let plain_map = value
        .downcast_object_ref::<indexmap::IndexMap<Value, Value>>()
        .is_some();
    match value.kind() {
        ValueKind::Seq if plain_seq && !value.is_tuple() => {
            let items = value
                .try_iter()
                .map(|items| items.map(|v| mutable_copy(&v, depth + 1)).collect())
                .unwrap_or_default();
            Value::from_object(PyList::new(items))
        }
        ValueKind::Map if plain_map => {
            let entries = value
                .try_iter()
                .map(|keys| {
                    keys.map(|key| {
                        let item = value.get_item(&key).unwrap_or_default();
                        (key, mutable_copy(&item, depth + 1))
                    })
                    .collect()
                })
                .unwrap_or_default();
            Value::from_object(PyDict::new(entries))
        }
        _ => value.clone(),
    }
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

fn too_many() -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!("a list or dict grew past {MAX_ITEMS} items (a sandbox limit)"),
    )
}

fn arity(method: &str, args: &[Value], min: usize, max: usize) -> Result<(), Error> {
    if args.len() < min || args.len() > max {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "{method}() takes {min} to {max} arguments, got {}",
                args.len()
            ),
        ));
    }
    Ok(())
}

/// A Python list: a sequence whose `append`, `extend`, `insert`, `pop`, `remove` and
/// `clear` change it in place.
#[derive(Debug, Default)]
pub struct PyList {
    items: Mutex<Vec<Value>>,
}

impl PyList {
    pub fn new(items: Vec<Value>) -> PyList {
        PyList {
            items: Mutex::new(items),
        }
    }

    fn snapshot(&self) -> Vec<Value> {
        locked(&self.items).clone()
    }
}

impl Object for PyList {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Seq
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let items = locked(&self.items);
        let index = key.as_i64()?;
        let at = if index < 0 {
            items.len() as i64 + index
        } else {
            index
        };
        items.get(usize::try_from(at).ok()?).cloned()
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(self.snapshot())
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(locked(&self.items).len())
    }

    fn call_method(
        self: &Arc<Self>,
        _state: &mut State<'_, '_>,
        method: &str,
        args: &[Value],
    ) -> Result<Value, Error> {
        let mut items = locked(&self.items);
        match method {
            "append" => {
                arity(method, args, 1, 1)?;
                if items.len() >= MAX_ITEMS {
                    return Err(too_many());
                }
                items.push(args[0].clone());
                Ok(Value::from(()))
            }
            "extend" => {
                arity(method, args, 1, 1)?;
                // `items.extend(items)` reads the list it extends: take the items first.
                let added: Vec<Value> = if args[0]
                    .downcast_object_ref::<PyList>()
                    .is_some_and(|other| std::ptr::eq(other, &**self))
                {
                    items.clone()
                } else {
                    drop(items);
                    let added = args[0].try_iter()?.collect();
                    items = locked(&self.items);
                    added
                };
                if items.len() + added.len() > MAX_ITEMS {
                    return Err(too_many());
                }
                items.extend(added);
                Ok(Value::from(()))
            }
            "insert" => {
                arity(method, args, 2, 2)?;
                if items.len() >= MAX_ITEMS {
                    return Err(too_many());
                }
                let len = items.len() as i64;
                let index = args[0].as_i64().ok_or_else(|| {
                    Error::new(
                        ErrorKind::InvalidOperation,
                        "insert() needs an integer index",
                    )
                })?;
                // Python clamps the index to the list.
                let at = if index < 0 {
                    (len + index).max(0)
                } else {
                    index.min(len)
                };
                items.insert(at as usize, args[1].clone());
                Ok(Value::from(()))
            }
            "pop" => {
                arity(method, args, 0, 1)?;
                let len = items.len() as i64;
                let index = match args.first() {
                    Some(index) => index.as_i64().ok_or_else(|| {
                        Error::new(ErrorKind::InvalidOperation, "pop() needs an integer index")
                    })?,
                    None => -1,
                };
                let at = if index < 0 { len + index } else { index };
                if items.is_empty() || at < 0 || at >= len {
                    let what = if items.is_empty() {
                        "pop from empty list"
                    } else {
                        "pop index out of range"
                    };
                    return Err(Error::new(ErrorKind::InvalidOperation, what));
                }
                Ok(items.remove(at as usize))
            }
            "remove" => {
                arity(method, args, 1, 1)?;
                match items.iter().position(|item| *item == args[0]) {
                    Some(at) => {
                        items.remove(at);
                        Ok(Value::from(()))
                    }
                    None => Err(Error::new(
                        ErrorKind::InvalidOperation,
                        "list.remove(x): x not in list",
                    )),
                }
            }
            "clear" => {
                arity(method, args, 0, 0)?;
                items.clear();
                Ok(Value::from(()))
            }
            // Everything else (`index`, `count`, …) is answered as for any sequence.
            _ => Err(Error::from(ErrorKind::UnknownMethod)),
        }
    }
}

/// A Python dict, in insertion order: a map whose `update`, `setdefault`, `pop` and
/// `clear` change it in place.
#[derive(Debug, Default)]
pub struct PyDict {
    entries: Mutex<Vec<(Value, Value)>>,
}

impl PyDict {
    pub fn new(entries: Vec<(Value, Value)>) -> PyDict {
        PyDict {
            entries: Mutex::new(entries),
        }
    }
}

fn set_entry(entries: &mut Vec<(Value, Value)>, key: Value, value: Value) -> Result<(), Error> {
    match entries.iter_mut().find(|(k, _)| *k == key) {
        Some(entry) => entry.1 = value,
        None => {
            if entries.len() >= MAX_ITEMS {
                return Err(too_many());
            }
            entries.push((key, value));
        }
    }
    Ok(())
}

impl Object for PyDict {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        locked(&self.entries)
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(
            locked(&self.entries)
                .iter()
                .map(|(k, _)| k.clone())
                .collect(),
        )
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(locked(&self.entries).len())
    }

    fn call_method(
        self: &Arc<Self>,
        _state: &mut State<'_, '_>,
        method: &str,
        args: &[Value],
    ) -> Result<Value, Error> {
        match method {
            "update" => {
                // `d.update(other)`, `d.update(k=v)` or both; read `other` before locking.
                let (positional, kwargs): (Vec<&Value>, Vec<&Value>) =
                    args.iter().partition(|a| !a.is_kwargs());
                arity(method, &args[..positional.len()], 0, 1)?;
                let mut added = Vec::new();
                if let Some(other) = positional.first() {
                    if other.kind() == ValueKind::Map {
                        for key in other.try_iter()? {
                            let value = other.get_item(&key)?;
                            added.push((key, value));
                        }
                    } else {
                        for pair in other.try_iter()? {
                            let key = pair.get_item(&Value::from(0))?;
                            let value = pair.get_item(&Value::from(1))?;
                            added.push((key, value));
                        }
                    }
                }
                for kwargs in kwargs {
                    let kwargs: Kwargs = Kwargs::try_from(kwargs.clone())?;
                    for key in kwargs.args() {
                        added.push((Value::from(key), kwargs.peek::<Value>(key)?));
                    }
                }
                let mut entries = locked(&self.entries);
                for (key, value) in added {
                    set_entry(&mut entries, key, value)?;
                }
                Ok(Value::from(()))
            }
            "setdefault" => {
                arity(method, args, 1, 2)?;
                let mut entries = locked(&self.entries);
                if let Some((_, value)) = entries.iter().find(|(k, _)| *k == args[0]) {
                    return Ok(value.clone());
                }
                let value = args.get(1).cloned().unwrap_or(Value::from(()));
                set_entry(&mut entries, args[0].clone(), value.clone())?;
                Ok(value)
            }
            "pop" => {
                arity(method, args, 1, 2)?;
                let mut entries = locked(&self.entries);
                match entries.iter().position(|(k, _)| *k == args[0]) {
                    Some(at) => Ok(entries.remove(at).1),
                    None => args.get(1).cloned().ok_or_else(|| {
                        Error::new(
                            ErrorKind::InvalidOperation,
                            format!(
                                "dict.pop: key {} not found",
                                super::python::py_repr(&args[0])
                            ),
                        )
                    }),
                }
            }
            "clear" => {
                arity(method, args, 0, 0)?;
                locked(&self.entries).clear();
                Ok(Value::from(()))
            }
            // `items`, `keys`, `values`, `get`, … are answered as for any map.
            _ => Err(Error::from(ErrorKind::UnknownMethod)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(source: &str) -> String {
        rewrite_literals(source, &SyntaxConfig::default()).into_owned()
    }

    #[test]
    fn literals_become_constructor_calls_of_the_same_length() {
        assert_eq!(
            rewrite("{% set items = [] %}{% set d = {} %}{{ x[0] }}"),
            "{% set items =L() %}{% set d =D() %}{{ x[0] }}"
        );
        assert_eq!(
            rewrite("{% set a = [1, [2]] %}{{ a }}"),
            "{% set a =L(1,L(2)) %}{{ a }}"
        );
        // A template that uses `L` as a name gets the next free letter.
        assert_eq!(rewrite("{% set L = [] %}"), "{% set L =Q() %}");
        // No blank before the literal: left alone.
        assert_eq!(rewrite("{% set a=[] %}"), "{% set a=[] %}");
    }

    #[test]
    fn mutation_is_seen_by_later_reads() {
        let mut env = Environment::new();
        install(&mut env);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        let source = "{% set items = [] %}{% for x in 'abc' %}{% set _ = items.append(x) %}{% endfor %}\
            {% set _ = items.insert(0, 'z') %}{% set _ = items.extend(['y']) %}{{ items.pop() }}|\
            {% set _ = items.remove('a') %}{{ items | join(',') }}|{{ items | length }}|{{ items[-1] }}|\
            {% set d = {} %}{% set _ = d.update({'k': 1}, j=2) %}{{ d.setdefault('k', 9) }}{{ d.setdefault('n', 3) }}\
            {{ d.pop('j') }}|{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{{ items.count('b') }}";
        let source = rewrite(source);
        let out = env.render_str(&source, ()).unwrap();
        assert_eq!(out, "y|z,b,c|3|c|132|k=1;n=3;|1");
    }

    #[test]
    fn growth_is_bounded() {
        let mut env = Environment::new();
        install(&mut env);
        let source = rewrite(
            "{% set items = [] %}{% for i in range(1000) %}{% for j in range(200) %}{% set _ = items.append(j) %}{% endfor %}{% endfor %}",
        );
        let err = env.render_str(&source, ()).unwrap_err();
        assert!(err.to_string().contains("grew past"), "{err}");
    }

    #[test]
    fn only_templates_that_mutate_are_rewritten() {
        let syntax = SyntaxConfig::default();
        assert!(mutates("{% set _ = xs.append(1) %}", &syntax));
        assert!(mutates("{{ d.update(a=1) }}", &syntax));
        assert!(!mutates("{{ items | join(', ') }} append(", &syntax));
        assert!(!mutates("{{ append(1) }}", &syntax));
    }
}
