//! prefixlint: lint prompt templates for prefix-cache friendliness.
//!
//! The `check` pipeline, one module per stage:
//! [`discover`] → [`samples`] → [`render`] → [`tokenize`] → [`analyse`] → [`rules`] → [`report`].

pub mod analyse;
pub mod audit;
pub mod baseline;
pub mod cache_profile;
pub mod capacity;
pub mod chat;
pub mod check;
pub mod cli;
pub mod commands;
pub mod config;
pub mod cost;
pub mod discover;
pub mod edit;
pub mod error;
pub mod fix;
pub mod fmt;
pub mod formats;
pub mod host;
pub mod http;
pub mod measure;
pub mod profile;
pub mod prometheus;
pub mod providers;
pub mod render;
pub mod report;
pub mod request;
pub mod results_cache;
pub mod rules;
pub mod samples;
pub mod server;
pub mod settings;
pub mod severity;
pub mod simulate;
pub mod source;
pub mod suppress;
pub mod tokenize;

pub use check::linter::{LintOptions, Linter, Outcomes};
pub use error::{Error, Result};
pub use report::TemplateOutcome;
