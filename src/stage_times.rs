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

/// A pipeline thread's time over a run (`audit`, `simulate`): what it spent on a core, waiting
/// for one (the machine's load), and neither (waiting for work: for the stage before it, or
/// blocked on the pool). The last is what a quiet machine's idle cores are made of, and it
/// does not grow with the load as the wall time does.
#[derive(Debug, Clone)]
pub struct ThreadTime {
    pub label: String,
    pub wall_nanos: u64,
    pub cpu_nanos: u64,
    pub runqueue_nanos: u64,
}

static THREADS: std::sync::Mutex<Vec<ThreadTime>> = std::sync::Mutex::new(Vec::new());

/// This thread's CPU and run-queue nanoseconds so far (`/proc/thread-self/schedstat`).
fn schedstat() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let mut fields = text.split_whitespace().map(|f| f.parse::<u64>().ok());
    Some((fields.next()??, fields.next()??))
}

/// The clock of one thread's part of a run: made where the part starts, read when dropped
/// (`None` unless `PREFIXLINT_STAGE_TIMES=1`).
pub struct ThreadClock {
    label: String,
    started: std::time::Instant,
    at_start: (u64, u64),
}

impl ThreadClock {
    pub fn start(label: impl Into<String>) -> Option<ThreadClock> {
        if !enabled() {
            return None;
        }
        Some(ThreadClock {
            label: label.into(),
            started: std::time::Instant::now(),
            at_start: schedstat().unwrap_or((thread_cpu_nanos(), 0)),
        })
    }
}

impl Drop for ThreadClock {
    fn drop(&mut self) {
        let (cpu, runqueue) = schedstat().unwrap_or((thread_cpu_nanos(), 0));
        let time = ThreadTime {
            label: std::mem::take(&mut self.label),
            wall_nanos: self.started.elapsed().as_nanos() as u64,
            cpu_nanos: cpu.saturating_sub(self.at_start.0),
            runqueue_nanos: runqueue.saturating_sub(self.at_start.1),
        };
        THREADS.lock().unwrap_or_else(|e| e.into_inner()).push(time);
    }
}

/// Clocks on every thread of the rayon pool, from now until the returned guard is dropped
/// (`None` unless enabled).
pub fn pool_clocks() -> Option<PoolClocks> {
    if !enabled() {
        return None;
    }
    let at_start = rayon::broadcast(|_| schedstat().unwrap_or((thread_cpu_nanos(), 0)));
    Some(PoolClocks {
        started: std::time::Instant::now(),
        at_start,
    })
}

pub struct PoolClocks {
    started: std::time::Instant,
    at_start: Vec<(u64, u64)>,
}

impl Drop for PoolClocks {
    fn drop(&mut self) {
        let wall = self.started.elapsed().as_nanos() as u64;
        let now = rayon::broadcast(|_| schedstat().unwrap_or((thread_cpu_nanos(), 0)));
        let mut threads = THREADS.lock().unwrap_or_else(|e| e.into_inner());
        for (i, (end, start)) in now.iter().zip(&self.at_start).enumerate() {
            threads.push(ThreadTime {
                label: format!("pool {i}"),
                wall_nanos: wall,
                cpu_nanos: end.0.saturating_sub(start.0),
                runqueue_nanos: end.1.saturating_sub(start.1),
            });
        }
    }
}

/// The threads' times as lines, in the order their clocks stopped; `None` when not enabled
/// or nothing was clocked.
pub fn threads_report() -> Option<String> {
    if !enabled() {
        return None;
    }
    let threads = std::mem::take(&mut *THREADS.lock().unwrap_or_else(|e| e.into_inner()));
    if threads.is_empty() {
        return None;
    }
    let seconds = |n: u64| n as f64 / 1e9;
    let mut out = String::from(
        "thread times (seconds: wall, on a core, waiting for a core, waiting for work):\n",
    );
    let mut waiting_for_work = 0;
    let mut cpu = 0;
    for t in &threads {
        let idle = t.wall_nanos.saturating_sub(t.cpu_nanos + t.runqueue_nanos);
        out.push_str(&format!(
            "  thread {} {:.3} {:.3} {:.3} {:.3}\n",
            t.label,
            seconds(t.wall_nanos),
            seconds(t.cpu_nanos),
            seconds(t.runqueue_nanos),
            seconds(idle)
        ));
        cpu += t.cpu_nanos;
        if t.label.starts_with("pool") {
            waiting_for_work += idle;
        }
    }
    out.push_str(&format!(
        "  threads cpu {:.3} s; the pool waited for work {:.3} s\n",
        seconds(cpu),
        seconds(waiting_for_work)
    ));
    Some(out)
}
