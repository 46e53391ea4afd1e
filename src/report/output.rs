//! `--output FILE`: the report appears whole or not at all. It is written to a temporary
//! file in the same folder (so the rename cannot cross file systems) and renamed over the
//! target; an interrupted run leaves the previous file, never a truncated one. The file gets
//! the mode a shell redirect would give it: an existing file keeps its own, a new one gets
//! 0666 less the umask (0644 under the usual 022).

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
    temp: std::io::BufWriter<tempfile::NamedTempFile>,
}

impl AtomicFile {
    pub fn create(path: &Path) -> Result<AtomicFile> {
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
        let temp = builder.tempfile_in(dir).map_err(|e| write_error(path, e))?;
        if let Ok(existing) = std::fs::metadata(path) {
            temp.as_file()
                .set_permissions(existing.permissions())
                .map_err(|e| write_error(path, e))?;
        }
        Ok(AtomicFile {
            path: path.to_path_buf(),
            temp: std::io::BufWriter::new(temp),
        })
    }

    /// Flushes, syncs and renames the file into place.
    pub fn commit(self) -> Result<()> {
        let path = self.path;
        let temp = self
            .temp
            .into_inner()
            .map_err(|e| write_error(&path, e.into_error()))?;
        temp.as_file()
            .sync_all()
            .map_err(|e| write_error(&path, e))?;
        temp.persist(&path)
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
        self.temp.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.temp.flush()
    }
}

fn write_error(path: &Path, e: std::io::Error) -> Error {
    Error::input(format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_missing_folder_is_an_error_naming_the_file() {
        let err = write_atomic(Path::new("/nonexistent-dir/x.json"), b"x").unwrap_err();
        assert!(err.to_string().contains("/nonexistent-dir/x.json"));
    }
}
