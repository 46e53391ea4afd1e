//! Where a moved line goes when the request has turns. A template checked on its own is
//! the request, and a volatile line moves to its end (`producers`). In a chat request the
//! line only helps at the end of the last user turn: everything before it (the system
//! prompt, the earlier turns) is what the next request repeats. So a move's insertion goes
//! there: the end of a `.prompty` body's last `user:` section, the end of prompt-poet's last
//! `role: user` part's `content: |` block (re-indented to that block), or the template's end
//! when it is checked in a chat template as the user's message, or the end of a
//! `--chat-request` file's last user message's `content: |` block. A template that is the
//! system message (`--chat-template`'s default role) writes no user turn: its move is
//! refused with that reason rather than invented.

use super::{Edit, Fix, FixKind};
use crate::check::linter::Inspection;
use crate::rules::Finding;
use std::ops::Range;

/// The request a template's render becomes, as far as a move cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Turns {
    /// The render is the request (a template checked on its own): moves go to its end.
    Whole,
    /// The render is one message of `role` in a chat request (`--chat-template`).
    Message { role: String },
    /// A `.prompty` body: `system:`/`user:`/`assistant:` lines start its messages.
    Prompty,
    /// A prompt-poet file: a YAML list of parts, each with a `role` and a `content`.
    PromptPoet,
    /// A `--chat-request` file: YAML `messages:`, each with a `role` and a `content`.
    Request,
}

/// The candidate fixes of `finding` (as its rule makes them, [`super::candidates`]), with each move's insertion
/// placed at the end of the last user turn; why there is none when the only candidate was
/// a move that has nowhere to go.
pub fn candidates(
    text: &str,
    finding: &Finding,
    inspection: &Inspection,
    turns: &Turns,
) -> Result<Vec<Fix>, String> {
    let fixes = super::candidates(text, finding, Some(inspection))?;
    if *turns == Turns::Whole {
        return Ok(fixes);
    }
    let mut refusal = None;
    let mut out: Vec<Fix> = Vec::new();
    for fix in fixes {
        if fix.kind != FixKind::Move {
            out.push(fix);
            continue;
        }
        match place_move(text, &fix, turns) {
            Ok(moved) if !out.iter().any(|f| f.edits == moved.edits) => out.push(moved),
            Ok(_) => {}
            Err(reason) => refusal = Some(reason),
        }
    }
    match refusal {
        Some(reason) if out.is_empty() => Err(reason),
        _ => Ok(out),
    }
}

/// A move (`producers`' delete of the unit and insertion at the template's end) with its
/// insertion at the end of the last user turn; why not, when there is none.
pub fn place_move(text: &str, fix: &Fix, turns: &Turns) -> Result<Fix, String> {
    let [removed, _] = fix.edits.as_slice() else {
        return Err("not a move".into());
    };
    let removed = removed.range.clone();
    let title = |what: &str| {
        fix.title.replace(
            " to the end of the template",
            &format!(" to the end of {what}"),
        )
    };
    match turns {
        Turns::Whole => Ok(fix.clone()),
        Turns::Message { role } if role == "user" => Ok(Fix {
            title: title("the user turn"),
            ..fix.clone()
        }),
        Turns::Message { role } => Err(format!(
            "in the chat template this template is the `{role}` message, which comes before the conversation: at its end the value would still change every request before the conversation's turns; it belongs in the last user turn, which this template does not write (check a user-turn template with `--chat-role user`, or move it there by hand)"
        )),
        Turns::Prompty => {
            let removed = without_role_line(text, removed);
            let turn = last_prompty_user_turn(text)
                .ok_or("the body has no `user:` turn to move it into")?;
            moved_into(text, fix, removed, turn.end, None, &title("the last user turn"))
        }
        Turns::PromptPoet | Turns::Request => {
            let (what, missing) = if *turns == Turns::Request {
                ("the last user message", "the request has no user message with a `content: |` block to move it into")
            } else {
                ("the last user part", "the prompt has no part with `role: user` and a `content: |` block to move it into")
            };
            let block = last_prompt_poet_user_content(text).ok_or(missing)?;
            moved_into(text, fix, removed, block.end, Some(&block.indent), &title(what))
        }
    }
}

/// The move of `removed` to `at` (a line start, or the text's end), its lines re-indented
/// to `indent` when given.
fn moved_into(
    text: &str,
    fix: &Fix,
    removed: Range<usize>,
    at: usize,
    indent: Option<&str>,
    title: &str,
) -> Result<Fix, String> {
    if removed.start < at && at < removed.end {
        return Err("it is in the last user turn's last lines already".into());
    }
    if removed.end == at {
        return Err("it is already at the end of the last user turn".into());
    }
    let mut unit = &text[removed.clone()];
    // A paragraph of its own took its blank line along: here the turn's end needs none.
    let last = unit.split_inclusive('\n').next_back().unwrap_or("");
    if last.len() < unit.len() && last.trim().is_empty() {
        unit = &unit[..unit.len() - last.len()];
    }
    let newline = super::newline_of(text);
    let mut moved: String = match indent {
        Some(indent) => reindent(unit, indent),
        None => unit.to_owned(),
    };
    if !moved.ends_with('\n') {
        moved.push_str(newline);
    }
    // At a text that does not end in a line break, the moved lines start a new last line.
    if at == text.len() && !text.is_empty() && !text.ends_with('\n') {
        let body = moved.trim_end_matches(['\n', '\r']).to_owned();
        moved = format!("{newline}{body}");
    }
    Ok(Fix {
        rule: fix.rule.clone(),
        safety: fix.safety,
        kind: FixKind::Move,
        title: title.to_owned(),
        edits: vec![Edit::delete(removed), Edit::insert(at, moved)],
    })
}

/// `unit`'s lines with their common indentation replaced by `indent`.
fn reindent(unit: &str, indent: &str) -> String {
    let common = unit
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start_matches([' ', '\t']).len())
        .min()
        .unwrap_or(0);
    unit.split_inclusive('\n')
        .map(|line| {
            if line.trim().is_empty() {
                line.to_owned()
            } else {
                format!("{indent}{}", &line[common.min(line.len())..])
            }
        })
        .collect()
}

/// Whether a line of a `.prompty` body starts a message (`user:`), as prompty reads it.
fn is_role_line(line: &str) -> Option<String> {
    let name = line.trim().strip_suffix(':')?.trim().to_ascii_lowercase();
    matches!(name.as_str(), "system" | "user" | "assistant").then_some(name)
}

/// `removed` without a role line at its start (a move takes a message's lines, never the
/// line that starts the message).
fn without_role_line(text: &str, mut removed: Range<usize>) -> Range<usize> {
    while removed.start < removed.end {
        let line = super::jinja::full_line(text, removed.start);
        if is_role_line(&text[line.clone()]).is_none() {
            break;
        }
        removed.start = line.end.min(removed.end);
    }
    removed
}

/// The last `user:` section of a `.prompty` body: from its role line's end to the end of
/// its last non-blank line.
fn last_prompty_user_turn(text: &str) -> Option<Range<usize>> {
    let mut lines = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        lines.push(at..at + line.len());
        at += line.len();
    }
    let user = lines
        .iter()
        .rposition(|l| is_role_line(&text[l.clone()]).as_deref() == Some("user"))?;
    let mut end = lines[user].end;
    for line in &lines[user + 1..] {
        let content = &text[line.clone()];
        if is_role_line(content).is_some() {
            break;
        }
        if !content.trim().is_empty() {
            end = line.end;
        }
    }
    Some(lines[user].end..end)
}

/// A part's `content: |` block.
struct ContentBlock {
    /// Where the insertion goes: after the block's last non-blank line.
    end: usize,
    /// The indentation of its lines.
    indent: String,
}

/// The `content: |` block of the last item with `role: user` in a YAML list (prompt-poet's
/// parts, a chat request's `messages:`).
fn last_prompt_poet_user_content(text: &str) -> Option<ContentBlock> {
    let mut lines: Vec<(usize, &str)> = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        lines.push((at, line));
        at += line.len();
    }
    let indent_of = |line: &str| line.len() - line.trim_start_matches(' ').len();
    // A key of an item: `role: user` on its own line or after the item's `- `.
    let key = |line: &str| -> Option<(usize, String, String)> {
        let body = line.trim_end();
        let mut column = indent_of(body);
        let mut rest = &body[column..];
        if let Some(after) = rest.strip_prefix("- ") {
            column += 2 + (after.len() - after.trim_start().len());
            rest = after.trim_start();
        }
        let (name, value) = rest.split_once(':')?;
        let value = value.trim().trim_matches(['"', '\'']).to_owned();
        Some((column, name.trim().to_owned(), value))
    };
    let role = lines.iter().rposition(|(_, l)| {
        key(l).is_some_and(|(_, name, value)| name == "role" && value == "user")
    })?;
    let (column, _, _) = key(lines[role].1)?;
    // The item's other keys sit at the same column, between its `- ` line and the next item.
    let item_start = (0..=role).rev().find(|&i| {
        lines[i].1.trim_start().starts_with("- ") && key(lines[i].1).is_some_and(|k| k.0 == column)
    })?;
    let in_item = |i: usize| {
        let line = lines[i].1;
        line.trim().is_empty() || indent_of(line) >= column
    };
    let content = (item_start..lines.len())
        .take_while(|&i| i == item_start || in_item(i))
        .find(|&i| key(lines[i].1).is_some_and(|(c, name, _)| c == column && name == "content"))?;
    let (_, _, value) = key(lines[content].1)?;
    if !value.starts_with('|') {
        return None;
    }
    let mut end = None;
    let mut indent = None;
    for (start, line) in &lines[content + 1..] {
        if line.trim().is_empty() {
            continue;
        }
        if indent_of(line) <= column {
            break;
        }
        indent.get_or_insert_with(|| line[..indent_of(line)].to_owned());
        end = Some(start + line.len());
    }
    Some(ContentBlock {
        end: end?,
        indent: indent?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_user_turn_of_a_prompty_body_ends_at_its_last_line() {
        let body = "system:\nRules.\n\nuser:\n{{ q }}\n\nassistant:\nOk.\n";
        let turn = last_prompty_user_turn(body).unwrap();
        assert_eq!(&body[turn.clone()], "{{ q }}\n");
        assert_eq!(last_prompty_user_turn("system:\nA\n"), None);
    }

    #[test]
    fn the_last_user_part_of_a_prompt_poet_file_is_its_content_block() {
        let poet = "- name: system\n  role: system\n  content: |\n    Rules.\n- name: user query\n  role: user\n  truncation_priority: 1\n  content: |\n   {{ q }}\n\n- name: tail\n  role: system\n  content: |\n    Bye.\n";
        let block = last_prompt_poet_user_content(poet).unwrap();
        assert_eq!(
            &poet[..block.end],
            &poet[..poet.find("\n\n- name: tail").unwrap() + 1]
        );
        assert_eq!(block.indent, "   ");
        assert_eq!(reindent("    A\n      B\n", "   "), "   A\n     B\n");
        assert!(
            last_prompt_poet_user_content("- name: a\n  role: system\n  content: |\n    x\n")
                .is_none()
        );
    }

    #[test]
    fn a_paragraph_moved_into_a_prompty_user_turn_leaves_its_blank_line_behind() {
        let body = "system:\nIntro.\n\nTime: {{ now }}\n\nRules.\n\nuser:\n{{ q }}\n";
        let at = body.find("{{ now }}").unwrap();
        let finding = {
            let rule = crate::rules::RuleCode::VolatileBeforeStable.meta();
            Finding {
                rule,
                severity: rule.severity,
                cadence: None,
                message: String::new(),
                help: String::new(),
                span: at..at + 9,
                label: String::new(),
                related: Vec::new(),
                saving: None,
            }
        };
        let moves = crate::fix::candidates(body, &finding, None).unwrap();
        let placed = place_move(body, &moves[0], &Turns::Prompty).unwrap();
        assert_eq!(
            crate::fix::apply(body, &placed.edits).unwrap(),
            "system:\nIntro.\n\nRules.\n\nuser:\n{{ q }}\nTime: {{ now }}\n"
        );
        assert!(place_move(
            body,
            &moves[0],
            &Turns::Message {
                role: "system".into()
            }
        )
        .is_err());
    }

    #[test]
    fn a_move_never_takes_the_role_line() {
        let body = "system:\n{{ now }}\nRules.\n";
        assert_eq!(without_role_line(body, 0..17), 8..17);
    }
}
