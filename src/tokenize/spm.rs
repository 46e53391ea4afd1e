//! llama.cpp's SentencePiece tokenizer (`tokenizer.ggml.model = "llama"`), for GGUF files:
//! spaces escaped to `▁` (one more in front of the text and after each special token when
//! `add_space_prefix`), then characters merged pairwise by the score of the merged token,
//! highest first, and characters that are no token written as their `<0xXX>` bytes.

use super::added::{self, AddedTokens, Piece};
use super::Tokens;
use std::collections::{BinaryHeap, HashMap};

pub struct SpmParts {
    pub tokens: Vec<String>,
    pub scores: Vec<f32>,
    /// Control and user-defined tokens, split out of the text first.
    pub added: Vec<(String, u32)>,
    pub add_space_prefix: bool,
}

pub struct Spm {
    tokens: Vec<String>,
    ids: HashMap<String, u32>,
    scores: Vec<f32>,
    byte_ids: Vec<Option<u32>>,
    added: Option<AddedTokens>,
    add_space_prefix: bool,
}

#[derive(Clone, Copy)]
struct Symbol {
    start: usize,
    len: usize,
    prev: isize,
    next: isize,
}

struct Bigram {
    left: usize,
    right: usize,
    score: f32,
    size: usize,
}

impl PartialEq for Bigram {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}
impl Eq for Bigram {}
impl PartialOrd for Bigram {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Bigram {
    // llama.cpp's queue: the highest score first, then the leftmost.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.left.cmp(&self.left))
    }
}

impl Spm {
    pub fn new(parts: SpmParts) -> Option<Self> {
        let ids: HashMap<String, u32> = parts
            .tokens
            .iter()
            .enumerate()
            .map(|(id, token)| (token.clone(), id as u32))
            .collect();
        let byte_ids = (0..=255u8)
            .map(|b| ids.get(&format!("<0x{b:02X}>")).copied())
            .collect();
        let added = AddedTokens::new(&parts.added).ok()?;
        Some(Spm {
            tokens: parts.tokens,
            ids,
            scores: parts.scores,
            byte_ids,
            added,
            add_space_prefix: parts.add_space_prefix,
        })
    }

    pub fn token_text(&self, id: u32) -> Option<String> {
        self.tokens.get(id as usize).cloned()
    }

    /// Encodes without BOS/EOS; `None` when a character needs a `<0xXX>` token the
    /// vocabulary lacks.
    pub fn encode(&self, text: &str) -> Option<Tokens> {
        let mut tokens = Tokens::default();
        let mut after_special = true;
        for piece in added::split(self.added.as_ref(), text) {
            match piece {
                Piece::Text(from, to) => {
                    self.encode_fragment(text, from, to, after_special, &mut tokens)?;
                    after_special = false;
                }
                Piece::Added(id, from, to) => {
                    tokens.ids.push(id);
                    tokens.offsets.push((from, to));
                    after_special = true;
                }
            }
        }
        Some(tokens)
    }

    fn encode_fragment(
        &self,
        text: &str,
        from: usize,
        to: usize,
        after_special: bool,
        out: &mut Tokens,
    ) -> Option<()> {
        // The escaped text, and for each of its bytes the original range it stands for.
        let mut escaped = String::with_capacity(to - from + 3);
        let mut origin: Vec<(usize, usize)> = Vec::with_capacity(to - from + 3);
        if self.add_space_prefix && after_special {
            escaped.push('\u{2581}');
            origin.extend([(from, from); 3]);
        }
        for (i, c) in text[from..to].char_indices() {
            let range = (from + i, from + i + c.len_utf8());
            let c = if c == ' ' { '\u{2581}' } else { c };
            escaped.push(c);
            origin.extend(std::iter::repeat_n(range, c.len_utf8()));
        }
        let mut symbols: Vec<Symbol> = Vec::new();
        for (start, c) in escaped.char_indices() {
            symbols.push(Symbol {
                start,
                len: c.len_utf8(),
                prev: symbols.len() as isize - 1,
                next: -1,
            });
        }
        let count = symbols.len();
        for (i, symbol) in symbols.iter_mut().enumerate() {
            symbol.next = if i + 1 < count { i as isize + 1 } else { -1 };
        }
        let mut queue = BinaryHeap::new();
        let bigram = |symbols: &[Symbol], left: isize, right: isize| -> Option<Bigram> {
            if left < 0 || right < 0 {
                return None;
            }
            let (l, r) = (symbols[left as usize], symbols[right as usize]);
            let merged = &escaped[l.start..l.start + l.len + r.len];
            let id = *self.ids.get(merged)?;
            Some(Bigram {
                left: left as usize,
                right: right as usize,
                score: *self.scores.get(id as usize).unwrap_or(&0.0),
                size: merged.len(),
            })
        };
        for i in 1..count {
            queue.extend(bigram(&symbols, i as isize - 1, i as isize));
        }
        while let Some(top) = queue.pop() {
            let (left, right) = (symbols[top.left], symbols[top.right]);
            if left.len == 0 || right.len == 0 || left.len + right.len != top.size {
                continue;
            }
            symbols[top.left].len += right.len;
            symbols[top.right].len = 0;
            symbols[top.left].next = right.next;
            if right.next >= 0 {
                symbols[right.next as usize].prev = top.left as isize;
            }
            let merged = symbols[top.left];
            queue.extend(bigram(&symbols, merged.prev, top.left as isize));
            queue.extend(bigram(&symbols, top.left as isize, merged.next));
        }
        let mut at = if count == 0 { -1 } else { 0 };
        while at >= 0 {
            let symbol = symbols[at as usize];
            let piece = &escaped[symbol.start..symbol.start + symbol.len];
            let span = |from: usize, to: usize| (origin[from].0, origin[to - 1].1);
            match self.ids.get(piece) {
                Some(&id) => {
                    out.ids.push(id);
                    out.offsets
                        .push(span(symbol.start, symbol.start + symbol.len));
                }
                None => {
                    // Only single characters are left unmerged without being tokens.
                    for (i, b) in piece.bytes().enumerate() {
                        out.ids.push(self.byte_ids[b as usize]?);
                        out.offsets
                            .push(span(symbol.start + i, symbol.start + i + 1));
                    }
                }
            }
            at = symbol.next;
        }
        Some(())
    }
}
