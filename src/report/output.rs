//! `--output FILE`: the report appears whole or not at all. It is written to a temporary
//! file in the same folder (so the rename cannot cross file systems) and renamed over the
//! target; an interrupted run leaves the previous file, never a truncated one.

use crate::error::{Error, Result};
use std::io::Write;
use std::path::Path;

pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut temp = tempfile::Builder::new()
        .prefix(".prefixlint-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| write_error(path, e))?;
    temp.write_all(contents)
        .and_then(|()| temp.as_file().sync_all())
        .map_err(|e| write_error(path, e))?;
    temp.persist(path).map_err(|e| write_error(path, e.error))?;
    Ok(())
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

    #[test]
    fn a_missing_folder_is_an_error_naming_the_file() {
        let err = write_atomic(Path::new("/nonexistent-dir/x.json"), b"x").unwrap_err();
        assert!(err.to_string().contains("/nonexistent-dir/x.json"));
    }
}
