//! `prefixlint._prefixlint`: the Python module's native part, on the prefixlint library.
//!
//! Results cross as the JSON text `prefixlint --format json` writes (the Python side loads
//! it), so a result is the command's field for field. Errors are `PrefixlintError`s carrying
//! miette's message, the file and the place. Long work runs without the GIL.

use prefixlint::audit::group::Record;
use prefixlint::audit::replay::{log_order, CacheKey, Replay};
use prefixlint::audit::session::SessionKey;
use prefixlint::audit::{self, AuditOptions};
use prefixlint::cache_profile::CacheProfile;
use prefixlint::config::Config;
use prefixlint::report::stream::ReportWriter;
use prefixlint::report::{Format, TemplateOutcome};
use prefixlint::rules::VolatileFields;
use prefixlint::settings::{Flags, Settings};
use prefixlint::{Error, LintOptions, Linter};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

create_exception!(
    _prefixlint,
    PrefixlintError,
    PyException,
    "An error prefixlint reports: `message` (miette's rendering), `path`, `line`, `column` (1-based; None where unknown)."
);

/// The Python exception for a prefixlint error: its miette rendering as the message, and the
/// file and place it names.
fn py_error(py: Python<'_>, error: &Error) -> PyErr {
    let mut rendered = String::new();
    let handler =
        miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor());
    if handler.render_report(&mut rendered, error).is_err() {
        rendered = error.to_string();
    }
    let (path, line, column) = match error {
        Error::Located(located) => {
            let text = located.src.inner();
            let (line, column) = prefixlint::source::line_col(text, located.span.offset());
            (
                Some(located.src.name().to_owned()),
                Some(line),
                Some(column),
            )
        }
        Error::Io { path, .. } => (Some(path.display().to_string()), None, None),
        _ => (None, None, None),
    };
    let err = PrefixlintError::new_err(rendered.trim_end().to_owned());
    let value = err.value(py);
    let _ = value.setattr("message", rendered.trim_end());
    let _ = value.setattr("path", path);
    let _ = value.setattr("line", line);
    let _ = value.setattr("column", column);
    err
}

fn cwd(py: Python<'_>) -> PyResult<PathBuf> {
    std::env::current_dir().map_err(|e| py_error(py, &Error::io(".", e)))
}

/// Outcomes written as `prefixlint check --format json` writes them.
fn json_report(
    linter: &Linter,
    outcomes: impl Iterator<Item = TemplateOutcome>,
) -> Result<String, Error> {
    let io = |e: std::io::Error| Error::input(format!("cannot write the report: {e}"));
    let mut writer = ReportWriter::new(
        Format::Json,
        false,
        Some(linter.profile().clone()),
        Vec::new(),
    )
    .map_err(io)?;
    for outcome in outcomes {
        writer.add(outcome).map_err(io)?;
    }
    let (_, out) = writer.finish().map_err(io)?;
    String::from_utf8(out).map_err(|e| Error::input(e.to_string()))
}

/// `prefixlint check --format json --no-cache [--config CONFIG] PATHS...` as JSON text.
#[pyfunction]
#[pyo3(signature = (paths, config=None))]
fn check_json(py: Python<'_>, paths: Vec<PathBuf>, config: Option<PathBuf>) -> PyResult<String> {
    let cwd = cwd(py)?;
    py.detach(|| -> Result<String, Error> {
        let config = Config::resolve_for(config.as_deref(), false, &paths, &cwd)?;
        let settings = Settings::resolve(&Flags::default(), &config)?;
        let linter = Linter::new(
            config,
            LintOptions {
                settings,
                cwd,
                ..LintOptions::default()
            },
        )?;
        let outcomes = linter.check(&paths)?;
        json_report(&linter, outcomes)
    })
    .map_err(|e| py_error(py, &e))
}

/// One template's text checked as `check` checks a file (`path` names it: includes, the
/// samples file beside it); a template that cannot be checked raises.
#[pyfunction]
#[pyo3(signature = (text, samples=None, tokenizer=None, path=None))]
fn check_source_json(
    py: Python<'_>,
    text: &str,
    samples: Option<&str>,
    tokenizer: Option<String>,
    path: Option<PathBuf>,
) -> PyResult<String> {
    let cwd = cwd(py)?;
    let path = cwd.join(path.unwrap_or_else(|| PathBuf::from("template.j2")));
    py.detach(|| -> Result<String, Error> {
        let config = Config::resolve_for(None, false, std::slice::from_ref(&path), &cwd)?;
        let flags = Flags {
            tokenizer,
            ..Flags::default()
        };
        let settings = Settings::resolve(&flags, &config)?;
        let linter = Linter::new(
            config,
            LintOptions {
                settings,
                cwd,
                ..LintOptions::default()
            },
        )?;
        match linter.check_source(&path, text, samples) {
            TemplateOutcome::Failed(failure) => Err(failure.error),
            outcome => json_report(&linter, std::iter::once(outcome)),
        }
    })
    .map_err(|e| py_error(py, &e))
}

/// The engine profile of an `--engine` spec (`vllm:block_size=16`), the default without one.
fn profile_of(spec: Option<&str>) -> Result<CacheProfile, Error> {
    let flags = Flags {
        engine: spec.map(str::to_owned),
        ..Flags::default()
    };
    Ok(Settings::resolve(&flags, &Config::default())?.profile())
}

self_cell::self_cell!(
    /// A loaded auditor (chat template and tokenizer) with the options it borrows.
    struct Loaded {
        owner: AuditOptions,
        #[covariant]
        dependent: LoadedAuditor,
    }
);

type LoadedAuditor<'a> = audit::Auditor<'a>;

/// What an `Auditor` has audited since it was made or reset.
#[derive(Default)]
struct Done {
    summary: Option<Json>,
    keys: Vec<(String, usize, Vec<u8>)>,
}

/// `prefixlint audit` over one session's records at a time.
#[pyclass(module = "prefixlint._prefixlint")]
struct Auditor {
    loaded: Loaded,
    done: Mutex<Done>,
}

#[pymethods]
impl Auditor {
    #[new]
    #[pyo3(signature = (tokenizer=None, chat_template=None, engine=None, session_key=None, input_format=None, config=None))]
    fn new(
        py: Python<'_>,
        tokenizer: Option<String>,
        chat_template: Option<PathBuf>,
        engine: Option<String>,
        session_key: Option<String>,
        input_format: Option<String>,
        config: Option<PathBuf>,
    ) -> PyResult<Auditor> {
        let loaded = py
            .detach(|| -> Result<Loaded, Error> {
                let config = match &config {
                    Some(path) => Config::resolve_for(Some(path), false, &[], Path::new("."))?,
                    None => Config::default(),
                };
                let flags = Flags {
                    tokenizer,
                    chat_template,
                    engine,
                    ..Flags::default()
                };
                let settings = Settings::resolve(&flags, &config)?;
                let engine = settings.profile();
                let input_format = match input_format.as_deref() {
                    None => None,
                    Some(name) => Some(
                        <audit::input::InputFormat as clap::ValueEnum>::from_str(name, true)
                            .map_err(|_| {
                                Error::input(format!(
                                "input_format {name:?}: one of records, body, batch, litellm, otlp"
                            ))
                            })?,
                    ),
                };
                let options = AuditOptions {
                    inputs: Vec::new(),
                    settings,
                    engine,
                    engine_source: None,
                    session_key: SessionKey::parse(session_key.as_deref()),
                    input_format,
                    max_line_bytes: audit::input::DEFAULT_MAX_LINE_BYTES,
                    fields: VolatileFields::new(&config.volatile_fields)?,
                    templates: None,
                };
                Loaded::try_new(options, |options| audit::Auditor::load(options))
            })
            .map_err(|e| py_error(py, &e))?;
        Ok(Auditor {
            loaded,
            done: Mutex::new(Done::default()),
        })
    }

    /// The report's `engine` and `chat_template`, as the JSON report's head says them.
    fn head(&self) -> (String, String) {
        let head = self.loaded.borrow_dependent().head();
        (head.engine, head.chat_template)
    }

    /// Audits one group of records (JSON lines, in log order) at `lines` of `files`;
    /// returns the `requests[]` entries as JSON text, one each.
    fn audit_lines(
        &self,
        py: Python<'_>,
        records: Vec<Bound<'_, PyBytes>>,
        files: Vec<String>,
        lines: Vec<usize>,
    ) -> PyResult<Vec<String>> {
        // Copied out (a memcpy each, not an element-wise extraction) to run without the GIL.
        let records: Vec<Vec<u8>> = records.iter().map(|r| r.as_bytes().to_vec()).collect();
        if lines.len() != records.len() || files.len() != records.len() {
            return Err(py_error(
                py,
                &Error::input(format!(
                    "audit: {} records but {} files and {} lines",
                    records.len(),
                    files.len(),
                    lines.len()
                )),
            ));
        }
        let group = py
            .detach(|| {
                let records: Vec<Record<'_>> = records
                    .iter()
                    .zip(&files)
                    .zip(&lines)
                    .map(|((text, file), &line)| Record { file, line, text })
                    .collect();
                self.loaded.borrow_dependent().audit_group(&records)
            })
            .map_err(|e| py_error(py, &e))?;
        let summary = serde_json::to_value(&group.summary).expect("a summary serializes");
        let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        done.summary = Some(match done.summary.take() {
            Some(before) => {
                audit::merge::merge(&[before, summary]).map_err(|e| py_error(py, &e))?
            }
            None => audit::merge::merge(&[summary]).map_err(|e| py_error(py, &e))?,
        });
        done.keys.extend(
            group
                .keys
                .iter()
                .map(|k| (k.file.clone(), k.line, k.to_bytes())),
        );
        Ok(group
            .requests
            .iter()
            .map(|r| serde_json::to_string(r).expect("an entry serializes"))
            .collect())
    }

    /// The summary of everything audited since this auditor was made or reset, as JSON text.
    fn summary_json(&self) -> String {
        let done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        let summary = match &done.summary {
            Some(s) => s.clone(),
            None => audit::merge::merge(&[]).expect("the empty summary"),
        };
        serde_json::to_string(&summary).expect("a summary serializes")
    }

    /// The cache keys of the requests audited since this auditor was made or reset, in the
    /// order audited, for `Replay`: `(file, line, key)`.
    fn keys<'py>(&self, py: Python<'py>) -> Vec<(String, usize, Bound<'py, PyBytes>)> {
        let done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        done.keys
            .iter()
            .map(|(file, line, k)| (file.clone(), *line, PyBytes::new(py, k)))
            .collect()
    }

    /// Forgets what was audited (the tokenizer and chat template stay loaded).
    fn reset(&self) {
        *self.done.lock().unwrap_or_else(|p| p.into_inner()) = Done::default();
    }

    /// The session key of one record (a JSON line) as `prefixlint audit` reads it; `None`
    /// for the fallback group (no key, or a line that is not a request).
    fn session_of(&self, record: &Bound<'_, PyBytes>) -> Option<String> {
        let record = record.as_bytes();
        self.loaded.borrow_dependent().session_of(record)
    }
}

/// The engine's cache model replayed over the cache keys of a whole log.
#[pyclass(module = "prefixlint._prefixlint")]
struct ReplayModel {
    replay: Mutex<Replay>,
}

#[pymethods]
impl ReplayModel {
    #[new]
    #[pyo3(signature = (engine=None))]
    fn new(py: Python<'_>, engine: Option<String>) -> PyResult<ReplayModel> {
        let profile = profile_of(engine.as_deref()).map_err(|e| py_error(py, &e))?;
        Ok(ReplayModel {
            replay: Mutex::new(Replay::new(profile)),
        })
    }

    /// Takes keys in log order (`sort`: put this batch in log order first); returns each
    /// request's predicted cached tokens (`None` for one not audited).
    #[pyo3(signature = (keys, sort=false))]
    fn feed(
        &self,
        py: Python<'_>,
        keys: Vec<Bound<'_, PyBytes>>,
        sort: bool,
    ) -> PyResult<Vec<Option<usize>>> {
        let keys: Vec<Vec<u8>> = keys.iter().map(|k| k.as_bytes().to_vec()).collect();
        py.detach(|| -> Result<_, Error> {
            let mut keys: Vec<CacheKey> = keys
                .iter()
                .map(|k| CacheKey::from_bytes(k))
                .collect::<Result<_, _>>()?;
            if sort {
                log_order(&mut keys);
            }
            let mut replay = self.replay.lock().unwrap_or_else(|p| p.into_inner());
            keys.iter().map(|k| replay.feed(k)).collect()
        })
        .map_err(|e| py_error(py, &e))
    }

    #[getter]
    fn predicted_cached_tokens(&self) -> usize {
        self.replay
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .predicted_cached_tokens()
    }

    /// The summary's `cost` (JSON text) with the replay's cached tokens; `None` for an
    /// engine without prices.
    fn cost(
        &self,
        prompt_tokens: usize,
        lost_by_cause: std::collections::BTreeMap<String, usize>,
    ) -> Option<String> {
        self.replay
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .cost(prompt_tokens, &lost_by_cause)
            .map(|c| serde_json::to_string(&c).expect("a cost serializes"))
    }
}

/// Summaries (JSON texts) merged into one, as JSON text.
#[pyfunction]
fn merge_summaries_json(py: Python<'_>, summaries: Vec<String>) -> PyResult<String> {
    let parts: Vec<Json> = summaries
        .iter()
        .map(|s| serde_json::from_str(s))
        .collect::<Result<_, _>>()
        .map_err(|e| {
            py_error(
                py,
                &Error::input(format!("merge: a summary is not JSON: {e}")),
            )
        })?;
    let merged = audit::merge::merge(&parts).map_err(|e| py_error(py, &e))?;
    Ok(serde_json::to_string(&merged).expect("a summary serializes"))
}

/// The `prefixlint` command with these arguments (the program name first); its exit code.
#[pyfunction]
fn main(py: Python<'_>, args: Vec<String>) -> u8 {
    let code = py.detach(|| prefixlint::commands::main(args));
    // `ExitCode` does not say its number: compare with the codes the command returns.
    (0u8..=255)
        .find(|&n| std::process::ExitCode::from(n) == code)
        .unwrap_or(2)
}

#[pymodule]
fn _prefixlint(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("PrefixlintError", m.py().get_type::<PrefixlintError>())?;
    m.add_function(wrap_pyfunction!(check_json, m)?)?;
    m.add_function(wrap_pyfunction!(check_source_json, m)?)?;
    m.add_function(wrap_pyfunction!(merge_summaries_json, m)?)?;
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_class::<Auditor>()?;
    m.add_class::<ReplayModel>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
