//! Nothing outside the project is read or written unless it was named (issue 42 §2): a
//! walk does not follow links out of the walked folder (folder, template and samples-file
//! links), `--fix` through a named link to a file outside is refused as the same link met
//! by a walk is, and the summary counts only the fixes written. Real links, real files.

use crate::support;

use std::fs;
use std::os::unix::fs::symlink;
use support::*;

/// A template PL001 fixes: a clock line before a long stable text.
fn volatile_template() -> String {
    let stable =
        fs::read_to_string(repo_root().join("fixtures/volatile-before-stable/stable.md")).unwrap();
    format!(
        "Current time: {{{{ now }}}}\n{}\nQuestion: {{{{ question }}}}\n",
        stable.trim_end()
    )
}

/// `outside/` beside `project/`: a secret template, a folder of them and a samples file.
fn project_with_links_out() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    fs::create_dir_all(outside.join("lib")).unwrap();
    fs::write(outside.join("secret.j2"), "SECRET-FILE-LINE {{ x }}\n").unwrap();
    fs::write(outside.join("lib/deep.j2"), "SECRET-FOLDER-LINE {{ x }}\n").unwrap();
    fs::write(
        outside.join("t.samples.yaml"),
        "- x: SECRET-SAMPLES-LINE\n- {{ not yaml\n",
    )
    .unwrap();
    let project = dir.path().join("project");
    fs::create_dir_all(project.join("prompts/inner")).unwrap();
    fs::create_dir(project.join(".git")).unwrap();
    fs::write(project.join("prompts/a.j2"), "Hello {{ x }}\n").unwrap();
    fs::write(project.join("prompts/inner/b.j2"), "Bye {{ x }}\n").unwrap();
    fs::write(project.join("prompts/t.j2"), "Tea {{ x }}\n").unwrap();
    symlink("../../outside/secret.j2", project.join("prompts/secret.j2")).unwrap();
    symlink("../../outside/lib", project.join("prompts/lib")).unwrap();
    symlink("/usr/lib", project.join("prompts/system")).unwrap();
    symlink(
        "../../outside/t.samples.yaml",
        project.join("prompts/t.samples.yaml"),
    )
    .unwrap();
    // Links that stay inside are followed (and a file met twice is checked once).
    symlink("inner", project.join("prompts/alias")).unwrap();
    symlink("a.j2", project.join("prompts/same.j2")).unwrap();
    (dir, project)
}

#[test]
fn a_walk_follows_no_link_out_of_the_walked_folder_and_says_so() {
    let (_dir, project) = project_with_links_out();
    let r = run(prefixlint().current_dir(&project).args([
        "check",
        "--no-config",
        "--no-cache",
        "--format",
        "json",
        "prompts",
    ]));
    for secret in [
        "SECRET-FILE-LINE",
        "SECRET-FOLDER-LINE",
        "SECRET-SAMPLES-LINE",
    ] {
        assert!(
            !r.stdout.contains(secret) && !r.stderr.contains(secret),
            "{secret} was read:\n{}\n{}",
            r.stdout,
            r.stderr
        );
    }
    let report: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let mut paths: Vec<&str> = report["templates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["path"].as_str().unwrap())
        .collect();
    paths.sort();
    assert_eq!(
        paths,
        ["prompts/a.j2", "prompts/inner/b.j2"],
        "{}",
        r.stdout
    );
    let skipped: Vec<(&str, &str)> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["path"].as_str().unwrap(), s["reason"].as_str().unwrap()))
        .collect();
    for link in ["prompts/lib", "prompts/secret.j2", "prompts/system"] {
        assert!(
            skipped
                .iter()
                .any(|(path, reason)| *path == link
                    && reason.contains("link out of the checked folder")),
            "{link} not listed as skipped: {skipped:?}"
        );
    }
    // The samples link is not "no samples": its template fails, naming why.
    let errors = report["errors"].to_string();
    assert!(
        errors.contains("prompts/t.samples.yaml leads (through a link) outside the project root"),
        "{errors}"
    );
    assert_eq!(r.code, 2);
}

#[test]
fn a_link_named_on_the_command_line_is_followed() {
    let (_dir, project) = project_with_links_out();
    let r = run(prefixlint().current_dir(&project).args([
        "check",
        "--no-config",
        "--no-cache",
        "--format",
        "json",
        "prompts/secret.j2",
    ]));
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("\"path\": \"prompts/secret.j2\""),
        "{}",
        r.stdout
    );
}

#[test]
fn fix_through_a_named_link_out_of_the_project_is_refused_like_a_walk() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside.j2");
    fs::write(&outside, volatile_template()).unwrap();
    let project = dir.path().join("project");
    fs::create_dir_all(project.join(".git")).unwrap();
    symlink("../outside.j2", project.join("link.j2")).unwrap();
    let r = run(prefixlint().current_dir(&project).args([
        "check",
        "--no-config",
        "--no-cache",
        "--fix",
        "--unsafe-fixes",
        "link.j2",
    ]));
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(
        flat(&r.stderr)
            .contains("cannot fix link.j2: it is a link to a file outside the checked paths"),
        "{}",
        r.stderr
    );
    assert!(
        r.stdout.contains("Fixed 0 findings in 0 files."),
        "{}",
        r.stdout
    );
    assert_eq!(fs::read_to_string(&outside).unwrap(), volatile_template());
    assert!(fs::symlink_metadata(project.join("link.j2"))
        .unwrap()
        .is_symlink());
    // A walk of the same folder does not follow the link, so it fixes nothing either.
    let r = run(prefixlint().current_dir(&project).args([
        "check",
        "--no-config",
        "--no-cache",
        "--fix",
        "--unsafe-fixes",
        ".",
    ]));
    assert_eq!(fs::read_to_string(&outside).unwrap(), volatile_template());
    assert!(!r.stdout.contains("Fixed 1"), "{}", r.stdout);
    // A link inside the checked folder to a file in it is followed: the file is fixed.
    fs::write(project.join("real.j2"), volatile_template()).unwrap();
    symlink("real.j2", project.join("near.j2")).unwrap();
    let r = run(prefixlint().current_dir(&project).args([
        "check",
        "--no-config",
        "--no-cache",
        "--fix",
        "--unsafe-fixes",
        ".",
    ]));
    assert!(
        r.stdout.contains("Fixed 1 finding in 1 file."),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    assert_ne!(
        fs::read_to_string(project.join("real.j2")).unwrap(),
        volatile_template()
    );
}

#[test]
fn the_summary_counts_only_the_fixes_written() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.j2"), volatile_template()).unwrap();
    fs::write(dir.path().join("b_locked.j2"), volatile_template()).unwrap();
    fs::set_permissions(
        dir.path().join("b_locked.j2"),
        fs::Permissions::from_mode(0o444),
    )
    .unwrap();
    let r = run(prefixlint().current_dir(dir.path()).args([
        "check",
        "--no-config",
        "--no-cache",
        "--fix",
        "--unsafe-fixes",
        ".",
    ]));
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("Fixed 1 finding in 1 file."),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("PL001 (unsafe, not written)"),
        "{}",
        r.stdout
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("b_locked.j2")).unwrap(),
        volatile_template()
    );
}

/// A CRLF YAML host: the line the fix moves keeps the host's `\r\n`.
#[test]
fn a_fix_in_a_crlf_yaml_host_keeps_its_line_endings() {
    let dir = tempfile::tempdir().unwrap();
    let stable =
        fs::read_to_string(repo_root().join("fixtures/volatile-before-stable/stable.md")).unwrap();
    let indented: String = stable.lines().map(|l| format!("    {l}\n")).collect();
    let yaml = format!(
        "prompts:\n  system: |\n    Current time: {{{{ now }}}}\n{indented}    Question: {{{{ question }}}}\n  greeting: \"Hello {{{{ who }}}}\"\n"
    )
    .replace('\n', "\r\n");
    fs::write(dir.path().join("agent.yaml"), &yaml).unwrap();
    let r = run(prefixlint().current_dir(dir.path()).args([
        "check",
        "--no-config",
        "--no-cache",
        "--fix",
        "--unsafe-fixes",
        ".",
    ]));
    assert!(
        r.stdout.contains("Fixed 1 finding in 1 file."),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    let fixed = fs::read_to_string(dir.path().join("agent.yaml")).unwrap();
    assert_ne!(fixed, yaml);
    assert!(
        fixed.contains("    Question: {{ question }}\r\n    Current time: {{ now }}\r\n"),
        "{fixed:?}"
    );
    assert_eq!(
        fixed.matches('\n').count(),
        fixed.matches("\r\n").count(),
        "{fixed:?}"
    );
    assert_eq!(fixed.len(), yaml.len());
}

/// A real SIGINT at different moments of a `--fix` over many files: the run ends by the
/// signal (or finishes), no `.prefixlint-*.tmp` is left, and every file is whole: as it
/// was, or as a full run fixes it.
#[test]
fn sigint_during_fix_leaves_no_temporary_file_and_no_half_written_one() {
    const FILES: usize = 40;
    let original = volatile_template();
    let expected = {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("t.j2"), &original).unwrap();
        run(prefixlint().current_dir(dir.path()).args([
            "check",
            "--no-config",
            "--no-cache",
            "--fix",
            "--unsafe-fixes",
            ".",
        ]));
        fs::read_to_string(dir.path().join("t.j2")).unwrap()
    };
    assert_ne!(expected, original);
    let mut interrupted_mid_run = 0;
    // The signal goes once the first file is written (the writes come after every check),
    // then a little later: it lands among the writes, where a temporary file exists.
    for delay_ms in [0u64, 0, 5, 10, 20, 40] {
        let dir = tempfile::tempdir().unwrap();
        for n in 0..FILES {
            fs::write(dir.path().join(format!("t{n:02}.j2")), &original).unwrap();
        }
        let mut child = prefixlint()
            .current_dir(dir.path())
            .args([
                "check",
                "--no-config",
                "--no-cache",
                "--fix",
                "--unsafe-fixes",
                ".",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        let first_written = || {
            (0..FILES).any(|n| {
                fs::read_to_string(dir.path().join(format!("t{n:02}.j2")))
                    .is_ok_and(|text| text != original)
            })
        };
        while !first_written() && started.elapsed() < std::time::Duration::from_secs(60) {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        // SAFETY: a signal to our own child process.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let status = child.wait().unwrap();
        let mut fixed = 0;
        for entry in fs::read_dir(dir.path()).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            assert!(
                !name.starts_with(".prefixlint-"),
                "{name} left after SIGINT at {delay_ms} ms ({status:?})"
            );
            let text = fs::read_to_string(entry.path()).unwrap();
            assert!(
                text == original || text == expected,
                "{name} is half written after SIGINT at {delay_ms} ms"
            );
            fixed += usize::from(text == expected);
        }
        if fixed > 0 && fixed < FILES {
            interrupted_mid_run += 1;
        }
    }
    eprintln!("SIGINT landed among the writes in {interrupted_mid_run} of 6 runs");
    assert!(
        interrupted_mid_run > 0,
        "no signal landed among the writes: the test proved nothing"
    );
}
