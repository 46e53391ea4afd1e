//! Acceptance test of issue #11 on the corpus in `tests/corpus/`: repository-shaped folders of
//! prompt templates in the styles of public agent and prompt frameworks, plus the Jinja
//! templates of code and config that real repositories ship beside them. Each folder is
//! checked the way a new user would, zero-config: `prefixlint check DIR` in every format.
//!
//! `tests/corpus/expected.yaml` says, for every file, whether it is a prompt (and where its
//! volatile sites are), a prompt that cannot render without configuration, or not a prompt.
//! The figures (render rate, sites found) are written to stderr directly, so CI logs show
//! them even when the tests pass.

use crate::support;

use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use support::{repo_root, run, Run};

/// The target for prompt templates that render with zero configuration.
const MIN_RENDER_RATE: f64 = 0.95;
/// The default `include` globs' extensions: what discovery walks for.
const TEMPLATE_SUFFIXES: [&str; 4] = [".j2", ".jinja", ".jinja2", ".prompt"];
const FORMATS: [&str; 5] = ["json", "sarif", "concise", "github", "full"];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expected {
    repos: Vec<String>,
    files: BTreeMap<String, ExpectedFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectedFile {
    status: Status,
    #[serde(default)]
    sites: Vec<Site>,
    /// Why a file is skipped, for readers of expected.yaml.
    #[serde(default)]
    #[allow(dead_code)]
    reason: Option<String>,
    #[serde(default)]
    error_contains: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Status {
    Prompt,
    Error,
    Skipped,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Site {
    line: usize,
    rule: String,
    #[serde(default)]
    kind: Option<Kinds>,
    /// A neutral input that zero-config samples may or may not vary: allowed, not required.
    #[serde(default)]
    optional: bool,
    expr: String,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Kinds {
    One(String),
    Any(Vec<String>),
}

impl Kinds {
    fn names(&self) -> Vec<&str> {
        match self {
            Kinds::One(k) => vec![k.as_str()],
            Kinds::Any(ks) => ks.iter().map(String::as_str).collect(),
        }
    }
}

fn corpus_dir() -> PathBuf {
    repo_root().join("tests/corpus")
}

fn expected() -> &'static Expected {
    static EXPECTED: OnceLock<Expected> = OnceLock::new();
    EXPECTED.get_or_init(|| {
        let path = corpus_dir().join("expected.yaml");
        let text = std::fs::read_to_string(&path).expect("tests/corpus/expected.yaml exists");
        serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    })
}

/// Every file a folder walk would discover with the default globs, as `repo/...` paths.
fn discovered_files() -> BTreeSet<String> {
    fn walk(dir: &Path, base: &Path, out: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).expect("corpus folder is readable") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(&path, base, out);
            } else if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
                if TEMPLATE_SUFFIXES.iter().any(|s| name.ends_with(s)) {
                    let rel = path.strip_prefix(base).expect("under the corpus");
                    out.insert(rel.to_string_lossy().replace('\\', "/"));
                }
            }
        }
    }
    let mut out = BTreeSet::new();
    for repo in &expected().repos {
        walk(&corpus_dir().join(repo), &corpus_dir(), &mut out);
    }
    out
}

/// One repository folder checked in every format.
struct RepoRun {
    repo: String,
    outputs: BTreeMap<&'static str, Run>,
}

impl RepoRun {
    fn output(&self, format: &str) -> &Run {
        &self.outputs[format]
    }

    fn json(&self) -> Result<Value, String> {
        let r = self.output("json");
        serde_json::from_str(&r.stdout).map_err(|e| {
            format!(
                "{}: `--format json` printed no JSON report ({e}); exit {}, stderr:\n{}",
                self.repo, r.code, r.stderr
            )
        })
    }

    fn sarif(&self) -> Result<Value, String> {
        let r = self.output("sarif");
        serde_json::from_str(&r.stdout).map_err(|e| {
            format!(
                "{}: `--format sarif` printed no SARIF log ({e}); exit {}",
                self.repo, r.code
            )
        })
    }
}

/// Checks each repository folder once per format, zero-config, from the corpus folder (so
/// reported paths read `repo/...` and the project root is `tests/corpus`).
fn runs() -> &'static [RepoRun] {
    static RUNS: OnceLock<Vec<RepoRun>> = OnceLock::new();
    RUNS.get_or_init(|| {
        expected()
            .repos
            .iter()
            .map(|repo| RepoRun {
                repo: repo.clone(),
                outputs: FORMATS
                    .iter()
                    .map(|format| {
                        let r = run(prefixlint().args(["check", repo, "--format", format]));
                        (*format, r)
                    })
                    .collect(),
            })
            .collect()
    })
}

/// The binary under test, run from the corpus folder with a clean environment.
/// `PREFIXLINT_BIN` checks another build, e.g. a release binary or a merged branch's.
fn prefixlint() -> Command {
    let bin = std::env::var_os("PREFIXLINT_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_prefixlint")));
    let mut cmd = Command::new(bin);
    cmd.current_dir(corpus_dir())
        // No results cache: another build's (PREFIXLINT_BIN) or another test's reports.
        .env("PREFIXLINT_NO_CACHE", "1")
        .env("NO_COLOR", "1")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY");
    cmd
}

fn entries<'a>(json: &'a Value, key: &str) -> &'a [Value] {
    json[key].as_array().map(Vec::as_slice).unwrap_or(&[])
}

fn path_of(entry: &Value) -> String {
    entry["path"]
        .as_str()
        .unwrap_or_default()
        .trim_start_matches("./")
        .to_owned()
}

fn files_of(repo: &str) -> impl Iterator<Item = (&'static String, &'static ExpectedFile)> + '_ {
    expected()
        .files
        .iter()
        .filter(move |(path, _)| path.starts_with(&format!("{repo}/")))
}

/// Writes straight to stderr: the test harness captures `println!`, not this.
fn figure(line: &str) {
    let _ = writeln!(std::io::stderr(), "corpus: {line}");
}

fn fail_with(title: &str, failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{title}: {} problem(s)\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

#[test]
fn corpus_is_well_formed() {
    let expected = expected();
    let discovered = discovered_files();
    let listed: BTreeSet<String> = expected.files.keys().cloned().collect();
    let unlisted: Vec<_> = discovered.difference(&listed).collect();
    let missing: Vec<_> = listed.difference(&discovered).collect();
    assert!(
        unlisted.is_empty() && missing.is_empty(),
        "expected.yaml must list exactly the corpus files: unlisted {unlisted:?}, missing {missing:?}"
    );
    let prompts = expected
        .files
        .values()
        .filter(|f| f.status != Status::Skipped)
        .count();
    assert!(
        prompts >= 60,
        "the corpus needs at least 60 prompt templates, has {prompts}"
    );
    let kinds = field_descriptions();
    let mut failures = Vec::new();
    let mut clock_sites = 0;
    for (path, file) in &expected.files {
        let source = std::fs::read_to_string(corpus_dir().join(path)).unwrap();
        for site in &file.sites {
            let line = source
                .lines()
                .nth(site.line.saturating_sub(1))
                .unwrap_or("");
            if !line.contains(&site.expr) {
                failures.push(format!(
                    "{path}:{}: expected `{}` on that line, found `{line}`",
                    site.line, site.expr
                ));
            }
            if site.optional && site.rule != "PL002" {
                failures.push(format!(
                    "{path}:{}: only PL002 sites can be optional",
                    site.line
                ));
            }
            if !matches!(site.rule.as_str(), "PL001" | "PL002") {
                failures.push(format!(
                    "{path}:{}: site rule must be PL001 or PL002",
                    site.line
                ));
            }
            match (&site.kind, site.rule.as_str()) {
                (Some(k), "PL001") => {
                    for name in k.names() {
                        if !kinds.contains_key(name) {
                            failures.push(format!("{path}:{}: unknown kind `{name}`", site.line));
                        }
                    }
                    if k.names().contains(&"clock") && !site.optional {
                        clock_sites += 1;
                    }
                }
                (None, "PL001") => {
                    failures.push(format!("{path}:{}: a PL001 site needs a kind", site.line))
                }
                (Some(_), _) => failures.push(format!(
                    "{path}:{}: only PL001 sites have a kind",
                    site.line
                )),
                _ => {}
            }
        }
        if file.status != Status::Prompt && !file.sites.is_empty() {
            failures.push(format!("{path}: only renderable prompts have sites"));
        }
        if (file.status == Status::Error) != file.error_contains.is_some() {
            failures.push(format!("{path}: `error_contains` goes with status error"));
        }
    }
    assert!(
        clock_sites >= 17,
        "the corpus needs at least 17 clock values ahead of stable text, has {clock_sites}"
    );
    // Zero configuration is the point: most folders carry no config and no samples.
    let configured = expected
        .repos
        .iter()
        .filter(|repo| {
            let dir = corpus_dir().join(repo);
            dir.join("prefixlint.yaml").exists() || dir.join(".prefixlint.yaml").exists()
        })
        .count();
    assert_eq!(configured, 0, "corpus folders must be zero-config");
    let with_samples = expected
        .repos
        .iter()
        .filter(|repo| has_samples(&corpus_dir().join(repo)))
        .count();
    assert!(
        with_samples <= 2,
        "at most two corpus folders may carry samples files, {with_samples} do"
    );
    fail_with("expected.yaml does not match the corpus", &failures);
}

fn has_samples(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().any(|entry| {
        let path = entry.unwrap().path();
        if path.is_dir() {
            has_samples(&path)
        } else {
            path.to_string_lossy().ends_with(".samples.yaml")
        }
    })
}

/// Kind name → the descriptions PL001's message can name for it, from rules/fields/*.yaml:
/// the kind's own (matched by variable name) and its value shapes' (matched by value).
fn field_descriptions() -> BTreeMap<String, Vec<String>> {
    #[derive(Deserialize)]
    struct Field {
        kind: String,
        description: String,
        #[serde(default)]
        shapes: Vec<FieldShape>,
    }
    #[derive(Deserialize)]
    struct FieldShape {
        description: String,
    }
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(repo_root().join("rules/fields")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let field: Field =
            serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let descriptions = std::iter::once(field.description)
            .chain(field.shapes.into_iter().map(|s| s.description))
            .collect();
        out.insert(field.kind, descriptions);
    }
    out
}

/// (1) Every discovered file is in `templates` or `errors`, or, when it is not a prompt, in
/// `skipped` with a reason; nothing is reported twice or invented; the full summary counts
/// the failed and the skipped.
#[test]
fn every_discovered_file_is_accounted_for() {
    let mut failures = Vec::new();
    for run in runs() {
        let json = match run.json() {
            Ok(json) => json,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        let templates: BTreeSet<String> = entries(&json, "templates").iter().map(path_of).collect();
        let errors: BTreeSet<String> = entries(&json, "errors").iter().map(path_of).collect();
        let skipped: BTreeSet<String> = entries(&json, "skipped").iter().map(path_of).collect();
        for (path, file) in files_of(&run.repo) {
            let places: Vec<&str> = [
                ("templates", &templates),
                ("errors", &errors),
                ("skipped", &skipped),
            ]
            .iter()
            .filter(|(_, set)| set.contains(path))
            .map(|(name, _)| *name)
            .collect();
            let ok = match file.status {
                Status::Prompt | Status::Error => places == ["templates"] || places == ["errors"],
                Status::Skipped => places == ["skipped"],
            };
            if !ok {
                let want = match file.status {
                    Status::Skipped => "`skipped`",
                    _ => "`templates` or `errors`",
                };
                failures.push(format!("{path}: expected in {want}, found in {places:?}"));
            }
        }
        for entry in entries(&json, "skipped") {
            if entry["reason"].as_str().is_none_or(|r| r.trim().is_empty()) {
                failures.push(format!("{}: skipped without a reason", path_of(entry)));
            }
        }
        // The full report's summary counts what failed and what was skipped, not only
        // what was checked.
        let full = run.output("full");
        let full_text = format!("{}{}", full.stdout, full.stderr);
        for (count, word) in [(errors.len(), "failed"), (skipped.len(), "skipped")] {
            if count > 0 && !full_text.contains(&format!("{count} {word}")) {
                failures.push(format!(
                    "{}: the full summary does not say `{count} {word}`",
                    run.repo
                ));
            }
        }
        for path in templates.iter().chain(&errors).chain(&skipped) {
            if !expected().files.contains_key(path) {
                failures.push(format!(
                    "{}: reported `{path}`, not a corpus file",
                    run.repo
                ));
            }
        }
    }
    fail_with("files missing from the JSON report", &failures);
}

/// (2) At least 95% of the prompt templates render zero-config (each one that does not is
/// listed on stderr); a template that needs the application's configuration fails with an
/// error that names what is missing.
#[test]
fn render_rate_is_at_least_95_percent() {
    let mut failures = Vec::new();
    let (mut prompts, mut rendered) = (0usize, 0usize);
    for run in runs() {
        let json = match run.json() {
            Ok(json) => json,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        let templates: BTreeSet<String> = entries(&json, "templates").iter().map(path_of).collect();
        let errors: BTreeMap<String, &Value> = entries(&json, "errors")
            .iter()
            .map(|e| (path_of(e), e))
            .collect();
        let (mut repo_prompts, mut repo_rendered) = (0, 0);
        for (path, file) in files_of(&run.repo) {
            if file.status == Status::Skipped {
                continue;
            }
            repo_prompts += 1;
            if templates.contains(path) {
                repo_rendered += 1;
            } else if file.status == Status::Prompt {
                let why = errors
                    .get(path)
                    .and_then(|e| e["message"].as_str())
                    .unwrap_or("not in the report");
                figure(&format!("{path}: did not render: {}", first_line(why)));
            }
            if let Some(needle) = &file.error_contains {
                match errors.get(path) {
                    Some(error) => {
                        let text = format!("{} {}", error["message"], error["help"]);
                        if !text.contains(needle.as_str()) {
                            failures.push(format!(
                                "{path}: the error should mention `{needle}`: {}",
                                first_line(&text)
                            ));
                        }
                    }
                    None => failures.push(format!("{path}: expected an error naming `{needle}`")),
                }
            }
        }
        figure(&format!(
            "{:<9} rendered {repo_rendered}/{repo_prompts} prompt templates",
            run.repo
        ));
        prompts += repo_prompts;
        rendered += repo_rendered;
    }
    let rate = rendered as f64 / prompts.max(1) as f64;
    figure(&format!(
        "render rate {rendered}/{prompts} = {:.1}% (target ≥ {:.0}%)",
        rate * 100.0,
        MIN_RENDER_RATE * 100.0
    ));
    if rate < MIN_RENDER_RATE {
        failures.insert(
            0,
            format!(
                "render rate {:.1}% is below {:.0}%",
                rate * 100.0,
                MIN_RENDER_RATE * 100.0
            ),
        );
    }
    fail_with("prompt templates that do not render", &failures);
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

/// (3) Every failure in JSON `errors` also appears in SARIF `invocations`, as a concise
/// `path:line:col: error:` line, as a github `::error file=` annotation and in the full
/// report (stdout or stderr); exit 2 wins.
#[test]
fn every_failure_is_visible_in_every_format() {
    let mut failures = Vec::new();
    let mut total = 0;
    for run in runs() {
        let json = match run.json() {
            Ok(json) => json,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        // Discovered prompts missing from `templates` failed; they must be listed as errors.
        let templates: BTreeSet<String> = entries(&json, "templates").iter().map(path_of).collect();
        let errors = entries(&json, "errors");
        let error_paths: BTreeSet<String> = errors.iter().map(path_of).collect();
        for (path, file) in files_of(&run.repo) {
            if file.status != Status::Skipped
                && !templates.contains(path)
                && !error_paths.contains(path)
            {
                failures.push(format!("{path}: failed but is missing from JSON `errors`"));
            }
        }
        total += errors.len();
        let exit = run.output("json").code;
        if !errors.is_empty() && exit != 2 {
            failures.push(format!(
                "{}: {} failure(s) but exit {exit}, not 2",
                run.repo,
                errors.len()
            ));
        }
        let sarif = run.sarif();
        let notifications: Vec<&Value> = match &sarif {
            Ok(sarif) => {
                let invocations = entries(&sarif["runs"][0], "invocations");
                if !errors.is_empty()
                    && !invocations
                        .iter()
                        .any(|i| i["executionSuccessful"] == Value::Bool(false))
                {
                    failures.push(format!(
                        "{}: SARIF has no invocation with executionSuccessful: false",
                        run.repo
                    ));
                }
                invocations
                    .iter()
                    .flat_map(|i| entries(i, "toolExecutionNotifications"))
                    .collect()
            }
            Err(e) => {
                failures.push(e.clone());
                Vec::new()
            }
        };
        let concise = &run.output("concise").stdout;
        let github = &run.output("github").stdout;
        for error in errors {
            let path = path_of(error);
            let line = error["line"].as_u64();
            let in_sarif = notifications.iter().any(|n| {
                let location = &n["locations"][0]["physicalLocation"];
                location["artifactLocation"]["uri"].as_str() == Some(&path)
                    && (line.is_none() || location["region"]["startLine"].as_u64() == line)
            });
            if !in_sarif {
                failures.push(format!(
                    "{path}: failure missing from SARIF toolExecutionNotifications"
                ));
            }
            let concise_prefix = match (line, error["column"].as_u64()) {
                (Some(l), Some(c)) => format!("{path}:{l}:{c}: error: "),
                _ => format!("{path}:"),
            };
            if !concise
                .lines()
                .any(|l| l.starts_with(&concise_prefix) && l.contains(": error: "))
            {
                failures.push(format!("{path}: no concise `{concise_prefix}` line"));
            }
            let full = run.output("full");
            if !full.stdout.contains(&path) && !full.stderr.contains(&path) {
                failures.push(format!("{path}: failure not named by the full report"));
            }
            let github_prefix = format!("::error file={path}");
            let github_line = line.map(|l| format!("line={l}"));
            if !github.lines().any(|l| {
                l.starts_with(&github_prefix)
                    && github_line
                        .as_ref()
                        .is_none_or(|want| l.contains(want.as_str()))
            }) {
                failures.push(format!(
                    "{path}: no github `{github_prefix},line=…` annotation"
                ));
            }
        }
    }
    figure(&format!("{total} failure(s) reported in JSON `errors`"));
    fail_with("failures missing from an output format", &failures);
}

/// (4) Templates of code and config are not prompts: no finding on them, in any format.
#[test]
fn non_prompt_files_get_no_findings() {
    let mut failures = Vec::new();
    let mut non_prompts = 0;
    for run in runs() {
        let skipped: Vec<&String> = files_of(&run.repo)
            .filter(|(_, f)| f.status == Status::Skipped)
            .map(|(p, _)| p)
            .collect();
        non_prompts += skipped.len();
        if let Ok(json) = run.json() {
            for template in entries(&json, "templates") {
                let path = path_of(template);
                let findings = entries(template, "diagnostics").len();
                if skipped.contains(&&path) && findings > 0 {
                    failures.push(format!(
                        "{path}: not a prompt, but {findings} finding(s) in JSON"
                    ));
                }
            }
        }
        for format in ["concise", "github"] {
            for line in run.output(format).stdout.lines() {
                for path in &skipped {
                    if is_finding_line(line, path) {
                        failures.push(format!(
                            "{path}: not a prompt, but {format} reports `{line}`"
                        ));
                    }
                }
            }
        }
    }
    figure(&format!(
        "{non_prompts} non-prompt templates, {} with findings",
        failures.len()
    ));
    fail_with("findings on templates that are not prompts", &failures);
}

/// A finding (not a failure) on `path`: concise `path:L:C: PLnnn …` or github `…file=path,…title=PLnnn…`.
fn is_finding_line(line: &str, path: &str) -> bool {
    let concise = line
        .strip_prefix(&format!("{path}:"))
        .and_then(|rest| rest.splitn(3, ':').nth(2))
        .is_some_and(|rest| rest.trim_start().starts_with("PL"));
    let github = line.contains(&format!("file={path},")) && line.contains("title=PL");
    concise || github
}

/// (5) Every expected volatile site is reported at its line with its rule (and, for PL001,
/// its kind), and no PL001/PL002 finding appears anywhere else.
#[test]
fn every_volatile_site_is_found_and_nothing_else() {
    let descriptions = field_descriptions();
    let mut failures = Vec::new();
    let (mut expected_sites, mut found_sites) = (0, 0);
    let (mut clock_expected, mut clock_found) = (0, 0);
    let (mut optional_sites, mut optional_found) = (0, 0);
    for run in runs() {
        let json = match run.json() {
            Ok(json) => json,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        let templates: BTreeMap<String, &Value> = entries(&json, "templates")
            .iter()
            .map(|t| (path_of(t), t))
            .collect();
        for (path, file) in files_of(&run.repo) {
            if file.status != Status::Prompt {
                continue;
            }
            let is_clock = |s: &Site| {
                !s.optional
                    && s.kind
                        .as_ref()
                        .is_some_and(|k| k.names().contains(&"clock"))
            };
            let required = file.sites.iter().filter(|s| !s.optional).count();
            expected_sites += required;
            optional_sites += file.sites.len() - required;
            clock_expected += file.sites.iter().filter(|s| is_clock(s)).count();
            let Some(template) = templates.get(path) else {
                if required > 0 {
                    failures.push(format!(
                        "{path}: not rendered, so its {required} expected site(s) cannot be found"
                    ));
                }
                continue;
            };
            let divergences: Vec<&Value> = entries(template, "diagnostics")
                .iter()
                .filter(|d| matches!(d["rule"].as_str(), Some("PL001" | "PL002")))
                .collect();
            for site in &file.sites {
                let on_line: Vec<&&Value> = divergences
                    .iter()
                    .filter(|d| d["line"].as_u64() == Some(site.line as u64))
                    .collect();
                let with_rule: Vec<&&Value> = on_line
                    .iter()
                    .copied()
                    .filter(|d| d["rule"].as_str() == Some(site.rule.as_str()))
                    .collect();
                let kind_ok = |d: &Value| match (&site.kind, d["message"].as_str()) {
                    (Some(kinds), Some(message)) => kinds.names().iter().any(|k| {
                        descriptions
                            .get(*k)
                            .is_some_and(|ds| ds.iter().any(|d| message.contains(d.as_str())))
                    }),
                    (None, _) => true,
                    _ => false,
                };
                if site.optional {
                    // Allowed, not required; a finding there must still have the right rule.
                    if on_line.len() > with_rule.len() {
                        failures.push(format!(
                            "{path}:{}: only {} may be reported for `{}`",
                            site.line, site.rule, site.expr
                        ));
                    }
                    optional_found += usize::from(!with_rule.is_empty());
                } else if with_rule.is_empty() {
                    let got: Vec<String> = on_line
                        .iter()
                        .map(|d| d["rule"].as_str().unwrap_or("?").to_owned())
                        .collect();
                    failures.push(format!(
                        "{path}:{}: expected {} for `{}`, found {}",
                        site.line,
                        site.rule,
                        site.expr,
                        if got.is_empty() {
                            "nothing".into()
                        } else {
                            got.join(", ")
                        }
                    ));
                } else if !with_rule.iter().any(|d| kind_ok(d)) {
                    failures.push(format!(
                        "{path}:{}: {} is not of kind {:?}: {}",
                        site.line,
                        site.rule,
                        site.kind.as_ref().map(Kinds::names).unwrap_or_default(),
                        with_rule[0]["message"]
                    ));
                } else {
                    found_sites += 1;
                    if is_clock(site) {
                        clock_found += 1;
                    }
                }
            }
            for d in &divergences {
                let line = d["line"].as_u64().unwrap_or(0) as usize;
                if !file.sites.iter().any(|s| s.line == line) {
                    failures.push(format!(
                        "{path}:{line}: unexpected {}: {}",
                        d["rule"].as_str().unwrap_or("?"),
                        d["message"].as_str().unwrap_or_default()
                    ));
                }
            }
        }
    }
    figure(&format!(
        "volatile sites found {found_sites}/{expected_sites} \
         (optional neutral sites reported: {optional_found}/{optional_sites})"
    ));
    figure(&format!(
        "clock values found {clock_found}/{clock_expected}"
    ));
    fail_with("volatile sites", &failures);
}
