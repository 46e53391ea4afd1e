//! `measure --api chat` against the real llama.cpp server (tests/support/llama.rs): a config
//! file in a subfolder gives it the same chat template as `--chat-template` does, its path
//! relative to the config file (issue 41 §1; the other commands are in tests/it/settings.rs).

use crate::support as measure_support;

use measure_support::llama::LlamaServer;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// The marker template of tests/it/settings.rs: what it writes shows which template counted.
const MARKER_TEMPLATE: &str = "{%- for message in messages %}<|im_start|>{{ message.role }}\nsettings-marker: {{ message.content }}<|im_end|>\n{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

/// `measure --api chat` from `dir`; the local prompt token counts, request by request.
fn local_counts(server: &LlamaServer, dir: &Path, extra: &[&str]) -> Vec<Value> {
    let output = assert_cmd::Command::cargo_bin("prefixlint")
        .unwrap()
        .current_dir(dir)
        .env("PREFIXLINT_NO_CACHE", "1")
        .args([
            "measure",
            "sub/clean.j2",
            "--server",
            &server.url,
            "--api",
            "chat",
            "--repeats",
            "1",
            "--format",
            "json",
        ])
        .args(extra)
        .timeout(Duration::from_secs(600))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let requests = report["templates"][0]["requests"]
        .as_array()
        .unwrap_or_else(|| panic!("no requests measured: {report:#}"));
    assert!(!requests.is_empty(), "{report:#}");
    requests
        .iter()
        .map(|r| r["prompt_tokens_local"].clone())
        .collect()
}

#[test]
fn measure_takes_the_chat_template_of_a_config_in_a_subfolder() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for file in ["clean.j2", "clean.samples.yaml"] {
        std::fs::copy(repo.join("fixtures/measure").join(file), sub.join(file)).unwrap();
    }
    std::fs::write(sub.join("marker.jinja"), MARKER_TEMPLATE).unwrap();
    std::fs::write(sub.join("prefixlint.yaml"), "chat_template: marker.jinja\n").unwrap();

    let server = LlamaServer::start();
    let by_config = local_counts(&server, dir.path(), &["--config", "sub/prefixlint.yaml"]);
    let by_flag = local_counts(
        &server,
        dir.path(),
        &["--no-config", "--chat-template", "sub/marker.jinja"],
    );
    let default = local_counts(&server, dir.path(), &["--no-config"]);
    assert_eq!(by_config, by_flag);
    assert_ne!(
        by_config, default,
        "the marker template writes more tokens than the default one"
    );
}
