//! A template's escape sequences are shown, never obeyed (issue 42 §2): the full, concise
//! and github formats and the errors on standard error print `\x1b`, not the byte (JSON
//! and SARIF escape them as their syntax does).

use crate::support;

use std::fs;
use support::*;

/// Set the window title, ring the bell, clear the screen, move the cursor home.
const HOSTILE: &str = "\u{1b}]0;PWNED\u{7}\u{1b}[2J\u{1b}[H\u{9b}31m";

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let stable =
        fs::read_to_string(repo_root().join("fixtures/volatile-before-stable/stable.md")).unwrap();
    // A finding quotes line 1; a syntax error quotes line 2 of the other file.
    fs::write(
        dir.path().join("a.j2"),
        format!("Current time: {{{{ now() }}}} {HOSTILE}\n{stable}"),
    )
    .unwrap();
    fs::write(
        dir.path().join("b.j2"),
        format!("Hello\n{{% if %}} {HOSTILE}\n"),
    )
    .unwrap();
    dir
}

fn assert_no_raw_controls(what: &str, text: &str) {
    for c in ['\u{1b}', '\u{7}', '\u{9b}'] {
        assert!(!text.contains(c), "{what} prints a raw {:?}:\n{text}", c);
    }
}

#[test]
fn human_formats_and_errors_escape_a_templates_control_characters() {
    let dir = project();
    for format in ["full", "concise", "github"] {
        let r = run(prefixlint().current_dir(dir.path()).args([
            "check",
            "--no-config",
            "--no-cache",
            "--format",
            format,
            ".",
        ]));
        assert_eq!(r.code, 2, "{format}: {}\n{}", r.stdout, r.stderr);
        assert_no_raw_controls(&format!("{format} stdout"), &r.stdout);
        assert_no_raw_controls(&format!("{format} stderr"), &r.stderr);
        assert!(
            r.stdout.contains("\\x1b]0;PWNED\\x07") || r.stderr.contains("\\x1b]0;PWNED\\x07"),
            "{format} does not show the sequence:\n{}\n{}",
            r.stdout,
            r.stderr
        );
    }
    // The full format quotes the finding's line, escaped; the error quotes the bad line.
    let r = run(prefixlint().current_dir(dir.path()).args([
        "check",
        "--no-config",
        "--no-cache",
        "a.j2",
    ]));
    assert!(
        r.stdout
            .contains("{{ now() }} \\x1b]0;PWNED\\x07\\x1b[2J\\x1b[H\\u{9b}31m"),
        "{}",
        r.stdout
    );
    // JSON needs no more: its strings escape control characters.
    let r = run(prefixlint().current_dir(dir.path()).args([
        "check",
        "--no-config",
        "--no-cache",
        "--format",
        "json",
        ".",
    ]));
    assert_no_raw_controls("json", &r.stdout);
}

/// On a terminal the full format is coloured: its own SGR sequences stay, the template's
/// sequences are still escaped. `script` (util-linux, on every Debian) gives the run a real
/// pseudo-terminal.
#[test]
fn on_a_terminal_the_colours_stay_and_the_templates_sequences_do_not() {
    let dir = project();
    let command = format!("{} check --no-config --no-cache a.j2", binary().display());
    let out = std::process::Command::new("script")
        .current_dir(dir.path())
        .env(NO_CACHE.0, NO_CACHE.1)
        .env_remove("NO_COLOR")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("\u{1b}[") && text.contains('m'),
        "not coloured:\n{text}"
    );
    assert!(text.contains("\\x1b]0;PWNED\\x07"), "{text}");
    for raw in ["\u{1b}]0;", "\u{7}", "\u{1b}[2J", "\u{1b}[H", "\u{9b}"] {
        assert!(!text.contains(raw), "raw {raw:?} on the terminal:\n{text}");
    }
}
