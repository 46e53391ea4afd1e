//! Text that remembers where each character came from in the host file: the value of a
//! Python string expression, carried through the string functions the code applies
//! (`textwrap.dedent`, `inspect.cleandoc`, `str.strip`), each as CPython 3.11 computes it.

use crate::host::{HostMap, Segment};

/// One character of a string's value and the host bytes that produced it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct MappedChar {
    pub ch: char,
    pub host_start: usize,
    pub host_len: usize,
    /// The host bytes are this character's own UTF-8 (not an escape, a normalized line
    /// break or an expanded tab).
    pub verbatim: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct MappedText {
    pub chars: Vec<MappedChar>,
}

/// `str.isspace()`: Rust's `char::is_whitespace` (Unicode White_Space) plus the four
/// information separators U+001C..U+001F, which Python counts as whitespace.
pub(super) fn is_python_space(ch: char) -> bool {
    ch.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&ch)
}

/// Which ends `strip`, `lstrip` and `rstrip` take characters from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StripEnds {
    Both,
    Start,
    End,
}

impl MappedText {
    pub fn push_verbatim(&mut self, ch: char, host_start: usize) {
        self.chars.push(MappedChar {
            ch,
            host_start,
            host_len: ch.len_utf8(),
            verbatim: true,
        });
    }

    pub fn push_decoded(&mut self, ch: char, host_start: usize, host_len: usize) {
        self.chars.push(MappedChar {
            ch,
            host_start,
            host_len,
            verbatim: false,
        });
    }

    pub fn append(&mut self, other: MappedText) {
        self.chars.extend(other.chars);
    }

    /// The text with every `{` and `}` doubled, each copy mapped where the brace was: a
    /// plain literal joined to an f-string reads as the same text inside it.
    pub fn braces_doubled(&self) -> MappedText {
        let mut out = MappedText::default();
        for c in &self.chars {
            if matches!(c.ch, '{' | '}') {
                out.push_decoded(c.ch, c.host_start, c.host_len);
                out.push_decoded(c.ch, c.host_start, c.host_len);
            } else {
                out.chars.push(*c);
            }
        }
        out
    }

    pub fn text(&self) -> String {
        self.chars.iter().map(|c| c.ch).collect()
    }

    /// The map from the text's bytes to the host's: runs of verbatim characters with
    /// adjacent host bytes become one segment; every other character is its own decoded
    /// segment, mapped to the start of what produced it.
    pub fn host_map(&self) -> HostMap {
        let mut segments: Vec<Segment> = Vec::new();
        let mut text_start = 0;
        let mut run_is_verbatim = false;
        for c in &self.chars {
            let len = c.ch.len_utf8();
            let extends_run = c.verbatim
                && run_is_verbatim
                && segments
                    .last()
                    .is_some_and(|last| last.host_start + last.host_len == c.host_start);
            if extends_run {
                let last = segments.last_mut().expect("a run has a segment");
                last.text_len += len;
                last.host_len += len;
            } else {
                segments.push(Segment {
                    text_start,
                    text_len: len,
                    host_start: c.host_start,
                    host_len: c.host_len,
                });
            }
            run_is_verbatim = c.verbatim;
            text_start += len;
        }
        HostMap::new(segments)
    }

    /// `str.strip()`, `lstrip()`, `rstrip()`: without `chars`, Python whitespace.
    pub fn strip(&self, ends: StripEnds, chars: Option<&[char]>) -> MappedText {
        let strips = |ch: char| match chars {
            Some(set) => set.contains(&ch),
            None => is_python_space(ch),
        };
        let mut start = 0;
        let mut end = self.chars.len();
        if ends != StripEnds::End {
            while start < end && strips(self.chars[start].ch) {
                start += 1;
            }
        }
        if ends != StripEnds::Start {
            while end > start && strips(self.chars[end - 1].ch) {
                end -= 1;
            }
        }
        MappedText {
            chars: self.chars[start..end].to_vec(),
        }
    }

    /// The lines of the text, split at `\n`, each without its `\n`; the `\n`s stay in
    /// `self.chars` between them.
    fn lines(&self) -> Vec<&[MappedChar]> {
        self.chars.split(|c| c.ch == '\n').collect()
    }

    /// `textwrap.dedent` as in CPython 3.11: lines of only spaces and tabs lose them; the
    /// longest run of spaces and tabs that starts every other line is removed from each.
    pub fn dedent(&self) -> MappedText {
        let is_blank = |ch: char| ch == ' ' || ch == '\t';
        let lines: Vec<Vec<MappedChar>> = self
            .lines()
            .into_iter()
            .map(|line| {
                if line.iter().all(|c| is_blank(c.ch)) {
                    Vec::new()
                } else {
                    line.to_vec()
                }
            })
            .collect();
        let mut margin: Option<Vec<char>> = None;
        for line in lines.iter().filter(|line| !line.is_empty()) {
            let indent: Vec<char> = line
                .iter()
                .map(|c| c.ch)
                .take_while(|&ch| is_blank(ch))
                .collect();
            margin = Some(match margin {
                None => indent,
                Some(current) if indent.starts_with(&current) => current,
                Some(current) if current.starts_with(&indent) => indent,
                Some(current) => {
                    let common = current
                        .iter()
                        .zip(&indent)
                        .take_while(|(a, b)| a == b)
                        .count();
                    current[..common].to_vec()
                }
            });
        }
        let margin = margin.map_or(0, |m| m.len());
        self.rejoin(lines.into_iter().map(|line| {
            if line.len() >= margin {
                line[margin..].to_vec()
            } else {
                line
            }
        }))
    }

    /// `inspect.cleandoc` as in CPython 3.11: tabs expanded (8 columns); the first line
    /// loses its leading whitespace; the smallest indentation of the later non-blank lines
    /// is removed from every later line; blank lines at both ends are dropped.
    pub fn cleandoc(&self) -> MappedText {
        let expanded = self.expand_tabs(8);
        let mut lines: Vec<Vec<MappedChar>> = expanded
            .lines()
            .into_iter()
            .map(<[MappedChar]>::to_vec)
            .collect();
        let margin = lines
            .iter()
            .skip(1)
            .filter_map(|line| {
                let indent = line.iter().take_while(|c| is_python_space(c.ch)).count();
                (indent < line.len()).then_some(indent)
            })
            .min();
        if let Some(first) = lines.first_mut() {
            let indent = first.iter().take_while(|c| is_python_space(c.ch)).count();
            first.drain(..indent);
        }
        if let Some(margin) = margin {
            for line in lines.iter_mut().skip(1) {
                line.drain(..margin.min(line.len()));
            }
        }
        // The `\n`s that join the kept lines: the ones that ended each line in the
        // expanded text, in order.
        let newlines: Vec<MappedChar> = expanded
            .chars
            .iter()
            .copied()
            .filter(|c| c.ch == '\n')
            .collect();
        let last = lines.iter().rposition(|line| !line.is_empty());
        let Some(last) = last else {
            return MappedText::default();
        };
        let first = lines
            .iter()
            .position(|line| !line.is_empty())
            .expect("a non-empty line exists");
        let mut out = MappedText::default();
        for (index, line) in lines.into_iter().enumerate().take(last + 1).skip(first) {
            if index > first {
                out.chars.push(newlines[index - 1]);
            }
            out.chars.extend(line);
        }
        out
    }

    /// `str.expandtabs(tabsize)`: each tab becomes the spaces up to the next tab stop
    /// (columns count characters, restarting after `\n` and `\r`); each space maps to
    /// the tab.
    fn expand_tabs(&self, tabsize: usize) -> MappedText {
        let mut out = MappedText::default();
        let mut column = 0;
        for c in &self.chars {
            match c.ch {
                '\t' => {
                    let spaces = tabsize - column % tabsize;
                    for _ in 0..spaces {
                        out.push_decoded(' ', c.host_start, c.host_len);
                    }
                    column += spaces;
                }
                '\n' | '\r' => {
                    out.chars.push(*c);
                    column = 0;
                }
                _ => {
                    out.chars.push(*c);
                    column += 1;
                }
            }
        }
        out
    }

    /// Lines (as produced by [`Self::lines`], possibly shortened) joined again with the
    /// text's own `\n`s.
    fn rejoin(&self, lines: impl Iterator<Item = Vec<MappedChar>>) -> MappedText {
        let mut newlines = self.chars.iter().filter(|c| c.ch == '\n');
        let mut out = MappedText::default();
        for (index, line) in lines.enumerate() {
            if index > 0 {
                out.chars
                    .push(*newlines.next().expect("one `\\n` between two lines"));
            }
            out.chars.extend(line);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A text copied verbatim from host offset 100 on.
    fn verbatim(text: &str) -> MappedText {
        let mut out = MappedText::default();
        for (offset, ch) in text.char_indices() {
            out.push_verbatim(ch, 100 + offset);
        }
        out
    }

    /// Host offsets of the characters that survive a transformation.
    fn hosts(text: &MappedText) -> Vec<usize> {
        text.chars.iter().map(|c| c.host_start).collect()
    }

    #[test]
    fn dedent_removes_the_common_margin_and_blanks_whitespace_lines() {
        let text = verbatim("\n    a\n      b\n  \n    c\n    ");
        let dedented = text.dedent();
        assert_eq!(dedented.text(), "\na\n  b\n\nc\n");
        // `a` is at host 100 + 5, after the first newline and four spaces.
        assert_eq!(dedented.chars[1].host_start, 105);
        assert_eq!(dedented.chars[1].ch, 'a');
    }

    #[test]
    fn dedent_keeps_only_the_common_prefix_of_mixed_tabs_and_spaces() {
        assert_eq!(verbatim("  \ta\n  b").dedent().text(), "\ta\nb");
        assert_eq!(verbatim("\ta\n  b").dedent().text(), "\ta\n  b");
    }

    #[test]
    fn dedent_treats_a_carriage_return_as_content() {
        assert_eq!(verbatim("  a\n  \r\n").dedent().text(), "a\n\r\n");
    }

    #[test]
    fn cleandoc_strips_the_first_line_and_the_later_margin() {
        let text = verbatim("  first\n\n      second\n        third\n    \n");
        let cleaned = text.cleandoc();
        assert_eq!(cleaned.text(), "first\n\nsecond\n  third");
        assert_eq!(cleaned.chars[0].host_start, 102);
    }

    #[test]
    fn cleandoc_expands_tabs_before_measuring_indentation() {
        let cleaned = verbatim("x\n\ta\n        b").cleandoc();
        assert_eq!(cleaned.text(), "x\na\nb");
        let cleaned = verbatim("x\n\t a\n        b").cleandoc();
        assert_eq!(cleaned.text(), "x\n a\nb");
        // The kept space of the expanded tab maps to the tab.
        let cleaned = verbatim("x\n  \tz\n  y").cleandoc();
        assert_eq!(cleaned.text(), "x\n      z\ny");
        assert_eq!(cleaned.chars[2].host_start, 104);
        assert!(!cleaned.chars[2].verbatim);
    }

    #[test]
    fn cleandoc_of_blank_text_is_empty() {
        assert_eq!(verbatim("\n\n").cleandoc().text(), "");
        // A later line of only spaces is kept: nothing measures a margin from it.
        assert_eq!(verbatim(" \n \n").cleandoc().text(), " ");
        assert_eq!(verbatim("").cleandoc().text(), "");
    }

    #[test]
    fn strip_uses_python_whitespace_or_the_given_characters() {
        let text = verbatim("\u{1f}\u{a0} a b \n");
        assert_eq!(text.strip(StripEnds::Both, None).text(), "a b");
        assert_eq!(text.strip(StripEnds::Start, None).text(), "a b \n");
        assert_eq!(text.strip(StripEnds::End, None).text(), "\u{1f}\u{a0} a b");
        let text = verbatim("xxaxx");
        assert_eq!(text.strip(StripEnds::Both, Some(&['x'])).text(), "a");
        assert_eq!(hosts(&text.strip(StripEnds::Both, Some(&['x']))), vec![102]);
    }

    #[test]
    fn the_host_map_merges_adjacent_verbatim_runs_only() {
        let mut text = verbatim("ab");
        text.push_decoded('\n', 102, 2);
        text.push_verbatim('c', 104);
        text.push_verbatim('d', 110);
        let map = text.host_map();
        assert_eq!(
            map.segments(),
            &[
                Segment {
                    text_start: 0,
                    text_len: 2,
                    host_start: 100,
                    host_len: 2
                },
                Segment {
                    text_start: 2,
                    text_len: 1,
                    host_start: 102,
                    host_len: 2
                },
                Segment {
                    text_start: 3,
                    text_len: 1,
                    host_start: 104,
                    host_len: 1
                },
                Segment {
                    text_start: 4,
                    text_len: 1,
                    host_start: 110,
                    host_len: 1
                },
            ]
        );
    }
}
