//! `prefixlint rules` and `prefixlint explain RULE`: the rules' metadata and docs.

use crate::error::{Error, Result};
use crate::rules;
use std::io::Write;

/// One line per rule: code, name, severity, summary; `narrow`: the width to fit.
pub fn list(narrow: Option<usize>) {
    let listing: String = rules::all()
        .iter()
        .map(|rule| {
            format!(
                "{}  {:<28} {:<8} {}\n",
                rule.code,
                rule.name,
                rule.severity.as_str(),
                rule.summary
            )
        })
        .collect();
    write_stdout(&fitted(listing, narrow));
}

/// A rule's documentation, by code (PL001) or name (volatile-before-stable).
pub fn explain(rule: &str, narrow: Option<usize>) -> Result<()> {
    let meta = rules::find(rule).ok_or_else(|| {
        Error::input_with_help(
            format!("no rule named `{rule}`"),
            "`prefixlint rules` lists them",
        )
    })?;
    let text = format!(
        "# {} ({}) — {}\n\n{}\n\n{}\n",
        meta.code,
        meta.name,
        meta.severity.as_str(),
        meta.summary,
        meta.docs.trim_end()
    );
    write_stdout(&fitted(text, narrow));
    Ok(())
}

fn fitted(text: String, narrow: Option<usize>) -> String {
    match narrow {
        Some(width) => crate::fmt::wrap_lines(&text, width),
        None => text,
    }
}

/// Writes to stdout, ignoring a closed pipe (`prefixlint rules | head`): `println!` would panic.
fn write_stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}
