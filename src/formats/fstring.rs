//! Python f-strings, read statically: an f-string is code, so it is never run. Every
//! replacement field is a site; the text around the fields is the stable content; what a
//! field reads is classified from its expression: a call of a clock or an id generator
//! is volatile at its cadence, a name is what the field classes make of it.
//!
//! `text` is the f-string's content as the host decoded it (quotes and prefix removed,
//! escapes of the literal parts undone), so offsets are in that text and the host map
//! moves them to the host file.

use super::SyntaxError;
use std::ops::Range;

/// Why a finding in an f-string has no fix: its help and the fix report say so.
pub const NO_FIX: &str = "an f-string is Python code: prefixlint reads it without running it and does not rewrite it; move the field after the fixed text by hand";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FString {
    pub pieces: Vec<Piece>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Literal text, `{{`/`}}` undone; `span` is where it is written.
    Text {
        span: Range<usize>,
        text: String,
    },
    Field(Field),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The whole field, braces included.
    pub span: Range<usize>,
    /// The expression as written, trimmed.
    pub expression: String,
    /// `{x=}`: the expression's text is printed before its value.
    pub debug: bool,
    pub conversion: Option<char>,
    /// The format spec: text, and fields of its own.
    pub spec: Vec<SpecPart>,
    pub reads: Reads,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpecPart {
    Text(String),
    Field(Field),
}

/// What a field's expression reads, as far as reading it without running it tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reads {
    /// A variable path (`name`, `self.memory`, `user["name"]`, `items[0]`): its value is
    /// the sample's value of that path. `path` is dotted (`user.name`); `accessors` read
    /// on from the root.
    Variable {
        root: String,
        accessors: Vec<Access>,
    },
    /// A call of a clock or an id generator: a new value at `cadence`.
    Clock(ClockCall),
    /// Any other expression (a call of the application's, arithmetic, a comprehension):
    /// its value is unknown; it stands in as a variable named after it (`name`).
    Opaque { name: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    Attr(String),
    Key(String),
    Index(i64),
}

/// A volatile call, and what it prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClockCall {
    /// `datetime.now()`, `datetime.utcnow()`, `datetime.today()`: a `datetime`, shown
    /// with `strftime(format)` when the expression or the spec gives one.
    DateTime { strftime: Option<String> },
    /// `date.today()` (and `datetime.now().date()`): a `date`.
    Date { strftime: Option<String> },
    /// `time.time()`: seconds since the epoch, a float.
    EpochSeconds,
    /// `time.time_ns()`, `time.monotonic_ns()`.
    EpochNanos,
    /// `time.strftime(format)`, `time.ctime()`, `time.asctime()`.
    TimeString { strftime: String },
    /// `uuid.uuid4()`, `uuid4()`, `uuid.uuid1()`, `secrets.token_hex()`.
    Id,
}

impl ClockCall {
    /// Whether the value changes once a day (a date without time of day) rather than on
    /// every request.
    pub fn daily(&self) -> bool {
        let date_only = |format: &Option<String>| format.as_deref().is_some_and(date_only_format);
        match self {
            ClockCall::Date { strftime } => strftime.is_none() || date_only(strftime),
            ClockCall::DateTime { strftime } => date_only(strftime),
            ClockCall::TimeString { strftime } => date_only_format(strftime),
            _ => false,
        }
    }
}

/// Parses an f-string's content.
pub fn parse(text: &str) -> Result<FString, SyntaxError> {
    let mut pieces = Vec::new();
    let bytes = text.as_bytes();
    let mut run: Option<(usize, String)> = None;
    let mut at = 0;
    while at < text.len() {
        let Some(found) = memchr::memchr2(b'{', b'}', &bytes[at..]) else {
            run.get_or_insert((at, String::new()))
                .1
                .push_str(&text[at..]);
            break;
        };
        let brace = at + found;
        run.get_or_insert((at, String::new()))
            .1
            .push_str(&text[at..brace]);
        if bytes.get(brace + 1) == Some(&bytes[brace]) {
            run.get_or_insert((brace, String::new()))
                .1
                .push(bytes[brace] as char);
            at = brace + 2;
            continue;
        }
        if bytes[brace] == b'}' {
            return Err(SyntaxError::new(
                brace,
                "f-string: single '}' is not allowed",
            ));
        }
        if let Some((start, text)) = run.take().filter(|(_, t)| !t.is_empty()) {
            pieces.push(Piece::Text {
                span: start..brace,
                text,
            });
        }
        let (field, end) = parse_field(text, brace, 2)?;
        pieces.push(Piece::Field(field));
        at = end;
    }
    if let Some((start, text)) = run.filter(|(_, t)| !t.is_empty()) {
        pieces.push(Piece::Text {
            span: start..bytes.len(),
            text,
        });
    }
    Ok(FString { pieces })
}

/// Expressions nested deeper than this (brackets, strings in fields) are refused: a
/// bound, not Python's (which is the parser's stack).
const MAX_NESTING: usize = 200;

fn parse_field(text: &str, open: usize, depth: u8) -> Result<(Field, usize), SyntaxError> {
    if depth == 0 {
        return Err(SyntaxError::new(
            open,
            "f-string: expressions nested too deeply",
        ));
    }
    let bytes = text.as_bytes();
    let expr_start = open + 1;
    let mut at = expr_start;
    let mut stack: Vec<u8> = Vec::new();
    // Where the expression ends, and what ends it.
    let end = loop {
        let Some(&c) = bytes.get(at) else {
            return Err(SyntaxError::new(open, "f-string: expecting '}'"));
        };
        match c {
            b'\'' | b'"' => {
                at = skip_string(text, at)?;
                continue;
            }
            b'(' | b'[' | b'{' => {
                if stack.len() >= MAX_NESTING {
                    return Err(SyntaxError::new(at, "f-string: too many nested brackets"));
                }
                stack.push(c);
            }
            b')' | b']' | b'}' if !stack.is_empty() => {
                let want = match c {
                    b')' => b'(',
                    b']' => b'[',
                    _ => b'{',
                };
                if stack.pop() != Some(want) {
                    return Err(SyntaxError::new(
                        at,
                        format!("f-string: unmatched '{}'", c as char),
                    ));
                }
            }
            b')' | b']' => {
                return Err(SyntaxError::new(
                    at,
                    format!("f-string: unmatched '{}'", c as char),
                ))
            }
            b'}' => break at,
            b'!' if stack.is_empty() && bytes.get(at + 1) != Some(&b'=') => break at,
            b':' if stack.is_empty() => break at,
            b'=' if stack.is_empty()
                && !matches!(bytes.get(at + 1), Some(b'='))
                && !matches!(
                    bytes.get(at.wrapping_sub(1)),
                    Some(b'=' | b'!' | b'<' | b'>')
                )
                && matches!(
                    text[at + 1..].trim_start().as_bytes().first(),
                    Some(b'}' | b'!' | b':')
                ) =>
            {
                break at
            }
            b'#' => {
                return Err(SyntaxError::new(
                    at,
                    "f-string expression part cannot include '#'",
                ))
            }
            _ => {}
        }
        at += 1;
    };
    let expression = text[expr_start..end].trim();
    if expression.is_empty() {
        return Err(SyntaxError::new(
            open,
            "f-string: empty expression not allowed",
        ));
    }
    let mut at = end;
    let mut debug = false;
    if bytes[at] == b'=' {
        debug = true;
        at += 1;
        while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
            at += 1;
        }
    }
    let mut conversion = None;
    if bytes.get(at) == Some(&b'!') {
        let c = text[at + 1..].chars().next();
        match c {
            Some(c @ ('r' | 's' | 'a')) => conversion = Some(c),
            _ => {
                return Err(SyntaxError::new(
                    at + 1,
                    "f-string: invalid conversion character: expected 's', 'r', or 'a'",
                ))
            }
        }
        at += 2;
    }
    let mut spec = Vec::new();
    if bytes.get(at) == Some(&b':') {
        at += 1;
        let mut literal = String::new();
        loop {
            let Some(&c) = bytes.get(at) else {
                return Err(SyntaxError::new(open, "f-string: expecting '}'"));
            };
            match c {
                b'{' => {
                    if !literal.is_empty() {
                        spec.push(SpecPart::Text(std::mem::take(&mut literal)));
                    }
                    let (field, next) = parse_field(text, at, depth - 1)?;
                    spec.push(SpecPart::Field(field));
                    at = next;
                    continue;
                }
                b'}' => break,
                _ => {
                    let ch = text[at..].chars().next().unwrap_or_default();
                    literal.push(ch);
                    at += ch.len_utf8();
                    continue;
                }
            }
        }
        if !literal.is_empty() {
            spec.push(SpecPart::Text(literal));
        }
    }
    if bytes.get(at) != Some(&b'}') {
        return Err(SyntaxError::new(open, "f-string: expecting '}'"));
    }
    let spec_text: Option<String> = match spec.as_slice() {
        [SpecPart::Text(text)] => Some(text.clone()),
        _ => None,
    };
    let reads = classify(expression, spec_text.as_deref());
    Ok((
        Field {
            span: open..at + 1,
            expression: expression.to_owned(),
            debug,
            conversion,
            spec,
            reads,
        },
        at + 1,
    ))
}

/// The offset after the Python string literal that starts at `at` (single or triple
/// quoted, backslash escapes skipped).
fn skip_string(text: &str, at: usize) -> Result<usize, SyntaxError> {
    let bytes = text.as_bytes();
    let quote = bytes[at];
    let triple = bytes.get(at + 1) == Some(&quote) && bytes.get(at + 2) == Some(&quote);
    let mut i = if triple { at + 3 } else { at + 1 };
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            c if c == quote => {
                if !triple {
                    return Ok(i + 1);
                }
                if bytes.get(i + 1) == Some(&quote) && bytes.get(i + 2) == Some(&quote) {
                    return Ok(i + 3);
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    Err(SyntaxError::new(at, "f-string: unterminated string"))
}

/// What an expression reads. `spec` is the field's format spec when it is plain text (a
/// `datetime`'s spec is a `strftime` format).
pub fn classify(expression: &str, spec: Option<&str>) -> Reads {
    if let Some(call) = clock_call(expression, spec) {
        return Reads::Clock(call);
    }
    if let Some((root, accessors)) = variable_path(expression) {
        return Reads::Variable { root, accessors };
    }
    Reads::Opaque {
        name: opaque_name(expression),
    }
}

/// A call of a clock or an id generator, with the `strftime` format that prints it.
fn clock_call(expression: &str, spec: Option<&str>) -> Option<ClockCall> {
    let compact: String = expression.chars().filter(|c| !c.is_whitespace()).collect();
    let strftime = strftime_argument(expression)
        .or_else(|| spec.filter(|s| s.contains('%')).map(str::to_owned));
    let called = |names: &[&str]| {
        names.iter().any(|name| {
            compact.match_indices(name).any(|(i, _)| {
                // A whole name: not the tail of a longer identifier.
                i == 0
                    || !compact[..i]
                        .chars()
                        .next_back()
                        .is_some_and(|c| c.is_alphanumeric() || c == '_')
            })
        })
    };
    if called(&[
        "date.today(",
        "datetime.now().date(",
        "datetime.today().date(",
    ]) {
        return Some(ClockCall::Date { strftime });
    }
    if called(&[
        "datetime.now(",
        "datetime.utcnow(",
        "datetime.today(",
        "pendulum.now(",
        "arrow.now(",
        "arrow.utcnow(",
        "timezone.now(",
    ]) {
        return Some(ClockCall::DateTime { strftime });
    }
    if called(&[
        "time.time_ns(",
        "time.monotonic_ns(",
        "time.perf_counter_ns(",
    ]) {
        return Some(ClockCall::EpochNanos);
    }
    if called(&["time.time(", "time.monotonic(", "time.perf_counter("]) {
        return Some(ClockCall::EpochSeconds);
    }
    if called(&["time.strftime("]) {
        return Some(ClockCall::TimeString {
            strftime: strftime.unwrap_or_else(|| "%a %b %d %H:%M:%S %Y".to_owned()),
        });
    }
    if called(&["time.ctime(", "time.asctime("]) {
        return Some(ClockCall::TimeString {
            strftime: "%a %b %e %H:%M:%S %Y".to_owned(),
        });
    }
    if called(&[
        "uuid.uuid4(",
        "uuid.uuid1(",
        "uuid4(",
        "uuid1(",
        "secrets.token_hex(",
        "secrets.token_urlsafe(",
        "os.urandom(",
        "random.random(",
        "random.randint(",
    ]) {
        return Some(ClockCall::Id);
    }
    // A bare `now()` or `today()`: a helper of the application's that reads the clock.
    if called(&["now(", "today("]) && compact.ends_with(')') || compact.contains(".strftime(") {
        return Some(ClockCall::DateTime { strftime });
    }
    None
}

/// The format of a `.strftime("...")` or `time.strftime("...")` call in the expression.
fn strftime_argument(expression: &str) -> Option<String> {
    let at = expression.find("strftime(")? + "strftime(".len();
    let rest = expression[at..].trim_start();
    let quote = rest.chars().next().filter(|c| matches!(c, '"' | '\''))?;
    let end = rest[1..].find(quote)?;
    Some(rest[1..1 + end].to_owned())
}

/// `name`, `a.b.c`, `a["k"]`, `a['k']`, `a[0]`: a variable path, else `None`.
fn variable_path(expression: &str) -> Option<(String, Vec<Access>)> {
    let ident_len = |s: &str| {
        let mut chars = s.char_indices();
        match chars.next() {
            Some((_, c)) if c.is_alphabetic() || c == '_' => {}
            _ => return 0,
        }
        chars
            .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
            .map_or(s.len(), |(i, _)| i)
    };
    let expression = expression.trim();
    let root_len = ident_len(expression);
    if root_len == 0 {
        return None;
    }
    let root = &expression[..root_len];
    if matches!(root, "None" | "True" | "False" | "lambda" | "not" | "await") {
        return None;
    }
    let mut accessors = Vec::new();
    let mut rest = &expression[root_len..];
    while !rest.is_empty() {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix('.') {
            let after = after.trim_start();
            let len = ident_len(after);
            if len == 0 {
                return None;
            }
            accessors.push(Access::Attr(after[..len].to_owned()));
            rest = &after[len..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let close = after.find(']')?;
            let key = after[..close].trim();
            let access = if let Some(quoted) = key
                .strip_prefix('"')
                .and_then(|k| k.strip_suffix('"'))
                .or_else(|| key.strip_prefix('\'').and_then(|k| k.strip_suffix('\'')))
            {
                if quoted.contains(['"', '\'', '\\']) {
                    return None;
                }
                Access::Key(quoted.to_owned())
            } else {
                Access::Index(key.parse().ok()?)
            };
            accessors.push(access);
            rest = &after[close + 1..];
        } else {
            return None;
        }
    }
    Some((root.to_owned(), accessors))
}

/// The name an opaque expression stands in under: the last identifier it calls or reads
/// before its first parenthesis (`get_memories(user)` → `get_memories`,
/// `"\n".join(docs)` → `join_docs`), so the field classes can read it.
fn opaque_name(expression: &str) -> String {
    let words: Vec<&str> = expression
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty() && !w.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .filter(|w| {
            !matches!(
                *w,
                "for" | "in" | "if" | "else" | "and" | "or" | "not" | "str" | "len" | "self"
            )
        })
        .collect();
    let name = match words.as_slice() {
        [] => "value".to_owned(),
        [one] => (*one).to_owned(),
        [first, second, ..] if *first == "join" => format!("{first}_{second}"),
        [first, ..] => (*first).to_owned(),
    };
    name
}

/// True when a strftime format prints no time of day (`%d %B %Y`, `%Y-%m-%d`, `%A`).
pub fn date_only_format(format: &str) -> bool {
    const TIME_OF_DAY: &[char] = &[
        'H', 'I', 'M', 'S', 'p', 'P', 'f', 'T', 'X', 'c', 's', 'R', 'r', 'k', 'l',
    ];
    let mut chars = format.chars();
    let mut any_field = false;
    while let Some(c) = chars.next() {
        if c != '%' {
            continue;
        }
        let field = chars
            .by_ref()
            .find(|c| !matches!(c, '-' | '_' | '0'..='9' | '.' | '#' | '^' | ':'));
        match field {
            Some('%') => {}
            Some(letter) if TIME_OF_DAY.contains(&letter) => return false,
            Some(_) => any_field = true,
            None => {}
        }
    }
    any_field
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(text: &str) -> Vec<Field> {
        parse(text)
            .unwrap()
            .pieces
            .into_iter()
            .filter_map(|p| match p {
                Piece::Field(f) => Some(f),
                Piece::Text { .. } => None,
            })
            .collect()
    }

    #[test]
    fn clocks_names_and_opaque_calls() {
        let f = fields(
            "Today is {datetime.now().strftime('%Y-%m-%d')}. {self.memory} {user['name']!r:>10} {get_docs(q)} {time.time():.0f} {datetime.now():%H:%M}",
        );
        assert_eq!(
            f[0].reads,
            Reads::Clock(ClockCall::DateTime {
                strftime: Some("%Y-%m-%d".into())
            })
        );
        assert!(matches!(&f[0].reads, Reads::Clock(c) if c.daily()));
        assert_eq!(
            f[1].reads,
            Reads::Variable {
                root: "self".into(),
                accessors: vec![Access::Attr("memory".into())]
            }
        );
        assert_eq!(f[2].conversion, Some('r'));
        assert_eq!(
            f[3].reads,
            Reads::Opaque {
                name: "get_docs".into()
            }
        );
        assert_eq!(f[4].reads, Reads::Clock(ClockCall::EpochSeconds));
        assert!(matches!(&f[5].reads, Reads::Clock(c) if !c.daily()));
    }

    #[test]
    fn strings_brackets_and_operators_inside_fields() {
        let f = fields("{d['}'] } {a != b} {x == y} {f'{z}'} {x=} {'a:b'}");
        assert_eq!(f[0].expression, "d['}']");
        assert_eq!(f[1].expression, "a != b");
        assert_eq!(f[2].expression, "x == y");
        assert!(f[4].debug);
        assert_eq!(f[5].expression, "'a:b'");
    }

    #[test]
    fn errors() {
        for (text, offset) in [
            ("a } b", 2),
            ("{x", 0),
            ("{}", 0),
            ("{x!q}", 3),
            ("{(x}", 3),
        ] {
            assert_eq!(parse(text).unwrap_err().offset, offset, "{text}");
        }
    }
}
