//! `check --fix`/`--diff` over the checked paths: the templates whose check found a
//! fixable finding are fixed one file at a time (a template file, or each template inside a
//! host file), then written back (`--fix`) or shown as a diff (`--diff`). A file that cannot
//! be written is an error for that file; the others go on.

use super::engine::{fix_template, FixOptions};
use super::files::{unified_diff, SourceFile};
use super::turns::Turns;
use super::verify::Checked;
use super::TemplateFixes;
use crate::discover::hosts::Embedded;
use crate::error::{Error, Result};
use crate::formats::TemplateFormat;
use crate::host::HostKind;
use crate::report::TemplateOutcome;
use crate::request::TemplateText;
use crate::tokenize::TokenEngine;
use crate::Linter;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What a fix run did.
#[derive(Default)]
pub struct FixRun {
    pub templates: Vec<TemplateFixes>,
    /// The unified diffs of the files that change (`--diff`), in path order.
    pub diff: String,
    /// Files that could not be read or written.
    pub errors: Vec<Error>,
}

impl FixRun {
    pub fn changed_files(&self) -> usize {
        let mut paths: Vec<&str> = self
            .templates
            .iter()
            .filter(|t| t.changed)
            .map(|t| t.path.as_str())
            .collect();
        paths.dedup();
        paths.len()
    }
}

/// Fixes what `linter` finds under `paths` (the current folder when empty); writes the
/// fixed files when `write`, else only collects their diff.
pub fn run(
    linter: &Linter,
    paths: &[PathBuf],
    cwd: &Path,
    options: &FixOptions,
    write: bool,
) -> Result<FixRun> {
    let mut roots: Vec<PathBuf> = if paths.is_empty() {
        vec![cwd.to_path_buf()]
    } else {
        paths.iter().map(|p| cwd.join(p)).collect()
    };
    // A `--chat-request` file is checked, so it may be fixed.
    roots.extend(linter.chat_requests().iter().map(|p| cwd.join(p)));
    // Which files hold a fixable finding: the report's own check (from the results cache
    // when it is warm). A host file lists the keys of its templates that do.
    let mut work: BTreeMap<PathBuf, (bool, Vec<Option<String>>, TemplateFormat)> = BTreeMap::new();
    for outcome in linter.check(paths)? {
        let TemplateOutcome::Checked(report) = outcome else {
            continue;
        };
        let fixable = report
            .findings
            .iter()
            .any(|f| super::fixable(f) && options.selects(f.rule.code.as_str()));
        if !fixable {
            continue;
        }
        let prompt_poet = report
            .embedded
            .as_ref()
            .is_some_and(|e| e.kind == HostKind::PromptPoet.as_str());
        let key = report.embedded.as_ref().map(|e| e.key.clone());
        let entry = work.entry(cwd.join(&report.path)).or_default();
        entry.0 |= prompt_poet;
        entry.1.push(key);
        // A template file's format, as its check read it (a host's templates carry theirs).
        entry.2 = report.format;
    }
    let mut run = FixRun::default();
    if work.is_empty() {
        return Ok(run);
    }
    let engine = linter.load_engine()?;
    for (path, (prompt_poet, keys, format)) in work {
        let file = match SourceFile::read(&path) {
            Ok(file) => file,
            Err(e) => {
                run.errors.push(e);
                continue;
            }
        };
        let (fixed, mut templates) = if keys.iter().all(Option::is_none) {
            fix_file(linter, engine.as_ref(), &file, format, options)
        } else {
            let keys: Vec<String> = keys.into_iter().flatten().collect();
            fix_host(linter, engine.as_ref(), &file, &keys, prompt_poet, options)
        };
        if fixed != file.text {
            if write {
                if let Err(e) = file.write(&fixed, &roots) {
                    let message = e.to_string();
                    for template in &mut templates {
                        template.error = Some(message.clone());
                    }
                    run.errors.push(e);
                    run.templates.extend(templates);
                    continue;
                }
            } else {
                run.diff
                    .push_str(&unified_diff(&file.display, &file.text, &fixed));
            }
            for template in &mut templates {
                template.changed = true;
            }
        }
        run.templates.extend(templates);
    }
    Ok(run)
}

/// `text` checked as the template it stands for (a template file, or `embedded`), in the
/// chat template when one is configured: its checked form, or its error message. The
/// editor server's code actions check their candidates with it too.
pub fn checked(
    linter: &Linter,
    engine: &dyn TokenEngine,
    path: &Path,
    embedded: Option<&Embedded>,
    text: TemplateText<'_>,
) -> Result<Checked, String> {
    let (outcome, inspection, view) = linter.check_for_fix(path, embedded, text, engine);
    let text = text.text;
    let turns = match (embedded.map(|e| e.template.kind), view.chat_role) {
        _ if view.request => Turns::Request,
        (Some(HostKind::Prompty), _) => Turns::Prompty,
        (Some(HostKind::PromptPoet), _) => Turns::PromptPoet,
        (_, Some(role)) => Turns::Message { role },
        (_, None) => Turns::Whole,
    };
    match (outcome, inspection) {
        (TemplateOutcome::Checked(report), Some(inspection)) => {
            Ok(Checked::new(*report, inspection, text).in_turns(turns, view.texts))
        }
        (TemplateOutcome::Failed(error), _) => Err(error.message),
        _ => Err("the template was not checked".into()),
    }
}

/// The templates in a host file's text: a prompt-poet file is one, the whole file.
fn templates_in(linter: &Linter, path: &Path, text: &str, prompt_poet: bool) -> Vec<Embedded> {
    if prompt_poet {
        return crate::discover::hosts::prompt_poet(text)
            .into_iter()
            .collect();
    }
    linter.embedded_templates(path, text).unwrap_or_default()
}

/// A template file: its text fixed as a whole.
fn fix_file(
    linter: &Linter,
    engine: &dyn TokenEngine,
    file: &SourceFile,
    format: TemplateFormat,
    options: &FixOptions,
) -> (String, Vec<TemplateFixes>) {
    let check = |text: &str| {
        let text = TemplateText { text, format };
        checked(linter, engine, &file.path, None, text)
    };
    match fix_template(&check, &file.text, options) {
        Some(fixed) => {
            let template = TemplateFixes {
                path: file.display.clone(),
                embedded_key: None,
                shared_prefix_tokens_before: fixed.shared_prefix_tokens_before,
                shared_prefix_tokens_after: fixed.shared_prefix_tokens_after,
                tokens_gained: fixed
                    .shared_prefix_tokens_after
                    .saturating_sub(fixed.shared_prefix_tokens_before),
                changed: false,
                error: None,
                fixes: fixed.records,
            };
            (fixed.text, vec![template])
        }
        None => (file.text.clone(), Vec::new()),
    }
}

/// A host file: each named template fixed in turn, its fixed text written back into the
/// host (only the template's bytes change, the host's quoting and indentation kept), and the
/// host extracted again to prove the template now reads as fixed.
fn fix_host(
    linter: &Linter,
    engine: &dyn TokenEngine,
    file: &SourceFile,
    keys: &[String],
    prompt_poet: bool,
    options: &FixOptions,
) -> (String, Vec<TemplateFixes>) {
    let mut host = file.text.clone();
    let mut templates = Vec::new();
    for key in keys {
        let found = templates_in(linter, &file.path, &host, prompt_poet);
        let Some(embedded) = found.into_iter().find(|e| &e.template.key == key) else {
            continue;
        };
        let check = |text: &str| checked(linter, engine, &file.path, Some(&embedded), text.into());
        let Some(mut fixed) = fix_template(&check, &embedded.template.text, options) else {
            continue;
        };
        // Lines are the host's, as the report gives them, in the titles too.
        let host_line = |line: usize| {
            let offset = crate::source::offset_of(&embedded.template.text, line, 1);
            let host_offset = embedded.template.map.host_offset(offset);
            crate::source::line_col(&host, host_offset).0
        };
        for record in &mut fixed.records {
            record.line = host_line(record.line);
            record.title = lines_in_title(&record.title, host_line);
        }
        let mut error = None;
        if fixed.text != embedded.template.text {
            match super::host::write_back(&host, &embedded.template, &fixed.text) {
                Some(new_host)
                    if reads_back(linter, file, &new_host, key, &fixed.text, prompt_poet) =>
                {
                    host = new_host;
                }
                _ => {
                    error = Some(format!(
                        "the fixed template could not be written into {} with its quoting and indentation intact; apply the fixes by hand",
                        file.display
                    ));
                    for record in fixed.records.iter_mut().filter(|r| r.applied) {
                        record.applied = false;
                        record.reason = Some("the host file's quoting cannot hold the edit".into());
                        record.shared_prefix_tokens_after = record.shared_prefix_tokens_before;
                    }
                    fixed.shared_prefix_tokens_after = fixed.shared_prefix_tokens_before;
                }
            }
        }
        templates.push(TemplateFixes {
            path: file.display.clone(),
            embedded_key: Some(key.clone()),
            shared_prefix_tokens_before: fixed.shared_prefix_tokens_before,
            shared_prefix_tokens_after: fixed.shared_prefix_tokens_after,
            tokens_gained: fixed
                .shared_prefix_tokens_after
                .saturating_sub(fixed.shared_prefix_tokens_before),
            changed: false,
            error,
            fixes: fixed.records,
        });
    }
    (host, templates)
}

/// `host` with `embedded`'s template replaced by `fixed` (its quoting and indentation
/// kept), when the host parsed again holds exactly that text: what an editor's code action
/// writes into a host buffer.
pub fn host_with(
    linter: &Linter,
    path: &Path,
    host: &str,
    embedded: &Embedded,
    fixed: &str,
) -> Option<String> {
    let prompt_poet = embedded.template.kind == HostKind::PromptPoet;
    let new_host = super::host::write_back(host, &embedded.template, fixed)?;
    templates_in(linter, path, &new_host, prompt_poet)
        .iter()
        .any(|e| e.template.key == embedded.template.key && e.template.text == fixed)
        .then_some(new_host)
}

/// A fix's title with the template lines it names made `host`'s lines.
pub fn title_in_host(title: &str, embedded: &Embedded, host: &str) -> String {
    lines_in_title(title, |line| {
        let offset = crate::source::offset_of(&embedded.template.text, line, 1);
        crate::source::line_col(host, embedded.template.map.host_offset(offset)).0
    })
}

/// Whether `host`, parsed again, holds the template `key` with exactly `text`.
fn reads_back(
    linter: &Linter,
    file: &SourceFile,
    host: &str,
    key: &str,
    text: &str,
    prompt_poet: bool,
) -> bool {
    templates_in(linter, &file.path, host, prompt_poet)
        .iter()
        .any(|e| e.template.key == key && e.template.text == text)
}

/// A fix's title with the template lines it names (`line 3`, `lines 3-5`) made host lines.
fn lines_in_title(title: &str, host_line: impl Fn(usize) -> usize) -> String {
    let number = |text: &str| -> Option<(usize, usize)> {
        let digits = text.bytes().take_while(u8::is_ascii_digit).count();
        Some((text[..digits].parse().ok()?, digits))
    };
    for word in ["lines ", "line "] {
        let Some(at) = title.find(word) else { continue };
        let rest = &title[at + word.len()..];
        let Some((first, len)) = number(rest) else {
            continue;
        };
        let mut out = format!("{}{word}{}", &title[..at], host_line(first));
        let mut rest = &rest[len..];
        if let Some((last, len)) = rest.strip_prefix('-').and_then(number) {
            out.push_str(&format!("-{}", host_line(last)));
            rest = &rest[1 + len..];
        }
        out.push_str(rest);
        return out;
    }
    title.to_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn titles_name_host_lines() {
        let plus_ten = |line: usize| line + 10;
        assert_eq!(
            super::lines_in_title("Move lines 2-4 to the end of the last user turn", plus_ten),
            "Move lines 12-14 to the end of the last user turn"
        );
        assert_eq!(
            super::lines_in_title("Move line 2 to the end of the template", plus_ten),
            "Move line 12 to the end of the template"
        );
        assert_eq!(
            super::lines_in_title("Add `| tojson`", plus_ten),
            "Add `| tojson`"
        );
    }
}
