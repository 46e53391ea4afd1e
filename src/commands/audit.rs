//! `prefixlint audit`: arguments in, report out.

use crate::audit::{self, report, AuditOptions};
use crate::cache_profile::{CacheProfile, CacheProfileConfig};
use crate::cli::AuditArgs;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::report::output::write_atomic;
use crate::rules::VolatileFields;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(args: AuditArgs) -> Result<ExitCode> {
    let cwd = std::env::current_dir().map_err(|e| Error::io(".", e))?;
    let paths: Vec<PathBuf> = args
        .logs
        .iter()
        .filter(|l| *l != "-")
        .map(PathBuf::from)
        .collect();
    let config = Config::resolve_for(
        args.config.config.as_deref(),
        args.config.no_config,
        &paths,
        &cwd,
    )?;
    let engine = match (&args.engine, &config.engine) {
        (Some(spec), _) => {
            CacheProfile::from_config(&CacheProfileConfig::parse_cli(spec)?, "--engine")?
        }
        (None, Some(setting)) => CacheProfile::from_config(&setting.0, "engine")?,
        (None, None) => CacheProfile::default(),
    };
    let fields = VolatileFields::new(&config.volatile_fields)?;
    let templates = match &args.templates {
        Some(dir) => {
            if !dir.is_dir() {
                return Err(Error::input(format!(
                    "--templates {}: not a folder",
                    dir.display()
                )));
            }
            Some(audit::attribute::Templates::load(dir, &config, &fields)?)
        }
        None => None,
    };
    let options = AuditOptions {
        inputs: args.logs.clone(),
        tokenizer: args
            .tokenizer
            .clone()
            .or_else(|| config.tokenizer.clone())
            .unwrap_or_else(|| "default".into()),
        chat_template: args
            .chat_template
            .clone()
            .or_else(|| config.chat_template.clone()),
        special_tokens: config.special_tokens && !args.no_special_tokens,
        engine,
        session_key: audit::session::SessionKey::parse(args.session_key.as_deref()),
        input_format: args.input_format,
        max_line_bytes: args.max_line_bytes.max(1),
        fields,
        templates,
    };
    let result = audit::run(&options)?;
    let text = report::render(&result, args.format)?;
    match &args.output {
        Some(path) => write_atomic(path, text.as_bytes())?,
        None => {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(text.as_bytes());
        }
    }
    for skipped in result.summary.skipped.iter() {
        eprintln!(
            "warning: {}:{}: skipped: {}",
            skipped.file, skipped.line, skipped.reason
        );
    }
    Ok(ExitCode::SUCCESS)
}
