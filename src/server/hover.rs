//! Hover on a template expression: how many tokens come before it, what it wrote in each
//! render (and whether that differs), and the template's shared prefix.

use crate::analyse::Analysis;
use crate::check::linter::Inspection;
use crate::fmt::thousands;
use crate::render::instrument::{MarkEvent, Origin, OriginKind};
use std::fmt::Write;

/// Values longer than this are shortened in the hover.
const VALUE_CHARS: usize = 120;

/// The hover text (Markdown) for the byte `offset` of the checked template, or `None`
/// when no expression is there.
pub fn markdown(inspection: &Inspection, analysis: &Analysis, offset: usize) -> Option<String> {
    let (origin, written) = written_at(inspection, offset)?;
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

/// The innermost expression of the template around byte `offset`, and for each render
/// that wrote it: the tokens before its first output, and that output.
pub fn written_at(
    inspection: &Inspection,
    offset: usize,
) -> Option<(&Origin, Vec<(usize, String)>)> {
    let (id, origin) = inspection
        .origins
        .iter()
        .enumerate()
        .filter(|(_, o)| {
            o.kind == OriginKind::Expression
                && *o.template == *inspection.template_name
                && o.span.start <= offset
                && offset <= o.span.end
        })
        .min_by_key(|(_, o)| o.span.len())?;
    let id = id as u32;
    let mut written = Vec::new();
    for (render, tokens) in inspection.renders.iter().zip(&inspection.tokens) {
        let Some(map) = &render.map else { continue };
        let open = map
            .events
            .iter()
            .find(|(_, e)| *e == MarkEvent::Open(id))
            .map(|(at, _)| *at);
        let Some(open) = open else { continue };
        let close = map
            .events
            .iter()
            .find(|(at, e)| *at >= open && *e == MarkEvent::Close(id))
            .map_or(open, |(at, _)| *at);
        let before = tokens
            .offsets
            .iter()
            .filter(|(start, _)| *start < open)
            .count();
        let value = render.text.get(open..close).unwrap_or("").to_owned();
        written.push((before, value));
    }
    Some((origin, written))
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
