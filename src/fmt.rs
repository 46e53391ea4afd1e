//! Formatting helpers for messages and reports. A leaf: every module may use it.

/// Formats a count the way people read it: 1,812.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One line of at most 60 characters, for quoting template source in messages.
pub fn shorten(s: &str) -> String {
    let one_line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 60 {
        format!("{}…", one_line.chars().take(59).collect::<String>())
    } else {
        one_line
    }
}

/// The plural suffix for `n` things: "" for one, "s" otherwise.
pub fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// `text` with every line longer than `width` characters broken at spaces; a continuation
/// is indented as its line, plus two. A word longer than the room (a URL, a path) stays
/// whole on its own line: it is never cut.
pub fn wrap_lines(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, newline) = match line.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        wrap_line(body, width, &mut out);
        out.push_str(newline);
    }
    out
}

fn wrap_line(line: &str, width: usize, out: &mut String) {
    if line.chars().count() <= width {
        out.push_str(line);
        return;
    }
    let indent = line.len() - line.trim_start_matches(' ').len();
    // A continuation's indent, at most half the width so the text keeps some room.
    let hanging = " ".repeat((indent + 2).min(width / 2));
    let mut current = line[..indent].to_owned();
    let mut current_len = indent;
    let mut at_start = true;
    // Spaces between words are kept as they are (a table's gaps), except at a break.
    let mut gap = 0;
    for word in line[indent..].split(' ') {
        if word.is_empty() {
            gap += 1;
            continue;
        }
        let word_len = word.chars().count();
        let spaces = if at_start { 0 } else { gap + 1 };
        if !at_start && current_len + spaces + word_len > width {
            out.push_str(&current);
            out.push('\n');
            current = hanging.clone();
            current_len = hanging.len();
        } else {
            current.push_str(&" ".repeat(spaces));
            current_len += spaces;
        }
        current.push_str(word);
        current_len += word_len;
        at_start = false;
        gap = 0;
    }
    out.push_str(&current);
}

/// `text` with every line wider than `width` cut to fit, a `…` marking the cut: for what
/// cannot be wrapped, a quoted source line and the label under it. Colour escapes count no
/// width and a cut line ends by resetting the colour. A line with a URL is left whole.
pub fn cut_lines(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, newline) = match line.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        if body.contains("://") || visible_width(body) <= width {
            out.push_str(line);
            continue;
        }
        let mut shown = 0;
        let mut chars = body.chars().peekable();
        let mut colored = false;
        while let Some(c) = chars.next() {
            if c == '\u{1b}' {
                // An escape sequence: through its final letter.
                out.push(c);
                colored = true;
                for next in chars.by_ref() {
                    out.push(next);
                    if next.is_ascii_alphabetic() {
                        break;
                    }
                }
                continue;
            }
            if shown + 1 == width {
                out.push('…');
                break;
            }
            out.push(c);
            shown += 1;
        }
        if colored {
            out.push_str("\u{1b}[0m");
        }
        out.push_str(newline);
    }
    out
}

/// The characters of a line a terminal shows: colour escapes left out.
fn visible_width(line: &str) -> usize {
    let mut width = 0;
    let mut escape = false;
    for c in line.chars() {
        match (escape, c) {
            (false, '\u{1b}') => escape = true,
            (true, c) if c.is_ascii_alphabetic() => escape = false,
            (true, _) => {}
            (false, _) => width += 1,
        }
    }
    width
}

/// Text for a terminal, with its control characters shown, not obeyed: a template (or a
/// file name) holding `ESC ] 0 ;` would set the window title, `ESC [ 2 J` clear the screen.
/// Every C0 control but line feed and tab (a carriage return only before a line feed),
/// DEL and the C1 controls become `\x1b`-style escapes.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    escape(text, false)
}

/// As [`escape_controls`], but keeps SGR sequences (`ESC [ … m`, colours and styles only):
/// the colours this tool's own diagnostics are drawn with.
pub fn escape_controls_keep_colors(text: &str) -> std::borrow::Cow<'_, str> {
    escape(text, true)
}

fn escape(text: &str, keep_sgr: bool) -> std::borrow::Cow<'_, str> {
    let allowed = |c: char, next: Option<char>| match c {
        '\n' | '\t' => true,
        '\r' => next == Some('\n'),
        _ => !(c.is_control()),
    };
    let mut chars = text.char_indices().peekable();
    let mut out: Option<String> = None;
    while let Some((at, c)) = chars.next() {
        let next = chars.peek().map(|&(_, c)| c);
        if keep_sgr && c == '\u{1b}' {
            let rest = &text[at + 1..];
            let params = rest.strip_prefix('[').map(|r| {
                r.bytes()
                    .take_while(|b| b.is_ascii_digit() || *b == b';')
                    .count()
            });
            if let Some(len) = params.filter(|&len| rest[1 + len..].starts_with('m')) {
                if let Some(out) = out.as_mut() {
                    out.push_str(&text[at..at + 3 + len]);
                }
                // Skip the sequence's `[`, parameters and `m`.
                for _ in 0..len + 2 {
                    chars.next();
                }
                continue;
            }
        }
        if allowed(c, next) {
            if let Some(out) = out.as_mut() {
                out.push(c);
            }
            continue;
        }
        let out = out.get_or_insert_with(|| text[..at].to_owned());
        if (c as u32) < 0x80 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    match out {
        Some(out) => std::borrow::Cow::Owned(out),
        None => std::borrow::Cow::Borrowed(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_lines_keeps_each_line_within_the_width() {
        let text = "PL001  volatile-before-stable  error  A volatile value renders before stable content, so it is never cached.\nshort\n";
        let wrapped = wrap_lines(text, 40);
        assert_eq!(
            wrapped,
            "PL001  volatile-before-stable  error  A\n  volatile value renders before stable\n  content, so it is never cached.\nshort\n"
        );
        assert!(wrapped.lines().all(|l| l.chars().count() <= 40));
        // A word longer than the width stays whole; the text around it wraps.
        let url = "  see https://example.com/a/very/long/path/that/does/not/fit for more";
        assert_eq!(
            wrap_lines(url, 20),
            "  see\n    https://example.com/a/very/long/path/that/does/not/fit\n    for more"
        );
        assert_eq!(wrap_lines("fits\n", 4), "fits\n");
    }

    #[test]
    fn cut_lines_cuts_at_the_width_and_keeps_colour_escapes_whole() {
        assert_eq!(cut_lines(" 1 │ abcdefgh\nok\n", 8), " 1 │ ab…\nok\n");
        let red = "\u{1b}[31m · ╰── label\u{1b}[0m";
        let cut = cut_lines(red, 6);
        assert_eq!(cut, "\u{1b}[31m · ╰─…\u{1b}[0m");
        assert_eq!(visible_width(&cut), 6);
        let url = "PL001 (https://example.com/a/long/path)";
        assert_eq!(cut_lines(url, 10), url);
    }

    #[test]
    fn thousands_groups_by_three() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1812), "1,812");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }

    #[test]
    fn shorten_keeps_one_line_of_sixty() {
        assert_eq!(shorten("a\n  b"), "a b");
        let long = "x".repeat(80);
        assert_eq!(shorten(&long).chars().count(), 60);
        assert!(shorten(&long).ends_with('…'));
    }

    #[test]
    fn plural_is_empty_for_one() {
        assert_eq!(plural(1), "");
        assert_eq!(plural(0), "s");
        assert_eq!(plural(2), "s");
    }

    #[test]
    fn controls_are_shown_not_obeyed() {
        assert_eq!(
            escape_controls("plain\ttext\r\nnext\n"),
            "plain\ttext\r\nnext\n"
        );
        assert_eq!(
            escape_controls("a\u{1b}]0;title\u{7}b\u{1b}[2Jc\rd\u{7f}\u{9b}e"),
            "a\\x1b]0;title\\x07b\\x1b[2Jc\\x0dd\\x7f\\u{9b}e"
        );
        assert!(matches!(
            escape_controls("ok é ✓"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn colours_may_be_kept_and_nothing_else() {
        assert_eq!(
            escape_controls_keep_colors("\u{1b}[1;31mred\u{1b}[0m \u{1b}[2J\u{1b}]0;x\u{7}\u{1b}["),
            "\u{1b}[1;31mred\u{1b}[0m \\x1b[2J\\x1b]0;x\\x07\\x1b["
        );
        assert_eq!(escape_controls("\u{1b}[31m"), "\\x1b[31m");
    }
}
