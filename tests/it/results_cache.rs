//! The results cache (issue 18), through the real binary: a second run reads every checked
//! template back and writes the same bytes, and each input of the key invalidates it.
//! Hits are observed through `PREFIXLINT_CACHE_STATS=1` (`cache: N hits, M misses` on
//! stderr), which leaves the report as it is.

use crate::support;

use std::fs;
use std::path::Path;
use support::*;

/// A project with a config (so its folder is the project root): `agent.j2` includes
/// `partials/policy.md` and has a samples file, `other.j2` stands alone.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // In the project, so each test sees its own cache (the default is the user cache folder).
    fs::write(
        root.join("prefixlint.yaml"),
        "min_lost_tokens: 64\ncache_dir: .prefixlint_cache\n",
    )
    .unwrap();
    fs::create_dir(root.join("partials")).unwrap();
    fs::write(
        root.join("partials/policy.md"),
        "Refunds are issued within 30 days of purchase.\nNever share internal notes.\n",
    )
    .unwrap();
    fs::write(
        root.join("agent.j2"),
        "You are talking to {{ customer.name }}.\nYou are ACME's support assistant.\n\n{% include \"partials/policy.md\" %}\n\nQuestion: {{ question }}\n",
    )
    .unwrap();
    fs::write(
        root.join("agent.samples.yaml"),
        "- customer: {name: Wile}\n  question: Where is my order?\n- customer: {name: Road}\n  question: Do the skates come in size 44?\n",
    )
    .unwrap();
    fs::write(
        root.join("other.j2"),
        "Today is {{ now() }}.\nYou answer questions about anvils, rockets and skates.\n",
    )
    .unwrap();
    dir
}

/// The binary with the results cache on (the shared helper turns it off for every other
/// test); each test here names its own folder (the project's `cache_dir:`, a temporary
/// `PREFIXLINT_CACHE_DIR` or `--cache-dir`).
fn cached() -> std::process::Command {
    let mut cmd = prefixlint();
    cmd.env_remove(NO_CACHE.0);
    cmd
}

struct Checked {
    stdout: String,
    hits: usize,
    misses: usize,
}

fn check(root: &Path, extra: &[&str], format: &str) -> Checked {
    let r = run(cached()
        .current_dir(root)
        .env("PREFIXLINT_CACHE_STATS", "1")
        .args(["check", ".", "--format", format])
        .args(extra));
    assert!(r.code == 0 || r.code == 1, "{}\n{}", r.stdout, r.stderr);
    let (hits, misses) = stats(&r.stderr).unwrap_or((0, 0));
    Checked {
        stdout: r.stdout,
        hits,
        misses,
    }
}

fn stats(stderr: &str) -> Option<(usize, usize)> {
    let line = stderr.lines().find(|l| l.starts_with("cache: "))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    Some((words[1].parse().ok()?, words[3].parse().ok()?))
}

fn json(root: &Path) -> Checked {
    check(root, &[], "json")
}

/// The packs in the project's cache folder (two per run key: the reports in
/// `<64 hex digits>.pack`, sorted first, and the templates as written in
/// `<64 hex digits>.written.pack`).
fn packs(root: &Path) -> Vec<std::path::PathBuf> {
    let mut packs: Vec<_> = match fs::read_dir(root.join(".prefixlint_cache")) {
        Ok(dir) => dir
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "pack"))
            .collect(),
        Err(_) => Vec::new(),
    };
    packs.sort();
    packs
}

const PACK_MAGIC: &[u8] = b"prefixlint results pack v3\n";

/// A pack's records, in order: (key, where the entry's bytes lie).
fn records(pack: &Path) -> Vec<(Vec<u8>, std::ops::Range<usize>)> {
    let bytes = fs::read(pack).unwrap();
    assert!(bytes.starts_with(PACK_MAGIC), "{}", pack.display());
    let mut at = PACK_MAGIC.len();
    let mut records = Vec::new();
    // Each record: the key's 32 bytes (a SHA-256), the length, the bytes, their checksum;
    // the pack ends with its number of records.
    while at < bytes.len() - 8 {
        let key = bytes[at..at + 32].to_vec();
        let len = u64::from_le_bytes(bytes[at + 32..at + 40].try_into().unwrap()) as usize;
        records.push((key, at + 40..at + 40 + len));
        at += 40 + len + 8;
    }
    assert_eq!(at, bytes.len() - 8, "{}", pack.display());
    records
}

/// Entries stored in the project's cache folder, in all its packs.
fn entries(root: &Path) -> usize {
    packs(root).iter().map(|pack| records(pack).len()).sum()
}

#[test]
fn a_second_run_reads_every_template_back_and_writes_the_same_bytes() {
    let dir = project();
    let root = dir.path();
    for format in ["json", "full", "concise", "sarif", "github"] {
        let uncached = check(root, &["--no-cache"], format);
        let first = check(root, &[], format);
        let second = check(root, &[], format);
        assert_eq!(first.stdout, uncached.stdout, "{format}");
        assert_eq!(second.stdout, uncached.stdout, "{format}");
        assert_eq!((second.hits, second.misses), (2, 0), "{format}");
    }
    let cache = root.join(".prefixlint_cache");
    assert_eq!(
        fs::read_to_string(cache.join(".gitignore"))
            .unwrap()
            .lines()
            .last(),
        Some("*")
    );
    assert!(fs::read_to_string(cache.join("CACHEDIR.TAG"))
        .unwrap()
        .starts_with("Signature: 8a477f597d28d172789f06886806bc55"));
}

#[test]
fn editing_a_template_rechecks_that_template_alone() {
    let dir = project();
    let root = dir.path();
    json(root);
    fs::write(
        root.join("other.j2"),
        "Today is {{ now() }}.\nYou answer about anvils.\n",
    )
    .unwrap();
    let after = json(root);
    assert_eq!((after.hits, after.misses), (1, 1));
    let uncached = check(root, &["--no-cache"], "json");
    assert_eq!(after.stdout, uncached.stdout);
}

#[test]
fn editing_an_included_file_rechecks_its_includers() {
    let dir = project();
    let root = dir.path();
    json(root);
    fs::write(root.join("partials/policy.md"), "Refunds within 14 days.\n").unwrap();
    let after = json(root);
    assert_eq!((after.hits, after.misses), (1, 1));
    assert_eq!(after.stdout, check(root, &["--no-cache"], "json").stdout);
}

#[test]
fn an_include_that_now_resolves_elsewhere_rechecks_its_includers() {
    let dir = project();
    let root = dir.path();
    fs::write(
        root.join("agent.j2"),
        "{% include \"policy.md\" ignore missing %}\nQuestion: {{ question }}\n",
    )
    .unwrap();
    json(root);
    // The name now resolves beside the includer.
    fs::write(root.join("policy.md"), "A policy appears.\n").unwrap();
    let after = json(root);
    assert_eq!((after.hits, after.misses), (1, 1));
    assert_eq!(after.stdout, check(root, &["--no-cache"], "json").stdout);
}

#[test]
fn editing_a_samples_file_rechecks_its_template() {
    let dir = project();
    let root = dir.path();
    json(root);
    fs::write(
        root.join("agent.samples.yaml"),
        "- customer: {name: Wile}\n  question: Where?\n- customer: {name: Wile}\n  question: When?\n",
    )
    .unwrap();
    let after = json(root);
    assert_eq!((after.hits, after.misses), (1, 1));
    assert_eq!(after.stdout, check(root, &["--no-cache"], "json").stdout);
    // Removing it falls back to synthesized samples: checked again too.
    fs::remove_file(root.join("agent.samples.yaml")).unwrap();
    let removed = json(root);
    assert_eq!((removed.hits, removed.misses), (1, 1));
}

/// Discovery's folder listing tells the cache whether a walked template has a samples
/// file (no lookup for each template without one): a samples file that appears, in any
/// folder, re-checks its template; one whose name differs from the template's only in
/// ASCII case is looked for on disk (what a case-insensitive file system finds), and one
/// that goes away re-checks the template again. A template named on the command line is
/// looked up the same way.
#[test]
fn a_samples_file_that_appears_or_goes_rechecks_its_template() {
    let dir = project();
    let root = dir.path();
    fs::create_dir(root.join("nested")).unwrap();
    fs::write(
        root.join("nested/deep.j2"),
        "You are ACME's shipping assistant for order {{ order }}.\n",
    )
    .unwrap();
    let first = json(root);
    assert_eq!((first.hits, first.misses), (0, 3));
    let samples = "- {order: A-1}\n- {order: B-2}\n";
    // Another case: on this (case-sensitive) file system, not the template's samples file.
    fs::write(root.join("nested/DEEP.SAMPLES.YAML"), samples).unwrap();
    let variant = json(root);
    assert_eq!((variant.hits, variant.misses), (3, 0));
    assert_eq!(variant.stdout, first.stdout);
    fs::write(root.join("nested/deep.samples.yaml"), samples).unwrap();
    let added = json(root);
    assert_eq!((added.hits, added.misses), (2, 1));
    assert_eq!(added.stdout, check(root, &["--no-cache"], "json").stdout);
    assert_ne!(added.stdout, first.stdout);
    let again = json(root);
    assert_eq!((again.hits, again.misses), (3, 0));
    fs::remove_file(root.join("nested/deep.samples.yaml")).unwrap();
    let removed = json(root);
    assert_eq!(
        (removed.hits, removed.misses),
        (3, 0),
        "served as before it was added"
    );
    assert_eq!(removed.stdout, first.stdout);
    // Named on the command line: its folder is not listed, its samples file looked for.
    let named = |root: &Path| {
        let r = run(cached()
            .current_dir(root)
            .env("PREFIXLINT_CACHE_STATS", "1")
            .args(["check", "other.j2", "--format", "json"]));
        assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
        (stats(&r.stderr).unwrap(), r.stdout)
    };
    named(root);
    let (counts, before) = named(root);
    assert_eq!(counts, (1, 0));
    fs::write(root.join("other.samples.yaml"), samples).unwrap();
    let (counts, after) = named(root);
    assert_eq!(counts, (0, 1));
    assert_ne!(after, before);
}

#[test]
fn editing_the_config_rechecks_everything() {
    let dir = project();
    let root = dir.path();
    json(root);
    fs::write(
        root.join("prefixlint.yaml"),
        "min_lost_tokens: 8\ncache_dir: .prefixlint_cache\n",
    )
    .unwrap();
    let after = json(root);
    assert_eq!((after.hits, after.misses), (0, 2));
    assert_eq!(after.stdout, check(root, &["--no-cache"], "json").stdout);
    // Options on the command line are part of the effective config.
    let engine = check(root, &["--engine", "vllm"], "json");
    assert_eq!((engine.hits, engine.misses), (0, 2));
}

#[test]
fn a_changed_tokenizer_rechecks_everything() {
    let dir = project();
    let root = dir.path();
    let tokenizer = builtin_tokenizer_file(root);
    let spec = tokenizer.to_str().unwrap().to_owned();
    check(root, &["--tokenizer", &spec], "json");
    let again = check(root, &["--tokenizer", &spec], "json");
    assert_eq!((again.hits, again.misses), (2, 0));
    // The same tokenizer, written differently: its content hash changes.
    let mut bytes = fs::read(&tokenizer).unwrap();
    bytes.extend_from_slice(b"\n\n");
    fs::write(&tokenizer, bytes).unwrap();
    let after = check(root, &["--tokenizer", &spec], "json");
    assert_eq!((after.hits, after.misses), (0, 2));
    assert_eq!(after.stdout, again.stdout);
}

#[test]
fn no_cache_writes_nothing_and_reads_nothing() {
    let dir = project();
    let root = dir.path();
    let r = run(cached()
        .current_dir(root)
        .env("PREFIXLINT_CACHE_STATS", "1")
        .args(["check", ".", "--format", "json", "--no-cache"]));
    assert!(!root.join(".prefixlint_cache").exists());
    assert_eq!(stats(&r.stderr), None, "{}", r.stderr);
    // `PREFIXLINT_NO_CACHE` is the same for every run under it, whatever folder is named.
    for value in ["1", "true"] {
        let r = run(cached()
            .current_dir(root)
            .env("PREFIXLINT_CACHE_STATS", "1")
            .env("PREFIXLINT_NO_CACHE", value)
            .args(["check", ".", "--format", "json", "--cache-dir", "named"]));
        assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
        assert!(!root.join(".prefixlint_cache").exists());
        assert!(!root.join("named").exists());
        assert_eq!(stats(&r.stderr), None, "{}", r.stderr);
    }
    let on = run(cached()
        .current_dir(root)
        .env("PREFIXLINT_CACHE_STATS", "1")
        .env("PREFIXLINT_NO_CACHE", "0")
        .args(["check", ".", "--format", "json"]));
    assert_eq!(stats(&on.stderr), Some((0, 2)), "{}", on.stderr);
}

#[test]
fn the_cache_folder_is_configurable() {
    let dir = project();
    let root = dir.path();
    fs::write(
        root.join("prefixlint.yaml"),
        "min_lost_tokens: 64\ncache_dir: build/lint-cache\n",
    )
    .unwrap();
    json(root);
    assert!(root.join("build/lint-cache/CACHEDIR.TAG").is_file());
    assert!(!root.join(".prefixlint_cache").exists());
    let flag = check(root, &["--cache-dir", "elsewhere"], "json");
    assert_eq!((flag.hits, flag.misses), (0, 2));
    assert!(root.join("elsewhere/CACHEDIR.TAG").is_file());
}

/// A damaged entry is checked again and stored anew; a damaged pack is read as empty.
#[test]
fn a_corrupt_entry_is_checked_again_and_overwritten() {
    let dir = project();
    let root = dir.path();
    let first = json(root);
    let concise = check(root, &["--no-cache"], "concise");
    assert_eq!(packs(root).len(), 2);
    // Each template's report, and its JSON as written.
    assert_eq!(entries(root), 4);
    // One report's JSON damaged, its length kept: the JSON run is still served from the
    // written forms; a concise run, which has none yet, checks that template alone again.
    let pack = packs(root).remove(0);
    assert_eq!(records(&pack).len(), 2, "the reports' pack sorts first");
    let mut bytes = fs::read(&pack).unwrap();
    let (_, place) = records(&pack).remove(0);
    bytes[place.start] = b'#';
    fs::write(&pack, &bytes).unwrap();
    let served = json(root);
    assert_eq!((served.hits, served.misses), (2, 0));
    assert_eq!(served.stdout, first.stdout);
    let after = check(root, &[], "concise");
    assert_eq!((after.hits, after.misses), (1, 1));
    assert_eq!(after.stdout, concise.stdout);
    // The report stored anew (in place of the damaged one), and both concise forms.
    assert_eq!(entries(root), 6);
    let again = check(root, &[], "concise");
    assert_eq!((again.hits, again.misses), (2, 0));
    // Every entry damaged: every template is checked again.
    for pack in packs(root) {
        let mut bytes = fs::read(&pack).unwrap();
        for (_, place) in records(&pack) {
            bytes[place.start] = b'#';
        }
        fs::write(&pack, &bytes).unwrap();
    }
    let after = json(root);
    assert_eq!((after.hits, after.misses), (0, 2));
    assert_eq!(after.stdout, first.stdout);
    let again = json(root);
    assert_eq!((again.hits, again.misses), (2, 0));
    // The packs cut short: every template is checked again, and the packs written whole.
    for pack in packs(root) {
        let bytes = fs::read(&pack).unwrap();
        fs::write(&pack, &bytes[..bytes.len() - 1]).unwrap();
    }
    let cut = json(root);
    assert_eq!((cut.hits, cut.misses), (0, 2));
    assert_eq!(cut.stdout, first.stdout);
    let again = json(root);
    assert_eq!((again.hits, again.misses), (2, 0));
    assert_eq!(entries(root), 4);
}

/// The templates as written are kept apart from the reports: a run served whole in its
/// written form does not need the reports' pack (nor rewrite it); a run in another form
/// reads the reports, and checks again what it cannot read there.
#[test]
fn a_run_served_as_written_does_not_need_the_reports() {
    let dir = project();
    let root = dir.path();
    let first = json(root);
    let [reports, written] = <[_; 2]>::try_from(packs(root)).unwrap();
    assert_eq!((records(&reports).len(), records(&written).len()), (2, 2));
    fs::write(&reports, "not a pack").unwrap();
    let served = json(root);
    assert_eq!((served.hits, served.misses), (2, 0));
    assert_eq!(served.stdout, first.stdout);
    assert_eq!(fs::read(&reports).unwrap(), b"not a pack");
    let concise = check(root, &["--no-cache"], "concise");
    let other_form = check(root, &[], "concise");
    assert_eq!((other_form.hits, other_form.misses), (0, 2));
    assert_eq!(other_form.stdout, concise.stdout);
    assert_eq!(records(&reports).len(), 2);
    assert_eq!(records(&written).len(), 4);
    let again = check(root, &[], "concise");
    assert_eq!((again.hits, again.misses), (2, 0));
}

/// Each format is served as it was written, whichever format the cache was filled in;
/// `--select`, which leaves findings out, is written from the stored reports.
#[test]
fn every_format_is_served_as_written_and_select_reads_the_reports() {
    let dir = project();
    let root = dir.path();
    let formats = ["json", "full", "concise", "github", "sarif"];
    let uncached: Vec<String> = formats
        .iter()
        .map(|format| check(root, &["--no-cache"], format).stdout)
        .collect();
    for round in 0..2 {
        for (format, expected) in formats.iter().zip(&uncached) {
            let served = check(root, &[], format);
            assert_eq!(&served.stdout, expected, "{format}, round {round}");
            if (round, *format) != (0, "json") {
                assert_eq!((served.hits, served.misses), (2, 0), "{format}");
            }
        }
    }
    // Two reports, and their written forms in the four formats that have one (SARIF's
    // results are values placed at the end of the document).
    assert_eq!(entries(root), 2 + 2 * 4);
    for format in ["json", "full"] {
        let select = ["--select", "PL001"];
        let mut args = vec!["--no-cache"];
        args.extend(select);
        let expected = check(root, &args, format).stdout;
        let served = check(root, &select, format);
        assert_eq!(served.stdout, expected, "{format}");
        assert_eq!((served.hits, served.misses), (2, 0), "{format}");
    }
    assert_eq!(entries(root), 2 + 2 * 4);
}

#[test]
fn a_template_that_loads_by_expression_is_never_cached() {
    let dir = project();
    let root = dir.path();
    fs::write(
        root.join("agent.j2"),
        "{% include part %}\nQuestion: {{ question }}\n",
    )
    .unwrap();
    fs::write(
        root.join("agent.samples.yaml"),
        "- part: partials/policy.md\n  question: a\n- part: partials/policy.md\n  question: b\n",
    )
    .unwrap();
    json(root);
    fs::write(root.join("partials/policy.md"), "Changed.\n").unwrap();
    let after = json(root);
    assert_eq!((after.hits, after.misses), (1, 1));
    assert_eq!(after.stdout, check(root, &["--no-cache"], "json").stdout);
}

/// A cache folder that cannot be made means a run without a cache: same report, no error,
/// nothing on stderr. A regular file where the folder should be blocks it for every user,
/// root included (CI runs as root, where a read-only folder would not), and must be left
/// as it was.
#[test]
fn a_cache_folder_that_cannot_be_made_means_a_run_without_a_cache() {
    let dir = project();
    let root = dir.path();
    let uncached = check(root, &["--no-cache"], "json");
    let blocker = root.join(".prefixlint_cache");
    fs::write(&blocker, "not a folder\n").unwrap();
    for place in [".prefixlint_cache", ".prefixlint_cache/below"] {
        let r = run(cached()
            .current_dir(root)
            .env("PREFIXLINT_CACHE_STATS", "1")
            .args(["check", ".", "--format", "json", "--cache-dir", place]));
        assert!(r.code == 0 || r.code == 1, "{place}: {}", r.stderr);
        assert_eq!(r.stdout, uncached.stdout, "{place}");
        // No cache opened: no statistics line, and no word about it.
        assert!(!r.stderr.contains("cache"), "{place}: {}", r.stderr);
    }
    assert!(blocker.is_file());
    assert_eq!(fs::read_to_string(&blocker).unwrap(), "not a folder\n");
}

/// A project folder without write permission, where permissions bind (not as root): the
/// same as above through the project's own `cache_dir:`. As root it would prove nothing, so
/// there it checks that root really is exempt (the test above covers that case).
#[cfg(unix)]
#[test]
fn a_read_only_project_is_checked_without_a_cache() {
    use std::os::unix::fs::PermissionsExt;
    let dir = project();
    let root = dir.path();
    let uncached = check(root, &["--no-cache"], "json");
    fs::set_permissions(root, fs::Permissions::from_mode(0o555)).unwrap();
    let writable_anyway = fs::create_dir(root.join("probe")).is_ok();
    let r = run(cached()
        .current_dir(root)
        .args(["check", ".", "--format", "json"]));
    fs::set_permissions(root, fs::Permissions::from_mode(0o755)).unwrap();
    assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
    assert_eq!(r.stdout, uncached.stdout);
    assert!(!r.stderr.contains("cache"), "{}", r.stderr);
    if writable_anyway {
        // Root: permissions do not bind, so the cache was made; the test above is the one
        // that blocks it.
        assert!(root.join(".prefixlint_cache").is_dir());
    } else {
        assert!(!root.join(".prefixlint_cache").exists());
    }
}

#[test]
fn a_tokenizer_that_does_not_load_fails_the_run_as_without_a_cache() {
    let dir = project();
    let root = dir.path();
    fs::write(root.join("broken.json"), "{\"model\": 3}").unwrap();
    let runs: Vec<Run> = [&[][..], &["--no-cache"][..]]
        .iter()
        .map(|extra| {
            run(cached()
                .current_dir(root)
                .args([
                    "check",
                    ".",
                    "--format",
                    "json",
                    "--tokenizer",
                    "broken.json",
                ])
                .args(*extra))
        })
        .collect();
    assert_eq!(runs[0].code, 2, "{}", runs[0].stderr);
    assert_eq!(
        (&runs[0].stdout, &runs[0].stderr),
        (&runs[1].stdout, &runs[1].stderr)
    );
}

/// Without `cache_dir:`, the cache is in the user cache folder and the checked tree stays as
/// it was (pre-commit hooks, read-only checkouts, tests/it/safety.rs).
#[test]
fn the_default_cache_is_outside_the_checked_tree() {
    let dir = project();
    let root = dir.path();
    fs::write(root.join("prefixlint.yaml"), "min_lost_tokens: 64\n").unwrap();
    let user_cache = tempfile::tempdir().unwrap();
    let listing = |root: &Path| {
        let mut names: Vec<String> = walkdir::WalkDir::new(root)
            .into_iter()
            .map(|e| e.unwrap().path().display().to_string())
            .collect();
        names.sort();
        names
    };
    let before = listing(root);
    let mut counts = Vec::new();
    for _ in 0..2 {
        let r = run(cached()
            .current_dir(root)
            .env("PREFIXLINT_CACHE_DIR", user_cache.path())
            .env("PREFIXLINT_CACHE_STATS", "1")
            .args(["check", ".", "--format", "json"]));
        assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
        counts.push(stats(&r.stderr).unwrap());
    }
    assert_eq!(counts, vec![(0, 2), (2, 0)]);
    assert_eq!(before, listing(root), "check wrote into the checked tree");
    assert!(user_cache.path().join("results").is_dir());
}

/// `cache: … K files read`: the files the keys read and hashed in the run.
fn files_read(stderr: &str) -> usize {
    let line = stderr.lines().find(|l| l.starts_with("cache: ")).unwrap();
    line.split_whitespace().nth(5).unwrap().parse().unwrap()
}

fn json_with_reads(root: &Path) -> (Checked, usize) {
    json_with_reads_and_env(root, &[])
}

fn json_with_reads_and_env(root: &Path, env: &[(&str, &str)]) -> (Checked, usize) {
    let r = run(cached()
        .current_dir(root)
        .env("PREFIXLINT_CACHE_STATS", "1")
        .envs(env.iter().copied())
        .args(["check", ".", "--format", "json"]));
    assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
    let (hits, misses) = stats(&r.stderr).unwrap();
    let read = files_read(&r.stderr);
    let checked = Checked {
        stdout: r.stdout,
        hits,
        misses,
    };
    (checked, read)
}

/// Files whose stamps (size, times, inode) are unchanged are not read again, as ruff and git
/// trust metadata; an edit that keeps the size and puts the modification time back is still
/// seen (its change time moved), and a file changed in the last two seconds is always read.
#[cfg(unix)]
#[test]
fn unchanged_files_are_not_read_again_and_a_disguised_edit_is_still_seen() {
    let dir = project();
    let root = dir.path();
    // Stamps taken within two seconds of a file's last change are not trusted.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let (first, read) = json_with_reads(root);
    // agent.j2, its samples, partials/policy.md and other.j2.
    assert_eq!(((first.hits, first.misses), read), ((0, 2), 4));
    let (second, read) = json_with_reads(root);
    assert_eq!(((second.hits, second.misses), read), ((2, 0), 0));
    assert_eq!(second.stdout, first.stdout);

    // The same size, and the old modification time put back.
    let policy = root.join("partials/policy.md");
    let modified = fs::metadata(&policy).unwrap().modified().unwrap();
    let text = fs::read_to_string(&policy).unwrap();
    let edited = text.replace("within 30 days", "by {{ now() }}");
    assert_eq!(edited.len(), text.len());
    fs::write(&policy, edited).unwrap();
    fs::File::options()
        .write(true)
        .open(&policy)
        .unwrap()
        .set_modified(modified)
        .unwrap();
    assert_eq!(fs::metadata(&policy).unwrap().modified().unwrap(), modified);
    let (after, read) = json_with_reads(root);
    assert_eq!(((after.hits, after.misses), read), ((1, 1), 1));
    assert_eq!(after.stdout, check(root, &["--no-cache"], "json").stdout);
    assert_ne!(after.stdout, first.stdout);
    // Changed just now: read again (that file alone) on every run until a run stamps it
    // two seconds after the change; then no more. How many runs that takes depends on the
    // machine's speed (the racy rule itself is files.rs's unit test), so it is not counted.
    let mut settled = false;
    for _ in 0..10 {
        let (again, read) = json_with_reads(root);
        assert_eq!((again.hits, again.misses), (2, 0));
        assert_eq!(again.stdout, after.stdout);
        assert!(read <= 1, "{read} files read");
        if read == 0 {
            settled = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1100));
    }
    assert!(settled, "the edited file was still read after 10 runs");
    let (last, read) = json_with_reads(root);
    assert_eq!(((last.hits, last.misses), read), ((2, 0), 0));
}

/// The stamps' file is a cache like the entries: damaged, it is read as empty.
#[test]
fn a_damaged_stamps_file_means_files_are_read_again() {
    let dir = project();
    let root = dir.path();
    let (first, _) = json_with_reads(root);
    let stamps = root.join(".prefixlint_cache/files-v1.bin");
    let bytes = fs::read(&stamps).unwrap();
    fs::write(&stamps, &bytes[..bytes.len() / 2]).unwrap();
    let (after, read) = json_with_reads(root);
    assert_eq!(((after.hits, after.misses), read), ((2, 0), 4));
    assert_eq!(after.stdout, first.stdout);
}

/// A file changed just now is read on every run, but once per run, however many templates
/// include it.
#[test]
fn a_shared_include_is_read_once_per_run() {
    let dir = project();
    let root = dir.path();
    fs::write(
        root.join("billing.j2"),
        "You are ACME's billing assistant.\n{% include \"partials/policy.md\" %}\nInvoice: {{ invoice_id }}\n",
    )
    .unwrap();
    // One worker, so the two includers cannot look it up at the same moment.
    let (first, read) = json_with_reads_and_env(root, &[("RAYON_NUM_THREADS", "1")]);
    // agent.j2, its samples, partials/policy.md (once), billing.j2 and other.j2.
    assert_eq!(((first.hits, first.misses), read), ((0, 3), 5));
}

/// Named like a pack (64 lower-case hex digits and `.pack`), last used `days` ago.
fn stale_pack(cache: &Path, index: usize, days: u64) -> std::path::PathBuf {
    let path = cache.join(format!("{index:064x}.pack"));
    fs::write(&path, [PACK_MAGIC, &0u64.to_le_bytes()].concat()).unwrap();
    let used = std::time::SystemTime::now() - std::time::Duration::from_secs(days * 86_400);
    fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(used)
        .unwrap();
    path
}

/// Edited configs and new builds leave packs behind: a run that stores entries removes the
/// least recently used past 64 packs down to 48, never its own and never a file not named
/// as a pack (a temporary file a stopped run left goes once it is a day old).
#[test]
fn the_cache_folder_is_bounded_and_keeps_the_recently_used() {
    let dir = project();
    let root = dir.path();
    json(root);
    let cache = root.join(".prefixlint_cache");
    let oldest = stale_pack(&cache, 0, 30);
    let newest = stale_pack(&cache, 1, 1);
    for index in 2..70 {
        stale_pack(&cache, index, 10);
    }
    fs::write(cache.join("notes.txt"), "not a pack").unwrap();
    let left_over = cache.join(".tmpAbC123");
    fs::write(&left_over, "a stopped run's pack").unwrap();
    let recent = cache.join(".tmpXyZ789");
    fs::write(&recent, "a running run's pack").unwrap();
    let two_days_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 86_400);
    fs::File::options()
        .write(true)
        .open(&left_over)
        .unwrap()
        .set_modified(two_days_ago)
        .unwrap();
    // A run that stores nothing removes nothing.
    let served = json(root);
    assert_eq!((served.hits, served.misses), (2, 0));
    assert_eq!(packs(root).len(), 72);
    // One template edited: its entry is stored, and the folder is pruned.
    fs::write(
        root.join("other.j2"),
        "Today is {{ now() }}.\nAnvils only.\n",
    )
    .unwrap();
    let edited = json(root);
    assert_eq!((edited.hits, edited.misses), (1, 1));
    assert_eq!(packs(root).len(), 48);
    assert!(!oldest.exists());
    assert!(newest.exists());
    assert!(cache.join("notes.txt").exists());
    assert!(cache.join("CACHEDIR.TAG").exists());
    assert!(!left_over.exists());
    assert!(recent.exists());
    let again = json(root);
    assert_eq!((again.hits, again.misses), (2, 0));
    assert_eq!(again.stdout, edited.stdout);
    // The edited template's old entries (its report and its JSON as written) stay in the
    // pack (the bound is 10,000 entries).
    assert_eq!(entries(root), 6);
}

/// A pack read back is marked used (its modification time), at most once a day.
#[test]
fn an_entry_read_back_is_marked_used() {
    let dir = project();
    let root = dir.path();
    json(root);
    let month_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(30 * 86_400);
    let pack = packs(root).remove(0);
    fs::File::options()
        .write(true)
        .open(&pack)
        .unwrap()
        .set_modified(month_ago)
        .unwrap();
    let served = json(root);
    assert_eq!((served.hits, served.misses), (2, 0));
    let age = fs::metadata(&pack)
        .unwrap()
        .modified()
        .unwrap()
        .elapsed()
        .unwrap();
    assert!(age.as_secs() < 3_600, "{pack:?} was not marked used");
}

/// One flipped bit in a pack, in each part of it (the magic, a key, a length, a report's
/// bytes, a checksum, the count), in either pack: the report is the `--no-cache` one, in
/// every format the cache serves. A pack replaced by a FIFO is passed by, not read.
#[test]
fn a_damaged_pack_anywhere_gives_the_report_of_a_run_without_the_cache() {
    for format in ["json", "full", "concise"] {
        let dir = project();
        let root = dir.path();
        let fresh = check(root, &["--no-cache"], format).stdout;
        let _ = check(root, &[], format);
        let _ = check(root, &[], "json");
        let stored: Vec<(std::path::PathBuf, Vec<u8>)> = packs(root)
            .into_iter()
            .map(|p| {
                let bytes = fs::read(&p).unwrap();
                (p, bytes)
            })
            .collect();
        assert_eq!(stored.len(), 2);
        for (pack, bytes) in &stored {
            let (_, place) = records(pack).remove(0);
            let classes = [
                ("magic", 3),
                ("key", place.start - 40 + 5),
                ("length", place.start - 3),
                ("bytes", place.start + place.len() / 2),
                ("checksum", place.end + 2),
                ("count", bytes.len() - 8),
            ];
            for (class, at) in classes {
                for bit in [0x01u8, 0x40] {
                    let mut flipped = bytes.clone();
                    flipped[at] ^= bit;
                    fs::write(pack, &flipped).unwrap();
                    let served = check(root, &[], format);
                    assert_eq!(
                        served.stdout,
                        fresh,
                        "{format}: a flip in the {class} of {} changed the report",
                        pack.display()
                    );
                    // The next run rewrote it whole: put the damage back for the next class.
                    for (pack, bytes) in &stored {
                        fs::write(pack, bytes).unwrap();
                    }
                }
            }
        }
        // A pack replaced by a FIFO (no writer): the run passes it by.
        let (pack, _) = &stored[0];
        fs::remove_file(pack).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(pack)
            .status()
            .unwrap();
        assert!(made.success());
        let started = std::time::Instant::now();
        let served = check(root, &[], format);
        assert_eq!(served.stdout, fresh, "{format}: a FIFO pack");
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }
}
