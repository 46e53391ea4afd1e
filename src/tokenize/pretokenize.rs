//! `Split(Regex)` pre-tokenizers, one or several in sequence: pieces are the regex matches
//! and the gaps between them (`Isolated`), or only one of the two (`Removed`, with `invert`
//! choosing which), exactly as `tokenizers` 0.23.2 (fancy-regex build) cuts them.
//!
//! The Qwen2/3 pattern and the Llama 3 / cl100k one (the same but `\p{N}{1,3}`) get a
//! hand-written scanner: fancy-regex runs their lookahead through a backtracking VM, which
//! made pre-tokenization the slowest stage. The scanner is proven equal to fancy-regex by
//! `scanner_equals_fancy_regex` below and by `tests/it/engines.rs`.

use std::sync::OnceLock;

/// Qwen2/Qwen3's pre-tokenizer regex, as their `tokenizer.json` spells it.
pub const QWEN_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Llama 3's and GPT-3.5/4's (cl100k) regex: Qwen's with numbers in runs of up to three.
pub const CL100K_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// tiktoken 0.14's cl100k_base regex. It is not the one `tokenizer.json` conversions carry
/// (`\s*[\r\n]+|…|\s+`): `\s++$` keeps whitespace that ends the text in one piece (no ids
/// differed on the texts tried, but the pieces do, so the reference's spelling is used).
pub const TIKTOKEN_CL100K_PATTERN: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";
/// tiktoken's o200k_base regex.
pub const TIKTOKEN_O200K_PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
);

/// For a pre-tokenizer of one of tiktoken's two patterns: the characters that, starting a line,
/// make its start no safe boundary (`bpe::safe_boundary_but`). No match of either pattern
/// runs across a newline followed by an ASCII character that is not whitespace (whitespace
/// runs stop before it, the others cannot take a newline), except o200k's punctuation run,
/// whose `[\r\n/]*` goes on into a `/`; and each match before it is decided by the text up
/// to that character (the lookahead `(?!\S)` and cl100k's `$` read no further).
pub fn line_starts_not_safe(pattern: &str) -> Option<&'static [u8]> {
    match pattern {
        TIKTOKEN_CL100K_PATTERN => Some(b""),
        TIKTOKEN_O200K_PATTERN => Some(b"/"),
        _ => None,
    }
}

/// One `Split` step of a `tokenizer.json` pre-tokenizer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitRule {
    pub pattern: String,
    /// `Removed` (true) drops the delimiters; `Isolated` (false) keeps each as a piece.
    pub removed: bool,
    /// The regex matches are the delimiters unless inverted, when the gaps are.
    pub invert: bool,
    /// A `Digits` step instead of a regex: numeric characters (`char::is_numeric`) are the
    /// matches, one by one when `pattern` is [`DIGITS_INDIVIDUAL`], else in runs.
    pub digits: bool,
}

/// [`SplitRule::pattern`] of a `Digits` step with `individual_digits`.
pub const DIGITS_INDIVIDUAL: &str = "individual";

/// All the `Split` steps, applied in order: each step splits every piece of the one before.
pub struct SplitSequence {
    steps: Vec<(PreTokenizer, SplitRule)>,
}

impl SplitSequence {
    pub fn new(rules: &[SplitRule]) -> Option<Self> {
        let steps = rules
            .iter()
            .map(|rule| {
                let pre = if rule.digits {
                    PreTokenizer::Digits {
                        individual: rule.pattern == DIGITS_INDIVIDUAL,
                    }
                } else {
                    PreTokenizer::new(&rule.pattern)?
                };
                Some((pre, rule.clone()))
            })
            .collect::<Option<Vec<_>>>()?;
        (!steps.is_empty()).then_some(SplitSequence { steps })
    }

    /// No splitting at all: each text is one piece.
    pub fn whole() -> Self {
        SplitSequence { steps: Vec::new() }
    }

    /// One step whose scanner covers every character with matches (no gaps): what
    /// incremental encoding of related renders relies on.
    pub fn is_single_scanner(&self) -> bool {
        matches!(self.steps.as_slice(), [(PreTokenizer::Scanner { .. }, rule)] if !rule.removed || rule.invert)
    }

    /// Calls `piece(start, end)` for each piece of `text`, in order.
    pub fn split(&self, text: &str, mut piece: impl FnMut(usize, usize)) {
        self.split_from(0, text, 0, &mut piece);
    }

    fn split_from(
        &self,
        step: usize,
        text: &str,
        base: usize,
        piece: &mut dyn FnMut(usize, usize),
    ) {
        let Some((pre, rule)) = self.steps.get(step) else {
            piece(base, base + text.len());
            return;
        };
        pre.split_marked(text, |start, end, matched| {
            let delimiter = matched != rule.invert;
            if (rule.removed && delimiter) || start == end {
                return;
            }
            self.split_from(step + 1, &text[start..end], base + start, piece);
        });
    }
}

pub enum PreTokenizer {
    /// The hand scanner for [`QWEN_PATTERN`] (`digits: 1`) or [`CL100K_PATTERN`] (`digits: 3`).
    Scanner {
        digits: usize,
    },
    Regex(Box<fancy_regex::Regex>),
    /// `tokenizers`' `Digits`: numeric characters, one by one or in runs.
    Digits {
        individual: bool,
    },
}

impl PreTokenizer {
    pub fn new(pattern: &str) -> Option<Self> {
        let digits = match pattern {
            QWEN_PATTERN => Some(1),
            CL100K_PATTERN => Some(3),
            _ => None,
        };
        if let (Some(digits), Some(_)) = (digits, classes()) {
            return Some(PreTokenizer::Scanner { digits });
        }
        Some(PreTokenizer::Regex(Box::new(
            fancy_regex::Regex::new(pattern).ok()?,
        )))
    }

    /// The regex engine even for the Qwen pattern, to compare against.
    pub fn regex_only(pattern: &str) -> Option<Self> {
        Some(PreTokenizer::Regex(Box::new(
            fancy_regex::Regex::new(pattern).ok()?,
        )))
    }

    /// Calls `piece(start, end)` for each piece of `text`, in order, covering all of it.
    pub fn split(&self, text: &str, mut piece: impl FnMut(usize, usize)) {
        self.split_marked(text, |start, end, _| piece(start, end));
    }

    /// [`PreTokenizer::split`], saying of each piece whether it is a match (else a gap).
    pub fn split_marked(&self, text: &str, mut piece: impl FnMut(usize, usize, bool)) {
        match self {
            PreTokenizer::Scanner { digits } => {
                let classes = classes().expect("checked in new");
                let mut at = 0;
                while at < text.len() {
                    // Every character starts some match of this pattern, so there are no gaps.
                    let end = scan_match(text, at, classes, *digits);
                    piece(at, end, true);
                    at = end;
                }
            }
            PreTokenizer::Digits { individual } => {
                let mut gap = 0;
                let mut chars = text.char_indices().peekable();
                while let Some((at, c)) = chars.next() {
                    if !c.is_numeric() {
                        continue;
                    }
                    let mut end = at + c.len_utf8();
                    if !individual {
                        while let Some(&(next, d)) = chars.peek() {
                            if !d.is_numeric() {
                                break;
                            }
                            end = next + d.len_utf8();
                            chars.next();
                        }
                    }
                    if at > gap {
                        piece(gap, at, false);
                    }
                    piece(at, end, true);
                    gap = end;
                }
                if gap < text.len() {
                    piece(gap, text.len(), false);
                }
            }
            PreTokenizer::Regex(regex) => {
                let mut last = 0;
                for found in regex.find_iter(text) {
                    // `tokenizers` stops at a regex error (backtrack limit); the rest is one gap.
                    let Ok(found) = found else { break };
                    if found.start() > last {
                        piece(last, found.start(), false);
                    }
                    piece(found.start(), found.end(), true);
                    last = found.end();
                }
                if last < text.len() {
                    piece(last, text.len(), false);
                }
            }
        }
    }
}

/// Unicode classes exactly as the regex crates define `\p{L}`, `\p{N}` and `\s`.
struct Classes {
    letter: Vec<(char, char)>,
    number: Vec<(char, char)>,
    space: Vec<(char, char)>,
}

fn classes() -> Option<&'static Classes> {
    static CLASSES: OnceLock<Option<Classes>> = OnceLock::new();
    CLASSES
        .get_or_init(|| {
            Some(Classes {
                letter: ranges(r"\p{L}")?,
                number: ranges(r"\p{N}")?,
                space: ranges(r"\s")?,
            })
        })
        .as_ref()
}

pub(super) fn ranges(class: &str) -> Option<Vec<(char, char)>> {
    let hir = regex_syntax::parse(class).ok()?;
    match hir.kind() {
        regex_syntax::hir::HirKind::Class(regex_syntax::hir::Class::Unicode(set)) => {
            Some(set.ranges().iter().map(|r| (r.start(), r.end())).collect())
        }
        _ => None,
    }
}

pub(super) fn in_ranges(ranges: &[(char, char)], c: char) -> bool {
    ranges
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Letter,
    Number,
    Space,
    Other,
}

impl Classes {
    fn kind(&self, c: char) -> Kind {
        if c.is_ascii() {
            return match c {
                'a'..='z' | 'A'..='Z' => Kind::Letter,
                '0'..='9' => Kind::Number,
                ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c' => Kind::Space,
                _ => Kind::Other,
            };
        }
        if in_ranges(&self.letter, c) {
            Kind::Letter
        } else if in_ranges(&self.number, c) {
            Kind::Number
        } else if in_ranges(&self.space, c) {
            Kind::Space
        } else {
            Kind::Other
        }
    }
}

fn char_at(text: &str, at: usize) -> Option<char> {
    text[at..].chars().next()
}

/// End of the run of `kind` characters starting at `at`.
fn run_end(text: &str, mut at: usize, kind: Kind, classes: &Classes) -> usize {
    while let Some(c) = char_at(text, at) {
        if classes.kind(c) != kind {
            break;
        }
        at += c.len_utf8();
    }
    at
}

/// The end of the leftmost-first match of [`QWEN_PATTERN`] (`digits: 1`) or
/// [`CL100K_PATTERN`] (`digits: 3`) at `at` (which always exists).
fn scan_match(text: &str, at: usize, classes: &Classes, digits: usize) -> usize {
    let Some(c) = char_at(text, at) else {
        return at;
    };
    let after = at + c.len_utf8();
    // (?i:'s|'t|'re|'ve|'m|'ll|'d) — case folding also maps U+017F (long s) to s.
    if c == '\'' {
        let mut rest = text[after..].chars();
        let first = rest.next();
        let second = rest.next();
        let one = |f: char| after + f.len_utf8();
        let two = |f: char, s: char| after + f.len_utf8() + s.len_utf8();
        match (first, second) {
            (Some(f @ ('s' | 'S' | '\u{17F}' | 't' | 'T' | 'm' | 'M' | 'd' | 'D')), _) => {
                return one(f)
            }
            (Some(f @ ('r' | 'R' | 'v' | 'V')), Some(s @ ('e' | 'E'))) => return two(f, s),
            (Some(f @ ('l' | 'L')), Some(s @ ('l' | 'L'))) => return two(f, s),
            _ => {}
        }
    }
    let kind = classes.kind(c);
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if kind == Kind::Letter {
        return run_end(text, after, Kind::Letter, classes);
    }
    if kind != Kind::Number && c != '\r' && c != '\n' {
        if let Some(next) = char_at(text, after) {
            if classes.kind(next) == Kind::Letter {
                return run_end(text, after, Kind::Letter, classes);
            }
        }
    }
    // \p{N} or \p{N}{1,3}
    if kind == Kind::Number {
        let mut end = after;
        for _ in 1..digits {
            match char_at(text, end) {
                Some(c) if classes.kind(c) == Kind::Number => end += c.len_utf8(),
                _ => break,
            }
        }
        return end;
    }
    // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
    let symbols_from = if c == ' ' { after } else { at };
    let symbols_end = run_end(text, symbols_from, Kind::Other, classes);
    if symbols_end > symbols_from {
        let newlines = text[symbols_end..]
            .bytes()
            .take_while(|&b| b == b'\r' || b == b'\n')
            .count();
        return symbols_end + newlines;
    }
    if kind != Kind::Space {
        // Not reachable for this pattern (every other character is a symbol); one char.
        return after;
    }
    let spaces_end = run_end(text, at, Kind::Space, classes);
    // \s*[\r\n]+ — ends after the run's last line break.
    if let Some(last_break) = text[at..spaces_end].rfind(['\r', '\n']) {
        return at + last_break + 1;
    }
    // \s+(?!\S) — all of the run at the end of text, else all but its last character.
    if spaces_end == text.len() {
        return spaces_end;
    }
    let last_start = text[at..spaces_end]
        .char_indices()
        .last()
        .map_or(at, |(i, _)| at + i);
    if last_start > at {
        return last_start;
    }
    // \s+
    spaces_end
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(pre: &PreTokenizer, text: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        pre.split(text, |s, e| out.push((s, e)));
        out
    }

    #[test]
    fn scanner_equals_fancy_regex() {
        for pattern in [QWEN_PATTERN, CL100K_PATTERN] {
            scanner_equals_fancy_regex_on(pattern);
        }
    }

    fn scanner_equals_fancy_regex_on(pattern: &str) {
        let scanner = PreTokenizer::new(pattern).expect("scanner");
        assert!(matches!(scanner, PreTokenizer::Scanner { .. }));
        let regex = PreTokenizer::regex_only(pattern).expect("regex");
        let alphabet: Vec<&str> = vec![
            "a", "Z", "é", "ß", "東", "ǅ", "0", "٣", "Ⅻ", "½", " ", "  ", "\t", "\n", "\r", "\x0b",
            "\u{85}", "\u{a0}", "\u{2028}", "\u{3000}", "\u{200b}", "'", "'s", "'S", "'ſ", "'t",
            "'re", "'RE", "'rE", "'ve", "'m", "'ll", "'Ll", "'d", "'x", ".", "!!", "\"", "-",
            "\u{301}", "😀", "\u{200d}", "_", "\u{0}", "\u{7f}", "123", "4567", "٣٤",
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            let mut text = String::new();
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = (state % 24) as usize;
            for _ in 0..len {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                text.push_str(alphabet[(state % alphabet.len() as u64) as usize]);
            }
            assert_eq!(pieces(&scanner, &text), pieces(&regex, &text), "{text:?}");
        }
    }
}
