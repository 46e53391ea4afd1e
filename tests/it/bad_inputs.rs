//! The bad-input corpus: every folder under `tests/bad_inputs/` is one hostile or broken
//! input, run through the real binary. Each folder holds the input files and `case.yaml`:
//!
//! ```yaml
//! about: what the case is             # for people reading the corpus
//! args: [check, --no-config, t.j2]    # run in a temp copy of the folder
//! exit: 2                             # the exit code the user must get
//! stderr: ["t.j2:1:9", "syntax error"] # must appear (file and place)
//! stdout: []                          # must appear on stdout
//! never: ["root:x:0"]                 # must appear in neither stream
//! setup: [...]                        # actions the files cannot express (see `Setup`)
//! absent: ["../x"]                     # paths (from the case folder) that must not exist after
//! snapshot: true                      # also snapshot stderr with insta
//! ```
//!
//! Every case must end within [`TIME_LIMIT`] and [`MEMORY_LIMIT_BYTES`], never print
//! "panicked", and an exit code 2 must come with a message that names the file.

use crate::support;

use serde::Deserialize;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::prefixlint;

/// A case that runs longer is a hang: it is killed and fails.
const TIME_LIMIT: Duration = Duration::from_secs(20);

/// Every case runs under this address-space limit (`ulimit -v`), on two worker threads
/// (their stacks are address space too): a render that tries to allocate gigabytes dies
/// with "memory allocation failed" (an abort), which fails the case.
const MEMORY_LIMIT_BYTES: u64 = 1536 << 20;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    about: String,
    args: Vec<String>,
    exit: i32,
    #[serde(default)]
    stderr: Vec<String>,
    #[serde(default)]
    stdout: Vec<String>,
    #[serde(default)]
    never: Vec<String>,
    #[serde(default, with = "serde_yaml_ng::with::singleton_map_recursive")]
    setup: Vec<Setup>,
    #[serde(default)]
    env: Vec<(String, String)>,
    #[serde(default)]
    absent: Vec<String>,
    #[serde(default)]
    snapshot: bool,
}

/// Inputs that cannot be committed as plain files.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
enum Setup {
    /// A symbolic link `link` → `target` (target may be relative, absolute, or dangling).
    Symlink { link: String, target: String },
    /// `path` filled with `bytes` copies of `fill` (huge inputs stay out of git).
    Repeat {
        path: String,
        fill: String,
        times: usize,
        #[serde(default)]
        prefix: String,
        #[serde(default)]
        suffix: String,
    },
    /// A `.git` folder, making the temp folder the project root.
    GitRoot,
    /// A file outside the case folder (its parent), for escape attempts to aim at.
    Outside { path: String, text: String },
    /// A FIFO (named pipe) at `path`, with no writer: reading it would block for ever.
    Fifo { path: String },
}

struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

fn corpus_dir() -> PathBuf {
    support::repo_root().join("tests/bad_inputs")
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else if entry.file_name() != "case.yaml" {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn apply(setup: &Setup, dir: &Path) {
    match setup {
        Setup::Symlink { link, target } => {
            #[cfg(unix)]
            std::os::unix::fs::symlink(target, dir.join(link)).unwrap();
            #[cfg(not(unix))]
            let _ = (link, target);
        }
        Setup::Repeat {
            path,
            fill,
            times,
            prefix,
            suffix,
        } => {
            let mut text = String::with_capacity(prefix.len() + fill.len() * times + suffix.len());
            text.push_str(prefix);
            for _ in 0..*times {
                text.push_str(fill);
            }
            text.push_str(suffix);
            let path = dir.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        Setup::GitRoot => fs::create_dir_all(dir.join(".git")).unwrap(),
        Setup::Outside { path, text } => {
            fs::write(dir.parent().unwrap().join(path), text).unwrap();
        }
        Setup::Fifo { path } => {
            let path = dir.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            let status = std::process::Command::new("mkfifo")
                .arg(&path)
                .status()
                .expect("mkfifo runs");
            assert!(status.success(), "mkfifo {}", path.display());
        }
    }
}

/// Runs the binary, killing it after the time limit; output is read on threads so a
/// chatty child cannot block on a full pipe.
fn run_with_timeout(case: &Case, dir: &Path) -> Outcome {
    let started = Instant::now();
    let mut cmd = prefixlint();
    cmd.current_dir(dir)
        .args(&case.args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in &case.env {
        cmd.env(key, value);
    }
    cmd.env("RAYON_NUM_THREADS", "2");
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: setrlimit is async-signal-safe and touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                let limit = libc::rlimit {
                    rlim_cur: MEMORY_LIMIT_BYTES as libc::rlim_t,
                    rlim_max: MEMORY_LIMIT_BYTES as libc::rlim_t,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().expect("binary starts");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if started.elapsed() > TIME_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Outcome {
        code,
        stdout: String::from_utf8_lossy(&out_reader.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&err_reader.join().unwrap()).into_owned(),
        elapsed: started.elapsed(),
    }
}

/// Error output to snapshot; taken on the test's main thread, which insta needs.
struct Snapshot {
    name: String,
    about: String,
    text: String,
}

fn run_case(name: &str) -> Result<Option<Snapshot>, String> {
    let folder = corpus_dir().join(name);
    let case: Case = serde_yaml_ng::from_str(
        &fs::read_to_string(folder.join("case.yaml")).map_err(|e| format!("case.yaml: {e}"))?,
    )
    .map_err(|e| format!("case.yaml: {e}"))?;
    // The case folder sits one level down so `Outside` files have a place that is not
    // inside the project.
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("project");
    fs::create_dir_all(&dir).unwrap();
    copy_tree(&folder, &dir);
    for setup in &case.setup {
        apply(setup, &dir);
    }
    let outcome = run_with_timeout(&case, &dir);
    let shown = |s: &str| s.replace(&dir.display().to_string(), "[CASE]");
    let (stdout, stderr) = (shown(&outcome.stdout), shown(&outcome.stderr));
    let context = format!(
        "case {name} ({}): exit {:?} after {:?}\n--- stdout\n{stdout}--- stderr\n{stderr}",
        case.about, outcome.code, outcome.elapsed
    );
    let mut problems = Vec::new();
    match outcome.code {
        None => problems.push(format!("killed after {TIME_LIMIT:?} (hang) or by a signal")),
        Some(code) if code != case.exit => {
            problems.push(format!("exit {code}, want {}", case.exit))
        }
        Some(_) => {}
    }
    if stderr.contains("panicked") || stderr.contains("RUST_BACKTRACE") {
        problems.push("panicked".into());
    }
    if stderr.contains("memory allocation of") || stderr.contains("overflowed its stack") {
        problems.push(format!(
            "aborted: out of memory (limit {MEMORY_LIMIT_BYTES} bytes) or stack"
        ));
    }
    if case.exit == 2 && case.stderr.is_empty() {
        problems.push("an exit-2 case must list what stderr names (the file, the place)".into());
    }
    for want in &case.stderr {
        if !stderr.contains(want.as_str()) {
            problems.push(format!("stderr lacks {want:?}"));
        }
    }
    for want in &case.stdout {
        if !stdout.contains(want.as_str()) {
            problems.push(format!("stdout lacks {want:?}"));
        }
    }
    for bad in &case.never {
        if stdout.contains(bad.as_str()) || stderr.contains(bad.as_str()) {
            problems.push(format!("output contains {bad:?}"));
        }
    }
    for path in &case.absent {
        if dir.join(path).symlink_metadata().is_ok() {
            problems.push(format!("{path} was written"));
        }
    }
    if problems.is_empty() {
        Ok(case.snapshot.then(|| Snapshot {
            name: name.to_owned(),
            about: case.about.clone(),
            text: format!("exit: {:?}\n--- stderr\n{stderr}", outcome.code),
        }))
    } else {
        Err(format!("{}\n{context}", problems.join("; ")))
    }
}

fn case_names() -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(corpus_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("case.yaml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn every_bad_input_gets_a_clear_error_in_seconds() {
    let names = case_names();
    assert!(
        names.len() >= 40,
        "the corpus has only {} cases",
        names.len()
    );
    // Two at a time: fast enough, and the time limit still means something on a busy machine.
    let queue = std::sync::Mutex::new(names.clone());
    let failures = std::sync::Mutex::new(Vec::new());
    let snapshots = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| loop {
                let Some(name) = queue.lock().unwrap().pop() else {
                    break;
                };
                match run_case(&name) {
                    Ok(snapshot) => snapshots.lock().unwrap().extend(snapshot),
                    Err(e) => failures.lock().unwrap().push(e),
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        names.len(),
        failures.join("\n\n")
    );
    let mut snapshots = snapshots.into_inner().unwrap();
    snapshots.sort_by(|a, b| a.name.cmp(&b.name));
    for snapshot in snapshots {
        insta::with_settings!({ snapshot_suffix => snapshot.name, description => snapshot.about, omit_expression => true }, {
            insta::assert_snapshot!("bad_input", snapshot.text);
        });
    }
}

/// A file that disappears mid-run, made deterministic by driving the pipeline's stages
/// from the library: discovery finds the template and its samples, then both vanish
/// before they are read.
#[test]
fn files_deleted_between_discovery_and_load_are_clear_errors() {
    use prefixlint::check::check_template;
    use prefixlint::config::Config;
    use prefixlint::discover::{discover, Matcher};
    use prefixlint::render::{Dialect, RenderSettings, Renderer};
    use prefixlint::rules::VolatileFields;
    use prefixlint::samples;
    use prefixlint::tokenize::HfTokenizer;

    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("gone.j2");
    let samples_file = dir.path().join("gone.samples.yaml");
    fs::write(&template, "Stable.\n{{ question }}\n").unwrap();
    fs::write(&samples_file, "- question: a\n- question: b\n").unwrap();
    let config = Config::default();
    let matcher = Matcher::new(&config.include, &config.exclude).unwrap();
    let targets = discover(&[dir.path().to_path_buf()], &matcher).unwrap();
    assert_eq!(targets.len(), 1);

    // The samples file goes after discovery saw it.
    fs::remove_file(&samples_file).unwrap();
    let err = samples::load(&samples_file).unwrap_err();
    let shown = format!("{:?}", miette::Report::new(err));
    assert!(
        shown.contains("gone.samples.yaml") && shown.contains("No such file"),
        "{shown}"
    );

    // Then the template itself.
    fs::remove_file(&template).unwrap();
    let mut renderer = Renderer::new(RenderSettings::new(
        Dialect::Jinja2,
        dir.path().to_path_buf(),
    ))
    .unwrap();
    let engine = HfTokenizer::builtin().unwrap();
    let fields = VolatileFields::new(&[]).unwrap();
    let err = check_template(
        &targets[0].template,
        dir.path(),
        &mut renderer,
        &engine,
        &fields,
        &config,
    )
    .map(|_| ())
    .unwrap_err();
    let shown = format!("{:?}", miette::Report::new(err));
    assert!(
        shown.contains("gone.j2") && shown.contains("No such file"),
        "{shown}"
    );
}
