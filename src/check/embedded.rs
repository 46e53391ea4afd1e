//! Templates embedded in host files go through the pipeline as any template (their text,
//! their name `host#key`); this is the one place their results move to the host: every
//! finding's span, related place and error position becomes a host offset, and the
//! report quotes the host file, so no format and no rule needs to know.

use crate::config::Config;
use crate::discover::hosts::Embedded;
use crate::error::{Error, Result};
use crate::render::{Prepared, Renderer};
use crate::report::{EmbeddedRef, TemplateReport};
use crate::rules::VolatileFields;
use crate::samples::{self, Samples};
use crate::source;
use std::sync::Arc;

/// An embedded template's samples: synthesized (a host has no samples file of its own),
/// with the first render taking the values the host gives (a `.prompty` `sample:`). A
/// prompt-poet file is a template file: its samples file is beside it.
pub fn samples(
    host: &std::path::Path,
    embedded: &Embedded,
    renderer: &Renderer,
    template: &Prepared,
    fields: &VolatileFields,
    config: &Config,
) -> Result<Samples> {
    if embedded.template.kind == crate::host::HostKind::PromptPoet {
        return crate::request::load_samples(host, renderer, template, fields, config);
    }
    let shapes = samples::infer(renderer, template);
    let mut synthesized = samples::synthesize(&shapes, fields, config.synthesized_renders);
    if let (Some(sample), Some(first)) = (&embedded.sample, synthesized.contexts.first_mut()) {
        let mut context: indexmap::IndexMap<String, minijinja::Value> = indexmap::IndexMap::new();
        if let Ok(keys) = first.try_iter() {
            for key in keys {
                if let (Some(name), Ok(value)) = (key.as_str(), first.get_item(&key)) {
                    context.insert(name.to_owned(), value);
                }
            }
        }
        for (name, value) in sample {
            let value = samples::json_value(value)
                .unwrap_or_else(|| minijinja::Value::from(value.to_string()));
            context.insert(name.clone(), value);
        }
        *first = minijinja::Value::from_pairs(context);
    }
    Ok(synthesized)
}

/// What `templates[].embedded` says of a template.
pub fn reference(embedded: &Embedded) -> EmbeddedRef {
    let start = embedded.template.map.host_offset(0);
    EmbeddedRef {
        kind: embedded.template.kind.as_str().to_owned(),
        key: embedded.template.key.clone(),
        line: source::line_col(&embedded.host, start).0,
    }
}

/// Moves a report of an embedded template to its host: spans, related places in the
/// same template, and the quoted source.
pub fn to_host(
    mut report: TemplateReport,
    embedded: &Embedded,
    template_name: &str,
) -> TemplateReport {
    let map = &embedded.template.map;
    let host = &embedded.host;
    let display = report.path.clone();
    for finding in &mut report.findings {
        finding.span = map.host_offset(finding.span.start)..map.host_offset(finding.span.end);
        for label in &mut finding.related {
            if label.template != template_name {
                continue;
            }
            label.span = map.host_offset(label.span.start)..map.host_offset(label.span.end);
            let (line, column) = source::line_col(host, label.span.start);
            // The text starts with the template's `LINE:COLUMN: `; it becomes the host's.
            let rest = label
                .text
                .splitn(3, ':')
                .nth(2)
                .map(str::to_owned)
                .unwrap_or_else(|| label.text.clone());
            label.text = format!("{line}:{column}:{rest}");
            label.template = display.clone();
        }
    }
    report.source = Arc::clone(host);
    report.embedded = Some(reference(embedded));
    report
}

/// An error located in an embedded template's text, located in the host instead.
pub fn error_to_host(
    error: Error,
    embedded: &Embedded,
    template_name: &str,
    display: &str,
) -> Error {
    let Error::Located(located) = &error else {
        return error;
    };
    // The renderer names the template by its path under the render root, which ends in
    // the `#key` of its name.
    let source_name = located.src.name().to_owned();
    let suffix = format!("#{}", embedded.template.key);
    if source_name != template_name && !source_name.ends_with(&suffix) {
        return error;
    }
    let map = &embedded.template.map;
    let start = map.host_offset(located.span.offset());
    let end = map
        .host_offset(located.span.offset() + located.span.len())
        .max(start);
    let message = match located.message.strip_prefix(&format!("{source_name}: ")) {
        Some(rest) => format!("{display}: {rest} (in `{}`)", embedded.template.key),
        None => located.message.clone(),
    };
    Error::located(
        display,
        &embedded.host,
        start..end,
        message,
        located.label.clone(),
        located.help.clone(),
    )
}

/// Parses an embedded template's text under its name.
pub fn parse(embedded: &Embedded, name: &str, renderer: &mut Renderer) -> Result<Prepared> {
    tracing::info_span!(target: crate::profile::STAGE, "parse")
        .in_scope(|| renderer.prepare_as(name, &embedded.template.text, embedded.template.format))
}
