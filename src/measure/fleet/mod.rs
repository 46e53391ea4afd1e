//! `prefixlint measure --server ROUTER --replica URL …`: cache hits across replicas behind a
//! router. [`metrics`] reads each replica's prefix-cache counters from `/metrics`.

pub mod metrics;
