//! `prefixlint samples TEMPLATE`: the inferred shape of a template's variables as a
//! ready-to-edit `NAME.samples.yaml`, on stdout or (`--write`) beside the template.

use crate::check::{render_all, root_for, template_name};
use crate::cli::SamplesArgs;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::render::Renderer;
use crate::rules::VolatileFields;
use crate::samples::{emit, infer, samples_path};
use crate::source;
use std::io::Write;

pub fn run(args: SamplesArgs) -> Result<()> {
    let cwd = std::env::current_dir().map_err(|e| Error::io(".", e))?;
    let config = Config::resolve(args.config.config.as_deref(), args.config.no_config, &cwd)?;
    let fields = VolatileFields::new(&config.volatile_fields)?;
    let path = &args.template;
    let display = source::display_path(path);
    let text = source::read_text(path, &display)?;
    let root = root_for(path, &config.project_root(&cwd));
    let mut renderer = Renderer::new(config.render_settings(root.clone()))?;
    let format = args.format.unwrap_or_default();
    let template = renderer.prepare_as(&template_name(path, &root), &text, format)?;
    let shapes = infer(&renderer, &template);
    let samples = emit::starter_samples(&shapes, &fields, config.synthesized_renders);
    // The file is only useful if the template renders with it: say so when it does not.
    if let Err(e) = render_all(&renderer, &template, &samples) {
        eprintln!(
            "warning: {display} does not render with these samples yet; fix the values it needs:\n{:?}",
            miette::Report::new(e)
        );
    }
    let yaml = emit::samples_yaml(&display, &samples, &fields);
    if !args.write {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(yaml.as_bytes()).and_then(|()| out.flush());
        return Ok(());
    }
    let target = samples_path(path);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&target)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => Error::input_with_help(
                format!(
                    "{}: already exists; not overwriting it",
                    source::display_path(&target)
                ),
                "remove it first, or run without --write to print the samples",
            ),
            _ => Error::io(&target, e),
        })?;
    file.write_all(yaml.as_bytes())
        .map_err(|e| Error::io(&target, e))?;
    eprintln!("wrote {}", source::display_path(&target));
    Ok(())
}
