//! libFuzzer entry of `targets/fix_producers.rs` (the same body runs in `tests/it/fuzz_smoke.rs`).
#![no_main]

#[path = "../targets/fix_producers.rs"]
mod target;

libfuzzer_sys::fuzz_target!(|data: &[u8]| target::run(data));
