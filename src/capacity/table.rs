//! The terminal report: the inputs, a table with one row per context, and a bar chart.

use super::units::{both, decimal, group};
use super::{CapacityReport, WeightsSource};
use std::fmt::Write;

const BAR_WIDTH: u128 = 40;
const EIGHTHS: [&str; 8] = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"];

pub fn render(report: &CapacityReport) -> String {
    let mut out = String::new();
    let model = &report.model;
    let memory = &report.memory;
    let _ = writeln!(out, "KV cache capacity · {}", model.source);
    let _ = writeln!(
        out,
        "  model    {} layers × {} KV heads × head_dim {} · {} KV, {} per value",
        model.layers,
        model.kv_heads,
        model.head_dim,
        model.kv_dtype.name(),
        model.kv_dtype.bytes_per_value()
    );
    let _ = writeln!(
        out,
        "           {} B per token ({}) · blocks of {} tokens, {} B each",
        group(report.kv_bytes_per_token),
        both(report.kv_bytes_per_token),
        report.block_size,
        group(report.kv_bytes_per_block)
    );
    if let Some(window) = model.sliding_window {
        let full = match model.full_attention_layers {
            0 => String::new(),
            n => format!("; {n} full-attention layers keep the whole context"),
        };
        let _ = writeln!(
            out,
            "           {} sliding-window layers keep at most {} tokens{full}",
            model.sliding_window_layers,
            group(window as u128),
        );
    }
    let weights = match &memory.weights {
        WeightsSource::Flag => "--weights".to_owned(),
        WeightsSource::Params {
            params,
            bytes_per_param,
        } => format!(
            "{} params × {bytes_per_param} bytes",
            group(*params as u128)
        ),
        WeightsSource::Safetensors { files } => {
            format!(
                "{files} *.safetensors file{}",
                if *files == 1 { "" } else { "s" }
            )
        }
    };
    let _ = writeln!(
        out,
        "  memory   {} GPU − {} weights ({weights}) − {} overhead",
        decimal(memory.gpu_bytes as u128),
        decimal(memory.weights_bytes as u128),
        decimal(memory.overhead_bytes as u128),
    );
    let _ = writeln!(
        out,
        "           = {} B ({}) for the KV cache: {} blocks, {} tokens",
        group(memory.available_bytes as u128),
        both(memory.available_bytes as u128),
        group(report.blocks),
        group(report.token_capacity)
    );
    if let Some(server) = &report.server {
        let detail = match (
            server.num_gpu_blocks,
            server.block_size,
            server.slots,
            server.n_ctx_per_slot,
        ) {
            (Some(blocks), Some(block), _, _) => {
                format!("{} blocks × {block} tokens", group(blocks as u128))
            }
            (_, _, Some(slots), Some(n_ctx)) => format!(
                "{slots} slot{} × {} tokens",
                if slots == 1 { "" } else { "s" },
                group(n_ctx as u128)
            ),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "  server   {} ({}): {detail} = {} tokens; computed here: {} tokens{}",
            server.url,
            server.engine,
            group(server.token_capacity),
            group(server.computed_token_capacity),
            percent(server.token_capacity, server.computed_token_capacity)
                .map(|p| format!(" (server = {p} of computed)"))
                .unwrap_or_default()
        );
        for note in &server.notes {
            let _ = writeln!(out, "           {note}");
        }
    }
    out.push('\n');
    out.push_str(&table(report));
    out.push('\n');
    out.push_str(&chart(report));
    out.push('\n');
    let _ = writeln!(
        out,
        "  requests = floor(available / bytes per request): a request that does not fit does not run."
    );
    let _ = writeln!(out, "  GB = 10^9 bytes, GiB = 2^30 bytes.");
    for note in &report.notes {
        let _ = writeln!(out, "  note: {note}");
    }
    out
}

fn percent(part: u128, whole: u128) -> Option<String> {
    (whole > 0).then(|| {
        let tenths = (part * 1000 + whole / 2) / whole;
        format!("{}.{}%", tenths / 10, tenths % 10)
    })
}

fn table(report: &CapacityReport) -> String {
    let templates = report.rows.iter().any(|r| r.template.is_some());
    let shared = report.rows.iter().any(|r| r.shared_prefix_tokens > 0);
    let mut headers = Vec::new();
    if templates {
        headers.push("template");
    }
    headers.extend([
        "context",
        "bytes per request",
        "",
        "requests",
        "tokens in cache",
    ]);
    if shared {
        headers.extend(["shared prefix", "requests with prefix caching", "gain"]);
    }
    let mut rows: Vec<Vec<String>> = Vec::new();
    for row in &report.rows {
        let mut cells = Vec::new();
        if templates {
            cells.push(row.template.clone().unwrap_or_default());
        }
        cells.push(group(row.context as u128));
        cells.push(format!("{} B", group(row.bytes_per_request)));
        cells.push(both(row.bytes_per_request));
        cells.push(group(row.concurrency));
        cells.push(group(row.tokens_in_cache));
        if shared {
            cells.push(group(row.shared_prefix_tokens as u128));
            cells.push(group(row.concurrency_with_shared_prefix));
            cells.push(match percent(row.concurrency_gain, row.concurrency) {
                Some(p) if row.concurrency_gain > 0 => {
                    format!("+{} (+{p})", group(row.concurrency_gain))
                }
                _ => format!("+{}", group(row.concurrency_gain)),
            });
        }
        rows.push(cells);
    }
    let widths: Vec<usize> = (0..headers.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([headers[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    let line = |cells: &[String], out: &mut String| {
        out.push_str("  ");
        let mut parts = Vec::new();
        for (i, cell) in cells.iter().enumerate() {
            // The template column reads left to right; numbers line up on the right.
            if templates && i == 0 {
                parts.push(format!("{cell:<width$}", width = widths[i]));
            } else {
                parts.push(format!("{cell:>width$}", width = widths[i]));
            }
        }
        out.push_str(parts.join("  ").trim_end());
        out.push('\n');
    };
    let header_cells: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
    line(&header_cells, &mut out);
    let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
    line(&rule, &mut out);
    for row in &rows {
        line(row, &mut out);
    }
    out
}

/// Requests that fit, as unicode bars scaled to the largest row.
fn chart(report: &CapacityReport) -> String {
    let shared = report.rows.iter().any(|r| r.concurrency_gain > 0);
    let max = report
        .rows
        .iter()
        .map(|r| r.concurrency_with_shared_prefix.max(r.concurrency))
        .max()
        .unwrap_or(0);
    let label = |row: &super::Row| match &row.template {
        Some(path) => format!("{path} ({})", group(row.context as u128)),
        None => group(row.context as u128),
    };
    let width = report
        .rows
        .iter()
        .map(|r| label(r).chars().count())
        .max()
        .unwrap_or(0)
        .max(if shared {
            "  + prefix caching".len()
        } else {
            0
        });
    let templates = report.rows.iter().any(|r| r.template.is_some());
    let mut out = String::from("  requests that fit\n");
    for row in &report.rows {
        // Numbers line up on the right; template paths read from the left.
        let shown = if templates {
            format!("{:<width$}", label(row))
        } else {
            format!("{:>width$}", label(row))
        };
        let _ = writeln!(
            out,
            "  {shown}  {} {}",
            bar(row.concurrency, max),
            group(row.concurrency)
        );
        if row.concurrency_gain > 0 {
            let _ = writeln!(
                out,
                "  {:>width$}  {} {}",
                "+ prefix caching",
                bar(row.concurrency_with_shared_prefix, max),
                group(row.concurrency_with_shared_prefix)
            );
        }
    }
    out
}

fn bar(value: u128, max: u128) -> String {
    if max == 0 {
        return String::new();
    }
    let eighths = value * BAR_WIDTH * 8 / max;
    let mut out = "█".repeat((eighths / 8) as usize);
    out.push_str(EIGHTHS[(eighths % 8) as usize]);
    if out.is_empty() && value > 0 {
        out.push('▏');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_scale_in_eighths() {
        assert_eq!(bar(111, 111).chars().count(), 40);
        assert_eq!(bar(0, 111), "");
        assert_eq!(bar(1, 1000), "▏");
        assert_eq!(bar(27, 111), "█████████▋");
    }
}
