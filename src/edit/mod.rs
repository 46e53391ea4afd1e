//! What a fix is made of: [`Edit`]s of a template's source, a [`Fix`] with its [`Safety`],
//! the scanner of a Jinja template's tags (`jinja`) and the repairs several rules share
//! (`producers`). The rules write their fixes in these terms (`rules::Rule::fix`); `fix`
//! applies and verifies them. This module knows no rule.

pub mod jinja;
pub mod producers;

use serde::Serialize;
use std::ops::Range;

/// Whether a fix keeps what the model reads (`--fix`) or changes it (`--unsafe-fixes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Safety {
    Safe,
    Unsafe,
}

impl Safety {
    pub fn as_str(self) -> &'static str {
        match self {
            Safety::Safe => "safe",
            Safety::Unsafe => "unsafe",
        }
    }
}

/// What a fix does to the renders, which decides what the verifier asks of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixKind {
    /// Rewrites an expression or a comment in place.
    Rewrite,
    /// Moves lines: every render must keep the same lines, as a multiset.
    Move,
}

/// Replace `range` of the source with `replacement`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub range: Range<usize>,
    pub replacement: String,
}

impl Edit {
    pub fn insert(at: usize, text: impl Into<String>) -> Edit {
        Edit {
            range: at..at,
            replacement: text.into(),
        }
    }

    pub fn delete(range: Range<usize>) -> Edit {
        Edit {
            range,
            replacement: String::new(),
        }
    }
}

/// One candidate repair of one finding.
#[derive(Debug, Clone)]
pub struct Fix {
    pub rule: String,
    pub safety: Safety,
    pub kind: FixKind,
    /// What it does, in the imperative: "Add `| tojson`".
    pub title: String,
    /// Non-overlapping edits of the template's source.
    pub edits: Vec<Edit>,
}

/// `source` with `edits` applied; `None` when two overlap or one is out of bounds.
pub fn apply(source: &str, edits: &[Edit]) -> Option<String> {
    let mut sorted: Vec<&Edit> = edits.iter().collect();
    sorted.sort_by_key(|e| (e.range.start, e.range.end));
    let mut out = String::with_capacity(source.len() + 64);
    let mut at = 0;
    for edit in sorted {
        if edit.range.start < at
            || edit.range.end < edit.range.start
            || edit.range.end > source.len()
            || !source.is_char_boundary(edit.range.start)
            || !source.is_char_boundary(edit.range.end)
        {
            return None;
        }
        out.push_str(&source[at..edit.range.start]);
        out.push_str(&edit.replacement);
        at = edit.range.end;
    }
    out.push_str(&source[at..]);
    Some(out)
}

/// The line break a file uses: CRLF when most of its lines end so, else LF. Inserted text
/// takes it, so a fix keeps the file's line endings.
pub fn newline_of(source: &str) -> &'static str {
    let crlf = source.matches("\r\n").count();
    let lf = source.matches('\n').count();
    if crlf * 2 > lf {
        "\r\n"
    } else {
        "\n"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_apply_in_order_and_overlaps_are_refused() {
        let edits = [Edit::insert(5, "!"), Edit::delete(0..2)];
        assert_eq!(apply("hello world", &edits).as_deref(), Some("llo! world"));
        let overlapping = [Edit::delete(0..3), Edit::delete(2..4)];
        assert_eq!(apply("hello", &overlapping), None);
        assert_eq!(apply("hi", &[Edit::delete(1..9)]), None);
    }

    #[test]
    fn crlf_files_keep_crlf() {
        assert_eq!(newline_of("a\r\nb\r\n"), "\r\n");
        assert_eq!(newline_of("a\nb\n"), "\n");
        assert_eq!(newline_of("one line"), "\n");
    }
}
