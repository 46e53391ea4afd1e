//! The template formats prompts ship in, and what decides a template's format.
//!
//! Jinja goes through minijinja (`render`); the others are rendered (or, for f-strings,
//! read statically) by their own modules here, and every format ends in the same source
//! map, so `analyse`, the rules and the reports do not know which format a template is in.

pub mod detect;

use std::fmt;
use std::str::FromStr;

/// A template's format: `templates[].format` in the JSON report (a public contract).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TemplateFormat {
    /// Jinja2, rendered by minijinja the way Python's Jinja2 does.
    #[default]
    Jinja,
    /// Python `{var}` templates: `str.format`, LangChain's default `f-string` format,
    /// CrewAI's interpolation.
    Format,
    /// A Python f-string: read statically, never run.
    FString,
    /// Semantic Kernel's own syntax: `{{$var}}`, `{{plugin.function $arg}}`.
    SemanticKernel,
    Handlebars,
    Liquid,
    Mustache,
}

impl TemplateFormat {
    pub const ALL: [TemplateFormat; 7] = [
        TemplateFormat::Jinja,
        TemplateFormat::Format,
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
            TemplateFormat::Format => "format",
            TemplateFormat::FString => "fstring",
            TemplateFormat::SemanticKernel => "semantic-kernel",
            TemplateFormat::Handlebars => "handlebars",
            TemplateFormat::Liquid => "liquid",
            TemplateFormat::Mustache => "mustache",
        }
    }
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
            assert_eq!(format.as_str().parse::<TemplateFormat>(), Ok(format));
        }
    }

    #[test]
    fn langchain_f_string_is_the_format_syntax() {
        // LangChain calls its `{var}` format "f-string", though it is `str.format`.
        assert_eq!("f-string".parse(), Ok(TemplateFormat::Format));
        assert_eq!("jinja2".parse(), Ok(TemplateFormat::Jinja));
        assert!("erb".parse::<TemplateFormat>().is_err());
    }
}
