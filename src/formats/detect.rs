//! Which format a template is in. The host's declaration wins (a `template_format:` key,
//! LangChain's `template_format=`, Semantic Kernel's `config.json`, prompty's `template:`);
//! a framework that has one format (LangChain's default, CrewAI) declares it by being that
//! framework. Otherwise the text decides, with a confidence, and a text two formats read
//! differently gets a note that names both readings: never a wrong parse in silence.
//!
//! The content test reads markers no other format writes (`{{$var}}` is Semantic Kernel's,
//! `{{#each}}` Handlebars', `{% assign %}` Liquid's, `{% set %}` Jinja's), then weighs the
//! two commonest readings of braces against each other: Python's `{var}` (as `str.format`
//! parses it, `{{`/`}}` escaping a brace) and Jinja's `{{ expr }}`. A text that is a valid
//! `{var}` template and not valid Jinja is a `{var}` template, never a Jinja error.

use super::TemplateFormat;
use regex::Regex;
use std::sync::LazyLock;

/// How sure the decision is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Confidence {
    /// Both readings are valid and differ: the note names them.
    Ambiguous,
    /// The content leans one way, nothing rules the other out.
    Likely,
    /// A marker only this format writes, or the only valid reading.
    Certain,
    /// The host says so.
    Declared,
}

/// A template's format and why.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Decision {
    pub format: TemplateFormat,
    pub confidence: Confidence,
    /// The reading not taken, for an ambiguous text.
    pub other: Option<TemplateFormat>,
}

impl Decision {
    pub fn declared(format: TemplateFormat) -> Decision {
        Decision {
            format,
            confidence: Confidence::Declared,
            other: None,
        }
    }

    fn content(format: TemplateFormat, confidence: Confidence) -> Decision {
        Decision {
            format,
            confidence,
            other: None,
        }
    }

    /// The note an ambiguous decision carries: both readings, and how to say which.
    pub fn note(&self) -> Option<String> {
        let other = self.other?;
        Some(format!(
            "read as {} (`{}`); it is also a valid {} template (`{}`), which renders it differently: declare the format (`template_format:`, or config `formats:`) if that is the one",
            describe(self.format),
            self.format,
            describe(other),
            other,
        ))
    }
}

/// A format in words, for notes.
pub fn describe(format: TemplateFormat) -> &'static str {
    match format {
        TemplateFormat::Jinja => "Jinja",
        TemplateFormat::Format => "Python `{var}`",
        TemplateFormat::CrewAi => "CrewAI `{var}`",
        TemplateFormat::FString => "f-string",
        TemplateFormat::SemanticKernel => "Semantic Kernel",
        TemplateFormat::Handlebars => "Handlebars",
        TemplateFormat::Liquid => "Liquid",
        TemplateFormat::Mustache => "Mustache",
    }
}

/// A format name as a host declares it (`jinja2`, `f-string`, `semantic-kernel`,
/// `handlebars`, `liquid`, `mustache`); `None` for a name no renderer knows.
pub fn declared(name: &str) -> Option<TemplateFormat> {
    name.parse().ok()
}

/// The format of `text` when its host declares none. `None` when the text holds no
/// template syntax in any format (a constant prompt: any format renders it as itself).
pub fn from_content(text: &str) -> Option<Decision> {
    if !text.contains(['{', '}']) {
        return None;
    }
    if SEMANTIC_KERNEL.is_match(text) {
        return Some(Decision::content(
            TemplateFormat::SemanticKernel,
            Confidence::Certain,
        ));
    }
    if HANDLEBARS.is_match(text) {
        return Some(Decision::content(
            TemplateFormat::Handlebars,
            Confidence::Certain,
        ));
    }
    let jinja_tags = JINJA_ONLY.is_match(text);
    if !jinja_tags && LIQUID.is_match(text) {
        return Some(Decision::content(
            TemplateFormat::Liquid,
            Confidence::Certain,
        ));
    }
    if !jinja_tags && MUSTACHE.is_match(text) {
        return Some(Decision::content(
            TemplateFormat::Mustache,
            Confidence::Likely,
        ));
    }
    let fields = format_fields(text);
    let has_fields = matches!(&fields, Ok(fields) if !fields.is_empty());
    let jinja_markup = has_jinja_markup(text);
    if !jinja_markup {
        return has_fields.then(|| Decision::content(TemplateFormat::Format, Confidence::Certain));
    }
    let jinja_valid = jinja_parses(text);
    let statements = text.contains("{%") || has_jinja_comment(text);
    match (has_fields, jinja_valid) {
        // `{name}` fields, and `{{`/`}}` that Jinja cannot read (`{{"key": "..."}}`).
        (true, false) => Some(Decision::content(
            TemplateFormat::Format,
            Confidence::Certain,
        )),
        (true, true) if !statements => Some(Decision {
            format: TemplateFormat::Format,
            confidence: Confidence::Ambiguous,
            other: Some(TemplateFormat::Jinja),
        }),
        (true, true) => Some(Decision {
            format: TemplateFormat::Jinja,
            confidence: Confidence::Ambiguous,
            other: Some(TemplateFormat::Format),
        }),
        (false, true) => Some(Decision::content(
            TemplateFormat::Jinja,
            if statements || JINJA_EXPRESSION.is_match(text) {
                Confidence::Certain
            } else {
                Confidence::Likely
            },
        )),
        // Jinja markup that does not parse, and no `{var}` field: a broken Jinja template
        // (its error says where) when it has statements, else nothing we can read.
        (false, false) if statements => {
            Some(Decision::content(TemplateFormat::Jinja, Confidence::Likely))
        }
        (false, false) => None,
    }
}

/// The format of a text whose host declares `declared` (or gives `default` when it
/// declares nothing, as LangChain's `f-string` default): the declaration wins, then the
/// default, then the content.
pub fn decide(
    declared: Option<TemplateFormat>,
    default: Option<TemplateFormat>,
    text: &str,
) -> Option<Decision> {
    declared
        .or(default)
        .map(Decision::declared)
        .or_else(|| from_content(text))
}

/// `{{$var}}`, `{{ $var }}`, `{{plugin.function $arg}}`, `{{plugin.function arg=$v}}`.
static SEMANTIC_KERNEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\{\{\s*\$[A-Za-z_]|\{\{\s*[A-Za-z_][\w]*[.-][A-Za-z_][\w]*\s+(?:\$|[A-Za-z_]\w*\s*=\s*\$|['\x22])",
    )
    .expect("a valid pattern")
});

/// Handlebars' block helpers, `{{else}}`, partials and `@` data.
static HANDLEBARS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\{\{~?\s*(?:#(?:if|each|with|unless|each_with_index)\b|/(?:if|each|with|unless)\s*~?\}\}|else\s*~?\}\}|>\s*[\w./-]+|@(?:index|key|first|last|root)\b)")
        .expect("a valid pattern")
});

/// Mustache sections and inverted sections: `{{#name}}`, `{{^name}}`, `{{/name}}`.
static MUSTACHE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\{\{\s*[#^]\s*[A-Za-z_][\w.]*\s*\}\}").expect("a valid pattern"));

/// Liquid's own tags and objects (Jinja has none of them).
static LIQUID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\{%-?\s*(?:assign|capture|endcapture|unless|endunless|case|when|endcase|liquid|increment|decrement|tablerow|endtablerow|render|cycle)\b|\bforloop\.|\{\{-?[^}]*\|\s*[a-z_]+:\s*[^}]*\}\}")
        .expect("a valid pattern")
});

/// Jinja's own tags and syntax (Liquid has none of them).
static JINJA_ONLY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\{%[-+]?\s*(?:set|endset|macro|endmacro|call|endcall|block|endblock|extends|import|from|filter|endfilter|do|with|endwith|elif)\b|(?:^|[^{])\{#|\bloop\.(?:index|first|last|length)")
        .expect("a valid pattern")
});

/// A Jinja expression more than a bare name: a filter, a call, an attribute, an operator.
static JINJA_EXPRESSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\{\{-?\s*[A-Za-z_][\w]*\s*(?:\||\(|\.|\[|\+|~| if )").expect("a valid pattern")
});

/// Jinja markup outside GitHub's `${{ }}` and Go templates' `{{ .Field }}`.
pub fn has_jinja_markup(text: &str) -> bool {
    has_jinja(text) || has_jinja_comment(text)
}

/// A Jinja comment opener `{#` (not the `{{#` of a Mustache section).
fn has_jinja_comment(text: &str) -> bool {
    text.match_indices("{#")
        .any(|(at, _)| at == 0 || text.as_bytes()[at - 1] != b'{')
}

/// A Jinja expression or statement outside GitHub's `${{ }}`, Go templates'
/// `{{ .Field }}` and `{{ $var }}`.
pub fn has_jinja(text: &str) -> bool {
    static RE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?s)(\$?)\{\{-?\s*(\S?)[^}]*?\}\}|\{%-?\s*[a-z]+.*?%\}").expect("valid regex")
    });
    RE.captures_iter(text).any(|c| {
        let whole = c.get(0).map_or("", |m| m.as_str());
        if whole.starts_with("{%") {
            return true;
        }
        let dollar = c.get(1).is_some_and(|m| !m.is_empty());
        let first = c.get(2).map_or("", |m| m.as_str());
        !dollar && first != "." && first != "$" && first != "}"
    })
}

/// Whether the text parses as a Jinja template (minijinja, Jinja2's syntax).
fn jinja_parses(text: &str) -> bool {
    let mut env = minijinja::Environment::new();
    env.set_debug(false);
    env.template_from_str(text).is_ok()
}

/// One `str.format` replacement field: its byte range (braces included) and its name (the
/// part before `.`, `[`, `!` or `:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatField {
    pub span: std::ops::Range<usize>,
    pub name: String,
}

/// A text `str.format` rejects, at this byte offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatSyntaxError {
    pub offset: usize,
    pub message: &'static str,
}

/// The replacement fields of a `{var}` template as CPython's `str.format` parses it
/// (`Objects/stringlib/unicode_format.h`): `{{` and `}}` are braces; a field runs to its
/// matching `}` with one level of nested fields in its format spec. A field whose name is
/// not a Python name, an index or empty (`{"key": 1}`, a JSON example) makes the text no
/// `{var}` template for detection: CPython parses it and fails at render time.
pub fn format_fields(text: &str) -> Result<Vec<FormatField>, FormatSyntaxError> {
    static NAME: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+)?(?:\.[A-Za-z_][A-Za-z0-9_]*|\[[^\]{}]+\])*(?:![rsa])?(?::[^{}]*(?:\{[^{}]*\}[^{}]*)*)?$")
            .expect("a valid pattern")
    });
    let bytes = text.as_bytes();
    let mut fields = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'{' if bytes.get(at + 1) == Some(&b'{') => at += 2,
            b'}' if bytes.get(at + 1) == Some(&b'}') => at += 2,
            b'}' => {
                return Err(FormatSyntaxError {
                    offset: at,
                    message: "Single '}' encountered in format string",
                })
            }
            b'{' => {
                // The matching `}`: nested braces count (a spec's `{width}`).
                let mut depth = 1usize;
                let mut end = at + 1;
                while end < bytes.len() && depth > 0 {
                    match bytes[end] {
                        b'{' => depth += 1,
                        b'}' => depth -= 1,
                        _ => {}
                    }
                    end += 1;
                }
                if depth > 0 {
                    return Err(FormatSyntaxError {
                        offset: at,
                        message: "expected '}' before end of string",
                    });
                }
                let inner = &text[at + 1..end - 1];
                if !NAME.is_match(inner) {
                    return Err(FormatSyntaxError {
                        offset: at,
                        message: "not a replacement field a template writes",
                    });
                }
                let name_end = inner.find(['.', '[', '!', ':']).unwrap_or(inner.len());
                fields.push(FormatField {
                    span: at..end,
                    name: inner[..name_end].to_owned(),
                });
                at = end;
            }
            _ => at += 1,
        }
    }
    Ok(fields)
}

/// Whether a text reads as instructions to a model: sentences (a dozen words or more
/// outside template markup, with sentence punctuation) and the words prompts use
/// (`you`, `your`, `answer`, `respond`, `return`, `assistant`, `user`, `task`, ...).
pub fn reads_as_prompt(text: &str) -> bool {
    static MARKUP: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?s)\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}|\{[^{}\s]*\}").expect("a valid pattern")
    });
    static WORDS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b(?:you|your|you're|answer|respond|response|reply|return|assistant|user|task|instructions?|output|summari[sz]e|given|following|below|json|do not|don't|must|should|act as|role|question|context)\b")
            .expect("a valid pattern")
    });
    let bare = MARKUP.replace_all(text, " ");
    let words = bare
        .split_whitespace()
        .filter(|w| w.chars().any(char::is_alphabetic))
        .count();
    if words < 12 || !bare.contains(['.', '?', ':', '!']) {
        return false;
    }
    WORDS.find_iter(&bare).take(3).count() >= 2
}

/// Whether a text speaks to a model the way prompts do: `You are ...`, `Your task is`,
/// `Respond in JSON`, `Return only ...`, `Act as ...`: a stronger test than
/// [`reads_as_prompt`], for files that only their text can make prompts (a README says
/// `you can`, a prompt says `you are`).
pub fn instructs_a_model(text: &str) -> bool {
    static INSTRUCTIONS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\byou are (?:an?|the)\b|\byour (?:task|job|role|goal) is\b|\byou (?:will|must|should) (?:be given|receive|answer|respond|write|extract|summari[sz]e|classify|translate|review)\b|\b(?:respond|answer|reply)(?: only)? (?:in|with) (?:json|yaml|markdown|one|a |the )|\breturn (?:only )?(?:a |the )?(?:json|yaml|list)\b|\bact as\b|\bdo not (?:make up|invent|mention)\b")
            .expect("a valid pattern")
    });
    INSTRUCTIONS.is_match(text)
}

/// A page template for people, not a prompt: an HTML document (`<!doctype`, `<html`,
/// `<body`, `<head`), a form, or markup made of `<div>`s and other block elements, or a
/// template that extends a base page.
pub fn is_html_page(text: &str) -> bool {
    static DOCUMENT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)<!doctype\s+html|<html[\s>]|<body[\s>]|<head[\s>]|<form[\s>]|\{%-?\s*extends\s+['\x22][^'\x22]*\.html?['\x22]")
            .expect("a valid pattern")
    });
    static BLOCKS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)</?(?:div|span|table|tr|td|ul|li|p|a|button|input|label|section|nav|header|footer|script|style)[\s>/]")
            .expect("a valid pattern")
    });
    if DOCUMENT.is_match(text) {
        return true;
    }
    // Markup made of tags: many tags for the text's size, not a prompt's `<example>` tags.
    let tags = BLOCKS.find_iter(text).take(64).count();
    tags >= 6 && tags * 200 >= text.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use TemplateFormat::*;

    fn format_of(text: &str) -> Option<(TemplateFormat, Confidence)> {
        from_content(text).map(|d| (d.format, d.confidence))
    }

    #[test]
    fn markers_only_one_format_writes_decide() {
        assert_eq!(
            format_of("Summarize {{$input}} for {{ $user }}."),
            Some((SemanticKernel, Confidence::Certain))
        );
        assert_eq!(
            format_of("{{time.now}} {{search.find $query}}"),
            Some((SemanticKernel, Confidence::Certain))
        );
        assert_eq!(
            format_of("{{#each messages}}{{role}}: {{content}}{{/each}}"),
            Some((Handlebars, Confidence::Certain))
        );
        assert_eq!(
            format_of("{% assign n = items | size %}{{ n }} items"),
            Some((Liquid, Confidence::Certain))
        );
        assert_eq!(
            format_of("{{#items}}- {{name}}\n{{/items}}{{^items}}none{{/items}}"),
            Some((Mustache, Confidence::Likely))
        );
        assert_eq!(
            format_of("{% set x = 1 %}{% for i in items %}{{ i }}{% endfor %}"),
            Some((Jinja, Confidence::Certain))
        );
    }

    #[test]
    fn a_valid_var_template_that_jinja_rejects_is_a_var_template() {
        // The escaped JSON example is not a Jinja expression.
        let text = "Today is {date}. Answer as JSON: {{\"answer\": \"...\"}}";
        assert_eq!(format_of(text), Some((Format, Confidence::Certain)));
        assert_eq!(
            format_of("You are {name}, a helpful assistant."),
            Some((Format, Confidence::Certain))
        );
    }

    #[test]
    fn two_valid_readings_are_ambiguous_and_the_note_names_both() {
        let decision = from_content("Hello {name}, your id is {{ user_id }}.").unwrap();
        assert_eq!(decision.confidence, Confidence::Ambiguous);
        assert_eq!(decision.format, Format);
        let note = decision.note().unwrap();
        assert!(
            note.contains("Python `{var}`") && note.contains("Jinja"),
            "{note}"
        );
    }

    #[test]
    fn plain_jinja_and_constant_text() {
        assert_eq!(
            format_of("Hi {{ user.name | title }}"),
            Some((Jinja, Confidence::Certain))
        );
        assert_eq!(
            format_of("Hi {{ name }}"),
            Some((Jinja, Confidence::Likely))
        );
        assert_eq!(format_of("No braces at all."), None);
        // A JSON object is no `{var}` template, and no Jinja either.
        assert_eq!(format_of("{\"a\": 1}"), None);
        // GitHub's expressions and Go templates are not Jinja.
        assert_eq!(format_of("${{ github.sha }} {{ .Values.image }}"), None);
    }

    #[test]
    fn the_declaration_wins() {
        let decision = decide(Some(Jinja), None, "You are {name}.").unwrap();
        assert_eq!(
            (decision.format, decision.confidence),
            (Jinja, Confidence::Declared)
        );
        let decision = decide(None, Some(Format), "Hi {{ name }}").unwrap();
        assert_eq!(decision.format, Format);
        assert_eq!(declared("jinja2"), Some(Jinja));
        assert_eq!(declared("f-string"), Some(Format));
        assert_eq!(declared("erb"), None);
    }

    #[test]
    fn format_fields_parse_as_cpython_does() {
        let fields = format_fields("{a} {b.c} {d[0]} {e!r:>10} {f:{w}} {{x}} {}").unwrap();
        let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "d", "e", "f", ""]);
        assert_eq!(format_fields("a } b").unwrap_err().offset, 2);
        assert_eq!(format_fields("a { b").unwrap_err().offset, 2);
        assert!(format_fields("{{\"k\": 1}}").unwrap().is_empty());
    }

    #[test]
    fn prompts_read_as_instructions_and_pages_do_not() {
        assert!(reads_as_prompt(
            "You are a careful reviewer. Given the diff below, return a JSON list of issues. {diff}"
        ));
        assert!(!reads_as_prompt("name: build\nruns: on push"));
        assert!(is_html_page(
            "<!DOCTYPE html><html><body>{{ title }}</body></html>"
        ));
        assert!(is_html_page(
            "{% extends \"base.html\" %}{% block content %}hi{% endblock %}"
        ));
        assert!(!is_html_page(
            "You are an assistant. <example>{{ x }}</example> Answer briefly."
        ));
    }
}
