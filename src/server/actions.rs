//! Code actions on a template: a suppression comment with a reason, a starter samples
//! file, and the rules' fixes from `crate::fix` (the same code as `check --fix`): safe ones
//! preferred, unsafe ones (moving a volatile line to the end) marked so.

use super::diagnostics::finding_span;
use super::documents::{self, Encoding};
use crate::fix::{Fix, Safety};
use crate::report::TemplateReport;
use crate::rules::RuleCode;
use lsp_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, CreateFile, CreateFileOptions,
    DocumentChangeOperation, DocumentChanges, OneOf, OptionalVersionedTextDocumentIdentifier,
    Position, Range, ResourceOp, TextDocumentEdit, TextEdit, Uri, WorkspaceEdit,
};
use std::collections::HashMap;
use std::path::Path;

pub use crate::suppress::REASON_PLACEHOLDER;

pub struct Context<'a> {
    pub uri: &'a Uri,
    pub text: &'a str,
    pub encoding: Encoding,
    /// The lines (0-based, inclusive) the client asks about.
    pub lines: std::ops::RangeInclusive<u32>,
    pub report: Option<&'a TemplateReport>,
    pub template_path: &'a Path,
    pub starter_samples: Option<&'a str>,
    /// The verified fixes of the findings on `lines` (`crate::fix`, as `check --fix` applies
    /// them), by the finding's index in the report.
    pub fixes: &'a [(usize, Fix)],
}

pub fn actions(ctx: &Context) -> Vec<CodeActionOrCommand> {
    let mut actions = Vec::new();
    if let Some(report) = ctx.report {
        for (n, finding) in report.findings.iter().enumerate() {
            let code = finding.rule.code;
            let span = finding_span(report, finding, ctx.text);
            let range = documents::range(ctx.text, span.clone(), ctx.encoding);
            if range.end.line < *ctx.lines.start() || range.start.line > *ctx.lines.end() {
                continue;
            }
            let fixes = || {
                ctx.fixes
                    .iter()
                    .filter(move |(i, _)| *i == n)
                    .map(|(_, f)| f)
            };
            for fix in fixes().filter(|f| f.safety == Safety::Safe) {
                actions.push(fix_action(ctx, fix));
            }
            // PL009/PL010 are about suppression comments: fixing the comment is the way.
            if !matches!(
                code,
                RuleCode::UnusedSuppression | RuleCode::SuppressionWithoutReason
            ) {
                actions.push(suppression(ctx, code.as_str(), span.start));
            }
            for fix in fixes().filter(|f| f.safety == Safety::Unsafe) {
                actions.push(fix_action(ctx, fix));
            }
        }
    }
    if let Some(yaml) = ctx.starter_samples {
        actions.push(create_samples(ctx.template_path, yaml));
    }
    actions
}

/// The verified fixes of a host file's templates (edits of the host's text) as code
/// actions, safe ones first.
pub fn host_fix_actions(
    uri: &Uri,
    text: &str,
    encoding: Encoding,
    path: &Path,
    fixes: &[Fix],
) -> Vec<CodeActionOrCommand> {
    let ctx = Context {
        uri,
        text,
        encoding,
        lines: 0..=0,
        report: None,
        template_path: path,
        starter_samples: None,
        fixes: &[],
    };
    let (safe, unsafe_fixes): (Vec<&Fix>, Vec<&Fix>) =
        fixes.iter().partition(|f| f.safety == Safety::Safe);
    safe.into_iter()
        .chain(unsafe_fixes)
        .map(|fix| fix_action(&ctx, fix))
        .collect()
}

/// A fix as a code action: a safe one is preferred; an unsafe one (it changes what the
/// model reads) is never preferred and its title says so.
fn fix_action(ctx: &Context, fix: &Fix) -> CodeActionOrCommand {
    let edits = fix
        .edits
        .iter()
        .map(|edit| {
            TextEdit::new(
                documents::range(ctx.text, edit.range.clone(), ctx.encoding),
                edit.replacement.clone(),
            )
        })
        .collect();
    match fix.safety {
        Safety::Safe => edit_action(
            fix.title.clone(),
            CodeActionKind::QUICKFIX,
            ctx.uri,
            edits,
            true,
        ),
        Safety::Unsafe => edit_action(
            format!("{} (unsafe: changes what the model reads)", fix.title),
            CodeActionKind::new("quickfix.unsafe"),
            ctx.uri,
            edits,
            false,
        ),
    }
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
