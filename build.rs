//! The embedded tokenizers' SHA-256s, computed once at build time: every run keys its caches
//! on them, and hashing 2 MB was a tenth of a warm `check`'s start.

use sha2::{Digest, Sha256};

fn main() {
    for (path, var) in [
        (
            "assets/qwen3/tokenizer.json.gz",
            "PREFIXLINT_BUILTIN_TOKENIZER_SHA256",
        ),
        (
            "assets/tiktoken/o200k_base.ranks.zlib",
            "PREFIXLINT_O200K_SHA256",
        ),
        (
            "assets/tiktoken/cl100k_base.ranks.zlib",
            "PREFIXLINT_CL100K_SHA256",
        ),
    ] {
        println!("cargo:rerun-if-changed={path}");
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
        let hex: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        println!("cargo:rustc-env={var}={hex}");
    }
}
