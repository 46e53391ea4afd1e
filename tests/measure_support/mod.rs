//! Test servers for `prefixlint measure`: a real llama.cpp server and a fault injector.
#![allow(dead_code)]

pub mod fault_server;
pub mod fleet;
pub mod llama;
pub mod router;
