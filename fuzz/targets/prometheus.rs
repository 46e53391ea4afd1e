//! Arbitrary bytes as a `/metrics` scrape: the one Prometheus text parser and each reader on
//! top of it (`measure --metrics`, `measure --replica`'s counters, `capacity --server`).
//! No panic, and every sample read writes back to a line that reads as the same sample
//! (label escapes, `NaN`/`±Inf` and timestamps survive a round trip).

use prefixlint::capacity::server::parse_vllm_metrics;
use prefixlint::measure::fleet::metrics::cache_counters;
use prefixlint::measure::run::parse_prometheus;
use prefixlint::prometheus::{self, Sample};

pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let exposition = prometheus::parse(&text);
    for sample in &exposition.samples {
        let line = write(sample);
        let again = prometheus::parse_sample(&line)
            .unwrap_or_else(|| panic!("{line:?} (written from {sample:?}) does not read back"));
        assert!(same(sample, &again), "{sample:?} → {line:?} → {again:?}");
    }
    let _ = parse_prometheus(&text);
    let _ = cache_counters(&text);
    let _ = parse_vllm_metrics(&text);
}

/// A sample as the exposition format writes it.
fn write(sample: &Sample) -> String {
    let mut line = sample.name.clone();
    if !sample.labels.is_empty() {
        let labels: Vec<String> = sample
            .labels
            .iter()
            .map(|(key, value)| {
                let escaped = value
                    .replace('\\', "\\\\")
                    .replace('"', "\\\"")
                    .replace('\n', "\\n");
                format!("{key}=\"{escaped}\"")
            })
            .collect();
        line.push_str(&format!("{{{}}}", labels.join(",")));
    }
    line.push_str(&format!(" {}", sample.value));
    if let Some(timestamp) = sample.timestamp {
        line.push_str(&format!(" {timestamp}"));
    }
    line
}

fn same(a: &Sample, b: &Sample) -> bool {
    let value = a.value == b.value || (a.value.is_nan() && b.value.is_nan());
    a.name == b.name && a.labels == b.labels && value && a.timestamp == b.timestamp
}
