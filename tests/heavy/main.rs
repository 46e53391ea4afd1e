//! The integration tests that start servers, editors or package builds (llama.cpp, vLLM,
//! SGLang, the routers, Neovim, maturin and Ray), as modules of one binary, run under
//! cargo-nextest so that their servers start and run side by side.

#[path = "../support/mod.rs"]
mod support;

mod audit;
mod audit_agents;
mod capacity;
mod dist;
mod fleet;
mod formats_reference;
mod gguf;
mod measure;
mod python_package;
mod server;
mod server_tokens;
mod settings_measure;
mod simulate_llamacpp;
mod simulate_sglang;
mod simulate_vllm;
mod vllm;
mod vllm_fleet;
mod vscode_extension;
