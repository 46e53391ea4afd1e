//! `PREFIXLINT_STAGE_TIMES=1`: where a `check` run spends its CPU time, per pipeline stage,
//! summed over the worker threads and printed to stderr at the end (`bench/compare.sh`
//! reads it). Off, a stage costs one relaxed load; on, two clock reads per timed call.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The stages of the `check` pipeline that are timed.
#[derive(Debug, Clone, Copy)]
pub enum Stage {
    /// Reading and parsing a template (plain and instrumented forms).
    Parse,
    /// Loading its samples file, or synthesizing samples, with their stand-ins.
    Samples,
    /// Rendering it over its samples.
    Render,
    /// Tokenizing the renders.
    Tokenize,
    /// The token figures: shared prefix, divergence, sites.
    Analyse,
    /// The rules and the template's report.
    Rules,
    /// Writing the report (main thread).
    Report,
}

const STAGES: [(Stage, &str); 7] = [
    (Stage::Parse, "parse"),
    (Stage::Samples, "samples"),
    (Stage::Render, "render"),
    (Stage::Tokenize, "tokenize"),
    (Stage::Analyse, "analyse"),
    (Stage::Rules, "rules"),
    (Stage::Report, "report"),
];

static NANOS: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];
static RENDERED_BYTES: AtomicU64 = AtomicU64::new(0);

/// Whether `PREFIXLINT_STAGE_TIMES=1` asked for the stage times.
pub fn enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| std::env::var_os("PREFIXLINT_STAGE_TIMES").is_some_and(|v| v == "1"))
}

/// Runs `work`, adding the CPU time this thread spent in it to `stage`.
pub fn time<T>(stage: Stage, work: impl FnOnce() -> T) -> T {
    if !enabled() {
        return work();
    }
    let start = thread_cpu_nanos();
    let out = work();
    let spent = thread_cpu_nanos().saturating_sub(start);
    NANOS[stage as usize].fetch_add(spent, Ordering::Relaxed);
    out
}

/// Counts rendered text (for the MB/s figure).
pub fn add_rendered_bytes(bytes: usize) {
    if enabled() {
        RENDERED_BYTES.fetch_add(bytes as u64, Ordering::Relaxed);
    }
}

/// Logged messages kept as text by `audit`'s and `simulate`'s parse: [taken over from the
/// session's previous request, parsed].
static LOGGED_MESSAGES: [AtomicU64; 2] = [const { AtomicU64::new(0) }; 2];

/// Counts a request's logged messages: taken over from the session's previous request, and
/// parsed (`audit::raw_messages`).
pub fn count_logged_messages(taken_over: usize, parsed: usize) {
    if enabled() {
        LOGGED_MESSAGES[0].fetch_add(taken_over as u64, Ordering::Relaxed);
        LOGGED_MESSAGES[1].fetch_add(parsed as u64, Ordering::Relaxed);
    }
}

/// How many logged messages were taken over and parsed, one line; `None` when not enabled.
pub fn logged_messages_summary() -> Option<String> {
    if !enabled() {
        return None;
    }
    let [taken, parsed] = LOGGED_MESSAGES
        .each_ref()
        .map(|n| n.load(Ordering::Relaxed));
    let share = 100.0 * taken as f64 / (taken + parsed).max(1) as f64;
    Some(format!(
        "logged messages kept as text: {taken} taken over from the session's previous request ({share:.1}%), {parsed} parsed\n"
    ))
}

/// The totals as one line per stage, with the process's own CPU time for comparison
/// (the rest: start-up, the tokenizer's load, discovery); `None` when not enabled.
pub fn summary() -> Option<String> {
    if !enabled() {
        return None;
    }
    let total: u64 = NANOS.iter().map(|n| n.load(Ordering::Relaxed)).sum();
    let mut out = String::from("stage times (CPU seconds, summed over threads):\n");
    for (stage, name) in STAGES {
        let nanos = NANOS[stage as usize].load(Ordering::Relaxed);
        let share = if total == 0 {
            0.0
        } else {
            100.0 * nanos as f64 / total as f64
        };
        out.push_str(&format!(
            "  stage {name} {:.4} s {share:.1}%\n",
            nanos as f64 / 1e9
        ));
    }
    out.push_str(&format!("  stages total {:.4} s\n", total as f64 / 1e9));
    if let Some(process) = process_cpu_nanos() {
        out.push_str(&format!("  process cpu {:.4} s\n", process as f64 / 1e9));
    }
    out.push_str(&format!(
        "  rendered bytes {}\n",
        RENDERED_BYTES.load(Ordering::Relaxed)
    ));
    Some(out)
}

#[cfg(unix)]
fn clock_nanos(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let ok = unsafe { libc::clock_gettime(clock, &mut ts) } == 0;
    ok.then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

#[cfg(unix)]
pub(crate) fn thread_cpu_nanos() -> u64 {
    clock_nanos(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(0)
}

#[cfg(unix)]
fn process_cpu_nanos() -> Option<u64> {
    clock_nanos(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// Elsewhere, wall time per thread stands in for CPU time.
#[cfg(not(unix))]
pub(crate) fn thread_cpu_nanos() -> u64 {
    static START: OnceLock<std::time::Instant> = OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
}

#[cfg(not(unix))]
fn process_cpu_nanos() -> Option<u64> {
    None
}
