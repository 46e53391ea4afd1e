//! libFuzzer entry of `targets/lsp_transport.rs` (the same body runs in `tests/it/fuzz_smoke.rs`).
#![no_main]

#[path = "../targets/lsp_transport.rs"]
mod target;

libfuzzer_sys::fuzz_target!(|data: &[u8]| target::run(data));
