//! The candidate fixes of one finding, best first: each rule's own repair, then (for the
//! rules about what breaks the prefix, PL001-PL005) the unsafe move of the line that
//! carries the value to the end of the template. Candidates are proposals; the engine
//! keeps the first one the verifier accepts.

use super::jinja::{self, Block, Tag, TagKind};
use super::{newline_of, Edit, Fix, FixKind, Safety};
use crate::check::linter::Inspection;
use crate::formats::TemplateFormat;
use crate::rules::Finding;
use crate::suppress;
use std::ops::Range;

/// The rules with fixes (`## Fix safety` in their docs).
pub const FIXABLE: &[&str] = &[
    "PL001", "PL002", "PL003", "PL004", "PL005", "PL009", "PL010", "PL012",
];

/// The rules a move to the end can fix: what they are about breaks the shared prefix.
const MOVABLE: &[&str] = &["PL001", "PL002", "PL003", "PL004", "PL005"];

/// What a template offers to fix one finding: candidates, best first, or why there is none.
pub fn candidates(
    source: &str,
    finding: &Finding,
    inspection: Option<&Inspection>,
) -> Result<Vec<Fix>, String> {
    let code = finding.rule.code.as_str();
    if !FIXABLE.contains(&code) {
        return Ok(Vec::new());
    }
    let span = finding.span.clone();
    if span.end > source.len()
        || !source.is_char_boundary(span.start)
        || !source.is_char_boundary(span.end)
    {
        return Err("the finding is not in this template's text".into());
    }
    match inspection.map_or(TemplateFormat::Jinja, |i| i.format) {
        TemplateFormat::Jinja => {}
        TemplateFormat::FString => return Err(crate::formats::fstring::NO_FIX.into()),
        // The other formats have no tags or blocks to rewrite: what breaks the prefix
        // moves to the end, lines whole (PL001, PL002).
        _ if matches!(code, "PL001" | "PL002") => {
            return move_to_end(source, &[], &[], &finding.span, code, Markup::Fields)
        }
        _ => return Ok(Vec::new()),
    }
    let tags = jinja::tags(source);
    let blocks = jinja::blocks(source, &tags);
    let fix = |safety, kind, title: String, edits| Fix {
        rule: code.to_owned(),
        safety,
        kind,
        title,
        edits,
    };
    let mut fixes = Vec::new();
    let expression = jinja::expression_at(&tags, &span);
    match code {
        // A value that differs between renders may be the same data written differently:
        // Python's `str()` of a mapping, or a mapping's items in the order they came.
        "PL002" | "PL003" => {
            if let Some(tag) = expression {
                if let Some(edits) = python_repr_to_json(source, tag, inspection) {
                    fixes.push(fix(
                        Safety::Safe,
                        FixKind::Rewrite,
                        "Serialize canonically: add `| tojson` (sorted keys)".into(),
                        edits,
                    ));
                }
            }
            if let Some(block) = innermost(&blocks, &span, "for") {
                fixes.extend(
                    stable_loop_order(source, block)
                        .into_iter()
                        .map(|(safety, title, edit)| {
                            fix(safety, FixKind::Rewrite, title, vec![edit])
                        }),
                );
            } else if let Some(tag) = expression {
                for (title, edit) in sorted_before_tojson(source, tag) {
                    fixes.push(fix(Safety::Unsafe, FixKind::Rewrite, title, vec![edit]));
                }
            }
        }
        "PL004" => {
            let filter = match finding.label.as_str() {
                "CRLF vs LF" => Some((r#"replace("\r\n", "\n")"#, "Normalize line endings")),
                "trailing whitespace differs" => Some(("trim", "Strip the whitespace around it")),
                _ => None,
            };
            if let (Some((filter, what)), Some(tag)) = (filter, expression) {
                if let Some(edits) = add_filter(source, tag, filter) {
                    fixes.push(fix(
                        Safety::Safe,
                        FixKind::Rewrite,
                        format!("{what}: add `| {filter}`"),
                        edits,
                    ));
                }
            }
        }
        "PL005" => {
            let at = expression.map_or(span.start, |tag| tag.range.start);
            let before = source[..at].chars().next_back();
            if before.is_some_and(|c| !c.is_whitespace()) {
                for (separator, name) in [(" ", "a space"), (newline_of(source), "a line break")] {
                    fixes.push(fix(
                        Safety::Safe,
                        FixKind::Rewrite,
                        format!("Add {name} before the value, so the stable text ends a token"),
                        vec![Edit::insert(at, separator)],
                    ));
                }
            }
        }
        "PL009" => return unused_suppression(source, finding),
        "PL010" => return reason_placeholder(source, &span).map(|f| vec![f]),
        "PL012" => return breakpoint_placement(source, finding).map(|f| vec![f]),
        _ => {}
    }
    if MOVABLE.contains(&code) {
        match move_to_end(source, &tags, &blocks, &span, code, Markup::Jinja) {
            Ok(moved) => fixes.extend(moved),
            Err(reason) if fixes.is_empty() => return Err(reason),
            Err(_) => {}
        }
    }
    Ok(fixes)
}

/// PL012: the `cache_control` breakpoints moved, added or removed to the placement the rule
/// advises (its edits, computed where it read the renders' source map). Safe: the model
/// reads the same request, only what is cached and billed changes; and the rule advises it
/// only where it costs less at the model's prices, the write premium counted.
fn breakpoint_placement(source: &str, finding: &Finding) -> Result<Fix, String> {
    let saving = finding
        .saving
        .as_deref()
        .ok_or("no placement reads more or costs less than the breakpoints written here")?;
    if saving.edits.is_empty() {
        return Err(saving
            .not_editable
            .clone()
            .unwrap_or_else(|| "the placement needs no edit".into()));
    }
    // The edits are offsets of the text the rule read: refuse them where that text has
    // changed (a removal must take a `"cache_control"` member, an insertion go before `}`).
    for edit in &saving.edits {
        let (start, end) = (edit.range.start, edit.range.end);
        let fits = end <= source.len()
            && source.is_char_boundary(start)
            && source.is_char_boundary(end)
            && if start == end {
                source[start..].starts_with('}')
            } else {
                source[start..end].contains(crate::analyse::request_body::CACHE_CONTROL_KEY)
            };
        if !fits {
            return Err("the template changed since its breakpoints were read".into());
        }
    }
    Ok(Fix {
        rule: "PL012".into(),
        safety: Safety::Safe,
        kind: FixKind::Rewrite,
        title: saving.title.clone(),
        edits: saving
            .edits
            .iter()
            .map(|e| Edit {
                range: e.range.clone(),
                replacement: e.replacement.clone(),
            })
            .collect(),
    })
}

/// The innermost block of `keyword` around `span`.
fn innermost<'a>(blocks: &'a [Block], span: &Range<usize>, keyword: &str) -> Option<&'a Block> {
    blocks
        .iter()
        .filter(|b| b.keyword == keyword)
        .filter(|b| b.open.range.start <= span.start && span.end <= b.close.range.end)
        .min_by_key(|b| b.range().len())
}

/// The expression tag rewritten: `{{ EXPR }}` → `{{ EXPR | filter }}` (parenthesized when
/// the filter would bind to a part of it), as insertions that keep the rest of the tag.
fn add_filter(source: &str, tag: &Tag, filter: &str) -> Option<Vec<Edit>> {
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

/// PL003 on a mapping or list written with its Python `str()` (not JSON, which `tojson`
/// would quote as a string): `| tojson` keeps its data, in canonical JSON with sorted keys.
fn python_repr_to_json(
    source: &str,
    tag: &Tag,
    inspection: Option<&Inspection>,
) -> Option<Vec<Edit>> {
    let (_, written) = inspection?.written_at(tag.range.start)?;
    let python_repr = |value: &str| {
        let value = value.trim();
        (value.starts_with('{') || value.starts_with('['))
            && serde_json::from_str::<serde_json::Value>(value).is_err()
    };
    if written.is_empty() || !written.iter().all(|(_, value)| python_repr(value)) {
        return None;
    }
    if source[tag.inner.clone()].contains("tojson") {
        return None;
    }
    add_filter(source, tag, "tojson")
}

/// The orders a loop can take whatever order its input comes in: a mapping's items sorted
/// by key (safe: a mapping has no order of its own), or a list sorted (unsafe: a list's
/// order may mean something), by `name` first, as tool lists are.
fn stable_loop_order(source: &str, block: &Block) -> Vec<(Safety, String, Edit)> {
    let inner = block.open.inner.clone();
    let statement = &source[inner.clone()];
    let Some(in_at) = statement.find(" in ") else {
        return Vec::new();
    };
    let iterable_start = in_at + 4;
    let rest = &statement[iterable_start..];
    // The iterable ends before a loop filter (`if …`) or `recursive`.
    let iterable_len = [" if ", " recursive"]
        .iter()
        .filter_map(|k| rest.find(k))
        .min()
        .unwrap_or(rest.trim_end().len());
    let iterable = rest[..iterable_len].trim();
    let range = inner.start + iterable_start + (rest.len() - rest.trim_start().len())
        ..inner.start + iterable_start + iterable_len.min(rest.trim_end().len());
    if iterable.is_empty() || iterable.contains("sort") {
        return Vec::new();
    }
    if let Some(mapping) = iterable.strip_suffix(".items()") {
        return vec![(
            Safety::Safe,
            "Iterate the mapping in key order: `| dictsort`".into(),
            Edit {
                range,
                replacement: format!("{mapping} | dictsort"),
            },
        )];
    }
    let head = if jinja::filter_binds_whole(iterable) {
        iterable.to_owned()
    } else {
        format!("({iterable})")
    };
    [r#"sort(attribute="name")"#, "sort"]
        .iter()
        .map(|filter| {
            (
                Safety::Unsafe,
                format!("Iterate in a stable order: `| {filter}`"),
                Edit {
                    range: range.clone(),
                    replacement: format!("{head} | {filter}"),
                },
            )
        })
        .collect()
}

/// `{{ tools | tojson }}` whose list comes in different orders: sorted before it is
/// serialized (unsafe, as any list reordering).
fn sorted_before_tojson(source: &str, tag: &Tag) -> Vec<(String, Edit)> {
    let inner = &source[tag.inner.clone()];
    let Some(pipe) = inner.rfind('|') else {
        return Vec::new();
    };
    if !inner[pipe + 1..].trim_start().starts_with("tojson") || inner.contains("sort") {
        return Vec::new();
    }
    let head = inner[..pipe].trim();
    if head.is_empty() {
        return Vec::new();
    }
    let head_start = tag.inner.start + (inner.len() - inner.trim_start().len());
    let head_range = head_start..head_start + head.len();
    let head = if jinja::filter_binds_whole(head) {
        head.to_owned()
    } else {
        format!("({head})")
    };
    [r#"sort(attribute="name")"#, "sort"]
        .iter()
        .map(|filter| {
            (
                format!("Serialize the list in a stable order: `| {filter}` before `| tojson`"),
                Edit {
                    range: head_range.clone(),
                    replacement: format!("{head} | {filter}"),
                },
            )
        })
        .collect()
}

/// PL009: the unused code out of the comment, or the comment when it was the only code
/// (with its line when nothing else is on it, else or when that would take a line out of
/// the renders, the comment alone).
fn unused_suppression(source: &str, finding: &Finding) -> Result<Vec<Fix>, String> {
    let span = finding.span.clone();
    let comment = &source[span.clone()];
    let unused = suppress::unused_code(&finding.message)
        .ok_or("cannot tell which code suppressed nothing")?;
    let (codes_range, _) =
        suppress::comment_codes(comment).ok_or("not an inline suppression comment")?;
    let codes: Vec<&str> = comment[codes_range.clone()]
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    let kept: Vec<&str> = codes.iter().copied().filter(|c| *c != unused).collect();
    if kept.len() == codes.len() {
        return Err(format!("`{unused}` is not in the comment"));
    }
    let fix = |title: &str, edit| Fix {
        rule: "PL009".into(),
        safety: Safety::Safe,
        kind: FixKind::Rewrite,
        title: title.to_owned(),
        edits: vec![edit],
    };
    if !kept.is_empty() {
        let range = span.start + codes_range.start..span.start + codes_range.end;
        return Ok(vec![fix(
            &format!("Remove `{unused}` from the suppression comment"),
            Edit {
                range,
                replacement: kept.join(", "),
            },
        )]);
    }
    let line = jinja::full_line(source, span.start);
    let before = &source[line.start..span.start];
    let after = &source[span.end..line.end];
    let mut fixes = Vec::new();
    if before.trim().is_empty() && after.trim().is_empty() {
        fixes.push(fix(
            "Remove the unused suppression comment and its line",
            Edit::delete(line),
        ));
    }
    // The space that separated the comment from what precedes it goes too.
    let spaces = before.len() - before.trim_end_matches([' ', '\t']).len();
    let spaces = if after.trim().is_empty() { spaces } else { 0 };
    fixes.push(fix(
        "Remove the unused suppression comment",
        Edit::delete(span.start - spaces..span.end),
    ));
    Ok(fixes)
}

/// PL010: the placeholder reason after the codes, for the author to replace.
fn reason_placeholder(source: &str, span: &Range<usize>) -> Result<Fix, String> {
    let comment = &source[span.clone()];
    let (_, after_codes) =
        suppress::comment_codes(comment).ok_or("not an inline suppression comment")?;
    Ok(Fix {
        rule: "PL010".into(),
        safety: Safety::Safe,
        kind: FixKind::Rewrite,
        title: format!(
            "Add the reason placeholder `{}`",
            suppress::REASON_PLACEHOLDER
        ),
        edits: vec![Edit::insert(
            span.start + after_codes,
            format!(" {}", suppress::REASON_PLACEHOLDER),
        )],
    })
}

/// The unsafe fix of what breaks the prefix: the smallest unit that carries the value (its
/// line, the `{% if %}`/`{% for %}` block around it, with the label line or Markdown
/// heading that introduces it) moved after everything else.
/// What opens a value in the template's syntax, for reading a line as "just a value".
#[derive(Clone, Copy, PartialEq, Eq)]
enum Markup {
    /// Jinja's `{{`, `{%`, `{#`.
    Jinja,
    /// A `{var}` field (`{x}`, Semantic Kernel's `{{$x}}`): any `{`.
    Fields,
}

impl Markup {
    fn opens(self, text: &str) -> bool {
        match self {
            Markup::Jinja => ["{{", "{%", "{#"].iter().any(|open| text.starts_with(open)),
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

fn move_to_end(
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
    let value_only = first_line.lines().count() == 1 && {
        let trimmed = first_line.trim();
        match markup {
            Markup::Jinja => trimmed.starts_with("{{") || trimmed.starts_with("{%"),
            Markup::Fields => markup.opens(trimmed),
        }
    };
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
    use crate::fix::apply;

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

    /// Templates are untrusted: no span on any of these odd texts makes a producer panic,
    /// and every edit it proposes applies.
    #[test]
    fn odd_templates_and_spans_never_panic() {
        let sources = [
            "",
            "{{",
            "{% if %}{{ x }}",
            "é{{ ü }}\r\n{% for a in b.items() %}ñ{% endfor %}",
            "{# prefixlint: ignore[PL001, , X] #}\n{{ a ~ b }}\n",
            "{% raw %}{{ x }}{% endraw %}{% block b %}{{ y }}{% endblock %}\nz",
            "{% for x in %}{{ x | tojson }}{% endfor %}",
            "{% for x in xs if x recursive %}{{ x }}{% endfor %}\n{{ '}}' }}",
            "a\n\n{{ now }}\n\nb\n",
            "{% extends 'x' %}{{ now }}\nq",
            "{{- x -}}\n{%- if y -%}\n{{ z | trim }}\n{%- endif -%}",
        ];
        for source in sources {
            let boundaries: Vec<usize> = (0..=source.len())
                .filter(|i| source.is_char_boundary(*i))
                .collect();
            for code in FIXABLE {
                for (n, &start) in boundaries.iter().enumerate() {
                    for &end in boundaries[n..].iter().take(6) {
                        for label in ["CRLF vs LF", "trailing whitespace differs", ""] {
                            let rule = crate::rules::meta(code);
                            let finding = Finding {
                                saving: None,
                                rule,
                                severity: rule.severity,
                                cadence: None,
                                message: "unused suppression: PL001 (x)".into(),
                                help: String::new(),
                                span: start..end,
                                label: label.into(),
                                related: Vec::new(),
                            };
                            if let Ok(fixes) = candidates(source, &finding, None) {
                                for fix in fixes {
                                    let _ = apply(source, &fix.edits);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn every_fixable_rule_documents_its_fix_safety() {
        for code in FIXABLE {
            let docs = &crate::rules::meta(code).docs;
            assert!(
                docs.contains("## Fix safety"),
                "{code} has no `## Fix safety`"
            );
        }
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
