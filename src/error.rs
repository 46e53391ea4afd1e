//! The one error type of the tool. Every variant is a miette diagnostic that
//! names the file (and, where known, the place) it is about; all of them exit with code 2.

use miette::{Diagnostic, NamedSource, SourceSpan};
use std::path::PathBuf;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error, Diagnostic)]
pub enum Error {
    #[error("cannot read {}: {source}", path.display())]
    #[diagnostic(code(prefixlint::io))]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("{message}")]
    #[diagnostic(code(prefixlint::input))]
    Input {
        message: String,
        #[help]
        help: Option<String>,
    },

    /// An error located in a file we read: a template, a samples file, a config file.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Located(Box<Located>),

    #[error("tokenizer {spec}: {message}")]
    #[diagnostic(code(prefixlint::tokenizer))]
    Tokenizer {
        spec: String,
        message: String,
        #[help]
        help: Option<String>,
    },
}

impl Error {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    pub fn input(message: impl Into<String>) -> Self {
        Error::Input {
            message: message.into(),
            help: None,
        }
    }

    pub fn input_with_help(message: impl Into<String>, help: impl Into<String>) -> Self {
        Error::Input {
            message: message.into(),
            help: Some(help.into()),
        }
    }

    /// An error at `span` (byte offsets) inside `text`, the contents of `name`.
    pub fn located(
        name: &str,
        text: &str,
        span: std::ops::Range<usize>,
        message: impl Into<String>,
        label: impl Into<String>,
        help: Option<String>,
    ) -> Self {
        let len = text.len();
        let start = span.start.min(len);
        let end = span.end.clamp(start, len);
        Error::Located(Box::new(Located {
            message: message.into(),
            src: NamedSource::new(name, text.to_owned()),
            span: (start, end - start).into(),
            label: label.into(),
            help,
        }))
    }

    /// Replaces the help of a located error (other errors are returned as they are).
    pub fn with_help(mut self, new_help: impl Into<String>) -> Self {
        if let Error::Located(located) = &mut self {
            located.help = Some(new_help.into());
        }
        self
    }
}

#[derive(Debug, thiserror::Error, Diagnostic)]
#[error("{message}")]
#[diagnostic(code(prefixlint::input))]
pub struct Located {
    pub message: String,
    #[source_code]
    pub src: NamedSource<String>,
    #[label("{label}")]
    pub span: SourceSpan,
    pub label: String,
    #[help]
    pub help: Option<String>,
}

/// An error as printed on standard error: miette's rendering (coloured on a terminal), with
/// any other control character the error quotes (a template's escape sequences, a file
/// name's) escaped, never obeyed.
pub fn for_terminal(error: impl Into<miette::Report>) -> String {
    let text = format!("{:?}", error.into());
    crate::fmt::escape_controls_keep_colors(&text).into_owned()
}
