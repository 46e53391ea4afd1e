//! Not every Jinja file is a prompt: repositories template Dockerfiles, CI YAML, setup.py
//! and shell scripts too. A file whose name says it renders to a code or configuration
//! format is skipped when folders are walked (files named on the command line, and files an
//! `include:` glob of the user's names, are still checked). The rule is the data below.

use std::ffi::OsStr;

/// Extensions that mark a Jinja template; what stands before them is what it renders to.
/// `.prompt` is absent on purpose: such a file is a prompt whatever precedes it.
const JINJA_EXTENSIONS: &[&str] = &["j2", "jinja", "jinja2"];

/// Inner extensions of code and configuration formats, with the format's name. Text and
/// Markdown (`.txt.j2`, `.md.j2`) are absent on purpose: those are how prompts are written.
const CODE_AND_CONFIG: &[(&[&str], &str)] = &[
    (&["yml", "yaml"], "YAML"),
    (&["json", "jsonc", "json5", "jsonl"], "JSON"),
    (&["toml"], "TOML"),
    (
        &[
            "ini",
            "cfg",
            "conf",
            "properties",
            "env",
            "gitignore",
            "dockerignore",
            "editorconfig",
        ],
        "configuration",
    ),
    (&["xml", "plist", "svg"], "XML"),
    (&["html", "htm", "xhtml"], "HTML"),
    (&["css", "scss", "less"], "CSS"),
    (&["py", "pyi", "pyx"], "Python"),
    (
        &["sh", "bash", "zsh", "fish", "ps1", "bat", "cmd"],
        "shell script",
    ),
    (
        &["js", "mjs", "cjs", "ts", "tsx", "jsx"],
        "JavaScript/TypeScript",
    ),
    (
        &[
            "rb", "go", "rs", "java", "kt", "c", "h", "cc", "cpp", "hpp", "cs", "php", "lua",
            "swift", "scala", "pl",
        ],
        "source code",
    ),
    (&["sql"], "SQL"),
    (&["tf", "tfvars", "hcl", "nix"], "infrastructure code"),
    (&["spec"], "RPM spec"),
    (&["service", "timer", "socket", "mount"], "systemd unit"),
    (&["dockerfile", "containerfile"], "Dockerfile"),
    (&["mk", "cmake", "gradle"], "build script"),
    (&["csv", "tsv"], "CSV"),
    (&["rst", "tex"], "document markup"),
];

/// File names (before the Jinja extension) that start like these are build and deploy
/// files whatever their extension: `Dockerfile.j2`, `Dockerfile.prod.j2`, `Makefile.jinja`.
const BUILD_FILE_NAMES: &[&str] = &[
    "Dockerfile",
    "Containerfile",
    "Makefile",
    "Jenkinsfile",
    "Vagrantfile",
    "Procfile",
    "Gemfile",
    "Caddyfile",
    "CMakeLists",
];

/// Why `path` is not a prompt, or `None` when it may be one.
#[cfg(test)]
pub fn reason(path: &std::path::Path) -> Option<String> {
    reason_named(path.file_name()?)
}

/// [`reason`] for a file named `name`.
pub fn reason_named(name: &OsStr) -> Option<String> {
    let name = name.to_string_lossy();
    let (stem, jinja) = name.rsplit_once('.')?;
    if !JINJA_EXTENSIONS
        .iter()
        .any(|extension| jinja.eq_ignore_ascii_case(extension))
    {
        return None;
    }
    if let Some(build) = BUILD_FILE_NAMES.iter().find(|b| stem.starts_with(**b)) {
        return Some(format!(
            "a {build} templated with Jinja (`{name}`), not a prompt"
        ));
    }
    // `.env` and `.gitignore` are all extension.
    let inner = match stem.rsplit_once('.') {
        Some((_, inner)) => inner,
        None => return None,
    };
    let inner_lower = inner.to_ascii_lowercase();
    if let Some(format) = requirements_file(stem, &inner_lower) {
        return Some(format!(
            "a {format} templated with Jinja (`{name}`), not a prompt"
        ));
    }
    let (_, format) = CODE_AND_CONFIG
        .iter()
        .find(|(extensions, _)| extensions.contains(&inner_lower.as_str()))?;
    Some(format!(
        "a {format} file templated with Jinja (`.{inner}.{jinja}`), not a prompt"
    ))
}

/// `requirements.txt.j2`, `requirements-dev.in.j2`: text files that are pip's, not prompts.
fn requirements_file(stem: &str, inner: &str) -> Option<&'static str> {
    let base = stem.rsplit_once('.')?.0;
    let is_requirements = base == "requirements"
        || base.starts_with("requirements-")
        || base.starts_with("requirements_");
    (is_requirements && matches!(inner, "txt" | "in")).then_some("pip requirements file")
}

#[cfg(test)]
mod tests {
    use super::reason;
    use std::path::Path;

    #[test]
    fn code_and_config_templates_are_not_prompts() {
        for name in [
            "ci.yml.j2",
            "values.yaml.jinja2",
            "setup.py.j2",
            "install.sh.j2",
            "package.json.j2",
            "pyproject.toml.j2",
            "app.spec.jinja2",
            "Dockerfile.j2",
            "Dockerfile.prod.jinja",
            "nginx.conf.j2",
            ".env.j2",
            ".gitignore.j2",
            "index.html.j2",
            "requirements.txt.j2",
            "requirements-dev.txt.j2",
            "Settings.INI.J2",
        ] {
            assert!(
                reason(Path::new(name)).is_some(),
                "{name} should be skipped"
            );
        }
    }

    #[test]
    fn prompts_are_kept() {
        for name in [
            "system.j2",
            "system.md.j2",
            "README.md.jinja",
            "summary.txt.j2",
            "agent.prompt",
            "config.yml.prompt",
            "v1.2.j2",
            "requirements_analysis.md.j2",
            "yaml_expert.j2",
            "docker_helper.j2",
        ] {
            assert_eq!(reason(Path::new(name)), None, "{name} is a prompt");
        }
    }

    #[test]
    fn the_reason_names_the_format() {
        assert_eq!(
            reason(Path::new("deploy/ci.yml.j2")).as_deref(),
            Some("a YAML file templated with Jinja (`.yml.j2`), not a prompt")
        );
        assert_eq!(
            reason(Path::new("Dockerfile.j2")).as_deref(),
            Some("a Dockerfile templated with Jinja (`Dockerfile.j2`), not a prompt")
        );
    }
}
