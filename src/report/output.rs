//! `--output FILE`: the report appears whole or not at all. It is written to a temporary
//! file in the same folder (so the rename cannot cross file systems) and renamed over the
//! target; an interrupted run leaves the previous file, never a truncated one. The file gets
//! the mode a shell redirect would give it: an existing file keeps its own, a new one gets
//! 0666 less the umask (0644 under the usual 022).
//!
//! A target that is not a regular file (`/dev/null`, `/dev/stdout`, a FIFO) is written in
//! place: renaming over it would replace the device with a file. A symlink is followed, so
//! the file it points to is replaced and the link stays.

use crate::error::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(contents).map_err(|e| write_error(path, e))?;
    file.commit()
}

/// A file written as it is produced and put in place whole by [`AtomicFile::commit`];
/// dropped before that, it leaves the previous file (and no temporary).
pub struct AtomicFile {
    path: PathBuf,
    sink: Sink,
}

enum Sink {
    Temporary(std::io::BufWriter<tempfile::NamedTempFile>),
    InPlace(std::io::BufWriter<std::fs::File>),
}

impl AtomicFile {
    pub fn create(path: &Path) -> Result<AtomicFile> {
        let target = match std::fs::canonicalize(path) {
            Ok(resolved) => resolved,
            Err(_) => path.to_path_buf(),
        };
        if let Ok(meta) = std::fs::metadata(&target) {
            if !meta.is_file() && !meta.is_dir() {
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&target)
                    .map_err(|e| write_error(path, e))?;
                return Ok(AtomicFile {
                    path: path.to_path_buf(),
                    sink: Sink::InPlace(std::io::BufWriter::new(file)),
                });
            }
        }
        let shown = path;
        let path = target.as_path();
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        let mut builder = tempfile::Builder::new();
        builder.prefix(".prefixlint-").suffix(".tmp");
        #[cfg(unix)]
        {
            // tempfile's default is 0600; the kernel applies the umask to this mode on creation.
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let temp = builder
            .tempfile_in(dir)
            .map_err(|e| write_error(shown, e))?;
        if let Ok(existing) = std::fs::metadata(path) {
            temp.as_file()
                .set_permissions(existing.permissions())
                .map_err(|e| write_error(shown, e))?;
        }
        Ok(AtomicFile {
            path: shown.to_path_buf(),
            sink: Sink::Temporary(std::io::BufWriter::new(temp)),
        })
    }

    /// Flushes, syncs and renames the file into place.
    pub fn commit(self) -> Result<()> {
        let path = self.path;
        let temp = match self.sink {
            Sink::InPlace(mut file) => return file.flush().map_err(|e| write_error(&path, e)),
            Sink::Temporary(temp) => temp
                .into_inner()
                .map_err(|e| write_error(&path, e.into_error()))?,
        };
        temp.as_file()
            .sync_all()
            .map_err(|e| write_error(&path, e))?;
        let target = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        temp.persist(&target)
            .map_err(|e| write_error(&path, e.error))?;
        Ok(())
    }

    /// The error to report for a failed write to this file.
    pub fn error(&self, e: std::io::Error) -> crate::error::Error {
        write_error(&self.path, e)
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.sink {
            Sink::Temporary(temp) => temp.write(buf),
            Sink::InPlace(file) => file.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.sink {
            Sink::Temporary(temp) => temp.flush(),
            Sink::InPlace(file) => file.flush(),
        }
    }
}

fn write_error(path: &Path, e: std::io::Error) -> Error {
    Error::input(format!("cannot write {}: {e}", path.display()))
}

/// Standard output that ignores a closed pipe (`prefixlint check | head`): the run goes on
/// to its exit code; `println!` would panic.
pub struct Stdout;

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = std::io::stdout().lock().write_all(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        let _ = std::io::stdout().lock().flush();
        Ok(())
    }
}

/// A text report fitted to a narrow terminal as it is written: each whole line longer than
/// the width is broken at spaces ([`crate::fmt::wrap_lines`]); a line still being written
/// waits for its end, and goes out as it is when the writer is dropped.
pub struct Wrapped<W: Write> {
    inner: W,
    width: usize,
    pending: Vec<u8>,
}

impl<W: Write> Wrapped<W> {
    pub fn new(inner: W, width: usize) -> Self {
        Wrapped {
            inner,
            width,
            pending: Vec::new(),
        }
    }
}

impl<W: Write> Write for Wrapped<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        if let Some(end) = self.pending.iter().rposition(|&b| b == b'\n') {
            let lines: Vec<u8> = self.pending.drain(..=end).collect();
            let text = String::from_utf8_lossy(&lines);
            self.inner
                .write_all(crate::fmt::wrap_lines(&text, self.width).as_bytes())?;
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl<W: Write> Drop for Wrapped<W> {
    fn drop(&mut self) {
        let rest = std::mem::take(&mut self.pending);
        let _ = self
            .inner
            .write_all(&rest)
            .and_then(|()| self.inner.flush());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_breaks_whole_lines_and_keeps_the_last_partial_one() {
        let mut out = Vec::new();
        {
            let mut wrapped = Wrapped::new(&mut out, 10);
            wrapped.write_all(b"one two three").unwrap();
            wrapped.flush().unwrap();
            wrapped.write_all(b" four\nfive").unwrap();
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "one two\n  three\n  four\nfive"
        );
    }

    #[test]
    fn replaces_the_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("report.sarif");
        std::fs::write(&target, "old").unwrap();
        write_atomic(&target, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn an_existing_file_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("report.json");
        std::fs::write(&target, "old").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&target, b"new").unwrap();
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
    }

    #[cfg(unix)]
    #[test]
    fn a_device_is_written_in_place_not_replaced() {
        use std::os::unix::fs::FileTypeExt;
        write_atomic(Path::new("/dev/null"), b"report").unwrap();
        assert!(std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_stays_and_its_target_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        let link = dir.path().join("link.json");
        std::fs::write(&real, "old").unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
    }

    #[test]
    fn a_missing_folder_is_an_error_naming_the_file() {
        let err = write_atomic(Path::new("/nonexistent-dir/x.json"), b"x").unwrap_err();
        assert!(err.to_string().contains("/nonexistent-dir/x.json"));
    }
}
