//! Mustache, read as chevron 0.14 reads it (`chevron/tokenizer.py`): a flat list of tokens
//! with their byte spans, standalone lines (a section, inverted section, end, comment,
//! partial or delimiter tag alone on its line) removed as chevron removes them, quirks
//! included (only spaces are trimmed before a standalone tag; a triple mustache under
//! other delimiters renders nothing).

use super::SyntaxError;
use std::ops::Range;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Literal,
    /// `{{name}}`: HTML-escaped.
    Variable,
    /// `{{{name}}}`, `{{&name}}`.
    NoEscape,
    Section,
    Inverted,
    End,
    Partial,
    /// `{{=<% %>=}}`: already applied by the tokenizer, renders nothing.
    SetDelimiter,
    /// `{{{name}` without its third brace (or under other delimiters): chevron renders nothing.
    UnclosedNoEscape,
}

#[derive(Debug, Clone)]
pub struct Token {
    pub kind: Kind,
    /// The key (stripped), or the literal's text.
    pub key: String,
    /// The literal's bytes, or the whole tag, in the template's text.
    pub span: Range<usize>,
}

#[derive(Debug, Clone, Default)]
pub struct Template {
    pub tokens: Vec<Token>,
}

/// Sections nest at most this deep (chevron recurses once per list section).
pub const MAX_DEPTH: usize = 100;

/// Reads `text` as chevron tokenizes it.
pub fn parse(text: &str) -> Result<Template, SyntaxError> {
    let mut tokens = Vec::new();
    let mut left = "{{".to_owned();
    let mut right = "}}".to_owned();
    let mut open: Vec<(String, usize)> = Vec::new();
    // chevron's `is_standalone`: true, false, or (where neither check ran) None, falsy.
    let mut standalone = true;
    let mut pos = 0;
    while pos < text.len() {
        let Some(found) = text[pos..].find(left.as_str()) else {
            tokens.push(literal(text, pos..text.len()));
            break;
        };
        let mut lit = pos..pos + found;
        let tag_start = lit.end;
        let inner_start = tag_start + left.len();
        if inner_start >= text.len() {
            // `split(l_del, 1)` left nothing after the delimiter: the literal ends it.
            if !lit.is_empty() {
                tokens.push(literal(text, lit));
            }
            break;
        }
        let literal_text = &text[lit.clone()];
        if literal_text.contains('\n') || standalone {
            let padding = literal_text.rsplit('\n').next().unwrap_or_default();
            standalone = padding.chars().all(char::is_whitespace);
        } else {
            standalone = false;
        }
        let Some(close) = text[inner_start..].find(right.as_str()) else {
            return Err(SyntaxError::new(tag_start, "unclosed tag"));
        };
        let mut tag = &text[inner_start..inner_start + close];
        let mut end = inner_start + close + right.len();
        let Some(first) = tag.chars().next() else {
            return Err(SyntaxError::new(tag_start, "empty tag"));
        };
        let mut kind = match first {
            '!' => None,
            '#' => Some(Kind::Section),
            '^' => Some(Kind::Inverted),
            '/' => Some(Kind::End),
            '>' => Some(Kind::Partial),
            '=' => Some(Kind::SetDelimiter),
            '{' => Some(Kind::UnclosedNoEscape),
            '&' => Some(Kind::NoEscape),
            _ => Some(Kind::Variable),
        };
        if kind != Some(Kind::Variable) {
            tag = &tag[first.len_utf8()..];
        }
        if kind == Some(Kind::SetDelimiter) {
            let Some(inner) = tag.strip_suffix('=') else {
                return Err(SyntaxError::new(tag_start, "unclosed set delimiter tag"));
            };
            tag = inner;
        } else if kind == Some(Kind::UnclosedNoEscape)
            && left == "{{"
            && right == "}}"
            && text[end..].starts_with('}')
        {
            end += 1;
            kind = Some(Kind::NoEscape);
        }
        let key = tag.trim().to_owned();
        match kind {
            Some(Kind::SetDelimiter) => {
                let parts: Vec<&str> = key.split(' ').collect();
                let (new_left, new_right) = (parts[0], parts[parts.len() - 1]);
                if new_left.is_empty() || new_right.is_empty() {
                    return Err(SyntaxError::new(tag_start, "empty delimiter"));
                }
                left = new_left.to_owned();
                right = new_right.to_owned();
            }
            Some(Kind::Section | Kind::Inverted) => {
                if open.len() >= MAX_DEPTH {
                    return Err(SyntaxError::new(
                        tag_start,
                        format!("sections nest more than {MAX_DEPTH} deep"),
                    ));
                }
                open.push((key.clone(), tag_start));
            }
            Some(Kind::End) => match open.pop() {
                None => {
                    return Err(SyntaxError::new(
                        tag_start,
                        format!("trying to close tag \"{key}\": it was not opened"),
                    ))
                }
                Some((last, _)) if last != key => {
                    return Err(SyntaxError::new(
                        tag_start,
                        format!("trying to close tag \"{key}\": the last open tag is \"{last}\""),
                    ))
                }
                Some(_) => {}
            },
            _ => {}
        }
        // A standalone tag takes its line: the rest of the line after it (through the
        // newline) and the spaces before it.
        standalone = standalone && !matches!(kind, Some(Kind::Variable | Kind::NoEscape)) && {
            let rest = &text[end..];
            let line = rest.split('\n').next().unwrap_or_default();
            line.chars().all(char::is_whitespace)
        };
        pos = end;
        if standalone {
            if let Some(newline) = text[end..].find('\n') {
                pos = end + newline + 1;
            }
            if kind != Some(Kind::Partial) {
                let kept = text[lit.clone()].trim_end_matches(' ').len();
                lit.end = lit.start + kept;
            }
        }
        if !lit.is_empty() {
            tokens.push(literal(text, lit));
        }
        if let Some(kind) = kind {
            tokens.push(Token {
                kind,
                key,
                span: tag_start..end,
            });
        }
    }
    if let Some((name, at)) = open.pop() {
        return Err(SyntaxError::new(
            at,
            format!("unexpected end of template: the tag \"{name}\" was never closed"),
        ));
    }
    Ok(Template { tokens })
}

fn literal(text: &str, span: Range<usize>) -> Token {
    Token {
        kind: Kind::Literal,
        key: text[span.clone()].to_owned(),
        span,
    }
}

impl Template {
    /// The partial tags (`{{> name}}`), which prefixlint does not read.
    pub fn partials(&self) -> impl Iterator<Item = &Token> {
        self.tokens.iter().filter(|t| t.kind == Kind::Partial)
    }

    /// The tags only Mustache (or Handlebars) writes: sections `{{#x}}`, inverted sections
    /// `{{^x}}` and their ends, raw `{{{x}}}`/`{{&x}}`, partials and delimiter changes.
    /// A plain `{{x}}` is also Jinja's (and Semantic Kernel's `{{$x}}` parses as Mustache):
    /// content detection takes a text for Mustache only where one of these is present.
    pub fn distinctive_tags(&self) -> impl Iterator<Item = &Token> {
        self.tokens.iter().filter(|t| {
            !matches!(
                t.kind,
                Kind::Literal | Kind::Variable | Kind::UnclosedNoEscape
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(text: &str) -> Vec<(Kind, String)> {
        parse(text)
            .unwrap()
            .tokens
            .into_iter()
            .map(|t| (t.kind, t.key))
            .collect()
    }

    #[test]
    fn standalone_tags_take_their_line() {
        assert_eq!(
            shape("Hi\n  {{#items}}  \n- {{name}}\n{{/items}}\nBye"),
            [
                (Kind::Literal, "Hi\n".to_owned()),
                (Kind::Section, "items".to_owned()),
                (Kind::Literal, "- ".to_owned()),
                (Kind::Variable, "name".to_owned()),
                (Kind::Literal, "\n".to_owned()),
                (Kind::End, "items".to_owned()),
                (Kind::Literal, "Bye".to_owned()),
            ]
        );
    }

    #[test]
    fn delimiters_and_triples() {
        assert_eq!(
            shape("{{=<% %>=}}<% a %> {{b}} <%{c}%>"),
            [
                (Kind::SetDelimiter, "<% %>".to_owned()),
                (Kind::Variable, "a".to_owned()),
                (Kind::Literal, " {{b}} ".to_owned()),
                (Kind::UnclosedNoEscape, "c}".to_owned()),
            ]
        );
        assert_eq!(shape("{{{x}}}")[0], (Kind::NoEscape, "x".to_owned()));
    }

    #[test]
    fn distinctive_tags_are_what_jinja_does_not_write() {
        let count = |text: &str| parse(text).unwrap().distinctive_tags().count();
        assert_eq!(count("Hello {{ name }}, today is {{date}}."), 0);
        assert_eq!(count("{{#docs}}- {{title}}\n{{/docs}}"), 2);
        assert_eq!(count("{{{raw}}} {{^none}}x{{/none}}"), 3);
    }

    #[test]
    fn errors_are_located() {
        assert_eq!(parse("ab {{x").unwrap_err().offset, 3);
        assert_eq!(parse("{{#a}}{{/b}}").unwrap_err().offset, 6);
        assert_eq!(parse("x {{#a}} y").unwrap_err().offset, 2);
        assert!(parse(&"{{#a}}".repeat(200)).is_err());
    }
}
