//! libFuzzer entry of `targets/template_formats.rs` (the same body runs in `tests/it/fuzz_smoke.rs`).
#![no_main]

#[path = "../targets/template_formats.rs"]
mod target;

libfuzzer_sys::fuzz_target!(|data: &[u8]| target::run(data));
