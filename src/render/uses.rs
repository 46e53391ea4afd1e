//! Where a template reads a variable, for diagnostics about that variable.

use minijinja::machinery::{tokenize, Token};
use minijinja::syntax::SyntaxConfig;
use std::ops::Range;

/// The first place a variable is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariableUse {
    /// The template that reads it (the checked one, or one it includes).
    pub template: String,
    /// Byte range of the read in that template's source.
    pub span: Range<usize>,
    /// 1-based line and column of the read in that template.
    pub line: usize,
    pub column: usize,
    /// When an included template reads it: the include tag in the checked template.
    pub include_tag: Option<Range<usize>>,
}

/// The byte range of the first read of dotted `path` (`user.name`) in `source`: the
/// longest leading part of the path written there, or `None` when the name does not occur
/// as a variable. Attribute names (`x.user`) and keyword arguments (`f(user=1)`) are not reads.
pub fn first_use(source: &str, syntax: &SyntaxConfig, path: &str) -> Option<Range<usize>> {
    let parts: Vec<&str> = path.split('.').collect();
    let tokens: Vec<(Token<'_>, Range<usize>)> = tokenize(source, false, syntax.clone())
        .map_while(Result::ok)
        .map(|(token, span)| (token, span.start_offset as usize..span.end_offset as usize))
        .collect();
    for (i, (token, span)) in tokens.iter().enumerate() {
        if !matches!(token, Token::Ident(name) if *name == parts[0]) {
            continue;
        }
        let after_dot = i > 0 && matches!(tokens[i - 1].0, Token::Dot);
        let is_keyword = matches!(tokens.get(i + 1), Some((Token::Assign, _)))
            && matches!(
                tokens.get(i.wrapping_sub(1)),
                Some((Token::Comma | Token::ParenOpen, _))
            );
        if after_dot || is_keyword {
            continue;
        }
        let mut end = span.end;
        let mut next = i + 1;
        for part in &parts[1..] {
            match (tokens.get(next), tokens.get(next + 1)) {
                (Some((Token::Dot, _)), Some((Token::Ident(name), attr))) if name == part => {
                    end = attr.end;
                    next += 2;
                }
                _ => break,
            }
        }
        return Some(span.start..end);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(source: &str, path: &str) -> Option<String> {
        first_use(source, &SyntaxConfig::default(), path).map(|r| source[r].to_owned())
    }

    #[test]
    fn finds_the_first_read_of_a_dotted_path() {
        let source =
            "Hi {{ f(user=1) }} {{ x.user }} {% if user.name %}{{ user.name.first }}{% endif %}";
        assert_eq!(find(source, "user.name").as_deref(), Some("user.name"));
        assert_eq!(
            first_use(source, &SyntaxConfig::default(), "user").map(|r| r.start),
            source.find("user.name")
        );
        assert_eq!(find(source, "user.email").as_deref(), Some("user"));
        assert_eq!(find("plain user text", "user"), None);
        assert_eq!(
            find("{{ question }}", "question").as_deref(),
            Some("question")
        );
    }
}
