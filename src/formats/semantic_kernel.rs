//! Semantic Kernel's own template syntax (`template_format: semantic-kernel`,
//! `skprompt.txt`): `{{$var}}`, `{{ "literal" }}`, `{{plugin.function $arg}}` and
//! `{{plugin.function name=$v other="text"}}`.
//!
//! A port of semantic-kernel 1.45's `TemplateTokenizer` and `CodeTokenizer`
//! (`semantic_kernel/template_engine/`), decision for decision, quirks included: Python
//! walks the text by code points, so offsets here are byte offsets of those code points.

use super::SyntaxError;
use std::ops::Range;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub blocks: Vec<Block>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// Text as written (an empty `{{ }}` is text too).
    Text { span: Range<usize> },
    /// `{{$name}}`: the argument's value, `str()`'d, HTML-escaped when it is a string.
    Variable { span: Range<usize>, name: String },
    /// `{{"literal"}}`: the literal.
    Value { span: Range<usize>, value: String },
    /// `{{plugin.function ...}}`: a function of the application; its output is unknown.
    Call {
        span: Range<usize>,
        plugin: Option<String>,
        function: String,
        args: Vec<Arg>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    Variable(String),
    Value(String),
    Named { name: String, value: Box<Arg> },
}

impl Block {
    pub fn span(&self) -> Range<usize> {
        match self {
            Block::Text { span }
            | Block::Variable { span, .. }
            | Block::Value { span, .. }
            | Block::Call { span, .. } => span.clone(),
        }
    }
}

impl Arg {
    /// The argument variable it reads, if any.
    pub fn variable(&self) -> Option<&str> {
        match self {
            Arg::Variable(name) => Some(name),
            Arg::Named { value, .. } => value.variable(),
            Arg::Value(_) => None,
        }
    }
}

/// `TemplateTokenizer.tokenize`.
pub fn parse(text: &str) -> Result<Template, SyntaxError> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let byte = |i: usize| chars.get(i).map_or(text.len(), |&(b, _)| b);
    if chars.len() < 5 {
        return Ok(Template {
            blocks: if text.is_empty() {
                Vec::new()
            } else {
                vec![Block::Text {
                    span: 0..text.len(),
                }]
            },
        });
    }
    let mut blocks = Vec::new();
    let mut end_of_last_block = 0;
    let mut block_start = 0;
    let mut block_start_found = false;
    let mut inside_value = false;
    let mut delimiter = '\0';
    let mut skip_next = false;
    for position in 0..chars.len() - 1 {
        let current = chars[position].1;
        let next = chars[position + 1].1;
        if skip_next {
            skip_next = false;
            continue;
        }
        if !inside_value && current == '{' && next == '{' {
            block_start = position;
            block_start_found = true;
        }
        if !block_start_found {
            continue;
        }
        if inside_value {
            if current == '\\' && matches!(next, '"' | '\'' | '\\') {
                skip_next = true;
                continue;
            }
            if current == delimiter {
                inside_value = false;
            }
            continue;
        }
        if matches!(current, '"' | '\'') {
            inside_value = true;
            delimiter = current;
            continue;
        }
        if current == '}' && next == '}' {
            if block_start > end_of_last_block {
                blocks.push(Block::Text {
                    span: byte(end_of_last_block)..byte(block_start),
                });
            }
            let span = byte(block_start)..byte(position + 2);
            blocks.push(code_block(text, span)?);
            end_of_last_block = position + 2;
            block_start_found = false;
        }
    }
    if end_of_last_block < chars.len() {
        blocks.push(Block::Text {
            span: byte(end_of_last_block)..text.len(),
        });
    }
    Ok(Template { blocks })
}

/// `_extract_blocks` for the block at `span` (delimiters included).
fn code_block(text: &str, span: Range<usize>) -> Result<Block, SyntaxError> {
    let inner = &text[span.start + 2..span.end - 2];
    let content = py_strip(inner);
    if content.is_empty() {
        return Ok(Block::Text { span });
    }
    let error = |message: String| SyntaxError::new(span.start, message);
    let tokens = tokenize_code(content)
        .map_err(|e| error(format!("Semantic Kernel: {e} in `{{{{{content}}}}}`")))?;
    match tokens.first() {
        Some(Token::Variable(name)) => {
            return Ok(Block::Variable {
                span,
                name: name.clone(),
            })
        }
        Some(Token::Value(value)) => {
            return Ok(Block::Value {
                span,
                value: value.clone(),
            })
        }
        Some(Token::Named(..)) => {
            return Err(error(
                "Semantic Kernel: the first token needs to be a function id, value or variable, not a named argument".into(),
            ))
        }
        _ => {}
    }
    let mut args = Vec::new();
    let mut function = None;
    for (index, token) in tokens.into_iter().enumerate() {
        match (index, token) {
            (0, Token::Function(plugin, name)) => function = Some((plugin, name)),
            (1, Token::Variable(name)) => args.push(Arg::Variable(name)),
            (1, Token::Value(value)) => args.push(Arg::Value(value)),
            (_, Token::Named(name, value)) if index >= 1 => args.push(Arg::Named {
                name,
                value: Box::new(value),
            }),
            (1, _) => {
                return Err(error(
                    "Semantic Kernel: a function's first argument must be a variable, a value or a named argument".into(),
                ))
            }
            _ => {
                return Err(error(
                    "Semantic Kernel: every argument after a function's first must be a named argument (`name=$value`)".into(),
                ))
            }
        }
    }
    let Some((plugin, function)) = function else {
        return Err(error("Semantic Kernel: empty code block".into()));
    };
    Ok(Block::Call {
        span,
        plugin,
        function,
        args,
    })
}

enum Token {
    Variable(String),
    Value(String),
    Function(Option<String>, String),
    Named(String, Arg),
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Variable,
    Value,
    Function,
}

/// `CodeTokenizer.tokenize` on a stripped, non-empty block content.
fn tokenize_code(text: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() == 1 {
        return Ok(vec![function_token(text)?]);
    }
    let mut kind: Option<Kind> = None;
    let mut content = String::new();
    let mut delimiter = '\0';
    let mut space_found = false;
    let mut skip_next = false;
    let mut next = '\0';
    let mut tokens = Vec::new();
    for index in 0..chars.len() - 1 {
        let current = chars[index];
        next = chars[index + 1];
        if skip_next {
            skip_next = false;
            continue;
        }
        if index == 0 {
            kind = Some(match current {
                '$' => Kind::Variable,
                '"' | '\'' => {
                    delimiter = current;
                    Kind::Value
                }
                _ => Kind::Function,
            });
            content.push(current);
            continue;
        }
        if kind == Some(Kind::Value) {
            if current == '\\' && matches!(next, '"' | '\'' | '\\') {
                content.push(next);
                skip_next = true;
                continue;
            }
            content.push(current);
            if current == delimiter {
                tokens.push(value_token(&content)?);
                content.clear();
                kind = None;
                space_found = false;
            }
            continue;
        }
        if matches!(current, ' ' | '\n' | '\r' | '\t') {
            match kind {
                Some(Kind::Variable) => tokens.push(variable_token(&content)?),
                Some(Kind::Function) => tokens.push(function_or_named(&content)?),
                _ => {}
            }
            content.clear();
            space_found = true;
            kind = None;
            continue;
        }
        content.push(current);
        if kind.is_none() {
            if !space_found {
                return Err("tokens must be separated by one space at least".into());
            }
            kind = Some(match current {
                '"' | '\'' => {
                    delimiter = current;
                    Kind::Value
                }
                '$' => Kind::Variable,
                _ => Kind::Function,
            });
        }
    }
    content.push(next);
    match kind {
        Some(Kind::Value) => tokens.push(value_token(&content)?),
        Some(Kind::Variable) => tokens.push(variable_token(&content)?),
        Some(Kind::Function) => tokens.push(function_or_named(&content)?),
        None => return Err("tokens must be separated by one space at least".into()),
    }
    Ok(tokens)
}

fn is_name(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// `VarBlock`: `$name`.
fn variable_token(content: &str) -> Result<Token, String> {
    let content = py_strip(content);
    match content.strip_prefix('$') {
        Some(name) if is_name(name) => Ok(Token::Variable(name.to_owned())),
        _ => Err(format!(
            "invalid variable `{content}` (a `$` and letters, digits or `_`)"
        )),
    }
}

/// `ValBlock`: `^(["'])(.*)\1$`, dot-all.
fn value_token(content: &str) -> Result<Token, String> {
    let content = py_strip(content);
    let quote = content.chars().next();
    match quote {
        Some(q @ ('"' | '\'')) if content.len() >= 2 && content.ends_with(q) => {
            Ok(Token::Value(content[1..content.len() - 1].to_owned()))
        }
        _ => Err(format!("invalid value `{content}` (a quoted text)")),
    }
}

/// A function id, or a named argument where the token holds `=`.
fn function_or_named(content: &str) -> Result<Token, String> {
    if !content.contains('=') {
        return function_token(content);
    }
    // NAMED_ARG_REGEX: name=$var or name="val" / name='val' (val: one char, then no quotes
    // and no `^`).
    let content = py_strip(content);
    let invalid =
        || format!("invalid named argument `{content}` (`name=$variable` or `name=\"text\"`)");
    let (name, value) = content.split_once('=').ok_or_else(invalid)?;
    if !is_name(name) {
        return Err(invalid());
    }
    if let Some(variable) = value.strip_prefix('$') {
        if is_name(variable) {
            return Ok(Token::Named(
                name.to_owned(),
                Arg::Variable(variable.to_owned()),
            ));
        }
        return Err(invalid());
    }
    let mut chars = value.chars();
    let quote = chars
        .next()
        .filter(|c| matches!(c, '"' | '\''))
        .ok_or_else(invalid)?;
    let inner = value[1..].strip_suffix(quote).ok_or_else(invalid)?;
    let mut inner_chars = inner.chars();
    let first = inner_chars.next().ok_or_else(invalid)?;
    let _ = first;
    if inner_chars.any(|c| matches!(c, '"' | '^' | '\'')) {
        return Err(invalid());
    }
    // `(?P=quote)$` after the last quote: nothing else.
    Ok(Token::Named(name.to_owned(), Arg::Value(inner.to_owned())))
}

/// `FunctionIdBlock`: `^((plugin)[.])?(function)$`.
fn function_token(content: &str) -> Result<Token, String> {
    let content = py_strip(content);
    let invalid = || format!("invalid function name `{content}` (`plugin.function` or `function`)");
    match content.split_once('.') {
        Some((plugin, function)) if is_name(plugin) && is_name(function) => Ok(Token::Function(
            Some(plugin.to_owned()),
            function.to_owned(),
        )),
        None if is_name(content) => Ok(Token::Function(None, content.to_owned())),
        _ => Err(invalid()),
    }
}

/// Python's `str.strip()` with no argument: Unicode whitespace.
fn py_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks() {
        let t =
            parse(r#"Hi {{$name}}, {{ "lit" }} {{time.now}} {{p.f $x k="v"}} {{ }} end"#).unwrap();
        let kinds: Vec<String> = t
            .blocks
            .iter()
            .map(|b| match b {
                Block::Text { span } => format!("T{span:?}"),
                Block::Variable { name, .. } => format!("V:{name}"),
                Block::Value { value, .. } => format!("L:{value}"),
                Block::Call {
                    plugin,
                    function,
                    args,
                    ..
                } => {
                    format!("C:{plugin:?}.{function}/{}", args.len())
                }
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "T0..3",
                "V:name",
                "T12..14",
                "L:lit",
                "T25..26",
                "C:Some(\"time\").now/0",
                "T38..39",
                "C:Some(\"p\").f/2",
                "T55..56",
                "T56..61",
                "T61..65"
            ]
        );
    }

    #[test]
    fn errors() {
        assert!(parse("{{$bad-name}}").is_err());
        assert!(parse("{{ a b }}").is_err());
        assert!(parse("{{ k=$v }}").is_err());
        assert!(parse("{{ f \"a\"\"b\" }}").is_err());
    }
}
