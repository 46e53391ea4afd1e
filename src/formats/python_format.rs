//! Python `{var}` templates as `str.format` (and LangChain's default `f-string` format,
//! which is `string.Formatter`) reads them: literal text with `{{`/`}}` escapes and
//! replacement fields `{name.attr[key]!r:spec}`, a spec holding fields of its own one
//! level deep.
//!
//! The parser follows CPython 3.11's `MarkupIterator` and `parse_field`
//! (`Objects/stringlib/unicode_format.h`) decision for decision, so a text is a valid
//! template exactly when `str.format` accepts its markup; it adds what a template
//! rendered with keyword arguments needs (no positional fields) and every error's place.

use super::SyntaxError;
use std::ops::Range;

/// A parsed `{var}` template: text runs and fields, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub pieces: Vec<Piece>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Literal text, its escapes undone; `span` is where it is written (escapes included).
    Text {
        span: Range<usize>,
        text: String,
    },
    Field(Field),
}

/// One replacement field, `{` to `}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The whole field, braces included.
    pub span: Range<usize>,
    pub name: FieldName,
    /// `r`, `s` or `a`.
    pub conversion: Option<char>,
    /// The format spec, its own fields to be formatted first (empty: no spec).
    pub spec: Vec<SpecPart>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpecPart {
    Text(String),
    Field(Field),
}

/// `root.attr[0][key]`: the keyword argument, then what is read from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldName {
    pub root: String,
    pub accessors: Vec<Accessor>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Accessor {
    /// `.name`: `getattr`.
    Attr(String),
    /// `[0]`: an integer index (the key is all digits).
    Index(u64),
    /// `[key]`: a string key.
    Key(String),
}

impl FieldName {
    /// The name as a dotted path, as the other formats' variables are written
    /// (`user.name`, `items[0]` reads `items`): attributes and string keys become dots,
    /// an index ends the path.
    pub fn dotted(&self) -> String {
        let mut path = self.root.clone();
        for accessor in &self.accessors {
            match accessor {
                Accessor::Attr(name) | Accessor::Key(name) => {
                    path.push('.');
                    path.push_str(name);
                }
                Accessor::Index(_) => break,
            }
        }
        path
    }
}

impl Field {
    /// Every field this one needs a value for: itself and those in its spec.
    pub fn names(&self) -> impl Iterator<Item = &FieldName> {
        std::iter::once(&self.name).chain(self.spec.iter().filter_map(|part| match part {
            SpecPart::Field(field) => Some(&field.name),
            SpecPart::Text(_) => None,
        }))
    }
}

impl Template {
    /// The fields in order, those nested in specs after their field.
    pub fn fields(&self) -> impl Iterator<Item = &Field> {
        self.pieces.iter().filter_map(|piece| match piece {
            Piece::Field(field) => Some(field),
            Piece::Text { .. } => None,
        })
    }
}

/// Parses `text` as `str.format` does; a template with no markup is all text.
pub fn parse(text: &str) -> Result<Template, SyntaxError> {
    let mut pieces: Vec<Piece> = Vec::new();
    let mut at = 0;
    let bytes = text.as_bytes();
    // The literal run being read: its source start and its unescaped text.
    let mut run: Option<(usize, String)> = None;
    let push_text = |run: &mut Option<(usize, String)>, start: usize, piece: &str| {
        run.get_or_insert_with(|| (start, String::new()))
            .1
            .push_str(piece);
    };
    let flush = |run: &mut Option<(usize, String)>, end: usize, pieces: &mut Vec<Piece>| {
        if let Some((start, text)) = run.take() {
            if !text.is_empty() {
                pieces.push(Piece::Text {
                    span: start..end,
                    text,
                });
            }
        }
    };
    while at < text.len() {
        let Some(found) = memchr::memchr2(b'{', b'}', &bytes[at..]) else {
            push_text(&mut run, at, &text[at..]);
            at = text.len();
            break;
        };
        let brace = at + found;
        push_text(&mut run, at, &text[at..brace]);
        let doubled = bytes.get(brace + 1) == Some(&bytes[brace]);
        if bytes[brace] == b'}' {
            if !doubled {
                return Err(SyntaxError::new(
                    brace,
                    "single '}' encountered in format string (write `}}` for a literal brace)",
                ));
            }
            push_text(&mut run, brace, "}");
            at = brace + 2;
            continue;
        }
        if doubled {
            push_text(&mut run, brace, "{");
            at = brace + 2;
            continue;
        }
        if brace + 1 == text.len() {
            return Err(SyntaxError::new(
                brace,
                "single '{' encountered in format string (write `{{` for a literal brace)",
            ));
        }
        flush(&mut run, brace, &mut pieces);
        let (field, end) = parse_field(text, brace, 2)?;
        pieces.push(Piece::Field(field));
        at = end;
    }
    flush(&mut run, at, &mut pieces);
    Ok(Template { pieces })
}

/// Parses the field whose `{` is at `open`; returns it and the offset after its `}`.
/// `depth` is CPython's recursion budget: a spec's fields are parsed at `depth - 1`, and
/// a field at depth 0 is "Max string recursion exceeded".
fn parse_field(text: &str, open: usize, depth: u8) -> Result<(Field, usize), SyntaxError> {
    if depth == 0 {
        return Err(SyntaxError::new(
            open,
            "max string recursion exceeded (a format spec's field holds another field)",
        ));
    }
    let bytes = text.as_bytes();
    let name_start = open + 1;
    let mut at = name_start;
    let mut stop = None;
    while at < bytes.len() {
        let c = bytes[at];
        at += 1;
        match c {
            b'{' => return Err(SyntaxError::new(at - 1, "unexpected '{' in field name")),
            b'[' => {
                // Up to the `]`: a key may hold any other character.
                while at < bytes.len() && bytes[at] != b']' {
                    at += 1;
                }
            }
            b'}' | b':' | b'!' => {
                stop = Some(c);
                break;
            }
            _ => {}
        }
    }
    let Some(stop) = stop else {
        return Err(SyntaxError::new(open, "expected '}' before end of string"));
    };
    let name_end = at - 1;
    let name = parse_field_name(text, name_start..name_end)?;
    let mut conversion = None;
    let mut spec = Vec::new();
    if stop == b'}' {
        return Ok((
            Field {
                span: open..at,
                name,
                conversion,
                spec,
            },
            at,
        ));
    }
    if stop == b'!' {
        let Some(c) = text[at..].chars().next() else {
            return Err(SyntaxError::new(
                at - 1,
                "end of string while looking for conversion specifier",
            ));
        };
        at += c.len_utf8();
        if !matches!(c, 'r' | 's' | 'a') {
            // CPython reads the rest of the markup before it looks at the conversion; a
            // template is wrong either way, and this is the error a reader needs.
            return Err(SyntaxError::new(
                at - c.len_utf8(),
                format!("unknown conversion specifier {c} (use !r, !s or !a)"),
            ));
        }
        conversion = Some(c);
        match bytes.get(at) {
            Some(b'}') => {
                return Ok((
                    Field {
                        span: open..at + 1,
                        name,
                        conversion,
                        spec,
                    },
                    at + 1,
                ))
            }
            Some(b':') => at += 1,
            Some(_) => {
                return Err(SyntaxError::new(
                    at,
                    "expected ':' after conversion specifier",
                ))
            }
            None => return Err(SyntaxError::new(open, "unmatched '{' in format spec")),
        }
    }
    // The spec runs to the `}` that balances the field's `{`; the fields inside it are
    // parsed again as markup, one level down.
    let spec_start = at;
    let mut count = 1;
    let mut nested = false;
    let mut end = None;
    while at < bytes.len() {
        match bytes[at] {
            b'{' => {
                nested = true;
                count += 1;
            }
            b'}' => {
                count -= 1;
                if count == 0 {
                    end = Some(at);
                    break;
                }
            }
            _ => {}
        }
        at += 1;
    }
    let Some(spec_end) = end else {
        return Err(SyntaxError::new(open, "unmatched '{' in format spec"));
    };
    if nested {
        spec = parse_spec(text, spec_start..spec_end, depth - 1)?;
    } else if spec_end > spec_start {
        spec.push(SpecPart::Text(text[spec_start..spec_end].to_owned()));
    }
    Ok((
        Field {
            span: open..spec_end + 1,
            name,
            conversion,
            spec,
        },
        spec_end + 1,
    ))
}

/// A spec with fields in it, read as markup (CPython's `build_string` on the spec).
fn parse_spec(text: &str, range: Range<usize>, depth: u8) -> Result<Vec<SpecPart>, SyntaxError> {
    let inner = &text[..range.end];
    let bytes = inner.as_bytes();
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut at = range.start;
    while at < range.end {
        let Some(found) = memchr::memchr2(b'{', b'}', &bytes[at..range.end]) else {
            literal.push_str(&inner[at..range.end]);
            break;
        };
        let brace = at + found;
        literal.push_str(&inner[at..brace]);
        let doubled = bytes.get(brace + 1).filter(|_| brace + 1 < range.end) == Some(&bytes[brace]);
        if doubled {
            literal.push(bytes[brace] as char);
            at = brace + 2;
            continue;
        }
        if bytes[brace] == b'}' {
            return Err(SyntaxError::new(
                brace,
                "single '}' encountered in format string",
            ));
        }
        if brace + 1 == range.end {
            return Err(SyntaxError::new(
                brace,
                "single '{' encountered in format string",
            ));
        }
        if !literal.is_empty() {
            parts.push(SpecPart::Text(std::mem::take(&mut literal)));
        }
        let (field, end) = parse_field(inner, brace, depth)?;
        parts.push(SpecPart::Field(field));
        at = end;
    }
    if !literal.is_empty() {
        parts.push(SpecPart::Text(literal));
    }
    Ok(parts)
}

/// CPython's `field_name_split` and `FieldNameIterator`, with the keyword-argument rule:
/// an empty or all-digit first part is a positional argument, which a template rendered
/// with keyword arguments never has.
fn parse_field_name(text: &str, range: Range<usize>) -> Result<FieldName, SyntaxError> {
    let name = &text[range.clone()];
    let first_end = name.find(['.', '[']).unwrap_or(name.len());
    let root = &name[..first_end];
    if root.is_empty() || root.bytes().all(|b| b.is_ascii_digit()) {
        let what = if root.is_empty() {
            "an empty field `{}`".to_owned()
        } else {
            format!("a positional field `{{{root}}}`")
        };
        return Err(SyntaxError::new(
            range.start,
            format!("{what} takes a positional argument, and a template is formatted with keyword arguments only"),
        ));
    }
    let mut accessors = Vec::new();
    let bytes = name.as_bytes();
    let mut at = first_end;
    while at < name.len() {
        match bytes[at] {
            b'.' => {
                let start = at + 1;
                let end = name[start..]
                    .find(['.', '['])
                    .map_or(name.len(), |i| start + i);
                if end == start {
                    return Err(SyntaxError::new(
                        range.start + at,
                        "empty attribute in format string",
                    ));
                }
                accessors.push(Accessor::Attr(name[start..end].to_owned()));
                at = end;
            }
            b'[' => {
                let start = at + 1;
                let Some(close) = name[start..].find(']').map(|i| start + i) else {
                    return Err(SyntaxError::new(
                        range.start + at,
                        "missing ']' in format string",
                    ));
                };
                if close == start {
                    return Err(SyntaxError::new(
                        range.start + at,
                        "empty attribute in format string",
                    ));
                }
                let key = &name[start..close];
                accessors.push(match index_of(key) {
                    Some(index) => Accessor::Index(index),
                    None => Accessor::Key(key.to_owned()),
                });
                at = close + 1;
                if at < name.len() && !matches!(bytes[at], b'.' | b'[') {
                    return Err(SyntaxError::new(
                        range.start + at,
                        "only '.' or '[' may follow ']' in format field specifier",
                    ));
                }
            }
            _ => unreachable!("the first part ends at '.' or '['"),
        }
    }
    Ok(FieldName {
        root: root.to_owned(),
        accessors,
    })
}

/// CPython's `get_integer`: a key of ASCII digits is an integer index.
fn index_of(key: &str) -> Option<u64> {
    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    key.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(template: &Template, n: usize) -> &Field {
        template.fields().nth(n).unwrap()
    }

    #[test]
    fn text_fields_and_escapes() {
        let t = parse("Hi {name}, {{literal}} {user.email}!").unwrap();
        assert_eq!(t.pieces.len(), 5);
        assert_eq!(
            t.pieces[0],
            Piece::Text {
                span: 0..3,
                text: "Hi ".into()
            }
        );
        assert_eq!(field(&t, 0).span, 3..9);
        assert_eq!(field(&t, 0).name.root, "name");
        assert_eq!(
            t.pieces[2],
            Piece::Text {
                span: 9..23,
                text: ", {literal} ".into()
            }
        );
        assert_eq!(field(&t, 1).name.dotted(), "user.email");
    }

    #[test]
    fn accessors_conversions_and_nested_specs() {
        let t = parse("{x[0]} {d[key].a} {v!r:>10} {w:{width}.{p}f}").unwrap();
        assert_eq!(field(&t, 0).name.accessors, [Accessor::Index(0)]);
        assert_eq!(
            field(&t, 1).name.accessors,
            [Accessor::Key("key".into()), Accessor::Attr("a".into())]
        );
        assert_eq!(field(&t, 2).conversion, Some('r'));
        assert_eq!(field(&t, 2).spec, [SpecPart::Text(">10".into())]);
        let spec = &field(&t, 3).spec;
        assert_eq!(spec.len(), 4);
        assert!(matches!(&spec[0], SpecPart::Field(f) if f.name.root == "width"));
        assert_eq!(spec[1], SpecPart::Text(".".into()));
    }

    #[test]
    fn errors_have_their_place() {
        for (text, offset) in [
            ("a } b", 2),
            ("a { b", 2),
            ("ends {", 5),
            ("{x!z}", 3),
            ("{x!r", 0),
            ("{x[0]y}", 5),
            ("{}", 1),
            ("{0}", 1),
            ("{a:{b:{c}}}", 6),
            ("{a.}", 2),
            ("{a[}", 0),
        ] {
            let err = parse(text).unwrap_err();
            assert_eq!(err.offset, offset, "{text}: {err:?}");
        }
    }
}
