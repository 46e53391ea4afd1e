//! Code actions on a template: a suppression comment with a reason, a rule's safe fix,
//! a starter samples file, and (marked unsafe) moving a volatile line to the end.

use super::diagnostics::finding_span;
use super::documents::{self, Encoding};
use crate::report::TemplateReport;
use lsp_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, CreateFile, CreateFileOptions,
    DocumentChangeOperation, DocumentChanges, OneOf, OptionalVersionedTextDocumentIdentifier,
    Position, Range, ResourceOp, TextDocumentEdit, TextEdit, Uri, WorkspaceEdit,
};
use std::collections::HashMap;
use std::path::Path;

pub use crate::suppress::REASON_PLACEHOLDER;

/// Rules whose finding a line move would fix: the volatile value leaves the prefix.
const MOVABLE: &[&str] = &["PL001", "PL002"];

pub struct Context<'a> {
    pub uri: &'a Uri,
    pub text: &'a str,
    pub encoding: Encoding,
    /// The lines (0-based, inclusive) the client asks about.
    pub lines: std::ops::RangeInclusive<u32>,
    pub report: Option<&'a TemplateReport>,
    pub template_path: &'a Path,
    pub starter_samples: Option<&'a str>,
    /// What the last check rendered, for fixes that depend on the values.
    pub inspection: Option<&'a crate::check::linter::Inspection>,
}

pub fn actions(ctx: &Context) -> Vec<CodeActionOrCommand> {
    let mut actions = Vec::new();
    if let Some(report) = ctx.report {
        for finding in &report.findings {
            let code = finding.rule.code.as_str();
            let span = finding_span(report, finding, ctx.text);
            let range = documents::range(ctx.text, span.clone(), ctx.encoding);
            if range.end.line < *ctx.lines.start() || range.start.line > *ctx.lines.end() {
                continue;
            }
            if let Some(fix) = safe_fix(ctx, code, span.clone()) {
                actions.push(fix);
            }
            // PL009/PL010 are about suppression comments: fixing the comment is the way.
            if !matches!(code, "PL009" | "PL010") {
                actions.push(suppression(ctx, code, span.start));
            }
            if MOVABLE.contains(&code) {
                if let Some(action) = move_line_to_end(ctx, span.start) {
                    actions.push(action);
                }
            }
        }
    }
    if let Some(yaml) = ctx.starter_samples {
        actions.push(create_samples(ctx.template_path, yaml));
    }
    actions
}

fn edit_action(
    title: String,
    kind: CodeActionKind,
    uri: &Uri,
    edits: Vec<TextEdit>,
    preferred: bool,
) -> CodeActionOrCommand {
    CodeActionOrCommand::CodeAction(CodeAction {
        title,
        kind: Some(kind),
        edit: Some(WorkspaceEdit {
            changes: Some(HashMap::from([(uri.clone(), edits)])),
            ..WorkspaceEdit::default()
        }),
        is_preferred: preferred.then_some(true),
        ..CodeAction::default()
    })
}

/// The byte range of the line holding `offset`, without its line break.
fn line_around(text: &str, offset: usize) -> std::ops::Range<usize> {
    let offset = offset.min(text.len());
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let end = if text[..end].ends_with('\r') {
        end - 1
    } else {
        end
    };
    start..end
}

/// Whether every tag opened on `line` closes on it: then a comment at its end is outside
/// any tag.
fn tags_balanced(line: &str) -> bool {
    let opens = ["{{", "{%", "{#"]
        .iter()
        .map(|t| line.matches(t).count())
        .sum::<usize>();
    let closes = ["}}", "%}", "#}"]
        .iter()
        .map(|t| line.matches(t).count())
        .sum::<usize>();
    opens == closes
}

/// `{# prefixlint: ignore[CODE] reason #}` at the end of the finding's line (adding no
/// output there), or on its own line before it when the line ends inside a tag.
fn suppression(ctx: &Context, code: &str, at: usize) -> CodeActionOrCommand {
    let comment = format!("{{# prefixlint: ignore[{code}] {REASON_PLACEHOLDER} #}}");
    let line = line_around(ctx.text, at);
    let (insert_at, new_text) = if tags_balanced(&ctx.text[line.clone()]) {
        (line.end, comment)
    } else {
        let indent: String = ctx.text[line.clone()]
            .chars()
            .take_while(|c| *c == ' ' || *c == '\t')
            .collect();
        (line.start, format!("{indent}{comment}\n"))
    };
    let position = documents::position(ctx.text, insert_at, ctx.encoding);
    edit_action(
        format!("Add `prefixlint: ignore[{code}]` with a reason"),
        CodeActionKind::QUICKFIX,
        ctx.uri,
        vec![TextEdit::new(Range::new(position, position), new_text)],
        false,
    )
}

/// A rule's fix that keeps what the model reads: PL003's canonical serialization, `| tojson`
/// (which sorts keys) for a value written with its Python `str()`.
fn safe_fix(
    ctx: &Context,
    code: &str,
    span: std::ops::Range<usize>,
) -> Option<CodeActionOrCommand> {
    if !matches!(code, "PL002" | "PL003") {
        return None;
    }
    // Only a mapping or list written with its Python `str()` (not JSON, which `tojson`
    // would quote as a string): its data stays, in canonical JSON with sorted keys.
    let (_, written) = ctx.inspection?.written_at(span.start)?;
    let python_repr = |value: &str| {
        let value = value.trim();
        (value.starts_with('{') || value.starts_with('['))
            && serde_json::from_str::<serde_json::Value>(value).is_err()
    };
    if written.is_empty() || !written.iter().all(|(_, value)| python_repr(value)) {
        return None;
    }
    let tag = ctx.text.get(span.clone())?;
    let inner = tag.strip_prefix("{{")?;
    let inner = match inner.strip_suffix("-}}") {
        Some(inner) => inner,
        None => inner.strip_suffix("}}")?,
    };
    let inner = inner.strip_prefix('-').unwrap_or(inner);
    let opening = 2 + usize::from(tag[2..].starts_with('-'));
    if inner.contains("tojson") || inner.contains("{{") {
        return None;
    }
    let trimmed = inner.trim_end();
    let insert_at = span.start + opening + trimmed.len();
    let position = documents::position(ctx.text, insert_at, ctx.encoding);
    Some(edit_action(
        "Serialize canonically: add `| tojson` (sorted keys)".into(),
        CodeActionKind::QUICKFIX,
        ctx.uri,
        vec![TextEdit::new(
            Range::new(position, position),
            " | tojson".into(),
        )],
        true,
    ))
}

/// Moves the finding's line to the end of the template. It changes what the model reads,
/// so it is never preferred and its title says it is unsafe.
fn move_line_to_end(ctx: &Context, at: usize) -> Option<CodeActionOrCommand> {
    let line = line_around(ctx.text, at);
    let content = &ctx.text[line.clone()];
    // The last line has nothing after it to move past.
    let full_end = line.end + ctx.text[line.end..].find('\n')? + 1;
    if ctx.text[full_end..].trim().is_empty() {
        return None; // nothing stable after it
    }
    let number = documents::position(ctx.text, line.start, ctx.encoding).line + 1;
    let end = documents::position(ctx.text, ctx.text.len(), ctx.encoding);
    let appended = if ctx.text.ends_with('\n') {
        format!("{content}\n")
    } else {
        format!("\n{content}")
    };
    Some(edit_action(
        format!(
            "Move line {number} to the end of the template (unsafe: changes what the model reads)"
        ),
        CodeActionKind::new("quickfix.unsafe"),
        ctx.uri,
        vec![
            TextEdit::new(
                documents::range(ctx.text, line.start..full_end, ctx.encoding),
                String::new(),
            ),
            TextEdit::new(Range::new(end, end), appended),
        ],
        false,
    ))
}

/// Creates `NAME.samples.yaml` beside the template with the starter `prefixlint samples`
/// prints.
fn create_samples(template: &Path, yaml: &str) -> CodeActionOrCommand {
    let target = crate::samples::samples_path(template);
    let uri = documents::uri_from_path(&target);
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let start = Position::new(0, 0);
    CodeActionOrCommand::CodeAction(CodeAction {
        title: format!("Create {name} from the inferred shape"),
        kind: Some(CodeActionKind::SOURCE),
        edit: Some(WorkspaceEdit {
            document_changes: Some(DocumentChanges::Operations(vec![
                DocumentChangeOperation::Op(ResourceOp::Create(CreateFile {
                    uri: uri.clone(),
                    options: Some(CreateFileOptions {
                        overwrite: Some(false),
                        ignore_if_exists: Some(true),
                    }),
                    annotation_id: None,
                })),
                DocumentChangeOperation::Edit(TextDocumentEdit {
                    text_document: OptionalVersionedTextDocumentIdentifier { uri, version: None },
                    edits: vec![OneOf::Left(TextEdit::new(
                        Range::new(start, start),
                        yaml.to_owned(),
                    ))],
                }),
            ])),
            ..WorkspaceEdit::default()
        }),
        ..CodeAction::default()
    })
}
