//! The VS Code extension (editors/vscode/): `vsce package` builds its .vsix offline from the
//! packages `npm ci` installed (scripts/setup.d/21-vscode-extension.sh), and its client code
//! starts the real `prefixlint server` and gets PL001 at the clock of a template, over the
//! language client's protocol from node (no VS Code binary can be fetched here).

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn extension() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("editors/vscode")
}

/// `node` in the extension's folder, with npm unable to reach any registry.
fn node(args: &[&str]) -> Command {
    let dir = extension();
    assert!(
        dir.join("node_modules/@vscode/vsce").is_dir()
            && dir.join("node_modules/vscode-languageclient").is_dir(),
        "editors/vscode/node_modules is missing: run `bash scripts/test.sh`, which installs it \
         (scripts/setup.d/21-vscode-extension.sh)"
    );
    let mut cmd = Command::new("node");
    cmd.args(args)
        .current_dir(&dir)
        .env("npm_config_offline", "true")
        // A port nothing listens on: a package fetched now fails the test.
        .env("npm_config_registry", "http://127.0.0.1:9/")
        .env("NO_COLOR", "1");
    cmd
}

fn succeeded(what: &str, output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The names of the files in a zip archive (a .vsix), read with Python's zipfile.
fn archive_names(archive: &Path) -> Vec<String> {
    let output = Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile; print('\\n'.join(zipfile.ZipFile(sys.argv[1]).namelist()))",
        ])
        .arg(archive)
        .output()
        .unwrap();
    succeeded("reading the .vsix", &output)
        .lines()
        .map(str::to_owned)
        .collect()
}

fn archive_member(archive: &Path, name: &str) -> Vec<u8> {
    let output = Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))",
        ])
        .arg(archive)
        .arg(name)
        .output()
        .unwrap();
    succeeded("reading the .vsix", &output);
    output.stdout
}

#[test]
fn vsce_packages_the_extension_offline() {
    let dir = tempfile::tempdir().unwrap();
    let vsix = dir.path().join("prefixlint.vsix");
    let output = node(&["node_modules/@vscode/vsce/vsce", "package", "--out"])
        .arg(&vsix)
        .output()
        .unwrap();
    succeeded("vsce package", &output);
    let names = archive_names(&vsix);
    for expected in [
        "extension.vsixmanifest",
        "extension/package.json",
        "extension/src/extension.js",
        "extension/src/server.js",
        "extension/src/documents.js",
        "extension/node_modules/vscode-languageclient/node.js",
    ] {
        assert!(
            names.iter().any(|name| name == expected),
            "{expected} not in {names:?}"
        );
    }
    // The tests, the packaging scripts and the development tools stay out.
    for left_out in [
        "extension/test/",
        "extension/scripts/",
        "extension/node_modules/@vscode/vsce/",
    ] {
        assert!(
            !names.iter().any(|name| name.starts_with(left_out)),
            "{left_out} in {names:?}"
        );
    }
    // The config schema at the repository's root is what the package holds for
    // `prefixlint.yaml` (yamlValidation), when the root has one.
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("prefixlint.schema.json");
    if schema.is_file() {
        assert_eq!(
            archive_member(&vsix, "extension/prefixlint.schema.json"),
            std::fs::read(&schema).unwrap()
        );
    }
    let manifest: serde_json::Value =
        serde_json::from_slice(&archive_member(&vsix, "extension/package.json")).unwrap();
    assert_eq!(
        manifest["contributes"]["yamlValidation"][0]["url"],
        "./prefixlint.schema.json"
    );
}

#[test]
fn the_extensions_client_gets_pl001_from_the_real_server() {
    let output = node(&["--test", "--test-reporter=tap", "test/"])
        .env("PREFIXLINT_TEST_BINARY", support::binary())
        // The test's server and `check` inherit it: no results cache shared with other tests.
        .env(support::NO_CACHE.0, support::NO_CACHE.1)
        .env_remove("NODE_OPTIONS")
        .output()
        .unwrap();
    let stdout = succeeded("node --test test/", &output);
    assert!(stdout.contains("# fail 0"), "{stdout}");
    assert!(stdout.contains("# pass 4"), "{stdout}");
}
