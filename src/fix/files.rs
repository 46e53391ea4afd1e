//! A fixed file on disk: read with its byte-order mark noted, written back atomically (a
//! temporary file renamed over it, its mode kept) only when it is writable and inside the
//! checked paths; `--diff` prints a unified diff instead.

use crate::error::{Error, Result};
use crate::report::output::AtomicFile;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A file's text as the checker read it (a UTF-8 BOM dropped), and what writing it back
/// must restore.
pub struct SourceFile {
    pub path: PathBuf,
    pub display: String,
    pub text: String,
    bom: bool,
}

impl SourceFile {
    pub fn read(path: &Path) -> Result<SourceFile> {
        let display = crate::source::display_path(path);
        let text = crate::source::read_text(path, &display)?;
        let bom = std::fs::read(path)
            .map(|bytes| bytes.starts_with(b"\xEF\xBB\xBF"))
            .unwrap_or(false);
        Ok(SourceFile {
            path: path.to_path_buf(),
            display,
            text,
            bom,
        })
    }

    /// Writes `fixed` over the file, whole or not at all. A read-only file is an error that
    /// names it (the caller goes on with the other files), as is a file outside `roots`.
    pub fn write(&self, fixed: &str, roots: &[PathBuf]) -> Result<()> {
        if !inside(&self.path, roots) {
            let link = std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.is_symlink());
            return Err(if link {
                Error::input_with_help(
                    format!(
                        "cannot fix {}: it is a link to a file outside the checked paths",
                        self.display
                    ),
                    "a fix never writes through a link out of what was checked (a walk does not follow one either); name the file it points to",
                )
            } else {
                Error::input(format!(
                    "cannot fix {}: it is outside the checked paths",
                    self.display
                ))
            });
        }
        let meta = std::fs::metadata(&self.path).map_err(|e| Error::io(&self.path, e))?;
        if meta.permissions().readonly() {
            return Err(Error::input_with_help(
                format!("cannot fix {}: the file is read-only", self.display),
                "make it writable (chmod u+w) and run `prefixlint check --fix` again, or see the fixes with `--diff`",
            ));
        }
        let mut file = AtomicFile::create(&self.path)?;
        let bom: &[u8] = if self.bom { b"\xEF\xBB\xBF" } else { b"" };
        file.write_all(bom)
            .and_then(|()| file.write_all(fixed.as_bytes()))
            .map_err(|e| file.error(e))?;
        file.commit()
    }
}

/// Whether `path` is one of `roots` or under one (both resolved, so `..` and links do not
/// lead a fix out of the tree it was asked to fix). A root that is itself a link stands
/// where the link is, not where it points: `--fix LINK` to a file outside is refused, as
/// the same link met by a walk is.
pub fn inside(path: &Path, roots: &[PathBuf]) -> bool {
    let Ok(path) = std::fs::canonicalize(path) else {
        return false;
    };
    roots
        .iter()
        .filter_map(|root| real_place(root))
        .any(|root| path == root || path.starts_with(&root))
}

/// `path` with its folders resolved, and its last component too unless it is a link.
fn real_place(path: &Path) -> Option<PathBuf> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink());
    match (is_link, path.parent(), path.file_name()) {
        (true, Some(parent), Some(name)) => {
            let parent = if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            };
            Some(std::fs::canonicalize(parent).ok()?.join(name))
        }
        _ => std::fs::canonicalize(path).ok(),
    }
}

/// A unified diff of one file, `---`/`+++` naming it as the report does.
pub fn unified_diff(display: &str, before: &str, after: &str) -> String {
    let diff = similar::TextDiff::from_lines(before, after);
    let mut out = diff
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{display}"), &format!("b/{display}"))
        .to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_names_the_file_and_shows_the_move() {
        let diff = unified_diff("p.j2", "a\nb\nc\n", "b\nc\na\n");
        assert!(diff.starts_with("--- a/p.j2\n+++ b/p.j2\n@@"), "{diff}");
        assert!(diff.contains("-a\n") && diff.contains("+a\n"), "{diff}");
    }

    #[test]
    fn paths_outside_the_roots_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("in");
        std::fs::create_dir(&inner).unwrap();
        let file = inner.join("t.j2");
        std::fs::write(&file, "x").unwrap();
        let outside = dir.path().join("o.j2");
        std::fs::write(&outside, "x").unwrap();
        assert!(inside(&file, std::slice::from_ref(&inner)));
        assert!(inside(&file, std::slice::from_ref(&file)));
        assert!(!inside(&outside, std::slice::from_ref(&inner)));
        assert!(!inside(
            &inner.join("../o.j2"),
            std::slice::from_ref(&inner)
        ));
        // A link named as a root is where it stands: to a file outside, it is refused;
        // a link inside a root to a file in that root is followed.
        let link = inner.join("link.j2");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        assert!(!inside(&link, std::slice::from_ref(&link)));
        assert!(!inside(&link, std::slice::from_ref(&inner)));
        let near = inner.join("near.j2");
        std::os::unix::fs::symlink(&file, &near).unwrap();
        assert!(inside(&near, &[inner]));
    }
}
