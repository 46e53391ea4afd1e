//! `prefixlint server`: the language server on stdin/stdout, from its flags.

use crate::cli::ServerArgs;
use crate::error::Result;
use crate::server::{self, ServerOptions};

pub fn run(args: ServerArgs) -> Result<()> {
    server::run(ServerOptions {
        config: args.config.config,
        no_config: args.config.no_config,
        tokenizer: args.tokenizer,
        root: std::path::PathBuf::new(),
    })
}
