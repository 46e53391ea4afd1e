//! Where `include`, `import`, `from … import` and `extends` names lead, the way the
//! FileSystemLoader setups of prompt repositories find them: relative to the including
//! template, then in each folder above it up to the project root, then in the `search_path:`
//! folders of the config. Nothing outside those folders is ever read.
//!
//! One resolver serves the render loader, variable discovery and the divergence locator, so
//! they all agree on which file a name means.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

/// The outcome of resolving one name from one template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// The template name of the file: project-relative, or absolute for a file in a search
    /// folder outside the project root.
    Found(String),
    /// Every candidate climbs out of the folder it starts from (`../../etc/passwd`).
    Outside,
    /// No candidate exists; these are the places looked at, in order.
    NotFound(Vec<PathBuf>),
}

impl Resolution {
    pub fn found(self) -> Option<String> {
        match self {
            Resolution::Found(name) => Some(name),
            _ => None,
        }
    }
}

/// A name only an application's own loader resolves: `module:key`, `pkg.prompts:intro`
/// (a `:` that is no drive letter's and no URL's), when no file of that name exists.
pub fn loader_key(name: &str) -> bool {
    let Some((module, key)) = name.split_once(':') else {
        return false;
    };
    let drive = module.len() == 1 && key.starts_with(['/', '\\']);
    !module.is_empty() && !key.is_empty() && !drive && !key.starts_with("//")
}

/// Why the loader refuses a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Outside,
    ThroughLink,
}

#[derive(Debug)]
pub struct IncludeResolver {
    /// Canonical project root: relative template names are relative to it.
    root: PathBuf,
    /// Canonical `search_path:` folders, in config order.
    search_path: Vec<PathBuf>,
    /// Resolutions by (the including template's folder, name): a render resolves the same
    /// includes again and again, each one costs file-system lookups, and where a name leads
    /// depends on the folder it is written in, not on the file.
    memo: Mutex<HashMap<(String, String), Resolution>>,
    /// [`Self::path_of`]'s answers by name (each is a `canonicalize`).
    paths: Mutex<HashMap<String, Result<Option<PathBuf>, Refusal>>>,
    /// Names handed to the loader for includes that were not found, with the places looked.
    misses: Mutex<HashMap<String, Miss>>,
    /// The empty template an application loader's name (`"module:key"`) loads instead,
    /// where stand-ins are on ([`Self::with_loader_stand_in`]); `None`: such a name is not
    /// found, as any other.
    loader_stand_in: Option<String>,
}

#[derive(Debug, Clone)]
struct Miss {
    parent: String,
    written: String,
    looked_in: Vec<PathBuf>,
}

impl IncludeResolver {
    pub fn new(root: &Path, search_path: &[PathBuf]) -> Self {
        let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        IncludeResolver {
            root: canonical(root),
            search_path: search_path.iter().map(|p| canonical(p)).collect(),
            memo: Mutex::default(),
            paths: Mutex::default(),
            misses: Mutex::default(),
            loader_stand_in: None,
        }
    }

    /// Names only an application's own loader resolves (`"module:key"`, not a file) load
    /// `template` (an empty one) instead of failing: the including template is checked,
    /// with a note naming them ([`loader_key`]).
    pub fn with_loader_stand_in(mut self, template: &str) -> Self {
        self.loader_stand_in = Some(template.to_owned());
        self
    }

    /// Whether `name`, written in `parent`, loads the loader stand-in.
    pub fn stands_in(&self, parent: &str, name: &str) -> bool {
        self.loader_stand_in.is_some()
            && loader_key(name)
            && matches!(self.resolve(parent, name), Resolution::NotFound(_))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// What a name may not leave, for refusals: "the project root" (and search folders).
    pub fn confinement(&self) -> &'static str {
        if self.search_path.is_empty() {
            "the project root"
        } else {
            "the project root and the search_path folders"
        }
    }

    /// Resolves `name` as written in template `parent`.
    pub fn resolve(&self, parent: &str, name: &str) -> Resolution {
        let folder = Path::new(parent).parent().unwrap_or(Path::new(""));
        let key = (folder.to_string_lossy().into_owned(), name.to_owned());
        if let Some(known) = lock(&self.memo).get(&key) {
            return known.clone();
        }
        let resolution = self.search(parent, name);
        lock(&self.memo).insert(key, resolution.clone());
        resolution
    }

    /// The name minijinja should load for `name` in `parent`. A name that is not found is
    /// remembered, so the loader can say where it looked; one that climbs out stays as
    /// written, so the loader refuses it by what the user wrote.
    pub fn join(&self, parent: &str, name: &str) -> String {
        match self.resolve(parent, name) {
            Resolution::Found(found) => found,
            Resolution::Outside => name.to_owned(),
            Resolution::NotFound(_) if self.loader_stand_in.is_some() && loader_key(name) => {
                self.loader_stand_in.clone().unwrap_or_default()
            }
            Resolution::NotFound(looked_in) => {
                // A readable name for the loader to fail on: the first place looked.
                let handle = looked_in
                    .first()
                    .map(|first| {
                        first
                            .strip_prefix(&self.root)
                            .unwrap_or(first)
                            .to_string_lossy()
                            .replace('\\', "/")
                    })
                    .unwrap_or_else(|| name.to_owned());
                lock(&self.misses).insert(
                    handle.clone(),
                    Miss {
                        parent: parent.to_owned(),
                        written: name.to_owned(),
                        looked_in,
                    },
                );
                handle
            }
        }
    }

    /// The not-found message for a name [`join`](Self::join) handed out, if it was a miss.
    pub fn not_found_message(&self, loaded: &str) -> Option<String> {
        let miss = lock(&self.misses).get(loaded).cloned()?;
        Some(self.describe_miss(&miss.parent, &miss.written, &miss.looked_in))
    }

    /// The not-found message for `written` in `parent`, if it is not found.
    pub fn miss_message(&self, parent: &str, written: &str) -> Option<String> {
        match self.resolve(parent, written) {
            Resolution::NotFound(looked_in) => {
                Some(self.describe_miss(parent, written, &looked_in))
            }
            _ => None,
        }
    }

    fn describe_miss(&self, parent: &str, written: &str, looked_in: &[PathBuf]) -> String {
        let places: Vec<String> = looked_in
            .iter()
            .map(|p| format!("`{}`", p.strip_prefix(&self.root).unwrap_or(p).display()))
            .collect();
        format!(
            "`{written}` (named in `{parent}`) is in none of the places it may resolve to; looked in {} (under the project root {})",
            places.join(", "),
            self.root.display()
        )
    }

    /// The file a template name stands for, refused when it leads outside the project root
    /// and the search folders (lexically, or through a symbolic link).
    /// `Ok(None)`: there is no such file.
    pub fn path_of(&self, name: &str) -> Result<Option<PathBuf>, Refusal> {
        if let Some(known) = lock(&self.paths).get(name) {
            return known.clone();
        }
        let found = self.find_path(name);
        lock(&self.paths).insert(name.to_owned(), found.clone());
        found
    }

    fn find_path(&self, name: &str) -> Result<Option<PathBuf>, Refusal> {
        let path = if Path::new(name).is_absolute() {
            PathBuf::from(name)
        } else {
            self.root
                .join(normalize(Path::new(name)).ok_or(Refusal::Outside)?)
        };
        let Ok(real) = path.canonicalize() else {
            // An absolute name that is not there is refused all the same: it was never
            // handed out by `join`, so the user wrote it.
            return if self.is_allowed(&path) {
                Ok(None)
            } else {
                Err(Refusal::Outside)
            };
        };
        if self.is_allowed(&real) {
            Ok(Some(real))
        } else if self.is_allowed(&path) {
            Err(Refusal::ThroughLink)
        } else {
            Err(Refusal::Outside)
        }
    }

    fn is_allowed(&self, path: &Path) -> bool {
        path.starts_with(&self.root) || self.search_path.iter().any(|dir| path.starts_with(dir))
    }

    fn search(&self, parent: &str, name: &str) -> Resolution {
        if Path::new(name).is_absolute() {
            return Resolution::Outside;
        }
        let mut looked_in = Vec::new();
        for base in self.candidate_bases(parent) {
            let Some(relative) = normalize(&base.relative.join(name)) else {
                continue;
            };
            let path = base.dir.join(&relative);
            if path.is_file() {
                return Resolution::Found(self.name_for(&path, &relative, base.in_root));
            }
            if !looked_in.contains(&path) {
                looked_in.push(path);
            }
        }
        if looked_in.is_empty() {
            Resolution::Outside
        } else {
            Resolution::NotFound(looked_in)
        }
    }

    /// The folders to look in, in order: the including template's own, each one above it up
    /// to the project (or search) root it lives in, then every search folder.
    fn candidate_bases(&self, parent: &str) -> Vec<Base> {
        let parent = Path::new(parent);
        let (dir, start) = match self.search_root_of(parent) {
            Some(search_root) => (
                search_root.clone(),
                parent.strip_prefix(&search_root).unwrap_or(parent),
            ),
            None => (self.root.clone(), parent),
        };
        let in_root = !parent.is_absolute();
        let mut bases = Vec::new();
        let mut folder = start.parent();
        while let Some(relative) = folder {
            bases.push(Base {
                dir: dir.clone(),
                relative: relative.to_path_buf(),
                in_root,
            });
            folder = relative.parent();
        }
        if !in_root {
            bases.push(Base {
                dir: self.root.clone(),
                relative: PathBuf::new(),
                in_root: true,
            });
        }
        for search_root in &self.search_path {
            bases.push(Base {
                dir: search_root.clone(),
                relative: PathBuf::new(),
                in_root: false,
            });
        }
        bases
    }

    /// The search folder an absolute template name lies in.
    fn search_root_of(&self, name: &Path) -> Option<PathBuf> {
        if !name.is_absolute() {
            return None;
        }
        self.search_path
            .iter()
            .find(|dir| name.starts_with(dir))
            .cloned()
    }

    /// Project-relative when the file is under the root, else its absolute path.
    fn name_for(&self, path: &Path, relative: &Path, in_root: bool) -> String {
        let name = if in_root {
            relative.to_path_buf()
        } else if let Ok(under_root) = path.strip_prefix(&self.root) {
            under_root.to_path_buf()
        } else {
            path.to_path_buf()
        };
        name.to_string_lossy().replace('\\', "/")
    }
}

struct Base {
    /// The folder names are relative to: the project root or a search folder.
    dir: PathBuf,
    /// The folder to look in, relative to `dir`.
    relative: PathBuf,
    in_root: bool,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Resolves `.` and `..` without touching the disk; `None` when it climbs above the start.
pub fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(part) => out.push(part),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn touch(root: &Path, path: &str) {
        let path = root.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, "x").unwrap();
    }

    #[test]
    fn looks_beside_the_template_then_up_to_the_root_then_in_search_folders() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        let shared = dir.path().join("shared");
        touch(&root, "prompts/agents/coder/partials/tools.prompt");
        touch(&root, "prompts/partials/header.prompt");
        touch(&root, "partials/footer.prompt");
        touch(&shared, "common/style.prompt");
        touch(&root, "lib/macros.j2");
        let resolver = IncludeResolver::new(&root, &[shared.clone(), root.join("lib")]);
        let parent = "prompts/agents/coder/system.prompt";
        let found = |name: &str| resolver.resolve(parent, name).found();
        assert_eq!(
            found("partials/tools.prompt").as_deref(),
            Some("prompts/agents/coder/partials/tools.prompt")
        );
        assert_eq!(
            found("partials/header.prompt").as_deref(),
            Some("prompts/partials/header.prompt")
        );
        assert_eq!(
            found("partials/footer.prompt").as_deref(),
            Some("partials/footer.prompt")
        );
        // A search folder inside the root gives a project-relative name; one outside, absolute.
        assert_eq!(found("macros.j2").as_deref(), Some("lib/macros.j2"));
        let style = found("common/style.prompt").unwrap();
        assert!(Path::new(&style).is_absolute(), "{style}");
        assert_eq!(
            resolver.path_of(&style).unwrap(),
            Some(shared.canonicalize().unwrap().join("common/style.prompt"))
        );
        // From inside the search folder, names still resolve beside the includer first.
        touch(&shared, "common/colors.prompt");
        assert!(resolver
            .resolve(&style, "colors.prompt")
            .found()
            .is_some_and(|n| n.ends_with("common/colors.prompt")));
    }

    #[test]
    fn a_miss_lists_every_place_and_an_escape_is_outside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        touch(&root, "a/b/t.j2");
        let resolver = IncludeResolver::new(&root, &[]);
        let Resolution::NotFound(places) = resolver.resolve("a/b/t.j2", "nope.j2") else {
            panic!("expected a miss");
        };
        let real = root.canonicalize().unwrap();
        assert_eq!(
            places,
            vec![
                real.join("a/b/nope.j2"),
                real.join("a/nope.j2"),
                real.join("nope.j2")
            ]
        );
        let handle = resolver.join("a/b/t.j2", "nope.j2");
        let message = resolver.not_found_message(&handle).unwrap();
        assert!(
            message.contains("`a/b/nope.j2`, `a/nope.j2`, `nope.j2`")
                && message.contains(&real.display().to_string()),
            "{message}"
        );
        assert_eq!(
            resolver.resolve("t.j2", "../../etc/passwd"),
            Resolution::Outside
        );
        assert_eq!(resolver.resolve("t.j2", "/etc/passwd"), Resolution::Outside);
        assert_eq!(resolver.path_of("/etc/passwd"), Err(Refusal::Outside));
        assert_eq!(resolver.path_of("../x"), Err(Refusal::Outside));
    }

    #[test]
    fn loader_keys_are_names_with_a_module_and_a_key() {
        for name in ["prompts:persona", "my_pkg.prompts:intro.j2", "a:b/c"] {
            assert!(loader_key(name), "{name}");
        }
        for name in ["C:/x.j2", "c:\\x.j2", "http://x", "plain.j2", ":x", "x:"] {
            assert!(!loader_key(name), "{name}");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("real:file.j2"), "x").unwrap();
        let resolver = IncludeResolver::new(dir.path(), &[]).with_loader_stand_in("/stand-in");
        assert_eq!(resolver.join("a.j2", "prompts:persona"), "/stand-in");
        assert!(resolver.stands_in("a.j2", "prompts:persona"));
        // A file of that name is the file.
        assert_eq!(resolver.join("a.j2", "real:file.j2"), "real:file.j2");
        assert!(!resolver.stands_in("a.j2", "real:file.j2"));
        // Without stand-ins, it is not found, as before.
        let strict = IncludeResolver::new(dir.path(), &[]);
        assert_ne!(strict.join("a.j2", "prompts:persona"), "/stand-in");
    }
}
