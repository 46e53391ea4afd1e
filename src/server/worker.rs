//! The worker thread: everything that renders or tokenizes runs here, off the message
//! loop. It owns the config, the [`Linter`] and the one tokenizer of the server, checks
//! snapshots of the open buffers, and answers hovers and code actions from the last check.
//! Jobs that queued up while it worked are coalesced, and a check whose buffer changed
//! meanwhile is not published (a newer check is on its way).

use super::actions;
use super::diagnostics;
use super::documents::{self, Documents, Encoding};
use super::hover;
use super::ServerOptions;
use crate::check::linter::{Inspection, LintOptions, Linter};
use crate::config::Config;
use crate::discover::samples_files::{is_samples_file, template_for_samples};
use crate::discover::Matcher;
use crate::error::{Error, Result};
use crate::report::{TemplateError, TemplateOutcome, TemplateReport};
use crate::settings::Settings;
use crate::tokenize::TokenEngine;
use crossbeam_channel::{Receiver, Sender};
use lsp_server::{Message, Notification, RequestId, Response};
use lsp_types::notification::{Notification as _, PublishDiagnostics};
use lsp_types::{
    CodeActionParams, Diagnostic, Hover, HoverContents, HoverParams, MarkupContent, MarkupKind,
    PublishDiagnosticsParams, Uri,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub const CONFIG_FILE: &str = "prefixlint.yaml";

pub enum Job {
    /// A buffer was opened, saved, changed (after the debounce) or changed on disk:
    /// check what it stands for (a template, its samples, the config).
    Check(String),
    /// A buffer was closed.
    Closed(String),
    Hover(RequestId, HoverParams),
    Actions(RequestId, CodeActionParams),
}

/// A template's last check, kept for hovers and code actions while its buffer is open.
struct Checked {
    revision: u64,
    text: String,
    report: Option<TemplateReport>,
    inspection: Option<Inspection>,
}

pub struct Worker {
    out: Sender<Message>,
    documents: Arc<Mutex<Documents>>,
    encoding: Encoding,
    options: ServerOptions,
    linter: Linter,
    matcher: Matcher,
    config_path: PathBuf,
    /// The tokenizer, loaded once, and the setting it was loaded for.
    engine: Option<(String, Box<dyn TokenEngine>)>,
    checked: HashMap<String, Checked>,
    /// Other files each template's errors were published in, to clear them later.
    elsewhere: HashMap<String, BTreeSet<String>>,
    /// Whether the config file shows an error now (to clear once it loads).
    config_failed: bool,
}

impl Worker {
    pub fn new(
        out: Sender<Message>,
        documents: Arc<Mutex<Documents>>,
        encoding: Encoding,
        options: ServerOptions,
    ) -> Worker {
        let mut worker = Worker {
            out,
            documents,
            encoding,
            linter: Linter::new(Config::default(), LintOptions::default())
                .expect("the default config is valid"),
            matcher: Matcher::new(&Config::default().include, &Config::default().exclude)
                .expect("the default globs are valid"),
            config_path: options.root.join(CONFIG_FILE),
            options,
            engine: None,
            checked: HashMap::new(),
            elsewhere: HashMap::new(),
            config_failed: false,
        };
        worker.configure();
        worker
    }

    /// Runs jobs until the message loop hangs up. A job that panics is answered (or
    /// dropped) and the worker goes on.
    pub fn run(mut self, jobs: Receiver<Job>) {
        while let Ok(first) = jobs.recv() {
            let mut batch = vec![first];
            batch.extend(jobs.try_iter());
            // Several checks of one buffer are one check.
            let mut seen = BTreeSet::new();
            batch.retain(|job| match job {
                Job::Check(uri) => seen.insert(uri.clone()),
                _ => true,
            });
            for job in batch {
                let request = match &job {
                    Job::Hover(id, _) | Job::Actions(id, _) => Some(id.clone()),
                    _ => None,
                };
                let ran =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run_job(job)));
                if ran.is_err() {
                    if let Some(id) = request {
                        self.send(Message::Response(Response::new_err(
                            id,
                            lsp_server::ErrorCode::InternalError as i32,
                            "prefixlint failed on this request".into(),
                        )));
                    }
                }
            }
        }
    }

    fn run_job(&mut self, job: Job) {
        match job {
            Job::Check(uri) => self.check_uri(&uri),
            Job::Closed(uri) => self.closed(&uri),
            Job::Hover(id, params) => {
                let result = self.hover(&params);
                self.send(Message::Response(Response::new_ok(id, result)));
            }
            Job::Actions(id, params) => {
                let result = self.actions(&params);
                self.send(Message::Response(Response::new_ok(id, result)));
            }
        }
    }

    fn send(&self, message: Message) {
        // The client is gone when this fails; the message loop notices and stops.
        let _ = self.out.send(message);
    }

    fn publish(&self, uri: Uri, diagnostics: Vec<Diagnostic>) {
        let params = PublishDiagnosticsParams {
            uri,
            diagnostics,
            version: None,
        };
        self.send(Message::Notification(Notification::new(
            PublishDiagnostics::METHOD.to_owned(),
            params,
        )));
    }

    /// (Re)reads the config: from the workspace root up, as `check` run there does. A bad
    /// config is reported in its file, and the last good one stays in use.
    fn configure(&mut self) {
        let root = &self.options.root;
        let resolved =
            Config::resolve(self.options.config.as_deref(), self.options.no_config, root).and_then(
                |config| {
                    let matcher = Matcher::new(&config.include, &config.exclude)
                        .map_err(|e| Error::input(format!("{}: {e}", config.display_name())))?;
                    let path = config.path.clone();
                    let settings = Settings::resolve(&self.options.flags, &config)?;
                    let linter = Linter::new(
                        config,
                        LintOptions {
                            settings,
                            cwd: root.clone(),
                            ..LintOptions::default()
                        },
                    )?;
                    Ok((linter, matcher, path))
                },
            );
        let config_uri = documents::uri_from_path(&self.config_path);
        // An unsaved buffer of the config is checked too (it takes effect when saved).
        let unsaved = self
            .documents
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(config_uri.as_str())
            .map(|d| d.text.clone());
        let resolved = match (resolved, unsaved) {
            (Ok(loaded), Some(text)) => Config::parse(&text, CONFIG_FILE).map(|_| loaded),
            (resolved, _) => resolved,
        };
        match resolved {
            Ok((linter, matcher, path)) => {
                self.linter = linter;
                self.matcher = matcher;
                if let Some(path) = path {
                    self.config_path = path.canonicalize().unwrap_or(path);
                }
                if std::mem::take(&mut self.config_failed) {
                    self.publish(config_uri, Vec::new());
                }
            }
            Err(error) => {
                let failed = TemplateOutcome::Failed(TemplateError::new(
                    crate::source::display_path(&self.config_path),
                    CONFIG_FILE,
                    error,
                ));
                let published = diagnostics::of_outcome(
                    &failed,
                    "",
                    CONFIG_FILE,
                    &self.options.root,
                    self.encoding,
                );
                self.publish(config_uri, published.template);
                self.config_failed = true;
            }
        }
    }

    fn is_config(&self, path: &Path) -> bool {
        path == self.config_path
            || (path.file_name().is_some_and(|n| n == CONFIG_FILE)
                && path.parent() == Some(self.options.root.as_path()))
    }

    fn check_uri(&mut self, uri: &str) {
        let Some(path) = documents::path_from_uri(uri) else {
            return;
        };
        if self.is_config(&path) {
            self.configure();
            // Everything open may read differently now.
            let open = self
                .documents
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .uris();
            for uri in open {
                if let Some(path) = documents::path_from_uri(&uri) {
                    if !self.is_config(&path) && self.matcher.is_template(&path) {
                        self.check_template(&path);
                    } else if !self.is_config(&path) && self.linter.host_kind(&path).is_some() {
                        self.check_host(&path);
                    }
                }
            }
            return;
        }
        if is_samples_file(&path) {
            if let Some(template) = template_for_samples(&path, &self.matcher) {
                self.check_template(&template);
            }
            return;
        }
        if self.matcher.is_template(&path) {
            self.check_template(&path);
        } else if let Some(kind) = self.linter.host_kind(&path) {
            self.check_host(&path);
            // A `.md`/`.txt` file may be a prompt of its own and an include of a template.
            if kind != crate::host::HostKind::Text {
                return;
            }
        }
        // Any open template may include it: an include-only file (any name), or a
        // template whose name another one mentions.
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let open = self
            .documents
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .uris();
        for other in open {
            if other == uri {
                continue;
            }
            let Some(other_path) = documents::path_from_uri(&other) else {
                continue;
            };
            if !self.matcher.is_template(&other_path) {
                continue;
            }
            let mentions = {
                let documents = self.documents.lock().unwrap_or_else(|e| e.into_inner());
                documents
                    .get(&other)
                    .zip(name.as_deref())
                    .is_some_and(|(d, name)| d.text.contains(name))
            };
            if mentions {
                self.check_template(&other_path);
            }
        }
    }

    fn closed(&mut self, uri: &str) {
        self.checked.remove(uri);
        let Some(path) = documents::path_from_uri(uri) else {
            return;
        };
        if is_samples_file(&path) {
            // The template reads the file on disk again.
            if let Some(template) = template_for_samples(&path, &self.matcher) {
                self.check_template(&template);
            }
        } else if self.matcher.is_template(&path) || self.linter.host_kind(&path).is_some() {
            // As ruff does: a closed file's diagnostics go with it.
            if let Ok(closed) = uri.parse::<Uri>() {
                self.publish(closed, Vec::new());
            }
            for other in self.elsewhere.remove(uri).unwrap_or_default() {
                if let Ok(other) = other.parse() {
                    self.publish(other, Vec::new());
                }
            }
        }
    }

    fn engine(&mut self) -> Result<&dyn TokenEngine> {
        let setting = self.linter.tokenizer_setting().to_owned();
        if self
            .engine
            .as_ref()
            .is_none_or(|(loaded, _)| *loaded != setting)
        {
            let engine = self.linter.load_engine()?;
            self.engine = Some((setting, engine));
        }
        Ok(self
            .engine
            .as_ref()
            .map(|(_, e)| e.as_ref())
            .expect("just loaded"))
    }

    /// Checks the template at `path` with the open buffers' texts (its own and its
    /// samples'), or the files on disk, and publishes the diagnostics.
    fn check_template(&mut self, path: &Path) {
        let (uri, own, samples_text, unsaved, revision) = {
            let documents = self.documents.lock().unwrap_or_else(|e| e.into_inner());
            // Published under the client's spelling of the URI when it has the file open.
            let uri = documents
                .uri_of(path)
                .and_then(|spelled| spelled.parse::<Uri>().ok())
                .unwrap_or_else(|| documents::uri_from_path(path));
            let own = documents
                .get(uri.as_str())
                .map(|d| (d.text.clone(), d.changed_at));
            let samples = documents
                .text_of(&crate::samples::samples_path(path))
                .map(str::to_owned);
            // Other open buffers stand for their files when the template includes them.
            let unsaved: BTreeMap<PathBuf, String> = documents
                .uris()
                .into_iter()
                .filter(|other| other != uri.as_str())
                .filter_map(|other| {
                    let file = documents::path_from_uri(&other)?;
                    let real = file.canonicalize().unwrap_or(file);
                    Some((real, documents.get(&other)?.text.clone()))
                })
                .collect();
            (uri, own, samples, Arc::new(unsaved), documents.revision)
        };
        let (text, changed_at) = match own {
            Some((text, changed_at)) => (text, Some(changed_at)),
            None => {
                let display = crate::source::display_path(path);
                match crate::source::read_text(path, &display) {
                    Ok(text) => (text, None),
                    // Gone from disk and not open: nothing to check.
                    Err(Error::Io { source, .. })
                        if source.kind() == std::io::ErrorKind::NotFound =>
                    {
                        return
                    }
                    // Unreadable (not UTF-8, binary, too large): say so in the file.
                    Err(error) => {
                        let failed =
                            TemplateOutcome::Failed(TemplateError::new(display, "", error));
                        let root = self.linter_root();
                        let published =
                            diagnostics::of_outcome(&failed, "", "", &root, self.encoding);
                        self.publish(uri, published.template);
                        return;
                    }
                }
            }
        };
        let (outcome, inspection) = match self.engine() {
            Ok(_) => {
                let engine = self
                    .engine
                    .as_ref()
                    .map(|(_, e)| e.as_ref())
                    .expect("loaded");
                self.linter
                    .check_buffer(path, &text, samples_text.as_deref(), unsaved, engine)
            }
            Err(error) => (
                TemplateOutcome::Failed(TemplateError::new(
                    crate::source::display_path(path),
                    "",
                    error,
                )),
                None,
            ),
        };
        // A newer edit of this buffer came in while it was checked: its check follows.
        if let Some(changed_at) = changed_at {
            let documents = self.documents.lock().unwrap_or_else(|e| e.into_inner());
            if documents
                .get(uri.as_str())
                .is_some_and(|d| d.changed_at != changed_at)
            {
                return;
            }
        }
        let root = self.linter_root();
        let name = inspection
            .as_ref()
            .map(|i| i.template_name.clone())
            .unwrap_or_else(|| {
                crate::check::template_name(path, &crate::check::root_for(path, &root))
            });
        let published = diagnostics::of_outcome(&outcome, &text, &name, &root, self.encoding);
        let mut now_elsewhere = BTreeSet::new();
        for (other, diagnostics) in published.elsewhere {
            now_elsewhere.insert(other.as_str().to_owned());
            self.publish(other, diagnostics);
        }
        // A samples file (or include) that failed before and no longer does is cleared.
        let stale = self.elsewhere.remove(uri.as_str()).unwrap_or_default();
        for other in stale.difference(&now_elsewhere) {
            if let Ok(other) = other.parse() {
                self.publish(other, Vec::new());
            }
        }
        self.elsewhere
            .insert(uri.as_str().to_owned(), now_elsewhere);
        self.publish(uri.clone(), published.template);
        if changed_at.is_some() {
            let report = match outcome {
                TemplateOutcome::Checked(report) => Some(*report),
                _ => None,
            };
            self.checked.insert(
                uri.as_str().to_owned(),
                Checked {
                    revision,
                    text,
                    report,
                    inspection,
                },
            );
        }
    }

    /// Checks the templates embedded in a host file (YAML, Python, `.prompty`) from its
    /// open buffer or the disk, and publishes their diagnostics at the host's lines.
    fn check_host(&mut self, path: &Path) {
        let (uri, text, unsaved) = {
            let documents = self.documents.lock().unwrap_or_else(|e| e.into_inner());
            let uri = documents
                .uri_of(path)
                .and_then(|spelled| spelled.parse::<Uri>().ok())
                .unwrap_or_else(|| documents::uri_from_path(path));
            let text = documents.get(uri.as_str()).map(|d| d.text.clone());
            let unsaved: BTreeMap<PathBuf, String> = documents
                .uris()
                .into_iter()
                .filter(|other| other != uri.as_str())
                .filter_map(|other| {
                    let file = documents::path_from_uri(&other)?;
                    let real = file.canonicalize().unwrap_or(file);
                    Some((real, documents.get(&other)?.text.clone()))
                })
                .collect();
            (uri, text, Arc::new(unsaved))
        };
        let text = match text {
            Some(text) => text,
            None => match crate::source::read_text(path, &crate::source::display_path(path)) {
                Ok(text) => text,
                Err(_) => return,
            },
        };
        let outcomes = match self.engine() {
            Ok(_) => {
                let engine = self
                    .engine
                    .as_ref()
                    .map(|(_, e)| e.as_ref())
                    .expect("loaded");
                self.linter.check_host_buffer(path, &text, unsaved, engine)
            }
            Err(error) => vec![TemplateOutcome::Failed(TemplateError::new(
                crate::source::display_path(path),
                "",
                error,
            ))],
        };
        let root = self.linter_root();
        let mut diagnostics = Vec::new();
        for outcome in &outcomes {
            let published = diagnostics::of_outcome(outcome, &text, "", &root, self.encoding);
            diagnostics.extend(published.template);
        }
        self.publish(uri, diagnostics);
    }

    fn linter_root(&self) -> PathBuf {
        self.options.root.clone()
    }

    /// The last check of an open template, redone if any buffer changed since.
    fn fresh(&mut self, uri: &Uri) -> Option<&Checked> {
        let revision = self
            .documents
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .revision;
        let current = self
            .checked
            .get(uri.as_str())
            .is_some_and(|c| c.revision == revision);
        if !current {
            let path = documents::path_from_uri(uri.as_str())?;
            self.check_template(&path);
        }
        self.checked.get(uri.as_str())
    }

    fn hover(&mut self, params: &HoverParams) -> Option<Hover> {
        let uri = &params.text_document_position_params.text_document.uri;
        let position = params.text_document_position_params.position;
        let encoding = self.encoding;
        let checked = self.fresh(uri)?;
        let offset = documents::offset(&checked.text, position, encoding);
        let analysis = &checked.report.as_ref()?.analysis;
        let value = hover::markdown(checked.inspection.as_ref()?, analysis, offset)?;
        Some(Hover {
            contents: HoverContents::Markup(MarkupContent {
                kind: MarkupKind::Markdown,
                value,
            }),
            range: None,
        })
    }

    fn actions(
        &mut self,
        params: &CodeActionParams,
    ) -> Option<Vec<lsp_types::CodeActionOrCommand>> {
        let uri = params.text_document.uri.clone();
        let path = documents::path_from_uri(uri.as_str())?;
        let encoding = self.encoding;
        let lines = params.range.start.line..=params.range.end.line;
        if self.linter.host_kind(&path).is_some() {
            return Some(self.host_actions(&uri, &path, lines));
        }
        let fixes = self.verified_fixes(&uri, &path, lines.clone());
        let checked = self.checked.get(uri.as_str())?;
        let ctx = actions::Context {
            uri: &uri,
            text: &checked.text,
            encoding,
            lines: params.range.start.line..=params.range.end.line,
            report: checked.report.as_ref(),
            template_path: &path,
            starter_samples: checked
                .inspection
                .as_ref()
                .and_then(|i| i.starter_samples.as_deref()),
            fixes: &fixes,
        };
        Some(actions::actions(&ctx))
    }

    /// Code actions on a host file (YAML, Python, `.prompty`): the fixes of its templates'
    /// findings on `lines`, made and verified as `check --fix` does (`fix::run::checked`,
    /// in the chat template when one is configured), each written into the host's text as
    /// `check --fix` writes it (`fix::run::host_with`) and offered as one edit of the host.
    fn host_actions(
        &mut self,
        uri: &Uri,
        path: &Path,
        lines: std::ops::RangeInclusive<u32>,
    ) -> Vec<lsp_types::CodeActionOrCommand> {
        let encoding = self.encoding;
        let open = {
            let documents = self.documents.lock().unwrap_or_else(|e| e.into_inner());
            documents.get(uri.as_str()).map(|d| d.text.clone())
        };
        let Some(text) = open else {
            return Vec::new();
        };
        if self.engine().is_err() {
            return Vec::new();
        }
        let engine = self
            .engine
            .as_ref()
            .map(|(_, e)| e.as_ref())
            .expect("loaded");
        let linter = &self.linter;
        let Ok(found) = linter.embedded_templates(path, &text) else {
            return Vec::new();
        };
        let mut fixes = Vec::new();
        for embedded in &found {
            let template = &embedded.template;
            let check = |candidate: &str| {
                crate::fix::run::checked(linter, engine, path, Some(embedded), candidate.into())
            };
            let Ok(current) = check(&template.text) else {
                continue;
            };
            for finding in &current.report.findings {
                let start = template.map.host_offset(finding.span.start);
                let end = template.map.host_offset(finding.span.end).max(start);
                let range = documents::range(&text, start..end, encoding);
                if range.end.line < *lines.start() || range.start.line > *lines.end() {
                    continue;
                }
                let verified =
                    crate::fix::engine::verified_fixes(&check, &template.text, &current, finding);
                for fix in verified {
                    let Some(fixed) = crate::fix::apply(&template.text, &fix.edits) else {
                        continue;
                    };
                    let Some(host) =
                        crate::fix::run::host_with(linter, path, &text, embedded, &fixed)
                    else {
                        continue;
                    };
                    fixes.push(crate::fix::Fix {
                        title: crate::fix::run::title_in_host(&fix.title, embedded, &text),
                        edits: vec![changed_part(&text, &host)],
                        ..fix
                    });
                }
            }
        }
        actions::host_fix_actions(uri, &text, encoding, path, &fixes)
    }

    /// The fixes of the findings on `lines`, as `check --fix` makes and verifies them:
    /// each candidate is applied to the buffer's text and checked again, and only one the
    /// verifier accepts is offered (the first safe and the first unsafe one per finding).
    fn verified_fixes(
        &mut self,
        uri: &Uri,
        path: &Path,
        lines: std::ops::RangeInclusive<u32>,
    ) -> Vec<(usize, crate::fix::Fix)> {
        let encoding = self.encoding;
        let Some(checked) = self.fresh(uri) else {
            return Vec::new();
        };
        let text = checked.text.clone();
        // Each finding on those lines, by its index, rule and place in the text.
        let wanted: Vec<(usize, crate::rules::RuleCode, std::ops::Range<usize>)> =
            checked.report.as_ref().map_or(Vec::new(), |report| {
                report
                    .findings
                    .iter()
                    .enumerate()
                    .filter_map(|(n, finding)| {
                        let span = diagnostics::finding_span(report, finding, &text);
                        let range = documents::range(&text, span.clone(), encoding);
                        (range.end.line >= *lines.start() && range.start.line <= *lines.end())
                            .then_some((n, finding.rule.code, span))
                    })
                    .collect()
            });
        if wanted.is_empty() || self.engine().is_err() {
            return Vec::new();
        }
        let engine = self
            .engine
            .as_ref()
            .map(|(_, e)| e.as_ref())
            .expect("loaded");
        let linter = &self.linter;
        let check = |candidate: &str| {
            let (outcome, inspection) =
                linter.check_buffer(path, candidate, None, Arc::default(), engine);
            match (outcome, inspection) {
                (TemplateOutcome::Checked(report), Some(inspection)) => Ok(
                    crate::fix::verify::Checked::new(*report, inspection, candidate),
                ),
                (TemplateOutcome::Failed(error), _) => Err(error.message),
                _ => Err("not checked".to_owned()),
            }
        };
        let Ok(current) = check(&text) else {
            return Vec::new();
        };
        let mut fixes = Vec::new();
        for (n, code, span) in wanted {
            let found = current
                .report
                .findings
                .iter()
                .find(|f| f.rule.code == code && f.span == span);
            let Some(finding) = found else {
                continue;
            };
            for fix in crate::fix::engine::verified_fixes(&check, &text, &current, finding) {
                fixes.push((n, fix));
            }
        }
        fixes
    }
}

/// The one edit that turns `old` into `new`: what lies between their common start and
/// their common end (on character boundaries).
fn changed_part(old: &str, new: &str) -> crate::fix::Edit {
    let mut start = old
        .bytes()
        .zip(new.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    while !old.is_char_boundary(start) || !new.is_char_boundary(start) {
        start -= 1;
    }
    let longest = old.len().min(new.len()) - start;
    let mut common_end = old
        .bytes()
        .rev()
        .zip(new.bytes().rev())
        .take(longest)
        .take_while(|(a, b)| a == b)
        .count();
    while !old.is_char_boundary(old.len() - common_end)
        || !new.is_char_boundary(new.len() - common_end)
    {
        common_end -= 1;
    }
    crate::fix::Edit {
        range: start..old.len() - common_end,
        replacement: new[start..new.len() - common_end].to_owned(),
    }
}
