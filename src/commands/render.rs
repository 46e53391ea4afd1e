//! `prefixlint render`: print exactly the text a server would tokenize, with no newline added.

use crate::chat::{render_request, ChatRequest, ChatTemplate};
use crate::check::load_samples;
use crate::cli::RenderArgs;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::render::clock::Clock;
use crate::render::Renderer;
use crate::rules::VolatileFields;
use crate::source;
use crate::tokenize::{TokenEngine, TokenizerSpec};
use std::io::Write;

pub fn run_render(args: RenderArgs) -> Result<()> {
    let cwd = std::env::current_dir().map_err(|e| Error::io(".", e))?;
    let config = Config::resolve_for(
        args.config.config.as_deref(),
        args.config.no_config,
        args.template.as_slice(),
        &cwd,
    )?;
    let clock = match &args.now {
        Some(now) => Some(Clock::parse(now).map_err(|e| Error::input(format!("--now: {e}")))?),
        None => None,
    };
    let text = match (&args.chat_template, &args.template) {
        (Some(chat_template), _) => {
            let messages = args.messages.as_deref().ok_or_else(|| {
                Error::input("--chat-template needs --messages FILE.yaml (the request to render)")
            })?;
            let request = ChatRequest::load(messages)?;
            let template = ChatTemplate::load(
                chat_template,
                args.template_name.as_deref(),
                request.tools.is_some(),
            )?;
            let (renderer, prepared) = template.renderer()?;
            render_request(
                &renderer,
                &prepared,
                &template,
                &request,
                clock.unwrap_or_else(Clock::now),
            )?
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
        let spec = TokenizerSpec::parse(
            args.tokenizer
                .as_deref()
                .or(config.tokenizer.as_deref())
                .unwrap_or("default"),
        )?;
        let engine = spec.load()?;
        let _ = out.write_all(token_listing(&text, engine.as_ref())?.as_bytes());
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
    let root = crate::check::root_for(path, &config.project_root(cwd));
    let mut renderer = Renderer::new(config.render_settings(root.clone()))?;
    let display = source::display_path(path);
    let text = source::read_text(path, &display)?;
    let template = renderer.prepare(&crate::check::template_name(path, &root), &text)?;
    let fields = VolatileFields::new(&config.volatile_fields)?;
    let samples = match &args.samples {
        Some(file) => {
            let mut loaded = crate::samples::load(file)?;
            let shapes = crate::samples::infer(&renderer, &template);
            crate::samples::add_stand_ins(&mut loaded, &shapes, &fields);
            loaded
        }
        None => load_samples(path, &renderer, &template, &fields, config)?,
    };
    let context = samples.contexts.get(args.sample).ok_or_else(|| {
        Error::input(format!(
            "--sample {}: there are {} samples (counting from 0)",
            args.sample,
            samples.len()
        ))
    })?;
    let clock = clock.unwrap_or_else(|| samples.clock(args.sample));
    Ok(renderer.render(&template, context, clock)?.text)
}

/// One line per token: index, id, and the exact text it covers (JSON-escaped).
pub fn token_listing(text: &str, engine: &dyn TokenEngine) -> Result<String> {
    use std::fmt::Write as _;
    let tokens = engine.encode(text)?;
    let mut out = String::new();
    let _ = writeln!(out, "{:>6}  {:>8}  {:>13}  text", "index", "id", "bytes");
    for (i, (id, (start, end))) in tokens.ids.iter().zip(&tokens.offsets).enumerate() {
        let piece = text.get(*start..*end).unwrap_or_default();
        let shown = serde_json::to_string(piece).unwrap_or_default();
        let _ = writeln!(
            out,
            "{i:>6}  {id:>8}  {:>13}  {shown}",
            format!("{start}..{end}")
        );
    }
    let _ = writeln!(out, "{} tokens ({})", tokens.len(), engine.name());
    Ok(out)
}
