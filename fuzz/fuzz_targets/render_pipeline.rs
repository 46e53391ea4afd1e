//! libFuzzer entry of `targets/render_pipeline.rs` (the same body runs in `tests/it/fuzz_smoke.rs`).
#![no_main]

#[path = "../targets/render_pipeline.rs"]
mod target;

libfuzzer_sys::fuzz_target!(|data: &[u8]| target::run(data));
