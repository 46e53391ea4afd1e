//! `prefixlint audit`: arguments in, report out.

use crate::audit::{self, report, AuditOptions};
use crate::cache_profile::CacheProfileKind;
use crate::cli::{AuditArgs, AuditFailOn};
use crate::error::{Error, Result};
use crate::report::output::{AtomicFile, Stdout, Wrapped};
use crate::rules::VolatileFields;
use crate::settings::{Given, Output, Settings};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub fn run(args: AuditArgs, output: Output) -> Result<ExitCode> {
    let (paths, config) = super::config_for_logs(&args.logs, &args.config)?;
    crate::providers::check_overrides(&config.providers, &config.display_name())?;
    let settings = Settings::resolve(&args.tokens.flags(args.engine.as_deref()), &config)?;
    let mut engine = settings.profile();
    let mut engine_source = None;
    let given = settings.engine.as_ref();
    if engine.kind == CacheProfileKind::Vllm
        && given.is_some_and(|g| g.options.block_size.is_none())
    {
        match vllm_block_size_beside(&paths)? {
            Some((block, scrape)) => {
                engine.unit_tokens = block;
                engine_source = Some(format!(
                    "block size {block} from {} (vllm:cache_config_info)",
                    scrape.display()
                ));
            }
            None => eprintln!(
                "warning: {} vllm without block_size, and no {VLLM_SCRAPE} beside the log: the predictions assume blocks of {} tokens (vLLM's GPU default; on CPU it is 128); give --engine vllm:block_size=N, or save the server's /metrics as {VLLM_SCRAPE} next to the log",
                match given.map(|g| &g.given) {
                    Some(Given::Flag) => "--engine",
                    _ => "engine",
                },
                engine.unit_tokens
            ),
        }
    }
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
        settings,
        engine,
        engine_source,
        session_key: audit::session::SessionKey::parse(args.session_key.as_deref()),
        input_format: args.lines.input_format,
        max_line_bytes: args.lines.max_line_bytes.max(1),
        fields,
        templates,
    };
    let auditor = audit::Auditor::load(&options)?;
    // Each request's part of the report is written as soon as it is audited.
    let summary = match &args.report.output {
        Some(path) => {
            let mut file = AtomicFile::create(path)?;
            let summary = write_report(&auditor, args.format, &mut file, |e| file_error(path, e))?;
            file.commit()?;
            summary
        }
        None => {
            let stdout = std::io::BufWriter::new(Stdout);
            let error = |e| Error::input(format!("cannot write the report: {e}"));
            // Stdout ignores write errors, so this cannot fail on them.
            match (args.format, output.narrow()) {
                (report::AuditFormat::Full, Some(width)) => {
                    write_report(&auditor, args.format, Wrapped::new(stdout, width), error)?
                }
                _ => write_report(&auditor, args.format, stdout, error)?,
            }
        }
    };
    for skipped in summary.skipped.iter() {
        eprintln!(
            "warning: {}:{}: skipped: {}",
            skipped.file, skipped.line, skipped.reason
        );
    }
    let unread = summary.not_audited.len() + summary.skipped_lines;
    if unread > 0 {
        eprintln!(
            "{} requests not audited, {} lines skipped",
            summary.not_audited.len(),
            summary.skipped_lines
        );
    }
    if let Some(counts) = crate::profile::logged_messages_summary() {
        eprint!("{counts}");
    }
    let failed = match args.fail_on {
        AuditFailOn::Never => false,
        AuditFailOn::Skipped => unread > 0,
        AuditFailOn::Break => unread > 0 || summary.breaks > 0,
    };
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Audits the logs into `out` as the requests come; the summary for the warnings.
fn write_report<W: Write>(
    auditor: &audit::Auditor<'_>,
    format: report::AuditFormat,
    out: W,
    error: impl Fn(std::io::Error) -> Error,
) -> Result<audit::Summary> {
    let mut writer = report::AuditWriter::new(format, auditor.head(), out);
    let summary = auditor.run(|entry| writer.entry(entry).map_err(&error))?;
    writer.finish(&summary).map_err(&error)?;
    Ok(summary)
}

/// The `/metrics` scrape that `audit --engine vllm` reads the block size from, when it is
/// saved in the log's folder.
const VLLM_SCRAPE: &str = "metrics.prom";

/// The block size of the vLLM that served the logs, from a scrape saved beside them: the
/// first log's folder holding a `metrics.prom` with `vllm:cache_config_info`.
fn vllm_block_size_beside(logs: &[PathBuf]) -> Result<Option<(usize, PathBuf)>> {
    for log in logs {
        let scrape = log
            .parent()
            .map(|dir| dir.join(VLLM_SCRAPE))
            .unwrap_or_else(|| PathBuf::from(VLLM_SCRAPE));
        if !scrape.is_file() {
            continue;
        }
        let text = std::fs::read(&scrape).map_err(|e| Error::io(&scrape, e))?;
        let geometry =
            crate::measure::engine::geometry_from_metrics(&String::from_utf8_lossy(&text))
                .ok_or_else(|| {
                    Error::input_with_help(
                format!(
                    "{}: no vllm:cache_config_info with a block_size in this /metrics scrape",
                    scrape.display()
                ),
                "save a vLLM server's GET /metrics there, or give --engine vllm:block_size=N",
            )
                })?;
        return Ok(Some((geometry.block_size, scrape)));
    }
    Ok(None)
}

fn file_error(path: &Path, e: std::io::Error) -> Error {
    Error::input(format!("cannot write {}: {e}", path.display()))
}
