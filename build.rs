//! The embedded tokenizer's SHA-256, computed once at build time: every run keys its caches
//! on it, and hashing 2 MB was a tenth of a warm `check`'s start.

use sha2::{Digest, Sha256};

fn main() {
    let path = "assets/qwen3/tokenizer.json.gz";
    println!("cargo:rerun-if-changed={path}");
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    let hex: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    println!("cargo:rustc-env=PREFIXLINT_BUILTIN_TOKENIZER_SHA256={hex}");
}
