//! Which samples file belongs to which template: `dir/name.ext` reads `dir/name.samples.yaml`.
//! Discovery owns the naming, so that a changed samples file stands for its template.

use super::Matcher;
use std::path::{Path, PathBuf};

pub const SAMPLES_SUFFIX: &str = ".samples.yaml";

/// `dir/name.ext` → `dir/name.samples.yaml`.
pub fn samples_path(template: &Path) -> PathBuf {
    let stem = template.file_stem().unwrap_or_default().to_string_lossy();
    template.with_file_name(format!("{stem}{SAMPLES_SUFFIX}"))
}

pub fn is_samples_file(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().ends_with(SAMPLES_SUFFIX))
}

/// The template a samples file belongs to: a sibling `name.*` that is a template.
pub fn template_for_samples(path: &Path, matcher: &Matcher) -> Option<PathBuf> {
    let name = path.file_name()?.to_string_lossy();
    let stem = name.strip_suffix(SAMPLES_SUFFIX)?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut candidates: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_stem().is_some_and(|s| s.to_string_lossy() == stem) && matcher.is_template(p)
        })
        .collect();
    candidates.sort();
    let found = candidates.into_iter().next()?;
    Some(match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.join(found.file_name()?),
        _ => PathBuf::from(found.file_name()?),
    })
}
