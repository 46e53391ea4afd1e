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

#[cfg(test)]
mod tests {
    use super::*;

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
}
