//! Microsoft's `.prompty` files: YAML front matter between `---` lines (metadata: `name`,
//! `model`, `inputs:` with defaults, `sample:`), then the body (Jinja unless `template:` says `mustache` or `handlebars`), whose `system:`,
//! `user:` and `assistant:` lines start chat messages.

use super::{EmbeddedTemplate, HostKind, HostMap};
use serde_json::{Map, Value};

/// A `.prompty` file taken apart.
#[derive(Debug, Clone)]
pub struct Prompty {
    /// The body: the template.
    pub template: EmbeddedTemplate,
    /// The values of `sample:` over the `inputs:` defaults, when there are any.
    pub sample: Option<Map<String, Value>>,
    /// Why the body cannot be checked: its `template:` names a format no renderer knows.
    pub unchecked: Option<String>,
}

/// Front matter that does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontMatterError {
    pub message: String,
    /// Byte offset in the host of the problem (the front matter's start when unknown).
    pub offset: usize,
}

/// Splits a `.prompty` file into its front matter's samples and its body.
pub fn extract(source: &str) -> Result<Prompty, FrontMatterError> {
    let (front, body_start) = split(source);
    let (sample, declared) = match front {
        Some((start, end)) => samples(&source[start..end], start)?,
        None => (None, None),
    };
    let body = &source[body_start..];
    let anchor_line = source[..body_start].matches('\n').count() + 1;
    Ok(Prompty {
        template: EmbeddedTemplate {
            kind: HostKind::Prompty,
            key: "body".to_owned(),
            anchor_line,
            text: body.to_owned(),
            map: HostMap::verbatim(body_start, body.len()),
            // prompty's default template engine is Jinja2.
            format: match &declared {
                Some(Ok(format)) => *format,
                _ => crate::formats::TemplateFormat::Jinja,
            },
            format_note: None,
        },
        sample,
        unchecked: declared.and_then(Result::err),
    })
}

/// The front matter's byte range (between the `---` lines) and where the body starts.
fn split(source: &str) -> (Option<(usize, usize)>, usize) {
    let first_line_end = source.find('\n').map_or(source.len(), |i| i + 1);
    if source[..first_line_end].trim_end() != "---" {
        return (None, 0);
    }
    let mut at = first_line_end;
    while at < source.len() {
        let line_end = source[at..].find('\n').map_or(source.len(), |i| at + i + 1);
        if source[at..line_end].trim_end() == "---" {
            return (Some((first_line_end, at)), line_end);
        }
        at = line_end;
    }
    // No closing line: it is all front matter, with an empty body.
    (Some((first_line_end, source.len())), source.len())
}

/// The front matter's values: `sample:` (a mapping; a `${file:…}` reference is not
/// followed) over the `inputs:` entries' `default` (or `sample`) values, and the format
/// `template:` declares (`template: mustache`, or `template: {format: handlebars}`).
type FrontMatter = (
    Option<Map<String, Value>>,
    Option<Result<crate::formats::TemplateFormat, String>>,
);

fn samples(front: &str, offset: usize) -> Result<FrontMatter, FrontMatterError> {
    let parsed: Value = serde_yaml_ng::from_str(front).map_err(|e| FrontMatterError {
        message: format!("the front matter is not valid YAML: {e}"),
        offset: offset + e.location().map_or(0, |l| l.index()),
    })?;
    let mut sample = Map::new();
    if let Some(Value::Object(inputs)) = parsed.get("inputs") {
        for (name, spec) in inputs {
            let value = match spec {
                Value::Object(spec) => spec.get("default").or_else(|| spec.get("sample")),
                _ => None,
            };
            if let Some(value) = value {
                sample.insert(name.clone(), value.clone());
            }
        }
    }
    if let Some(Value::Object(values)) = parsed.get("sample") {
        for (name, value) in values {
            sample.insert(name.clone(), value.clone());
        }
    }
    let declared = match parsed.get("template") {
        Some(Value::String(name)) => Some(name.as_str()),
        Some(Value::Object(template)) => template.get("format").and_then(Value::as_str),
        _ => None,
    };
    let declared = declared.map(|name| {
        crate::formats::detect::declared(name).ok_or_else(|| {
            format!("the front matter's `template: {name}` is not a format prefixlint renders")
        })
    });
    Ok(((!sample.is_empty()).then_some(sample), declared))
}

/// One chat message of a rendered body: its role and the byte range of its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub role: String,
    pub content: std::ops::Range<usize>,
}

/// The chat messages of a rendered body, as prompty's parser reads them: a line that is
/// only a role name and a colon starts a message; text before the first is a system
/// message. Contents are trimmed of the blank lines around them.
pub fn messages(rendered: &str) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::new();
    let mut role = "system".to_owned();
    let mut start = 0;
    let mut at = 0;
    let push = |role: &str, range: std::ops::Range<usize>, out: &mut Vec<Message>| {
        let text = &rendered[range.clone()];
        let lead = text.len() - text.trim_start().len();
        let trail = text.len() - text.trim_end().len();
        if lead + trail < text.len() {
            out.push(Message {
                role: role.to_owned(),
                content: range.start + lead..range.end - trail,
            });
        }
    };
    while at < rendered.len() {
        let line_end = rendered[at..]
            .find('\n')
            .map_or(rendered.len(), |i| at + i + 1);
        let line = rendered[at..line_end].trim();
        let marker = line
            .strip_suffix(':')
            .map(|name| name.trim().to_ascii_lowercase())
            .filter(|name| matches!(name.as_str(), "system" | "user" | "assistant"));
        if let Some(name) = marker {
            push(&role, start..at, &mut out);
            role = name;
            start = line_end;
        }
        at = line_end;
    }
    push(&role, start..rendered.len(), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASIC: &str = "---\nname: Basic\nmodel:\n  api: chat\ninputs:\n  name:\n    type: string\n    default: Jane\n  question:\n    type: string\nsample:\n  question: What is a prefix cache?\n---\nsystem:\nYou help {{ name }}.\n\nuser:\n{{ question }}\n";

    #[test]
    fn the_body_is_the_template_and_the_front_matter_its_sample() {
        let prompty = extract(BASIC).unwrap();
        assert!(prompty.template.text.starts_with("system:\nYou help"));
        assert_eq!(prompty.template.anchor_line, 14);
        let start = prompty.template.map.host_offset(0);
        assert_eq!(&BASIC[start..start + 7], "system:");
        let sample = prompty.sample.unwrap();
        assert_eq!(sample["name"], "Jane");
        assert_eq!(sample["question"], "What is a prefix cache?");
    }

    #[test]
    fn role_lines_make_messages() {
        let rendered = "system:\nYou help Jane.\n\nuser:\nWhat?\n";
        let messages = messages(rendered);
        let roles: Vec<(&str, &str)> = messages
            .iter()
            .map(|m| (m.role.as_str(), &rendered[m.content.clone()]))
            .collect();
        assert_eq!(roles, [("system", "You help Jane."), ("user", "What?")]);
    }

    #[test]
    fn the_front_matter_declares_the_format() {
        use crate::formats::TemplateFormat;
        let mustache =
            extract("---\nname: A\ntemplate: mustache\n---\nsystem:\nHi {{name}}\n").unwrap();
        assert_eq!(mustache.template.format, TemplateFormat::Mustache);
        let nested =
            extract("---\ntemplate:\n  format: handlebars\n  parser: prompty\n---\nHi {{x}}\n")
                .unwrap();
        assert_eq!(nested.template.format, TemplateFormat::Handlebars);
        assert_eq!(
            extract("Hi {{ x }}\n").unwrap().template.format,
            TemplateFormat::Jinja
        );
        let unknown = extract("---\ntemplate: erb\n---\nHi\n").unwrap();
        assert!(unknown.unchecked.unwrap().contains("erb"));
    }

    #[test]
    fn a_file_without_front_matter_is_all_body() {
        let prompty = extract("Hello {{ x }}\n").unwrap();
        assert_eq!(prompty.template.text, "Hello {{ x }}\n");
        assert_eq!(prompty.sample, None);
    }

    #[test]
    fn bad_front_matter_is_an_error_with_a_place() {
        let error = extract("---\nname: [unclosed\n---\nbody\n").unwrap_err();
        assert!(error.message.contains("front matter"), "{error:?}");
        assert!(error.offset >= 4);
    }
}
