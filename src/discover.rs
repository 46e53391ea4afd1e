//! Stage 1: find the templates to check, and the samples file beside each.

pub mod hosts;
mod non_prompt;
pub mod samples_files;

use crate::error::{Error, Result};
use crate::formats::TemplateFormat;
use crate::host::HostKind;
use crate::source;
use crate::tokenize::bpe::PairHasher;
use globset::{Glob, GlobSet, GlobSetBuilder};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::hash::BuildHasherDefault;
use std::path::{Path, PathBuf};
use walkdir::WalkDir;

/// Paths by their bytes, hashed eight bytes a step: hashing a `Path` walks it byte by byte
/// for separators, and SipHash costs more than the lookups (a walk makes one per file).
type BytesMap<K, V> = HashMap<K, V, BuildHasherDefault<PairHasher>>;
type BytesSet = HashSet<Vec<u8>, BuildHasherDefault<PairHasher>>;

/// Folders never walked into (explicit file arguments still count).
const SKIPPED_DIRS: [&str; 3] = [".git", "target", "node_modules"];

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Target {
    /// The path as found (shown in reports).
    pub template: PathBuf,
    /// Its canonical path (links resolved), found once at discovery.
    pub real: PathBuf,
    /// For a template inside a host file (`template` is the host): which one, and its text.
    pub embedded: Option<std::sync::Arc<hosts::Embedded>>,
    /// Whether the folder listing a walk read shows a samples file for this template
    /// (compared ASCII case-insensitively, as a case-insensitive file system would find
    /// it); `None` when no walk listed its folder or its name is not ASCII. The results
    /// cache takes `Some(false)` as "no samples file" without looking for one.
    pub samples_listed: Option<bool>,
    /// The format the template is in (an embedded template's is its host's word for it).
    pub format: crate::formats::TemplateFormat,
}

impl Target {
    /// The samples file that belongs to this template (it may not exist).
    pub fn samples_file(&self) -> PathBuf {
        samples_files::samples_path(&self.template)
    }
}

/// A file a folder walk found and left out, with why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub path: String,
    pub reason: String,
}

/// What discovery found: the templates to check, and what it left out.
#[derive(Debug, Default)]
pub struct Discovery {
    pub targets: Vec<Target>,
    /// Files that match an include glob but are not prompts (`*.yml.j2`, `Dockerfile.j2`, …).
    pub skipped: Vec<Skipped>,
    /// Include globs that matched no file in the walked folders (none when no folder was walked).
    pub unmatched_globs: Vec<String>,
    /// The folders walked (command-line folders, or `.` without paths).
    pub walked: Vec<PathBuf>,
    /// Files matched by an include glob but left out by an `exclude:` glob.
    pub excluded: usize,
    /// Host files that are prompts but could not be read as one (bad `.prompty` front matter).
    pub failed: Vec<(String, Error)>,
    /// Host files read for embedded templates.
    pub hosts_scanned: usize,
    /// Prompt-like text found that no format can check, in path and line order.
    pub unchecked: Vec<hosts::UncheckedPlace>,
}

pub struct Matcher {
    include: GlobSet,
    /// The include globs as written, in the order `include` knows them.
    include_globs: Vec<String>,
    /// Include globs that name a kind of file (`*.yml.j2`, `Dockerfile*.j2`): files they
    /// match are checked even when their name says they are not prompts.
    opted_in: GlobSet,
    exclude: GlobSet,
    /// Host files (YAML, Python, `.prompty`, prompt-poet) are read for embedded templates;
    /// `None` for the commands that render files whole.
    hosts: Option<hosts::HostSettings>,
}

/// What a folder walk does with a file.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Decision {
    Check,
    /// A host file, with the reason its name says it is not a prompt, and whether an
    /// `include:` glob of the user's names it.
    Host(HostKind, Option<String>, bool),
    NotPrompt(String),
    Excluded,
    Ignore,
}

impl Matcher {
    pub fn new(include: &[String], exclude: &[String]) -> Result<Self> {
        // A glob that also matches an ordinary `NAME.j2` (`*.j2`, `**/*.j2`, `*`) says
        // nothing about code or config files, so it does not opt them in.
        let ordinary = ["prompt.j2", "prompt.jinja", "prompt.jinja2"];
        let opted_in: Vec<String> = include
            .iter()
            .filter(|glob| {
                Glob::new(glob).is_ok_and(|g| {
                    let matcher = g.compile_matcher();
                    !ordinary.iter().any(|name| matcher.is_match(name))
                })
            })
            .cloned()
            .collect();
        Ok(Matcher {
            include: build_globs(include)?,
            include_globs: include.to_vec(),
            opted_in: build_globs(&opted_in)?,
            exclude: build_globs(exclude)?,
            hosts: None,
        })
    }

    /// Also reads host files for the templates embedded in them (what `check` does).
    pub fn with_hosts(mut self, settings: hosts::HostSettings) -> Self {
        self.hosts = Some(settings);
        self
    }

    fn host_kind(&self, path: &Path) -> Option<HostKind> {
        self.hosts.as_ref()?.kind_of(path)
    }

    /// What a walk does with the file at `path`, whose file name is `name` (found once per
    /// file: each `file_name` parses the path from its end); marks in `glob_hits` the
    /// include globs the name matches, while one has not matched yet.
    fn decide(&self, path: &Path, name: &OsStr, glob_hits: &mut [bool]) -> Decision {
        let candidate = globset::Candidate::new(name);
        let host = self
            .hosts
            .as_ref()
            .and_then(|h| h.kind_of_named(path, name));
        let included = if glob_hits.contains(&false) {
            let matched = self.include.matches_candidate(&candidate);
            for &index in &matched {
                glob_hits[index] = true;
            }
            !matched.is_empty()
        } else {
            self.include.is_match_candidate(&candidate)
        };
        if !included {
            return match host {
                Some(kind) if !self.is_excluded(path) => Decision::Host(kind, None, false),
                _ => Decision::Ignore,
            };
        }
        if self.is_excluded(path) {
            return Decision::Excluded;
        }
        let opted_in = self.opted_in.is_match_candidate(&candidate);
        match (non_prompt::reason_named(name), host) {
            // A `.yml.j2` is a prompt-poet prompt when its parts say so.
            (Some(reason), Some(kind)) if !opted_in => Decision::Host(kind, Some(reason), false),
            (Some(reason), None) if !opted_in => Decision::NotPrompt(reason),
            (_, Some(kind)) => Decision::Host(kind, None, opted_in),
            _ => Decision::Check,
        }
    }

    pub fn is_template(&self, path: &Path) -> bool {
        path.file_name()
            .is_some_and(|name| self.include.is_match(Path::new(name)))
            && !self.is_excluded(path)
    }

    fn is_excluded(&self, path: &Path) -> bool {
        !self.exclude.is_empty()
            && (self.exclude.is_match(path)
                || path
                    .file_name()
                    .is_some_and(|n| self.exclude.is_match(Path::new(n))))
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

/// The templates to check; see [`find`].
pub fn discover(paths: &[PathBuf], matcher: &Matcher) -> Result<Vec<Target>> {
    Ok(find(paths, matcher)?.targets)
}

/// Expands the command-line paths. Files are always checked (pre-commit passes exactly the
/// changed ones); a changed samples file stands for its template. Folders are walked, and
/// files that are not prompts are skipped there. No paths means the current folder.
/// A file reached by two paths (a symlinked folder) is checked once, shown by the path
/// without links when there is one.
pub fn find(paths: &[PathBuf], matcher: &Matcher) -> Result<Discovery> {
    let defaults = [PathBuf::from(".")];
    let paths = if paths.is_empty() {
        &defaults[..]
    } else {
        paths
    };
    let mut walk_state = Walk {
        matcher,
        hosts: BTreeMap::new(),
        found: Found::default(),
        skipped: Vec::new(),
        glob_hits: vec![false; matcher.include_globs.len()],
        excluded: 0,
        samples_listed: BytesSet::default(),
        samples_listed_all: true,
    };
    let mut walked = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                Error::input(format!("{}: no such file or directory", path.display()))
            }
            _ => Error::io(path, e),
        })?;
        if meta.is_dir() {
            walk_state.walk(path);
            walked.push(clean(path));
        } else if let Some(template) = samples_files::template_for_samples(path, matcher) {
            walk_state.found.insert(&template, false);
        } else if let Some(reason) = named_not_host(path, matcher) {
            walk_state.skipped.push(Skipped {
                path: source::display_path(&clean(path)),
                reason,
            });
        } else if let Some(kind) = matcher.host_kind(path) {
            walk_state.add_host(path, None, kind, true, None);
        } else if !samples_files::is_samples_file(path) {
            walk_state.found.insert(path, false);
        }
    }
    let Walk {
        found,
        mut skipped,
        glob_hits,
        excluded,
        hosts: host_files,
        samples_listed,
        samples_listed_all,
        ..
    } = walk_state;
    let mut targets = found.into_targets(&samples_listed, samples_listed_all, walked.len() <= 1);
    let mut failed = Vec::new();
    let mut hosts_scanned = 0;
    let mut unchecked = Vec::new();
    if let Some(settings) = &matcher.hosts {
        // No host file, no worker pool started to read none.
        if !host_files.is_empty() {
            let expanded = hosts::expand(host_files.into_values().collect(), settings);
            // Most host files hold no prompt (a README.md): the targets are in order already.
            if !expanded.targets.is_empty() {
                targets.extend(expanded.targets);
                targets.sort();
            }
            skipped.extend(expanded.skipped);
            failed = expanded.failed;
            hosts_scanned = expanded.scanned;
            unchecked = expanded.unchecked;
            unchecked.sort();
        }
        skipped.sort_by(|a, b| a.path.cmp(&b.path));
    }
    let unmatched_globs = if walked.is_empty() {
        Vec::new()
    } else {
        matcher
            .include_globs
            .iter()
            .zip(glob_hits)
            .filter(|(_, hit)| !hit)
            .map(|(glob, _)| glob.clone())
            .collect()
    };
    Ok(Discovery {
        targets,
        skipped,
        unmatched_globs,
        walked,
        excluded,
        failed,
        hosts_scanned,
        unchecked,
    })
}

/// Templates found so far, once each by their real path, shown by the path that reached
/// it: a path without links wins, else the first one.
#[derive(Default)]
struct Found {
    /// Where each real path sits in `found`, by the path's bytes (a canonical path has one
    /// spelling; a sorted map of paths compared deep paths component by component on every
    /// insert, and hashing a `Path` walks it byte by byte for separators: they were the
    /// most of a warm run's discovery).
    by_real_path: BytesMap<OsString, usize>,
    /// (real path, shown path, whether a walk found the shown path), in the order found: a
    /// walk finds files in path order, so sorting the targets after costs one comparison each.
    found: Vec<(PathBuf, PathBuf, bool)>,
    /// Something other than a walk added to `found`, or a file was met twice: `found` may
    /// then be out of path order.
    mixed: bool,
}

impl Found {
    /// `walked`: a walk found `path` (its folder's listing was read).
    fn insert(&mut self, path: &Path, walked: bool) {
        let real = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        let direct = std::path::absolute(path).is_ok_and(|absolute| absolute == real);
        self.insert_real(path, real, direct, walked);
    }

    /// `real` is `path`'s canonical form, and `direct` whether `path` reached it without links.
    fn insert_real(&mut self, path: &Path, real: PathBuf, direct: bool, walked: bool) {
        let shown = clean(path);
        self.mixed |= !walked;
        match self.by_real_path.entry(real.as_os_str().to_owned()) {
            std::collections::hash_map::Entry::Occupied(found) => {
                self.mixed = true;
                let (real, existing, existing_walked) = &mut self.found[*found.get()];
                let existing_direct =
                    std::path::absolute(&*existing).is_ok_and(|absolute| absolute == *real);
                if direct && !existing_direct {
                    *existing = shown;
                    *existing_walked = walked;
                }
            }
            std::collections::hash_map::Entry::Vacant(vacant) => {
                vacant.insert(self.found.len());
                self.found.push((real, shown, walked));
            }
        }
    }

    /// `samples_listed`: the samples files the walks listed ([`listed_key`]), usable when
    /// `listing_usable`; `one_walk`: at most one folder was walked.
    fn into_targets(
        self,
        samples_listed: &BytesSet,
        listing_usable: bool,
        one_walk: bool,
    ) -> Vec<Target> {
        // One walk alone found them in path order (siblings sorted by name, each folder's
        // files before the next sibling's): sorting again cost a comparison of two paths,
        // component by component, per template.
        let in_order = one_walk && !self.mixed;
        let mut targets: Vec<Target> = self
            .found
            .into_iter()
            .map(|(real, template, walked)| {
                let samples_listed = (walked && listing_usable)
                    .then(|| samples_listed_key(&template))
                    .flatten()
                    .map(|key| samples_listed.contains(&key));
                Target {
                    template,
                    real,
                    embedded: None,
                    samples_listed,
                    format: TemplateFormat::Jinja,
                }
            })
            .collect();
        if in_order {
            debug_assert!(targets.is_sorted(), "a walk finds files in path order");
        } else {
            targets.sort();
        }
        targets
    }
}

struct Walk<'m> {
    matcher: &'m Matcher,
    /// Host files to read, once each by their real path.
    hosts: BTreeMap<PathBuf, hosts::Candidate>,
    found: Found,
    skipped: Vec<Skipped>,
    glob_hits: Vec<bool>,
    excluded: usize,
    /// Every entry a walk met named as a samples file ([`listed_key`]), readable or not.
    samples_listed: BytesSet,
    /// Whether every such entry's path was ASCII: one that is not could be what a
    /// case-insensitive file system finds for an ASCII name, so the listing is then not
    /// used at all.
    samples_listed_all: bool,
}

impl Walk<'_> {
    /// `real` is `path`'s canonical form when the caller knows it; `named` says the user
    /// named the file (on the command line, or by an `include:` glob that names its kind).
    fn add_host(
        &mut self,
        path: &Path,
        real: Option<PathBuf>,
        kind: HostKind,
        named: bool,
        not_prompt: Option<String>,
    ) {
        let real =
            real.unwrap_or_else(|| path.canonicalize().unwrap_or_else(|_| path.to_path_buf()));
        let candidate = self.hosts.entry(real.clone()).or_insert(hosts::Candidate {
            shown: clean(path),
            real,
            kind,
            named,
            not_prompt,
            template_anyway: named,
        });
        candidate.named |= named;
        candidate.template_anyway |= named;
    }

    /// Notes an entry the walk met when its name is a samples file's.
    fn note_samples_file(&mut self, path: &Path) {
        let name = last_component(path);
        let suffix = samples_files::SAMPLES_SUFFIX.as_bytes();
        if name.len() >= suffix.len()
            && name[name.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
        {
            if let Some(key) = listed_key(&clean(path)) {
                self.samples_listed.insert(key);
            } else {
                // Not ASCII: compared by bytes it could miss a spelling the file system finds.
                self.samples_listed_all = false;
            }
        }
    }

    fn walk(&mut self, root: &Path) {
        // Links are followed inside the walked folder only (as ripgrep keeps a walk to its
        // root): a link out of it is not read, and is listed as skipped when a walk would
        // have looked at what it names.
        let real_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let mut links_out: Vec<(PathBuf, bool)> = Vec::new();
        let walker = WalkDir::new(root)
            .follow_links(true)
            // Siblings' paths are their folder's path and a name: comparing the whole
            // paths' bytes orders them by name, as `sort_by_file_name` does, with one
            // `memcmp` and without finding each name.
            .sort_by(|a, b| path_bytes(a).cmp(path_bytes(b)))
            .into_iter()
            .filter_entry(|entry| {
                if entry.depth() == 0 {
                    return true;
                }
                if entry.path_is_symlink()
                    && !entry
                        .path()
                        .canonicalize()
                        .is_ok_and(|real| real.starts_with(&real_root))
                {
                    links_out.push((entry.path().to_path_buf(), entry.file_type().is_dir()));
                    return false;
                }
                !is_skipped_dir(entry)
            });
        // Each folder of a found file, canonical, and whether it was reached without links:
        // a file in it that is not a link is canonical with one `join`, not a `canonicalize`
        // (a syscall per path component).
        let mut folders: BytesMap<OsString, Option<(PathBuf, bool)>> = BytesMap::default();
        // Errors are unreadable entries and symlink loops: walkdir detects loops, so skipping
        // them cannot hang.
        for entry in walker {
            let entry = match entry {
                Ok(entry) => entry,
                Err(error) => {
                    // Unreadable, yet there: a samples file by that name is looked for.
                    if let Some(path) = error.path() {
                        self.note_samples_file(path);
                    }
                    continue;
                }
            };
            self.note_samples_file(entry.path());
            if !entry.file_type().is_file() {
                continue;
            }
            let path = entry.path();
            let Some(name) = path.file_name() else {
                continue;
            };
            match self.matcher.decide(path, name, &mut self.glob_hits) {
                Decision::Check => match (entry.path_is_symlink(), path.parent()) {
                    (false, Some(parent)) => match real_folder(&mut folders, parent) {
                        Some((real, direct)) => {
                            self.found.insert_real(path, real.join(name), *direct, true)
                        }
                        None => self.found.insert(path, true),
                    },
                    _ => self.found.insert(path, true),
                },
                Decision::Host(kind, not_prompt, opted_in) => {
                    // A repository has thousands of hosts: one `canonicalize` per folder.
                    let real = match (entry.path_is_symlink(), path.parent()) {
                        (false, Some(parent)) => real_folder(&mut folders, parent)
                            .as_ref()
                            .map(|(real, _)| real.join(name)),
                        _ => None,
                    };
                    self.add_host(path, real, kind, opted_in, not_prompt)
                }
                Decision::NotPrompt(reason) => {
                    let shown = source::display_path(&clean(path));
                    if !self.skipped.iter().any(|s| s.path == shown) {
                        self.skipped.push(Skipped {
                            path: shown,
                            reason,
                        });
                    }
                }
                Decision::Excluded => self.excluded += 1,
                Decision::Ignore => {}
            }
        }
        self.skip_links_out(links_out);
    }

    /// Lists the links out of a walked folder that lead to a folder, a template or a host:
    /// what the walk did not read, said (a dangling link is no file to read).
    fn skip_links_out(&mut self, links: Vec<(PathBuf, bool)>) {
        let mut hits = vec![false; self.glob_hits.len()];
        for (path, is_dir) in links {
            // Listed, so its template reads it and refuses it (a samples file out of the
            // project is an error, not "no samples").
            self.note_samples_file(&path);
            let Some(name) = path.file_name() else {
                continue;
            };
            let dangling = std::fs::metadata(&path).is_err();
            let looked_at = is_dir
                || matches!(
                    self.matcher.decide(&path, name, &mut hits),
                    Decision::Check | Decision::Host(..)
                );
            if looked_at && !dangling && !samples_files::is_samples_file(&path) {
                self.skipped.push(Skipped {
                    path: source::display_path(&clean(&path)),
                    reason: "a link out of the checked folder: not followed (name its target to check it)".into(),
                });
            }
        }
    }
}

/// A found file's folder, canonical, and whether it was reached without links; looked up
/// without copying the folder's path, which is the same for most files in a row.
fn real_folder<'f>(
    folders: &'f mut BytesMap<OsString, Option<(PathBuf, bool)>>,
    parent: &Path,
) -> &'f Option<(PathBuf, bool)> {
    let key: &OsStr = parent.as_os_str();
    if !folders.contains_key(key) {
        let real = parent.canonicalize().ok().map(|real| {
            let direct = std::path::absolute(parent).is_ok_and(|a| a == real);
            (real, direct)
        });
        folders.insert(key.to_owned(), real);
    }
    &folders[key]
}

/// Why a file named on the command line is neither a template nor a host, when `check`
/// reads hosts: pre-commit passes every changed `.yaml` and `.py`, and prefixlint's own
/// config or a Python file (until the Python extractor is in) is no template.
fn named_not_host(path: &Path, matcher: &Matcher) -> Option<String> {
    let settings = matcher.hosts.as_ref()?;
    let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
    if crate::config::CONFIG_NAMES.contains(&name.as_str()) {
        return Some("prefixlint's own config, not a prompt".into());
    }
    let host_like = [".py", ".yaml", ".yml", ".toml", ".json", ".md", ".txt"];
    if settings.kind_of(path).is_none()
        && host_like.iter().any(|ext| name.ends_with(ext))
        && !samples_files::is_samples_file(path)
    {
        return Some(if name.ends_with(".py") {
            "Python files are not read for templates by this build".into()
        } else {
            "embedded templates are off (`embedded: {recognize: false}`) and no `embedded: files:` entry names this file".into()
        });
    }
    None
}

fn is_skipped_dir(entry: &walkdir::DirEntry) -> bool {
    // The type first: a file's name is not looked at (finding it parses the path).
    if !entry.file_type().is_dir() {
        return false;
    }
    let name = entry.file_name().to_string_lossy();
    name.starts_with('.') || SKIPPED_DIRS.contains(&name.as_ref())
}

/// A path as the samples listing compares it: its bytes, ASCII lower-cased; `None` when
/// it is not ASCII (a case-insensitive file system may fold or normalize other letters).
fn listed_key(path: &Path) -> Option<Vec<u8>> {
    let bytes = path.as_os_str().as_encoded_bytes();
    bytes.is_ascii().then(|| bytes.to_ascii_lowercase())
}

/// [`listed_key`] of `template`'s samples file ([`samples_files::samples_path`]), made from
/// the template's bytes: building the path cost a walk more than finding the template.
fn samples_listed_key(template: &Path) -> Option<Vec<u8>> {
    let bytes = template.as_os_str().as_encoded_bytes();
    let name = last_component(template);
    // What `file_name` would not read as the last component, or a doubled separator
    // (`with_file_name` drops one): the path's own way.
    let folder = &bytes[..bytes.len() - name.len()];
    if name.is_empty() || name == b"." || name == b".." || folder.ends_with(b"//") {
        return listed_key(&samples_files::samples_path(template));
    }
    // `file_stem`: up to the last dot, unless the name starts with it and has no other.
    let stem = match name.iter().rposition(|&b| b == b'.') {
        Some(dot) if dot > 0 => &name[..dot],
        _ => name,
    };
    let suffix = samples_files::SAMPLES_SUFFIX.as_bytes();
    if !(folder.is_ascii() && stem.is_ascii()) {
        return None;
    }
    let mut key = Vec::with_capacity(folder.len() + stem.len() + suffix.len());
    key.extend_from_slice(folder);
    key.extend_from_slice(stem);
    key.extend_from_slice(suffix);
    key.make_ascii_lowercase();
    Some(key)
}

/// A walked entry's path as bytes.
fn path_bytes(entry: &walkdir::DirEntry) -> &[u8] {
    entry.path().as_os_str().as_encoded_bytes()
}

/// The file name of a path a walk joined (`folder/name`), as bytes: what
/// `sort_by_file_name` compares, without parsing the path's components for each comparison.
fn last_component(path: &Path) -> &[u8] {
    let bytes = path.as_os_str().as_encoded_bytes();
    let start = bytes
        .iter()
        .rposition(|&b| std::path::is_separator(char::from(b)))
        .map_or(0, |at| at + 1);
    &bytes[start..]
}

fn clean(path: &Path) -> PathBuf {
    // A walk of `.` finds `./folder/name`: the text after `./` is what `strip_prefix`
    // gives, found without parsing components (a `.` or `/` next, or a `/` or `/.` last,
    // are left to `strip_prefix`, which reads them as components).
    match path.to_str().and_then(|text| text.strip_prefix("./")) {
        Some(rest)
            if rest
                .as_bytes()
                .first()
                .is_some_and(|&b| b != b'.' && b != b'/')
                && !rest.ends_with('/')
                && !rest.ends_with("/.") =>
        {
            PathBuf::from(rest)
        }
        _ => path.strip_prefix("./").unwrap_or(path).to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matcher() -> Matcher {
        let globs: Vec<String> = crate::config::DEFAULT_GLOBS
            .iter()
            .map(|s| s.to_string())
            .collect();
        let settings = hosts::HostSettings {
            recognize: true,
            files: Vec::new(),
        };
        Matcher::new(&globs, &[]).unwrap().with_hosts(settings)
    }

    /// A walk's targets come out in path order, each file once however many walked folders
    /// reach it, with its samples file read from the listing; skipped files are sorted
    /// whether or not any host file was read.
    #[test]
    fn targets_and_skipped_files_come_out_sorted_and_once_each() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for (path, text) in [
            ("b/z.j2", "z"),
            ("b/a.j2", "a"),
            ("b/a.samples.yaml", "- {}\n"),
            ("b/Dockerfile.j2", "FROM x"),
            ("a.b/x.j2", "x"),
            ("a/setup.py.j2", "print()"),
            ("a/c.j2", "c"),
            ("a/C.SAMPLES.YAML", "- {}\n"),
        ] {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let found = find(&[root.join("b"), root.clone(), root.join("a")], &matcher()).unwrap();
        let shown: Vec<(String, Option<bool>)> = found
            .targets
            .iter()
            .map(|t| {
                let name = t.template.strip_prefix(&root).unwrap();
                (name.display().to_string(), t.samples_listed)
            })
            .collect();
        assert_eq!(
            shown,
            [
                ("a/c.j2".to_string(), Some(true)),
                ("a.b/x.j2".to_string(), Some(false)),
                ("b/a.j2".to_string(), Some(true)),
                ("b/z.j2".to_string(), Some(false)),
            ]
        );
        let skipped: Vec<&str> = found.skipped.iter().map(|s| s.path.as_str()).collect();
        let mut sorted = skipped.clone();
        sorted.sort();
        assert_eq!(skipped, sorted);
        assert_eq!(skipped.len(), 2, "{skipped:?}");
        assert_eq!(found.hosts_scanned, 0);
    }

    /// `clean` and `samples_listed_key` read bytes where the path methods parse
    /// components: they give what those give, byte for byte.
    #[test]
    fn the_byte_readings_give_what_the_path_methods_give() {
        for path in [
            "./a/b.j2",
            "./a//b.j2",
            "./a/./b.j2",
            ".//a.j2",
            "././a.j2",
            "./a/",
            "./a/.",
            ".",
            "./",
            "a/b.j2",
            "/abs/x.j2",
            "./.hidden/x.j2",
            "./x",
            "./\u{e9}/x.j2",
            "",
        ] {
            let path = Path::new(path);
            let expected = path.strip_prefix("./").unwrap_or(path);
            assert_eq!(clean(path).as_os_str(), expected.as_os_str(), "{path:?}");
        }
        for template in [
            "a/b.j2",
            "A/B.J2",
            "a/.j2",
            "a/b.c.j2",
            "a/noext",
            "x.j2",
            "./a/b.j2",
            "/x.j2",
            "a/\u{e9}.j2",
            "\u{e9}/a.j2",
            "a/b.j\u{ef}nja",
            "a//b.j2",
            "a/..j2",
            "a/b.",
            "a/..",
            "a/b/",
            "",
        ] {
            let template = Path::new(template);
            assert_eq!(
                samples_listed_key(template),
                listed_key(&samples_files::samples_path(template)),
                "{template:?}"
            );
        }
    }

    /// One walk's templates come out in path order without a sort after it: names whose
    /// bytes order them one way and whose paths another (`a-b.j2` after the folder `a`),
    /// upper case before lower, a space, digits.
    #[test]
    fn one_walk_finds_its_templates_in_path_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let names = [
            "a/x.j2",
            "a-b.j2",
            "a.j2",
            "a/b/c.j2",
            "a0.j2",
            "B.j2",
            "b.j2",
            "a/b.j2",
            "a b/x.j2",
            "a/b-c/d.j2",
            "a/b.c/d.j2",
        ];
        for name in names {
            let path = root.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        let found = find(std::slice::from_ref(&root), &matcher()).unwrap();
        let mut sorted = found.targets.clone();
        sorted.sort();
        assert_eq!(found.targets, sorted);
        assert_eq!(found.targets.len(), names.len());
    }
}
