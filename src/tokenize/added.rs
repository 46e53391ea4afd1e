//! The added tokens of a llama.cpp vocabulary (control and user-defined): matched whole,
//! longest first, before the text between them is tokenized.

use aho_corasick::{AhoCorasick, BuildError, MatchKind};

pub struct AddedTokens {
    matcher: AhoCorasick,
    ids: Vec<u32>,
}

/// A run of a text: ordinary text to tokenize, or one added token.
pub enum Piece {
    Text(usize, usize),
    Added(u32, usize, usize),
}

impl AddedTokens {
    /// `Ok(None)` when there are none.
    pub fn new(added: &[(String, u32)]) -> Result<Option<AddedTokens>, BuildError> {
        if added.is_empty() {
            return Ok(None);
        }
        let matcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(added.iter().map(|(content, _)| content.as_str()))?;
        let ids = added.iter().map(|(_, id)| *id).collect();
        Ok(Some(AddedTokens { matcher, ids }))
    }
}

/// The pieces of `text` in order; without added tokens, the whole text.
pub fn split(added: Option<&AddedTokens>, text: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut last = 0;
    if let Some(added) = added {
        for found in added.matcher.find_iter(text) {
            if found.start() > last {
                pieces.push(Piece::Text(last, found.start()));
            }
            let id = added.ids[found.pattern().as_usize()];
            pieces.push(Piece::Added(id, found.start(), found.end()));
            last = found.end();
        }
    }
    if last < text.len() {
        pieces.push(Piece::Text(last, text.len()));
    }
    pieces
}
