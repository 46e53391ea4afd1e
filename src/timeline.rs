//! `PREFIXLINT_TIMELINE=1`: when each thread of a `check` run was busy with what, printed to
//! stderr at the end (`bench/timeline.py` reads it and says where a core sat idle). Each
//! span has its wall interval, in microseconds since the run started, and the CPU time its
//! thread spent in it, so a span that waited for a core under load shows as such. Off, a
//! span costs one relaxed load.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// Whether `PREFIXLINT_TIMELINE=1` asked for the timeline.
pub fn enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| std::env::var_os("PREFIXLINT_TIMELINE").is_some_and(|v| v == "1"))
}

struct Event {
    thread: usize,
    label: &'static str,
    start_us: u64,
    end_us: u64,
    cpu_us: u64,
}

static EVENTS: Mutex<Vec<Event>> = Mutex::new(Vec::new());

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// Starts the clock (call first thing in `main`): spans are placed relative to it.
pub fn start() {
    if enabled() {
        origin();
    }
}

fn thread_number() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static NUMBER: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    NUMBER.with(|n| *n)
}

/// A span of work on this thread, recorded when dropped.
pub struct Span {
    label: &'static str,
    started: Option<(Instant, u64)>,
}

/// Marks the work from now until the returned guard is dropped as `label` on this thread.
pub fn span(label: &'static str) -> Span {
    Span {
        label,
        started: enabled().then(|| (Instant::now(), crate::stage_times::thread_cpu_nanos())),
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        let Some((start, cpu)) = self.started else {
            return;
        };
        let origin = origin();
        let event = Event {
            thread: thread_number(),
            label: self.label,
            start_us: start.saturating_duration_since(origin).as_micros() as u64,
            end_us: origin.elapsed().as_micros() as u64,
            cpu_us: crate::stage_times::thread_cpu_nanos().saturating_sub(cpu) / 1000,
        };
        EVENTS.lock().unwrap_or_else(|e| e.into_inner()).push(event);
    }
}

/// The spans as lines `timeline THREAD LABEL START_US END_US CPU_US`, in start order, and
/// the run's end; `None` when not enabled.
pub fn report() -> Option<String> {
    if !enabled() {
        return None;
    }
    let end = origin().elapsed().as_micros();
    let mut events = std::mem::take(&mut *EVENTS.lock().unwrap_or_else(|e| e.into_inner()));
    events.sort_by_key(|e| (e.start_us, e.thread));
    let mut out = String::new();
    for e in &events {
        out.push_str(&format!(
            "timeline {} {} {} {} {}\n",
            e.thread, e.label, e.start_us, e.end_us, e.cpu_us
        ));
    }
    out.push_str(&format!("timeline end {end}\n"));
    Some(out)
}
