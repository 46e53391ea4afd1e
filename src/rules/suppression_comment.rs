//! The inline suppression comment's syntax, `{# prefixlint: ignore[PL001] reason #}`: read
//! by `suppress` (which honours it) and by the fixes of PL009 and PL010 (which edit it).

use regex::Regex;
use std::ops::Range;
use std::sync::OnceLock;

/// `{# prefixlint: ignore[CODES] REASON #}` or `ignore-file[…]`: captures the kind, the
/// codes and the reason.
pub fn directive_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?s)\{#[-+]?\s*prefixlint:\s*(ignore-file|ignore)\[([^\]]*)\](.*?)[-+]?#\}")
            .expect("valid regex")
    })
}

/// An inline suppression comment's codes: their byte range inside `comment` (between the
/// brackets), and where the codes end (just after `]`).
pub fn comment_codes(comment: &str) -> Option<(Range<usize>, usize)> {
    let caps = directive_regex().captures(comment)?;
    let codes = caps.get(2)?;
    Some((codes.range(), codes.end() + 1))
}
