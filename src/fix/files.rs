//! A fixed file on disk: read with its byte-order mark noted, written back atomically (a
//! temporary file renamed over it, its mode kept) only when it is writable and inside the
//! checked paths; `--diff` prints a unified diff instead.

use crate::error::{Error, Result};
use crate::report::output::AtomicFile;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A file's text as the checker read it (a UTF-8 BOM dropped), and what writing it back
/// must restore and check.
pub struct SourceFile {
    pub path: PathBuf,
    pub display: String,
    pub text: String,
    bom: bool,
    /// The bytes' SHA-256 as read: the file must still hold them when the fix replaces it.
    digest: [u8; 32],
}

impl SourceFile {
    pub fn read(path: &Path) -> Result<SourceFile> {
        let display = crate::source::display_path(path);
        // One read: the text, the BOM and the digest are of the same bytes.
        let bytes = crate::source::read_bounded(path, &display, crate::source::MAX_INPUT_BYTES)?;
        let text = crate::source::decode_text(&bytes, &display)?;
        Ok(SourceFile {
            path: path.to_path_buf(),
            display,
            text,
            bom: bytes.starts_with(b"\xEF\xBB\xBF"),
            digest: Sha256::digest(&bytes).into(),
        })
    }

    /// Writes `fixed` over the file, whole or not at all. A read-only file is an error that
    /// names it (the caller goes on with the other files), as is a file outside `roots`,
    /// and a file that changed since it was read (checked just before the rename: a line
    /// appended meanwhile is never lost).
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
        // A signal while the temporary file exists is held until it is renamed or removed.
        let _held = interrupt::hold();
        let mut file = AtomicFile::create(&self.path)?;
        let bom: &[u8] = if self.bom { b"\xEF\xBB\xBF" } else { b"" };
        file.write_all(bom)
            .and_then(|()| file.write_all(fixed.as_bytes()))
            .map_err(|e| file.error(e))?;
        if !self.unchanged() {
            // Dropped: the temporary file goes, the file stays as the other writer left it.
            return Err(Error::input_with_help(
                format!(
                    "cannot fix {}: it changed while prefixlint was fixing it",
                    self.display
                ),
                "nothing was written; run `prefixlint check --fix` again",
            ));
        }
        file.commit()
    }

    /// Whether the file still holds the bytes it was read with.
    fn unchanged(&self) -> bool {
        crate::source::read_bounded(&self.path, &self.display, crate::source::MAX_INPUT_BYTES)
            .is_ok_and(|bytes| <[u8; 32]>::from(Sha256::digest(&bytes)) == self.digest)
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

/// SIGINT, SIGTERM and SIGHUP while a fix's temporary file exists: held until it is
/// renamed into place or removed, then obeyed (the process ends by that signal), so no
/// `.prefixlint-*.tmp` outlives an interrupted `--fix`. Outside a write a signal acts at once.
mod interrupt {
    #[cfg(unix)]
    mod imp {
        use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering::SeqCst};
        use std::sync::Once;

        static WRITING: AtomicUsize = AtomicUsize::new(0);
        static PENDING: AtomicI32 = AtomicI32::new(0);
        const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

        /// Ends the process by `signal`, as if no handler had been installed.
        fn obey(signal: libc::c_int) {
            // SAFETY: `signal` and `raise` are async-signal-safe.
            unsafe {
                libc::signal(signal, libc::SIG_DFL);
                libc::raise(signal);
            }
        }

        extern "C" fn on_signal(signal: libc::c_int) {
            if WRITING.load(SeqCst) == 0 {
                return obey(signal);
            }
            PENDING.store(signal, SeqCst);
            // The write may have ended between the two loads: then nobody else obeys it.
            if WRITING.load(SeqCst) == 0 {
                obey(signal);
            }
        }

        pub struct Held;

        pub fn hold() -> Held {
            static INSTALL: Once = Once::new();
            INSTALL.call_once(|| {
                for signal in SIGNALS {
                    // SAFETY: the handler only touches atomics and async-signal-safe calls.
                    unsafe {
                        let mut action: libc::sigaction = std::mem::zeroed();
                        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                        action.sa_flags = libc::SA_RESTART;
                        libc::sigemptyset(&mut action.sa_mask);
                        libc::sigaction(signal, &action, std::ptr::null_mut());
                    }
                }
            });
            WRITING.fetch_add(1, SeqCst);
            Held
        }

        impl Drop for Held {
            fn drop(&mut self) {
                if WRITING.fetch_sub(1, SeqCst) == 1 {
                    let pending = PENDING.swap(0, SeqCst);
                    if pending != 0 {
                        obey(pending);
                    }
                }
            }
        }
    }

    #[cfg(unix)]
    pub use imp::hold;

    #[cfg(not(unix))]
    pub fn hold() {}
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

    #[test]
    fn a_file_changed_after_it_was_read_is_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.j2");
        std::fs::write(&path, "{{ now }}\nstable\n").unwrap();
        let file = SourceFile::read(&path).unwrap();
        // Another writer appends a line between the read and the fix's rename.
        let mut other = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        other.write_all(b"appended\n").unwrap();
        let roots = [dir.path().to_path_buf()];
        let error = file.write("stable\n{{ now }}\n", &roots).unwrap_err();
        assert!(error
            .to_string()
            .contains("changed while prefixlint was fixing it"));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{{ now }}\nstable\nappended\n"
        );
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "the temporary file was left");
        // Unchanged, it is written.
        let file = SourceFile::read(&path).unwrap();
        file.write("fixed\n", &roots).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "fixed\n");
    }
}
