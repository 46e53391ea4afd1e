//! The repairs several rules share: the move of what breaks the prefix to the template's
//! end (PL001-PL005), a filter added to an expression, the block around a place. Each rule's
//! own repairs live in its module (`rules::*`, `Rule::fix`).

use super::jinja::{self, Block, Tag, TagKind};
use super::{newline_of, Edit, Fix, FixKind, Safety};
use std::ops::Range;

/// The innermost block of `keyword` around `span`.
pub fn innermost<'a>(blocks: &'a [Block], span: &Range<usize>, keyword: &str) -> Option<&'a Block> {
    blocks
        .iter()
        .filter(|b| b.keyword == keyword)
        .filter(|b| b.open.range.start <= span.start && span.end <= b.close.range.end)
        .min_by_key(|b| b.range().len())
}

/// The expression tag rewritten: `{{ EXPR }}` → `{{ EXPR | filter }}` (parenthesized when
/// the filter would bind to a part of it), as insertions that keep the rest of the tag.
pub fn add_filter(source: &str, tag: &Tag, filter: &str) -> Option<Vec<Edit>> {
    let inner = &source[tag.inner.clone()];
    let expression = inner.trim();
    if expression.is_empty() || expression.contains(filter) {
        return None;
    }
    let start = tag.inner.start + (inner.len() - inner.trim_start().len());
    let end = start + expression.len();
    if jinja::filter_binds_whole(expression) {
        Some(vec![Edit::insert(end, format!(" | {filter}"))])
    } else {
        Some(vec![
            Edit::insert(start, "("),
            Edit::insert(end, format!(") | {filter}")),
        ])
    }
}

/// What opens a value in the template's syntax, for reading a line as "just a value".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Markup {
    /// Jinja's `{{`, `{%`, `{#`.
    Jinja,
    /// A `{var}` field (`{x}`, Semantic Kernel's `{{$x}}`): any `{`.
    Fields,
}

impl Markup {
    fn opens(self, text: &str) -> bool {
        match self {
            Markup::Jinja => text.starts_with("{{") || text.starts_with("{%"),
            Markup::Fields => text.starts_with('{'),
        }
    }

    fn holds(self, text: &str) -> bool {
        match self {
            Markup::Jinja => ["{{", "{%", "{#"].iter().any(|open| text.contains(open)),
            Markup::Fields => text.contains('{'),
        }
    }
}

/// The unsafe fix of what breaks the prefix: the smallest unit that carries the value (its
/// line, the `{% if %}`/`{% for %}` block around it, with the label line or Markdown
/// heading that introduces it) moved after everything else.
pub fn move_to_end(
    source: &str,
    tags: &[Tag],
    blocks: &[Block],
    span: &Range<usize>,
    code: &str,
    markup: Markup,
) -> Result<Vec<Fix>, String> {
    let statement = |keyword: &str| {
        tags.iter()
            .any(|t| t.kind == TagKind::Statement && t.keyword(source) == keyword)
    };
    if statement("extends") {
        return Err("the template extends another: what it writes comes from its `{% block %}`s, and moving text out of one would change what it overrides".into());
    }
    let last = span
        .end
        .max(span.start + 1)
        .min(source.len())
        .saturating_sub(1);
    let mut unit = jinja::full_line(source, span.start).start..jinja::full_line(source, last).end;
    // A line of a paragraph wrapped mid-sentence is no unit of its own: the paragraph is.
    if wrapped(source, &unit) {
        unit = paragraph(source, unit);
    }
    // Grow the unit to whole blocks: a block cut in two would not parse, and one around the
    // unit would move its text out of the condition or loop.
    loop {
        let mut grew = false;
        for block in blocks {
            let range = block.range();
            let overlaps = range.start < unit.end && unit.start < range.end;
            let inside = unit.start <= range.start && range.end <= unit.end;
            if !overlaps || inside {
                continue;
            }
            if !matches!(block.keyword.as_str(), "if" | "for") {
                return Err(format!(
                    "it sits inside a `{{% {} %}}`: moving it out would change what that block writes",
                    block.keyword
                ));
            }
            let last = range.end.saturating_sub(1);
            unit = unit.start.min(jinja::full_line(source, range.start).start)
                ..unit.end.max(jinja::full_line(source, last).end);
            grew = true;
        }
        if !grew {
            break;
        }
    }
    if source[unit.end..].trim().is_empty() {
        return Err("nothing follows it: it is already at the end".into());
    }
    if !source[unit.clone()].ends_with('\n') {
        return Err("it is on the template's last line".into());
    }
    // Its label (`Current time:` on the line before the value) or Markdown heading goes
    // with it, when the line before introduces nothing else.
    let first_line = &source[unit.clone()];
    let value_only = first_line.lines().count() == 1 && { markup.opens(first_line.trim()) };
    if unit.start > 0 {
        let previous = jinja::full_line(source, unit.start - 1);
        let text = source[previous.clone()].trim();
        let no_tags = !markup.holds(text);
        let label = value_only && text.ends_with(':');
        let heading = text.starts_with('#') && {
            let next = source[unit.end..].lines().next().unwrap_or("").trim();
            next.is_empty() || next.starts_with('#')
        };
        if no_tags && !text.is_empty() && (label || heading) {
            unit.start = previous.start;
        }
    }
    // A paragraph of its own (blank lines around it) takes one blank line along, so the
    // text it leaves and the end it joins both stay separated by one.
    let blank_before = unit.start == 0 || {
        let previous = jinja::full_line(source, unit.start - 1);
        source[previous].trim().is_empty()
    };
    let next = jinja::full_line(source, unit.end);
    let blank_after = next.end > next.start && source[next.clone()].trim().is_empty();
    let (removed, blank) = if blank_before && blank_after {
        (unit.start..next.end, &source[next.clone()])
    } else {
        (unit.clone(), "")
    };
    let text = &source[unit.clone()];
    let newline = newline_of(source);
    let appended = if source.ends_with('\n') {
        format!("{blank}{text}")
    } else {
        let body = text.strip_suffix('\n').unwrap_or(text);
        let body = body.strip_suffix('\r').unwrap_or(body);
        format!("{newline}{blank}{body}")
    };
    let first = crate::source::line_col(source, unit.start).0;
    let last = crate::source::line_col(source, unit.end - 1).0;
    let lines = if first == last {
        format!("line {first}")
    } else {
        format!("lines {first}-{last}")
    };
    let moved = |appended: String| Fix {
        rule: code.to_owned(),
        safety: Safety::Unsafe,
        kind: FixKind::Move,
        title: format!("Move {lines} to the end of the template"),
        edits: vec![
            Edit::delete(removed.clone()),
            Edit::insert(source.len(), appended),
        ],
    };
    // The renderer drops one line break at the very end of a template (as Jinja2 does):
    // a unit that ends in a tag-only line (`{% endif %}`) keeps its blank line there only
    // with one more line break.
    let last_line = text.trim_end().rsplit('\n').next().unwrap_or("").trim();
    let tag_only =
        markup == Markup::Jinja && last_line.starts_with("{%") && last_line.ends_with("%}");
    let mut fixes = vec![moved(appended.clone())];
    if tag_only && source.ends_with('\n') {
        fixes.push(moved(format!("{appended}{newline}")));
    }
    Ok(fixes)
}

/// Whether a line ends what it says (a sentence, a label, a tag): what follows it starts
/// something new.
fn ends_a_sentence(line: &str) -> bool {
    let line = line.trim_end();
    line.is_empty()
        || [
            ".", "!", "?", ":", ";", ")", "]", "\"", "'", "`", ">", "|", "}}", "%}", "#}",
        ]
        .iter()
        .any(|end| line.ends_with(end))
}

/// Whether a line starts an item of its own: a list entry, a heading, a quote, a table row,
/// a tag, a numbered step.
fn starts_an_item(line: &str) -> bool {
    let line = line.trim_start();
    line.is_empty()
        || line.starts_with(['-', '*', '#', '>', '|', '{'])
        || line.starts_with(|c: char| c.is_ascii_digit())
}

/// Whether the lines of `unit` are part of a paragraph wrapped mid-sentence: the text runs
/// on into the line after it, or runs in from the line before.
fn wrapped(source: &str, unit: &Range<usize>) -> bool {
    let text = &source[unit.clone()];
    let first = text.lines().next().unwrap_or("");
    let last = text.lines().last().unwrap_or("");
    let next = source[unit.end..].lines().next().unwrap_or("");
    let into_next = !ends_a_sentence(last) && !next.trim().is_empty() && !starts_an_item(next);
    let from_previous = unit.start > 0 && {
        let previous = &source[jinja::full_line(source, unit.start - 1)];
        !previous.trim().is_empty() && !ends_a_sentence(previous) && !starts_an_item(first)
    };
    into_next || from_previous
}

/// The paragraph around `unit`: out to the blank lines (or the text's ends) around it.
fn paragraph(source: &str, mut unit: Range<usize>) -> Range<usize> {
    while unit.start > 0 {
        let previous = jinja::full_line(source, unit.start - 1);
        if source[previous.clone()].trim().is_empty() {
            break;
        }
        unit.start = previous.start;
    }
    while unit.end < source.len() {
        let next = jinja::full_line(source, unit.end);
        if source[next.clone()].trim().is_empty() {
            break;
        }
        unit.end = next.end;
    }
    unit
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edit::apply;

    fn moved(source: &str, needle: &str) -> Result<String, String> {
        let at = source.find(needle).unwrap();
        let tags = jinja::tags(source);
        let blocks = jinja::blocks(source, &tags);
        let fixes = move_to_end(
            source,
            &tags,
            &blocks,
            &(at..at + needle.len()),
            "PL001",
            Markup::Jinja,
        )?;
        Ok(apply(source, &fixes[0].edits).unwrap())
    }

    #[test]
    fn a_volatile_line_moves_to_the_end_with_its_label() {
        assert_eq!(
            moved("Intro.\nTime: {{ now }}\nStable.\n", "{{ now }}").unwrap(),
            "Intro.\nStable.\nTime: {{ now }}\n"
        );
        assert_eq!(
            moved("Intro.\nCurrent time:\n{{ now }}\nStable.", "{{ now }}").unwrap(),
            "Intro.\nStable.\nCurrent time:\n{{ now }}"
        );
    }

    #[test]
    fn a_line_wrapped_mid_sentence_moves_with_its_paragraph() {
        let source = "Today is {{ date }}. You help\ncustomers politely.\n\nStable rules.\n";
        assert_eq!(
            moved(source, "{{ date }}").unwrap(),
            "Stable rules.\n\nToday is {{ date }}. You help\ncustomers politely.\n"
        );
    }

    #[test]
    fn an_if_block_moves_whole_and_a_paragraph_keeps_its_blank_line() {
        let source = "A\n\n{% if x %}\nT {{ now }}\n{% endif %}\n\nB\n";
        assert_eq!(
            moved(source, "{{ now }}").unwrap(),
            "A\n\nB\n\n{% if x %}\nT {{ now }}\n{% endif %}\n"
        );
    }

    #[test]
    fn nothing_moves_out_of_a_block_or_past_the_end() {
        let source = "{% block top %}\nT {{ now }}\n{% endblock %}\nB\n";
        assert!(moved(source, "{{ now }}").unwrap_err().contains("block"));
        assert!(moved("A\nT {{ now }}\n", "{{ now }}").is_err());
        let extends = "{% extends 'base.j2' %}\nT {{ now }}\nB\n";
        assert!(moved(extends, "{{ now }}").unwrap_err().contains("extends"));
    }

    #[test]
    fn filters_are_added_inside_the_tag() {
        let source = "{{- a ~ b }}";
        let tags = jinja::tags(source);
        let edits = add_filter(source, &tags[0], "trim").unwrap();
        assert_eq!(apply(source, &edits).unwrap(), "{{- (a ~ b) | trim }}");
        let edits = add_filter("{{ x }}", &jinja::tags("{{ x }}")[0], "tojson").unwrap();
        assert_eq!(edits, [Edit::insert(4, " | tojson")]);
    }
}
