//! The `Split(Regex, Isolated)` pre-tokenizer: pieces are the regex matches and the gaps
//! between them, exactly as `tokenizers` 0.23.2 (fancy-regex build) cuts them.

pub struct PreTokenizer {
    regex: fancy_regex::Regex,
}

impl PreTokenizer {
    pub fn new(pattern: &str) -> Option<Self> {
        Some(PreTokenizer {
            regex: fancy_regex::Regex::new(pattern).ok()?,
        })
    }

    /// Calls `piece(start, end)` for each piece of `text`, in order, covering all of it.
    pub fn split(&self, text: &str, mut piece: impl FnMut(usize, usize)) {
        let mut last = 0;
        for found in self.regex.find_iter(text) {
            // `tokenizers` stops at a regex error (backtrack limit); the rest is one gap.
            let Ok(found) = found else { break };
            if found.start() > last {
                piece(last, found.start());
            }
            piece(found.start(), found.end());
            last = found.end();
        }
        if last < text.len() {
            piece(last, text.len());
        }
    }
}
