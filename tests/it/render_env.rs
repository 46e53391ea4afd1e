//! The render environment behaves as the application's Jinja2 environment does (issue #11
//! §2-§5, §8): undefined variables, include resolution, the application's filters, tests and
//! globals, Python-only syntax, which files are prompts, and where the config is found.
//! Everything runs the real binary; the Jinja2 comparisons run Python Jinja2 as well.

use crate::support;

use std::fs;
use std::path::Path;
use std::process::Command;
use support::*;

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// `prefixlint render` of `template` (sample `sample`) from `root`, with `args` before it.
fn render(root: &Path, args: &[&str], template: &str, sample: usize) -> Run {
    run(prefixlint()
        .current_dir(root)
        .arg("render")
        .args(args)
        .args([template, "--sample", &sample.to_string()]))
}

/// What Python Jinja2 renders: `script` gets `root` (a str), `jinja2`, and `samples` (the
/// template's samples file, loaded) and prints the render.
fn python_render(root: &Path, script: &str) -> String {
    let out = Command::new(python())
        .current_dir(root)
        .arg("-c")
        .arg(format!(
            "import jinja2, sys\nroot = {root:?}\n{script}",
            root = root.display().to_string()
        ))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn undefined_modes_render_like_jinja2s_undefined_classes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let template = "A{{ missing }}B{% if missing %}yes{% endif %}{% for i in missing %}{{ i }}{% endfor %}C{{ missing | default('d') }}{{ missing is defined }}\n";
    write(root, "t.j2", template);
    write(root, "chained.j2", "[{{ missing.attr.deeper }}]\n");
    // Samples that leave `missing` out (without them it would be synthesized).
    write(root, "t.samples.yaml", "- {}\n");
    write(root, "chained.samples.yaml", "- {}\n");
    write(root, "lenient.yaml", "undefined: lenient\n");
    write(root, "strict.yaml", "undefined: strict\n");
    write(root, "chainable.yaml", "undefined: chainable\n");
    let python = |class: &str, name: &str| {
        python_render(
            root,
            &format!(
                "env = jinja2.Environment(loader=jinja2.FileSystemLoader(root), undefined=jinja2.{class})\n\
                 sys.stdout.write(env.get_template({name:?}).render())"
            ),
        )
    };
    for (config, class) in [
        (None, "Undefined"),
        (Some("lenient.yaml"), "Undefined"),
        (Some("chainable.yaml"), "ChainableUndefined"),
    ] {
        let args: Vec<&str> = match config {
            Some(file) => vec!["--config", file],
            None => vec![],
        };
        let ours = render(root, &args, "t.j2", 0);
        assert_eq!(ours.code, 0, "{config:?}: {}", ours.stderr);
        assert_eq!(ours.stdout, python(class, "t.j2"), "{config:?}");
    }
    // An attribute of an undefined value: an error under lenient, nothing under chainable.
    let lenient = render(root, &[], "chained.j2", 0);
    assert_eq!(lenient.code, 2);
    assert!(
        flat(&lenient.stderr).contains("chained.j2:1:"),
        "{}",
        lenient.stderr
    );
    let chainable = render(root, &["--config", "chainable.yaml"], "chained.j2", 0);
    assert_eq!(chainable.stdout, python("ChainableUndefined", "chained.j2"));
    // Strict: printing it is an error, as with StrictUndefined.
    let strict = render(root, &["--config", "strict.yaml"], "t.j2", 0);
    assert_eq!(strict.code, 2);
    assert!(strict.stderr.contains("undefined"), "{}", strict.stderr);
}

#[test]
fn pl011_names_the_variable_the_samples_and_its_first_use() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "prompts/t.j2",
        "You are ACME's assistant.\n{% include 'parts/persona.j2' %}\nQ: {{ question }}\n",
    );
    write(
        root,
        "prompts/parts/persona.j2",
        "Persona: {{ persona.style }}\n",
    );
    write(
        root,
        "prompts/t.samples.yaml",
        "- question: a\n  persona: {}\n- questoin: b\n  persona: {style: terse}\n",
    );
    let r = run(prefixlint().current_dir(root).args([
        "check",
        "--no-config",
        "--format",
        "concise",
        "prompts/t.j2",
    ]));
    assert_eq!(r.code, 0, "info findings do not fail: {}", r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(
        lines,
        [
            // Read in the include: located at the include tag.
            "prompts/t.j2:2:1: PL011 `persona.style` is undefined in sample 1 of prompts/t.samples.yaml, so it renders as nothing there (`undefined: lenient`)",
            "prompts/t.j2:3:7: PL011 `question` is undefined in sample 2 of prompts/t.samples.yaml, so it renders as nothing there (`undefined: lenient`)",
        ],
        "{}",
        r.stdout
    );
    // Strict has no such finding: the render is an error instead.
    write(root, "strict.yaml", "undefined: strict\n");
    let r = run(prefixlint().current_dir(root).args([
        "check",
        "--config",
        "strict.yaml",
        "prompts/t.j2",
    ]));
    assert_eq!(r.code, 2);
    assert!(!r.stdout.contains("PL011"));
    // And `rules: {PL011: off}` silences it.
    write(root, "quiet.yaml", "rules:\n  PL011: off\n");
    let r = run(prefixlint().current_dir(root).args([
        "check",
        "--config",
        "quiet.yaml",
        "--format",
        "concise",
        "prompts/t.j2",
    ]));
    assert_eq!(r.stdout, "", "{}", r.stderr);
}

#[test]
fn includes_resolve_from_ancestor_folders_and_search_paths_like_a_file_system_loader() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    // A prompt root several folders above the template, as agent frameworks lay it out,
    // plus a shared folder named by `search_path:`.
    write(&repo, ".git/HEAD", "ref: refs/heads/main\n");
    write(
        &repo,
        "prompts/agents/coder/system.j2",
        "{% extends 'layouts/base.prompt' %}{% block body %}{% include 'partials/tools.prompt' %}{% from 'macros.j2' import bullet %}{{ bullet(task) }}{% endblock %}\n",
    );
    write(
        &repo,
        "prompts/agents/coder/system.samples.yaml",
        "- task: refactor\n",
    );
    write(
        &repo,
        "prompts/layouts/base.prompt",
        "You are a coding agent.\n{% include 'partials/rules.prompt' %}\n{% block body %}{% endblock %}\n",
    );
    write(
        &repo,
        "prompts/partials/tools.prompt",
        "Tools: grep, sed.\n",
    );
    write(&repo, "prompts/partials/rules.prompt", "Rules: be brief.\n");
    write(
        &repo,
        "lib/shared/macros.j2",
        "{% macro bullet(x) %}- {{ x }}{% endmacro %}",
    );
    write(&repo, "prefixlint.yaml", "search_path: [lib/shared]\n");

    let ours = run(prefixlint()
        .current_dir(&repo)
        .args(["render", "prompts/agents/coder/system.j2"]));
    assert_eq!(ours.code, 0, "{}", ours.stderr);
    let python = python_render(
        &repo,
        "import os, yaml\n\
         env = jinja2.Environment(loader=jinja2.FileSystemLoader([os.path.join(root, 'prompts'), os.path.join(root, 'lib/shared')]))\n\
         samples = yaml.safe_load(open(os.path.join(root, 'prompts/agents/coder/system.samples.yaml')))\n\
         sys.stdout.write(env.get_template('agents/coder/system.j2').render(**samples[0]))",
    );
    assert_eq!(ours.stdout, python);

    // Checking the whole prompt folder renders everything.
    let r = run(prefixlint()
        .current_dir(&repo)
        .args(["check", "--format", "json", "prompts"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let json: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        json["templates"].as_array().unwrap().len(),
        4,
        "{}",
        r.stdout
    );

    // A search folder is a sandbox boundary like the root: it may not lie outside the
    // config's folder.
    write(dir.path(), "shared/x.j2", "x");
    for outside in ["../shared", "/etc"] {
        write(
            &repo,
            "outside.yaml",
            &format!("search_path: [{outside}]\n"),
        );
        let r = run(prefixlint().current_dir(&repo).args([
            "check",
            "--config",
            "outside.yaml",
            "prompts",
        ]));
        assert_eq!(r.code, 2, "{outside}");
        assert!(
            flat(&r.stderr).contains("is outside the folder of the config file"),
            "{}",
            r.stderr
        );
    }

    // Without the search path (an empty config at the root), the miss names every place
    // looked and the project root.
    fs::write(repo.join("empty.yaml"), "").unwrap();
    let r = run(prefixlint().current_dir(&repo).args([
        "check",
        "--config",
        "empty.yaml",
        "prompts/agents/coder/system.j2",
    ]));
    assert_eq!(r.code, 2);
    // Miette wraps long lines anywhere, so compare without blanks and gutters.
    let shown: String = r
        .stderr
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '│')
        .collect();
    for place in [
        "`prompts/agents/coder/macros.j2`",
        "`prompts/agents/macros.j2`",
        "`prompts/macros.j2`",
        "`macros.j2`",
    ] {
        assert!(shown.contains(place), "{place} missing: {shown}");
    }
    let real_repo = repo.canonicalize().unwrap();
    assert!(
        shown.contains(&format!("projectroot{}", real_repo.display())),
        "{shown}"
    );
}

#[test]
fn declared_filters_tests_and_globals_stand_in_for_the_applications() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "t.j2",
        "{{ query | lemmatize(lang='en') }}|{{ doc | render_md }}|{{ tags | tag_list | join(',') }}|{{ 1 | answer }}|{% if user is admin %}admin{% endif %}|{{ company }}|{{ get_tools() | length }}|{{ echo('x') }}\n",
    );
    write(
        root,
        "t.samples.yaml",
        "- {query: running, doc: '# hi', tags: x, user: u}\n",
    );
    write(
        root,
        "prefixlint.yaml",
        "filters:\n  lemmatize: identity\n  render_md: {string: '<h1>hi</h1>'}\n  tag_list: {list: [a, b]}\n  answer: {constant: 42}\n\
         tests:\n  admin: {constant: true}\n\
         globals:\n  company: ACME\n  get_tools: {function: {list: [search, calc, shell]}}\n  echo: {function: identity}\n",
    );
    let r = render(root, &[], "t.j2", 0);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "running|<h1>hi</h1>|a,b|42|admin|ACME|3|x");
    // A declared global is provided, not a variable: nothing is synthesized for it and
    // PL011 does not ask the samples for it.
    let r = run(prefixlint()
        .current_dir(root)
        .args(["check", "--format", "concise", "t.j2"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stdout.contains("company"), "{}", r.stdout);

    // Undeclared, each renders with a stand-in and a note that says how to declare it;
    // with `stand_ins: off`, each error says so.
    write(root, "off.yaml", "stand_ins: off\n");
    for (template, section) in [
        ("{{ q | lemmatize }}", "`filters: {lemmatize: identity}`"),
        (
            "{% if q is admin %}{% endif %}",
            "`tests: {admin: {constant: true}}`",
        ),
        (
            "{{ get_tools() }}",
            "`globals: {get_tools: {function: {list: [...]}}}`",
        ),
    ] {
        write(root, "u.j2", template);
        write(root, "u.samples.yaml", "- {}\n");
        let r = run(prefixlint().current_dir(root).args([
            "check",
            "--no-config",
            "--no-cache",
            "--format",
            "concise",
            "u.j2",
        ]));
        assert_eq!(r.code, 0, "{template}: {}", r.stderr);
        assert!(r.stdout.contains(section), "{template}: {}", r.stdout);
        let r = run(prefixlint().current_dir(root).args([
            "check",
            "--config",
            "off.yaml",
            "--no-cache",
            "u.j2",
        ]));
        assert_eq!(r.code, 2, "{template}");
        let shown = flat(&r.stderr);
        assert!(
            shown.contains("declare a stand-in for it in prefixlint.yaml"),
            "{template}: {shown}"
        );
    }
}

#[test]
fn a_bare_tuple_prints_like_python_and_positions_stay_right() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "t.j2",
        "Pair: {{ a[0], a[1] }} {{- ' ' -}} {{ a, }}\n{{ oops( }}\n",
    );
    write(
        root,
        "ok.j2",
        "Pair: {{ a[0], a[1] }} {{- ' ' -}} {{ a[1], }}\n",
    );
    write(root, "ok.samples.yaml", "- a: [x, y]\n");
    let ours = render(root, &[], "ok.j2", 0);
    assert_eq!(ours.code, 0, "{}", ours.stderr);
    let python = python_render(
        root,
        "env = jinja2.Environment(loader=jinja2.FileSystemLoader(root))\n\
         sys.stdout.write(env.get_template('ok.j2').render(a=['x', 'y']))",
    );
    assert_eq!(ours.stdout, python);
    assert_eq!(ours.stdout, "Pair: ('x', 'y') ('y',)");
    // A later syntax error is still reported at its own place, with the text as written.
    write(root, "t.samples.yaml", "- a: [x, y]\n");
    let r = run(prefixlint()
        .current_dir(root)
        .args(["check", "--no-config", "t.j2"]));
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("t.j2:2:"), "{}", r.stderr);
    assert!(r.stderr.contains("{{ a[0], a[1] }}"), "{}", r.stderr);
}

#[test]
fn files_that_are_not_prompts_are_skipped_unless_included_or_named() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "prompts/system.md.j2", "# System\nYou are helpful.\n");
    write(root, "deploy/ci.yml.j2", "image: {{ image }}\n");
    write(root, "deploy/Dockerfile.j2", "FROM {{ base }}\n");
    write(root, "scripts/setup.py.j2", "NAME = '{{ name }}'\n");
    let check = |args: &[&str]| {
        run(prefixlint()
            .current_dir(root)
            .arg("check")
            .args(args)
            .args(["--format", "json"]))
    };
    let paths = |r: &Run| -> Vec<String> {
        let json: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        json["templates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["path"].as_str().unwrap().to_owned())
            .collect()
    };
    let r = check(&["--no-config", "."]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(paths(&r), ["prompts/system.md.j2"]);
    // The report lists what was skipped, with why.
    let json: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let skipped: Vec<&str> = json["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        skipped,
        [
            "deploy/Dockerfile.j2",
            "deploy/ci.yml.j2",
            "scripts/setup.py.j2"
        ]
    );
    assert!(
        json["skipped"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("Dockerfile"),
        "{json}"
    );
    // Named on the command line, it is checked.
    let r = check(&["--no-config", "deploy/ci.yml.j2"]);
    assert_eq!(paths(&r), ["deploy/ci.yml.j2"]);
    let json: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(json["skipped"], serde_json::json!([]), "{json}");
    // An `include:` glob that names them opts them back in (a catch-all such as `**/*.j2`
    // does not); a glob of the user's that matches nothing is noted.
    write(
        root,
        "prefixlint.yaml",
        "include: ['**/*.j2', '*.yml.j2', '*.prompt.txt']\n",
    );
    let r = check(&["."]);
    assert_eq!(paths(&r), ["deploy/ci.yml.j2", "prompts/system.md.j2"]);
    let json: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(json["skipped"].as_array().unwrap().len(), 2, "{json}");
    assert!(
        r.stderr
            .contains("note: include glob `*.prompt.txt` matched no file"),
        "{}",
        r.stderr
    );
}

#[cfg(unix)]
#[test]
fn a_file_reached_through_a_symlinked_folder_is_checked_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "common/shared.j2", "Shared instructions.\n");
    write(root, "agents/own.j2", "Own.\n");
    std::os::unix::fs::symlink("../common", root.join("agents/common")).unwrap();
    let (code, json) = {
        let r =
            run(prefixlint()
                .current_dir(root)
                .args(["check", "--no-config", "--format", "json"]));
        (
            r.code,
            serde_json::from_str::<serde_json::Value>(&r.stdout).unwrap(),
        )
    };
    assert_eq!(code, 0);
    let mut paths: Vec<&str> = json["templates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["path"].as_str().unwrap())
        .collect();
    paths.sort();
    assert_eq!(paths, ["agents/own.j2", "common/shared.j2"]);
}

#[test]
fn check_dir_from_another_folder_finds_dirs_config() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    let elsewhere = dir.path().join("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    write(&project, "prompts/t.j2", "Hi {{ q | lemmatize }}\n");
    write(
        &project,
        "prefixlint.yaml",
        "filters:\n  lemmatize: identity\n",
    );
    let r = run(prefixlint().current_dir(&elsewhere).args([
        "check",
        "--format",
        "json",
        "../project/prompts",
    ]));
    assert_eq!(
        r.code, 0,
        "the config beside DIR declares the filter: {}",
        r.stderr
    );
    // A file argument finds it the same way; --no-config still ignores it.
    let r = run(prefixlint()
        .current_dir(&elsewhere)
        .args(["check", "../project/prompts/t.j2"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stdout.contains("is not a Jinja2 filter"), "{}", r.stdout);
    // Without the config the filter renders with a stand-in, which a note names.
    let r = run(prefixlint().current_dir(&elsewhere).args([
        "check",
        "--no-config",
        "../project/prompts/t.j2",
    ]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("`lemmatize` is not a Jinja2 filter"),
        "{}",
        r.stdout
    );
    // A config in the working directory is the fallback when the paths have none.
    write(
        &elsewhere,
        "prefixlint.yaml",
        "filters:\n  lemmatize: identity\n",
    );
    write(dir.path(), "loose/t.j2", "Hi {{ q | lemmatize }}\n");
    let r = run(prefixlint()
        .current_dir(&elsewhere)
        .args(["check", "../loose/t.j2"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
}
