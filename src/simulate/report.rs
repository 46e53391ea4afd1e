//! The report, written as the replay goes: `full` (a line per request with what was not
//! cached and why, then the summary; with a sweep, one line per setting) or `json` (the
//! contract: `requests[{line, session, prompt_tokens, predicted_cached_tokens, uncached:
//! [{tokens, reason}]}]`, `summary{requests, prompt_tokens, predicted_cached_tokens,
//! hit_rate, evicted_blocks, peak_running}`; with a sweep, `rows[{setting…, summary}]`).

use super::fleet::{Outcome, Summary};
use super::plot::{Axis, Curve};
use super::prepare::NotSimulated;
use super::{Head, Read, Row, Setting};
use crate::capacity::units;
use std::io::{self, Write};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SimulateFormat {
    Full,
    Json,
}

pub struct Writer<W: Write> {
    out: W,
    format: SimulateFormat,
    sweep: bool,
    first: bool,
    failures: Vec<NotSimulated>,
    shape: Shape,
    block_size: usize,
    trace: bool,
}

/// What the full report says besides the rows: the notes that depend on the flags.
#[derive(Debug, Clone, Copy, Default)]
pub struct Shape {
    /// Replayed at the logged times (no `--rate`, no `--sequential`): same-second arrivals
    /// deserve a note.
    pub at_logged_times: bool,
    /// Print the sweep's curve as a table (a kv-blocks sweep, a `--plot`, a trace).
    pub curve_table: bool,
    pub replicas_swept: bool,
}

const KEPT_FAILURES: usize = 20;

impl<W: Write> Writer<W> {
    pub fn start(
        mut out: W,
        format: SimulateFormat,
        head: &Head,
        settings: &[Setting],
        sweep: bool,
        shape: Shape,
    ) -> io::Result<Writer<W>> {
        match format {
            SimulateFormat::Json => {
                let mut text = serde_json::to_string(head).expect("the head serializes");
                text.pop();
                out.write_all(text.as_bytes())?;
                if sweep {
                    out.write_all(b",\"rows\":[")?;
                } else {
                    let mut setting =
                        serde_json::to_string(&settings[0]).expect("a setting serializes");
                    setting.remove(0);
                    setting.pop();
                    write!(out, ",{setting},\"requests\":[")?;
                }
            }
            SimulateFormat::Full => {
                writeln!(
                    out,
                    "simulate: {} engine, blocks of {} tokens, router {}{}",
                    head.engine,
                    head.block_size,
                    serde_json::to_value(head.router)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    head.ttl.map(|t| format!(", TTL {t} s")).unwrap_or_default()
                )?;
                if let Some(trace) = &head.trace {
                    writeln!(
                        out,
                        "  {} block-hash trace, {} tokens a hash",
                        trace.format.name(),
                        trace.trace_block_size
                    )?;
                }
                if head.sequential {
                    writeln!(
                        out,
                        "  sequential: one request at a time in log order, each after the one before finished"
                    )?;
                }
                for s in settings {
                    let label = if s.label.is_empty() {
                        String::new()
                    } else {
                        format!("{}: ", s.label)
                    };
                    let blocks = s
                        .kv_source
                        .clone()
                        .unwrap_or_else(|| "no block limit".into());
                    writeln!(out, "  {label}{blocks}, {} replica(s)", s.replicas)?;
                }
                writeln!(out)?;
            }
        }
        Ok(Writer {
            out,
            format,
            sweep,
            first: true,
            failures: Vec::new(),
            shape,
            block_size: head.block_size,
            trace: head.trace.is_some(),
        })
    }

    pub fn request(&mut self, o: &Outcome) -> io::Result<()> {
        if self.sweep {
            return Ok(());
        }
        match self.format {
            SimulateFormat::Json => {
                if !self.first {
                    self.out.write_all(b",")?;
                }
                self.first = false;
                serde_json::to_writer(&mut self.out, o).map_err(io::Error::other)?;
            }
            SimulateFormat::Full => {
                let session = o
                    .session
                    .as_deref()
                    .map(|s| format!(" [{s}]"))
                    .unwrap_or_default();
                let rest: Vec<String> = o
                    .uncached
                    .iter()
                    .map(|u| {
                        let since = u
                            .evicted_since_blocks
                            .map(|b| {
                                format!(" ({} blocks evicted after it)", units::group(b as u128))
                            })
                            .unwrap_or_default();
                        format!(
                            "{} {}{since}",
                            units::group(u.tokens as u128),
                            u.reason.name()
                        )
                    })
                    .collect();
                let queued = if o.queued_seconds > 0.0 {
                    format!(", queued {:.1} s", o.queued_seconds)
                } else {
                    String::new()
                };
                let logged = o
                    .logged_cached_tokens
                    .map(|l| format!(" (logged: {})", units::group(l as u128)))
                    .unwrap_or_default();
                writeln!(
                    self.out,
                    "{}:{}{session}: {} of {} prompt tokens cached{logged}{}{queued}",
                    o.file,
                    o.line,
                    units::group(o.predicted_cached_tokens as u128),
                    units::group(o.prompt_tokens as u128),
                    if rest.is_empty() {
                        String::new()
                    } else {
                        format!("; not cached: {}", rest.join(", "))
                    }
                )?;
            }
        }
        Ok(())
    }

    pub fn not_simulated(&mut self, f: &NotSimulated) -> io::Result<()> {
        if self.format == SimulateFormat::Full && !self.sweep {
            writeln!(
                self.out,
                "{}:{}: not simulated: {}",
                f.file, f.line, f.reason
            )?;
        }
        if self.failures.len() < KEPT_FAILURES {
            self.failures.push(f.clone());
        }
        Ok(())
    }

    pub fn finish(mut self, rows: &[Row], read: &Read) -> io::Result<W> {
        match self.format {
            SimulateFormat::Json => {
                if self.sweep {
                    let rows = serde_json::to_string(rows).expect("rows serialize");
                    self.out.write_all(&rows.as_bytes()[1..rows.len() - 1])?;
                    self.out.write_all(b"]")?;
                } else {
                    self.out.write_all(b"],\"summary\":")?;
                    serde_json::to_writer(&mut self.out, &rows[0].summary)
                        .map_err(io::Error::other)?;
                }
                let extra = serde_json::json!({
                    "not_simulated": read.not_simulated,
                    "not_simulated_first": self.failures,
                    "skipped_lines": read.skipped.count,
                });
                let extra = extra.to_string();
                write!(self.out, ",{}", &extra[1..])?;
                writeln!(self.out)?;
            }
            SimulateFormat::Full => {
                if !self.sweep {
                    writeln!(self.out)?;
                    summary_lines(&mut self.out, &rows[0].summary)?;
                    if self.trace {
                        bound_line(&mut self.out, &rows[0].summary)?;
                    }
                } else {
                    for row in rows {
                        writeln!(self.out, "{}", sweep_line(row))?;
                    }
                    if self.shape.curve_table {
                        let curve = Curve::of(rows, self.block_size, self.shape.replicas_swept);
                        curve_table(&mut self.out, &curve)?;
                    }
                }
                if let Some(s) = rows.first().map(|r| &r.summary) {
                    if self.shape.at_logged_times && s.same_second_requests > 0 {
                        writeln!(
                            self.out,
                            "note: {} requests were logged in the same whole second as the request before them: the log's times cannot order them, so they were replayed as sent together; --rate N or --sequential replays them one after another",
                            units::group(s.same_second_requests as u128)
                        )?;
                    }
                }
                if read.not_simulated > 0 || read.skipped.count > 0 {
                    writeln!(
                        self.out,
                        "{} request(s) not simulated, {} line(s) skipped",
                        read.not_simulated, read.skipped.count
                    )?;
                }
            }
        }
        Ok(self.out)
    }
}

fn percent(rate: f64) -> String {
    format!("{:.0}%", rate * 100.0)
}

/// "gpu-memory=80GB: 71% of prompt tokens from cache (…)".
pub fn sweep_line(row: &Row) -> String {
    let s = &row.summary;
    let blocks = row
        .setting
        .kv_blocks
        .map(|b| format!("{} blocks, ", units::group(b as u128)))
        .unwrap_or_default();
    format!(
        "{}: {} of prompt tokens from cache ({}{} evicted, peak {} running)",
        row.setting.label,
        percent(s.hit_rate),
        blocks,
        units::group(s.evicted_blocks as u128),
        s.peak_running
    )
}

/// The infinite-cache bound beside the replay's hit rate.
fn bound_line(out: &mut impl Write, s: &Summary) -> io::Result<()> {
    if let Some(bound) = s.infinite_cache_hit_rate {
        let of = if bound > 0.0 {
            format!(", {:.0}% of the bound", s.hit_rate / bound * 100.0)
        } else {
            String::new()
        };
        writeln!(
            out,
            "infinite cache (unbounded memory, same order): {:.1}% of prompt tokens from cache; this replay {:.1}%{of}",
            bound * 100.0,
            s.hit_rate * 100.0
        )?;
    }
    Ok(())
}

/// The sweep's curve as a small table, x in order, with where it reaches 90% of the bound.
fn curve_table(out: &mut impl Write, curve: &Curve) -> io::Result<()> {
    writeln!(out)?;
    writeln!(out, "hit rate against {}:", curve.axis.label())?;
    let x_text = |x: f64| match curve.axis {
        Axis::Replicas => format!("{x:.0}"),
        _ => format!("{x:.2}"),
    };
    let width = curve
        .points
        .iter()
        .map(|p| p.label.len())
        .max()
        .unwrap_or(0)
        .max(7);
    writeln!(
        out,
        "  {:<width$}  {:>12}  {:>8}  {:>8}",
        "setting",
        match curve.axis {
            Axis::Memory => "GB",
            Axis::Tokens => "k tokens",
            Axis::Replicas => "replicas",
        },
        "hit rate",
        "of bound"
    )?;
    for p in &curve.points {
        let of = curve
            .bound
            .filter(|b| *b > 0.0)
            .map(|b| format!("{:.0}%", p.hit_rate / b * 100.0))
            .unwrap_or_else(|| "-".into());
        writeln!(
            out,
            "  {:<width$}  {:>12}  {:>7.1}%  {:>8}",
            p.label,
            x_text(p.x),
            p.hit_rate * 100.0,
            of
        )?;
    }
    if let Some(bound) = curve.bound {
        writeln!(
            out,
            "  infinite cache: {:.1}%; 90% of it ({:.1}%) {}",
            bound * 100.0,
            bound * 90.0,
            match curve.reaches(0.9) {
                Some(x) if curve.axis != Axis::Replicas => format!(
                    "is reached at {} {} (between the two points around it, linearly)",
                    x_text(x),
                    match curve.axis {
                        Axis::Memory => "GB",
                        _ => "thousand tokens",
                    }
                ),
                Some(x) => format!("is reached at {} replicas", x_text(x)),
                None => "is not reached by these settings".to_string(),
            }
        )?;
    }
    Ok(())
}

fn summary_lines(out: &mut impl Write, s: &Summary) -> io::Result<()> {
    writeln!(
        out,
        "{} requests, {} prompt tokens, {} from cache ({})",
        units::group(s.requests as u128),
        units::group(s.prompt_tokens as u128),
        units::group(s.predicted_cached_tokens as u128),
        percent(s.hit_rate)
    )?;
    if !s.uncached_tokens_by_reason.is_empty() {
        let parts: Vec<String> = s
            .uncached_tokens_by_reason
            .iter()
            .map(|(reason, tokens)| format!("{} {reason}", units::group(*tokens as u128)))
            .collect();
        writeln!(out, "not cached: {}", parts.join(", "))?;
    }
    writeln!(
        out,
        "{} blocks evicted; peak {} requests running",
        units::group(s.evicted_blocks as u128),
        s.peak_running
    )?;
    if s.requests_with_logged_cache > 0 {
        writeln!(
            out,
            "the log's cached tokens: {} over {} requests; predicted exactly on {} of them",
            units::group(s.logged_cached_tokens as u128),
            s.requests_with_logged_cache,
            s.requests_predicted_as_logged
        )?;
    }
    if s.queued_requests > 0 {
        writeln!(
            out,
            "{} requests waited for free blocks (longest {:.1} s)",
            s.queued_requests, s.max_queued_seconds
        )?;
    }
    if s.too_large > 0 {
        writeln!(
            out,
            "{} requests larger than a replica's whole cache were not replayed",
            s.too_large
        )?;
    }
    Ok(())
}
