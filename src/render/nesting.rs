//! A bound on how deep one expression nests, checked on the token stream before minijinja
//! parses it. minijinja's parser limits brackets and blocks, but a chain of unary signs
//! (`- - - 1`), filters (`x | trim | trim`), binary operators (`a and b and c`) or postfix
//! calls (`f()()()`) becomes an AST one level deeper per link, and the parser, the
//! compiler, the drop of the tree and our own AST walks all recurse once per level: 20,000
//! minus signs overflowed the stack. The lexer is iterative, so counting its tokens is safe
//! on any input.

use minijinja::machinery::{tokenize, Token};
use minijinja::syntax::SyntaxConfig;

/// The deepest expression accepted: far beyond any real template (a chat template's
/// longest chain is a few dozen links), far below what a 2 MiB thread's stack holds.
pub const MAX_EXPRESSION_DEPTH: usize = 256;

/// What the error says, after the template's name.
pub const MESSAGE: &str = "an expression nests more than 256 levels deep (a long chain of signs, filters, operators or calls)";
pub const HELP: &str = "split the expression into steps with `{% set %}`";

/// Where an expression first nests deeper than [`MAX_EXPRESSION_DEPTH`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooDeep {
    /// Byte offset of the token that went past the limit.
    pub offset: usize,
    pub len: usize,
}

/// Checks every expression of `source`. A source that does not lex is left for the parser
/// to report, with its own place.
pub fn check(source: &str, syntax: &SyntaxConfig) -> Result<(), TooDeep> {
    // One count of chain links per open bracket (the first is the expression itself);
    // the nesting bound is the links on the open path plus the brackets.
    let mut links: Vec<usize> = vec![0];
    let mut depth = 0usize;
    // Whether the previous token ended an operand, so `(` or `[` is a call or subscript
    // (a link) rather than a grouping.
    let mut after_operand = false;
    for item in tokenize(source, false, syntax.clone()) {
        let Ok((token, span)) = item else {
            return Ok(());
        };
        let mut link = false;
        let mut operand = false;
        match token {
            Token::VariableStart | Token::BlockStart => {
                links.clear();
                links.push(0);
                depth = 0;
            }
            Token::ParenOpen | Token::BracketOpen | Token::BraceOpen => {
                if after_operand {
                    *links.last_mut().expect("never empty") += 1;
                    depth += 1;
                }
                links.push(0);
                depth += 1;
            }
            Token::ParenClose | Token::BracketClose | Token::BraceClose => {
                if links.len() > 1 {
                    depth -= links.pop().expect("more than one") + 1;
                }
                operand = true;
            }
            // Separators start a new expression at the same bracket level.
            Token::Comma | Token::Colon | Token::Assign => {
                let top = links.last_mut().expect("never empty");
                depth -= *top;
                *top = 0;
            }
            Token::Plus
            | Token::Minus
            | Token::Mul
            | Token::Div
            | Token::FloorDiv
            | Token::Pow
            | Token::Mod
            | Token::Dot
            | Token::Tilde
            | Token::Pipe
            | Token::Eq
            | Token::Ne
            | Token::Gt
            | Token::Gte
            | Token::Lt
            | Token::Lte => link = true,
            Token::Ident("and" | "or" | "not" | "is" | "in" | "if" | "else") => link = true,
            Token::Ident(_)
            | Token::Str(_)
            | Token::String(_)
            | Token::Int(_)
            | Token::Int128(_)
            | Token::Float(_) => operand = true,
            Token::TemplateData(_) | Token::VariableEnd | Token::BlockEnd => {}
        }
        if link {
            *links.last_mut().expect("never empty") += 1;
            depth += 1;
        }
        if depth > MAX_EXPRESSION_DEPTH {
            return Err(TooDeep {
                offset: span.start_offset as usize,
                len: (span.end_offset - span.start_offset) as usize,
            });
        }
        after_operand = operand;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_ok(source: &str) -> bool {
        check(source, &SyntaxConfig::default()).is_ok()
    }

    fn repeated(prefix: &str, link: &str, times: usize, suffix: &str) -> String {
        format!("{prefix}{}{suffix}", link.repeat(times))
    }

    #[test]
    fn long_chains_of_every_kind_are_refused_at_the_first_link_past_the_limit() {
        let limit = MAX_EXPRESSION_DEPTH;
        for (prefix, link, suffix) in [
            ("{{ ", "-", "1 }}"),
            ("{{ x", " | trim", " }}"),
            ("{{ a", " and a", " }}"),
            ("{{ f", "()", " }}"),
            ("{% set y = x", " ~ x", " %}"),
            ("{{ ", "not ", "x }}"),
        ] {
            // A call's arguments sit one level inside it: its chain is refused one link
            // earlier.
            assert!(
                depth_ok(&repeated(prefix, link, limit - 1, suffix)),
                "{link}"
            );
            let source = repeated(prefix, link, limit + 10, suffix);
            let err = check(&source, &SyntaxConfig::default()).unwrap_err();
            let at = prefix.len() + link.len() * (limit - 1);
            assert!(
                (at..at + 2 * link.len()).contains(&err.offset),
                "{link}: {err:?} not in link {limit}"
            );
        }
    }

    #[test]
    fn separators_and_blocks_start_afresh() {
        let limit = MAX_EXPRESSION_DEPTH;
        // Many short expressions side by side nest no deeper than one of them.
        let list = format!("{{{{ [{}] }}}}", vec!["a.b.c | d"; limit * 4].join(", "));
        assert!(depth_ok(&list));
        let dict = format!(
            "{{{{ {{{}}} }}}}",
            (0..limit * 4)
                .map(|i| format!("'k{i}': v.x ~ 'y'"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        assert!(depth_ok(&dict));
        let blocks = "{{ a ~ b ~ c }}{% if x and y %}z{% endif %}".repeat(limit * 4);
        assert!(depth_ok(&blocks));
        // Grouping brackets count once each: minijinja's own limit stays the one that speaks.
        assert!(depth_ok(&repeated("{{ ", "(", 150, "1 }}")));
    }

    #[test]
    fn text_outside_expressions_and_broken_sources_pass() {
        assert!(depth_ok(&"- | and ( ".repeat(10_000)));
        assert!(depth_ok("{{ 'unclosed"));
        assert!(MESSAGE.contains(&MAX_EXPRESSION_DEPTH.to_string()));
    }
}
