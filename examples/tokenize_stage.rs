//! The tokenizer stage alone (issue 18, target 2): prefixlint's engine against the
//! `tokenizers` crate's own `encode`, on the same texts, on one thread.
//! `bench/tokenize_stage.sh` runs it next to the Python library (bench/tokenize_stage.py).
//!
//! usage: tokenize_stage RENDERS_JSONL TOKENIZER_JSON
//! (RENDERS_JSONL: one JSON list of strings per line, one template's renders.)
//! Prints one line per engine: bytes, seconds, MB/s and the SHA-256 of every id (as
//! little-endian u32, in order), which must be the same for all of them.

use prefixlint::config::Config;
use sha2::{Digest, Sha256};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, renders, tokenizer] = args.as_slice() else {
        eprintln!("usage: tokenize_stage RENDERS_JSONL TOKENIZER_JSON");
        std::process::exit(2);
    };
    let templates: Vec<Vec<String>> = std::fs::read_to_string(renders)
        .expect("renders file")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON list of strings"))
        .collect();
    let bytes: usize = templates.iter().flatten().map(String::len).sum();

    let engine = prefixlint::request::load_tokenizer(tokenizer, Config::default().special_tokens)
        .expect("tokenizer loads");
    // As the check stage does: a template's renders together (later ones reuse the first's
    // tokens up to their last shared safe boundary).
    report("prefixlint engine, encode_all per template", bytes, || {
        let mut ids = Vec::new();
        for renders in &templates {
            let texts: Vec<&str> = renders.iter().map(String::as_str).collect();
            for tokens in engine.encode_all(&texts).expect("encodes") {
                ids.push(tokens.ids);
            }
        }
        ids
    });
    report("prefixlint engine, encode per text", bytes, || {
        templates
            .iter()
            .flatten()
            .map(|text| engine.encode(text).expect("encodes").ids)
            .collect()
    });
    let started = Instant::now();
    let crate_tokenizer = tokenizers::Tokenizer::from_file(tokenizer).expect("tokenizers loads");
    eprintln!(
        "(tokenizers crate: Tokenizer::from_file took {:.3} s)",
        started.elapsed().as_secs_f64()
    );
    report("tokenizers crate 0.23.2, encode per text", bytes, || {
        templates
            .iter()
            .flatten()
            .map(|text| {
                crate_tokenizer
                    .encode(text.as_str(), false)
                    .expect("encodes")
                    .get_ids()
                    .to_vec()
            })
            .collect()
    });
}

fn report(name: &str, bytes: usize, encode: impl FnOnce() -> Vec<Vec<u32>>) {
    let started = Instant::now();
    let ids = encode();
    let seconds = started.elapsed().as_secs_f64();
    let mut hash = Sha256::new();
    let mut count = 0;
    for id in ids.iter().flatten() {
        hash.update(id.to_le_bytes());
        count += 1;
    }
    println!(
        "{name}: {bytes} bytes, {count} tokens, {seconds:.3} s, {:.1} MB/s, ids sha256 {:x}",
        bytes as f64 / seconds / 1e6,
        hash.finalize()
    );
}
