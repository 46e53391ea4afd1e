//! Arbitrary bytes as a template and a finding on it through the fixes' producers:
//! `edit::jinja` (tags, blocks) and every fixable rule's candidates (`fix::candidates`)
//! for a span the first bytes pick, each candidate's edits applied, and each move placed
//! in the last user turn (`fix::turns::place_move`).

use prefixlint::fix;
use prefixlint::rules::{Finding, FixAvailability, RuleCode};
use prefixlint::source;

pub fn run(data: &[u8]) {
    // Byte 0: the rule and the PL004 label; bytes 1-2: the span's start and length.
    let [pick, at, len, rest @ ..] = data else {
        return;
    };
    let Ok(text) = source::decode_text(rest, "fuzz.j2") else {
        return;
    };
    let fixable: Vec<RuleCode> = RuleCode::ALL
        .iter()
        .copied()
        .filter(|code| code.rule().fix_availability() != FixAvailability::Never)
        .collect();
    let code = fixable[usize::from(*pick) % fixable.len()];
    let label = ["CRLF vs LF", "trailing whitespace differs", ""][usize::from(*pick / 16) % 3];
    let start = source::floor_char_boundary(&text, usize::from(*at) * text.len() / 256);
    let end = source::floor_char_boundary(&text, (start + usize::from(*len)).min(text.len()));
    let rule = code.meta();
    let finding = Finding {
        rule,
        severity: rule.severity,
        cadence: None,
        message: "unused suppression: PL001 (volatile-before-stable) did not fire".into(),
        help: String::new(),
        span: start..end,
        label: label.into(),
        related: Vec::new(),
        saving: None,
    };
    let tags = prefixlint::edit::jinja::tags(&text);
    let _ = prefixlint::edit::jinja::blocks(&text, &tags);
    if let Ok(candidates) = fix::candidates(&text, &finding, None) {
        for candidate in candidates {
            if let Some(fixed) = fix::apply(&text, &candidate.edits) {
                // An applied fix is text again: the scanner reads it too.
                let _ = prefixlint::edit::jinja::tags(&fixed);
            }
            // A move placed in the last user turn of a `.prompty` body or prompt-poet parts.
            if candidate.kind == fix::FixKind::Move {
                for turns in [fix::turns::Turns::Prompty, fix::turns::Turns::PromptPoet] {
                    if let Ok(placed) = fix::turns::place_move(&text, &candidate, &turns) {
                        let _ = fix::apply(&text, &placed.edits);
                    }
                }
            }
        }
    }
}
