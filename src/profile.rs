//! Where a run spends its time, from `tracing` spans: the pipeline marks its stages, its
//! threads and its timeline with spans of three targets, and this module's subscriber,
//! installed only when asked, turns them into the reports on stderr.
//!
//! - `PREFIXLINT_STAGE_TIMES=1`: the CPU time of each `check` stage ([`STAGE`] spans named
//!   after the stage), summed over threads, with the rendered bytes; each pipeline thread's
//!   wall, CPU and run-queue time ([`THREAD`] spans: `thread` with a `label`, `pool` for the
//!   rayon pool); the logged messages `audit` and `simulate` took over or parsed.
//!   `bench/compare.sh`, `bench/targets.py` read it.
//! - `PREFIXLINT_TIMELINE=1`: each [`TIMELINE`] span's wall interval on its thread and the
//!   CPU time spent in it (`bench/timeline.py` reads it).
//!
//! Without either, no subscriber is installed and a span is a disabled callsite: one relaxed
//! load, its fields not evaluated.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;
use tracing::span::{Attributes, Id};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// The target of the spans that time a `check` stage (named `parse`, `samples`, `render`,
/// `tokenize`, `analyse`, `rules`, `report`) and of the events that count what they did.
pub const STAGE: &str = "prefixlint::stage";
/// The target of the spans that clock a pipeline thread (`thread`, with a `label`) or the
/// rayon pool (`pool`).
pub const THREAD: &str = "prefixlint::thread";
/// The target of the timeline's spans (named by what the thread does).
pub const TIMELINE: &str = "prefixlint::timeline";

/// The stages, in report order.
const STAGES: [&str; 7] = [
    "parse", "samples", "render", "tokenize", "analyse", "rules", "report",
];

/// What the environment asked for: (stage times, timeline).
fn asked() -> (bool, bool) {
    static ASKED: OnceLock<(bool, bool)> = OnceLock::new();
    *ASKED.get_or_init(|| {
        let on = |name: &str| std::env::var_os(name).is_some_and(|v| v == "1");
        (on("PREFIXLINT_STAGE_TIMES"), on("PREFIXLINT_TIMELINE"))
    })
}

/// Installs the subscriber when `PREFIXLINT_STAGE_TIMES=1` or `PREFIXLINT_TIMELINE=1` asks
/// for one (call first thing: the timeline's times start here). Once per process; a process
/// that has another global subscriber keeps it.
pub fn install() {
    let (stages, timeline) = asked();
    if !(stages || timeline) {
        return;
    }
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        origin();
        let subscriber = tracing_subscriber::registry().with(Profiler { stages, timeline });
        let _ = tracing::subscriber::set_global_default(subscriber);
    });
}

/// Totals the subscriber keeps (drained by the reports).
static STAGE_NANOS: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];
static RENDERED_BYTES: AtomicU64 = AtomicU64::new(0);
/// Logged messages [taken over from the session's previous request, parsed].
static LOGGED_MESSAGES: [AtomicU64; 2] = [const { AtomicU64::new(0) }; 2];
static THREADS: Mutex<Vec<ThreadTime>> = Mutex::new(Vec::new());
static TIMELINE_SPANS: Mutex<Vec<TimelineSpan>> = Mutex::new(Vec::new());

/// A pipeline thread's time over a run (`audit`, `simulate`): what it spent on a core, waiting
/// for one (the machine's load), and neither (waiting for work: for the stage before it, or
/// blocked on the pool). The last is what a quiet machine's idle cores are made of, and it
/// does not grow with the load as the wall time does.
#[derive(Debug, Clone)]
struct ThreadTime {
    label: String,
    wall_nanos: u64,
    cpu_nanos: u64,
    runqueue_nanos: u64,
}

struct TimelineSpan {
    thread: usize,
    label: &'static str,
    start_us: u64,
    end_us: u64,
    cpu_us: u64,
}

/// The subscriber's one layer: it reads the three targets' spans and the stage events.
struct Profiler {
    stages: bool,
    timeline: bool,
}

/// What a span holds from its entry to its exit.
struct Entered {
    wall: Instant,
    /// This thread's CPU and run-queue nanoseconds (`/proc/thread-self/schedstat`; the
    /// run-queue time only for thread clocks).
    clock: (u64, u64),
    /// Every pool thread's, for a `pool` span.
    pool: Vec<(u64, u64)>,
}

/// A `thread` span's `label`.
struct Label(String);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Profiler {
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        match meta.target() {
            STAGE | THREAD if self.stages => Interest::always(),
            TIMELINE if self.timeline => Interest::always(),
            _ => Interest::never(),
        }
    }

    fn enabled(&self, meta: &Metadata<'_>, _: Context<'_, S>) -> bool {
        match meta.target() {
            STAGE | THREAD => self.stages,
            TIMELINE => self.timeline,
            _ => false,
        }
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().target() != THREAD {
            return;
        }
        let mut label = Fields::default();
        attrs.record(&mut label);
        if let (Some(span), Some(text)) = (ctx.span(id), label.label) {
            span.extensions_mut().insert(Label(text));
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let meta = span.metadata();
        let (clock, pool) = match (meta.target(), meta.name()) {
            (THREAD, "pool") => ((0, 0), rayon::broadcast(|_| schedstat())),
            (THREAD, _) => (schedstat(), Vec::new()),
            _ => ((thread_cpu_nanos(), 0), Vec::new()),
        };
        span.extensions_mut().insert(Entered {
            wall: Instant::now(),
            clock,
            pool,
        });
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let meta = span.metadata();
        let Some(entered) = span.extensions_mut().remove::<Entered>() else {
            return;
        };
        match meta.target() {
            STAGE => {
                if let Some(i) = STAGES.iter().position(|&s| s == meta.name()) {
                    let spent = thread_cpu_nanos().saturating_sub(entered.clock.0);
                    STAGE_NANOS[i].fetch_add(spent, Ordering::Relaxed);
                }
            }
            THREAD if meta.name() == "pool" => {
                let wall = entered.wall.elapsed().as_nanos() as u64;
                let now = rayon::broadcast(|_| schedstat());
                let mut threads = lock(&THREADS);
                for (i, (end, start)) in now.iter().zip(&entered.pool).enumerate() {
                    threads.push(ThreadTime {
                        label: format!("pool {i}"),
                        wall_nanos: wall,
                        cpu_nanos: end.0.saturating_sub(start.0),
                        runqueue_nanos: end.1.saturating_sub(start.1),
                    });
                }
            }
            THREAD => {
                let (cpu, runqueue) = schedstat();
                let label = span.extensions_mut().remove::<Label>();
                lock(&THREADS).push(ThreadTime {
                    label: label.map(|l| l.0).unwrap_or_default(),
                    wall_nanos: entered.wall.elapsed().as_nanos() as u64,
                    cpu_nanos: cpu.saturating_sub(entered.clock.0),
                    runqueue_nanos: runqueue.saturating_sub(entered.clock.1),
                });
            }
            TIMELINE => {
                let origin = origin();
                lock(&TIMELINE_SPANS).push(TimelineSpan {
                    thread: thread_number(),
                    label: meta.name(),
                    start_us: entered.wall.saturating_duration_since(origin).as_micros() as u64,
                    end_us: origin.elapsed().as_micros() as u64,
                    cpu_us: thread_cpu_nanos().saturating_sub(entered.clock.0) / 1000,
                });
            }
            _ => {}
        }
    }

    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() != STAGE {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        let add = |counter: &AtomicU64, n: Option<u64>| {
            if let Some(n) = n {
                counter.fetch_add(n, Ordering::Relaxed);
            }
        };
        add(&RENDERED_BYTES, fields.rendered_bytes);
        add(&LOGGED_MESSAGES[0], fields.taken_over);
        add(&LOGGED_MESSAGES[1], fields.parsed);
    }
}

/// The fields the profiler reads from spans and events.
#[derive(Default)]
struct Fields {
    label: Option<String>,
    rendered_bytes: Option<u64>,
    taken_over: Option<u64>,
    parsed: Option<u64>,
}

impl tracing::field::Visit for Fields {
    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        match field.name() {
            "rendered_bytes" => self.rendered_bytes = Some(value),
            "taken_over" => self.taken_over = Some(value),
            "parsed" => self.parsed = Some(value),
            _ => {}
        }
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "label" {
            self.label = Some(value.to_owned());
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "label" {
            self.label = Some(format!("{value:?}"));
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

fn thread_number() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static NUMBER: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    NUMBER.with(|n| *n)
}

/// The stage totals as one line per stage, with the process's own CPU time for comparison
/// (the rest: start-up, the tokenizer's load, discovery); `None` unless
/// `PREFIXLINT_STAGE_TIMES=1`.
pub fn stage_summary() -> Option<String> {
    if !asked().0 {
        return None;
    }
    let nanos = STAGE_NANOS.each_ref().map(|n| n.swap(0, Ordering::Relaxed));
    let total: u64 = nanos.iter().sum();
    let mut out = String::from("stage times (CPU seconds, summed over threads):\n");
    for (name, nanos) in STAGES.iter().zip(nanos) {
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
        RENDERED_BYTES.swap(0, Ordering::Relaxed)
    ));
    Some(out)
}

/// How many logged messages were taken over and parsed, one line; `None` unless
/// `PREFIXLINT_STAGE_TIMES=1`.
pub fn logged_messages_summary() -> Option<String> {
    if !asked().0 {
        return None;
    }
    let [taken, parsed] = LOGGED_MESSAGES
        .each_ref()
        .map(|n| n.swap(0, Ordering::Relaxed));
    let share = 100.0 * taken as f64 / (taken + parsed).max(1) as f64;
    Some(format!(
        "logged messages kept as text: {taken} taken over from the session's previous request ({share:.1}%), {parsed} parsed\n"
    ))
}

/// The threads' times as lines, in the order their clocks stopped; `None` unless
/// `PREFIXLINT_STAGE_TIMES=1`, or when nothing was clocked.
pub fn threads_report() -> Option<String> {
    if !asked().0 {
        return None;
    }
    let threads = std::mem::take(&mut *lock(&THREADS));
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

/// The timeline's spans as lines `timeline THREAD LABEL START_US END_US CPU_US`, in start
/// order, and the run's end; `None` unless `PREFIXLINT_TIMELINE=1`.
pub fn timeline_report() -> Option<String> {
    if !asked().1 {
        return None;
    }
    let end = origin().elapsed().as_micros();
    let mut spans = std::mem::take(&mut *lock(&TIMELINE_SPANS));
    spans.sort_by_key(|s| (s.start_us, s.thread));
    let mut out = String::new();
    for s in &spans {
        out.push_str(&format!(
            "timeline {} {} {} {} {}\n",
            s.thread, s.label, s.start_us, s.end_us, s.cpu_us
        ));
    }
    out.push_str(&format!("timeline end {end}\n"));
    Some(out)
}

/// This thread's CPU and run-queue nanoseconds so far (`/proc/thread-self/schedstat`; the
/// thread's CPU clock and no run-queue time where it cannot be read).
fn schedstat() -> (u64, u64) {
    let read = || {
        let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
        let mut fields = text.split_whitespace().map(|f| f.parse::<u64>().ok());
        Some((fields.next()??, fields.next()??))
    };
    read().unwrap_or_else(|| (thread_cpu_nanos(), 0))
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
fn thread_cpu_nanos() -> u64 {
    clock_nanos(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(0)
}

#[cfg(unix)]
fn process_cpu_nanos() -> Option<u64> {
    clock_nanos(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// Elsewhere, wall time per thread stands in for CPU time.
#[cfg(not(unix))]
fn thread_cpu_nanos() -> u64 {
    origin().elapsed().as_nanos() as u64
}

#[cfg(not(unix))]
fn process_cpu_nanos() -> Option<u64> {
    None
}
