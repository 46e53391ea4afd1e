//! `--baseline FILE`: compare each template's shared prefix with a `--format json` report of
//! the base branch, and fail when a change cuts one by more than the threshold.

use crate::error::{Error, Result};
use crate::fmt::thousands;
use crate::report::json::{JsonReport, VERSION};
use crate::report::{CheckReport, TemplateRow};
use crate::source;
use std::collections::HashMap;
use std::path::Path;

/// How far a shared prefix may shrink before the run fails.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    Tokens(usize),
    Percent(f64),
}

impl std::str::FromStr for Threshold {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let bad = || format!("`{s}` is neither a token count (64) nor a percentage (5%)");
        match s.strip_suffix('%') {
            Some(number) => match number.trim().parse::<f64>() {
                Ok(p) if (0.0..=100.0).contains(&p) => Ok(Threshold::Percent(p)),
                _ => Err(bad()),
            },
            None => s.parse().map(Threshold::Tokens).map_err(|_| bad()),
        }
    }
}

impl std::fmt::Display for Threshold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Threshold::Tokens(n) => write!(f, "{n} tokens"),
            Threshold::Percent(p) => write!(f, "{p}%"),
        }
    }
}

impl Threshold {
    fn exceeded(self, before: usize, after: usize) -> bool {
        let shrink = before.saturating_sub(after);
        match self {
            Threshold::Tokens(n) => shrink > n,
            Threshold::Percent(p) => before > 0 && shrink as f64 * 100.0 / before as f64 > p,
        }
    }
}

/// Reads a `--format json` report, with errors that point into the file.
pub fn load(path: &Path) -> Result<JsonReport> {
    let display = source::display_path(path);
    let text = source::read_text(path, &display)?;
    let report: JsonReport = serde_json::from_str(&text).map_err(|e| {
        let at = source::offset_of(&text, e.line(), e.column().max(1));
        Error::located(
            &display,
            &text,
            at..(at + 1).min(text.len()),
            format!("{display}: not a prefixlint JSON report: {e}"),
            "here",
            Some("write the baseline with `prefixlint check --format json --output FILE` on the base branch".into()),
        )
    })?;
    if report.version != VERSION {
        return Err(Error::input(format!(
            "{display}: report version {} is not the version this prefixlint reads ({VERSION})",
            report.version
        )));
    }
    Ok(report)
}

/// One template's shared prefix before and after.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub path: String,
    /// `None`: the template is new on this branch.
    pub before: Option<usize>,
    pub after: usize,
    pub regressed: bool,
}

#[derive(Debug, Clone)]
pub struct Comparison {
    pub baseline: String,
    pub threshold: Threshold,
    pub changes: Vec<Change>,
}

pub fn compare(
    baseline_name: &str,
    base: &JsonReport,
    report: &CheckReport,
    threshold: Threshold,
) -> Comparison {
    compare_rows(baseline_name, base, &report.rows(), threshold)
}

/// [`compare`] of a run's rows (a streamed report keeps only those).
pub fn compare_rows(
    baseline_name: &str,
    base: &JsonReport,
    rows: &[TemplateRow],
    threshold: Threshold,
) -> Comparison {
    let before: HashMap<String, usize> = base
        .templates
        .iter()
        .map(|t| {
            let name = match &t.embedded {
                Some(embedded) => format!("{}#{}", t.path, embedded.key),
                None => t.path.clone(),
            };
            (name, t.shared_prefix_tokens)
        })
        .collect();
    let changes = rows
        .iter()
        .map(|t| {
            let before = before.get(&t.path).copied();
            let after = t.shared_prefix_tokens;
            Change {
                path: t.path.clone(),
                before,
                after,
                regressed: before.is_some_and(|b| threshold.exceeded(b, after)),
            }
        })
        .collect();
    Comparison {
        baseline: baseline_name.to_owned(),
        threshold,
        changes,
    }
}

impl Change {
    /// `1,812 → 12 tokens (-1,800, -99.3%)`, or `new: 150 tokens`.
    pub fn describe(&self) -> String {
        let Some(before) = self.before else {
            return format!("new: {} tokens", thousands(self.after));
        };
        if before == self.after {
            return format!("{} tokens, unchanged", thousands(before));
        }
        let sign = if self.after < before { "-" } else { "+" };
        let delta = before.abs_diff(self.after);
        let percent = if before == 0 {
            String::new()
        } else {
            format!(", {sign}{:.1}%", delta as f64 * 100.0 / before as f64)
        };
        format!(
            "{} → {} tokens ({sign}{}{percent})",
            thousands(before),
            thousands(self.after),
            thousands(delta)
        )
    }
}

impl Comparison {
    pub fn regressions(&self) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(|c| c.regressed)
    }

    /// Before/after per template, for the terminal (stderr, so stdout stays the report).
    pub fn render_text(&self) -> String {
        let mut out = format!(
            "shared prefix against baseline {} (threshold {}):\n",
            self.baseline, self.threshold
        );
        for change in &self.changes {
            out.push_str(&format!(
                "  {}{}: {}\n",
                if change.regressed { "REGRESSED " } else { "" },
                change.path,
                change.describe()
            ));
        }
        let regressed = self.regressions().count();
        if regressed > 0 {
            out.push_str(&format!(
                "{regressed} template{} lost more cacheable prefix than the threshold allows\n",
                if regressed == 1 { "" } else { "s" }
            ));
        }
        out
    }

    pub fn render_markdown(&self) -> String {
        let mut out = format!(
            "#### Shared prefix against the baseline (threshold {})\n\n| template | before | after | change |\n| --- | ---: | ---: | --- |\n",
            self.threshold
        );
        for c in &self.changes {
            out.push_str(&format!(
                "| `{}` | {} | {} | {}{} |\n",
                c.path.replace('|', "\\|"),
                c.before.map(thousands).unwrap_or_else(|| "new".into()),
                thousands(c.after),
                if c.regressed { "**regressed** " } else { "" },
                c.describe()
            ));
        }
        out.push('\n');
        out
    }

    /// One `::error` annotation per regressed template, for `--format github`.
    pub fn render_github(&self) -> String {
        use crate::report::github::{escape_data, escape_property};
        self.regressions()
            .map(|c| {
                format!(
                    "::error file={},title={}::{}\n",
                    escape_property(&c.path),
                    escape_property("prefixlint baseline"),
                    escape_data(&format!(
                        "{}: this change cut the cacheable prefix from {} (threshold {})",
                        c.path,
                        c.describe(),
                        self.threshold
                    ))
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_parse_tokens_and_percent() {
        assert_eq!("64".parse(), Ok(Threshold::Tokens(64)));
        assert_eq!("5%".parse(), Ok(Threshold::Percent(5.0)));
        assert!("five".parse::<Threshold>().is_err());
        assert!("150%".parse::<Threshold>().is_err());
    }

    #[test]
    fn only_a_shrink_beyond_the_threshold_regresses() {
        assert!(Threshold::Tokens(10).exceeded(1812, 12));
        assert!(!Threshold::Tokens(10).exceeded(100, 90));
        assert!(!Threshold::Percent(5.0).exceeded(100, 95));
        assert!(Threshold::Percent(5.0).exceeded(100, 94));
        assert!(!Threshold::Percent(0.0).exceeded(100, 150));
    }

    #[test]
    fn describes_the_change() {
        let change = Change {
            path: "prompts/agent.j2".into(),
            before: Some(1812),
            after: 12,
            regressed: true,
        };
        assert_eq!(change.describe(), "1,812 → 12 tokens (-1,800, -99.3%)");
    }
}
