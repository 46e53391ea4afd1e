//! The settings a run uses to build requests: the tokenizer, the model's chat template, the
//! engine (cache profile) and the sandbox limits, resolved once from the command line's
//! [`Flags`] and the [`Config`] into one typed [`Settings`] that every command reads.
//!
//! A flag wins over its config key; a path in the config file is relative to that file, a
//! path on the command line to the working directory. Nothing below the command layer reads
//! `tokenizer:`, `special_tokens:`, `chat_template:`, `chat_role:`, `chat_variables:`,
//! `engine:` or `limits:` from the config itself. (The editor server and the Python module
//! resolve here too: the server again whenever the config file changes.)

use crate::cache_profile::{CacheProfile, CacheProfileConfig, CacheProfileKind};
use crate::config::Config;
use crate::error::Result;
use crate::render::Limits;
use crate::tokenize::TokenizerSpec;
use serde_json::{Map, Value as Json};
use std::path::{Component, Path, PathBuf};

/// What the command line said about the settings: `None` (or `false`) where it said nothing.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    /// `--tokenizer`.
    pub tokenizer: Option<String>,
    /// `--no-special-tokens`.
    pub no_special_tokens: bool,
    /// `--chat-template`.
    pub chat_template: Option<PathBuf>,
    /// `--template-name`.
    pub template_name: Option<String>,
    /// `--chat-role`.
    pub chat_role: Option<String>,
    /// `--engine`.
    pub engine: Option<String>,
}

/// Where a setting came from, for the messages that name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Given {
    Flag,
    /// The config file, by its display name.
    Config(String),
}

/// The settings of one run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The tokenizer spec ([`TokenizerSpec`]): `--tokenizer`, else `tokenizer:`, else `default`.
    pub tokenizer: String,
    /// Count the special tokens the server adds: `special_tokens:`, unless `--no-special-tokens`.
    pub special_tokens: bool,
    pub chat: ChatSettings,
    /// `--engine`, else `engine:`; `None` where neither names one (each command has its default).
    pub engine: Option<EngineSetting>,
    /// The sandbox limits of every render, the model's chat template's included (`limits:`).
    pub limits: Limits,
}

/// How renders become chat requests.
#[derive(Debug, Clone)]
pub struct ChatSettings {
    /// `--chat-template`, else `chat_template:`.
    pub template: Option<ChatTemplatePath>,
    /// `--template-name`: which of a tokenizer_config.json's named templates.
    pub template_name: Option<String>,
    /// The role of the message that carries a render: `--chat-role`, else `chat_role:`, else `system`.
    pub role: String,
    /// `chat_variables:`: defaults for the chat template's variables in `check`.
    pub variables: Map<String, Json>,
}

/// A chat template file and where it was named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatTemplatePath {
    pub path: PathBuf,
    pub given: Given,
}

impl ChatTemplatePath {
    /// How messages name the setting.
    pub fn setting(&self) -> &'static str {
        match self.given {
            Given::Flag => "--chat-template",
            Given::Config(_) => "`chat_template:` in the config",
        }
    }
}

/// The engine whose prefix cache to model. One set of names for every command: the cache
/// profiles' (`tokens`, `vllm`, `sglang`, `llama.cpp`, `tgi` and the hosted APIs, with
/// their aliases) and `ollama` (a llama.cpp server, modelled token by token), each with
/// `NAME:KEY=VALUE,...` options on the command line or a mapping in the config.
#[derive(Debug, Clone)]
pub struct EngineSetting {
    /// The name and options as given.
    pub options: CacheProfileConfig,
    /// The profile they resolve to, with config `providers:` applied and the tokenizer
    /// that counts recorded.
    pub profile: CacheProfile,
    pub given: Given,
}

impl EngineSetting {
    /// How messages name the setting: `--engine`, or the config file.
    pub fn context(&self) -> String {
        match &self.given {
            Given::Flag => "--engine".to_owned(),
            Given::Config(name) => name.clone(),
        }
    }

    /// `ollama`: `measure` talks to it as Ollama; elsewhere it is its profile.
    pub fn is_ollama(&self) -> bool {
        is_ollama(&self.options.name)
    }
}

fn is_ollama(name: &str) -> bool {
    name.trim().eq_ignore_ascii_case("ollama")
}

impl Default for Settings {
    /// What a run without flags or config uses.
    fn default() -> Self {
        Settings {
            tokenizer: "default".into(),
            special_tokens: true,
            chat: ChatSettings {
                template: None,
                template_name: None,
                role: "system".into(),
                variables: Map::new(),
            },
            engine: None,
            limits: Limits::default(),
        }
    }
}

impl Settings {
    /// The flags over the config: the one place the two meet.
    pub fn resolve(flags: &Flags, config: &Config) -> Result<Settings> {
        let tokenizer = match (&flags.tokenizer, &config.tokenizer) {
            (Some(flag), _) => flag.clone(),
            (None, Some(setting)) => tokenizer_in_config(config, setting),
            (None, None) => "default".into(),
        };
        let chat_template = match (&flags.chat_template, &config.chat_template) {
            (Some(path), _) => Some(ChatTemplatePath {
                path: path.clone(),
                given: Given::Flag,
            }),
            (None, Some(path)) => Some(ChatTemplatePath {
                path: config_relative(config, path),
                given: Given::Config(config.display_name()),
            }),
            (None, None) => None,
        };
        let engine = match (&flags.engine, &config.engine) {
            (Some(spec), _) => Some((CacheProfileConfig::parse_cli(spec)?, Given::Flag)),
            (None, Some(setting)) => {
                Some((setting.0.clone(), Given::Config(config.display_name())))
            }
            (None, None) => None,
        };
        let engine = match engine {
            Some((options, given)) => Some(engine_setting(options, given, config, &tokenizer)?),
            None => None,
        };
        Ok(Settings {
            special_tokens: config.special_tokens && !flags.no_special_tokens,
            chat: ChatSettings {
                template: chat_template,
                template_name: flags.template_name.clone(),
                role: flags
                    .chat_role
                    .clone()
                    .or_else(|| config.chat_role.clone())
                    .unwrap_or_else(|| "system".into()),
                variables: config.chat_variables.clone(),
            },
            engine,
            limits: config.limits,
            tokenizer,
        })
    }

    /// The cache profile `check` and `audit` predict with: the engine's, else token by token.
    pub fn profile(&self) -> CacheProfile {
        match &self.engine {
            Some(engine) => engine.profile.clone(),
            None => CacheProfile::default(),
        }
    }

    /// The chat template file, where one is set.
    pub fn chat_template(&self) -> Option<&Path> {
        self.chat.template.as_ref().map(|t| t.path.as_path())
    }

    /// The tokenizer these settings name, loaded.
    pub fn load_tokenizer(&self) -> Result<Box<dyn crate::tokenize::TokenEngine>> {
        TokenizerSpec::parse(&self.tokenizer)?.load_with(self.special_tokens)
    }
}

/// How a run prints, from the global flags and the environment: resolved once, before the
/// command runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Output {
    pub color: Color,
    /// `--quiet`: only the findings.
    pub quiet: bool,
    /// `-v`: with `--quiet`, the notes too.
    pub verbose: bool,
    /// The columns the text reports fit: the terminal's, else `COLUMNS`, else 100.
    pub width: usize,
}

/// The width of a report with no terminal and no `COLUMNS`: what every output was made for.
pub const DEFAULT_WIDTH: usize = 100;

/// The width of the terminal on stdout, else `COLUMNS` (a positive number), else
/// [`DEFAULT_WIDTH`].
pub fn width(terminal: Option<usize>, columns: Option<&str>) -> usize {
    terminal
        .filter(|&w| w > 0)
        .or_else(|| {
            columns
                .and_then(|c| c.trim().parse().ok())
                .filter(|&w| w > 0)
        })
        .unwrap_or(DEFAULT_WIDTH)
}

/// Whether to colour, before the stream is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Color {
    /// When the stream is a terminal.
    #[default]
    Auto,
    Always,
    Never,
}

impl Color {
    /// `--color auto` read with the environment, as anstream (ruff's, cargo's) reads it:
    /// `NO_COLOR` (set, not empty) turns colour off, else `CLICOLOR_FORCE` (not `0`) on.
    pub fn with_env(self, env: impl Fn(&str) -> Option<String>) -> Color {
        let set = |name: &str| env(name).is_some_and(|v| !v.is_empty());
        match self {
            Color::Auto if set("NO_COLOR") => Color::Never,
            Color::Auto
                if set("CLICOLOR_FORCE") && env("CLICOLOR_FORCE").as_deref() != Some("0") =>
            {
                Color::Always
            }
            color => color,
        }
    }

    /// Whether a stream that is (or is not) a terminal gets colour.
    pub fn on(self, terminal: bool) -> bool {
        match self {
            Color::Auto => terminal,
            Color::Always => true,
            Color::Never => false,
        }
    }
}

impl Default for Output {
    fn default() -> Self {
        Output {
            color: Color::Auto,
            quiet: false,
            verbose: false,
            width: DEFAULT_WIDTH,
        }
    }
}

impl Output {
    /// The width a text report is fitted to, when it is narrower than [`DEFAULT_WIDTH`];
    /// `None` at that width and above, where every output is as it was made (a table or a
    /// rule's summary that is wider runs on, as it did before widths were followed).
    pub fn narrow(&self) -> Option<usize> {
        (self.width < DEFAULT_WIDTH).then_some(self.width)
    }

    /// Whether the notes (stand-in notes, discovery notes, the counts) are printed.
    pub fn notes(&self) -> bool {
        !self.quiet || self.verbose
    }
}

/// The profile of an engine setting; `context` (the flag or the config file) names it in errors.
fn engine_setting(
    options: CacheProfileConfig,
    given: Given,
    config: &Config,
    tokenizer: &str,
) -> Result<EngineSetting> {
    let context = match &given {
        Given::Flag => "--engine".to_owned(),
        Given::Config(name) => name.clone(),
    };
    crate::providers::check_overrides(&config.providers, &config.display_name())?;
    let profile = if is_ollama(&options.name) && options == ollama_options(&options.name) {
        // Ollama runs llama.cpp but says nothing of its cache: modelled token by token.
        CacheProfile::of(CacheProfileKind::Tokens)
    } else {
        CacheProfile::from_config_with(&options, &context, &config.providers)?
    };
    Ok(EngineSetting {
        profile: profile.counted_with(tokenizer),
        options,
        given,
    })
}

/// `ollama` with no options (it takes none).
fn ollama_options(name: &str) -> CacheProfileConfig {
    CacheProfileConfig {
        name: name.to_owned(),
        ..CacheProfileConfig::default()
    }
}

/// `tokenizer:` in the config: a file named there is relative to the config file; a name
/// (`default`, `o200k_base`, an `org/name` model id) stays as it is.
fn tokenizer_in_config(config: &Config, setting: &str) -> String {
    let rebased = config_relative(config, Path::new(setting.trim()));
    if rebased == Path::new(setting.trim()) {
        return setting.to_owned();
    }
    let is_file = match TokenizerSpec::parse(setting) {
        Ok(TokenizerSpec::File(_) | TokenizerSpec::Gguf(_)) => true,
        Ok(TokenizerSpec::HubModel(_)) => rebased.exists(),
        _ => false,
    };
    if is_file {
        rebased.to_string_lossy().into_owned()
    } else {
        setting.to_owned()
    }
}

/// A path from the config file, relative to the config file's folder (shown relative to the
/// working directory where the folder is under it, so messages print what they did before).
pub fn config_relative(config: &Config, path: &Path) -> PathBuf {
    let Some(dir) = config.path.as_deref().and_then(Path::parent) else {
        return path.to_path_buf();
    };
    if path.is_absolute() {
        return path.to_path_buf();
    }
    let cwd = std::env::current_dir().ok();
    let dir = cwd
        .as_deref()
        .and_then(|cwd| dir.strip_prefix(cwd).ok())
        .unwrap_or(dir);
    if dir.as_os_str().is_empty() {
        return path.to_path_buf();
    }
    lexical_join(dir, path)
}

/// `dir/a/../b` → `dir/b` without touching the disk, so messages show a clean path.
fn lexical_join(dir: &Path, path: &Path) -> PathBuf {
    let mut out = dir.to_path_buf();
    for part in path.components() {
        match part {
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn color_follows_the_flag_then_no_color_then_clicolor_force() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(Color::Auto.with_env(env(&[])), Color::Auto);
        assert_eq!(
            Color::Auto.with_env(env(&[("NO_COLOR", "1")])),
            Color::Never
        );
        assert_eq!(Color::Auto.with_env(env(&[("NO_COLOR", "")])), Color::Auto);
        assert_eq!(
            Color::Auto.with_env(env(&[("CLICOLOR_FORCE", "1")])),
            Color::Always
        );
        assert_eq!(
            Color::Auto.with_env(env(&[("CLICOLOR_FORCE", "0")])),
            Color::Auto
        );
        assert_eq!(
            Color::Auto.with_env(env(&[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")])),
            Color::Never
        );
        assert_eq!(
            Color::Never.with_env(env(&[("CLICOLOR_FORCE", "1")])),
            Color::Never
        );
        assert_eq!(
            Color::Always.with_env(env(&[("NO_COLOR", "1")])),
            Color::Always
        );
        assert!(Color::Auto.on(true) && !Color::Auto.on(false));
    }

    #[test]
    fn width_follows_the_terminal_then_columns_then_100() {
        assert_eq!(width(Some(120), Some("80")), 120);
        assert_eq!(width(None, Some("80")), 80);
        assert_eq!(width(None, Some(" 60 ")), 60);
        assert_eq!(width(None, Some("wide")), 100);
        assert_eq!(width(None, Some("0")), 100);
        assert_eq!(width(None, None), 100);
    }

    fn config_at(path: &str, yaml: &str) -> Config {
        let mut config = Config::parse(yaml, path).unwrap();
        config.path = Some(PathBuf::from(path));
        config
    }

    #[test]
    fn a_flag_wins_over_its_config_key() {
        let config = config_at(
            "sub/prefixlint.yaml",
            "tokenizer: tok.json\nchat_template: chat.jinja\nchat_role: user\nengine: vllm\n",
        );
        let flags = Flags {
            tokenizer: Some("default".into()),
            chat_template: Some("other.jinja".into()),
            chat_role: Some("system".into()),
            engine: Some("sglang:page_size=4".into()),
            no_special_tokens: true,
            template_name: None,
        };
        let settings = Settings::resolve(&flags, &config).unwrap();
        assert_eq!(settings.tokenizer, "default");
        assert_eq!(settings.chat_template(), Some(Path::new("other.jinja")));
        assert_eq!(settings.chat.role, "system");
        assert!(!settings.special_tokens);
        let engine = settings.engine.unwrap();
        assert_eq!(
            (engine.profile.kind, engine.profile.unit_tokens),
            (CacheProfileKind::Sglang, 4)
        );
        assert_eq!(engine.context(), "--engine");
    }

    #[test]
    fn paths_in_the_config_are_relative_to_its_file() {
        let config = config_at(
            "sub/prefixlint.yaml",
            "tokenizer: models/tok.json\nchat_template: ../chat.jinja\nengine: {name: vllm, block_size: 32}\n",
        );
        let settings = Settings::resolve(&Flags::default(), &config).unwrap();
        assert_eq!(settings.tokenizer, "sub/models/tok.json");
        let template = settings.chat.template.clone().unwrap();
        assert_eq!(template.path, Path::new("chat.jinja"));
        assert_eq!(template.setting(), "`chat_template:` in the config");
        assert_eq!(settings.profile().unit_tokens, 32);
        // A name is no path.
        for name in ["default", "o200k_base", "Qwen/Qwen3-0.6B"] {
            let config = config_at("sub/prefixlint.yaml", &format!("tokenizer: {name}\n"));
            let settings = Settings::resolve(&Flags::default(), &config).unwrap();
            assert_eq!(settings.tokenizer, name);
        }
    }

    #[test]
    fn every_engine_name_resolves_in_one_place() {
        for (spec, kind) in [
            ("vllm", CacheProfileKind::Vllm),
            ("llama.cpp", CacheProfileKind::LlamaCpp),
            ("llamacpp", CacheProfileKind::LlamaCpp),
            ("ollama", CacheProfileKind::Tokens),
            ("openai:model=gpt-4.1", CacheProfileKind::Openai),
        ] {
            let flags = Flags {
                engine: Some(spec.into()),
                ..Flags::default()
            };
            let settings = Settings::resolve(&flags, &Config::default()).unwrap();
            assert_eq!(settings.profile().kind, kind, "{spec}");
        }
        let bad = Flags {
            engine: Some("ollama:block_size=4".into()),
            ..Flags::default()
        };
        assert!(Settings::resolve(&bad, &Config::default()).is_err());
    }
}
