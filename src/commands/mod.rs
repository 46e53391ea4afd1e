//! The command layer: one driver per subcommand, from parsed arguments to printed output
//! and an exit code. It may import every library module; no library module imports it.

pub mod audit;
pub mod capacity;
pub mod check;
pub mod measure;
pub mod render;
pub mod rules;
pub mod samples;
pub mod server;
pub mod simulate;
