//! Python's `str()`, `repr()` and `json.dumps()` for template values, so that renders match
//! what Jinja2 (and transformers) produce byte for byte.

use minijinja::value::{Value, ValueKind};
use std::fmt::Write;

/// `str(value)`: what `{{ value }}` prints in Jinja2.
pub fn py_str(value: &Value) -> String {
    match value.kind() {
        ValueKind::Undefined => String::new(),
        ValueKind::String => value.as_str().unwrap_or_default().to_owned(),
        // A date's `str()` is its ISO form; only nested in a list or dict is it the repr.
        _ => match value.downcast_object_ref::<super::datetime::PyDateTime>() {
            Some(at) => at.py_str(),
            None => py_repr(value),
        },
    }
}

/// The one cap on a format spec's width or precision, for every formatting path (`str.format`
/// in Jinja, the `{var}` formats): a number past the output limit is refused before any
/// text is made, since Python would try to allocate it.
pub fn format_number_within(what: &str, n: u128, max_len: usize) -> Result<(), String> {
    if n > max_len as u128 {
        return Err(format!(
            "the format spec's {what} {n} is over the output limit of {max_len} bytes"
        ));
    }
    Ok(())
}

/// Checks every number in the specs of a `str.format()` string (widths, precisions, a
/// digit fill) against [`format_number_within`]. Field names (`{0}`, `{a[1]}`) are not
/// specs; a malformed string is left for the formatter to report.
pub fn str_format_within(format: &str, max_len: usize) -> Result<(), String> {
    if !format.contains(':') {
        return Ok(());
    }
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '{' {
            continue;
        }
        if chars.peek() == Some(&'{') {
            chars.next();
            continue;
        }
        // One field up to its closing brace (nested fields inside the spec included).
        let (mut depth, mut in_spec, mut prev) = (1usize, false, '{');
        let mut number: Option<(&str, u128)> = None;
        for c in chars.by_ref() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ':' if !in_spec => in_spec = true,
                _ => {}
            }
            match c.to_digit(10) {
                Some(d) if in_spec => {
                    let (what, n) =
                        number.unwrap_or((if prev == '.' { "precision" } else { "width" }, 0));
                    number = Some((what, n.saturating_mul(10).saturating_add(d.into())));
                }
                _ => {
                    if let Some((what, n)) = number.take() {
                        format_number_within(what, n, max_len)?;
                    }
                }
            }
            if depth == 0 {
                break;
            }
            prev = c;
        }
        if let Some((what, n)) = number {
            format_number_within(what, n, max_len)?;
        }
    }
    Ok(())
}

/// Jinja2's `indent` filter, quirks included: a trailing newline survives (minijinja's drops
/// it), blank lines stay unindented unless `blank`, and lines split as `str.splitlines()` does.
pub fn py_indent(text: &str, indention: &str, first: bool, blank: bool) -> String {
    let padded = format!("{text}\n");
    let lines = py_splitlines(&padded);
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push('\n');
            if blank || !line.is_empty() {
                out.push_str(indention);
            }
        }
        out.push_str(line);
    }
    if first {
        out.insert_str(0, indention);
    }
    out
}

/// `str.splitlines()`: splits on every line boundary Python knows, dropping the separators.
fn py_splitlines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let boundary = matches!(
            c,
            '\n' | '\r'
                | '\u{0b}'
                | '\u{0c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if !boundary {
            continue;
        }
        lines.push(&text[start..i]);
        let mut end = i + c.len_utf8();
        if c == '\r' {
            if let Some(&(j, '\n')) = chars.peek() {
                chars.next();
                end = j + 1;
            }
        }
        start = end;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// `repr(value)`: how Python prints a value nested in a list or dict.
pub fn py_repr(value: &Value) -> String {
    let mut out = String::new();
    write_repr(&mut out, value, 0);
    out
}

const MAX_DEPTH: usize = 256;

fn write_repr(out: &mut String, value: &Value, depth: usize) {
    if depth > MAX_DEPTH {
        out.push_str("...");
        return;
    }
    match value.kind() {
        ValueKind::Undefined => {}
        ValueKind::None => out.push_str("None"),
        ValueKind::Bool => out.push_str(if value.is_true() { "True" } else { "False" }),
        ValueKind::Number => out.push_str(&py_number(value)),
        ValueKind::String => write_str_repr(out, value.as_str().unwrap_or_default()),
        ValueKind::Bytes => {
            out.push('b');
            write_str_repr(
                out,
                &String::from_utf8_lossy(value.as_bytes().unwrap_or_default()),
            );
        }
        ValueKind::Seq | ValueKind::Iterable => {
            let (open, close) = if value.is_tuple() {
                ("(", ")")
            } else {
                ("[", "]")
            };
            out.push_str(open);
            let mut n = 0;
            if let Ok(iter) = value.try_iter() {
                for (i, item) in iter.enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_repr(out, &item, depth + 1);
                    n += 1;
                }
            }
            if value.is_tuple() && n == 1 {
                out.push(',');
            }
            out.push_str(close);
        }
        ValueKind::Map => {
            out.push('{');
            if let Ok(iter) = value.try_iter() {
                for (i, key) in iter.enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_repr(out, &key, depth + 1);
                    out.push_str(": ");
                    write_repr(out, &value.get_item(&key).unwrap_or_default(), depth + 1);
                }
            }
            out.push('}');
        }
        _ => match value.downcast_object_ref::<super::datetime::PyDateTime>() {
            Some(at) => out.push_str(&at.py_repr()),
            None => {
                let _ = write!(out, "{value}");
            }
        },
    }
}

fn write_str_repr(out: &mut String, s: &str) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

fn py_number(value: &Value) -> String {
    if value.is_integer() {
        return value.to_string();
    }
    match f64::try_from(value.clone()) {
        Ok(f) => py_float(f),
        Err(_) => value.to_string(),
    }
}

/// Python's `repr(float)`: shortest round-trip digits, positional for 1e-4 <= |x| < 1e16.
pub fn py_float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if negative { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let point = exp + 1;
        let body = if point <= 0 {
            format!("0.{}{}", "0".repeat((-point) as usize), digits)
        } else if point as usize >= digits.len() {
            format!("{}{}.0", digits, "0".repeat(point as usize - digits.len()))
        } else {
            format!(
                "{}.{}",
                &digits[..point as usize],
                &digits[point as usize..]
            )
        };
        format!("{sign}{body}")
    } else {
        let frac = if digits.len() > 1 {
            format!(".{}", &digits[1..])
        } else {
            String::new()
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{}{frac}e{esign}{:02}", &digits[..1], exp.abs())
    }
}

/// The options of Python's `json.dumps` that templates use.
#[derive(Debug, Clone)]
pub struct JsonOptions {
    pub ensure_ascii: bool,
    pub sort_keys: bool,
    /// `None` is compact-on-one-line; `Some("")` still breaks lines, as Python does for indent=0.
    pub indent: Option<String>,
    pub item_separator: String,
    pub key_separator: String,
    /// Jinja2's `htmlsafe_json_dumps`: escape `<>&'` after dumping.
    pub html_safe: bool,
}

impl JsonOptions {
    /// Plain Jinja2's `tojson`: `json.dumps(sort_keys=True)` made HTML-safe.
    pub fn jinja2() -> Self {
        JsonOptions {
            ensure_ascii: true,
            sort_keys: true,
            indent: None,
            item_separator: ", ".into(),
            key_separator: ": ".into(),
            html_safe: true,
        }
    }

    /// transformers' chat-template `tojson`: `json.dumps(ensure_ascii=False)`.
    pub fn transformers() -> Self {
        JsonOptions {
            ensure_ascii: false,
            sort_keys: false,
            indent: None,
            item_separator: ", ".into(),
            key_separator: ": ".into(),
            html_safe: false,
        }
    }

    /// With an indent, Python's default item separator loses its trailing space.
    pub fn with_indent(mut self, indent: Option<String>) -> Self {
        if indent.is_some() && self.item_separator == ", " {
            self.item_separator = ",".into();
        }
        self.indent = indent;
        self
    }
}

pub fn json_dumps(value: &Value, options: &JsonOptions) -> Result<String, String> {
    let mut out = String::new();
    write_json(&mut out, value, options, 0)?;
    if options.html_safe {
        out = out
            .replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('&', "\\u0026")
            .replace('\'', "\\u0027");
    }
    Ok(out)
}

fn newline_indent(out: &mut String, options: &JsonOptions, level: usize) {
    if let Some(indent) = &options.indent {
        out.push('\n');
        for _ in 0..level {
            out.push_str(indent);
        }
    }
}

fn write_json(
    out: &mut String,
    value: &Value,
    options: &JsonOptions,
    depth: usize,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err("value nested too deeply for tojson".into());
    }
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if value.is_true() { "true" } else { "false" }),
        ValueKind::Number => {
            if value.is_integer() {
                out.push_str(&value.to_string());
            } else {
                let f = f64::try_from(value.clone()).map_err(|e| e.to_string())?;
                out.push_str(&match py_float(f).as_str() {
                    "nan" => "NaN".to_owned(),
                    "inf" => "Infinity".to_owned(),
                    "-inf" => "-Infinity".to_owned(),
                    other => other.to_owned(),
                });
            }
        }
        ValueKind::String => write_json_str(
            out,
            value.as_str().unwrap_or_default(),
            options.ensure_ascii,
        ),
        ValueKind::Bytes => write_json_str(
            out,
            &String::from_utf8_lossy(value.as_bytes().unwrap_or_default()),
            options.ensure_ascii,
        ),
        ValueKind::Seq | ValueKind::Iterable => {
            let items: Vec<Value> = value.try_iter().map_err(|e| e.to_string())?.collect();
            if items.is_empty() {
                out.push_str("[]");
                return Ok(());
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(&options.item_separator);
                }
                newline_indent(out, options, depth + 1);
                write_json(out, item, options, depth + 1)?;
            }
            newline_indent(out, options, depth);
            out.push(']');
        }
        ValueKind::Map => {
            let mut keys: Vec<Value> = value.try_iter().map_err(|e| e.to_string())?.collect();
            if keys.is_empty() {
                out.push_str("{}");
                return Ok(());
            }
            if options.sort_keys {
                keys.sort_by_key(json_key);
            }
            out.push('{');
            for (i, key) in keys.iter().enumerate() {
                if i > 0 {
                    out.push_str(&options.item_separator);
                }
                newline_indent(out, options, depth + 1);
                write_json_str(out, &json_key(key), options.ensure_ascii);
                out.push_str(&options.key_separator);
                let item = value.get_item(key).map_err(|e| e.to_string())?;
                write_json(out, &item, options, depth + 1)?;
            }
            newline_indent(out, options, depth);
            out.push('}');
        }
        _ => write_json_str(out, &value.to_string(), options.ensure_ascii),
    }
    Ok(())
}

/// Python converts non-string keys: True → "true", None → "null", numbers by repr.
fn json_key(key: &Value) -> String {
    match key.kind() {
        ValueKind::String => key.as_str().unwrap_or_default().to_owned(),
        ValueKind::Bool => if key.is_true() { "true" } else { "false" }.to_owned(),
        ValueKind::None => "null".to_owned(),
        _ => py_str(key),
    }
}

fn write_json_str(out: &mut String, s: &str, ensure_ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if ensure_ascii && (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn str_format_widths_and_precisions_past_the_output_limit_are_refused() {
        let max = 1000;
        for (format, refused) in [
            ("{:>4000000000}", Some("width 4000000000")),
            ("{0:.4000000000f}", Some("precision 4000000000")),
            (
                "{:x<99999999999999999999999999999999999999999}",
                Some("width"),
            ),
            ("{a[123456789]:>5}", None),
            ("{{:>4000000000}}", None),
            ("{:>1000}|{:.3f}|{0:{1}}", None),
            ("{0:{1}>4000000000}", Some("width 4000000000")),
            ("no fields: 4000000000", None),
        ] {
            let got = str_format_within(format, max);
            match refused {
                None => assert!(got.is_ok(), "{format}: {got:?}"),
                Some(what) => {
                    let err = got.unwrap_err();
                    assert!(
                        err.contains(what) && err.contains("output limit of 1000"),
                        "{format}: {err}"
                    );
                }
            }
        }
    }

    #[test]
    fn floats_print_like_python() {
        for (f, want) in [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1e-5, "1e-05"),
            (1e16, "1e+16"),
            (123456789.5, "123456789.5"),
            (-2.5e-7, "-2.5e-07"),
            (0.0001, "0.0001"),
            (1e15, "1000000000000000.0"),
        ] {
            assert_eq!(py_float(f), want);
        }
    }

    #[test]
    fn repr_quotes_like_python() {
        let v = Value::from(minijinja::value::Serde(
            serde_json::json!(["a'b", "c", null, true, 1.5, {"k": "v"}]),
        ));
        assert_eq!(py_repr(&v), r#"["a'b", 'c', None, True, 1.5, {'k': 'v'}]"#);
    }

    #[test]
    fn jinja2_tojson_sorts_and_escapes() {
        let v = Value::from(minijinja::value::Serde(
            serde_json::json!({"b": "<x & 'y'>", "a": "é"}),
        ));
        assert_eq!(
            json_dumps(&v, &JsonOptions::jinja2()).unwrap(),
            r#"{"a": "\u00e9", "b": "\u003cx \u0026 \u0027y\u0027\u003e"}"#
        );
    }

    #[test]
    fn transformers_tojson_indent() {
        let v = Value::from(minijinja::value::Serde(
            serde_json::json!({"b": [1, 2], "a": {}}),
        ));
        let opts = JsonOptions::transformers().with_indent(Some("  ".into()));
        assert_eq!(
            json_dumps(&v, &opts).unwrap(),
            "{\n  \"b\": [\n    1,\n    2\n  ],\n  \"a\": {}\n}"
        );
    }
}

#[cfg(test)]
mod indent_tests {
    use super::py_indent;

    #[test]
    fn indent_keeps_the_trailing_newline_like_jinja2() {
        assert_eq!(py_indent("{\n", "    ", true, false), "    {\n");
        assert_eq!(py_indent("a\n\nb", "  ", false, false), "a\n\n  b");
        assert_eq!(py_indent("a\n\nb", "  ", false, true), "a\n  \n  b");
        assert_eq!(py_indent("a\r\nb", "  ", false, false), "a\n  b");
    }
}
