//! llama.cpp's WordPiece tokenizer (`tokenizer.ggml.model = "bert"`), for GGUF files, as its
//! `llm_tokenizer_wpm_session` tokenizes: special tokens split out first; then each fragment
//! is cut into words at whitespace, with punctuation, ASCII symbols and CJK ideographs as
//! one-character words, control characters dropped, and (by default) every character
//! lowercased and reduced to the first character of its canonical decomposition, combining
//! marks dropped; each word, with `▁` in front, is matched greedily longest-first against
//! the vocabulary, and a word with any unmatched position becomes one `[UNK]`.

use super::added::{self, AddedTokens, Piece};
use super::pretokenize::{in_ranges, ranges};
use super::Tokens;
use std::collections::HashMap;
use std::sync::OnceLock;

pub struct WpmParts {
    /// In llama.cpp's spelling: `▁word` starts a word, a bare piece continues one.
    pub tokens: Vec<String>,
    /// Control and user-defined tokens, split out of the text first.
    pub added: Vec<(String, u32)>,
    pub unk: u32,
    /// `tokenizer.ggml.normalizer.lowercase` (llama.cpp's default: on).
    pub lowercase: bool,
    /// `tokenizer.ggml.normalizer.strip_accents` (default: as `lowercase`).
    pub strip_accents: bool,
}

pub struct Wpm {
    tokens: Vec<String>,
    ids: HashMap<String, u32>,
    max_token_len: usize,
    added: Option<AddedTokens>,
    unk: u32,
    lowercase: bool,
    strip_accents: bool,
}

/// llama.cpp's code point flags that WPM reads (its `unicode_cpt_flags`).
struct Classes {
    punctuation: Vec<(char, char)>,
    symbol: Vec<(char, char)>,
    /// Cc, Cf and Co: llama.cpp's "control" flag (Cs, surrogates, is no `char`).
    control: Vec<(char, char)>,
    mark: Vec<(char, char)>,
}

fn classes() -> Option<&'static Classes> {
    static CLASSES: OnceLock<Option<Classes>> = OnceLock::new();
    CLASSES
        .get_or_init(|| {
            Some(Classes {
                punctuation: ranges(r"\p{P}")?,
                symbol: ranges(r"\p{S}")?,
                control: ranges(r"[\p{Cc}\p{Cf}\p{Co}]")?,
                mark: ranges(r"\p{M}")?,
            })
        })
        .as_ref()
}

/// llama.cpp's `is_chinese_char` (BERT's CJK ranges, with its 0x2B920 quirk), which equals
/// `tokenizers`' (the flat WordPiece engine uses it too).
pub(super) fn is_chinese(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x20000..=0x2A6DF
        | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F
        | 0x2B920..=0x2CEAF
        | 0xF900..=0xFAFF
        | 0x2F800..=0x2FA1F)
}

/// llama.cpp's "NFD": each code point becomes the first code point of its canonical
/// decomposition (so `é` is `e`); marks already apart stay.
fn first_of_decomposition(c: char) -> char {
    let mut first = None;
    unicode_normalization_alignments::char::decompose_canonical(c, |d| {
        first.get_or_insert(d);
    });
    first.unwrap_or(c)
}

impl Wpm {
    pub fn new(parts: WpmParts) -> Option<Self> {
        classes()?;
        let mut ids = HashMap::with_capacity(parts.tokens.len());
        let mut max_token_len = 0;
        for (id, token) in parts.tokens.iter().enumerate() {
            // A later duplicate wins, as in llama.cpp's token_to_id.
            ids.insert(token.clone(), id as u32);
            max_token_len = max_token_len.max(token.len());
        }
        let added = AddedTokens::new(&parts.added).ok()?;
        Some(Wpm {
            tokens: parts.tokens,
            ids,
            max_token_len,
            added,
            unk: parts.unk,
            lowercase: parts.lowercase,
            strip_accents: parts.strip_accents,
        })
    }

    pub fn token_text(&self, id: u32) -> Option<String> {
        self.tokens.get(id as usize).cloned()
    }

    /// Encodes without [CLS]/[SEP].
    pub fn encode(&self, text: &str) -> Tokens {
        let mut tokens = Tokens::default();
        for piece in added::split(self.added.as_ref(), text) {
            match piece {
                Piece::Text(from, to) => self.encode_fragment(text, from, to, &mut tokens),
                Piece::Added(id, from, to) => {
                    tokens.ids.push(id);
                    tokens.offsets.push((from, to));
                }
            }
        }
        tokens
    }

    /// The words of `text[from..to]`, each with the byte range of the text it came from.
    fn words(&self, text: &str, from: usize, to: usize) -> Vec<(String, (usize, usize))> {
        let Some(classes) = classes() else {
            return Vec::new();
        };
        let mut words: Vec<(String, (usize, usize))> = Vec::new();
        let mut current = String::new();
        let mut span = (from, from);
        let finish = |current: &mut String, span: (usize, usize), words: &mut Vec<_>| {
            if !current.is_empty() {
                words.push((std::mem::take(current), span));
            }
        };
        for (i, original) in text[from..to].char_indices() {
            let range = (from + i, from + i + original.len_utf8());
            let c = if self.strip_accents {
                first_of_decomposition(original)
            } else {
                original
            };
            if c.is_whitespace() {
                finish(&mut current, span, &mut words);
                continue;
            }
            if c == '\0' || c == '\u{FFFD}' || in_ranges(&classes.control, c) {
                continue;
            }
            if self.strip_accents && in_ranges(&classes.mark, c) {
                continue;
            }
            let lowered = if self.lowercase {
                c.to_lowercase().next().unwrap_or(c)
            } else {
                c
            };
            let alone = in_ranges(&classes.punctuation, c)
                || ((c as u32) < 0x7F && in_ranges(&classes.symbol, c))
                || is_chinese(c);
            if alone {
                finish(&mut current, span, &mut words);
                words.push((lowered.to_string(), range));
                continue;
            }
            if current.is_empty() {
                span = range;
            } else {
                span.1 = range.1;
            }
            current.push(lowered);
        }
        finish(&mut current, span, &mut words);
        words
    }

    fn encode_fragment(&self, text: &str, from: usize, to: usize, out: &mut Tokens) {
        for (word, span) in self.words(text, from, to) {
            let word = format!("\u{2581}{word}");
            let bytes = word.len();
            let start = out.ids.len();
            let mut i = 0;
            let mut whole = true;
            while i < bytes {
                // Longest first, by bytes as llama.cpp slices (only whole characters match).
                let longest = bytes.min(i + self.max_token_len + 1);
                let found = (i + 1..=longest)
                    .rev()
                    .filter(|&j| word.is_char_boundary(j))
                    .find_map(|j| self.ids.get(&word[i..j]).map(|&id| (id, j)));
                match found {
                    Some((id, j)) => {
                        out.ids.push(id);
                        out.offsets.push(span);
                        i = j;
                    }
                    None => {
                        whole = false;
                        break;
                    }
                }
            }
            if !whole {
                out.ids.truncate(start);
                out.offsets.truncate(start);
            }
            if out.ids.len() == start {
                out.ids.push(self.unk);
                out.offsets.push(span);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wpm(tokens: &[&str]) -> Wpm {
        Wpm::new(WpmParts {
            tokens: tokens.iter().map(|t| t.to_string()).collect(),
            added: vec![("[SEP]".into(), 2)],
            unk: 1,
            lowercase: true,
            strip_accents: true,
        })
        .unwrap()
    }

    #[test]
    fn greedy_longest_match_with_phantom_space() {
        let v = wpm(&[
            "[PAD]", "[UNK]", "[SEP]", "▁un", "▁unaff", "able", "aff", "▁,", "▁cafe", "▁x",
        ]);
        assert_eq!(v.encode("Unaffable").ids, vec![4, 5]);
        // Punctuation is a word of its own; accents go; a word that cannot be matched
        // whole is one [UNK].
        assert_eq!(v.encode("café,zz").ids, vec![8, 7, 1]);
        assert_eq!(v.encode("x[SEP] x").ids, vec![9, 2, 9]);
        assert_eq!(v.encode("e\u{301}\u{200B}").ids, vec![1]);
        assert!(v.encode(" \t\n").ids.is_empty());
    }
}
