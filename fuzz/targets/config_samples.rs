//! Arbitrary bytes as a samples file and as a config file: errors are fine, panics are not.

use prefixlint::config::Config;
use prefixlint::{samples, source};

pub fn run(data: &[u8]) {
    // The same decoding the CLI applies to every input file (BOM, NUL, UTF-8).
    let Ok(text) = source::decode_text(data, "fuzz.yaml") else {
        return;
    };
    if let Err(e) = samples::parse(&text, "fuzz.samples.yaml") {
        // Rendering the diagnostic exercises the span arithmetic too.
        let _ = format!("{:?}", miette::Report::new(e));
    }
    if let Err(e) = Config::parse(&text, "prefixlint.yaml") {
        let _ = format!("{:?}", miette::Report::new(e));
    }
}
