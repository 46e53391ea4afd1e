//! Prompt files of plain text: `.md` and `.txt` files that an application reads and
//! formats (`open("prompts/system.md").read().format(...)`), and Semantic Kernel's
//! `skprompt.txt`, whose `config.json` beside it declares the format.
//!
//! A walk meets many text files that are not prompts (READMEs, changelogs, docs,
//! requirements files), so a file is a prompt only when it holds a template field (in any
//! format) and its place or its text says so: its name or a folder names prompts
//! (`prompts/`, `system_prompt.md`), or its text instructs a model (`You are ...`,
//! `Return JSON ...`), which a README's `you can` does not. A text
//! without a field renders as itself, so there is nothing to check in it. An HTML page is
//! never a prompt.

use super::{EmbeddedTemplate, Extracted, HostKind, HostMap, Unchecked};
use crate::formats::detect;
use crate::formats::TemplateFormat;
use std::path::Path;

/// What a prompt file's host says of its format: Semantic Kernel's `config.json`
/// (`Some(Ok)`, or `Some(Err)` with the format it names that no renderer knows).
pub type Declared = Option<Result<TemplateFormat, String>>;

/// Text files no walk takes for prompts, by name: a project's documents (`README.md`,
/// `CHANGELOG.md`, `requirements.txt`, any case; `SUPPORT.md`, `SECURITY.md`, `TODO.md`,
/// upper case only: a `prompts/support.md` is a prompt), and what sits under `docs/`.
fn is_documentation(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.split('.').next().unwrap_or("");
    let lower = stem.to_ascii_lowercase();
    const ANY_CASE: &[&str] = &[
        "readme",
        "changelog",
        "changes",
        "contributing",
        "license",
        "licence",
        "copying",
        "notice",
        "authors",
        "history",
        "code_of_conduct",
        "requirements",
        "constraints",
        "cmakelists",
        "robots",
        "release_notes",
        "pull_request_template",
        "issue_template",
    ];
    const UPPER_CASE: &[&str] = &[
        "SUPPORT",
        "SECURITY",
        "TODO",
        "NEWS",
        "RELEASE",
        "RELEASING",
        "MAINTAINERS",
        "GOVERNANCE",
    ];
    if ANY_CASE.contains(&lower.as_str())
        || lower.starts_with("requirements")
        || UPPER_CASE.contains(&stem)
    {
        return true;
    }
    path.components().any(|part| {
        let part = part.as_os_str().to_string_lossy().to_ascii_lowercase();
        matches!(
            part.as_str(),
            "docs" | "doc" | "site-packages" | "venv" | "__pycache__" | "licenses" | "changelog"
        )
    })
}

/// The file's name or a folder names it a prompt.
fn named_as_prompt(path: &Path) -> bool {
    path.components().any(|part| {
        let part = part.as_os_str().to_string_lossy().to_ascii_lowercase();
        part.contains("prompt")
    }) || path
        .file_stem()
        .map(|stem| stem.to_string_lossy().to_ascii_lowercase())
        .is_some_and(|stem| {
            matches!(
                stem.as_str(),
                "system" | "instructions" | "persona" | "system_message" | "agent_instructions"
            )
        })
}

/// Whether the path alone makes a text file a prompt (the prefilter lets it through).
pub fn names_a_prompt(path: &Path) -> bool {
    is_semantic_kernel_prompt(path) || (named_as_prompt(path) && !is_documentation(path))
}

/// Whether `path` is Semantic Kernel's prompt file.
pub fn is_semantic_kernel_prompt(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|name| name.eq_ignore_ascii_case("skprompt.txt"))
}

/// The prompt a text file holds, if it is one. `declared` is what the host says
/// (`skprompt.txt`'s `config.json`); `named`: the user named the file (on the command
/// line), so template syntax is enough, unless it is documentation.
pub fn extract(path: &Path, text: &str, declared: Declared, named: bool) -> Extracted {
    let mut found = Extracted::default();
    let semantic_kernel = is_semantic_kernel_prompt(path);
    let declared = match declared {
        Some(Ok(format)) => Some(format),
        Some(Err(reason)) => {
            found.unchecked.push(Unchecked {
                key: "text".to_owned(),
                line: 1,
                reason,
            });
            return found;
        }
        // `skprompt.txt` without a config is in Semantic Kernel's own syntax.
        None if semantic_kernel => Some(TemplateFormat::SemanticKernel),
        None => None,
    };
    if text.trim().is_empty() || detect::is_html_page(text) {
        return found;
    }
    // A file the user named (pre-commit names every changed one) needs template markup a
    // document does not write by accident: `{var}` braces are common in docs, so those
    // need a text that instructs a model.
    let by_place = named_as_prompt(path) && !is_documentation(path);
    // A text without a field in any format renders as itself: nothing in it can move
    // (and a prompts folder's constant text is often a part other templates include).
    let Some(decision) = detect::decide(declared, None, text) else {
        return found;
    };
    let instructs = || detect::reads_as_prompt(text) && detect::instructs_a_model(text);
    let by_name = named
        && !is_documentation(path)
        && (decision.format != TemplateFormat::Format || instructs());
    let is_prompt =
        semantic_kernel || by_place || by_name || (!is_documentation(path) && instructs());
    if !is_prompt {
        return found;
    }
    found.templates.push(EmbeddedTemplate {
        kind: HostKind::Text,
        key: "text".to_owned(),
        anchor_line: 1,
        text: text.to_owned(),
        map: HostMap::verbatim(0, text.len()),
        format: decision.format,
        format_note: decision.note(),
    });
    found
}

/// The format Semantic Kernel's `config.json` declares (`template_format`, else its own
/// syntax); `None` when the text is not JSON with an object at the top.
pub fn semantic_kernel_config(config: &str) -> Declared {
    let value: serde_json::Value = serde_json::from_str(config).ok()?;
    let object = value.as_object()?;
    Some(
        match object.get("template_format").and_then(|f| f.as_str()) {
            None => Ok(TemplateFormat::SemanticKernel),
            Some(name) => detect::declared(name).ok_or_else(|| {
                format!("config.json's template_format `{name}` is not a format prefixlint renders")
            }),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn format_of(path: &str, text: &str) -> Option<TemplateFormat> {
        extract(Path::new(path), text, None, false)
            .templates
            .first()
            .map(|t| t.format)
    }

    #[test]
    fn prompt_files_are_found_by_place_or_by_text() {
        let var = "You are a support agent for {product}. Today is {date}.\nAnswer the customer's question below politely and return JSON.\n";
        assert_eq!(
            format_of("prompts/support.md", var),
            Some(TemplateFormat::Format)
        );
        assert_eq!(
            format_of("app/customer.txt", var),
            Some(TemplateFormat::Format)
        );
        let jinja = "You summarize {{ document }} for the user.";
        assert_eq!(
            format_of("prompts/summary.txt", jinja),
            Some(TemplateFormat::Jinja)
        );
        let constant = "You are terse. Never apologize.";
        assert_eq!(format_of("prompts/tone.md", constant), None);
    }

    #[test]
    fn documentation_and_pages_are_not_prompts() {
        let readme = "# Usage\n\nYou call `render(name)` and the function returns the text for {name}. Set the following options in your config: timeout, retries.\n";
        assert_eq!(format_of("README.md", readme), None);
        assert_eq!(format_of("SUPPORT.md", readme), None);
        assert_eq!(format_of("docs/guide.md", readme), None);
        let notes = "Release notes: nothing here uses braces.";
        assert_eq!(format_of("notes.txt", notes), None);
        let page = "<html><body><form>{{ csrf }}</form></body></html>";
        assert_eq!(format_of("prompts/page.md", page), None);
    }

    #[test]
    fn semantic_kernel_prompts_take_their_config_format() {
        let text = "Summarize {{$input}} in one line.";
        assert_eq!(
            format_of("plugins/Writer/Summarize/skprompt.txt", text),
            Some(TemplateFormat::SemanticKernel)
        );
        let declared = semantic_kernel_config(r#"{"schema": 1, "template_format": "handlebars"}"#);
        let found = extract(Path::new("a/skprompt.txt"), "Hi {{name}}", declared, false);
        assert_eq!(found.templates[0].format, TemplateFormat::Handlebars);
        let unknown = semantic_kernel_config(r#"{"template_format": "erb"}"#);
        let found = extract(Path::new("a/skprompt.txt"), "Hi", unknown, false);
        assert_eq!(found.unchecked.len(), 1);
        assert!(found.templates.is_empty());
    }
}
