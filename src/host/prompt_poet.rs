//! prompt-poet's `.yml.j2` prompts: a Jinja template that renders to a YAML list of parts
//! (`name`, `role`, `content`, `truncation_priority`). The parts' contents, in order, are
//! the request.

use super::yaml::{self, Node};
use super::{HostMap, Segment};

/// Whether a `.yml.j2` file is laid out as prompt-poet parts: list items with a `name:`
/// and a `content:` key at the same column (an Ansible task has no `content:` there).
pub fn is_prompt_poet(text: &str) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    lines.iter().enumerate().any(|(i, line)| {
        let indent = line.len() - line.trim_start().len();
        let Some(rest) = line[indent..].strip_prefix('-') else {
            return false;
        };
        let item_indent = indent + 1 + (rest.len() - rest.trim_start().len());
        let item_keys = std::iter::once(rest.trim_start()).chain(
            lines[i + 1..]
                .iter()
                .take_while(|l| {
                    l.trim().is_empty() || l.len() - l.trim_start().len() >= item_indent
                })
                .filter(|l| l.len() - l.trim_start().len() == item_indent)
                .copied()
                .map(|l| &l[item_indent..]),
        );
        let mut name = false;
        let mut content = false;
        for key in item_keys {
            name |= key.starts_with("name:");
            content |= key.starts_with("content:");
        }
        name && content
    })
}

/// One part of a rendered prompt.
#[derive(Debug, Clone)]
pub struct Part {
    pub role: Option<String>,
    pub content: String,
    /// From the content's bytes to the rendered YAML's.
    pub map: HostMap,
}

/// The parts of a rendered prompt-poet template, or why it is not a list of parts.
pub fn parts(rendered: &str) -> Result<Vec<Part>, String> {
    let documents = yaml::parse(rendered).map_err(|e| {
        format!(
            "the rendered prompt is not YAML ({} at byte {})",
            e.message, e.offset
        )
    })?;
    let Some(Node::Sequence(items)) = documents.first() else {
        return Err("the rendered prompt is not a YAML list of parts".into());
    };
    let mut out = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let Node::Mapping(entries) = item else {
            return Err(format!("part {index} is not a mapping"));
        };
        let scalar = |name: &str| {
            entries.iter().find_map(|(k, v)| match v {
                Node::Scalar(s) if k.value == name => Some(s),
                _ => None,
            })
        };
        let Some(content) = scalar("content") else {
            return Err(format!("part {index} has no `content:`"));
        };
        let (text, map) = yaml::text_and_map(rendered, content);
        let (text, map) = cleanup(rendered, &text, &map);
        out.push(Part {
            role: scalar("role").map(|s| s.value.clone()),
            content: text,
            map,
        });
    }
    Ok(out)
}

/// What prompt-poet does to a part's content: strip the whitespace around it, turn its
/// space marker into a space and its escaped line breaks into line breaks.
fn cleanup(rendered: &str, content: &str, map: &HostMap) -> (String, HostMap) {
    const SPACE_MARKER: &str = "<|space|>";
    let trimmed_start = content.len() - content.trim_start().len();
    let trimmed = content.trim();
    // Each output character with the rendered offset it came from.
    let mut out: Vec<(char, usize)> = Vec::new();
    let mut at = 0;
    while at < trimmed.len() {
        let offset = trimmed_start + at;
        let rest = &trimmed[at..];
        let (produced, len) = if rest.starts_with(SPACE_MARKER) {
            (' ', SPACE_MARKER.len())
        } else if rest.starts_with("\\n") {
            ('\n', 2)
        } else if rest.starts_with("\\r") {
            ('\r', 2)
        } else {
            let c = rest.chars().next().unwrap_or_default();
            (c, c.len_utf8())
        };
        out.push((produced, map.host_offset(offset)));
        at += len;
    }
    let mut text = String::new();
    let mut segments: Vec<Segment> = Vec::new();
    for (c, host) in out {
        let text_start = text.len();
        text.push(c);
        let len = c.len_utf8();
        let verbatim = rendered.get(host..host + len) == Some(&text[text_start..]);
        if let Some(last) = segments.last_mut() {
            let contiguous = last.text_len == last.host_len
                && last.host_start + last.host_len == host
                && last.text_start + last.text_len == text_start;
            if verbatim && contiguous {
                last.text_len += len;
                last.host_len += len;
                continue;
            }
        }
        segments.push(Segment {
            text_start,
            text_len: len,
            host_start: host,
            host_len: if verbatim { len } else { len + 1 },
        });
    }
    (text, HostMap::new(segments))
}

/// The parts' contents joined, and the map from the joined text to the rendered YAML.
pub fn joined(parts: &[Part]) -> (String, HostMap) {
    let mut text = String::new();
    let mut segments = Vec::new();
    for part in parts {
        let base = text.len();
        text.push_str(&part.content);
        segments.extend(part.map.segments().iter().map(|s| Segment {
            text_start: s.text_start + base,
            ..*s
        }));
    }
    (text, HostMap::new(segments))
}

#[cfg(test)]
mod tests {
    use super::*;

    const POET: &str = "- name: system instructions\n  role: system\n  content: |\n    You are {{ name }}.\n- name: user query\n  role: user\n  content: |\n    {{ query }}\n";

    #[test]
    fn parts_are_recognised_and_ansible_tasks_are_not() {
        assert!(is_prompt_poet(POET));
        assert!(!is_prompt_poet(
            "- name: copy the config\n  copy:\n    content: \"{{ x }}\"\n    dest: /etc/x\n"
        ));
        assert!(!is_prompt_poet("key: {{ value }}\n"));
    }

    #[test]
    fn the_request_is_the_contents_in_order() {
        let rendered = "- name: system instructions\n  role: system\n  content: |\n    You are Ada.\n- name: user query\n  role: user\n  content: |\n    hello\n";
        let parts = parts(rendered).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[1].role.as_deref(), Some("user"));
        let (text, map) = joined(&parts);
        assert_eq!(text, "You are Ada.hello");
        let hello = text.find("hello").unwrap();
        assert_eq!(&rendered[map.host_offset(hello)..][..5], "hello");
    }
}
