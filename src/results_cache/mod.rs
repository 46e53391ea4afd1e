//! The results cache, as ruff keeps one: each checked template's report, stored by a key of
//! everything that decides it, so an unchanged template is not rendered, tokenized or
//! analysed again. By default it lives in the user's cache folder, one folder per project
//! root ([`default_dir`]): `check` never writes into the tree it checks (a pre-commit hook,
//! a read-only checkout and an interrupted run leave the repository as it was).
//!
//! What is stored is the finished report (the profile's view, the reported sites, the
//! suppressions applied, the source cut to the lines findings quote); what finishing reads
//! is in the run's key, and every output format is written from the report, so they come
//! out byte for byte.
//!
//! The key: the run's inputs (prefixlint's version, the rules' data, the effective config,
//! the tokenizer's content hash, the working directory, the project root), the template's
//! path and content hash, its samples file's hash (or its absence), and every template it
//! includes, imports or extends, transitively: how each name resolves now, and the hash of
//! what it resolves to. The hashes come from [`Files`], which reads a file only when its
//! stamp (size, times, inode) changed. A template that names a template to load with an
//! expression is never cached (what it loads depends on values the key cannot see). Only
//! checked templates are stored; a failure is checked again on the next run. The folder is
//! bounded (`MIN_ENTRIES_KEPT`): least recently used entries go first. Every failure
//! here means "no cache": a cache folder that cannot be made (a read-only project) is
//! skipped silently, and an entry that does not read back is checked again and overwritten.

mod files;

pub use files::Files;

use crate::render::includes::IncludeResolver;
use crate::report::TemplateReport;
use files::Loads;
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// `<user cache folder>/results/<hash of the project root>` (the user cache folder as the
/// tokenizer cache finds it: `$PREFIXLINT_CACHE_DIR`, `$XDG_CACHE_HOME/prefixlint`,
/// `~/.cache/prefixlint`); `None` without one.
pub fn default_dir(project_root: &Path) -> Option<PathBuf> {
    let root = project_root
        .canonicalize()
        .unwrap_or_else(|_| project_root.to_path_buf());
    let key = crate::tokenize::cache::content_key(root.as_os_str().as_encoded_bytes());
    Some(
        crate::tokenize::cache::cache_dir()?
            .join("results")
            .join(&key[..16]),
    )
}

/// Bump when the stored form changes: old entries are then simply not found.
const FORMAT: &str = "results-v2";

/// Included templates followed per template, as `Renderer::reachable_sources` does.
const MAX_REFERENCED: usize = 256;

/// Entries a folder keeps at the least; a run that stores entries keeps up to four times its
/// own templates' count, and past that removes the least recently used down to three
/// quarters of it (an edited template or config leaves its old entries behind).
const MIN_ENTRIES_KEPT: usize = 10_000;

/// An entry read back is marked used (its modification time set to now) when its mark is
/// older than this: least recently used, to the day, at no cost to most reads.
const USED_MARK_AGE: Duration = Duration::from_secs(24 * 3600);

pub struct ResultsCache {
    dir: PathBuf,
    /// The hash of what every template's result depends on.
    run_key: String,
    files: Files,
    hits: AtomicUsize,
    misses: AtomicUsize,
    /// The entries this run read or wrote: never pruned by it.
    used: Mutex<HashSet<String>>,
    stored: AtomicUsize,
}

impl ResultsCache {
    /// Opens (making it if needed) the cache in `dir`; `None` when it cannot be made, or when
    /// `run_inputs` (everything that applies to the whole run, in a stable text form, from
    /// files read through the cache's [`Files`]) cannot be had.
    pub fn open(
        dir: &Path,
        run_inputs: impl FnOnce(&Files) -> Option<String>,
    ) -> Option<ResultsCache> {
        if !dir.is_dir() {
            std::fs::create_dir_all(dir).ok()?;
        }
        // Marks the folder for backup tools and git; a file already there is left as it is.
        write_if_missing(&dir.join(".gitignore"), b"# Created by prefixlint.\n*\n");
        write_if_missing(
            &dir.join("CACHEDIR.TAG"),
            b"Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by prefixlint.\n# For information about cache directory tags see https://bford.info/cachedir/\n",
        );
        let files = Files::open(dir);
        let run_inputs = run_inputs(&files)?;
        Some(ResultsCache {
            dir: dir.to_path_buf(),
            run_key: run_key(env!("CARGO_PKG_VERSION"), &run_inputs),
            files,
            hits: AtomicUsize::new(0),
            misses: AtomicUsize::new(0),
            used: Mutex::new(HashSet::new()),
            stored: AtomicUsize::new(0),
        })
    }

    /// The key of the template at `path` (named `name` in its render environment, whose
    /// includes resolve through `includes`), or `None` when it cannot be cached.
    pub fn key(&self, path: &Path, name: &str, includes: &IncludeResolver) -> Option<String> {
        let mut hasher = Sha256::new();
        let mut field = |bytes: &[u8]| {
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        };
        field(self.run_key.as_bytes());
        field(path.as_os_str().as_encoded_bytes());
        field(name.as_bytes());
        let template = self.files.record(path, true).ok()??;
        field(&template.digest);
        match self
            .files
            .record(&crate::samples::samples_path(path), false)
        {
            Ok(Some(samples)) => {
                field(b"samples");
                field(&samples.digest);
            }
            Ok(None) => field(b"no samples"),
            Err(_) => return None,
        }
        let mut seen = BTreeSet::from([name.to_owned()]);
        let mut pending = vec![(name.to_owned(), template)];
        while let Some((parent, record)) = pending.pop() {
            let Loads::Names(names) = &record.loads else {
                // Not text, or a name given by an expression.
                return None;
            };
            for reference in names {
                field(parent.as_bytes());
                field(reference.as_bytes());
                let Some(found) = includes.resolve(&parent, reference).found() else {
                    field(b"not found");
                    continue;
                };
                field(found.as_bytes());
                if !seen.insert(found.clone()) {
                    continue;
                }
                if seen.len() > MAX_REFERENCED {
                    return None;
                }
                let file = includes.path_of(&found).ok()??;
                let included = self.files.record(&file, true).ok()??;
                field(&included.digest);
                pending.push((found, included));
            }
        }
        Some(hex(&hasher.finalize()))
    }

    /// Files the keys read (and hashed) in this run: the others' stamps were unchanged.
    pub fn files_read(&self) -> usize {
        self.files.read_count()
    }

    /// At the end of a run: keeps the stamps of the files it read, for the next run, and
    /// when it stored entries, removes the least recently used past the folder's bound.
    pub fn save(&self) {
        self.files.save();
        if self.stored.load(Ordering::Relaxed) > 0 {
            let (hits, misses) = self.stats();
            self.prune(MIN_ENTRIES_KEPT.max(4 * (hits + misses)));
        }
    }

    /// Removes entries (only files named as entries) past `keep`, the least recently used
    /// first, down to three quarters of `keep`; this run's own are kept.
    fn prune(&self, keep: usize) {
        let Ok(listing) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let entries: Vec<(PathBuf, String)> = listing
            .flatten()
            .filter_map(|item| {
                let name = item.file_name().into_string().ok()?;
                let key = name.strip_suffix(".json")?;
                let is_key =
                    key.len() == 64 && key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
                is_key.then(|| (item.path(), key.to_owned()))
            })
            .collect();
        if entries.len() <= keep {
            return;
        }
        let excess = entries.len() - keep * 3 / 4;
        let used = lock(&self.used);
        let mut others: Vec<(SystemTime, PathBuf)> = entries
            .into_iter()
            .filter(|(_, key)| !used.contains(key))
            .filter_map(|(path, _)| Some((std::fs::metadata(&path).ok()?.modified().ok()?, path)))
            .collect();
        others.sort();
        for (_, path) in others.into_iter().take(excess) {
            let _ = std::fs::remove_file(path);
        }
    }

    /// The stored report under `key`; a miss (or an entry that does not read back) counts
    /// as a miss.
    pub fn get(&self, key: &str) -> Option<TemplateReport> {
        let found = read_entry(&self.entry(key));
        match &found {
            Some(_) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                lock(&self.used).insert(key.to_owned());
            }
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
            }
        };
        found
    }

    /// Counts a template that cannot be cached as a miss.
    pub fn uncacheable(&self) {
        self.misses.fetch_add(1, Ordering::Relaxed);
    }

    /// Stores `report` under `key`, atomically (temp file + rename); failures are ignored.
    pub fn put(&self, key: &str, report: &TemplateReport) {
        if let Ok(bytes) = serde_json::to_vec(report) {
            replace_file(&self.entry(key), &bytes);
            lock(&self.used).insert(key.to_owned());
            self.stored.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Templates served from the cache, and templates looked up and not found.
    pub fn stats(&self) -> (usize, usize) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }

    fn entry(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }
}

/// The hash of what every template's key starts with: the stored form, prefixlint's version
/// and the run's inputs.
fn run_key(version: &str, run_inputs: &str) -> String {
    hex(&Sha256::digest(
        format!("{FORMAT}\n{version}\n{run_inputs}").as_bytes(),
    ))
}

/// Whether a source has an include, import or extends tag that is not a literal name
/// (with the usual modifiers): what it loads is then decided at render time.
fn loads_by_expression(source: &str) -> bool {
    static TAG: std::sync::OnceLock<(regex::Regex, regex::Regex)> = std::sync::OnceLock::new();
    let (tag, literal) = TAG.get_or_init(|| {
        (
            regex::Regex::new(r"\{%[-+]?\s*(?:include|import|extends|from)\b([^%]*)%\}")
                .expect("valid regex"),
            regex::Regex::new(
                r#"^\s*(?:"[^"]*"|'[^']*')(?:\s+(?:ignore\s+missing|with\s+context|without\s+context|import\s+[\w\s,]+|as\s+\w+))*\s*[-+]?$"#,
            )
            .expect("valid regex"),
        )
    });
    tag.captures_iter(source)
        .any(|c| !literal.is_match(c.get(1).map_or("", |m| m.as_str())))
}

/// The report stored at `path`, marked used when its mark is older than [`USED_MARK_AGE`].
fn read_entry(path: &Path) -> Option<TemplateReport> {
    let mut file = std::fs::File::open(path).ok()?;
    let meta = file.metadata().ok()?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes).ok()?;
    let report = serde_json::from_slice(&bytes).ok()?;
    let age = meta.modified().ok().and_then(|at| at.elapsed().ok());
    if age.is_some_and(|age| age > USED_MARK_AGE) {
        let _ = file.set_modified(SystemTime::now());
    }
    Some(report)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Puts `bytes` at `path` whole (temp file + rename), or leaves it as it was; failures are
/// ignored, as everything in a cache may be.
fn replace_file(path: &Path, bytes: &[u8]) {
    let Some(dir) = path.parent() else { return };
    let Ok(mut file) = tempfile::NamedTempFile::new_in(dir) else {
        return;
    };
    if std::io::Write::write_all(&mut file, bytes).is_ok() {
        let _ = file.persist(path);
    }
}

fn write_if_missing(path: &Path, bytes: &[u8]) {
    if path.exists() {
        return;
    }
    let Some(dir) = path.parent() else { return };
    if let Ok(mut file) = tempfile::NamedTempFile::new_in(dir) {
        if std::io::Write::write_all(&mut file, bytes).is_ok() {
            let _ = file.persist_noclobber(path);
        }
    }
}

/// Lower-case hex, as the cache's file names are written.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(DIGITS[usize::from(byte >> 4)] as char);
        text.push(DIGITS[usize::from(byte & 15)] as char);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixlint_s_version_and_each_run_input_are_in_every_key() {
        let dir = tempfile::tempdir().unwrap();
        let template = dir.path().join("t.j2");
        std::fs::write(&template, "Hello {{ name }}.").unwrap();
        let includes = IncludeResolver::new(dir.path(), &[]);
        let key = |inputs: &str| {
            let cache = ResultsCache::open(&dir.path().join("cache"), |_| Some(inputs.into()));
            cache.unwrap().key(&template, "t.j2", &includes).unwrap()
        };
        assert_eq!(key("rules A"), key("rules A"));
        assert_ne!(key("rules A"), key("rules B"));
        assert_ne!(run_key("0.1.0", "x"), run_key("0.1.1", "x"));
    }

    #[test]
    fn literal_names_are_static_and_expressions_are_not() {
        for source in [
            r#"{% include "a.j2" %}"#,
            r#"{%- include 'a.j2' ignore missing with context -%}"#,
            r#"{% from "m.j2" import a as b, c %}"#,
            r#"{% import "m.j2" as m %}"#,
            r#"{% extends "base.j2" %}"#,
            "no tags at all",
        ] {
            assert!(!loads_by_expression(source), "{source}");
        }
        for source in [
            r#"{% include name %}"#,
            r#"{% include "a" ~ x %}"#,
            r#"{% include ["a.j2", "b.j2"] %}"#,
            r#"{% extends layout %}"#,
        ] {
            assert!(loads_by_expression(source), "{source}");
        }
    }
}
