//! Native renderers for known chat templates: the text minijinja renders, written directly.
//!
//! minijinja's VM is the largest single cost of `audit` and `simulate` (dispatch, fuel,
//! frame lookups, string `+` for every turn of every logged request). For a chat template
//! whose source is known byte for byte, a renderer written for that source gives the same
//! text for a fraction of the work, as llama.cpp's built-in chat formats do, but exact:
//! [`lookup`] matches the template's **whole source** (a hash first, then the bytes), and a
//! renderer answers `None` for any input it does not replicate exactly (a value of an
//! unexpected type, a render that could reach the sandbox's fuel or output limits), so the
//! caller renders that one with minijinja. `PREFIXLINT_NATIVE_TEMPLATES=0` turns them off.

pub mod qwen3;
pub mod template;

pub use template::{NativeTemplate, Variables};

/// The known templates: source and renderer.
fn known() -> [(&'static str, &'static dyn NativeTemplate); 1] {
    [(qwen3::SOURCE, &qwen3::QWEN3)]
}

/// The native renderer of a chat template with exactly this source, if there is one.
pub fn lookup(source: &str) -> Option<&'static dyn NativeTemplate> {
    let hash = fingerprint(source);
    known()
        .into_iter()
        .find(|(known, _)| fingerprint(known) == hash && *known == source)
        .map(|(_, template)| template)
}

/// Whether native renderers are used: not when `PREFIXLINT_NATIVE_TEMPLATES=0`.
pub fn enabled() -> bool {
    enabled_by(std::env::var_os("PREFIXLINT_NATIVE_TEMPLATES").as_deref())
}

fn enabled_by(setting: Option<&std::ffi::OsStr>) -> bool {
    setting.is_none_or(|v| v != "0")
}

/// A cheap hash of the source (FNV-1a), compared before the bytes.
fn fingerprint(source: &str) -> u64 {
    source.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests;
