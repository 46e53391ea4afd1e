//! `prefixlint measure`: check the predictions against a live server's cache and TTFT.
//!
//! [`crate::http`] (the deadline-bound HTTP/1.1 client) → [`sse`] (pure SSE parsing) → [`stream`]
//! (one timed request) → [`engine`] (detection, isolation, cached-token fields) → [`run`]
//! (the cold/warm protocol) → [`report`] (JSON contract and table), with [`model`] fitting
//! TTFT ≈ a + b × uncached tokens.

pub mod engine;
pub mod fleet;
pub mod model;
pub mod report;
pub mod run;
pub mod sse;
pub mod stream;

pub use engine::Engine;
pub use run::{run, Api, MeasureOptions, MeasureOutcome, TTFT_DEFINITION};
