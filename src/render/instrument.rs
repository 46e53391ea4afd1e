//! Source maps for renders. Before rendering, every `{{ expression }}` and every run of
//! literal text is tagged with invisible markers (Unicode noncharacters); after rendering
//! the markers are stripped again and turned into a map from output bytes to the template
//! place that wrote them. That is how a divergence in the output is traced back to the
//! expression that caused it. Output that stand-ins wrote (see
//! [`super::stand_ins::StandInTexts`]) is marked too, so that the stable count leaves it out.

use super::captures::{FactsReader, SourceFacts};
use minijinja::machinery::{tokenize, Token};
use minijinja::syntax::SyntaxConfig;
use std::collections::HashMap;
use std::fmt::Write;
use std::ops::Range;
use std::sync::{Arc, Mutex};

const EXPR_OPEN: char = '\u{FDD0}';
const EXPR_CLOSE: char = '\u{FDD1}';
const TEXT_MARK: char = '\u{FDD2}';
const END_ID: char = '\u{FDD3}';
/// Around output that a stand-in wrote (the formatter of the marked environment writes
/// them): `STAND_IN_OPEN 0 END_ID … STAND_IN_CLOSE 0 END_ID`.
const STAND_IN_OPEN: char = '\u{FDD4}';
const STAND_IN_CLOSE: char = '\u{FDD5}';

pub const OPEN_FN: &str = "__prefixlint_open";
pub const CLOSE_FN: &str = "__prefixlint_close";
pub const TEXT_FN: &str = "__prefixlint_text";

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum OriginKind {
    Expression,
    Text,
}

/// A place in a template source that writes output.
#[derive(Debug, Clone)]
pub struct Origin {
    /// The template's name in the environment (its project-relative path).
    pub template: Arc<str>,
    /// Byte range in the original (un-instrumented) source.
    pub span: Range<usize>,
    pub kind: OriginKind,
    /// The source there (an expression tag, or the text run), for messages and classification.
    pub text: Box<str>,
    /// 1-based line and column of the span's start.
    pub line: usize,
    pub column: usize,
}

/// All origins of one render session, shared by the loader that instruments includes.
/// Ids only grow; a checked template's origins are dropped with [`OriginTable::forget`], so
/// a run over many templates holds the origins of the templates in flight (and includes).
#[derive(Debug, Default)]
pub struct OriginTable {
    origins: Mutex<Origins>,
}

#[derive(Debug, Default)]
struct Origins {
    next: usize,
    by_id: HashMap<usize, Origin>,
    by_template: HashMap<Arc<str>, Vec<usize>>,
}

impl OriginTable {
    pub(crate) fn register(&self, origin: Origin) -> usize {
        let mut origins = self.origins.lock().unwrap_or_else(|e| e.into_inner());
        let id = origins.next;
        origins.next += 1;
        origins
            .by_template
            .entry(origin.template.clone())
            .or_default()
            .push(id);
        origins.by_id.insert(id, origin);
        id
    }

    pub fn get(&self, id: usize) -> Option<Origin> {
        self.origins
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .by_id
            .get(&id)
            .cloned()
    }

    /// Drops the origins of one template (its text runs and expressions, which hold its
    /// source): called when the template itself is dropped from the environment.
    pub fn forget(&self, template: &str) {
        let mut origins = self.origins.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(ids) = origins.by_template.remove(template) {
            for id in ids {
                origins.by_id.remove(&id);
            }
        }
    }
}

pub fn marker(kind: char, id: u32) -> String {
    format!("{kind}{id}{END_ID}")
}

/// The marker as [`marker`] writes it, as a template value, without a heap allocation
/// (kind, at most 10 digits, end: 16 bytes, which minijinja keeps inline).
fn marker_value(kind: char, id: u32) -> minijinja::Value {
    let mut buf = [0u8; 16];
    let mut at = kind.encode_utf8(&mut buf).len();
    let mut digits = [0u8; 10];
    let mut count = 0;
    let mut rest = id;
    loop {
        digits[count] = b'0' + (rest % 10) as u8;
        count += 1;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    for &digit in digits[..count].iter().rev() {
        buf[at] = digit;
        at += 1;
    }
    at += END_ID.encode_utf8(&mut buf[at..]).len();
    minijinja::Value::from(std::str::from_utf8(&buf[..at]).unwrap_or_default())
}

/// [`open_marker`], [`close_marker`] and [`text_marker`] as the marker functions return them.
pub fn open_marker_value(id: u32) -> minijinja::Value {
    marker_value(EXPR_OPEN, id)
}
pub fn close_marker_value(id: u32) -> minijinja::Value {
    marker_value(EXPR_CLOSE, id)
}
pub fn text_marker_value(id: u32) -> minijinja::Value {
    marker_value(TEXT_MARK, id)
}
pub fn open_marker(id: u32) -> String {
    marker(EXPR_OPEN, id)
}
pub fn close_marker(id: u32) -> String {
    marker(EXPR_CLOSE, id)
}
pub fn text_marker(id: u32) -> String {
    marker(TEXT_MARK, id)
}

/// Rewrites `source` so that its render carries origin markers. Whitespace control is kept
/// exactly: the `-`/`+` of a `{{-`/`-}}` move to the outer marker tags, and text markers sit
/// before the first non-blank character of a text run, which no trim rule touches.
/// Returns `None` when the source does not lex (the plain render reports the error).
/// `shown` is the text as the user wrote it, for origins' text: `source` may be rewritten
/// (see [`super::compat`]), always to the same length.
pub fn instrument(
    source: &str,
    shown: &str,
    template: &Arc<str>,
    syntax: &SyntaxConfig,
    table: &OriginTable,
) -> Option<String> {
    instrument_reading(source, shown, template, syntax, table, None)
}

/// [`instrument`], and what [`super::captures`] reads in the source, from the same tokens
/// (a source that does not lex reads as [`SourceFacts::unreadable`]).
pub fn instrument_with_facts(
    source: &str,
    shown: &str,
    template: &Arc<str>,
    syntax: &SyntaxConfig,
    table: &OriginTable,
) -> (Option<String>, SourceFacts) {
    let mut reader = FactsReader::default();
    match instrument_reading(source, shown, template, syntax, table, Some(&mut reader)) {
        Some(marked) => (Some(marked), reader.finish()),
        None => (None, SourceFacts::unreadable()),
    }
}

fn instrument_reading<'s>(
    source: &'s str,
    shown: &str,
    template: &Arc<str>,
    syntax: &SyntaxConfig,
    table: &OriginTable,
    mut reader: Option<&mut FactsReader<'s>>,
) -> Option<String> {
    let shown = if shown.len() == source.len() {
        shown
    } else {
        source
    };
    let (var_start, var_end) = syntax.variable_delimiters();
    let mut out = String::with_capacity(source.len() * 2);
    let mut copied = 0;
    let mut open_var: Option<usize> = None;
    let base = source.as_ptr() as usize;
    let mut lines = LineCursor::new(source);
    for item in tokenize(source, false, syntax.clone()) {
        let (token, span) = item.ok()?;
        match token {
            Token::TemplateData(data) => {
                let data_offset = (data.as_ptr() as usize).wrapping_sub(base);
                // Raw blocks come out as data that starts past their span: leave them be.
                if data_offset != span.start_offset as usize {
                    continue;
                }
                let Some(first) = data.find(|c: char| !c.is_whitespace()) else {
                    continue;
                };
                let at = data_offset + first;
                let (line, column) = lines.line_col(at);
                let id = table.register(Origin {
                    template: template.clone(),
                    span: at..data_offset + data.len(),
                    kind: OriginKind::Text,
                    text: shown[at..data_offset + data.len()].into(),
                    line,
                    column,
                });
                out.push_str(&source[copied..at]);
                // Written in place: a `format!` allocated a string per origin.
                let _ = write!(out, "{var_start} {TEXT_FN}({id}) {var_end}");
                copied = at;
            }
            Token::VariableStart => open_var = Some(span.start_offset as usize),
            Token::VariableEnd => {
                let Some(start) = open_var.take() else {
                    if let Some(reader) = reader.as_deref_mut() {
                        reader.push(token);
                    }
                    continue;
                };
                let end = span.end_offset as usize;
                let tag = &source[start..end];
                let inner_start =
                    var_start.len() + usize::from(tag[var_start.len()..].starts_with(['-', '+']));
                let ws_open = &tag[var_start.len()..inner_start];
                let before_end = tag.len() - var_end.len();
                let ws_close = if tag[..before_end].ends_with(['-', '+']) {
                    &tag[before_end - 1..before_end]
                } else {
                    ""
                };
                let inner = &tag[inner_start..before_end - ws_close.len()];
                let (line, column) = lines.line_col(start);
                let id = table.register(Origin {
                    template: template.clone(),
                    span: start..end,
                    kind: OriginKind::Expression,
                    text: shown[start..end].into(),
                    line,
                    column,
                });
                out.push_str(&source[copied..start]);
                let _ = write!(
                    out,
                    "{var_start}{ws_open} {OPEN_FN}({id}) {var_end}{var_start}{inner}{var_end}{var_start} {CLOSE_FN}({id}) {ws_close}{var_end}"
                );
                copied = end;
            }
            _ => {}
        }
        if let Some(reader) = reader.as_deref_mut() {
            reader.push(token);
        }
    }
    out.push_str(&source[copied..]);
    Some(out)
}

/// [`crate::source::line_col`] for offsets met in increasing order (the lexer's tokens):
/// each counts the lines from the previous one on, not from the start of the source,
/// which made instrumenting quadratic in the template's length.
struct LineCursor<'s> {
    text: &'s str,
    at: usize,
    line: usize,
    line_start: usize,
}

impl<'s> LineCursor<'s> {
    fn new(text: &'s str) -> Self {
        LineCursor {
            text,
            at: 0,
            line: 1,
            line_start: 0,
        }
    }

    fn line_col(&mut self, offset: usize) -> (usize, usize) {
        let offset = crate::source::floor_char_boundary(self.text, offset.min(self.text.len()));
        if offset < self.at {
            return crate::source::line_col(self.text, offset);
        }
        let between = &self.text.as_bytes()[self.at..offset];
        self.line += memchr::memchr_iter(b'\n', between).count();
        if let Some(i) = memchr::memrchr(b'\n', between) {
            self.line_start = self.at + i + 1;
        }
        self.at = offset;
        let column = self.text[self.line_start..offset].chars().count() + 1;
        (self.line, column)
    }
}

/// One marker found in a render, at a byte offset of the clean output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkEvent {
    Open(u32),
    Close(u32),
    Text(u32),
}

/// A render with its markers removed, and where each marker stood.
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    pub events: Vec<(usize, MarkEvent)>,
    /// Byte ranges of the clean output that stand-ins wrote (synthesized sample values,
    /// stand-in objects and filters, include stand-ins), in order, not overlapping: they
    /// are the same in every render because nobody gave a real value, so they are not
    /// stable content. A renderer that builds its map itself pushes the ranges of its
    /// stand-ins' output here.
    pub stand_ins: Vec<Range<usize>>,
}

impl SourceMap {
    /// The origin that wrote the output byte at `offset`: the innermost expression open
    /// there (an expression that ends exactly at `offset` still counts, since a longer
    /// value there is what moved the text), else the text run that holds it.
    pub fn origin_at(&self, offset: usize) -> Option<(MarkEvent, Vec<u32>)> {
        let mut stack: Vec<u32> = Vec::new();
        let mut last_text: Option<u32> = None;
        let mut last_closed: Option<u32> = None;
        for &(at, event) in &self.events {
            if at > offset {
                break;
            }
            match event {
                MarkEvent::Open(id) => stack.push(id),
                MarkEvent::Close(id) if at < offset => {
                    if let Some(pos) = stack.iter().rposition(|&open| open == id) {
                        stack.truncate(pos);
                    }
                    last_closed = Some(id);
                    last_text = None;
                }
                MarkEvent::Close(_) => {}
                MarkEvent::Text(id) => {
                    last_text = Some(id);
                    last_closed = None;
                }
            }
        }
        if let Some(&innermost) = stack.last() {
            return Some((MarkEvent::Open(innermost), stack));
        }
        match (last_text, last_closed) {
            (Some(id), _) => Some((MarkEvent::Text(id), Vec::new())),
            (None, Some(id)) => Some((MarkEvent::Close(id), Vec::new())),
            (None, None) => None,
        }
    }

    /// Output byte ranges written by expression `id`, in order of occurrence.
    pub fn expression_ranges(&self, id: u32) -> Vec<Range<usize>> {
        let mut ranges = Vec::new();
        let mut starts = Vec::new();
        for &(at, event) in &self.events {
            match event {
                MarkEvent::Open(open) if open == id => starts.push(at),
                MarkEvent::Close(close) if close == id => {
                    if let Some(start) = starts.pop() {
                        ranges.push(start..at);
                    }
                }
                _ => {}
            }
        }
        ranges
    }
}

/// `text` as the marked environment prints it: the parts that are stand-in output (see
/// [`super::stand_ins::stand_in_ranges`]) between stand-in markers.
pub fn with_stand_in_markers(text: &str) -> std::borrow::Cow<'_, str> {
    // Most prints of the marked render are the origin markers themselves: one marker
    // (kind, at most 10 digits, end) holds no stand-in.
    if text.len() <= 16 && is_marker(text) {
        return std::borrow::Cow::Borrowed(text);
    }
    let ranges = super::stand_ins::stand_in_ranges(text);
    if ranges.is_empty() {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + ranges.len() * 12);
    let mut copied = 0;
    for range in ranges {
        out.push_str(&text[copied..range.start]);
        out.push_str(&marker(STAND_IN_OPEN, 0));
        out.push_str(&text[range.clone()]);
        out.push_str(&marker(STAND_IN_CLOSE, 0));
        count_marker();
        count_marker();
        copied = range.end;
    }
    out.push_str(&text[copied..]);
    std::borrow::Cow::Owned(out)
}

/// One origin marker as [`marker`] writes it.
fn is_marker(text: &str) -> bool {
    let mut chars = text.chars();
    matches!(chars.next(), Some(EXPR_OPEN | EXPR_CLOSE | TEXT_MARK))
        && chars.next_back() == Some(END_ID)
        && chars.as_str().bytes().all(|b| b.is_ascii_digit())
}

// `strip_markers` looks for these bytes.
const _: () = assert!(
    EXPR_OPEN as u32 == 0xFDD0
        && EXPR_CLOSE as u32 == 0xFDD1
        && TEXT_MARK as u32 == 0xFDD2
        && STAND_IN_OPEN as u32 == 0xFDD4
        && STAND_IN_CLOSE as u32 == 0xFDD5
);

thread_local! {
    /// Markers the marker functions have written on this thread (renders are synchronous).
    static WRITTEN: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Counts one marker written (the marker functions call it).
pub fn count_marker() {
    WRITTEN.with(|w| w.set(w.get() + 1));
}

/// The markers written on this thread so far: the difference over a render is how many
/// that render's marker functions wrote.
pub fn markers_written() -> usize {
    WRITTEN.with(|w| w.get())
}

/// [`strip_markers`] for a render whose text is taken from the marked one: `None` unless
/// every marker is well formed (kind, decimal id, end) and there are exactly `written` of
/// them, so no marker-like text of a sample's or the template's own stands in the output.
pub fn strip_written_markers(marked: &str, written: usize) -> Option<(String, SourceMap)> {
    let (text, map, markers, well_formed) = strip(marked);
    (well_formed && markers == written).then_some((text, map))
}

/// Splits a marked render into clean text and its source map.
pub fn strip_markers(marked: &str) -> (String, SourceMap) {
    let (text, map, _, _) = strip(marked);
    (text, map)
}

/// [`strip_markers`], how many markers there were, and whether every marker had a decimal
/// id and its end (and every stand-in marker its pair).
fn strip(marked: &str) -> (String, SourceMap, usize, bool) {
    // The markers are U+FDD0..U+FDD2 and U+FDD4..U+FDD5 (UTF-8 `EF B7 90..92`, `94..95`):
    // find their lead byte with memchr and copy the clean runs between them whole.
    let bytes = marked.as_bytes();
    let mut text = String::with_capacity(marked.len());
    let mut events = Vec::new();
    let mut stand_ins: Vec<Range<usize>> = Vec::new();
    let mut open_stand_ins: Vec<usize> = Vec::new();
    let mut markers = 0;
    let mut copied = 0;
    let mut at = 0;
    let mut well_formed = true;
    while let Some(found) = memchr::memchr(0xEF, &bytes[at..]) {
        let lead = at + found;
        let kind = match bytes.get(lead + 1..lead + 3) {
            Some([0xB7, kind @ (0x90..=0x92 | 0x94..=0x95)]) => *kind,
            _ => {
                at = lead + 1;
                continue;
            }
        };
        markers += 1;
        text.push_str(&marked[copied..lead]);
        let rest = &marked[lead + 3..];
        let (digits, next) = match rest.find(END_ID) {
            Some(end) => (&rest[..end], lead + 3 + end + END_ID.len_utf8()),
            None => {
                well_formed = false;
                (rest, marked.len())
            }
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            well_formed = false;
        }
        let id = digits.chars().fold(0u32, |id, d| {
            id.wrapping_mul(10)
                .wrapping_add(d.to_digit(10).unwrap_or(0))
        });
        let event = match kind {
            0x90 => MarkEvent::Open(id),
            0x91 => MarkEvent::Close(id),
            0x92 => MarkEvent::Text(id),
            0x94 => {
                open_stand_ins.push(text.len());
                copied = next;
                at = next;
                continue;
            }
            _ => {
                match open_stand_ins.pop() {
                    Some(start) => stand_ins.push(start..text.len()),
                    None => well_formed = false,
                }
                copied = next;
                at = next;
                continue;
            }
        };
        events.push((text.len(), event));
        copied = next;
        at = next;
    }
    text.push_str(&marked[copied..]);
    well_formed &= open_stand_ins.is_empty();
    let map = SourceMap {
        events,
        stand_ins: super::stand_ins::merge(stand_ins),
    };
    (text, map, markers, well_formed)
}

#[cfg(test)]
mod strip_tests {
    use super::*;

    /// The char-by-char reading `strip_markers` replaced.
    fn reference(marked: &str) -> (String, Vec<(usize, MarkEvent)>) {
        let mut text = String::new();
        let mut events = Vec::new();
        let mut chars = marked.chars();
        while let Some(c) = chars.next() {
            let kind = match c {
                EXPR_OPEN | EXPR_CLOSE | TEXT_MARK | STAND_IN_OPEN | STAND_IN_CLOSE => c,
                _ => {
                    text.push(c);
                    continue;
                }
            };
            let mut id: u32 = 0;
            for d in chars.by_ref() {
                if d == END_ID {
                    break;
                }
                id = id
                    .wrapping_mul(10)
                    .wrapping_add(d.to_digit(10).unwrap_or(0));
            }
            let event = match kind {
                EXPR_OPEN => MarkEvent::Open(id),
                EXPR_CLOSE => MarkEvent::Close(id),
                TEXT_MARK => MarkEvent::Text(id),
                _ => continue,
            };
            events.push((text.len(), event));
        }
        (text, events)
    }

    /// Stand-in markers become ranges of the clean text, merged; the written count holds
    /// them too, and an unpaired one makes the render's markers untrusted.
    #[test]
    fn stand_in_markers_become_ranges() {
        let open = marker(STAND_IN_OPEN, 0);
        let close = marker(STAND_IN_CLOSE, 0);
        let marked = format!(
            "a{}{open}tool 1{close}, {open}tool 2{close}{}\n{open}{open}x{close}yz{close}",
            open_marker(3),
            close_marker(3)
        );
        let (text, map) = strip_written_markers(&marked, 10).unwrap();
        assert_eq!(text, "atool 1, tool 2\nxyz");
        assert_eq!(map.stand_ins, vec![1..7, 9..15, 16..19]);
        assert_eq!(map.events.len(), 2);
        assert!(strip_written_markers(&marked, 2).is_none());
        assert!(strip_written_markers(&format!("a{close}b"), 1).is_none());
        assert!(strip_written_markers(&format!("a{open}b"), 1).is_none());
    }

    /// The cursor gives `source::line_col`'s answer at every offset, visited in order,
    /// with repeats and a step back.
    #[test]
    fn line_cursor_equals_line_col() {
        let text = "a\n\nbé東\n  {{ x }}\n\u{1F600}z\n";
        let mut cursor = LineCursor::new(text);
        let mut offsets: Vec<usize> = (0..=text.len() + 2).collect();
        offsets.extend([7, 7, 3, text.len(), 0]);
        for offset in offsets {
            assert_eq!(
                cursor.line_col(offset),
                crate::source::line_col(text, offset),
                "{offset}"
            );
        }
    }

    #[test]
    fn markers_are_told_from_printed_values() {
        for id in [0, 7, 12345, u32::MAX] {
            assert!(is_marker(&open_marker(id)));
            assert!(is_marker(&text_marker(id)));
        }
        for text in [
            "",
            "tools 1",
            "\u{FDD0}12",
            "\u{FDD0}1x\u{FDD3}",
            "a\u{FDD0}1\u{FDD3}",
        ] {
            assert!(!is_marker(text), "{text:?}");
        }
    }

    #[test]
    fn marker_value_is_the_marker() {
        for id in [0, 1, 9, 10, 99, 12345, u32::MAX] {
            for kind in [EXPR_OPEN, EXPR_CLOSE, TEXT_MARK] {
                assert_eq!(
                    marker_value(kind, id).as_str(),
                    Some(marker(kind, id).as_str())
                );
            }
        }
    }

    #[test]
    fn strip_markers_equals_the_char_by_char_reading() {
        let pieces = [
            "a",
            "é",
            "東",
            "\u{FDD0}",
            "\u{FDD1}",
            "\u{FDD2}",
            "\u{FDD3}",
            "\u{FDD4}",
            "\u{FDD5}",
            "7",
            "12",
            "\u{EFFF}",
            "\n",
            "\u{1F600}",
        ];
        let mut seed: u64 = 7;
        for _ in 0..5000 {
            let mut marked = String::new();
            for _ in 0..(seed % 17) {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                marked.push_str(pieces[(seed >> 33) as usize % pieces.len()]);
            }
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let (text, map) = strip_markers(&marked);
            let (want_text, want_events) = reference(&marked);
            assert_eq!(text, want_text, "{marked:?}");
            assert_eq!(
                format!("{:?}", map.events),
                format!("{want_events:?}"),
                "{marked:?}"
            );
        }
    }
}
