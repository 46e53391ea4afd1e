//! Hover on a template expression: how many tokens come before it, what it wrote in each
//! render (and whether that differs), and the template's shared prefix.

use crate::analyse::Analysis;
use crate::check::linter::Inspection;
use crate::fmt::thousands;
use std::fmt::Write;

/// Values longer than this are shortened in the hover.
const VALUE_CHARS: usize = 120;

/// The hover text (Markdown) for the byte `offset` of the checked template, or `None`
/// when no expression is there.
pub fn markdown(inspection: &Inspection, analysis: &Analysis, offset: usize) -> Option<String> {
    let (origin, written) = inspection.written_at(offset)?;
    let mut out = String::new();
    let _ = writeln!(out, "**prefixlint** `{}`\n", origin.text.trim());
    if written.is_empty() {
        let _ = writeln!(out, "No sample renders this expression.");
    } else {
        let min = written.iter().map(|w| w.0).min().unwrap_or(0);
        let max = written.iter().map(|w| w.0).max().unwrap_or(0);
        let before = if min == max {
            thousands(min)
        } else {
            format!("{}–{}", thousands(min), thousands(max))
        };
        let _ = writeln!(out, "- **{before}** tokens come before it");
        let differs = written.iter().any(|w| w.1 != written[0].1);
        let _ = writeln!(
            out,
            "- its output {} between renders",
            if differs {
                "**differs**"
            } else {
                "is the same"
            }
        );
        for (n, (_, value)) in written.iter().enumerate() {
            let _ = writeln!(out, "  {}. `{}`", n + 1, shown(value));
        }
    }
    let _ = writeln!(
        out,
        "\nTemplate: **{}** of {} tokens shared by every render ({:.1}% cacheable); {} served from cache by the configured engine.",
        thousands(analysis.shared_prefix_tokens),
        thousands(analysis.tokens_min),
        analysis.cacheable_percent(),
        thousands(analysis.cached_tokens_expected),
    );
    Some(out)
}

/// One line, backticks defused, long values shortened.
fn shown(value: &str) -> String {
    let one_line = value.replace('\n', "⏎").replace('`', "'");
    if one_line.chars().count() > VALUE_CHARS {
        let cut: String = one_line.chars().take(VALUE_CHARS).collect();
        format!("{cut}…")
    } else if one_line.is_empty() {
        "(empty)".into()
    } else {
        one_line
    }
}
