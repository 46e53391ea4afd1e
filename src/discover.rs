//! Stage 1: find the templates to check, and the samples file beside each.

use crate::error::{Error, Result};
use crate::samples;
use globset::{Glob, GlobSet, GlobSetBuilder};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use walkdir::WalkDir;

/// Folders never walked into (explicit file arguments still count).
const SKIPPED_DIRS: [&str; 3] = [".git", "target", "node_modules"];

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Target {
    pub template: PathBuf,
}

pub struct Matcher {
    include: GlobSet,
    exclude: GlobSet,
}

impl Matcher {
    pub fn new(include: &[String], exclude: &[String]) -> Result<Self> {
        Ok(Matcher {
            include: build_globs(include)?,
            exclude: build_globs(exclude)?,
        })
    }

    pub fn is_template(&self, path: &Path) -> bool {
        path.file_name()
            .is_some_and(|name| self.include.is_match(Path::new(name)))
            && !self.is_excluded(path)
    }

    fn is_excluded(&self, path: &Path) -> bool {
        self.exclude.is_match(path)
            || path
                .file_name()
                .is_some_and(|n| self.exclude.is_match(Path::new(n)))
    }
}

fn build_globs(patterns: &[String]) -> Result<GlobSet> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = Glob::new(pattern)
            .map_err(|e| Error::input(format!("invalid glob `{pattern}`: {e}")))?;
        builder.add(glob);
    }
    builder
        .build()
        .map_err(|e| Error::input(format!("invalid globs: {e}")))
}

/// Expands the command-line paths. Files are always checked (pre-commit passes exactly the
/// changed ones); a changed samples file stands for its template. Folders are walked.
/// No paths means the current folder.
pub fn discover(paths: &[PathBuf], matcher: &Matcher) -> Result<Vec<Target>> {
    let defaults = [PathBuf::from(".")];
    let paths = if paths.is_empty() {
        &defaults[..]
    } else {
        paths
    };
    let mut found = BTreeSet::new();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                Error::input(format!("{}: no such file or directory", path.display()))
            }
            _ => Error::io(path, e),
        })?;
        if meta.is_dir() {
            walk(path, matcher, &mut found);
        } else if let Some(template) = samples::template_for_samples(path, matcher) {
            found.insert(clean(&template));
        } else if !samples::is_samples_file(path) {
            found.insert(clean(path));
        }
    }
    Ok(found
        .into_iter()
        .map(|template| Target { template })
        .collect())
}

fn walk(root: &Path, matcher: &Matcher, found: &mut BTreeSet<PathBuf>) {
    let walker = WalkDir::new(root)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|entry| entry.depth() == 0 || !is_skipped_dir(entry));
    // Errors are unreadable entries and symlink loops: walkdir detects loops, so skipping
    // them cannot hang.
    for entry in walker.flatten() {
        if entry.file_type().is_file() && matcher.is_template(entry.path()) {
            found.insert(clean(entry.path()));
        }
    }
}

fn is_skipped_dir(entry: &walkdir::DirEntry) -> bool {
    let name = entry.file_name().to_string_lossy();
    entry.file_type().is_dir() && (name.starts_with('.') || SKIPPED_DIRS.contains(&name.as_ref()))
}

fn clean(path: &Path) -> PathBuf {
    path.strip_prefix("./").unwrap_or(path).to_path_buf()
}
