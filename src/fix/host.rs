//! A fixed embedded template written back into its host file. The template's old and new
//! text are compared line by line; each changed stretch of lines is replaced in the host at
//! the place its [`HostMap`] gives, and every line break it brings is followed by the
//! indentation the host gives the template's lines (a YAML block scalar's, a dedented
//! Python string's). A JSON string holds its line breaks as `\n` escapes: what an edit
//! brings is written escaped, with no indentation. The caller extracts the template again
//! and compares it with the fixed text, so an edit the host's quoting cannot hold (an
//! escape, a folded scalar) is refused, never written wrong.

use crate::host::EmbeddedTemplate;

/// The host text with `template` replaced by `fixed`; `None` when the edits cannot be
/// placed.
pub fn write_back(host: &str, template: &EmbeddedTemplate, fixed: &str) -> Option<String> {
    let old = template.text.as_str();
    let old_starts = line_starts(old);
    let new_starts = line_starts(fixed);
    let indent = indentation(host, template);
    // The host's line endings: a YAML or Python parser gives `\n` for a CRLF line break, so
    // a line the fix moves gets the host's `\r\n` back.
    let crlf = host
        .find('\n')
        .is_some_and(|at| at > 0 && host.as_bytes()[at - 1] == b'\r');
    let diff = similar::TextDiff::from_lines(old, fixed);
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    for op in diff.ops() {
        let (old_range, new_range) = (op.old_range(), op.new_range());
        if matches!(op, similar::DiffOp::Equal { .. }) {
            continue;
        }
        let start = old_starts[old_range.start];
        let end = old_starts[old_range.end];
        let replacement = &fixed[new_starts[new_range.start]..new_starts[new_range.end]];
        let host_start = host_at(host, template, start);
        let host_end = if end > start {
            host_at(host, template, end)
        } else {
            host_start
        };
        if host_end < host_start {
            return None;
        }
        let at_line_start = host_start == 0 || host.as_bytes()[host_start - 1] == b'\n';
        let encoded = match template.kind {
            crate::host::HostKind::Json => json_escaped(replacement),
            _ => encode(replacement, &indent, at_line_start, crlf),
        };
        edits.push((host_start, host_end, encoded));
    }
    edits.sort_by_key(|e| (e.0, e.1));
    let mut out = String::with_capacity(host.len() + 64);
    let mut at = 0;
    for (start, end, text) in edits {
        if start < at || end > host.len() {
            return None;
        }
        out.push_str(host.get(at..start)?);
        out.push_str(&text);
        at = end;
    }
    out.push_str(host.get(at..)?);
    Some(out)
}

/// The host offset of template offset `offset`. The end of a template whose text ends in
/// a line break is just past that break in the host (a decoder maps a produced break
/// coarsely, so the map's own end may lie inside the next host line).
fn host_at(host: &str, template: &EmbeddedTemplate, offset: usize) -> usize {
    let text = &template.text;
    if offset == text.len() && text.ends_with('\n') {
        let at = template.map.host_offset(offset - 1);
        if host.as_bytes().get(at) == Some(&b'\n') {
            return at + 1;
        }
    }
    template.map.host_offset(offset)
}

/// Byte offsets where each line of `text` starts, and its length last.
fn line_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
    if *starts.last().unwrap_or(&0) != text.len() {
        starts.push(text.len());
    }
    starts
}

/// The whitespace the host puts before the template's lines after its first: what lies
/// between a host line's start and the first byte of a non-empty template line there.
fn indentation(host: &str, template: &EmbeddedTemplate) -> String {
    let text = &template.text;
    for (i, _) in text.match_indices('\n') {
        let next = i + 1;
        if next >= text.len() || text[next..].starts_with('\n') {
            continue;
        }
        let at = template.map.host_offset(next).min(host.len());
        let line_start = host[..at].rfind('\n').map_or(0, |n| n + 1);
        let lead = &host[line_start..at];
        if lead.chars().all(|c| c == ' ' || c == '\t') {
            return lead.to_owned();
        }
        return String::new();
    }
    String::new()
}

/// Template text as a JSON string's content holds it.
fn json_escaped(text: &str) -> String {
    let quoted = serde_json::to_string(text).unwrap_or_default();
    quoted[1..quoted.len().saturating_sub(1).max(1)].to_owned()
}

/// Template text as the host holds it: each line that starts a host line gets the indent.
fn encode(text: &str, indent: &str, at_line_start: bool, crlf: bool) -> String {
    let mut out = String::with_capacity(text.len() + indent.len() * 4);
    let mut line_start = at_line_start;
    let mut previous = None;
    for c in text.chars() {
        if line_start && c != '\n' {
            out.push_str(indent);
        }
        if crlf && c == '\n' && previous != Some('\r') {
            out.push('\r');
        }
        out.push(c);
        line_start = c == '\n';
        previous = Some(c);
    }
    // A stretch inserted after the host's indentation ends with a line break: the line that
    // follows in the host lost the indent it had, so it gets it back.
    if !at_line_start && text.ends_with('\n') {
        out.push_str(indent);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{HostKind, HostMap, Segment};

    #[test]
    fn a_moved_line_keeps_the_block_scalar_indentation() {
        let host = "p: |\n  A {{ now }}\n  B\n  C\nq: 1\n";
        // "A {{ now }}\nB\nC\n", each line copied verbatim from after its indent.
        let mut segments = Vec::new();
        let mut text_at = 0;
        for line in ["A {{ now }}\n", "B\n", "C\n"] {
            let host_at = host.find(line).unwrap();
            segments.push(Segment {
                text_start: text_at,
                text_len: line.len(),
                host_start: host_at,
                host_len: line.len(),
            });
            text_at += line.len();
        }
        let template = EmbeddedTemplate {
            kind: HostKind::Yaml,
            key: "p".into(),
            anchor_line: 1,
            text: "A {{ now }}\nB\nC\n".into(),
            map: HostMap::new(segments),
            format: crate::formats::TemplateFormat::Jinja,
            format_note: None,
        };
        let fixed = write_back(host, &template, "B\nC\nA {{ now }}\n").unwrap();
        assert_eq!(fixed, "p: |\n  B\n  C\n  A {{ now }}\nq: 1\n");
    }

    #[test]
    fn a_moved_line_keeps_the_hosts_crlf_line_breaks() {
        assert_eq!(encode("B\nC\n", "  ", true, true), "  B\r\n  C\r\n");
        assert_eq!(encode("B\r\nC\n", "", true, true), "B\r\nC\r\n");
        assert_eq!(encode("B\nC\n", "  ", true, false), "  B\n  C\n");
    }
}
