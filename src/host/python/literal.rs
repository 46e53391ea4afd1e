//! The value of one Python string literal token, as CPython decodes it, with the host
//! bytes of every character: prefixes, quotes, escapes, line continuations, raw strings,
//! and the source's line breaks (`\r\n` and `\r` read as `\n`, as Python reads source).

use super::mapped::MappedText;

/// Why a literal has no text value for us.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum NotText {
    /// A byte string, an f-string or a t-string: not a Jinja template's text.
    NotStr,
    /// A `\ud800`-style lone surrogate, which Python allows in `str` and UTF-8 cannot hold.
    Surrogate,
}

/// An escape that Python rejects with a SyntaxError, at this host byte offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct EscapeError {
    pub offset: usize,
    pub message: String,
}

/// Decodes the string literal token `source[start..end]` (prefix, quotes and body).
pub(super) fn decode(
    source: &str,
    start: usize,
    end: usize,
) -> Result<Result<MappedText, NotText>, EscapeError> {
    let token = &source[start..end];
    let prefix_len = token.find(['"', '\'']).expect("a string token has a quote");
    let prefix = token[..prefix_len].to_ascii_lowercase();
    if prefix.contains(['b', 'f', 't']) {
        return Ok(Err(NotText::NotStr));
    }
    let raw = prefix.contains('r');
    let quote = &token[prefix_len..];
    let quote_len = if quote.len() >= 6 && (quote.starts_with("\"\"\"") || quote.starts_with("'''"))
    {
        3
    } else {
        1
    };
    let body_start = start + prefix_len + quote_len;
    let body_end = end - quote_len;
    decode_body(source, body_start, body_end, raw)
}

/// Decodes an f-string token as the text of its template: the literal parts as CPython
/// decodes them, the replacement fields as written (`{datetime.now():%Y-%m-%d}`), and `{{`
/// and `}}` kept as the escapes they are. `None` for a token that is no f-string (or a
/// byte string, a t-string).
pub(super) fn decode_fstring(
    source: &str,
    start: usize,
    end: usize,
) -> Result<Option<MappedText>, EscapeError> {
    let token = &source[start..end];
    let prefix_len = token.find(['"', '\'']).expect("a string token has a quote");
    let prefix = token[..prefix_len].to_ascii_lowercase();
    if !prefix.contains('f') || prefix.contains(['b', 't']) {
        return Ok(None);
    }
    let raw = prefix.contains('r');
    let quote = &token[prefix_len..];
    let quote_len = if quote.len() >= 6 && (quote.starts_with("\"\"\"") || quote.starts_with("'''"))
    {
        3
    } else {
        1
    };
    let body_start = start + prefix_len + quote_len;
    let body_end = end - quote_len;
    Ok(decode_body(source, body_start, body_end, raw)?.ok())
}

fn decode_body(
    source: &str,
    start: usize,
    end: usize,
    raw: bool,
) -> Result<Result<MappedText, NotText>, EscapeError> {
    let bytes = source.as_bytes();
    let mut out = MappedText::default();
    let mut at = start;
    while at < end {
        let ch = source[at..].chars().next().expect("inside the body");
        match ch {
            '\r' => {
                let len = if bytes.get(at + 1) == Some(&b'\n') && at + 1 < end {
                    2
                } else {
                    1
                };
                out.push_decoded('\n', at, len);
                at += len;
            }
            '\\' if !raw && at + 1 < end => {
                let escape = decode_escape(source, at, end)?;
                match escape {
                    Escape::Char(decoded, len) => {
                        out.push_decoded(decoded, at, len);
                        at += len;
                    }
                    Escape::Continuation(len) => at += len,
                    Escape::Unknown => {
                        // Python keeps the backslash of an unknown escape (`\d`), and the
                        // next character is read as usual.
                        out.push_verbatim('\\', at);
                        at += 1;
                    }
                    Escape::Surrogate => return Ok(Err(NotText::Surrogate)),
                }
            }
            _ => {
                out.push_verbatim(ch, at);
                at += ch.len_utf8();
            }
        }
    }
    Ok(Ok(out))
}

enum Escape {
    /// The character and the length of its escape in host bytes.
    Char(char, usize),
    /// A backslash before a line break: no character; the host bytes it spans.
    Continuation(usize),
    Unknown,
    Surrogate,
}

/// The escape at `source[at]` (a backslash) in a non-raw string body ending at `end`.
fn decode_escape(source: &str, at: usize, end: usize) -> Result<Escape, EscapeError> {
    let bytes = source.as_bytes();
    let error = |message: &str| EscapeError {
        offset: at,
        message: message.to_owned(),
    };
    let simple = |ch: char| Ok(Escape::Char(ch, 2));
    match bytes[at + 1] {
        b'\n' => Ok(Escape::Continuation(2)),
        b'\r' if bytes.get(at + 2) == Some(&b'\n') && at + 2 < end => Ok(Escape::Continuation(3)),
        b'\r' => Ok(Escape::Continuation(2)),
        b'\\' => simple('\\'),
        b'\'' => simple('\''),
        b'"' => simple('"'),
        b'a' => simple('\u{7}'),
        b'b' => simple('\u{8}'),
        b'f' => simple('\u{c}'),
        b'n' => simple('\n'),
        b'r' => simple('\r'),
        b't' => simple('\t'),
        b'v' => simple('\u{b}'),
        b'0'..=b'7' => {
            let digits = bytes[at + 1..end]
                .iter()
                .take(3)
                .take_while(|b| (b'0'..=b'7').contains(b))
                .count();
            let value =
                u32::from_str_radix(&source[at + 1..at + 1 + digits], 8).expect("octal digits");
            let ch = char::from_u32(value).expect("at most 0o777");
            Ok(Escape::Char(ch, 1 + digits))
        }
        b'x' => hex_escape(source, at, end, 2, "truncated \\xXX escape"),
        b'u' => hex_escape(source, at, end, 4, "truncated \\uXXXX escape"),
        b'U' => hex_escape(source, at, end, 8, "truncated \\UXXXXXXXX escape"),
        b'N' => {
            let malformed = "malformed \\N character escape";
            if bytes.get(at + 2) != Some(&b'{') {
                return Err(error(malformed));
            }
            let name_start = at + 3;
            let Some(close) = source[name_start..end].find('}') else {
                return Err(error(malformed));
            };
            let name = &source[name_start..name_start + close];
            if name.is_empty() {
                return Err(error(malformed));
            }
            // Python looks names up ignoring case; aliases and abbreviations count.
            match unicode_names2::character(&name.to_ascii_uppercase()) {
                Some(ch) => Ok(Escape::Char(ch, 3 + close + 1)),
                None => Err(error("unknown Unicode character name")),
            }
        }
        _ => Ok(Escape::Unknown),
    }
}

fn hex_escape(
    source: &str,
    at: usize,
    end: usize,
    digits: usize,
    truncated: &str,
) -> Result<Escape, EscapeError> {
    let hex = source
        .get(at + 2..at + 2 + digits)
        .filter(|hex| at + 2 + digits <= end && hex.bytes().all(|b| b.is_ascii_hexdigit()));
    let Some(hex) = hex else {
        return Err(EscapeError {
            offset: at,
            message: truncated.to_owned(),
        });
    };
    let value = u32::from_str_radix(hex, 16).expect("hex digits");
    if (0xd800..=0xdfff).contains(&value) {
        return Ok(Escape::Surrogate);
    }
    match char::from_u32(value) {
        Some(ch) => Ok(Escape::Char(ch, 2 + digits)),
        None => Err(EscapeError {
            offset: at,
            message: "illegal Unicode character".to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(source: &str) -> MappedText {
        decode(source, 0, source.len())
            .expect("valid escapes")
            .expect("a str literal")
    }

    /// Every verbatim character's host bytes are its own UTF-8.
    fn assert_verbatim_chars_match(source: &str, text: &MappedText) {
        for c in text.chars.iter().filter(|c| c.verbatim) {
            let mut buffer = [0; 4];
            assert_eq!(
                &source.as_bytes()[c.host_start..c.host_start + c.host_len],
                c.ch.encode_utf8(&mut buffer).as_bytes()
            );
        }
    }

    #[test]
    fn plain_and_prefixed_quotes() {
        assert_eq!(value("'a{{ b }}'").text(), "a{{ b }}");
        assert_eq!(value("u\"x\"").text(), "x");
        assert_eq!(value("\"\"").text(), "");
        assert_eq!(value("''''''").text(), "");
        assert_eq!(value("\"\"\"a\"b\"\"\"").text(), "a\"b");
        let text = value("'''x'''");
        assert_eq!(text.chars[0].host_start, 3);
    }

    #[test]
    fn escapes_decode_and_map_to_their_backslash() {
        let source = r#""a\nb\t\\\'\"\x41\u00e9\U0001F600\101\0\q""#;
        let text = value(source);
        assert_eq!(text.text(), "a\nb\t\\'\"A\u{e9}\u{1F600}A\0\\q");
        assert_verbatim_chars_match(source, &text);
        let newline = &text.chars[1];
        assert_eq!((newline.host_start, newline.host_len), (2, 2));
        let e_acute = &text.chars[8];
        assert_eq!(
            (e_acute.ch, e_acute.host_start, e_acute.host_len),
            ('é', 17, 6)
        );
    }

    #[test]
    fn named_escapes_ignore_case() {
        let text = value(r#""\N{EM DASH}\N{latin small letter e with acute}""#);
        assert_eq!(text.text(), "\u{2014}\u{e9}");
        assert_eq!((text.chars[1].host_start, text.chars[1].host_len), (12, 35));
        // Aliases and abbreviations, as Python's `unicodedata` knows them.
        assert_eq!(value(r#""\N{LF}\N{NEW LINE}""#).text(), "\n\n");
    }

    #[test]
    fn a_backslash_before_a_line_break_joins_the_lines() {
        assert_eq!(value("'a\\\nb'").text(), "ab");
        assert_eq!(value("'a\\\r\nb'").text(), "ab");
        assert_eq!(value("r'a\\\nb'").text(), "a\\\nb");
    }

    #[test]
    fn source_line_breaks_read_as_newlines() {
        let source = "'''a\r\nb\rc'''";
        let text = value(source);
        assert_eq!(text.text(), "a\nb\nc");
        assert_eq!((text.chars[1].host_start, text.chars[1].host_len), (4, 2));
        assert_eq!((text.chars[3].host_start, text.chars[3].host_len), (7, 1));
    }

    #[test]
    fn raw_strings_keep_backslashes() {
        let source = r#"R"a\n\"{{ x }}""#;
        let text = value(source);
        assert_eq!(text.text(), r#"a\n\"{{ x }}"#);
        assert!(text.chars.iter().all(|c| c.verbatim));
        assert_verbatim_chars_match(source, &text);
    }

    #[test]
    fn bytes_and_formatted_strings_are_not_text() {
        for source in ["b'x'", "Rb'x'", "f'{x}'", "rF'x'", "t'{x}'"] {
            assert_eq!(
                decode(source, 0, source.len()),
                Ok(Err(NotText::NotStr)),
                "{source}"
            );
        }
    }

    #[test]
    fn bad_escapes_are_errors_with_their_offset() {
        for (source, message) in [
            (r#""ab\x4""#, "truncated \\xXX escape"),
            (r#""ab\u12""#, "truncated \\uXXXX escape"),
            (r#""ab\U00110000""#, "illegal Unicode character"),
            (
                r#""ab\N{NOT A REAL NAME}""#,
                "unknown Unicode character name",
            ),
            (r#""ab\N""#, "malformed \\N character escape"),
        ] {
            let error = decode(source, 0, source.len()).expect_err(source);
            assert_eq!((error.offset, error.message.as_str()), (3, message));
        }
    }

    #[test]
    fn lone_surrogates_have_no_utf8_text() {
        let source = r#""\ud800""#;
        assert_eq!(decode(source, 0, source.len()), Ok(Err(NotText::Surrogate)));
    }
}
