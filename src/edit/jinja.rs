//! Just enough of a Jinja template's structure for an edit: where its tags are, and which
//! block tags (`{% if %}` … `{% endif %}`) enclose a place. A fix that is wrong about the
//! structure is caught by the verifier (the template re-rendered and re-checked), so this
//! scanner only has to be right on ordinary templates, never complete.

use std::ops::Range;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagKind {
    /// `{{ … }}`
    Expression,
    /// `{% … %}`
    Statement,
    /// `{# … #}`
    Comment,
}

#[derive(Debug, Clone)]
pub struct Tag {
    pub kind: TagKind,
    /// The whole tag, delimiters included.
    pub range: Range<usize>,
    /// Between the delimiters and their whitespace-control marks (`-`, `+`).
    pub inner: Range<usize>,
}

impl Tag {
    /// A statement's first word (`if`, `endfor`, `include`).
    pub fn keyword<'a>(&self, source: &'a str) -> &'a str {
        let inner = source[self.inner.clone()].trim_start();
        let end = inner
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(inner.len());
        &inner[..end]
    }
}

/// Every tag of `source` in order. Quoted strings inside a tag do not end it; the text of a
/// `{% raw %}` block holds no tags.
pub fn tags(source: &str) -> Vec<Tag> {
    let bytes = source.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    let mut in_raw = false;
    while let Some(rel) = memchr::memchr(b'{', &bytes[at..]) {
        let start = at + rel;
        let (kind, close) = match bytes.get(start + 1) {
            Some(b'{') => (TagKind::Expression, "}}"),
            Some(b'%') => (TagKind::Statement, "%}"),
            Some(b'#') => (TagKind::Comment, "#}"),
            _ => {
                at = start + 1;
                continue;
            }
        };
        let Some(end) = tag_end(source, start + 2, kind, close) else {
            break;
        };
        let mut inner = start + 2..end - 2;
        if matches!(bytes.get(inner.start), Some(b'-' | b'+')) {
            inner.start += 1;
        }
        if inner.end > inner.start && matches!(bytes.get(inner.end - 1), Some(b'-' | b'+')) {
            inner.end -= 1;
        }
        let tag = Tag {
            kind,
            range: start..end,
            inner,
        };
        at = end;
        if kind == TagKind::Statement {
            let keyword = tag.keyword(source);
            if in_raw {
                if keyword != "endraw" {
                    continue;
                }
                in_raw = false;
            } else if keyword == "raw" {
                in_raw = true;
            }
        } else if in_raw {
            continue;
        }
        found.push(tag);
    }
    found
}

/// The end (exclusive) of a tag whose body starts at `from`.
fn tag_end(source: &str, from: usize, kind: TagKind, close: &str) -> Option<usize> {
    if kind == TagKind::Comment {
        return source[from..].find(close).map(|i| from + i + close.len());
    }
    let bytes = source.as_bytes();
    let mut quote = None;
    let mut i = from;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(_) if b == b'\\' => i += 1,
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'"' || b == b'\'' => quote = Some(b),
            None if bytes[i..].starts_with(close.as_bytes()) => return Some(i + close.len()),
            None => {}
        }
        i += 1;
    }
    None
}

/// The statements that open a block closed by `end<keyword>`.
const BLOCKS: &[&str] = &[
    "if",
    "for",
    "block",
    "macro",
    "call",
    "filter",
    "with",
    "autoescape",
    "raw",
    "trans",
];

/// A block statement and its end tag.
#[derive(Debug, Clone)]
pub struct Block {
    pub keyword: String,
    pub open: Tag,
    pub close: Tag,
}

impl Block {
    /// From the opening tag's start to the end tag's end.
    pub fn range(&self) -> Range<usize> {
        self.open.range.start..self.close.range.end
    }
}

/// Every block of `source` whose end tag is found, in order of their opening tags. A block
/// `{% set x %}…{% endset %}` counts as a block too.
pub fn blocks(source: &str, tags: &[Tag]) -> Vec<Block> {
    let mut open: Vec<(String, &Tag)> = Vec::new();
    let mut found = Vec::new();
    for tag in tags.iter().filter(|t| t.kind == TagKind::Statement) {
        let keyword = tag.keyword(source);
        let block_set = keyword == "set" && !source[tag.inner.clone()].contains('=');
        if BLOCKS.contains(&keyword) || block_set {
            open.push((keyword.to_owned(), tag));
        } else if let Some(name) = keyword.strip_prefix("end") {
            if let Some(at) = open.iter().rposition(|(k, _)| k == name) {
                let (keyword, opener) = open.remove(at);
                open.truncate(at);
                found.push(Block {
                    keyword,
                    open: opener.clone(),
                    close: tag.clone(),
                });
            }
        }
    }
    found.sort_by_key(|b| b.open.range.start);
    found
}

/// The innermost expression tag `{{ … }}` that covers `range`.
pub fn expression_at<'a>(tags: &'a [Tag], range: &Range<usize>) -> Option<&'a Tag> {
    tags.iter()
        .filter(|t| t.kind == TagKind::Expression)
        .find(|t| t.range.start <= range.start && range.end <= t.range.end)
}

/// Whether an expression can take one more filter at its end as it is (`a.b | x(1)`), or
/// needs parentheses first (`a ~ b`, `x if y else z`).
pub fn filter_binds_whole(expression: &str) -> bool {
    let mut depth = 0i32;
    let mut quote = None;
    let mut previous = ' ';
    for c in expression.trim().chars() {
        match quote {
            Some(q) => {
                if c == q && previous != '\\' {
                    quote = None;
                }
            }
            None => match c {
                '"' | '\'' => quote = Some(c),
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                _ if depth > 0 => {}
                c if c.is_alphanumeric() || "_.| \t,".contains(c) => {}
                _ => return false,
            },
        }
        previous = c;
    }
    // Keywords that make an operator: `x if y`, `a and b`, `not a`, `a in b`, `a is b`.
    let words: Vec<&str> = expression.split_whitespace().collect();
    !words
        .iter()
        .any(|w| matches!(*w, "if" | "else" | "and" | "or" | "not" | "in" | "is"))
}

/// The range of the line around `offset`, from its first byte to just after its line
/// break (or the end of the text).
pub fn full_line(text: &str, offset: usize) -> Range<usize> {
    let offset = crate::source::floor_char_boundary(text, offset.min(text.len()));
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let end = text[offset..]
        .find('\n')
        .map_or(text.len(), |i| offset + i + 1);
    start..end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_tags_and_their_blocks() {
        let source = "A {{ x }}\n{% if y %}B{# c #}{% endif %}\n{% raw %}{{ not }}{% endraw %}";
        let tags = tags(source);
        let kinds: Vec<TagKind> = tags.iter().map(|t| t.kind).collect();
        assert_eq!(
            kinds,
            [
                TagKind::Expression,
                TagKind::Statement,
                TagKind::Comment,
                TagKind::Statement,
                TagKind::Statement,
                TagKind::Statement
            ]
        );
        let blocks = blocks(source, &tags);
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0].keyword, "if");
        assert_eq!(&source[blocks[0].range()], "{% if y %}B{# c #}{% endif %}");
    }

    #[test]
    fn a_quoted_delimiter_does_not_end_a_tag() {
        let source = r#"{{ "}}" ~ x }} tail"#;
        assert_eq!(tags(source)[0].range, 0..14);
    }

    #[test]
    fn filters_bind_to_simple_chains_only() {
        assert!(filter_binds_whole(" tools | sort(attribute='name') "));
        assert!(filter_binds_whole("a.b[0]"));
        assert!(!filter_binds_whole("a ~ b"));
        assert!(!filter_binds_whole("x if y else z"));
        assert!(!filter_binds_whole("a + 1"));
    }
}
