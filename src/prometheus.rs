//! The Prometheus text exposition format (what an inference server's `/metrics` prints), read
//! in one place for `measure --metrics`, `measure --replica` and `capacity --server`.
//!
//! A scrape is evidence, not input that must be valid: a line that is not a sample or a
//! known comment is counted in [`Exposition::skipped`] and the rest is still read. What a line
//! may carry, per the format: `name{label="value",…} value [timestamp]`, label values with the
//! escapes `\"`, `\\` and `\n`, values `NaN`, `+Inf` and `-Inf`, a millisecond timestamp,
//! `# HELP name text` (escapes `\\` and `\n`) and `# TYPE name kind`. OpenMetrics' `# EOF`
//! and the exemplar after a ` # ` are accepted and ignored.

use std::collections::BTreeMap;

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    /// In the order the line lists them.
    pub labels: Vec<(String, String)>,
    pub value: f64,
    /// Milliseconds since the epoch, when the line carries one.
    pub timestamp: Option<i64>,
}

impl Sample {
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// A `# TYPE` line's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricType {
    Counter,
    Gauge,
    Histogram,
    Summary,
    Untyped,
}

/// A whole scrape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exposition {
    pub samples: Vec<Sample>,
    /// `# TYPE` by family name.
    pub types: BTreeMap<String, MetricType>,
    /// `# HELP` by family name, unescaped.
    pub help: BTreeMap<String, String>,
    /// Lines that were neither blank, a comment nor a sample.
    pub skipped: usize,
}

impl Exposition {
    /// Every sample of the series `name` (exact, e.g. `vllm:prompt_tokens_total`).
    pub fn series<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples.iter().filter(move |s| s.name == name)
    }
}

/// Reads a whole exposition text.
pub fn parse(text: &str) -> Exposition {
    let mut out = Exposition::default();
    for line in text.lines() {
        let line = line.trim_matches([' ', '\t', '\r']);
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            read_comment(comment, &mut out);
            continue;
        }
        match parse_sample(line) {
            Some(sample) => out.samples.push(sample),
            None => out.skipped += 1,
        }
    }
    out
}

/// `# HELP`, `# TYPE`; any other comment is a comment.
fn read_comment(comment: &str, out: &mut Exposition) {
    let comment = comment.trim_start_matches([' ', '\t']);
    let (keyword, rest) = comment.split_once([' ', '\t']).unwrap_or((comment, ""));
    let rest = rest.trim_start_matches([' ', '\t']);
    let (name, text) = rest.split_once([' ', '\t']).unwrap_or((rest, ""));
    if name.is_empty() {
        return;
    }
    match keyword {
        "HELP" => {
            out.help.insert(name.to_owned(), unescape_help(text));
        }
        "TYPE" => {
            let kind = match text.trim() {
                "counter" => MetricType::Counter,
                "gauge" => MetricType::Gauge,
                "histogram" => MetricType::Histogram,
                "summary" => MetricType::Summary,
                _ => MetricType::Untyped,
            };
            out.types.insert(name.to_owned(), kind);
        }
        _ => {}
    }
}

fn unescape_help(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (c, chars.clone().next()) {
            ('\\', Some('n')) => {
                out.push('\n');
                chars.next();
            }
            ('\\', Some('\\')) => {
                out.push('\\');
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// One sample line; `None` when it is not one.
pub fn parse_sample(line: &str) -> Option<Sample> {
    let name_end = line.find(['{', ' ', '\t']).unwrap_or(line.len());
    let name = &line[..name_end];
    if !valid_name(name) {
        return None;
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(inner) = rest.strip_prefix('{') {
        let (parsed, after) = parse_labels(inner)?;
        labels = parsed;
        rest = after;
    }
    // The value must be separated from what precedes it.
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let mut fields = rest.split([' ', '\t']).filter(|f| !f.is_empty());
    let value = parse_value(fields.next()?)?;
    let timestamp = match fields.next() {
        None => None,
        // An OpenMetrics exemplar follows ` # `; it says nothing about this sample's value.
        Some("#") => None,
        Some(ts) => {
            let timestamp = parse_timestamp(ts)?;
            // Nothing but an exemplar may follow the timestamp.
            if fields.next().is_some_and(|f| f != "#") {
                return None;
            }
            Some(timestamp)
        }
    };
    Some(Sample {
        name: name.to_owned(),
        labels,
        value,
        timestamp,
    })
}

/// `[a-zA-Z_:][a-zA-Z0-9_:]*`.
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// A sample value: a Go float, with `NaN`, `+Inf`, `-Inf` (any case, `Inf` unsigned too).
fn parse_value(text: &str) -> Option<f64> {
    match text.to_ascii_lowercase().as_str() {
        "nan" => Some(f64::NAN),
        "+inf" | "inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        // Rust also reads `infinity`, which the format does not have.
        lower if lower.contains("inf") => None,
        _ => text.parse().ok(),
    }
}

/// Milliseconds, an integer; OpenMetrics writes seconds with a fraction, read as such.
fn parse_timestamp(text: &str) -> Option<i64> {
    if let Ok(ms) = text.parse::<i64>() {
        return Some(ms);
    }
    let seconds: f64 = text.parse().ok()?;
    let ms = seconds * 1000.0;
    (ms.is_finite() && ms.abs() < 9.0e18).then_some(ms as i64)
}

/// Reads `key="value",…}`; returns the labels and the text after the closing brace.
fn parse_labels(mut s: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut labels = Vec::new();
    loop {
        s = s.trim_start_matches([' ', '\t']);
        if let Some(after) = s.strip_prefix('}') {
            return Some((labels, after));
        }
        let eq = s.find('=')?;
        let key = s[..eq].trim_matches([' ', '\t']);
        if !valid_name(key) || key.contains(':') {
            return None;
        }
        s = s[eq + 1..]
            .trim_start_matches([' ', '\t'])
            .strip_prefix('"')?;
        let mut value = String::new();
        let mut chars = s.char_indices();
        let end = loop {
            let (i, c) = chars.next()?;
            match c {
                '\\' => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    '\\' => value.push('\\'),
                    '"' => value.push('"'),
                    // Not an escape the format has: kept as written.
                    other => {
                        value.push('\\');
                        value.push(other);
                    }
                },
                '"' => break i,
                c => value.push(c),
            }
        };
        labels.push((key.to_owned(), value));
        s = s[end + 1..].trim_start_matches([' ', '\t']);
        // Labels are separated by commas; a trailing one before `}` is allowed.
        if let Some(after) = s.strip_prefix(',') {
            s = after;
        } else if !s.starts_with('}') {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_with_labels_escapes_and_timestamps() {
        let text = "# HELP m A metric\\nwith \\\\ two lines\n# TYPE m counter\nm{a=\"1\",b=\"q\\\"uote, }\",c=\"back\\\\slash\",d=\"new\\nline\"} 2.5 1700000000000\nbare 3\n\nnot a sample\nh_bucket{le=\"+Inf\"} +Inf\nn NaN\nneg -Inf -5\n";
        let e = parse(text);
        assert_eq!(e.samples.len(), 5, "{e:#?}");
        assert_eq!(e.skipped, 1);
        let m = &e.samples[0];
        assert_eq!(
            m.labels,
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "q\"uote, }".into()),
                ("c".into(), "back\\slash".into()),
                ("d".into(), "new\nline".into()),
            ]
        );
        assert_eq!((m.value, m.timestamp), (2.5, Some(1_700_000_000_000)));
        assert_eq!(e.samples[1].name, "bare");
        assert_eq!(e.samples[1].timestamp, None);
        assert_eq!(e.samples[2].label("le"), Some("+Inf"));
        assert_eq!(e.samples[2].value, f64::INFINITY);
        assert!(e.samples[3].value.is_nan());
        assert_eq!(
            (e.samples[4].value, e.samples[4].timestamp),
            (f64::NEG_INFINITY, Some(-5))
        );
        assert_eq!(e.types["m"], MetricType::Counter);
        assert_eq!(e.help["m"], "A metric\nwith \\ two lines");
    }

    #[test]
    fn malformed_lines_are_skipped_not_misread() {
        for line in [
            "m{a=\"1\"",            // unterminated label set
            "m{a=1} 2",             // unquoted label value
            "m{a=\"1\" b=\"2\"} 3", // no comma between labels
            "m{1a=\"x\"} 2",        // bad label name
            "m{a=\"1\"}2",          // no space before the value
            "m 1 2x",               // a timestamp that is not one
            "m 1 2 3",              // a field after the timestamp
            "m infinity",           // not a value the format has
            "m",
            "9m 1",
            "m 1.2.3",
        ] {
            assert_eq!(parse_sample(line), None, "{line}");
        }
        let ok = parse_sample("m{a=\"1\",} 2 # {trace_id=\"x\"} 1").unwrap();
        assert_eq!((ok.value, ok.timestamp), (2.0, None));
        assert_eq!(parse("# EOF\n").skipped, 0);
    }
}
