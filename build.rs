//! Facts the binary keys its caches on, computed once at build time so a run pays nothing:
//! - the embedded tokenizers' SHA-256s (the default's and OpenAI's rank files; hashing 2 MB
//!   was a tenth of a warm `check`'s start);
//! - the build fingerprint: a SHA-256 of everything that shapes output (the sources, the
//!   rules' data, the embedded assets, this script, the manifest and the lock file, and the
//!   compiler). The results cache keys every entry on it, so a rebuilt binary never reads
//!   another build's results, whatever its version number says.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// What shapes output: folders are hashed whole (every file, by its path inside the crate).
const FINGERPRINTED: &[&str] = &[
    "src",
    "rules",
    "assets",
    "build.rs",
    "Cargo.toml",
    "Cargo.lock",
];

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
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
        println!("cargo:rustc-env={var}={}", hex(&Sha256::digest(&bytes)));
    }
    // A folder named here is scanned whole by cargo: any file added, removed or changed in
    // it runs this script again.
    for path in FINGERPRINTED {
        println!("cargo:rerun-if-changed={path}");
    }
    println!(
        "cargo:rustc-env=PREFIXLINT_BUILD_FINGERPRINT={}",
        build_fingerprint()
    );
}

fn build_fingerprint() -> String {
    let mut files = Vec::new();
    for path in FINGERPRINTED {
        collect(Path::new(path), &mut files);
    }
    // The same tree gives the same hash wherever and in whatever order it was written.
    files.sort();
    let mut hasher = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    for file in &files {
        let name = file.to_string_lossy().replace('\\', "/");
        let bytes = std::fs::read(file).unwrap_or_else(|e| panic!("cannot read {name}: {e}"));
        field(name.as_bytes());
        field(&bytes);
    }
    // The compiler too: a new one may format or order things differently.
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("-vV")
        .output()
        .map(|out| out.stdout)
        .unwrap_or_default();
    field(b"rustc");
    field(&version);
    field(std::env::var("TARGET").unwrap_or_default().as_bytes());
    hex(&hasher.finalize())
}

/// Every file at or under `path`, in no particular order.
fn collect(path: &Path, files: &mut Vec<PathBuf>) {
    let meta = std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if !meta.is_dir() {
        files.push(path.to_path_buf());
        return;
    }
    let listing = std::fs::read_dir(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for entry in listing {
        let entry = entry.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        collect(&entry.path(), files);
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
