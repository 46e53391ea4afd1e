//! The proof a fix must pass before it is kept: the fixed template, checked again in the
//! same run, renders over every sample, the fixed finding is gone, no new finding appeared,
//! the shared prefix did not shrink, renders that were JSON (a request body) still are, and
//! (for a move) every render holds the same lines as before, as a multiset.

use super::{Fix, FixKind};
use crate::check::linter::Inspection;
use crate::report::TemplateReport;
use std::collections::BTreeMap;

/// A template checked: its finished report (findings in its own text's offsets) and what
/// it rendered.
pub struct Checked {
    pub report: TemplateReport,
    pub inspection: Inspection,
    /// Where the request's last user turn is, for the moves (`fix::turns`).
    pub turns: super::turns::Turns,
    /// Per render, the text whose lines a move must keep when it is not the render itself:
    /// a chat request's message contents, prompt-poet's parts.
    pub request_texts: Option<Vec<String>>,
}

impl Checked {
    /// A finished report of `text` with its findings' spans made offsets of `text` again
    /// (a finished report keeps only the source lines it quotes, so its spans are offsets
    /// of that reduced source; lines and columns are the same in both).
    pub fn new(mut report: TemplateReport, inspection: Inspection, text: &str) -> Checked {
        let positions: Vec<_> = report.findings.iter().map(|f| report.position(f)).collect();
        for (finding, place) in report.findings.iter_mut().zip(positions) {
            let start = crate::source::offset_of(text, place.line, place.column);
            let end = crate::source::offset_of(text, place.end_line, place.end_column);
            finding.span = start..end.max(start);
        }
        report.source = std::sync::Arc::from(text);
        Checked {
            report,
            inspection,
            turns: super::turns::Turns::Whole,
            request_texts: None,
        }
    }

    /// This check, of a template whose request has turns (`turns`), whose renders became
    /// the requests `request_texts` (one per render).
    pub fn in_turns(
        mut self,
        turns: super::turns::Turns,
        request_texts: Option<Vec<String>>,
    ) -> Checked {
        self.turns = turns;
        self.request_texts = request_texts;
        self
    }

    /// Per render, the text whose lines a move keeps.
    fn texts(&self) -> Vec<&str> {
        match &self.request_texts {
            Some(texts) => texts.iter().map(String::as_str).collect(),
            None => self
                .inspection
                .renders
                .iter()
                .map(|r| r.text.as_str())
                .collect(),
        }
    }

    pub fn shared_prefix_tokens(&self) -> usize {
        self.report.analysis.shared_prefix_tokens
    }
}

/// `Ok` when `after` (the template with `fix` applied, checked) may replace `before`;
/// otherwise why not, in words for the report.
pub fn verify(fix: &Fix, before: &Checked, after: Result<&Checked, &str>) -> Result<(), String> {
    let after = after.map_err(|e| format!("the fixed template does not check: {e}"))?;
    let (renders_before, renders_after) = (
        before.inspection.renders.len(),
        after.inspection.renders.len(),
    );
    if renders_before != renders_after {
        return Err(format!(
            "the fixed template renders {renders_after} samples instead of {renders_before}"
        ));
    }
    let counts = |report: &TemplateReport| {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for finding in &report.findings {
            *counts.entry(finding.rule.code.as_str()).or_default() += 1;
        }
        counts
    };
    let (was, now) = (counts(&before.report), counts(&after.report));
    let fixed_was = was.get(fix.rule.as_str()).copied().unwrap_or(0);
    let fixed_now = now.get(fix.rule.as_str()).copied().unwrap_or(0);
    if fixed_now >= fixed_was {
        return Err(format!("{} still fires after the fix", fix.rule));
    }
    if let Some((code, _)) = now
        .iter()
        .find(|(code, n)| **n > was.get(*code).copied().unwrap_or(0))
    {
        return Err(format!("the fix would raise a new {code} finding"));
    }
    // A request body stays one: every render that was JSON still is.
    let json = |checked: &Checked| {
        checked
            .inspection
            .renders
            .iter()
            .all(|r| crate::analyse::request_body::parse(&r.text).is_some())
    };
    if json(before) && !json(after) {
        return Err("a render would no longer be valid JSON".into());
    }
    if after.report.unknown.len() > before.report.unknown.len() {
        return Err("the fix would use a filter or test this renderer does not know".into());
    }
    let (prefix_before, prefix_after) =
        (before.shared_prefix_tokens(), after.shared_prefix_tokens());
    if prefix_after < prefix_before {
        return Err(format!(
            "the shared prefix would shrink from {prefix_before} to {prefix_after} tokens"
        ));
    }
    if fix.kind == FixKind::Move {
        let (texts_before, texts_after) = (before.texts(), after.texts());
        if texts_before.len() != texts_after.len() {
            return Err("the fixed template's requests are not the same number".into());
        }
        for (n, (was, now)) in texts_before.iter().zip(&texts_after).enumerate() {
            if sorted_lines(was) != sorted_lines(now) {
                return Err(format!(
                    "render {} would not keep the same lines (the move changes more than their order)",
                    n + 1
                ));
            }
        }
    }
    Ok(())
}

/// A render's lines as a multiset (sorted), line endings and a missing final line break
/// aside.
fn sorted_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    lines
}
