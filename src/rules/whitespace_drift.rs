//! PL004 whitespace-drift: docs in `rules/PL004-whitespace-drift.yaml`.

use super::breakpoint::Breakpoint;
use super::{meta, Finding, Rule, RuleContext};
use crate::fmt::thousands;

pub struct WhitespaceDrift;

/// How two renders differ where their shared prefix ends, when only whitespace differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drift {
    /// CRLF in one render, LF in the other.
    LineEndings,
    /// Spaces or tabs at the end of the line, or a missing final newline.
    TrailingWhitespace,
}

impl Rule for WhitespaceDrift {
    fn code(&self) -> &'static str {
        "PL004"
    }

    fn check(&self, ctx: &RuleContext) -> Vec<Finding> {
        let Some(bp) = Breakpoint::find(ctx) else {
            return Vec::new();
        };
        let Some(drift) = bp.drift else {
            return Vec::new();
        };
        let rule = meta(self.code());
        let lost = ctx.analysis.recoverable_tokens;
        let gain = if lost > 0 {
            format!("; {} tokens would become cacheable", thousands(lost))
        } else {
            String::new()
        };
        let (what, help, label) = match drift {
            Drift::LineEndings => (
                "in line endings only (CRLF in one render, LF in another)",
                format!(
                    "normalize line endings to LF where this text comes from (the file, the samples or the caller), or with `| replace('\\r\\n', '\\n')`{gain}"
                ),
                "CRLF vs LF",
            ),
            Drift::TrailingWhitespace => (
                "in trailing whitespace only",
                format!(
                    "strip trailing whitespace where this text comes from, or with `| trim` or `{{%-`/`-%}}` whitespace control{gain}"
                ),
                "trailing whitespace differs",
            ),
        };
        vec![Finding {
            cadence: None,
            rule,
            severity: rule.severity,
            message: format!(
                "the renders of {} differ {what}: the shared prefix ends at token {}",
                bp.subject(),
                thousands(ctx.analysis.shared_prefix_tokens),
            ),
            help,
            span: bp.span.clone(),
            label: label.into(),
            related: bp.related,
        }]
    }
}

/// Whether renders `a` and `b`, which first differ at byte `offset`, differ on that line
/// only in line endings or trailing whitespace.
pub fn drift_at(a: &str, b: &str, offset: usize) -> Option<Drift> {
    let offset = offset.min(a.len()).min(b.len());
    let line_start = a.get(..offset)?.rfind('\n').map_or(0, |i| i + 1);
    let line = |text: &'_ str| -> Option<(String, bool)> {
        let rest = text.get(line_start..)?;
        let line = match rest.find('\n') {
            Some(i) => &rest[..i],
            None => rest,
        };
        let crlf = line.ends_with('\r');
        Some((line.trim_end_matches('\r').to_owned(), crlf))
    };
    let ((text_a, crlf_a), (text_b, crlf_b)) = (line(a)?, line(b)?);
    if text_a == text_b && crlf_a != crlf_b {
        Some(Drift::LineEndings)
    } else if text_a.trim_end() == text_b.trim_end() {
        Some(Drift::TrailingWhitespace)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(a: &str, b: &str) -> Option<Drift> {
        let offset = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
        drift_at(a, b, offset)
    }

    #[test]
    fn line_endings() {
        assert_eq!(at("x\r\ny", "x\ny"), Some(Drift::LineEndings));
        assert_eq!(at("a\nb\r\nc", "a\nb\nc"), Some(Drift::LineEndings));
    }

    #[test]
    fn trailing_whitespace() {
        assert_eq!(at("x  \ny", "x\ny"), Some(Drift::TrailingWhitespace));
        assert_eq!(at("x\t\ny", "x \ny"), Some(Drift::TrailingWhitespace));
        assert_eq!(at("x\n", "x"), Some(Drift::TrailingWhitespace));
    }

    #[test]
    fn real_differences_are_not_drift() {
        assert_eq!(at("Hello Ann\nrules", "Hello Bob\nrules"), None);
        assert_eq!(at("x y\n", "x\ny\n"), None);
    }
}
