//! libFuzzer entry of `targets/host_files.rs` (the same body runs in `tests/it/fuzz_smoke.rs`).
#![no_main]

#[path = "../targets/host_files.rs"]
mod target;

libfuzzer_sys::fuzz_target!(|data: &[u8]| target::run(data));
