//! One meaning for a setting in every command (issue 41 §1): a config file in a subfolder
//! gives `render`, `check`, `audit` and `simulate` the same chat template as the flag does,
//! its path relative to the config file wherever the command runs from. (`measure`, which
//! needs a real server, is in tests/heavy/settings_measure.rs.)

use crate::support as common;

use std::path::PathBuf;
use std::process::Command;

/// A chat template no model has: what it writes shows which template rendered a request.
pub const MARKER_TEMPLATE: &str = "{%- for message in messages %}<|im_start|>{{ message.role }}\nsettings-marker: {{ message.content }}<|im_end|>\n{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

/// A project whose config sits in `sub/`, naming `sub/marker.jinja` as `marker.jinja`.
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new() -> Project {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join("marker.jinja"), MARKER_TEMPLATE).unwrap();
        std::fs::write(sub.join("prefixlint.yaml"), "chat_template: marker.jinja\n").unwrap();
        let repo = common::repo_root();
        for file in [
            "support_agent.j2",
            "support_agent.samples.yaml",
            "policy.md",
        ] {
            std::fs::copy(repo.join("fixtures/prompts").join(file), sub.join(file)).unwrap();
        }
        std::fs::copy(
            repo.join("fixtures/chat-conversations/system-user.yaml"),
            sub.join("request.yaml"),
        )
        .unwrap();
        std::fs::copy(
            repo.join("fixtures/audit/requests.jsonl"),
            dir.path().join("requests.jsonl"),
        )
        .unwrap();
        Project { dir }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    /// The binary, run from the project's top folder (the config is one folder down).
    fn prefixlint(&self, args: &[&str]) -> common::Run {
        let mut cmd: Command = common::prefixlint();
        cmd.current_dir(self.dir.path()).args(args);
        common::run(&mut cmd)
    }

    /// The same command three ways: with the config file, with the flag and no config, and
    /// with neither. The first two must agree byte for byte, and differ from the third.
    fn assert_config_is_the_flag(&self, args: &[&str]) -> (common::Run, common::Run) {
        let by_config = self.prefixlint(&[args, &["--config", "sub/prefixlint.yaml"]].concat());
        let by_flag = self.prefixlint(
            &[
                args,
                &["--no-config", "--chat-template", "sub/marker.jinja"],
            ]
            .concat(),
        );
        assert_eq!(
            (by_config.code, &by_config.stderr),
            (by_flag.code, &by_flag.stderr),
            "{args:?}"
        );
        assert_eq!(by_config.stdout, by_flag.stdout, "{args:?}");
        (by_config, by_flag)
    }
}

#[test]
fn render_takes_the_chat_template_of_a_config_in_a_subfolder() {
    let project = Project::new();
    let args = [
        "render",
        "--messages",
        "sub/request.yaml",
        "--now",
        "2026-01-02T03:04:05Z",
    ];
    let (by_config, _) = project.assert_config_is_the_flag(&args);
    assert_eq!(by_config.code, 0, "{}", by_config.stderr);
    assert!(
        by_config
            .stdout
            .contains("settings-marker: What is a KV cache?"),
        "{}",
        by_config.stdout
    );
    // Found from the request's folder too, as `check` finds a config from its paths.
    let found = project.prefixlint(&args);
    assert_eq!(found.stdout, by_config.stdout, "{}", found.stderr);
    // Without either, render names both ways to give it.
    let neither = project.prefixlint(&[&args[..], &["--no-config"]].concat());
    assert_eq!(neither.code, 2);
    assert!(
        neither
            .stderr
            .contains("`chat_template:` in prefixlint.yaml"),
        "{}",
        neither.stderr
    );
}

#[test]
fn check_takes_the_chat_template_of_a_config_in_a_subfolder() {
    let project = Project::new();
    let args = ["check", "sub/support_agent.j2", "--format", "json"];
    let (by_config, _) = project.assert_config_is_the_flag(&args);
    let report: serde_json::Value = serde_json::from_str(&by_config.stdout).unwrap();
    let plain = project.prefixlint(&[&args[..], &["--no-config"]].concat());
    let plain: serde_json::Value = serde_json::from_str(&plain.stdout).unwrap();
    let tokens = |r: &serde_json::Value| r["templates"][0]["tokens"]["min"].clone();
    assert!(tokens(&report).is_number(), "{report:#}");
    assert_ne!(
        tokens(&report),
        tokens(&plain),
        "the chat template adds tokens"
    );
    // From the project's top folder the config is found from the checked path.
    let found = project.prefixlint(&args);
    assert_eq!(found.stdout, by_config.stdout, "{}", found.stderr);
}

#[test]
fn audit_and_simulate_take_the_chat_template_of_a_config_in_a_subfolder() {
    let project = Project::new();
    for args in [
        &[
            "audit",
            "requests.jsonl",
            "--format",
            "json",
            "--fail-on",
            "never",
        ][..],
        &[
            "simulate",
            "requests.jsonl",
            "--format",
            "json",
            "--kv-blocks",
            "64",
        ][..],
    ] {
        let (by_config, _) = project.assert_config_is_the_flag(args);
        assert_eq!(by_config.code, 0, "{args:?}: {}", by_config.stderr);
        let report: serde_json::Value = serde_json::from_str(&by_config.stdout).unwrap();
        assert_eq!(report["chat_template"], "sub/marker.jinja", "{args:?}");
        let plain = project.prefixlint(&[args, &["--no-config"]].concat());
        assert_ne!(plain.stdout, by_config.stdout, "{args:?}");
    }
}

#[test]
fn a_config_tokenizer_path_is_relative_to_the_config_file() {
    let project = Project::new();
    common::builtin_tokenizer_file(&project.path("sub"));
    std::fs::write(
        project.path("sub/prefixlint.yaml"),
        "tokenizer: tokenizer.json\n",
    )
    .unwrap();
    let args = [
        "render",
        "sub/support_agent.j2",
        "--tokens",
        "--now",
        "2026-01-02T03:04:05Z",
    ];
    let by_config = project.prefixlint(&[&args[..], &["--config", "sub/prefixlint.yaml"]].concat());
    let by_flag = project.prefixlint(
        &[
            &args[..],
            &["--no-config", "--tokenizer", "sub/tokenizer.json"],
        ]
        .concat(),
    );
    assert_eq!(by_config.code, 0, "{}", by_config.stderr);
    assert_eq!(by_config.stdout, by_flag.stdout);
}

#[test]
fn config_limits_reach_the_chat_template() {
    let project = Project::new();
    std::fs::write(
        project.path("sub/prefixlint.yaml"),
        "chat_template: marker.jinja\nlimits: {max_output_bytes: 64}\n",
    )
    .unwrap();
    for args in [
        &[
            "audit",
            "requests.jsonl",
            "--format",
            "json",
            "--fail-on",
            "never",
        ][..],
        &[
            "simulate",
            "requests.jsonl",
            "--format",
            "json",
            "--kv-blocks",
            "64",
        ][..],
        &["render", "--messages", "sub/request.yaml"][..],
    ] {
        let limited = project.prefixlint(&[args, &["--config", "sub/prefixlint.yaml"]].concat());
        let said = format!("{}{}", limited.stdout, limited.stderr);
        assert!(said.contains("limits.max_output_bytes"), "{args:?}: {said}");
        let unlimited = project.prefixlint(
            &[
                args,
                &["--no-config", "--chat-template", "sub/marker.jinja"],
            ]
            .concat(),
        );
        assert!(
            !format!("{}{}", unlimited.stdout, unlimited.stderr)
                .contains("limits.max_output_bytes"),
            "{args:?}"
        );
    }
}
