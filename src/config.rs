//! `prefixlint.yaml`: found upward from the checked paths (else the working directory), or
//! given with `--config`. Unknown keys are errors that point at the key.

use crate::cache_profile::CacheProfileSetting;
use crate::error::{Error, Result};
use crate::render::stand_ins::{GlobalStandIn, StandInMode, StandInSetting, StandIns};
use crate::render::{Dialect, Limits, RenderSettings, UndefinedMode};
use crate::rules::{FieldKindDef, Severity};
use crate::source;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const CONFIG_NAMES: [&str; 2] = ["prefixlint.yaml", ".prefixlint.yaml"];
/// Each synthesized render is a full render of the template: a config cannot ask for more.
pub const MAX_SYNTHESIZED_RENDERS: usize = 100;
pub const DEFAULT_GLOBS: [&str; 4] = ["*.j2", "*.jinja", "*.jinja2", "*.prompt"];

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
#[schemars(title = "prefixlint.yaml")]
pub struct Config {
    /// `default`, a path to a tokenizer.json, a Hugging Face model id in the local cache, or a
    /// `.gguf` model file.
    pub tokenizer: Option<String>,
    /// Count the special tokens (BOS, …) the server adds to every prompt, as the tokenizer's
    /// post-processor and `add_bos_token` declare them; `--no-special-tokens` turns it off.
    pub special_tokens: bool,
    /// File-name globs of templates to check when walking folders.
    pub include: Vec<String>,
    /// Globs (matched against the project-relative path) to skip.
    pub exclude: Vec<String>,
    /// The lowest severity that makes `check` exit 1.
    pub fail_on: Severity,
    /// A divergence is reported only when at least this many stable tokens sit behind it.
    pub min_lost_tokens: usize,
    /// How many renders to synthesize for a template without a samples file.
    pub synthesized_renders: usize,
    /// Per-rule severity by code or name; `off` disables the rule.
    pub rules: BTreeMap<String, RuleSetting>,
    /// Rules (code or name) not reported for templates whose project-relative path matches a glob.
    pub per_path_ignores: BTreeMap<String, Vec<String>>,
    /// Extra volatile-field kinds, in the shape of `rules/fields/*.yaml`.
    pub volatile_fields: Vec<FieldKindDef>,
    /// Variables that are the same for every request until a deploy (names, or regexes
    /// matched as [`volatile_fields`](Self::volatile_fields)' `names`): synthesized
    /// renders keep them constant instead of assuming they change per request. Read into
    /// `volatile_fields` as one setting kind when the config is parsed.
    pub per_deploy_fields: Vec<String>,
    pub limits: Limits,
    pub render: RenderConfig,
    /// What an undefined variable does: `lenient` (Jinja2's default), `strict`, `chainable`.
    pub undefined: UndefinedMode,
    /// Folders (relative to this file) include names are looked up in after the template's own.
    pub search_path: Vec<PathBuf>,
    /// Stand-ins for the application's own filters, by name.
    pub filters: BTreeMap<String, StandInSetting>,
    /// Stand-ins for the application's own tests, by name.
    pub tests: BTreeMap<String, StandInSetting>,
    /// The application's globals: values, or `{function: STAND-IN}`.
    pub globals: BTreeMap<String, GlobalStandIn>,
    /// `on` (the default): a filter or test nobody declared renders with a stand-in (the
    /// identity, the truth of the value) and a note; `off`: it fails the template.
    pub stand_ins: StandInMode,
    /// The engine or provider whose caching `cached_tokens_expected` models: a name
    /// (`vllm`) or a mapping (`{name: vllm, block_size: 16}`); see [`crate::cache_profile`].
    pub engine: Option<CacheProfileSetting>,
    /// The hosted APIs' figures and prices, by provider, over `rules/providers/*.yaml`:
    /// `{openai: {models: {gpt-4.1: {min_tokens: 2048, prices: {input: 2.0, cached_input: 0.5}}}}}`.
    pub providers: BTreeMap<String, crate::providers::ProviderOverride>,
    /// A model's chat template (.jinja or tokenizer_config.json) to wrap every render in.
    pub chat_template: Option<PathBuf>,
    /// The role of the message that carries the render (default `system`).
    pub chat_role: Option<String>,
    /// Extra variables for the chat template, e.g. a fixed `date_string`.
    pub chat_variables: serde_json::Map<String, serde_json::Value>,
    /// The results cache's folder (relative to the project root); `--cache-dir` wins.
    pub cache_dir: Option<PathBuf>,
    /// Templates embedded in YAML and Python files: zero-config recognition, and the files
    /// and keys the config names.
    pub embedded: EmbeddedConfig,
    #[serde(skip)]
    pub path: Option<PathBuf>,
    /// Set when the config was found by searching upward: its folder is the project root.
    #[serde(skip)]
    pub discovered_in: Option<PathBuf>,
    /// The folder the checked paths share, when they were given.
    #[serde(skip)]
    pub checked_from: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RuleSetting {
    Off,
    Info,
    Warning,
    Error,
}

impl RuleSetting {
    pub fn severity(self) -> Option<Severity> {
        match self {
            RuleSetting::Off => None,
            RuleSetting::Info => Some(Severity::Info),
            RuleSetting::Warning => Some(Severity::Warning),
            RuleSetting::Error => Some(Severity::Error),
        }
    }
}

/// Config `embedded:`.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct EmbeddedConfig {
    /// Find templates in YAML values (and Python strings) by where they sit, with no config;
    /// `false` checks only the files and keys under `files:`.
    pub recognize: bool,
    /// Files (globs on the path or the file name) and the key patterns whose values are
    /// templates: `agent.templates.*`, `prompts[*].content`, `**.jinja`.
    pub files: Vec<EmbeddedFile>,
}

impl Default for EmbeddedConfig {
    fn default() -> Self {
        EmbeddedConfig {
            recognize: true,
            files: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmbeddedFile {
    pub path: String,
    #[serde(default)]
    pub keys: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RenderConfig {
    pub trim_blocks: bool,
    pub lstrip_blocks: bool,
}

/// The JSON Schema (draft 7, what editors' YAML servers read) of `prefixlint.yaml`, from
/// the types it is read into: `prefixlint.schema.json` at the repository root is this text
/// (`prefixlint schema` prints it; a test keeps the file current).
pub fn json_schema() -> String {
    let schema = schemars::generate::SchemaSettings::draft07()
        .into_generator()
        .into_root_schema_for::<Config>();
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

impl Default for Config {
    fn default() -> Self {
        Config {
            tokenizer: None,
            special_tokens: true,
            include: DEFAULT_GLOBS.iter().map(|s| s.to_string()).collect(),
            exclude: Vec::new(),
            fail_on: Severity::Warning,
            min_lost_tokens: 64,
            synthesized_renders: 3,
            rules: BTreeMap::new(),
            per_path_ignores: BTreeMap::new(),
            volatile_fields: Vec::new(),
            per_deploy_fields: Vec::new(),
            limits: Limits::default(),
            render: RenderConfig::default(),
            undefined: UndefinedMode::default(),
            search_path: Vec::new(),
            filters: BTreeMap::new(),
            tests: BTreeMap::new(),
            globals: BTreeMap::new(),
            stand_ins: StandInMode::default(),
            engine: None,
            providers: BTreeMap::new(),
            chat_template: None,
            chat_role: None,
            chat_variables: serde_json::Map::new(),
            cache_dir: None,
            embedded: EmbeddedConfig::default(),
            path: None,
            discovered_in: None,
            checked_from: None,
        }
    }
}

impl Config {
    /// How messages name this config: its path, or `config` for the built-in defaults.
    pub fn display_name(&self) -> String {
        self.path
            .as_deref()
            .map(source::display_path)
            .unwrap_or_else(|| "config".into())
    }

    /// The config for this run: `--no-config` gives defaults, `--config FILE` that file,
    /// otherwise the nearest `prefixlint.yaml` from `start` upward.
    pub fn resolve(explicit: Option<&Path>, no_config: bool, start: &Path) -> Result<Config> {
        Config::resolve_for(explicit, no_config, &[], start)
    }

    /// Like [`resolve`](Self::resolve), but the search starts at the folder the checked
    /// `paths` share (as ruff does), so `check DIR` from elsewhere finds DIR's config;
    /// then it tries from `cwd`.
    pub fn resolve_for(
        explicit: Option<&Path>,
        no_config: bool,
        paths: &[PathBuf],
        cwd: &Path,
    ) -> Result<Config> {
        let shared = shared_folder(paths, cwd);
        let mut config = Config::find(explicit, no_config, shared.as_deref(), cwd)?;
        config.checked_from = shared;
        Ok(config)
    }

    fn find(
        explicit: Option<&Path>,
        no_config: bool,
        shared: Option<&Path>,
        cwd: &Path,
    ) -> Result<Config> {
        if no_config {
            return Ok(Config::default());
        }
        if let Some(path) = explicit {
            return Config::load(path);
        }
        // A shared folder under the working folder passes it on the way up: searched once.
        let found = match shared {
            Some(shared) => find_upward(shared).or_else(|| {
                (!shared.starts_with(cwd))
                    .then(|| find_upward(cwd))
                    .flatten()
            }),
            None => find_upward(cwd),
        };
        match found {
            Some(path) => {
                let mut config = Config::load(&path)?;
                config.discovered_in = path.parent().map(Path::to_path_buf);
                Ok(config)
            }
            None => Ok(Config::default()),
        }
    }

    pub fn load(path: &Path) -> Result<Config> {
        let display = source::display_path(path);
        let text = source::read_text(path, &display)?;
        let mut config = Config::parse(&text, &display)?;
        config.path = Some(path.to_path_buf());
        config.check_search_path(&display)?;
        config.check_paths_inside(&display)?;
        Ok(config)
    }

    /// A config comes with the pull request, so the files it names (`tokenizer:`,
    /// `chat_template:`, `cache_dir:`) must lie inside its project (the git work tree
    /// around the config file, else its folder), links resolved:
    /// `chat_template: /proc/self/environ` or `cache_dir: ../../x` is refused.
    /// A file elsewhere is named on the command line (`--tokenizer`, `--chat-template`,
    /// `--cache-dir`), where the user chose it.
    fn check_paths_inside(&self, display: &str) -> Result<()> {
        let base = self
            .path
            .as_deref()
            .and_then(Path::parent)
            .filter(|dir| !dir.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let real_base = base.canonicalize().map_err(|e| Error::io(base, e))?;
        // The project a config belongs to: the git work tree around it, else its folder.
        let real_limit = git_work_tree(&real_base).unwrap_or_else(|| real_base.clone());
        // A tokenizer that is not a path (`default`, `o200k_base`, a model id) is looked up
        // in no folder of the project.
        let tokenizer = self
            .tokenizer
            .as_deref()
            .map(str::trim)
            .filter(|spec| {
                let path = Path::new(spec);
                path.is_absolute()
                    || path
                        .components()
                        .any(|c| c == std::path::Component::ParentDir)
                    || base.join(path).symlink_metadata().is_ok()
            })
            .map(|spec| ("tokenizer", "--tokenizer", Path::new(spec)));
        let chat_template = self
            .chat_template
            .as_deref()
            .map(|path| ("chat_template", "--chat-template", path));
        let cache_dir = self
            .cache_dir
            .as_deref()
            .map(|path| ("cache_dir", "--cache-dir", path));
        for (key, flag, path) in [tokenizer, chat_template, cache_dir].into_iter().flatten() {
            if !lies_inside(&real_base, &real_limit, path) {
                return Err(Error::input_with_help(
                    format!(
                        "{display}: `{key}: {}` is outside the project ({})",
                        path.display(),
                        match source::display_path(&real_limit) {
                            shown if shown.is_empty() => ".".to_owned(),
                            shown => shown,
                        }
                    ),
                    format!(
                        "a config's paths stay inside its project (links resolved); name a file elsewhere on the command line with {flag}"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Search folders are read by includes, so like the project root they are a sandbox
    /// boundary: each must be an existing folder inside the config file's folder.
    fn check_search_path(&self, display: &str) -> Result<()> {
        let base = self
            .path
            .as_deref()
            .and_then(Path::parent)
            .filter(|dir| !dir.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let real_base = base.canonicalize().map_err(|e| Error::io(base, e))?;
        for (entry, folder) in self.search_path.iter().zip(self.search_folders()) {
            let shown = entry.display();
            let inside = !entry.is_absolute()
                && crate::render::includes::normalize(entry).is_some()
                && folder
                    .canonicalize()
                    .is_ok_and(|real| real.starts_with(&real_base));
            if !folder.is_dir() {
                return Err(Error::input_with_help(
                    format!(
                        "{display}: search_path folder {} does not exist",
                        source::display_path(&folder)
                    ),
                    "search_path entries are folders relative to the config file",
                ));
            }
            if !inside {
                return Err(Error::input_with_help(
                    format!("{display}: search_path folder `{shown}` is outside the folder of the config file"),
                    "includes never read outside the project: put the config file in a folder that holds every search_path folder",
                ));
            }
        }
        Ok(())
    }

    /// `search_path:` entries, relative to the config file's folder.
    pub fn search_folders(&self) -> Vec<PathBuf> {
        let base = self
            .path
            .as_deref()
            .and_then(Path::parent)
            .unwrap_or(Path::new(""));
        self.search_path
            .iter()
            .map(|folder| {
                let joined = base.join(folder);
                if joined.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    joined
                }
            })
            .collect()
    }

    /// How user templates render under this config, confined to `root`.
    pub fn render_settings(&self, root: PathBuf) -> RenderSettings {
        let mut settings = RenderSettings::new(Dialect::Jinja2, root);
        settings.limits = self.limits;
        settings.trim_blocks = self.render.trim_blocks;
        settings.lstrip_blocks = self.render.lstrip_blocks;
        settings.undefined = self.undefined;
        settings.search_path = self.search_folders();
        settings.stand_ins = StandIns {
            filters: self.filters.clone(),
            tests: self.tests.clone(),
            globals: self.globals.clone(),
        };
        settings.unknown_stand_ins = self.stand_ins;
        settings
    }

    pub fn parse(text: &str, display: &str) -> Result<Config> {
        if text.trim().is_empty() {
            return Ok(Config::default());
        }
        let mut config: Config = serde_yaml_ng::from_str(text)
            .map_err(|e| yaml_error(&e, text, display, "invalid config"))?;
        // A config comes with the pull request it checks: it cannot lift the sandbox.
        let over = |key: &str, message: String| {
            let help = "the ceilings are in docs/configuration.md and SECURITY.md".to_owned();
            match text.find(&format!("{key}:")) {
                Some(at) => Error::located(
                    display,
                    text,
                    at..at + key.len(),
                    message,
                    "over its ceiling",
                    Some(help),
                ),
                None => Error::input_with_help(message, help),
            }
        };
        if !(2..=MAX_SYNTHESIZED_RENDERS).contains(&config.synthesized_renders) {
            return Err(over(
                "synthesized_renders",
                format!(
                    "{display}: synthesized_renders must be from 2 to {MAX_SYNTHESIZED_RENDERS}, not {}",
                    config.synthesized_renders
                ),
            ));
        }
        if let Some((key, value, ceiling)) = config.limits.over_ceiling() {
            return Err(over(
                key,
                format!("{display}: limits.{key} is {value}, over its ceiling of {ceiling}"),
            ));
        }
        if let Some(kind) = crate::rules::per_deploy_kind(&config.per_deploy_fields) {
            config.volatile_fields.push(kind);
        }
        Ok(config)
    }

    /// The folder includes may not leave: the folder of a config found by searching, else
    /// the git work tree around the checked paths, else the folder they share when it is
    /// outside the working directory, else the working directory's work tree or itself.
    pub fn project_root(&self, cwd: &Path) -> PathBuf {
        if let Some(dir) = self.discovered_in.as_deref() {
            let dir = if dir.as_os_str().is_empty() { cwd } else { dir };
            return dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        }
        if let Some(checked) = self.checked_from.as_deref() {
            if let Some(work_tree) = git_work_tree(checked) {
                return work_tree;
            }
            if !checked.starts_with(cwd) {
                return checked.to_path_buf();
            }
        }
        git_work_tree(cwd).unwrap_or_else(|| cwd.to_path_buf())
    }
}

/// Whether `path`, relative to the folder whose real path is `real_base`, leads inside
/// `real_limit` once resolved as the kernel would (links followed, `..` after a link taken
/// from where it leads); parts that do not exist yet are taken as written.
fn lies_inside(real_base: &Path, real_limit: &Path, path: &Path) -> bool {
    if path.is_absolute() {
        return false;
    }
    let mut current = real_base.to_path_buf();
    let mut exists = true;
    for component in path.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                current.pop();
            }
            std::path::Component::Normal(name) => {
                current.push(name);
                if exists {
                    match current.canonicalize() {
                        Ok(real) => current = real,
                        Err(_) => exists = false,
                    }
                }
            }
            std::path::Component::RootDir | std::path::Component::Prefix(_) => return false,
        }
    }
    current.starts_with(real_limit)
}

fn git_work_tree(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The deepest folder that holds every checked path (absolute); `None` without paths.
fn shared_folder(paths: &[PathBuf], cwd: &Path) -> Option<PathBuf> {
    let mut folders = paths.iter().map(|path| {
        let absolute = cwd.join(path);
        if absolute.is_dir() {
            absolute
        } else {
            absolute.parent().map(Path::to_path_buf).unwrap_or(absolute)
        }
    });
    let mut shared = folders.next()?;
    for folder in folders {
        while !folder.starts_with(&shared) {
            shared = shared.parent()?.to_path_buf();
        }
    }
    Some(shared)
}

fn find_upward(start: &Path) -> Option<PathBuf> {
    let mut dir = Some(start);
    while let Some(d) = dir {
        for name in CONFIG_NAMES {
            let candidate = d.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
        dir = d.parent();
    }
    None
}

/// A YAML error as a diagnostic at the line and column the parser reports.
pub fn yaml_error(err: &serde_yaml_ng::Error, text: &str, display: &str, what: &str) -> Error {
    let message = format!("{display}: {what}: {err}");
    match err.location() {
        Some(loc) => {
            let start = source::offset_of(text, loc.line(), loc.column());
            let end = text[start..]
                .find([':', '\n'])
                .map(|i| start + i.max(1))
                .unwrap_or(text.len());
            let label = err
                .to_string()
                .split(" at line")
                .next()
                .unwrap_or("here")
                .to_owned();
            Error::located(display, text, start..end, message, label, None)
        }
        None => Error::input(message),
    }
}

#[cfg(test)]
mod path_tests {
    use super::*;

    #[test]
    fn a_config_path_is_resolved_as_the_kernel_would_before_it_is_judged() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("project");
        std::fs::create_dir_all(root.join("sub/deep")).unwrap();
        std::os::unix::fs::symlink("/usr/lib", root.join("sub/system")).unwrap();
        let base = root.join("sub");
        let inside = |path: &str| lies_inside(&base, &root, Path::new(path));
        assert!(inside("deep/chat.jinja"));
        assert!(inside("../cache"), "up, but still in the project");
        assert!(inside("missing/../cache"));
        assert!(!inside("/proc/self/environ"));
        assert!(!inside("../../x"));
        assert!(
            !inside("missing/../../../x"),
            "`..` through a folder not made yet"
        );
        assert!(!inside("system/python3"), "a link out");
        assert!(
            !inside("system/../../project/sub"),
            "`..` after a link is taken from its target"
        );
    }
}
