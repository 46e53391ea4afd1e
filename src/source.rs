//! Reading input files safely, and mapping between byte offsets and line/column positions.

use crate::error::{Error, Result};
use std::path::Path;

/// Files larger than this are refused rather than read whole.
pub const MAX_INPUT_BYTES: u64 = 8 * 1024 * 1024;

/// Reads a text input: refuses directories, huge files, NUL bytes and invalid UTF-8
/// with an error that names the file and the offending place. A UTF-8 BOM is dropped.
pub fn read_text(path: &Path, display: &str) -> Result<String> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if meta.is_dir() {
        return Err(Error::input(format!(
            "{display} is a directory, not a file"
        )));
    }
    if meta.len() > MAX_INPUT_BYTES {
        return Err(Error::input_with_help(
            format!(
                "{display} is {} bytes, over the {MAX_INPUT_BYTES}-byte input limit",
                meta.len()
            ),
            "prompt templates are text; check that this is the file you meant",
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    decode_text(&bytes, display)
}

/// Validates bytes as template text. Kept separate from I/O so fuzzing can reach it.
pub fn decode_text(bytes: &[u8], display: &str) -> Result<String> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let valid = e.valid_up_to();
            let lossy = String::from_utf8_lossy(bytes).into_owned();
            let at = lossy
                .char_indices()
                .nth(
                    bytes[..valid]
                        .iter()
                        .filter(|b| (**b & 0xC0) != 0x80)
                        .count(),
                )
                .map(|(i, _)| i)
                .unwrap_or(lossy.len());
            return Err(Error::located(
                display,
                &lossy,
                at..at + 1,
                format!("{display} is not valid UTF-8 (byte offset {valid})"),
                "invalid UTF-8 here",
                Some("save the file as UTF-8".into()),
            ));
        }
    };
    if let Some(at) = text.find('\0') {
        let shown = text.replace('\0', "\u{2400}");
        return Err(Error::located(
            display,
            &shown,
            at..at + '\u{2400}'.len_utf8(),
            format!("{display} contains a NUL byte: it looks like a binary file"),
            "NUL byte",
            Some("prompt templates must be text".into()),
        ));
    }
    Ok(text.to_owned())
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = floor_char_boundary(text, offset.min(text.len()));
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let column = text[line_start..offset].chars().count() + 1;
    (line, column)
}

/// Byte offset of a 1-based line and column (in characters); clamps to the text.
pub fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let mut offset = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            let col = l
                .char_indices()
                .nth(column.saturating_sub(1))
                .map(|(c, _)| c)
                .unwrap_or(l.len());
            return offset + col;
        }
        offset += l.len();
    }
    text.len()
}

pub fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    if index >= text.len() {
        return text.len();
    }
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// Paths are shown relative to the working directory when they are under it, with `/` separators.
pub fn display_path(path: &Path) -> String {
    let cwd = std::env::current_dir().ok();
    let rel = cwd
        .as_deref()
        .and_then(|cwd| path.strip_prefix(cwd).ok())
        .unwrap_or(path);
    let shown = rel.to_string_lossy().replace('\\', "/");
    shown.strip_prefix("./").map(str::to_owned).unwrap_or(shown)
}
