//! The self-contained integration tests, as modules of one binary (one link of the library,
//! one process whose tests run side by side): everything that starts no server, editor or
//! package build. What does is in `tests/heavy/`.

#[path = "../support/mod.rs"]
mod support;

mod architecture;
mod audit_hosted;
mod audit_incremental;
mod bad_inputs;
mod breakpoints;
mod chat;
mod ci_clients;
mod cli;
mod conventions;
mod corpus;
mod costs;
mod engine_report;
mod engines;
mod failures;
mod families;
mod first_hour;
mod fix;
mod flat_models;
mod formats;
mod fuzz_smoke;
mod honest_tests;
mod host_formats;
mod hosts;
mod hosts_reference;
mod integrations;
mod library;
mod links_and_fix;
mod measure_faults;
mod model_cache;
mod native_templates;
mod profile;
mod provider_data;
mod python_host;
mod readme;
mod reference;
mod render_env;
mod request_bodies;
mod results_cache;
mod safety;
mod samples_and_stand_ins;
mod samples_by_use;
mod samples_shapes;
mod settings;
mod simulate;
mod simulate_traces;
mod sites;
mod special_tokens;
mod template_formats;
mod terminal_escapes;
mod tiktoken;
