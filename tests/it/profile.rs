//! `PREFIXLINT_STAGE_TIMES=1` and `PREFIXLINT_TIMELINE=1`: the pipeline's `tracing` spans
//! through the profile subscriber, in the shapes `bench/compare.sh`, `bench/targets.py` and
//! `bench/timeline.py` read, and the report left as it is.

use crate::support;

use support::*;

const CHECK: [&str; 6] = [
    "check",
    "fixtures/prompts",
    "--no-config",
    "--no-cache",
    "--format",
    "json",
];

/// A line's number after `prefix` (the first such line).
fn figure(stderr: &str, prefix: &str) -> f64 {
    stderr
        .lines()
        .find_map(|line| line.trim().strip_prefix(prefix))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no `{prefix}` line: {stderr}"))
}

#[test]
fn stage_times_count_each_stage_and_the_threads() {
    let plain = run(prefixlint().args(CHECK));
    let timed = run(prefixlint().args(CHECK).env("PREFIXLINT_STAGE_TIMES", "1"));
    assert_eq!((timed.code, &timed.stdout), (plain.code, &plain.stdout));
    assert!(!plain.stderr.contains("stage times"), "{}", plain.stderr);
    // The stages that render and tokenize every sample took time; the totals add up.
    let stages = [
        "parse", "samples", "render", "tokenize", "analyse", "rules", "report",
    ];
    let seconds: Vec<f64> = stages
        .iter()
        .map(|s| figure(&timed.stderr, &format!("stage {s} ")))
        .collect();
    assert!(seconds[2] > 0.0 && seconds[3] > 0.0, "{}", timed.stderr);
    let total = figure(&timed.stderr, "stages total ");
    assert!((seconds.iter().sum::<f64>() - total).abs() < 0.001 * stages.len() as f64);
    assert!(total <= figure(&timed.stderr, "process cpu "));
    assert!(figure(&timed.stderr, "rendered bytes ") > 0.0);

    // `audit`: each pipeline thread and every pool thread, and the logged messages.
    let audit = [
        "audit",
        "fixtures/audit/requests.jsonl",
        "--no-config",
        "--format",
        "json",
        "--fail-on",
        "never",
    ];
    let plain = run(prefixlint().args(audit));
    let timed = run(prefixlint().args(audit).env("PREFIXLINT_STAGE_TIMES", "1"));
    assert_eq!((timed.code, &timed.stdout), (plain.code, &plain.stdout));
    for thread in [
        "read lines",
        "audit parse",
        "audit prepare",
        "audit flush",
        "pool 0",
    ] {
        assert!(
            timed.stderr.contains(&format!("  thread {thread} ")),
            "{thread}: {}",
            timed.stderr
        );
    }
    assert!(
        timed.stderr.contains("logged messages kept as text: "),
        "{}",
        timed.stderr
    );
}

#[test]
fn the_timeline_places_each_span_on_its_thread() {
    let plain = run(prefixlint().args(CHECK));
    let traced = run(prefixlint().args(CHECK).env("PREFIXLINT_TIMELINE", "1"));
    assert_eq!((traced.code, &traced.stdout), (plain.code, &plain.stdout));
    let lines: Vec<Vec<&str>> = traced
        .stderr
        .lines()
        .filter(|l| l.starts_with("timeline "))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let end: u64 = lines
        .iter()
        .find(|l| l[1] == "end")
        .and_then(|l| l[2].parse().ok())
        .expect("a `timeline end` line");
    let mut labels = Vec::new();
    let mut last_start = 0;
    for l in lines.iter().filter(|l| l[1] != "end") {
        // `timeline THREAD LABEL START_US END_US CPU_US`, in start order.
        let n = l.len();
        let [start, stop]: [u64; 2] = [l[n - 3].parse().unwrap(), l[n - 2].parse().unwrap()];
        assert!(l[1].parse::<usize>().is_ok(), "{l:?}");
        assert!(start <= stop && stop <= end && start >= last_start, "{l:?}");
        last_start = start;
        labels.push(l[2..n - 3].join(" "));
    }
    for label in ["discover", "check", "report"] {
        assert!(labels.iter().any(|l| l == label), "{label}: {labels:?}");
    }
    // The stage times are not asked for.
    assert!(!traced.stderr.contains("stage times"), "{}", traced.stderr);
}
