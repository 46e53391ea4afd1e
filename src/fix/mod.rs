//! Fixes: the edits that repair a finding, as ruff makes them. One implementation with two
//! front ends: `check --fix`/`--diff` (`commands::check`) and the editor server's code
//! actions (`server::actions`).
//!
//! A fix is a set of [`Edit`]s (byte ranges of the template's source and their new text)
//! with a [`Safety`]: safe fixes keep what the model reads (canonical JSON, whitespace,
//! suppression comments), unsafe ones change it (a line moved to the end). `producers`
//! makes the candidate fixes of a finding; `engine` applies them one at a time and keeps a
//! fix only when `verify` passes on the fixed template, checked again in the same run:
//! it renders over every sample, the fixed finding is gone and no new one appeared, the
//! shared prefix did not shrink, and a moved line leaves every render the same lines.

pub mod engine;
pub mod files;
pub mod host;
pub mod jinja;
pub mod producers;
pub mod run;
pub mod turns;
pub mod verify;

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

/// One fix tried on one template, as the report shows it.
#[derive(Debug, Clone, Serialize)]
pub struct FixRecord {
    pub rule: String,
    pub safety: Safety,
    /// What the fix does (or would do).
    pub title: String,
    /// 1-based line of the finding in the file before any fix.
    pub line: usize,
    pub applied: bool,
    /// Why it was not applied; `null` when it was.
    pub reason: Option<String>,
    /// The template's shared prefix before this fix and after it (the same when not applied).
    pub shared_prefix_tokens_before: usize,
    pub shared_prefix_tokens_after: usize,
}

/// The fixes of one template (a template file, or one template inside a host file).
#[derive(Debug, Clone, Serialize)]
pub struct TemplateFixes {
    pub path: String,
    /// For a template inside a host file: its key (`prompts.system`), else `null`.
    pub embedded_key: Option<String>,
    pub shared_prefix_tokens_before: usize,
    pub shared_prefix_tokens_after: usize,
    /// `after - before`: never negative, since no fix that shrinks the prefix is kept.
    pub tokens_gained: usize,
    /// Whether the file was (`--fix`) or would be (`--diff`) changed.
    pub changed: bool,
    /// Why the fixed text was not written, when it was not (a read-only file, a host
    /// file whose quoting could not hold the edit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub fixes: Vec<FixRecord>,
}

impl TemplateFixes {
    pub fn applied(&self) -> usize {
        self.fixes.iter().filter(|f| f.applied).count()
    }
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

/// The text summary of a run's fixes (`check --fix`/`--diff`): per template the fixes
/// applied and not, and the shared prefix before → after.
pub fn summary(all: &[TemplateFixes], wrote: bool) -> String {
    use crate::fmt::thousands;
    let mut out = String::new();
    let mut applied = 0;
    let mut changed_files = 0;
    for template in all
        .iter()
        .filter(|t| !t.fixes.is_empty() || t.error.is_some())
    {
        let name = match &template.embedded_key {
            Some(key) => format!("{}#{key}", template.path),
            None => template.path.clone(),
        };
        out.push_str(&format!(
            "{name}: shared prefix {} → {} tokens (+{})\n",
            thousands(template.shared_prefix_tokens_before),
            thousands(template.shared_prefix_tokens_after),
            thousands(template.tokens_gained),
        ));
        for fix in &template.fixes {
            let status = if fix.applied {
                if wrote {
                    "fixed"
                } else {
                    "would fix"
                }
            } else {
                "not fixed"
            };
            out.push_str(&format!(
                "  {}:{} {} ({}, {status}): {}",
                name,
                fix.line,
                fix.rule,
                fix.safety.as_str(),
                fix.title
            ));
            if let Some(reason) = &fix.reason {
                out.push_str(&format!(" — {reason}"));
            }
            out.push('\n');
        }
        if let Some(error) = &template.error {
            out.push_str(&format!("  not written: {error}\n"));
        }
        applied += template.applied();
        changed_files += usize::from(template.changed);
    }
    let verb = if wrote { "Fixed" } else { "Would fix" };
    out.push_str(&format!(
        "{verb} {applied} finding{} in {changed_files} file{}.\n",
        crate::fmt::plural(applied),
        crate::fmt::plural(changed_files),
    ));
    out
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
