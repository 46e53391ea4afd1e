//! A YAML scalar's text as the application reads it, with a [`Segment`] for every stretch
//! of it, so each text byte maps back to the host bytes that wrote it: block scalars (`|`,
//! `>`, indentation and chomping indicators), plain and quoted scalars (folded line breaks,
//! `''`, backslash escapes).
//!
//! The parser already decodes the value; this module decodes it again from the host bytes
//! to learn where each byte came from. The caller compares the two and falls back to a
//! coarse map when they differ, so a corner of YAML this misreads costs column precision,
//! never the text.

use crate::host::Segment;

/// How a scalar is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
    Folded,
}

/// The decoded text and where it came from.
#[derive(Debug, Default)]
pub struct Decoded {
    pub text: String,
    pub segments: Vec<Segment>,
}

impl Decoded {
    /// Appends host bytes copied as they are.
    fn copy(&mut self, host: &str, host_start: usize, host_end: usize) {
        if host_end <= host_start {
            return;
        }
        let text_start = self.text.len();
        self.text.push_str(&host[host_start..host_end]);
        let len = host_end - host_start;
        if let Some(last) = self.segments.last_mut() {
            let contiguous = last.text_len == last.host_len
                && last.text_start + last.text_len == text_start
                && last.host_start + last.host_len == host_start;
            if contiguous {
                last.text_len += len;
                last.host_len += len;
                return;
            }
        }
        self.segments.push(Segment {
            text_start,
            text_len: len,
            host_start,
            host_len: len,
        });
    }

    /// Appends `produced`, decoded from the host bytes `host_start..host_start + host_len`.
    fn produce(&mut self, produced: &str, host_start: usize, host_len: usize) {
        let text_start = self.text.len();
        self.text.push_str(produced);
        self.segments.push(Segment {
            text_start,
            text_len: produced.len(),
            // A stretch of equal lengths would read as a verbatim copy: keep it distinct.
            host_start,
            host_len: if host_len == produced.len() {
                host_len + 1
            } else {
                host_len
            },
        });
    }
}

/// The lines of `host[start..end]`: `(content_start, content_end, break_end)`, where the
/// content excludes the line break (`\n` or `\r\n`) and `break_end` is past it.
fn lines(host: &str, start: usize, end: usize) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    let mut at = start;
    while at < end {
        let newline = host[at..end].find('\n').map(|i| at + i);
        match newline {
            Some(nl) => {
                let content_end = if nl > at && host.as_bytes()[nl - 1] == b'\r' {
                    nl - 1
                } else {
                    nl
                };
                out.push((at, content_end, nl + 1));
                at = nl + 1;
            }
            None => {
                out.push((at, end, end));
                at = end;
            }
        }
    }
    if start == end || host[start..end].ends_with('\n') {
        // A final empty line after the last break (the flow scalar's closing quote line).
        out.push((end, end, end));
    }
    out
}

fn is_blank(byte: u8) -> bool {
    byte == b' ' || byte == b'\t'
}

/// Decodes a scalar. `start..end` is, for flow scalars, the scalar with its quotes; for
/// block scalars, from the `|`/`>` indicator to the end of the host (the content ends at
/// the first less-indented line). `parent_indent` is the indentation of the block scalar's
/// parent node, which an explicit indentation indicator counts from.
pub fn decode(host: &str, start: usize, end: usize, style: Style, parent_indent: usize) -> Decoded {
    let mut decoded = match style {
        Style::Plain => flow(host, start, end, style),
        Style::SingleQuoted | Style::DoubleQuoted => flow(host, start + 1, end - 1, style),
        Style::Literal | Style::Folded => block(host, start, end, style, parent_indent),
    };
    // A produced stretch is kept one byte longer than its text so it never reads as a
    // copy; at the host's very end (a block scalar's last break, no newline after it) that
    // byte is not there: it stays inside the host, one byte shorter instead.
    for segment in &mut decoded.segments {
        if segment.host_start + segment.host_len > host.len() {
            segment.host_len = host.len().saturating_sub(segment.host_start);
            if segment.host_len == segment.text_len {
                segment.host_len = segment.host_len.saturating_sub(1);
            }
        }
    }
    decoded
}

/// Plain and quoted scalars: lines folded (one break is a space, `n` empty lines are `n`
/// breaks), inner lines trimmed, and the quoting style's escapes decoded.
fn flow(host: &str, start: usize, end: usize, style: Style) -> Decoded {
    let bytes = host.as_bytes();
    let mut out = Decoded::default();
    let all = lines(host, start, end);
    let last = all.len().saturating_sub(1);
    // Whether the previous line ended in an escaped line break (`\` before the break).
    let mut joined = false;
    let mut index = 0;
    while index < all.len() {
        let (mut from, mut to, _) = all[index];
        if index > 0 {
            while from < to && is_blank(bytes[from]) {
                from += 1;
            }
        }
        let escaped_break = style == Style::DoubleQuoted
            && index < last
            && to > from
            && bytes[to - 1] == b'\\'
            && backslashes_before(bytes, from, to - 1) % 2 == 0;
        if index < last && !escaped_break {
            while to > from
                && is_blank(bytes[to - 1])
                && !(style == Style::DoubleQuoted && to >= 2 && bytes[to - 2] == b'\\')
            {
                to -= 1;
            }
        }
        let content_end = if escaped_break { to - 1 } else { to };
        let _ = joined;
        if style == Style::DoubleQuoted {
            double_quoted_line(host, from, content_end, &mut out);
        } else if style == Style::SingleQuoted {
            single_quoted_line(host, from, content_end, &mut out);
        } else {
            out.copy(host, from, content_end);
        }
        if index == last {
            break;
        }
        if escaped_break {
            joined = true;
            index += 1;
            continue;
        }
        joined = false;
        // Count the empty lines up to the next line with content.
        let mut next = index + 1;
        while next < last && host[all[next].0..all[next].1].bytes().all(is_blank) {
            next += 1;
        }
        let empty = next - index - 1;
        if empty == 0 {
            let (_, content_end, break_end) = all[index];
            out.produce(" ", content_end, break_end - content_end);
        } else {
            for line in &all[index + 1..next] {
                out.produce("\n", line.1, (line.2 - line.1).max(1));
            }
        }
        index = next;
    }
    out
}

fn backslashes_before(bytes: &[u8], from: usize, at: usize) -> usize {
    let mut count = 0;
    let mut i = at;
    while i > from && bytes[i - 1] == b'\\' {
        count += 1;
        i -= 1;
    }
    count
}

fn single_quoted_line(host: &str, from: usize, to: usize, out: &mut Decoded) {
    let mut run = from;
    let mut at = from;
    while at < to {
        if host[at..to].starts_with("''") {
            out.copy(host, run, at);
            out.produce("'", at, 2);
            at += 2;
            run = at;
        } else {
            at += 1;
        }
    }
    out.copy(host, run, to);
}

fn double_quoted_line(host: &str, from: usize, to: usize, out: &mut Decoded) {
    let bytes = host.as_bytes();
    let mut run = from;
    let mut at = from;
    while at < to {
        if bytes[at] != b'\\' || at + 1 >= to {
            at += 1;
            continue;
        }
        out.copy(host, run, at);
        let (produced, len) = escape(&host[at + 1..to]);
        match produced {
            Some(c) => {
                let mut buffer = [0u8; 4];
                out.produce(c.encode_utf8(&mut buffer), at, len + 1);
            }
            // An invalid escape: the parser refuses it; keep the bytes.
            None => out.copy(host, at, at + 1 + len),
        }
        at += 1 + len;
        run = at;
    }
    out.copy(host, run, to);
}

/// The character a double-quoted escape stands for (after the backslash), and the bytes it
/// takes.
fn escape(after: &str) -> (Option<char>, usize) {
    let Some(first) = after.chars().next() else {
        return (None, 0);
    };
    let simple = match first {
        '0' => Some('\0'),
        'a' => Some('\u{7}'),
        'b' => Some('\u{8}'),
        't' | '\t' => Some('\t'),
        'n' => Some('\n'),
        'v' => Some('\u{b}'),
        'f' => Some('\u{c}'),
        'r' => Some('\r'),
        'e' => Some('\u{1b}'),
        ' ' => Some(' '),
        '"' => Some('"'),
        '/' => Some('/'),
        '\\' => Some('\\'),
        'N' => Some('\u{85}'),
        '_' => Some('\u{a0}'),
        'L' => Some('\u{2028}'),
        'P' => Some('\u{2029}'),
        _ => None,
    };
    if let Some(c) = simple {
        return (Some(c), first.len_utf8());
    }
    let digits = match first {
        'x' => 2,
        'u' => 4,
        'U' => 8,
        _ => return (None, first.len_utf8()),
    };
    let hex = after.get(1..1 + digits);
    match hex
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .and_then(char::from_u32)
    {
        Some(c) => (Some(c), 1 + digits),
        None => (None, 1),
    }
}

/// `|` and `>` scalars.
fn block(host: &str, start: usize, end: usize, style: Style, parent_indent: usize) -> Decoded {
    let bytes = host.as_bytes();
    let mut out = Decoded::default();
    // The header: indicators up to a blank, a comment or the line break.
    let header_end = host[start..end].find('\n').map_or(end, |i| start + i + 1);
    let header = &host[start + 1..header_end];
    let mut chomp = '=';
    let mut explicit_indent = None;
    for c in header.chars() {
        match c {
            '+' | '-' => chomp = c,
            '1'..='9' => explicit_indent = c.to_digit(10).map(|d| d as usize),
            _ => break,
        }
    }
    let all: Vec<(usize, usize, usize)> = lines(host, header_end, end)
        .into_iter()
        .filter(|line| line.0 < end)
        .collect();
    let indent_of = |line: &(usize, usize, usize)| {
        host[line.0..line.1]
            .bytes()
            .take_while(|b| *b == b' ')
            .count()
    };
    let is_empty = |line: &(usize, usize, usize)| host[line.0..line.1].bytes().all(is_blank);
    let indent = match explicit_indent {
        Some(m) => parent_indent + m,
        None => all.iter().find(|line| !is_empty(line)).map_or(0, indent_of),
    };
    // The content: lines up to the first one with content that is less indented.
    let mut content: Vec<(usize, usize, usize)> = Vec::new();
    for line in &all {
        if !is_empty(line) && indent_of(line) < indent {
            break;
        }
        if is_empty(line) && indent_of(line) > indent && indent > 0 {
            // A more-indented blank line keeps its spaces past the indentation.
        }
        content.push(*line);
    }
    // Trailing empty lines belong to the chomping, not the text.
    let mut last_text = content.len();
    while last_text > 0
        && is_empty(&content[last_text - 1])
        && indent_of(&content[last_text - 1]) <= indent
    {
        last_text -= 1;
    }
    let text_lines = &content[..last_text];
    let trailing = &content[last_text..];
    let line_text = |line: &(usize, usize, usize)| -> (usize, usize) {
        let from = (line.0 + indent).min(line.1);
        (from, line.1)
    };
    let more_indented = |line: &(usize, usize, usize)| -> bool {
        line_text(line).0 < line.1 && is_blank(bytes[line_text(line).0])
    };
    let mut index = 0;
    while index < text_lines.len() {
        let line = text_lines[index];
        let (from, to) = line_text(&line);
        out.copy(host, from, to);
        let is_last = index + 1 == text_lines.len();
        if is_last {
            // The final line break, kept unless chomping strips it.
            if chomp != '-' {
                out.produce("\n", line.1, (line.2 - line.1).max(1));
                if line.2 == line.1 {
                    // No break in the host (end of file): it is still a break in the text.
                }
            }
            break;
        }
        if style == Style::Literal {
            out.produce("\n", line.1, (line.2 - line.1).max(1));
            index += 1;
            continue;
        }
        // Folded: find the next line with text.
        let mut next = index + 1;
        while next < text_lines.len() && is_empty(&text_lines[next]) {
            next += 1;
        }
        let empty = next - index - 1;
        let keep_breaks = more_indented(&line) || more_indented(&text_lines[next]);
        if keep_breaks {
            out.produce("\n", line.1, (line.2 - line.1).max(1));
        } else if empty == 0 {
            out.produce(" ", line.1, (line.2 - line.1).max(1));
        }
        for empty_line in &text_lines[index + 1..next] {
            let (from, to) = line_text(empty_line);
            out.copy(host, from, to);
            out.produce("\n", empty_line.1, (empty_line.2 - empty_line.1).max(1));
        }
        index = next;
    }
    if chomp == '+' {
        if text_lines.is_empty() {
            // Nothing but breaks.
        }
        for line in trailing {
            out.produce("\n", line.1, (line.2 - line.1).max(1));
        }
    }
    if text_lines.is_empty() && chomp != '+' {
        out.text.clear();
        out.segments.clear();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::HostMap;

    /// Each text byte that was copied maps to the same byte in the host.
    fn assert_copied_bytes_match(host: &str, decoded: &Decoded) {
        let map = HostMap::new(decoded.segments.clone());
        for segment in &decoded.segments {
            if segment.text_len == segment.host_len {
                for i in 0..segment.text_len {
                    let at = map.host_offset(segment.text_start + i);
                    assert_eq!(
                        host.as_bytes()[at],
                        decoded.text.as_bytes()[segment.text_start + i],
                        "byte {} of {:?}",
                        segment.text_start + i,
                        decoded.text
                    );
                }
            }
        }
        let covered: usize = decoded.segments.iter().map(|s| s.text_len).sum();
        assert_eq!(covered, decoded.text.len());
    }

    fn block_of(host: &str, style: Style) -> String {
        let start = host.find(['|', '>']).unwrap();
        let decoded = decode(host, start, host.len(), style, 0);
        assert_copied_bytes_match(host, &decoded);
        decoded.text
    }

    #[test]
    fn literal_blocks_keep_lines_and_chomp() {
        assert_eq!(
            block_of("k: |\n  a\n   b\n\n  c\n\n\nn: 1\n", Style::Literal),
            "a\n b\n\nc\n"
        );
        assert_eq!(block_of("k: |-\n  a\n  b\n\n", Style::Literal), "a\nb");
        assert_eq!(block_of("k: |+\n  a\n\n\n", Style::Literal), "a\n\n\n");
        assert_eq!(block_of("k: |2\n    a\n  b\n", Style::Literal), "  a\nb\n");
        assert_eq!(
            block_of("k: | # note\n  a {{ x }}\n", Style::Literal),
            "a {{ x }}\n"
        );
        assert_eq!(block_of("k: |\n  a", Style::Literal), "a\n");
    }

    #[test]
    fn folded_blocks_join_lines() {
        assert_eq!(
            block_of("k: >\n  a\n  b\n\n  c\n", Style::Folded),
            "a b\nc\n"
        );
        assert_eq!(
            block_of("k: >-\n  a\n    x\n  b\n", Style::Folded),
            "a\n  x\nb"
        );
    }

    fn flow_of(host: &str, style: Style) -> String {
        let decoded = decode(host, 0, host.len(), style, 0);
        assert_copied_bytes_match(host, &decoded);
        decoded.text
    }

    #[test]
    fn quoted_scalars_decode_escapes_and_fold() {
        assert_eq!(
            flow_of(r#""a\n{{ x }}\t\u00e9""#, Style::DoubleQuoted),
            "a\n{{ x }}\té"
        );
        assert_eq!(
            flow_of("\"a  \n   b\n\n  c\"", Style::DoubleQuoted),
            "a b\nc"
        );
        assert_eq!(flow_of("\"a\\\n   b\"", Style::DoubleQuoted), "ab");
        assert_eq!(
            flow_of("'it''s {{ x }}'", Style::SingleQuoted),
            "it's {{ x }}"
        );
        assert_eq!(flow_of("a {{ b }}\n  c", Style::Plain), "a {{ b }} c");
    }

    #[test]
    fn escapes_map_to_the_backslash() {
        let host = r#""ab\ncd""#;
        let decoded = decode(host, 0, host.len(), Style::DoubleQuoted, 0);
        let map = HostMap::new(decoded.segments);
        assert_eq!(decoded.text, "ab\ncd");
        assert_eq!(map.host_offset(2), 3);
        assert_eq!(map.host_offset(3), 5);
    }
}
