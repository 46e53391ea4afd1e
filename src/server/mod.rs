//! `prefixlint server`: a Language Server Protocol server over stdio (built on
//! `lsp-server`, as ruff's). The message loop here only keeps the open buffers and the
//! debounce timers; the [`worker`] thread renders, tokenizes and answers. See
//! ARCHITECTURE.md for where it enters the pipeline.

mod actions;
mod diagnostics;
mod documents;
mod hover;
pub mod transport;
mod worker;

use crate::error::{Error, Result};
use crossbeam_channel::{RecvTimeoutError, Sender};
use documents::{Documents, Encoding};
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidChangeWatchedFiles, DidCloseTextDocument, DidOpenTextDocument,
    DidSaveTextDocument, Notification as _,
};
use lsp_types::request::{CodeActionRequest, HoverRequest, Request as _};
use lsp_types::{
    CodeActionProviderCapability, HoverProviderCapability, InitializeParams, PositionEncodingKind,
    SaveOptions, ServerCapabilities, TextDocumentSyncCapability, TextDocumentSyncKind,
    TextDocumentSyncOptions, TextDocumentSyncSaveOptions,
};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use worker::{Job, Worker};

/// How long typing must pause before a changed buffer is checked, unless the client sets
/// `initializationOptions.debounceMs`.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(300);

/// What the command line gives the server (`prefixlint server --config … --tokenizer …`).
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    pub config: Option<PathBuf>,
    pub no_config: bool,
    /// What the command line said of the settings (`--tokenizer`): resolved over the config
    /// each time it is read.
    pub flags: crate::settings::Flags,
    /// The workspace root: the client's, else the working directory.
    pub root: PathBuf,
}

/// Serves one client on stdin/stdout until it exits or hangs up.
pub fn run(mut options: ServerOptions) -> Result<()> {
    let (connection, io_threads) = transport::stdio();
    let served = serve(&connection, &mut options);
    // Closing the channels lets the writer flush and stop.
    drop(connection);
    io_threads.join();
    served
}

fn capabilities(encoding: Encoding) -> ServerCapabilities {
    ServerCapabilities {
        position_encoding: Some(match encoding {
            Encoding::Utf8 => PositionEncodingKind::UTF8,
            Encoding::Utf16 => PositionEncodingKind::UTF16,
        }),
        text_document_sync: Some(TextDocumentSyncCapability::Options(
            TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(TextDocumentSyncKind::INCREMENTAL),
                save: Some(TextDocumentSyncSaveOptions::SaveOptions(SaveOptions {
                    include_text: Some(true),
                })),
                ..TextDocumentSyncOptions::default()
            },
        )),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
        ..ServerCapabilities::default()
    }
}

fn serve(connection: &Connection, options: &mut ServerOptions) -> Result<()> {
    let setup_error = |e: lsp_server::ProtocolError| Error::input(format!("server: {e}"));
    let (id, params) = connection.initialize_start().map_err(setup_error)?;
    let params: InitializeParams = serde_json::from_value(params).unwrap_or_default();
    let encoding = if params
        .capabilities
        .general
        .as_ref()
        .and_then(|g| g.position_encodings.as_ref())
        .is_some_and(|kinds| kinds.contains(&PositionEncodingKind::UTF8))
    {
        Encoding::Utf8
    } else {
        Encoding::Utf16
    };
    let debounce = params
        .initialization_options
        .as_ref()
        .and_then(|o| o.get("debounceMs"))
        .and_then(|ms| ms.as_u64())
        .map_or(DEFAULT_DEBOUNCE, Duration::from_millis);
    #[allow(deprecated)] // root_uri: older clients send only that
    let root = params
        .workspace_folders
        .as_ref()
        .and_then(|folders| folders.first())
        .map(|folder| folder.uri.as_str().to_owned())
        .or_else(|| params.root_uri.as_ref().map(|uri| uri.as_str().to_owned()))
        .and_then(|uri| documents::path_from_uri(&uri));
    if let Some(root) = root {
        options.root = root;
    }
    if options.root.as_os_str().is_empty() {
        options.root = std::env::current_dir().map_err(|e| Error::io(".", e))?;
    }
    options.root = options.root.canonicalize().unwrap_or(options.root.clone());
    // Messages name files relative to the working directory, as `check` run there does.
    let _ = std::env::set_current_dir(&options.root);
    let result = serde_json::json!({
        "capabilities": capabilities(encoding),
        "serverInfo": { "name": "prefixlint", "version": env!("CARGO_PKG_VERSION") },
    });
    connection
        .initialize_finish(id, result)
        .map_err(setup_error)?;

    let documents = Arc::new(Mutex::new(Documents::default()));
    let (jobs, job_receiver) = crossbeam_channel::unbounded();
    let worker = Worker::new(
        connection.sender.clone(),
        documents.clone(),
        encoding,
        options.clone(),
    );
    // Template recursion runs on this thread: give it the room `check`'s workers get.
    let worker_thread = std::thread::Builder::new()
        .name("prefixlint-worker".into())
        .stack_size(crate::check::WORKER_STACK_BYTES)
        .spawn(move || worker.run(job_receiver))
        .map_err(|e| Error::input(format!("server: cannot start the worker thread: {e}")))?;
    let mut state = Loop {
        documents,
        jobs,
        encoding,
        debounce,
        due: HashMap::new(),
        out: connection.sender.clone(),
    };
    loop {
        let wait = state
            .due
            .values()
            .min()
            .map_or(Duration::from_secs(3600), |at| {
                at.saturating_duration_since(Instant::now())
            });
        match connection.receiver.recv_timeout(wait) {
            Ok(Message::Request(request)) => {
                if connection.handle_shutdown(&request).unwrap_or(true) {
                    break;
                }
                state.request(request);
            }
            Ok(Message::Notification(notification)) => {
                if notification.method == "exit" {
                    break;
                }
                state.notification(notification);
            }
            Ok(Message::Response(_)) => {}
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        state.fire_due();
    }
    drop(state);
    let _ = worker_thread.join();
    Ok(())
}

/// The message loop's state: buffers, pending debounced checks, and the worker's queue.
struct Loop {
    documents: Arc<Mutex<Documents>>,
    jobs: Sender<Job>,
    encoding: Encoding,
    debounce: Duration,
    /// Changed buffers and when to check them.
    due: HashMap<String, Instant>,
    out: Sender<Message>,
}

impl Loop {
    fn documents(&self) -> std::sync::MutexGuard<'_, Documents> {
        self.documents.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn job(&self, job: Job) {
        let _ = self.jobs.send(job);
    }

    fn check_now(&mut self, uri: &str) {
        self.due.remove(uri);
        self.job(Job::Check(uri.to_owned()));
    }

    fn fire_due(&mut self) {
        let now = Instant::now();
        let ready: Vec<String> = self
            .due
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(uri, _)| uri.clone())
            .collect();
        for uri in ready {
            self.check_now(&uri);
        }
    }

    fn request(&mut self, request: Request) {
        let Request { id, method, params } = request;
        match method.as_str() {
            HoverRequest::METHOD => match serde_json::from_value(params) {
                Ok(params) => self.job(Job::Hover(id, params)),
                Err(e) => self.invalid_params(id, e),
            },
            CodeActionRequest::METHOD => match serde_json::from_value(params) {
                Ok(params) => self.job(Job::Actions(id, params)),
                Err(e) => self.invalid_params(id, e),
            },
            _ => {
                let _ = self.out.send(Message::Response(Response::new_err(
                    id,
                    ErrorCode::MethodNotFound as i32,
                    format!("prefixlint does not serve `{method}`"),
                )));
            }
        }
    }

    fn invalid_params(&self, id: lsp_server::RequestId, error: serde_json::Error) {
        let _ = self.out.send(Message::Response(Response::new_err(
            id,
            ErrorCode::InvalidParams as i32,
            format!("invalid params: {error}"),
        )));
    }

    /// Notifications with bad params are dropped, as JSON-RPC says (no reply to send).
    fn notification(&mut self, notification: Notification) {
        let Notification { method, params } = notification;
        match method.as_str() {
            DidOpenTextDocument::METHOD => {
                let Ok(params) =
                    serde_json::from_value::<lsp_types::DidOpenTextDocumentParams>(params)
                else {
                    return;
                };
                let uri = params.text_document.uri;
                self.documents().open(&uri, params.text_document.text);
                self.check_now(uri.as_str());
            }
            DidChangeTextDocument::METHOD => {
                let Ok(params) =
                    serde_json::from_value::<lsp_types::DidChangeTextDocumentParams>(params)
                else {
                    return;
                };
                let uri = params.text_document.uri;
                let encoding = self.encoding;
                self.documents()
                    .change(&uri, params.content_changes, encoding);
                self.due
                    .insert(uri.as_str().to_owned(), Instant::now() + self.debounce);
            }
            DidSaveTextDocument::METHOD => {
                let Ok(params) =
                    serde_json::from_value::<lsp_types::DidSaveTextDocumentParams>(params)
                else {
                    return;
                };
                let uri = params.text_document.uri;
                if let Some(text) = params.text {
                    let mut documents = self.documents();
                    if documents.get(uri.as_str()).is_some() {
                        documents.open(&uri, text);
                    }
                }
                self.check_now(uri.as_str());
            }
            DidCloseTextDocument::METHOD => {
                let Ok(params) =
                    serde_json::from_value::<lsp_types::DidCloseTextDocumentParams>(params)
                else {
                    return;
                };
                let uri = params.text_document.uri;
                self.documents().close(&uri);
                self.due.remove(uri.as_str());
                self.job(Job::Closed(uri.as_str().to_owned()));
            }
            DidChangeWatchedFiles::METHOD => {
                let Ok(params) =
                    serde_json::from_value::<lsp_types::DidChangeWatchedFilesParams>(params)
                else {
                    return;
                };
                for change in params.changes {
                    self.check_now(change.uri.as_str());
                }
            }
            // `initialized`, `$/cancelRequest`, `$/setTrace` and unknown notifications:
            // nothing to do.
            _ => {}
        }
    }
}
