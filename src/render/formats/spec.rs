//! CPython 3.11's `format(value, spec)` for the values samples hold: `str`, `int`,
//! `float`, `bool`, and everything else through `object.__format__`.
//!
//! A port of `Python/formatter_unicode.c` (`parse_internal_render_format_spec`,
//! `format_string_internal`, `format_long_internal`, `format_float_internal`,
//! `calc_number_widths`, `fill_number`) and of `PyOS_double_to_string`'s modes, under the
//! C locale (what a program that never calls `setlocale` formats with). Widths and
//! precisions are bounded by the caller's output limit before any text is made.

use crate::render::python::py_float;

/// A value as `format()` sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum Formattable<'a> {
    Str(&'a str),
    Int(i128),
    Float(f64),
    Bool(bool),
    /// Any other type, by its Python type name and its `str()`.
    Other {
        type_name: &'static str,
        text: String,
    },
}

impl Formattable<'_> {
    fn type_name(&self) -> &'static str {
        match self {
            Formattable::Str(_) => "str",
            Formattable::Int(_) => "int",
            Formattable::Float(_) => "float",
            Formattable::Bool(_) => "bool",
            Formattable::Other { type_name, .. } => type_name,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Grouping {
    None,
    Comma,
    Underscore,
    /// `_` with `b`, `o`, `x`, `X`: every four digits.
    UnderscoreFour,
}

#[derive(Debug, Clone)]
struct Spec {
    fill: char,
    align: Option<char>,
    sign: Option<char>,
    no_neg_0: bool,
    alternate: bool,
    width: Option<usize>,
    grouping: Grouping,
    precision: Option<usize>,
    kind: Option<char>,
}

/// `format(value, spec)`; `max_len` bounds the text (in bytes): a width or precision past
/// it is an error before anything is made.
pub fn format(value: &Formattable<'_>, spec: &str, max_len: usize) -> Result<String, String> {
    if spec.is_empty() {
        return Ok(match value {
            Formattable::Str(s) => (*s).to_owned(),
            Formattable::Int(i) => i.to_string(),
            Formattable::Float(f) => py_float(*f),
            Formattable::Bool(b) => if *b { "True" } else { "False" }.to_owned(),
            Formattable::Other { text, .. } => text.clone(),
        });
    }
    let type_name = value.type_name();
    match value {
        Formattable::Str(s) => {
            let spec = parse_spec(spec, 's', '<', type_name)?;
            bound(&spec, max_len)?;
            match spec.kind {
                Some('s') => format_str(s, &spec),
                Some(other) => Err(unknown_code(other, type_name)),
                None => unreachable!("the default type is 's'"),
            }
        }
        Formattable::Int(_) | Formattable::Bool(_) => {
            let int = match value {
                Formattable::Int(i) => *i,
                Formattable::Bool(b) => i128::from(*b),
                _ => 0,
            };
            let spec = parse_spec(spec, 'd', '>', type_name)?;
            bound(&spec, max_len)?;
            match spec.kind {
                Some('b' | 'c' | 'd' | 'o' | 'x' | 'X' | 'n') => format_int(int, &spec),
                Some('e' | 'E' | 'f' | 'F' | 'g' | 'G' | '%') => format_float(int as f64, &spec),
                Some(other) => Err(unknown_code(other, type_name)),
                None => unreachable!("the default type is 'd'"),
            }
        }
        Formattable::Float(f) => {
            let spec = parse_spec(spec, '\0', '>', type_name)?;
            bound(&spec, max_len)?;
            match spec.kind {
                None | Some('e' | 'E' | 'f' | 'F' | 'g' | 'G' | 'n' | '%') => {
                    format_float(*f, &spec)
                }
                Some(other) => Err(unknown_code(other, type_name)),
            }
        }
        Formattable::Other { type_name, .. } => Err(format!(
            "TypeError: unsupported format string passed to {type_name}.__format__"
        )),
    }
}

fn unknown_code(code: char, type_name: &str) -> String {
    format!("ValueError: Unknown format code '{code}' for object of type '{type_name}'")
}

/// A width or precision whose text would pass the output limit (CPython would try to
/// allocate it).
fn bound(spec: &Spec, max_len: usize) -> Result<(), String> {
    for (what, n) in [("width", spec.width), ("precision", spec.precision)] {
        if let Some(n) = n {
            crate::render::python::format_number_within(what, n as u128, max_len)?;
        }
    }
    Ok(())
}

/// `parse_internal_render_format_spec`.
fn parse_spec(
    text: &str,
    default_kind: char,
    default_align: char,
    type_name: &str,
) -> Result<Spec, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut pos = 0;
    let is_align = |c: char| matches!(c, '<' | '>' | '=' | '^');
    let mut spec = Spec {
        fill: ' ',
        align: None,
        sign: None,
        no_neg_0: false,
        alternate: false,
        width: None,
        grouping: Grouping::None,
        precision: None,
        kind: (default_kind != '\0').then_some(default_kind),
    };
    let mut fill_specified = false;
    if chars.len() >= 2 && is_align(chars[1]) {
        spec.align = Some(chars[1]);
        spec.fill = chars[0];
        fill_specified = true;
        pos = 2;
    } else if !chars.is_empty() && is_align(chars[0]) {
        spec.align = Some(chars[0]);
        pos = 1;
    }
    if let Some(&c @ ('+' | '-' | ' ')) = chars.get(pos) {
        spec.sign = Some(c);
        pos += 1;
    }
    if chars.get(pos) == Some(&'z') {
        spec.no_neg_0 = true;
        pos += 1;
    }
    if chars.get(pos) == Some(&'#') {
        spec.alternate = true;
        pos += 1;
    }
    if !fill_specified && chars.get(pos) == Some(&'0') {
        spec.fill = '0';
        if spec.align.is_none() && default_align == '>' {
            spec.align = Some('=');
        }
        pos += 1;
    }
    let (width, consumed) = integer(&chars, &mut pos)?;
    if consumed > 0 {
        spec.width = Some(width);
    }
    if chars.get(pos) == Some(&',') {
        spec.grouping = Grouping::Comma;
        pos += 1;
    }
    if chars.get(pos) == Some(&'_') {
        if spec.grouping != Grouping::None {
            return Err("ValueError: Cannot specify both ',' and '_'.".into());
        }
        spec.grouping = Grouping::Underscore;
        pos += 1;
    }
    if chars.get(pos) == Some(&',') && spec.grouping == Grouping::Underscore {
        return Err("ValueError: Cannot specify both ',' and '_'.".into());
    }
    if chars.get(pos) == Some(&'.') {
        pos += 1;
        let (precision, consumed) = integer(&chars, &mut pos)?;
        if consumed == 0 {
            return Err("ValueError: Format specifier missing precision".into());
        }
        spec.precision = Some(precision);
    }
    if chars.len() - pos > 1 {
        return Err(format!(
            "ValueError: Invalid format specifier '{text}' for object of type '{type_name}'"
        ));
    }
    if let Some(&c) = chars.get(pos) {
        spec.kind = Some(c);
    }
    if spec.grouping != Grouping::None {
        match spec.kind {
            Some('d' | 'e' | 'f' | 'g' | 'E' | 'G' | '%' | 'F') | None => {}
            Some('b' | 'o' | 'x' | 'X') if spec.grouping == Grouping::Underscore => {
                spec.grouping = Grouping::UnderscoreFour;
            }
            Some(kind) => {
                let separator = if spec.grouping == Grouping::Comma {
                    ','
                } else {
                    '_'
                };
                return Err(format!(
                    "ValueError: Cannot specify '{separator}' with '{kind}'."
                ));
            }
        }
    }
    Ok(spec)
}

/// `get_integer`: ASCII digits, refusing what overflows `Py_ssize_t`.
fn integer(chars: &[char], pos: &mut usize) -> Result<(usize, usize), String> {
    let mut value: u64 = 0;
    let mut consumed = 0;
    while let Some(digit) = chars.get(*pos).and_then(|c| c.to_digit(10)) {
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(digit)))
            .filter(|&v| v <= i64::MAX as u64)
            .ok_or("ValueError: Too many decimal digits in format string")?;
        *pos += 1;
        consumed += 1;
    }
    Ok((usize::try_from(value).unwrap_or(usize::MAX), consumed))
}

/// `format_string_internal`.
fn format_str(s: &str, spec: &Spec) -> Result<String, String> {
    if let Some(sign) = spec.sign {
        return Err(if sign == ' ' {
            "ValueError: Space not allowed in string format specifier".into()
        } else {
            "ValueError: Sign not allowed in string format specifier".into()
        });
    }
    if spec.no_neg_0 {
        return Err(
            "ValueError: Negative zero coercion (z) not allowed in format specifier".into(),
        );
    }
    if spec.alternate {
        return Err("ValueError: Alternate form (#) not allowed in string format specifier".into());
    }
    let align = spec.align.unwrap_or('<');
    if align == '=' {
        return Err("ValueError: '=' alignment not allowed in string format specifier".into());
    }
    let mut len = s.chars().count();
    let mut text = s;
    if let Some(precision) = spec.precision {
        if len >= precision {
            len = precision;
            text = &s[..s.char_indices().nth(precision).map_or(s.len(), |(i, _)| i)];
        }
    }
    let total = spec.width.map_or(len, |w| w.max(len));
    let left = match align {
        '>' => total - len,
        '^' => (total - len) / 2,
        _ => 0,
    };
    let right = total - len - left;
    let mut out = String::with_capacity(text.len() + left + right);
    out.extend(std::iter::repeat_n(spec.fill, left));
    out.push_str(text);
    out.extend(std::iter::repeat_n(spec.fill, right));
    Ok(out)
}

/// `format_long_internal`.
fn format_int(value: i128, spec: &Spec) -> Result<String, String> {
    if spec.precision.is_some() {
        return Err("ValueError: Precision not allowed in integer format specifier".into());
    }
    if spec.no_neg_0 {
        return Err(
            "ValueError: Negative zero coercion (z) not allowed in integer format specifier".into(),
        );
    }
    let kind = spec.kind.unwrap_or('d');
    if kind == 'c' {
        if spec.sign.is_some() {
            return Err("ValueError: Sign not allowed with integer format specifier 'c'".into());
        }
        if spec.alternate {
            return Err(
                "ValueError: Alternate form (#) not allowed with integer format specifier 'c'"
                    .into(),
            );
        }
        let c = u32::try_from(value)
            .ok()
            .filter(|&c| c <= 0x10ffff)
            .ok_or("OverflowError: %c arg not in range(0x110000)")?;
        // A lone surrogate is a valid Python str but not a Rust one.
        let c = char::from_u32(c).ok_or("a surrogate code point cannot be written as text")?;
        return Ok(number(spec, "", None, "", &c.to_string(), Grouping::None));
    }
    let magnitude = value.unsigned_abs();
    let (digits, prefix) = match kind {
        'b' => (format!("{magnitude:b}"), "0b"),
        'o' => (format!("{magnitude:o}"), "0o"),
        'x' => (format!("{magnitude:x}"), "0x"),
        'X' => (format!("{magnitude:X}"), "0X"),
        _ => (magnitude.to_string(), ""),
    };
    let prefix = if spec.alternate { prefix } else { "" };
    let sign = (value < 0).then_some('-');
    // 'n' groups as the C locale does: not at all.
    let grouping = if kind == 'n' {
        Grouping::None
    } else {
        spec.grouping
    };
    Ok(number(spec, prefix, sign, &digits, "", grouping))
}

/// `format_float_internal`.
fn format_float(value: f64, spec: &Spec) -> Result<String, String> {
    let mut kind = spec.kind.unwrap_or('\0');
    let mut add_dot_0 = false;
    let mut default_precision = 6;
    if kind == '\0' {
        add_dot_0 = true;
        kind = 'r';
        default_precision = 0;
    }
    if kind == 'n' {
        kind = 'g';
    }
    let mut value = value;
    let mut percent = false;
    if kind == '%' {
        kind = 'f';
        value *= 100.0;
        percent = true;
    }
    let precision = match spec.precision {
        Some(p) => {
            if p > i32::MAX as usize {
                return Err("ValueError: precision too big".into());
            }
            if kind == 'r' {
                kind = 'g';
            }
            p
        }
        None => default_precision,
    };
    let mut text = double_to_string(value, kind, precision, spec.alternate, add_dot_0);
    if spec.no_neg_0 && text.starts_with('-') && is_zero(&text[1..]) {
        text.remove(0);
    }
    if percent {
        text.push('%');
    }
    let (sign, body) = match text.strip_prefix('-') {
        Some(rest) => (Some('-'), rest),
        None => (None, text.as_str()),
    };
    let int_len = body.bytes().take_while(u8::is_ascii_digit).count();
    let (digits, remainder) = body.split_at(int_len);
    let grouping = if spec.kind == Some('n') {
        Grouping::None
    } else {
        spec.grouping
    };
    Ok(number(spec, "", sign, digits, remainder, grouping))
}

/// Whether a formatted float shows zero (every digit before any exponent is 0).
fn is_zero(text: &str) -> bool {
    let mantissa = text.split(['e', 'E']).next().unwrap_or(text);
    mantissa.bytes().all(|b| b == b'0' || b == b'.') && mantissa.contains('0')
}

/// `PyOS_double_to_string(value, kind, precision, flags)` for kinds `e E f F g G r`.
fn double_to_string(
    value: f64,
    kind: char,
    precision: usize,
    alternate: bool,
    add_dot_0: bool,
) -> String {
    let upper = matches!(kind, 'E' | 'F' | 'G');
    if !value.is_finite() {
        let word = if value.is_nan() {
            "nan"
        } else if value > 0.0 {
            "inf"
        } else {
            "-inf"
        };
        return if upper {
            word.to_uppercase()
        } else {
            word.to_owned()
        };
    }
    let sign = if value.is_sign_negative() { "-" } else { "" };
    let magnitude = value.abs();
    let body = match kind {
        'r' => {
            // repr: shortest digits, positional for 1e-4 <= |x| < 1e16 (only the empty
            // type, which adds `.0`, asks for it); `#` keeps a point in `1.e-300` too.
            let mut repr = py_float(magnitude);
            if alternate && !repr.contains('.') {
                let at = repr.find('e').unwrap_or(repr.len());
                repr.insert(at, '.');
            }
            repr
        }
        'f' | 'F' => {
            let mut text = format!("{magnitude:.precision$}");
            if alternate && precision == 0 {
                text.push('.');
            }
            text
        }
        'e' | 'E' => {
            let (digits, decpt) = significant(magnitude, precision + 1);
            let mut text = exponential(&digits, decpt, precision, alternate);
            if upper {
                text = text.replace('e', "E");
            }
            text
        }
        _ => {
            // 'g' / 'G': precision significant digits, trailing zeros dropped.
            let precision = precision.max(1);
            let (digits, decpt) = significant(magnitude, precision);
            let threshold = if add_dot_0 {
                precision as i64 - 1
            } else {
                precision as i64
            };
            let use_exp = decpt <= -4 || decpt > threshold;
            let shown = if alternate {
                digits.clone()
            } else {
                digits.trim_end_matches('0').to_owned()
            };
            let shown = if shown.is_empty() {
                "0".to_owned()
            } else {
                shown
            };
            let mut text = if use_exp {
                exponential(&shown, decpt, shown.len() - 1, alternate)
            } else {
                positional(&shown, decpt, alternate)
            };
            if add_dot_0 && !text.contains(['.', 'e']) {
                text.push_str(".0");
            }
            if upper {
                text = text.replace('e', "E");
            }
            text
        }
    };
    format!("{sign}{body}")
}

/// `count` significant digits of `magnitude`, correctly rounded, and the decimal point's
/// position (`0.0123` with 2 digits: `("12", -1)`).
fn significant(magnitude: f64, count: usize) -> (String, i64) {
    if magnitude == 0.0 {
        return ("0".repeat(count), 1);
    }
    let text = format!("{magnitude:.prec$e}", prec = count - 1);
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits, exponent.parse::<i64>().unwrap_or(0) + 1)
}

/// `d.ddde+XX` from digits and the decimal point's position.
fn exponential(digits: &str, decpt: i64, decimals: usize, alternate: bool) -> String {
    let exponent = if digits.bytes().all(|b| b == b'0') {
        0
    } else {
        decpt - 1
    };
    let (first, rest) = digits.split_at(1);
    let mut text = first.to_owned();
    let rest = &rest[..decimals.min(rest.len())];
    if !rest.is_empty() || alternate {
        text.push('.');
        text.push_str(rest);
    }
    let sign = if exponent < 0 { '-' } else { '+' };
    text.push_str(&format!("e{sign}{:02}", exponent.abs()));
    text
}

/// Positional notation from digits and the decimal point's position.
fn positional(digits: &str, decpt: i64, alternate: bool) -> String {
    let mut text = if decpt <= 0 {
        format!("0.{}{}", "0".repeat(decpt.unsigned_abs() as usize), digits)
    } else if decpt as usize >= digits.len() {
        format!("{digits}{}", "0".repeat(decpt as usize - digits.len()))
    } else {
        format!(
            "{}.{}",
            &digits[..decpt as usize],
            &digits[decpt as usize..]
        )
    };
    if alternate && !text.contains('.') {
        text.push('.');
    }
    text
}

/// `calc_number_widths` and `fill_number`: sign, prefix, grouped digits, the rest, and
/// padding where the alignment puts it.
fn number(
    spec: &Spec,
    prefix: &str,
    sign: Option<char>,
    digits: &str,
    remainder: &str,
    grouping: Grouping,
) -> String {
    let shown_sign = match spec.sign {
        Some('+') => Some(sign.unwrap_or('+')),
        Some(' ') => Some(sign.unwrap_or(' ')),
        _ => sign,
    };
    let remainder_len = remainder.chars().count();
    let non_digits = usize::from(shown_sign.is_some()) + prefix.len() + remainder_len;
    let width = spec.width.map(|w| w as i64);
    let align = spec.align.unwrap_or('>');
    let min_width = match width {
        Some(w) if spec.fill == '0' && align == '=' => w - non_digits as i64,
        _ => 0,
    };
    let grouped = if digits.is_empty() {
        String::new()
    } else {
        group(digits, min_width, grouping)
    };
    let used = (non_digits + grouped.chars().count()) as i64;
    let padding = width.map_or(0, |w| (w - used).max(0) as usize);
    let (left, inner, right) = match align {
        '<' => (0, 0, padding),
        '^' => (padding / 2, 0, padding - padding / 2),
        '=' => (0, padding, 0),
        _ => (padding, 0, 0),
    };
    let mut out = String::new();
    out.extend(std::iter::repeat_n(spec.fill, left));
    out.extend(shown_sign);
    out.push_str(prefix);
    out.extend(std::iter::repeat_n(spec.fill, inner));
    out.push_str(&grouped);
    out.push_str(remainder);
    out.extend(std::iter::repeat_n(spec.fill, right));
    out
}

/// `_PyUnicode_InsertThousandsGrouping`: digits in groups from the right, zero-filled up
/// to `min_width` (the `0` flag's padding is grouped too).
fn group(digits: &str, min_width: i64, grouping: Grouping) -> String {
    let (size, separator) = match grouping {
        Grouping::None => (None, ""),
        Grouping::Comma => (Some(3), ","),
        Grouping::Underscore => (Some(3), "_"),
        Grouping::UnderscoreFour => (Some(4), "_"),
    };
    let mut min_width = min_width.max(0);
    let mut remaining = digits.len() as i64;
    let mut parts: Vec<String> = Vec::new();
    let take = |len: i64, remaining: &mut i64, parts: &mut Vec<String>| {
        let zeros = (len - *remaining).max(0);
        let chars = (*remaining).min(len).max(0);
        let end = *remaining as usize;
        let start = end - chars as usize;
        let mut part = "0".repeat(zeros as usize);
        part.push_str(&digits[start..end]);
        parts.push(part);
        *remaining -= chars;
    };
    let mut broken = false;
    if let Some(size) = size {
        loop {
            let len = size.min(remaining.max(min_width).max(1));
            take(len, &mut remaining, &mut parts);
            min_width -= len;
            if remaining <= 0 && min_width <= 0 {
                broken = true;
                break;
            }
            min_width -= separator.len() as i64;
        }
    }
    if !broken {
        let len = remaining.max(min_width).max(1);
        take(len, &mut remaining, &mut parts);
    }
    parts.reverse();
    parts.join(separator)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(value: Formattable<'_>, spec: &str) -> String {
        format(&value, spec, 1 << 20).unwrap_or_else(|e| format!("ERR {e}"))
    }

    /// Values checked with CPython 3.11 (`format(v, spec)`); `tests/heavy/formats_reference.rs`
    /// compares many more against the interpreter itself.
    #[test]
    fn cpython_examples() {
        use Formattable::*;
        assert_eq!(f(Str("ab"), ">5"), "   ab");
        assert_eq!(f(Str("ab"), "05"), "ab000");
        assert_eq!(f(Str("abcdef"), ".3"), "abc");
        assert_eq!(f(Str("ab"), "*^7"), "**ab***");
        assert_eq!(f(Int(1234567), ","), "1,234,567");
        assert_eq!(f(Int(1234), "010,"), "00,001,234");
        assert_eq!(f(Int(-42), "=+8"), "-     42");
        assert_eq!(f(Int(255), "#x"), "0xff");
        assert_eq!(f(Int(255), "#010_b"), "0b1111_1111");
        assert_eq!(f(Bool(true), ">5"), "    1");
        assert_eq!(f(Bool(true), ""), "True");
        assert_eq!(f(Float(2.675), ".2f"), "2.67");
        assert_eq!(f(Float(1234.5), ".2"), "1.2e+03");
        assert_eq!(f(Float(12.0), ".3"), "12.0");
        assert_eq!(f(Float(0.5), "%"), "50.000000%");
        assert_eq!(f(Float(1e16), ""), "1e+16");
        assert_eq!(f(Float(1e16), ","), "1e+16");
        assert_eq!(f(Float(1234567.0), ","), "1,234,567.0");
        assert_eq!(f(Float(0.0001234), "g"), "0.0001234");
        assert_eq!(f(Float(-0.0), "z.1f"), "0.0");
        assert_eq!(f(Float(f64::INFINITY), "F"), "INF");
        assert_eq!(f(Float(1.5), "e"), "1.500000e+00");
        assert_eq!(f(Float(100.0), "#.0f"), "100.");
        assert_eq!(f(Int(65), "c"), "A");
        assert!(f(Str("a"), "d").starts_with("ERR ValueError: Unknown format code 'd'"));
        assert!(f(Float(1.0), "d").starts_with("ERR"));
        assert!(f(Int(1), ".2d").starts_with("ERR"));
        assert!(f(
            Other {
                type_name: "NoneType",
                text: "None".into()
            },
            ">4"
        )
        .starts_with("ERR TypeError"));
        assert!(f(Str("a"), ">4000000000").starts_with("ERR the format spec's width"));
    }
}
