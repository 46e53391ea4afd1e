//! `prefixlint render`: print exactly the text a server would tokenize, with no newline added.

use crate::chat::{ChatRequest, ChatTemplate, ChatTemplateSource};
use crate::cli::RenderArgs;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::render::clock::Clock;
use crate::render::Renderer;
use crate::request::{self, load_samples, ChatWrapper, Encoding};
use crate::rules::VolatileFields;
use crate::settings::Settings;
use crate::source;
use crate::tokenize::{TokenEngine, TokenizerSpec, Tokens};
use std::io::Write;

pub fn run_render(args: RenderArgs) -> Result<()> {
    let cwd = std::env::current_dir().map_err(|e| Error::io(".", e))?;
    // Found from the file rendered, as `check` finds it from the paths it checks.
    let rendered: Vec<std::path::PathBuf> = args
        .template
        .iter()
        .chain(&args.messages)
        .cloned()
        .collect();
    let config = Config::resolve_for(
        args.config.config.as_deref(),
        args.config.no_config,
        &rendered,
        &cwd,
    )?;
    let clock = match &args.now {
        Some(now) => Some(Clock::parse(now).map_err(|e| Error::input(format!("--now: {e}")))?),
        None => None,
    };
    let settings = Settings::resolve(&args.flags(), &config)?;
    let tokenizer_spec = settings.tokenizer.as_str();
    // A .gguf tokenizer carries the model's chat template: the default for --messages.
    let chat_template = match (settings.chat_template(), &args.messages) {
        (Some(path), Some(_)) => Some(path.to_path_buf()),
        (None, Some(_)) => match TokenizerSpec::parse(tokenizer_spec)? {
            TokenizerSpec::Gguf(path) => Some(path),
            TokenizerSpec::Tiktoken(encoding) => {
                return Err(crate::tokenize::tiktoken::no_chat_template(encoding))
            }
            _ => {
                return Err(Error::input_with_help(
                    "--messages needs the model's chat template",
                    "pass --chat-template FILE (.jinja, tokenizer_config.json or .gguf), set `chat_template:` in prefixlint.yaml, or pass --tokenizer MODEL.gguf",
                ))
            }
        },
        (_, None) => None,
    };
    let chat = chat_template.is_some();
    let text = match (&chat_template, &args.template) {
        (Some(chat_template), _) => {
            let messages = args.messages.as_deref().ok_or_else(|| {
                Error::input("--chat-template needs --messages FILE.yaml (the request to render)")
            })?;
            let request = ChatRequest::load(messages)?;
            let template = ChatTemplate::from_source(
                ChatTemplateSource::File(chat_template),
                settings.chat.template_name.as_deref(),
                request.tools.is_some(),
            )?;
            let wrapper = ChatWrapper::with_limits(template, settings.limits)?;
            wrapper
                .render(&request, clock.unwrap_or_else(Clock::now))?
                .text
        }
        (None, Some(path)) => render_plain(path, &args, &config, &cwd, clock)?,
        (None, None) => {
            return Err(Error::input(
                "give a TEMPLATE, or --chat-template FILE with --messages FILE.yaml",
            ))
        }
    };
    let mut out = std::io::stdout().lock();
    if args.tokens {
        let engine = settings.load_tokenizer()?;
        let encoding = if chat {
            Encoding::Chat
        } else {
            Encoding::Prompt
        };
        let tokens = encoding.encode(engine.as_ref(), &text)?;
        let _ = out.write_all(token_listing(&text, &tokens, engine.as_ref()).as_bytes());
    } else {
        let _ = out.write_all(text.as_bytes());
    }
    let _ = out.flush();
    Ok(())
}

fn render_plain(
    path: &std::path::Path,
    args: &RenderArgs,
    config: &Config,
    cwd: &std::path::Path,
    clock: Option<Clock>,
) -> Result<String> {
    let root = request::root_for(path, &config.project_root(cwd));
    let mut renderer = Renderer::new(config.render_settings(root.clone()))?;
    let display = source::display_path(path);
    let fields = VolatileFields::new(&config.volatile_fields)?;
    let name = request::template_name(path, &root);
    let embedded = embedded_template(path, args.key.as_deref(), config)?;
    let (template, embedded_samples) = match &embedded {
        Some(embedded) => {
            let name = embedded.name(&name);
            let template = crate::check::embedded::parse(embedded, &name, &mut renderer)?;
            let samples = crate::check::embedded::samples(
                path, embedded, &renderer, &template, &fields, config,
            )?;
            (template, Some(samples))
        }
        None => {
            let text = source::read_text(path, &display)?;
            let format = args.format.unwrap_or_default();
            (renderer.prepare_as(&name, &text, format)?, None)
        }
    };
    let samples = match &args.samples {
        Some(file) => {
            let mut loaded = crate::samples::load(file)?;
            let shapes = crate::samples::infer(&renderer, &template);
            crate::samples::add_stand_ins(&mut loaded, &shapes, &fields);
            loaded
        }
        None => match embedded_samples {
            Some(samples) => samples,
            None => load_samples(path, &renderer, &template, &fields, config)?,
        },
    };
    let context = samples.contexts.get(args.sample).ok_or_else(|| {
        Error::input(format!(
            "--sample {}: there are {} samples (counting from 0)",
            args.sample,
            samples.len()
        ))
    })?;
    // What a request sent now would contain, as the help says (and as the chat path does);
    // the synthesized clocks of `check` exist to make renders differ, not to be printed.
    let clock = clock.unwrap_or_else(Clock::now);
    let render = renderer.render(&template, context, clock)?;
    // A prompt-poet template's request is its parts' contents, not its YAML.
    match &embedded {
        Some(e) if e.template.kind == crate::host::HostKind::PromptPoet => {
            let mut renders = request::prompt_poet_renders(vec![render], &template.name)?;
            Ok(renders.remove(0).text)
        }
        _ => Ok(render.text),
    }
}

/// The template `--key` names in a host file (a `.prompty` file's body without it).
fn embedded_template(
    path: &std::path::Path,
    key: Option<&str>,
    config: &Config,
) -> Result<Option<crate::discover::hosts::Embedded>> {
    use crate::discover::hosts::{self, HostError, HostSettings};
    use crate::host::HostKind;
    let mut settings = HostSettings::new(&config.embedded)?;
    let display = source::display_path(path);
    let kind = match (settings.kind_of(path), key) {
        (Some(HostKind::Prompty), _) => HostKind::Prompty,
        (Some(kind), Some(_)) if kind != HostKind::PromptPoet => kind,
        (Some(HostKind::PromptPoet), None) => {
            return Ok(hosts::prompt_poet(&source::read_text(path, &display)?))
        }
        (_, Some(_)) => HostKind::Yaml,
        (_, None) => return Ok(None),
    };
    // The key is named, so its value is a template whatever zero config would say.
    if let Some(key) = key {
        let everything = globset::Glob::new("**")
            .map_err(|e| Error::input(e.to_string()))?
            .compile_matcher();
        settings.files.push((everything, vec![key.to_owned()]));
    }
    let text = source::read_text(path, &display)?;
    let found = match hosts::embedded_in(path, kind, &text, &settings) {
        Ok(found) => found,
        Err(HostError::Failed(e)) => return Err(e),
        Err(HostError::Unreadable(reason)) => {
            return Err(Error::input(format!("{display}: {reason}")))
        }
    };
    let keys: Vec<String> = found.iter().map(|e| e.template.key.clone()).collect();
    let wanted = key.unwrap_or("body");
    match found.into_iter().find(|e| e.template.key == wanted) {
        Some(embedded) => Ok(Some(embedded)),
        None => Err(Error::input_with_help(
            format!("{display}: no template at `{wanted}`"),
            if keys.is_empty() {
                "this file holds no template that prefixlint finds".to_owned()
            } else {
                format!("its templates are at: {}", keys.join(", "))
            },
        )),
    }
}

/// One line per token: index, id, and the exact text it covers (JSON-escaped); a token the
/// server adds (BOS, …) covers no text and shows its vocabulary spelling, marked `(added)`.
pub fn token_listing(text: &str, tokens: &Tokens, engine: &dyn TokenEngine) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "{:>6}  {:>8}  {:>13}  text", "index", "id", "bytes");
    for (i, (id, (start, end))) in tokens.ids.iter().zip(&tokens.offsets).enumerate() {
        let added = start == end;
        let piece = match added {
            true => engine.token_text(*id).unwrap_or_default(),
            false => text.get(*start..*end).unwrap_or_default().to_owned(),
        };
        let mut shown = serde_json::to_string(&piece).unwrap_or_default();
        if added {
            shown.push_str(" (added)");
        }
        let _ = writeln!(
            out,
            "{i:>6}  {id:>8}  {:>13}  {shown}",
            format!("{start}..{end}")
        );
    }
    let _ = writeln!(out, "{} tokens ({})", tokens.len(), engine.name());
    out
}
