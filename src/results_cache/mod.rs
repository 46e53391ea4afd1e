//! The results cache, as ruff keeps one: each checked template's report, stored by a key of
//! everything that decides it, so an unchanged template is not rendered, tokenized or
//! analysed again. By default it lives in the user's cache folder, one folder per project
//! root ([`default_dir`]): `check` never writes into the tree it checks (a pre-commit hook,
//! a read-only checkout and an interrupted run leave the repository as it was).
//!
//! What is stored is the finished report (the profile's view, the reported sites, the
//! suppressions applied, the source cut to the lines findings quote); what finishing reads
//! is in the run's key, and every output format is written from the report, so they come
//! out byte for byte. Beside each report, the cache keeps the template as the run's writer
//! wrote it (its summary row and its text in that format, [`WrittenTemplate`]), so a warm
//! run in the same format writes the stored text and decodes no report.
//!
//! The key: the run's inputs (the build's fingerprint, the rules' data, the effective config,
//! the tokenizer's content hash, the working directory, the project root), the template's
//! path and content hash, its samples file's hash (or its absence), and every template it
//! includes, imports or extends, transitively: how each name resolves now, and the hash of
//! what it resolves to. The hashes come from [`Files`], which reads a file only when its
//! stamp (size, times, inode) changed. A template that names a template to load with an
//! expression is never cached (what it loads depends on values the key cannot see). Only
//! checked templates are stored; a failure is checked again on the next run. The entries of
//! one run key share two files ([`pack`]): the reports, and the templates as written (a
//! warm run in a form the cache has reads the second alone). The folder is bounded: a pack
//! keeps `MIN_ENTRIES_KEPT` entries at the least (the least recently used go first), and a
//! folder `MAX_PACKS` packs (the least recently used go first). Every failure here means
//! "no cache": a cache folder that cannot be made (a read-only project) is skipped
//! silently, and an entry that does not read back is checked again and overwritten.

mod files;
mod pack;
mod written;

pub use files::Files;

use crate::render::includes::IncludeResolver;
use crate::report::stream::WrittenTemplate;
use crate::report::TemplateReport;
use files::Loads;
use pack::Pack;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// An entry's key in a pack: a SHA-256.
pub type EntryId = [u8; 32];

/// A template's keys: its report's, and (when the run writes a form the cache keeps) its
/// written form's. Both come from one pass over the key's inputs: the written form's key
/// hashes the same inputs, then the form, so whatever changes the report changes it too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TemplateKey {
    report: EntryId,
    written: Option<EntryId>,
}

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

/// A SHA-256 of everything that shapes this build's output (its sources, `rules/`, the
/// embedded assets, `build.rs`, `Cargo.toml`, `Cargo.lock` and the compiler), from
/// `build.rs`: every key starts with it, so a rebuilt binary never reads another build's
/// results (the version number stays the same across builds from git). It is the stored
/// forms' version too: they are the types' serde forms, defined in `src/` (no version is
/// bumped by hand).
pub const BUILD_FINGERPRINT: &str = env!("PREFIXLINT_BUILD_FINGERPRINT");

/// Included templates followed per template, as `Renderer::reachable_sources` does.
const MAX_REFERENCED: usize = 256;

/// Entries a pack keeps at the least; a run that stores entries keeps up to four times its
/// own templates' count (an edited template leaves its old entry behind), the least
/// recently used left out first.
const MIN_ENTRIES_KEPT: usize = 10_000;

/// Packs a folder keeps (two per run key, reports and written forms: an edited config,
/// another tokenizer or a new build starts others); a run that stores entries removes the
/// least recently used past it, down to three quarters of it, never its own.
const MAX_PACKS: usize = 64;

/// A pack read back is marked used (its modification time set to now) when its mark is
/// older than this: least recently used, to the day, at no cost to most reads. Temporary
/// files older than this are left over from a run that was stopped, and removed.
const USED_MARK_AGE: Duration = Duration::from_secs(24 * 3600);

pub struct ResultsCache {
    dir: PathBuf,
    /// The hash of what every template's result depends on.
    run_key: String,
    /// A template key's hasher with the run key fed in: each template's key starts from a
    /// copy of it.
    keyed: Sha256,
    files: Files,
    /// This run key's reports: those stored before, and those this run stores.
    reports: Pack,
    /// This run key's templates as written, apart from the reports: a warm run in a form
    /// the cache has reads these alone (on fewshot, 1.6 of the 2.9 MB).
    written: Pack,
    hits: AtomicUsize,
    misses: AtomicUsize,
}

impl ResultsCache {
    /// Opens (making it if needed) the cache in `dir`; `None` when it cannot be made, or when
    /// `run_inputs` (everything that applies to the whole run, in a stable text form, from
    /// files read through the cache's [`Files`]) cannot be had.
    pub fn open(
        dir: &Path,
        run_inputs: impl FnOnce(&Files) -> Option<String>,
    ) -> Option<ResultsCache> {
        Self::open_for_build(dir, BUILD_FINGERPRINT, run_inputs)
    }

    /// [`ResultsCache::open`] as the build whose fingerprint is `build` would: what a test
    /// needs to show two builds sharing a folder, without building twice.
    pub fn open_for_build(
        dir: &Path,
        build: &str,
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
        let files = Files::open(dir, build);
        let run_inputs = run_inputs(&files)?;
        let run_key = run_key(build, &run_inputs);
        let reports = Pack::open(pack::path_in(dir, &run_key));
        let written = Pack::open(pack::written_path_in(dir, &run_key));
        // Marked whether or not this run reads them: a run served whole from the written
        // forms still uses the reports (another form is written from them).
        mark_used(reports.path());
        mark_used(written.path());
        let mut keyed = Sha256::new();
        field(&mut keyed, run_key.as_bytes());
        Some(ResultsCache {
            dir: dir.to_path_buf(),
            run_key,
            keyed,
            files,
            reports,
            written,
            hits: AtomicUsize::new(0),
            misses: AtomicUsize::new(0),
        })
    }

    /// The keys of the template at `path` (named `name` in its render environment, whose
    /// includes resolve through `includes`), its written form's in `form` ([`Self::get_written`])
    /// when given; `None` when it cannot be cached. `shape` is what else decides how it is
    /// read (its format and host kind: a `skprompt.txt`'s format is its `config.json`'s), in
    /// two bytes: a key then mostly takes no more SHA-256 blocks than without it.
    ///
    /// `samples_listed`: `Some(false)` when the folder listing discovery read (moments ago)
    /// shows no samples file for it, so none is looked for: good for finding an entry, where
    /// the report served is the one for the files as discovery saw them. A template about to
    /// be checked, whose report is stored under this key, is keyed with `None` (its samples
    /// file looked for now, just before the check reads it).
    pub fn key(
        &self,
        path: &Path,
        name: &str,
        includes: &IncludeResolver,
        form: Option<&str>,
        samples_listed: Option<bool>,
        shape: [u8; 2],
    ) -> Option<TemplateKey> {
        let mut hasher = self.keyed.clone();
        field(&mut hasher, path.as_os_str().as_encoded_bytes());
        field(&mut hasher, name.as_bytes());
        // Fixed size: no length before it.
        hasher.update(shape);
        let mut add = |bytes: &[u8]| field(&mut hasher, bytes);
        let template = self.files.record(path, true).ok()??;
        add(&template.digest);
        let samples = match samples_listed {
            Some(false) => Ok(None),
            _ => self
                .files
                .record(&crate::samples::samples_path(path), false),
        };
        match samples {
            Ok(Some(samples)) => {
                add(b"samples");
                add(&samples.digest);
            }
            Ok(None) => add(b"no samples"),
            Err(_) => return None,
        }
        match &template.loads {
            // Most templates include nothing: no walk to set up.
            Loads::Names(names) if names.is_empty() => {}
            _ => self.add_loaded(name, template, includes, &mut add)?,
        }
        let written = form.map(|form| {
            let mut written = hasher.clone();
            field(&mut written, b"written");
            field(&mut written, form.as_bytes());
            written.finalize().into()
        });
        Some(TemplateKey {
            report: hasher.finalize().into(),
            written,
        })
    }

    /// Adds to a key every template `name` (whose record is `template`) includes, imports or
    /// extends, transitively: how each name resolves, and the hash of what it resolves to.
    /// `None` when the key cannot be had (a name given by an expression, too many files).
    fn add_loaded(
        &self,
        name: &str,
        template: std::sync::Arc<files::Record>,
        includes: &IncludeResolver,
        add: &mut impl FnMut(&[u8]),
    ) -> Option<()> {
        let mut seen = BTreeSet::from([name.to_owned()]);
        let mut pending = vec![(name.to_owned(), template)];
        while let Some((parent, record)) = pending.pop() {
            let Loads::Names(names) = &record.loads else {
                // Not text, or a name given by an expression.
                return None;
            };
            for reference in names {
                add(parent.as_bytes());
                add(reference.as_bytes());
                let Some(found) = includes.resolve(&parent, reference).found() else {
                    add(b"not found");
                    continue;
                };
                add(found.as_bytes());
                if !seen.insert(found.clone()) {
                    continue;
                }
                if seen.len() > MAX_REFERENCED {
                    return None;
                }
                let file = includes.path_of(&found).ok()??;
                let included = self.files.record(&file, true).ok()??;
                add(&included.digest);
                pending.push((found, included));
            }
        }
        Some(())
    }

    /// Reads the pack a run's lookups will read first, ahead of them: the templates as
    /// written when the run writes a form the cache keeps (`written`), else the reports.
    pub fn read_ahead(&self, written: bool) {
        match written {
            true => self.written.read_ahead(),
            false => self.reports.read_ahead(),
        }
    }

    /// Files the keys read (and hashed) in this run: the others' stamps were unchanged.
    pub fn files_read(&self) -> usize {
        self.files.read_count()
    }

    /// At the end of a run: keeps the stamps of the files it read, for the next run, and
    /// when it stored entries, writes the packs it stored in and removes the least recently
    /// used packs past the folder's bound.
    pub fn save(&self) {
        self.files.save();
        if self.reports.changed() || self.written.changed() {
            let (hits, misses) = self.stats();
            for pack in [&self.reports, &self.written] {
                pack.finish(MIN_ENTRIES_KEPT.max(4 * (hits + misses)));
            }
            self.prune(MAX_PACKS);
        }
    }

    /// Removes packs (only files named as packs) past `keep`, the least recently used
    /// first, down to three quarters of `keep`, never this run's; and temporary files a
    /// stopped run left, once they are a day old.
    fn prune(&self, keep: usize) {
        let Ok(listing) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut packs: Vec<(SystemTime, PathBuf)> = Vec::new();
        let mut own = 0;
        for item in listing.flatten() {
            let Ok(name) = item.file_name().into_string() else {
                continue;
            };
            let modified = || item.metadata().ok()?.modified().ok();
            if name.starts_with(".tmp") {
                let age = modified().and_then(|at| at.elapsed().ok());
                if age.is_some_and(|age| age > USED_MARK_AGE) {
                    let _ = std::fs::remove_file(item.path());
                }
                continue;
            }
            match pack::run_key_of(&name) {
                Some(key) if key == self.run_key => own += 1,
                Some(_) => {
                    if let Some(at) = modified() {
                        packs.push((at, item.path()));
                    }
                }
                None => {}
            }
        }
        // This run's own packs count, but are never removed.
        if packs.len() + own <= keep {
            return;
        }
        packs.sort();
        let excess = (packs.len() + own).saturating_sub(keep * 3 / 4);
        for (_, path) in packs.into_iter().take(excess) {
            let _ = std::fs::remove_file(path);
        }
    }

    /// The stored report under `key`; a miss (or an entry that does not read back) counts
    /// as a miss.
    pub fn get(&self, key: &TemplateKey) -> Option<TemplateReport> {
        let found = self
            .reports
            .get(&key.report)
            .and_then(|bytes| serde_json::from_slice(bytes).ok());
        match &found {
            Some(_) => self.hits.fetch_add(1, Ordering::Relaxed),
            None => self.misses.fetch_add(1, Ordering::Relaxed),
        };
        found
    }

    /// The template stored under `key` as the run's writer writes it in the form the key
    /// was made for ([`crate::report::stream::written_form`]); found, it counts as a hit
    /// (not found, the caller looks for the report itself, which counts either way).
    pub fn get_written(&self, key: &TemplateKey) -> Option<WrittenTemplate> {
        let found = self
            .written
            .get(key.written.as_ref()?)
            .and_then(written::decode)?;
        self.hits.fetch_add(1, Ordering::Relaxed);
        // The report stays too: another form is written from it.
        self.reports.keep(&key.report);
        Some(found)
    }

    /// Stores the template under `key` as the writer wrote it in the key's form, beside its
    /// report.
    pub fn put_written(&self, key: &TemplateKey, written: &WrittenTemplate) {
        if let Some(written_key) = &key.written {
            self.written.put(written_key, &written::encode(written));
        }
    }

    /// Counts a template that cannot be cached as a miss.
    pub fn uncacheable(&self) {
        self.misses.fetch_add(1, Ordering::Relaxed);
    }

    /// Stores `report` under `key` (in the run's new pack, which replaces the old one whole
    /// at the end of the run); failures are ignored.
    pub fn put(&self, key: &TemplateKey, report: &TemplateReport) {
        if let Ok(bytes) = serde_json::to_vec(report) {
            self.reports.put(&key.report, &bytes);
        }
    }

    /// Templates served from the cache, and templates looked up and not found.
    pub fn stats(&self) -> (usize, usize) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }
}

/// The hash of what every template's key starts with: the build's fingerprint (which the
/// stored forms are versioned by) and the run's inputs.
fn run_key(build: &str, run_inputs: &str) -> String {
    hex(&Sha256::digest(format!("{build}\n{run_inputs}").as_bytes()))
}

/// One field of a key: its length, then its bytes (so no two lists of fields hash alike).
fn field(hasher: &mut Sha256, bytes: &[u8]) {
    hasher.update((bytes.len() as u64).to_le_bytes());
    hasher.update(bytes);
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

/// Marks a pack used (its modification time now) when there is one and its mark is older
/// than [`USED_MARK_AGE`].
fn mark_used(path: &Path) {
    let age = std::fs::metadata(path)
        .ok()
        .and_then(|meta| meta.modified().ok())
        .and_then(|at| at.elapsed().ok());
    if age.is_some_and(|age| age > USED_MARK_AGE) {
        if let Ok(file) = crate::source::open_regular(path, "a pack") {
            let _ = file.set_modified(SystemTime::now());
        }
    }
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
    fn the_build_and_each_run_input_are_in_every_key() {
        let dir = tempfile::tempdir().unwrap();
        let template = dir.path().join("t.j2");
        std::fs::write(&template, "Hello {{ name }}.").unwrap();
        let includes = IncludeResolver::new(dir.path(), &[]);
        let key = |inputs: &str| {
            let cache = ResultsCache::open(&dir.path().join("cache"), |_| Some(inputs.into()));
            cache
                .unwrap()
                .key(&template, "t.j2", &includes, None, None, [0, 0])
                .unwrap()
        };
        assert_eq!(key("rules A"), key("rules A"));
        assert_ne!(key("rules A"), key("rules B"));
        assert_ne!(run_key("0.1.0", "x"), run_key("0.1.1", "x"));
    }

    /// The principle behind the build fingerprint, without building twice: one template,
    /// checked for real, stored by two builds whose rule messages differ, in one folder.
    /// Each build is served its own report, and the first build's is never served to the
    /// second (nor to the same build with other rule data).
    #[test]
    fn each_build_is_served_its_own_reports_from_one_folder() {
        use crate::check::linter::{LintOptions, Linter};
        use crate::report::TemplateOutcome;
        let dir = tempfile::tempdir().unwrap();
        let template = dir.path().join("t.j2");
        let policy = "Answer briefly, cite the refund policy and never share internal notes.\n";
        std::fs::write(
            &template,
            format!("Request {{{{ request_id }}}}.\n{}", policy.repeat(40)),
        )
        .unwrap();
        let options = LintOptions {
            cwd: dir.path().to_path_buf(),
            ..LintOptions::default()
        };
        let linter = Linter::new(crate::config::Config::default(), options).unwrap();
        let report = match linter
            .check(std::slice::from_ref(&template))
            .unwrap()
            .next()
        {
            Some(TemplateOutcome::Checked(report)) => *report,
            _ => panic!("the template is checked"),
        };
        let message = report.findings.first().expect("a finding").message.clone();
        // What an earlier build, whose rule said something else, stored.
        let mut earlier = report.clone();
        earlier.findings[0].message = "the earlier build's message".into();

        let folder = dir.path().join("cache");
        let includes = IncludeResolver::new(dir.path(), &[]);
        let open = |build: &str, rules: &str| {
            ResultsCache::open_for_build(&folder, build, |_| Some(format!("rules {rules}")))
                .unwrap()
        };
        let key = |cache: &ResultsCache| {
            cache
                .key(&template, "t.j2", &includes, None, None, [0, 0])
                .unwrap()
        };
        let message_of = |cache: &ResultsCache| {
            cache
                .get(&key(cache))
                .map(|report| report.findings[0].message.clone())
        };

        let before = open("build A", "v1");
        assert_eq!(message_of(&before), None);
        before.put(&key(&before), &earlier);
        before.save();
        // A rebuild: another fingerprint, the same folder, the same template.
        let after = open("build B", "v1");
        assert_ne!(key(&after), key(&before));
        assert_eq!(message_of(&after), None, "served another build's report");
        after.put(&key(&after), &report);
        after.save();
        assert_eq!(
            message_of(&open("build A", "v1")).as_deref(),
            Some("the earlier build's message")
        );
        assert_eq!(message_of(&open("build B", "v1")), Some(message));
        // The rules' data is in the key too.
        assert_eq!(message_of(&open("build B", "v2")), None);
        // `open` is the running build's: its fingerprint, from build.rs.
        let running = ResultsCache::open(&folder, |_| Some("rules v1".into())).unwrap();
        assert_eq!(key(&running), key(&open(BUILD_FINGERPRINT, "v1")));
        assert_eq!(BUILD_FINGERPRINT.len(), 64);
        assert!(BUILD_FINGERPRINT.bytes().all(|b| b.is_ascii_hexdigit()));
    }

    /// A written form is found under its report's key and its form only: another form, or
    /// any change to the report's key (a template byte, the run's inputs), finds nothing.
    #[test]
    fn a_written_form_is_served_for_its_key_and_form_alone() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("cache");
        let template = dir.path().join("t.j2");
        std::fs::write(&template, "Hello {{ name }}.").unwrap();
        let includes = IncludeResolver::new(dir.path(), &[]);
        let written = WrittenTemplate {
            row: crate::report::TemplateRow {
                path: "t.j2".into(),
                samples: 2,
                tokens_min: 10,
                tokens_max: 12,
                shared_prefix_tokens: 4,
                cached_tokens_expected: 0,
                recoverable_tokens: 6,
                severities: vec![crate::rules::Severity::Error],
                stand_ins: vec!["state".into()],
                unknown: Vec::new(),
                cost: None,
            },
            text: "    {\n      \"path\": \"t.j2\"\n    }".into(),
        };
        let open = |inputs: &str| ResultsCache::open(&folder, |_| Some(inputs.into())).unwrap();
        let key = |cache: &ResultsCache, form| {
            cache.key(&template, "t.j2", &includes, form, None, [0, 0])
        };
        let cache = open("inputs");
        let json = key(&cache, Some("json")).unwrap();
        cache.put_written(&json, &written);
        // A key made without a form neither stores nor finds a written form.
        let bare = key(&cache, None).unwrap();
        cache.put_written(&bare, &written);
        cache.save();
        let cache = open("inputs");
        assert_eq!(cache.get_written(&json), Some(written.clone()));
        assert_eq!(key(&cache, Some("json")), Some(json));
        assert_eq!(cache.get_written(&bare), None);
        assert_eq!(cache.get_written(&key(&cache, Some("full")).unwrap()), None);
        assert_eq!(cache.stats(), (1, 0));
        // The report's key is the same whatever the form; the written form's is not.
        assert_eq!(key(&cache, Some("full")).unwrap().report, json.report);
        assert_ne!(key(&cache, Some("full")).unwrap().written, json.written);
        assert!(!json.written.iter().any(|written| *written == json.report));
        let other_run = open("other inputs");
        assert_eq!(
            other_run.get_written(&key(&other_run, Some("json")).unwrap()),
            None
        );
        std::fs::write(&template, "Hello {{ name }}!").unwrap();
        let edited = open("inputs");
        assert_eq!(
            edited.get_written(&key(&edited, Some("json")).unwrap()),
            None
        );
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
