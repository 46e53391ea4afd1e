//! Prompt templates that live inside other files: YAML values, Python string literals,
//! `.prompty` bodies and prompt-poet `.yml.j2` files.
//!
//! A host format's extractor turns a host file into [`EmbeddedTemplate`]s: the template's
//! text as the application would see it (escapes decoded, block scalars folded, dedent
//! applied), with a [`HostMap`] that takes every byte of that text back to the host file,
//! so findings, errors and suppressions point at the host's own lines and columns.

pub mod json;
pub mod prompt_poet;
pub mod prompty;
pub mod python;
pub mod text;
pub mod toml;
pub mod yaml;

/// Whether a host file's bytes may hold a Jinja template: `{{` or `{%` somewhere. Checked
/// before any host is parsed, so files without templates cost one scan.
pub fn may_hold_templates(bytes: &[u8]) -> bool {
    memchr::memmem::find(bytes, b"{{").is_some() || memchr::memmem::find(bytes, b"{%").is_some()
}

/// The kind of host a template was found in (`templates[].embedded.kind` in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HostKind {
    Yaml,
    Python,
    Prompty,
    PromptPoet,
    Toml,
    Json,
    /// A `.md`/`.txt` prompt file, or Semantic Kernel's `skprompt.txt`.
    Text,
}

impl HostKind {
    /// The name used in reports and in config `embedded:`.
    pub fn as_str(self) -> &'static str {
        match self {
            HostKind::Yaml => "yaml",
            HostKind::Python => "python",
            HostKind::Prompty => "prompty",
            HostKind::PromptPoet => "prompt-poet",
            HostKind::Toml => "toml",
            HostKind::Json => "json",
            HostKind::Text => "text",
        }
    }
}

/// A stretch of template text and the host bytes it came from.
///
/// When `text_len == host_len` the bytes were copied verbatim, and offsets inside map one
/// to one. Otherwise the host bytes were decoded (an escape such as `\n` or `\u00e9`, a
/// folded line break, removed indentation) and every text byte of the stretch maps to
/// `host_start`, the start of what produced it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub text_start: usize,
    pub text_len: usize,
    pub host_start: usize,
    pub host_len: usize,
}

/// Where each byte of an extracted template came from in its host file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostMap {
    /// Sorted by `text_start`, without overlaps.
    segments: Vec<Segment>,
}

impl HostMap {
    /// A map from segments in any order; empty stretches are dropped.
    pub fn new(mut segments: Vec<Segment>) -> Self {
        segments.retain(|segment| segment.text_len > 0 || segment.host_len > 0);
        segments.sort_by_key(|segment| segment.text_start);
        HostMap { segments }
    }

    /// The map of a template copied verbatim from `host_start` on, `len` bytes long.
    pub fn verbatim(host_start: usize, len: usize) -> Self {
        HostMap::new(vec![Segment {
            text_start: 0,
            text_len: len,
            host_start,
            host_len: len,
        }])
    }

    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// The host byte offset of the template byte at `text_offset`. An offset at or past the
    /// end of the text maps to the end of the last segment's host bytes; one in a gap
    /// between segments maps to the end of the segment before it.
    pub fn host_offset(&self, text_offset: usize) -> usize {
        let index = self
            .segments
            .partition_point(|segment| segment.text_start <= text_offset);
        let Some(segment) = index.checked_sub(1).map(|i| &self.segments[i]) else {
            return self
                .segments
                .first()
                .map_or(0, |segment| segment.host_start);
        };
        let inside = text_offset - segment.text_start;
        if inside < segment.text_len {
            if segment.text_len == segment.host_len {
                segment.host_start + inside
            } else {
                segment.host_start
            }
        } else {
            segment.host_start + segment.host_len
        }
    }
}

/// One template found inside a host file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddedTemplate {
    pub kind: HostKind,
    /// Where it sits in the host: a dotted YAML key path (`agent.templates.instance_template`,
    /// `prompts[2].content`) or a Python name (`PLANNING_PROMPT`, `PromptBuilder.template`).
    pub key: String,
    /// The 1-based host line that owns the template: the YAML key's line, or the line of the
    /// Python assignment or call. Suppression comments are read on this line.
    pub anchor_line: usize,
    /// The template text as the application renders it.
    pub text: String,
    /// Where each byte of `text` came from in the host file.
    pub map: HostMap,
    /// The format the template is in, as the host declares it or its content shows.
    pub format: crate::formats::TemplateFormat,
    /// A note on the format when the text reads two ways (both readings named).
    pub format_note: Option<String>,
}

/// Prompt-like text a host holds that no format can check (a declared format no renderer
/// knows, a prompt read through a loader prefixlint cannot follow, a prompt assembled at
/// run time): reported as `unchecked`, never passed in silence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unchecked {
    /// Where it sits in the host, as [`EmbeddedTemplate::key`].
    pub key: String,
    /// The 1-based host line.
    pub line: usize,
    pub reason: String,
}

/// What an extractor found in a host file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extracted {
    pub templates: Vec<EmbeddedTemplate>,
    pub unchecked: Vec<Unchecked>,
}

/// Cheap check on a data host's raw bytes (YAML, JSON, TOML, text): false means it surely
/// holds no template in any format. A template writes `{{`, `{%` or a `{name` field; a
/// JSON or TOML object opens with `{` and a quote, a space or a line break, and a YAML flow
/// mapping mostly with a space, so a `{` right before a letter is rare outside templates.
pub fn may_hold_any_template(bytes: &[u8]) -> bool {
    memchr::memchr_iter(b'{', bytes).any(|at| {
        bytes.get(at + 1).is_some_and(|next| {
            next.is_ascii_alphabetic() || matches!(next, b'_' | b'{' | b'%' | b'$')
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbatim_offsets_map_one_to_one() {
        let map = HostMap::verbatim(10, 5);
        assert_eq!(map.host_offset(0), 10);
        assert_eq!(map.host_offset(4), 14);
        assert_eq!(map.host_offset(5), 15);
        assert_eq!(map.host_offset(99), 15);
    }

    #[test]
    fn decoded_stretches_map_to_their_start() {
        // `a\nb` in a double-quoted host string at byte 20: `a`, the escape, `b`.
        let map = HostMap::new(vec![
            Segment {
                text_start: 2,
                text_len: 1,
                host_start: 23,
                host_len: 1,
            },
            Segment {
                text_start: 0,
                text_len: 1,
                host_start: 20,
                host_len: 1,
            },
            Segment {
                text_start: 1,
                text_len: 1,
                host_start: 21,
                host_len: 2,
            },
        ]);
        assert_eq!(map.host_offset(0), 20);
        assert_eq!(map.host_offset(1), 21);
        assert_eq!(map.host_offset(2), 23);
        assert_eq!(map.host_offset(3), 24);
    }

    #[test]
    fn an_empty_map_maps_to_zero() {
        assert_eq!(HostMap::default().host_offset(3), 0);
    }
}
