//! Host files: YAML, JSON, TOML, Python, `.md`/`.txt` prompt files, `.prompty` and
//! prompt-poet `.yml.j2` files whose templates are checked where they live. Discovery finds
//! the candidates by name; this module reads each once (a byte prefilter first, so a
//! repository without prompts costs almost nothing) and turns it into one target per
//! embedded template, and a place for each prompt-like text it cannot check.

use super::{Skipped, Target};
use crate::error::Error;
use crate::formats::TemplateFormat;
use crate::host::{self, EmbeddedTemplate, HostKind};
use crate::source;
use globset::{Glob, GlobMatcher};
use rayon::prelude::*;
use serde_json::{Map, Value};
use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One embedded template and the host text it lives in.
#[derive(Debug, Clone)]
pub struct Embedded {
    pub template: EmbeddedTemplate,
    /// The whole host file, shared by its templates (findings quote it).
    pub host: Arc<str>,
    /// Values the host gives the template (a `.prompty` file's `sample:` and `inputs:`).
    pub sample: Option<Map<String, Value>>,
}

impl Embedded {
    /// The template's name in the render environment: the host's, with the key.
    pub fn name(&self, host_name: &str) -> String {
        format!("{host_name}#{}", self.template.key)
    }
}

impl PartialEq for Embedded {
    fn eq(&self, other: &Self) -> bool {
        self.template == other.template
    }
}

impl Eq for Embedded {}

impl PartialOrd for Embedded {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Embedded {
    fn cmp(&self, other: &Self) -> Ordering {
        let key = |e: &Embedded| (e.template.map.host_offset(0), e.template.key.clone());
        key(self).cmp(&key(other))
    }
}

/// Config `embedded:` as discovery uses it.
#[derive(Debug, Clone)]
pub struct HostSettings {
    /// Zero-config recognition of templates in YAML (and Python) values.
    pub recognize: bool,
    /// Files the config names, with the key patterns whose values are templates.
    pub files: Vec<(GlobMatcher, Vec<String>)>,
}

impl HostSettings {
    pub fn new(config: &crate::config::EmbeddedConfig) -> crate::error::Result<HostSettings> {
        let files = config
            .files
            .iter()
            .map(|file| {
                let glob = Glob::new(&file.path).map_err(|e| {
                    Error::input(format!(
                        "invalid glob `{}` under `embedded: files:`: {e}",
                        file.path
                    ))
                })?;
                Ok((glob.compile_matcher(), file.keys.clone()))
            })
            .collect::<crate::error::Result<Vec<_>>>()?;
        Ok(HostSettings {
            recognize: config.recognize,
            files,
        })
    }

    /// The key patterns the config gives `path`.
    fn keys_for(&self, path: &Path) -> Vec<String> {
        let name = path.file_name().map(Path::new);
        self.files
            .iter()
            .filter(|(glob, _)| glob.is_match(path) || name.is_some_and(|n| glob.is_match(n)))
            .flat_map(|(_, keys)| keys.iter().cloned())
            .collect()
    }

    /// Whether the config names this file.
    pub fn names(&self, path: &Path) -> bool {
        if self.files.is_empty() {
            return false;
        }
        let name = path.file_name().map(Path::new);
        self.files
            .iter()
            .any(|(glob, _)| glob.is_match(path) || name.is_some_and(|n| glob.is_match(n)))
    }

    /// The host format `path`'s name says it is in, if it may hold templates.
    pub fn kind_of(&self, path: &Path) -> Option<HostKind> {
        self.kind_of_named(path, path.file_name()?)
    }

    /// [`Self::kind_of`] for a path whose file name the caller has (`name`). The name's
    /// endings are compared ASCII case-insensitively, as its lower-cased text was.
    pub fn kind_of_named(&self, path: &Path, name: &std::ffi::OsStr) -> Option<HostKind> {
        let name = name.as_encoded_bytes();
        let ends_with = |suffix: &str| {
            name.len() >= suffix.len()
                && name[name.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
        };
        if ends_with(".prompty") {
            return Some(HostKind::Prompty);
        }
        if [
            ".yml.j2",
            ".yaml.j2",
            ".yml.jinja",
            ".yaml.jinja",
            ".yml.jinja2",
            ".yaml.jinja2",
        ]
        .iter()
        .any(|ext| ends_with(ext))
        {
            return Some(HostKind::PromptPoet);
        }
        if self.names(path) {
            return Some(HostKind::Yaml);
        }
        if ends_with(".yaml") || ends_with(".yml") {
            // Samples files and prefixlint's own config are data, not hosts.
            let ours = ends_with(crate::discover::samples_files::SAMPLES_SUFFIX)
                || crate::config::CONFIG_NAMES
                    .iter()
                    .any(|config| name.eq_ignore_ascii_case(config.as_bytes()));
            return (!ours && self.recognize).then_some(HostKind::Yaml);
        }
        if ends_with(".py") && python::AVAILABLE {
            return (self.recognize).then_some(HostKind::Python);
        }
        if ends_with(".toml") {
            return (self.recognize).then_some(HostKind::Toml);
        }
        if ends_with(".json") {
            return (self.recognize).then_some(HostKind::Json);
        }
        if ends_with(".md") || ends_with(".txt") {
            return (self.recognize).then_some(HostKind::Text);
        }
        None
    }
}

/// A host file found by discovery: as shown, canonical, and whether the command line named
/// it (a named file with no template is reported as skipped; a walked one is dropped).
#[derive(Debug, Clone)]
pub struct Candidate {
    pub shown: PathBuf,
    pub real: PathBuf,
    pub kind: HostKind,
    pub named: bool,
    /// The reason a walk would have skipped it by name (a `.yml.j2` that is not a
    /// prompt-poet prompt is a YAML file templated with Jinja).
    pub not_prompt: Option<String>,
    /// A `.yml.j2` named on the command line or by an `include:` glob of the user's: when
    /// it is not a prompt-poet prompt it is still checked, as a template file.
    pub template_anyway: bool,
}

/// Prompt-like text found in a file that no format can check: `unchecked[]` in reports.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct UncheckedPlace {
    /// The file, as shown.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    pub reason: String,
}

/// What the host files held.
#[derive(Debug, Default)]
pub struct Expanded {
    pub targets: Vec<Target>,
    pub skipped: Vec<Skipped>,
    pub unchecked: Vec<UncheckedPlace>,
    /// Host files that are prompts but could not be read as one (`.prompty` front matter).
    pub failed: Vec<(String, Error)>,
    /// Host files read (for the "no template found" check).
    pub scanned: usize,
}

/// Reads each candidate once, in parallel, and returns its templates as targets.
pub fn expand(candidates: Vec<Candidate>, settings: &HostSettings) -> Expanded {
    let results: Vec<(Candidate, HostOutcome)> = candidates
        .into_par_iter()
        .map(|candidate| {
            let outcome = read_host(&candidate, settings);
            (candidate, outcome)
        })
        .collect();
    // A walk meets many JSON, TOML and text files: one the prefilter stops is no host read
    // (a folder of them still has "no template found").
    let scanned = results
        .iter()
        .filter(|(_, outcome)| !matches!(outcome, HostOutcome::Prefiltered))
        .count();
    let mut out = Expanded {
        scanned,
        ..Expanded::default()
    };
    for (candidate, outcome) in results {
        let shown = source::display_path(&candidate.shown);
        let (outcome, unchecked) = match outcome {
            HostOutcome::Found(found, unchecked) => (HostOutcome::Templates(found), unchecked),
            HostOutcome::Prefiltered => (HostOutcome::Templates(Vec::new()), Vec::new()),
            other => (other, Vec::new()),
        };
        let any_unchecked = !unchecked.is_empty();
        out.unchecked
            .extend(unchecked.into_iter().map(|place| UncheckedPlace {
                path: shown.clone(),
                line: place.line,
                reason: place.reason,
            }));
        match outcome {
            HostOutcome::Templates(found) if !found.is_empty() => {
                out.targets.extend(found.into_iter().map(|embedded| Target {
                    template: candidate.shown.clone(),
                    real: candidate.real.clone(),
                    format: embedded.template.format,
                    embedded: Some(Arc::new(embedded)),
                    samples_listed: None,
                }));
            }
            HostOutcome::Plain => out.targets.push(Target {
                template: candidate.shown.clone(),
                real: candidate.real.clone(),
                embedded: None,
                samples_listed: None,
                format: TemplateFormat::Jinja,
            }),
            HostOutcome::Whole(embedded) => out.targets.push(Target {
                template: candidate.shown.clone(),
                real: candidate.real.clone(),
                format: embedded.template.format,
                embedded: Some(Arc::new(embedded)),
                samples_listed: None,
            }),
            HostOutcome::Templates(_) if any_unchecked => {}
            HostOutcome::Found(..) | HostOutcome::Prefiltered => {}
            HostOutcome::Templates(_) => {
                if let Some(reason) = candidate.not_prompt {
                    out.skipped.push(Skipped {
                        path: shown,
                        reason,
                    });
                } else if candidate.named {
                    out.skipped.push(Skipped {
                        path: shown,
                        reason: format!(
                            "no prompt template in this {} file",
                            kind_name(candidate.kind)
                        ),
                    });
                }
            }
            HostOutcome::Unreadable(reason) => {
                if candidate.named || candidate.not_prompt.is_some() {
                    out.skipped.push(Skipped {
                        path: shown,
                        reason: candidate.not_prompt.unwrap_or(reason),
                    });
                }
            }
            HostOutcome::Failed(error) => out.failed.push((shown, error)),
        }
    }
    out
}

fn kind_name(kind: HostKind) -> &'static str {
    match kind {
        HostKind::Yaml => "YAML",
        HostKind::Python => "Python",
        HostKind::Prompty => ".prompty",
        HostKind::PromptPoet => "prompt-poet",
        HostKind::Toml => "TOML",
        HostKind::Json => "JSON",
        HostKind::Text => "text",
    }
}

enum HostOutcome {
    Templates(Vec<Embedded>),
    /// Templates, and prompt-like places that cannot be checked.
    Found(Vec<Embedded>, Vec<host::Unchecked>),
    /// A JSON, TOML or text file the byte prefilter stopped: no template, not read.
    Prefiltered,
    /// A prompt-poet file: the whole file is the template.
    Whole(Embedded),
    /// A template file after all (a `.yml.j2` named or included that is not prompt-poet's).
    Plain,
    /// Not text, not parseable: not a host after all.
    Unreadable(String),
    Failed(Error),
}

fn read_host(candidate: &Candidate, settings: &HostSettings) -> HostOutcome {
    let display = source::display_path(&candidate.shown);
    let keys = settings.keys_for(&candidate.shown);
    // The prefilter reads bytes: most host files never become text.
    let bytes = match read_bytes(&candidate.shown) {
        Ok(bytes) => bytes,
        Err(reason) => return HostOutcome::Unreadable(reason),
    };
    if candidate.kind == HostKind::PromptPoet {
        let text = String::from_utf8_lossy(&bytes);
        return match prompt_poet(&text) {
            Some(whole) => HostOutcome::Whole(whole),
            None if candidate.template_anyway => HostOutcome::Plain,
            None => HostOutcome::Templates(Vec::new()),
        };
    }
    if !may_hold_prompts(candidate, &bytes) && keys.is_empty() {
        return match candidate.kind {
            HostKind::Json | HostKind::Toml | HostKind::Text => HostOutcome::Prefiltered,
            _ => HostOutcome::Templates(Vec::new()),
        };
    }
    let text = match source::decode_text(&bytes, &display) {
        Ok(text) => text,
        Err(e) if candidate.kind == HostKind::Prompty => return HostOutcome::Failed(e),
        Err(_) => return HostOutcome::Unreadable("not UTF-8 text".into()),
    };
    let declared = semantic_kernel_declared(&candidate.shown);
    let found = embedded_in_declared(
        &candidate.shown,
        candidate.kind,
        &text,
        settings,
        declared,
        candidate.named,
    );
    match found {
        Ok(found) => HostOutcome::Found(found.templates, found.unchecked),
        Err(HostError::Unreadable(reason)) => HostOutcome::Unreadable(reason),
        Err(HostError::Failed(e)) => HostOutcome::Failed(e),
    }
}

/// The byte prefilter: false means the file surely holds no prompt its extractor would
/// find, so it is never decoded or parsed. Jinja hosts need `{{`/`{%`; data hosts any
/// template field (`{name`, `{{`, `{%`, `{$`), or CrewAI's keys (a crew's prompts may have
/// no field); Python a template or the words prompt code uses; a text file a field, or a
/// name or folder that says prompt.
fn may_hold_prompts(candidate: &Candidate, bytes: &[u8]) -> bool {
    match candidate.kind {
        HostKind::Prompty | HostKind::PromptPoet => true,
        HostKind::Python => python::may_hold_templates(bytes),
        HostKind::Yaml => {
            host::may_hold_any_template(bytes)
                || memchr::memmem::find(bytes, b"backstory").is_some()
                || memchr::memmem::find(bytes, b"expected_output").is_some()
                || memchr::memmem::find(bytes, b"template_format").is_some()
        }
        HostKind::Json | HostKind::Toml => host::may_hold_any_template(bytes),
        HostKind::Text => {
            host::may_hold_any_template(bytes) || host::text::names_a_prompt(&candidate.shown)
        }
    }
}

/// What Semantic Kernel's `config.json` beside a `skprompt.txt` declares.
fn semantic_kernel_declared(path: &Path) -> host::text::Declared {
    if !host::text::is_semantic_kernel_prompt(path) {
        return None;
    }
    let config = path.with_file_name("config.json");
    let bytes = read_bytes(&config).ok()?;
    host::text::semantic_kernel_config(&String::from_utf8_lossy(&bytes))
}

/// A prompt-poet file as one embedded template (the whole file), when it is laid out as
/// prompt-poet parts.
pub fn prompt_poet(text: &str) -> Option<Embedded> {
    host::prompt_poet::is_prompt_poet(text).then(|| Embedded {
        template: EmbeddedTemplate {
            kind: HostKind::PromptPoet,
            key: "parts".to_owned(),
            anchor_line: 1,
            text: text.to_owned(),
            format: TemplateFormat::Jinja,
            format_note: None,
            map: host::HostMap::verbatim(0, text.len()),
        },
        host: Arc::from(text),
        sample: None,
    })
}

/// Why a host's text gave no templates.
pub enum HostError {
    /// Not a host after all (not YAML, not Python): quiet, or a reason in `skipped`.
    Unreadable(String),
    /// A prompt file that is broken (`.prompty` front matter): an error.
    Failed(Error),
}

/// The templates in a host file's text (from disk, or an editor's buffer). A prompt-poet
/// file is checked whole, so it has none here.
pub fn embedded_in(
    path: &Path,
    kind: HostKind,
    text: &str,
    settings: &HostSettings,
) -> Result<Vec<Embedded>, HostError> {
    let declared = semantic_kernel_declared(path);
    Ok(embedded_in_declared(path, kind, text, settings, declared, false)?.templates)
}

/// A host's templates, and the prompt-like places it holds that cannot be checked.
#[derive(Debug, Default)]
pub struct HostTemplates {
    pub templates: Vec<Embedded>,
    pub unchecked: Vec<host::Unchecked>,
}

/// [`embedded_in`] with what the files beside it declare (`skprompt.txt`'s `config.json`),
/// and the places it cannot check; `named`: the user named the file.
pub fn embedded_in_declared(
    path: &Path,
    kind: HostKind,
    text: &str,
    settings: &HostSettings,
    declared: host::text::Declared,
    named: bool,
) -> Result<HostTemplates, HostError> {
    let display = source::display_path(path);
    let keys = settings.keys_for(path);
    let host: Arc<str> = Arc::from(text);
    let found = |extracted: host::Extracted| HostTemplates {
        templates: extracted
            .templates
            .into_iter()
            .map(|template| Embedded {
                template,
                host: host.clone(),
                sample: None,
            })
            .collect(),
        unchecked: extracted.unchecked,
    };
    match kind {
        HostKind::Yaml => {
            let recognition = host::yaml::Recognition {
                recognize: settings.recognize,
                keys: &keys,
            };
            match host::yaml::extract_all(path, text, recognition) {
                Ok(extracted) => Ok(found(extracted)),
                Err(e) => Err(HostError::Unreadable(format!(
                    "not valid YAML: {}",
                    e.message
                ))),
            }
        }
        HostKind::Json => match host::json::extract(path, text, settings.recognize, &keys) {
            Ok(extracted) => Ok(found(extracted)),
            Err(e) => Err(HostError::Unreadable(format!(
                "not valid JSON: {} at line {}",
                e.message,
                source::line_col(text, e.offset).0
            ))),
        },
        HostKind::Toml => match host::toml::extract(path, text, settings.recognize, &keys) {
            Ok(extracted) => Ok(found(extracted)),
            Err(e) => Err(HostError::Unreadable(format!(
                "not valid TOML: {} at line {}",
                e.message,
                source::line_col(text, e.offset).0
            ))),
        },
        HostKind::Text => Ok(found(host::text::extract(path, text, declared, named))),
        HostKind::Python => match python::extract(text) {
            Ok(extracted) => Ok(found(extracted)),
            Err(message) => Err(HostError::Unreadable(format!(
                "not valid Python: {message}"
            ))),
        },
        HostKind::Prompty => match host::prompty::extract(text) {
            Ok(prompty) => {
                let unchecked = prompty
                    .unchecked
                    .map(|reason| host::Unchecked {
                        key: prompty.template.key.clone(),
                        line: prompty.template.anchor_line,
                        reason,
                    })
                    .into_iter()
                    .collect::<Vec<_>>();
                let templates = if unchecked.is_empty() {
                    vec![Embedded {
                        template: prompty.template,
                        host: host.clone(),
                        sample: prompty.sample,
                    }]
                } else {
                    Vec::new()
                };
                Ok(HostTemplates {
                    templates,
                    unchecked,
                })
            }
            Err(e) => Err(HostError::Failed(Error::located(
                &display,
                text,
                e.offset..e.offset,
                format!("{display}: {}", e.message),
                "here",
                Some("a .prompty file starts with YAML front matter between `---` lines".into()),
            ))),
        },
        HostKind::PromptPoet => Ok(HostTemplates::default()),
    }
}

/// A host's bytes, bounded and from a regular file only; the reason for a skip otherwise.
fn read_bytes(path: &Path) -> Result<Vec<u8>, String> {
    source::read_bounded(path, "the file", source::MAX_INPUT_BYTES).map_err(|e| match e {
        crate::error::Error::Io { source, .. } => source.to_string(),
        other => other.to_string(),
    })
}

/// The seam to the Python extractor (`host::python`): its byte prefilter, and its syntax
/// error as one line for the `skipped` reason.
mod python {
    pub const AVAILABLE: bool = true;

    pub use crate::host::python::may_hold_templates;

    pub fn extract(source: &str) -> Result<crate::host::Extracted, String> {
        crate::host::python::extract_all(source)
            .map_err(|e| format!("{} at line {}, column {}", e.message, e.line, e.column))
    }
}

/// A host's path as discovery shows it, without `./`.
pub fn shown(path: &Path) -> PathBuf {
    path.strip_prefix("./").unwrap_or(path).to_path_buf()
}
