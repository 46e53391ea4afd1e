//! Reading input files safely, and mapping between byte offsets and line/column positions.

use crate::error::{Error, Result};
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Files larger than this are refused rather than read whole.
pub const MAX_INPUT_BYTES: u64 = 8 * 1024 * 1024;

/// Reads a text input: refuses directories, special files, huge files, NUL bytes and
/// invalid UTF-8 with an error that names the file and the offending place. A UTF-8 BOM
/// is dropped.
pub fn read_text(path: &Path, display: &str) -> Result<String> {
    let bytes = read_bounded(path, display, MAX_INPUT_BYTES)?;
    decode_text(&bytes, display)
}

/// Opens `path` for reading only if it is a regular file. A FIFO is opened without
/// blocking (so a writer that never comes cannot hang the run), and the type is checked on
/// what was opened, so a file swapped for a device after a check is still refused.
pub fn open_regular(path: &Path, display: &str) -> Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(|e| Error::io(path, e))?;
    let kind = file.metadata().map_err(|e| Error::io(path, e))?.file_type();
    if kind.is_dir() {
        return Err(Error::input(format!(
            "{display} is a directory, not a file"
        )));
    }
    if !kind.is_file() {
        return Err(Error::input_with_help(
            format!("{display} is {}, not a regular file", special_kind(kind)),
            "prefixlint reads only regular files: a FIFO could block and a device never ends",
        ));
    }
    Ok(file)
}

/// What kind of special file this is, for an error message.
fn special_kind(kind: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if kind.is_char_device() || kind.is_block_device() {
            return "a device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    let _ = kind;
    "a special file"
}

/// The bytes of a regular file ([`open_regular`]) of at most `limit` bytes. The limit is
/// held on the bytes actually read, not on the length metadata reports (a `/proc` file
/// reports 0 and a growing file more than it said).
pub fn read_bounded(path: &Path, display: &str, limit: u64) -> Result<Vec<u8>> {
    let file = open_regular(path, display)?;
    let too_large = |size: String| {
        Error::input_with_help(
            format!("{display} is {size}, over the {limit}-byte input limit"),
            "prompt templates are text; check that this is the file you meant",
        )
    };
    let reported = file.metadata().map(|m| m.len()).unwrap_or(0);
    if reported > limit {
        return Err(too_large(format!("{reported} bytes")));
    }
    let mut bytes = Vec::with_capacity(reported as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(too_large("longer than its size said".into()));
    }
    Ok(bytes)
}

/// A file this tool wrote to its own cache, or `None` (a miss) when it is missing, too
/// large or not a regular file: a cache entry replaced by a FIFO or a device is never read.
pub fn read_cached(path: &Path, limit: u64) -> Option<Vec<u8>> {
    read_bounded(path, "a cache file", limit).ok()
}

/// Validates bytes as template text. Kept separate from I/O so fuzzing can reach it.
/// A file that is not text is never quoted in the error (it may be any file a link or a
/// path led to): the error shows where, on a line of blanks.
pub fn decode_text(bytes: &[u8], display: &str) -> Result<String> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let valid = e.valid_up_to();
            // Valid up to `valid`, so the text before it is whole characters.
            let before = String::from_utf8_lossy(&bytes[..valid]);
            let (shown, span) = blanked(&before, '\u{fffd}');
            return Err(Error::located(
                display,
                &shown,
                span,
                format!("{display} is not valid UTF-8 (byte offset {valid})"),
                "invalid UTF-8 here",
                Some("save the file as UTF-8".into()),
            ));
        }
    };
    if let Some(at) = text.find('\0') {
        let (shown, span) = blanked(&text[..at], '\u{2400}');
        return Err(Error::located(
            display,
            &shown,
            span,
            format!("{display} contains a NUL byte: it looks like a binary file"),
            "NUL byte",
            Some("prompt templates must be text".into()),
        ));
    }
    Ok(text.to_owned())
}

/// `before` with every character but line breaks blanked, then `marker`: the place of a bad
/// byte, with lines and columns as in the file, and none of its text.
fn blanked(before: &str, marker: char) -> (String, std::ops::Range<usize>) {
    let mut shown: String = before
        .chars()
        .map(|c| if c == '\n' { '\n' } else { ' ' })
        .collect();
    let at = shown.len();
    shown.push(marker);
    (shown, at..at + marker.len_utf8())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn message(result: Result<Vec<u8>>) -> String {
        result.expect_err("refused").to_string()
    }

    #[test]
    fn a_fifo_without_a_writer_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("t.j2");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let started = std::time::Instant::now();
        let error = message(read_bounded(&fifo, "t.j2", MAX_INPUT_BYTES));
        assert!(error.contains("t.j2 is a FIFO"), "{error}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn devices_and_folders_are_refused_by_their_type() {
        let error = message(read_bounded(Path::new("/dev/zero"), "z", MAX_INPUT_BYTES));
        assert!(
            error.contains("z is a device, not a regular file"),
            "{error}"
        );
        let error = message(read_bounded(Path::new("/tmp"), "d", MAX_INPUT_BYTES));
        assert!(error.contains("d is a directory"), "{error}");
    }

    #[test]
    fn the_limit_holds_on_the_bytes_read_not_the_size_reported() {
        // A /proc file reports a size of 0 and holds more.
        let status = Path::new("/proc/self/status");
        assert_eq!(std::fs::metadata(status).unwrap().len(), 0);
        let error = message(read_bounded(status, "status", 16));
        assert!(error.contains("longer than its size said"), "{error}");
        assert!(
            read_bounded(status, "status", MAX_INPUT_BYTES)
                .unwrap()
                .len()
                > 16
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.j2");
        std::fs::write(&file, "x".repeat(17)).unwrap();
        let error = message(read_bounded(&file, "t.j2", 16));
        assert!(error.contains("t.j2 is 17 bytes, over the 16-byte input limit"));
        assert_eq!(read_bounded(&file, "t.j2", 17).unwrap().len(), 17);
    }

    #[test]
    fn a_binary_file_is_located_but_never_quoted() {
        let error = decode_text(b"SECRET=x\nKEY=abc\0PATH=/bin", "f").unwrap_err();
        let Error::Located(located) = &error else {
            panic!("{error}")
        };
        let shown = located.src.inner();
        assert!(!shown.contains("SECRET") && !shown.contains("KEY") && !shown.contains("PATH"));
        assert_eq!(line_col(shown, located.span.offset()), (2, 8));
        let error = decode_text(b"caf\xe9 SECRET", "f").unwrap_err();
        let Error::Located(located) = &error else {
            panic!("{error}")
        };
        assert!(!located.src.inner().contains("caf"));
        assert_eq!(line_col(located.src.inner(), located.span.offset()), (1, 4));
    }
}
