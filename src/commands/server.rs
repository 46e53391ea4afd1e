//! `prefixlint server`: the language server on stdin/stdout, from its flags.

use crate::cli::ServerArgs;
use crate::error::Result;
use crate::server::{self, ServerOptions};

pub fn run(args: ServerArgs) -> Result<()> {
    server::run(ServerOptions {
        flags: args.flags(),
        config: args.config.config,
        no_config: args.config.no_config,
        root: std::path::PathBuf::new(),
    })
}
