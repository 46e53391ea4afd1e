//! Suppressions: `per_path_ignores` from the config, and inline comments in the template:
//!
//! - `{# prefixlint: ignore[PL001] reason #}` on the finding's line or the line before it;
//! - `{# prefixlint: ignore-file[PL001, PL002] reason #}` anywhere, for the whole file.
//!
//! A comment without a reason is not honoured (PL010); a code that suppressed nothing is
//! reported (PL009). `--no-ignores` turns all of this off.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::rules::suppression_comment::directive_regex;
use crate::rules::{
    self, suppression_without_reason, unused_suppression, Finding, RuleCode, RuleMeta,
};
use crate::source;
use globset::{Glob, GlobMatcher};
use regex::Regex;
use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;

pub use crate::rules::suppression_without_reason::REASON_PLACEHOLDER;

/// What the run honours, built once from the config and `--no-ignores`.
pub struct Suppressions {
    enabled: bool,
    per_path: Vec<(GlobMatcher, Vec<&'static RuleMeta>)>,
}

impl Suppressions {
    pub fn new(config: &Config, no_ignores: bool) -> Result<Self> {
        let config_name = config
            .path
            .as_deref()
            .map(source::display_path)
            .unwrap_or_else(|| "config".into());
        let mut per_path = Vec::new();
        for (pattern, codes) in &config.per_path_ignores {
            let glob = Glob::new(pattern).map_err(|e| {
                Error::input(format!(
                    "{config_name}: invalid glob `{pattern}` under `per_path_ignores:`: {e}"
                ))
            })?;
            let rules = codes
                .iter()
                .map(|code| {
                    rules::find(code).ok_or_else(|| {
                        Error::input_with_help(
                            format!("{config_name}: unknown rule `{code}` under `per_path_ignores: {pattern}`"),
                            "`prefixlint rules` lists the codes and names",
                        )
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            per_path.push((glob.compile_matcher(), rules));
        }
        Ok(Suppressions {
            enabled: !no_ignores,
            per_path,
        })
    }

    /// Drops suppressed findings and adds PL009/PL010 for the template's comments.
    /// `project_path` is the template's path under the project root (what globs match).
    pub fn apply(
        &self,
        project_path: &Path,
        source: &str,
        findings: Vec<Finding>,
        severities: &RuleSeverities,
    ) -> Vec<Finding> {
        if !self.enabled {
            return findings;
        }
        let ignored_here: Vec<RuleCode> = self
            .per_path
            .iter()
            .filter(|(glob, _)| glob.is_match(project_path))
            .flat_map(|(_, rules)| rules.iter().map(|r| r.code))
            .collect();
        let mut directives = parse(source);
        let mut kept: Vec<Finding> = findings
            .into_iter()
            .filter(|f| !ignored_here.contains(&f.rule.code))
            .filter(|f| {
                let line = source::line_col(source, f.span.start).0;
                !directives.iter_mut().any(|d| d.suppress(f.rule.code, line))
            })
            .collect();
        for directive in &directives {
            for finding in directive.findings() {
                if let Some(severity) = severities.get(finding.rule.code, finding.severity) {
                    kept.push(Finding {
                        cadence: None,
                        severity,
                        ..finding
                    });
                }
            }
        }
        kept.sort_by_key(|f| (f.span.start, f.rule.code));
        kept
    }
}

impl Suppressions {
    /// For a template embedded in a host file: a `# prefixlint: ignore[PL002] reason`
    /// comment on the host line that owns it (the YAML or TOML key's, the Python
    /// assignment's), or on a comment line of its own just above that line, covers the whole
    /// template. Hosts without `#` comments write it their way: `// prefixlint: ...` in a
    /// JSON file with comments, a `"//": "prefixlint: ..."` key above the key in plain
    /// JSON, `<!-- prefixlint: ... -->` on a Markdown or text prompt's first line.
    /// `findings` are in host offsets already.
    pub fn apply_host_line(
        &self,
        host: &str,
        anchor_line: usize,
        findings: Vec<Finding>,
        severities: &RuleSeverities,
    ) -> Vec<Finding> {
        if !self.enabled {
            return findings;
        }
        // The owning line, or a comment line of its own just above it: a Python string that
        // opens on the assignment's line (`X = """...`) leaves no room for a comment there.
        let line_at = |number: usize| {
            let start = source::offset_of(host, number, 1);
            let end = host[start..].find('\n').map_or(host.len(), |i| start + i);
            (start, &host[start..end])
        };
        let owning = line_at(anchor_line);
        let above = (anchor_line > 1)
            .then(|| line_at(anchor_line - 1))
            .filter(|(_, text)| {
                let text = text.trim_start();
                ["#", "//", "<!--", "\"//\""]
                    .iter()
                    .any(|opener| text.starts_with(opener))
            });
        let Some((line_start, caps)) = std::iter::once(owning)
            .chain(above)
            .find_map(|(start, text)| host_comment_regex().captures(text).map(|c| (start, c)))
        else {
            return findings;
        };
        let Some(whole) = caps.get(0) else {
            return findings;
        };
        let mut directive = Directive {
            scope: Scope::File,
            codes: caps[1]
                .split(',')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(|c| (c.to_owned(), rules::find(c), false))
                .collect(),
            has_reason: !caps[2]
                .trim()
                .trim_end_matches(',')
                .trim_end_matches('"')
                .trim_end_matches("-->")
                .trim()
                .is_empty(),
            span: line_start + whole.start()..line_start + whole.end(),
        };
        let mut kept: Vec<Finding> = findings
            .into_iter()
            .filter(|f| !directive.suppress(f.rule.code, 0))
            .collect();
        for finding in directive.findings() {
            if let Some(severity) = severities.get(finding.rule.code, finding.severity) {
                kept.push(Finding {
                    severity,
                    ..finding
                });
            }
        }
        kept.sort_by_key(|f| (f.span.start, f.rule.code));
        kept
    }
}

/// A host file's own comment: `# prefixlint: ignore[PL002] reason`, or `//`, `<!-- -->`
/// or a JSON `"//": "..."` key in the hosts without `#` comments.
fn host_comment_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r#"(?:^|[^{])(?:#|//|<!--|"//"\s*:\s*")\s*prefixlint:\s*ignore\[([^\]]*)\](.*)$"#,
        )
        .expect("valid regex")
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// The comment's own lines and the line after it.
    Lines {
        first: usize,
        last: usize,
    },
    File,
}

#[derive(Debug)]
struct Directive {
    scope: Scope,
    /// Each named code as written, the rule it names, and whether it suppressed something.
    codes: Vec<(String, Option<&'static RuleMeta>, bool)>,
    has_reason: bool,
    span: Range<usize>,
}

impl Directive {
    /// Marks and returns whether this directive suppresses `code` at `line`.
    fn suppress(&mut self, code: RuleCode, line: usize) -> bool {
        if !self.has_reason {
            return false;
        }
        let covers = match self.scope {
            Scope::File => true,
            Scope::Lines { first, last } => (first..=last).contains(&line),
        };
        if !covers {
            return false;
        }
        for (_, rule, used) in &mut self.codes {
            if rule.is_some_and(|r| r.code == code) {
                *used = true;
                return true;
            }
        }
        false
    }

    /// PL010 for a comment without a reason, else PL009 for each code that suppressed
    /// nothing.
    fn findings(&self) -> Vec<Finding> {
        if !self.has_reason {
            return vec![suppression_without_reason::finding(self.span.clone())];
        }
        self.codes
            .iter()
            .filter(|(_, _, used)| !used)
            .map(|(written, rule, _)| {
                unused_suppression::finding(
                    self.span.clone(),
                    written,
                    *rule,
                    self.scope == Scope::File,
                )
            })
            .collect()
    }
}

fn parse(source: &str) -> Vec<Directive> {
    directive_regex()
        .captures_iter(source)
        .filter_map(|caps| {
            let whole = caps.get(0)?;
            let scope = if &caps[1] == "ignore-file" {
                Scope::File
            } else {
                Scope::Lines {
                    first: source::line_col(source, whole.start()).0,
                    last: source::line_col(source, whole.end()).0 + 1,
                }
            };
            let codes = caps[2]
                .split(',')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(|c| (c.to_owned(), rules::find(c), false))
                .collect();
            Some(Directive {
                scope,
                codes,
                has_reason: !caps[3].trim().is_empty(),
                span: whole.range(),
            })
        })
        .collect()
}

/// Severity overrides from config; unknown rule keys are errors.
pub struct RuleSeverities(Vec<(RuleCode, Option<rules::Severity>)>);

impl RuleSeverities {
    pub fn from_config(config: &Config) -> Result<Self> {
        let mut out = Vec::new();
        for (key, setting) in &config.rules {
            let rule = rules::find(key).ok_or_else(|| {
                Error::input_with_help(
                    format!(
                        "{}: unknown rule `{key}` under `rules:`",
                        config.display_name()
                    ),
                    "`prefixlint rules` lists the codes and names",
                )
            })?;
            out.push((rule.code, setting.severity()));
        }
        Ok(RuleSeverities(out))
    }

    /// `None` means the rule is off.
    pub fn get(&self, code: RuleCode, default: rules::Severity) -> Option<rules::Severity> {
        match self.0.iter().find(|(c, _)| *c == code) {
            Some((_, severity)) => *severity,
            None => Some(default),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_line_and_file_directives() {
        let src = "a\n{# prefixlint: ignore[PL001, volatile-before-stable] fine #}\nb {#- prefixlint: ignore-file[PL002] -#}";
        let directives = parse(src);
        assert_eq!(directives.len(), 2);
        assert_eq!(directives[0].scope, Scope::Lines { first: 2, last: 3 });
        assert_eq!(directives[0].codes.len(), 2);
        assert!(directives[0].has_reason);
        assert_eq!(directives[1].scope, Scope::File);
        assert!(!directives[1].has_reason);
    }

    #[test]
    fn a_directive_covers_its_line_and_the_next() {
        let mut d = parse("x\n{# prefixlint: ignore[PL001] ok #}\n").remove(0);
        let (pl001, pl002) = (
            RuleCode::VolatileBeforeStable,
            RuleCode::DivergenceBeforeStable,
        );
        assert!(!d.suppress(pl001, 1));
        assert!(d.suppress(pl001, 2));
        assert!(d.suppress(pl001, 3));
        assert!(!d.suppress(pl001, 4));
        assert!(!d.suppress(pl002, 2));
    }
}
