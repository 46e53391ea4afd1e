//! The template formats prompts ship in, and what decides a template's format.
//!
//! Jinja goes through minijinja (`render`); the others are rendered (or, for f-strings,
//! read statically) by their own modules here, and every format ends in the same source
//! map, so `analyse`, the rules and the reports do not know which format a template is in.

pub mod crewai;
pub mod detect;
pub mod fstring;
pub mod mustache;
pub mod python_format;
pub mod semantic_kernel;

use std::fmt;
use std::str::FromStr;

/// Why a text is not a valid template of a format, and where: `offset` is a byte offset
/// into the template's text (an embedded template's host map moves it to the host).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub offset: usize,
    pub message: String,
}

impl SyntaxError {
    pub fn new(offset: usize, message: impl Into<String>) -> Self {
        SyntaxError {
            offset,
            message: message.into(),
        }
    }
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at byte {})", self.message, self.offset)
    }
}

impl std::error::Error for SyntaxError {}

/// A template's format: `templates[].format` in the JSON report (a public contract).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TemplateFormat {
    /// Jinja2, rendered by minijinja the way Python's Jinja2 does.
    #[default]
    Jinja,
    /// Python `{var}` templates: `str.format`, LangChain's default `f-string` format,
    /// CrewAI's interpolation.
    Format,
    /// CrewAI's interpolation (`agents.yaml`, `tasks.yaml`): only `{name}` is a field,
    /// every other brace is text. Reported as `format`, the `{var}` family it belongs to.
    CrewAi,
    /// A Python f-string: read statically, never run.
    FString,
    /// Semantic Kernel's own syntax: `{{$var}}`, `{{plugin.function $arg}}`.
    SemanticKernel,
    Handlebars,
    Liquid,
    Mustache,
}

impl TemplateFormat {
    pub const ALL: [TemplateFormat; 8] = [
        TemplateFormat::Jinja,
        TemplateFormat::Format,
        TemplateFormat::CrewAi,
        TemplateFormat::FString,
        TemplateFormat::SemanticKernel,
        TemplateFormat::Handlebars,
        TemplateFormat::Liquid,
        TemplateFormat::Mustache,
    ];

    /// The name in reports and in config (`templates[].format`).
    pub fn as_str(self) -> &'static str {
        match self {
            TemplateFormat::Jinja => "jinja",
            TemplateFormat::Format | TemplateFormat::CrewAi => "format",
            TemplateFormat::FString => "fstring",
            TemplateFormat::SemanticKernel => "semantic-kernel",
            TemplateFormat::Handlebars => "handlebars",
            TemplateFormat::Liquid => "liquid",
            TemplateFormat::Mustache => "mustache",
        }
    }
}

impl serde::Serialize for TemplateFormat {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for TemplateFormat {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// Whether `text` is a valid template of `format`, and if not, where it is not: what a
/// format decided from content asks (a text that is a valid `{var}` template but invalid
/// Jinja is not a Jinja error). Jinja is read by minijinja's parser (without the
/// renderer's rewrites of Python-only syntax). Almost any text is valid Mustache (a text
/// without tags is), so that a text parses as Mustache says little: content detection asks
/// [`mustache::Template::distinctive_tags`] too. Handlebars and Liquid have no parser here
/// yet: they are an error, so no text is taken for one of them from content.
pub fn parse(format: TemplateFormat, text: &str) -> Result<(), SyntaxError> {
    match format {
        TemplateFormat::Format => python_format::parse(text).map(drop),
        TemplateFormat::CrewAi => Ok(()),
        TemplateFormat::FString => fstring::parse(text).map(drop),
        TemplateFormat::SemanticKernel => semantic_kernel::parse(text).map(drop),
        TemplateFormat::Jinja => jinja(text),
        TemplateFormat::Mustache => mustache::parse(text).map(drop),
        TemplateFormat::Handlebars | TemplateFormat::Liquid => Err(SyntaxError::new(
            0,
            format!("{format} templates are not parsed yet"),
        )),
    }
}

/// minijinja's parse of `text` (without the renderer's rewrites of Python-only syntax,
/// which keep offsets: a text that fails here may still render).
fn jinja(text: &str) -> Result<(), SyntaxError> {
    minijinja::machinery::parse(text, "<template>", Default::default())
        .map(drop)
        .map_err(|e| {
            let offset = e.range().map_or(0, |r| r.start);
            SyntaxError::new(offset, e.detail().unwrap_or("syntax error").to_owned())
        })
}

impl fmt::Display for TemplateFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A format name as hosts and configs declare it: the report's names, and the spellings
/// the frameworks use (`jinja2`, LangChain's `f-string`, Semantic Kernel's
/// `semantic-kernel`, prompty's `handlebars`/`mustache`/`jinja2`).
impl FromStr for TemplateFormat {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        let format = match name.trim().to_ascii_lowercase().as_str() {
            "jinja" | "jinja2" => TemplateFormat::Jinja,
            "format" | "f-string" | "str.format" | "python" => TemplateFormat::Format,
            "crewai" => TemplateFormat::CrewAi,
            "fstring" => TemplateFormat::FString,
            "semantic-kernel" | "semantic_kernel" | "semantickernel" | "sk" => {
                TemplateFormat::SemanticKernel
            }
            "handlebars" | "hbs" => TemplateFormat::Handlebars,
            "liquid" => TemplateFormat::Liquid,
            "mustache" => TemplateFormat::Mustache,
            other => return Err(format!("unknown template format `{other}`")),
        };
        Ok(format)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reads_back() {
        for format in TemplateFormat::ALL {
            let read_back = format.as_str().parse::<TemplateFormat>();
            // CrewAI's interpolation is reported in the `{var}` family's name.
            let expected = match format {
                TemplateFormat::CrewAi => TemplateFormat::Format,
                other => other,
            };
            assert_eq!(read_back, Ok(expected));
        }
        assert_eq!("crewai".parse(), Ok(TemplateFormat::CrewAi));
    }

    /// What a format decided from content asks: the same text read in each format.
    #[test]
    fn parse_reads_a_text_in_each_format() {
        let text = "Reply as JSON: {{\"a\": 1}} for {user}";
        assert!(parse(TemplateFormat::Format, text).is_ok());
        assert!(parse(TemplateFormat::Jinja, "{% if %}").is_err());
        assert_eq!(
            parse(TemplateFormat::Format, "a } b").unwrap_err().offset,
            2
        );
        assert!(parse(TemplateFormat::FString, "{datetime.now():%Y}").is_ok());
        assert!(parse(TemplateFormat::SemanticKernel, "{{$a}} {{ b c }}").is_err());
        assert!(parse(TemplateFormat::CrewAi, "{ anything } {").is_ok());
        assert!(parse(TemplateFormat::Handlebars, "{{a}}").is_err());
        assert!(parse(TemplateFormat::Mustache, "{{#a}}{{b}}{{/a}}").is_ok());
        assert_eq!(
            parse(TemplateFormat::Mustache, "x {{#a}} y")
                .unwrap_err()
                .offset,
            2
        );
    }

    #[test]
    fn langchain_f_string_is_the_format_syntax() {
        // LangChain calls its `{var}` format "f-string", though it is `str.format`.
        assert_eq!("f-string".parse(), Ok(TemplateFormat::Format));
        assert_eq!("jinja2".parse(), Ok(TemplateFormat::Jinja));
        assert!("erb".parse::<TemplateFormat>().is_err());
    }
}
