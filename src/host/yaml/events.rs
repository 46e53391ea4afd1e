//! The YAML event parser (`saphyr-parser`, which reports where each event sits) turned into
//! the small tree the extractor reads, with byte offsets into the host.

use super::{Node, Scalar, YamlSyntaxError};
use crate::host::yaml::scalar::Style;
use saphyr_parser::{Event, Parser, ScalarStyle};

/// Character index → byte offset (the parser counts characters).
struct Offsets {
    /// Byte offset of each character that is not ASCII, with its character index; empty
    /// for ASCII text, where the two are equal.
    wide: Vec<(usize, usize)>,
    len: usize,
}

impl Offsets {
    fn new(source: &str) -> Offsets {
        let wide = if source.is_ascii() {
            Vec::new()
        } else {
            source
                .char_indices()
                .enumerate()
                .map(|(index, (byte, _))| (index, byte))
                .collect()
        };
        Offsets {
            wide,
            len: source.len(),
        }
    }

    fn byte(&self, char_index: usize) -> usize {
        if self.wide.is_empty() {
            return char_index.min(self.len);
        }
        self.wide
            .get(char_index)
            .map_or(self.len, |&(_, byte)| byte)
    }
}

/// Deeper collections are refused (no prompt file nests this deep).
const MAX_DEPTH: usize = 128;

enum Open {
    Sequence(Vec<Node>),
    Mapping(Vec<(Scalar, Node)>, Option<Scalar>),
}

/// Parses a YAML stream into its documents' trees.
pub fn parse(source: &str) -> Result<Vec<Node>, YamlSyntaxError> {
    let offsets = Offsets::new(source);
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(source.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let line_of = |byte: usize| line_starts.partition_point(|&s| s <= byte);
    let mut documents = Vec::new();
    let mut stack: Vec<Open> = Vec::new();
    // Where a finished node goes: into the open collection, or it is a document.
    fn place(stack: &mut [Open], documents: &mut Vec<Node>, node: Node) {
        match stack.last_mut() {
            Some(Open::Sequence(items)) => items.push(node),
            Some(Open::Mapping(entries, key)) => match key.take() {
                Some(k) => entries.push((k, node)),
                None => {
                    // A key that is not a plain scalar (a mapping as key): keep the
                    // structure balanced with a key that matches nothing.
                    let key_scalar = match node {
                        Node::Scalar(s) => s,
                        _ => Scalar {
                            value: String::new(),
                            style: Style::Plain,
                            start: 0,
                            end: 0,
                            line: 0,
                            line_indent: 0,
                        },
                    };
                    *key = Some(key_scalar);
                }
            },
            None => documents.push(node),
        }
    }
    for item in Parser::new_from_str(source) {
        let (event, span) = item.map_err(|e| YamlSyntaxError {
            message: e.info().to_owned(),
            offset: offsets.byte(e.marker().index()),
        })?;
        match event {
            Event::Scalar(value, style, _, _) => {
                let start = offsets.byte(span.start.index());
                let end = offsets.byte(span.end.index());
                let line = line_of(start);
                let line_start = line_starts[line - 1];
                let line_indent = source[line_start..]
                    .bytes()
                    .take_while(|b| *b == b' ')
                    .count();
                let style = match style {
                    ScalarStyle::Plain => Style::Plain,
                    ScalarStyle::SingleQuoted => Style::SingleQuoted,
                    ScalarStyle::DoubleQuoted => Style::DoubleQuoted,
                    ScalarStyle::Literal => Style::Literal,
                    ScalarStyle::Folded => Style::Folded,
                };
                let scalar = Scalar {
                    value: value.into_owned(),
                    style,
                    start,
                    end,
                    line,
                    line_indent,
                };
                place(&mut stack, &mut documents, Node::Scalar(scalar));
            }
            Event::SequenceStart(..) | Event::MappingStart(..) if stack.len() >= MAX_DEPTH => {
                // Untrusted input: the tree is walked recursively, so its depth is bounded.
                return Err(YamlSyntaxError {
                    message: format!("nested deeper than {MAX_DEPTH} levels"),
                    offset: offsets.byte(span.start.index()),
                });
            }
            Event::SequenceStart(..) => stack.push(Open::Sequence(Vec::new())),
            Event::MappingStart(..) => stack.push(Open::Mapping(Vec::new(), None)),
            Event::SequenceEnd | Event::MappingEnd => {
                let node = match stack.pop() {
                    Some(Open::Sequence(items)) => Node::Sequence(items),
                    Some(Open::Mapping(entries, _)) => Node::Mapping(entries),
                    None => Node::Other,
                };
                place(&mut stack, &mut documents, node);
            }
            Event::Alias(_) => place(&mut stack, &mut documents, Node::Other),
            _ => {}
        }
    }
    Ok(documents)
}
