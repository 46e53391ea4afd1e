//! Our own WordPiece and Unigram models over a flat vocabulary, for the files the byte-level
//! engine does not run. The vocabulary is one string blob in id order plus the ids sorted by
//! their bytes: loading it from the cache ([`super::model_cache`]) is a few copies, with no
//! hash map or trie of the whole vocabulary to build. Exact lookups are binary searches;
//! Unigram's common-prefix search narrows the sorted range one byte at a time.
//!
//! The models are the `tokenizers` 0.23.2 algorithms, step for step (WordPiece's greedy
//! longest-match-first with its continuing prefix, `max_input_chars_per_word` and unk;
//! Unigram's Viterbi with its unk penalty, fused unknowns and byte fallback), and they plug
//! into `tokenizers`' own pipeline as its `Model`: the normalizer (BertNormalizer,
//! Precompiled, …), the pre-tokenizer (BertPreTokenizer, Metaspace, …), the added tokens and
//! the offsets stay the crate's, built from the small rest of the file.

use super::wpm::is_chinese;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tokenizers::models::bpe::BpeTrainer;
use tokenizers::{Model, Token};

/// Token strings by id, and the ids sorted by their bytes (for a duplicated string, only the
/// id a hash map built in id order would keep: the last).
#[derive(Debug, Clone)]
pub struct FlatVocab {
    blob: String,
    /// `ends[id]`: where token `id` ends in `blob` (it starts where `id - 1` ends).
    ends: Vec<u32>,
    sorted: Vec<u32>,
    /// `sorted[first[b]..first[b + 1]]` are the tokens starting with byte `b`.
    first: Vec<u32>,
    /// `keys[i]`: the first 8 bytes of token `sorted[i]`, big-endian, zero-padded: the
    /// prefix search narrows on this contiguous array instead of the blob.
    keys: Vec<u64>,
}

impl FlatVocab {
    /// `tokens` in id order.
    pub fn new(tokens: &[&str]) -> Option<Self> {
        let mut blob = String::with_capacity(tokens.iter().map(|t| t.len()).sum());
        let mut ends = Vec::with_capacity(tokens.len());
        for token in tokens {
            blob.push_str(token);
            ends.push(u32::try_from(blob.len()).ok()?);
        }
        let mut sorted: Vec<u32> = (0..tokens.len() as u32).collect();
        // Stable: equal strings stay in id order, and the last of each run wins.
        sorted.sort_by(|&a, &b| tokens[a as usize].cmp(tokens[b as usize]));
        let mut unique: Vec<u32> = Vec::with_capacity(sorted.len());
        for id in sorted {
            match unique.last_mut() {
                Some(last) if tokens[*last as usize] == tokens[id as usize] => *last = id,
                _ => unique.push(id),
            }
        }
        Self::from_parts(blob, ends, unique)
    }

    /// From the cached layout; checks it, so a damaged entry is refused, never trusted.
    pub fn from_parts(blob: String, ends: Vec<u32>, sorted: Vec<u32>) -> Option<Self> {
        let mut start = 0usize;
        for &end in &ends {
            let end = end as usize;
            if end < start || end > blob.len() || !blob.is_char_boundary(end) {
                return None;
            }
            start = end;
        }
        let mut vocab = FlatVocab {
            blob,
            ends,
            sorted,
            first: Vec::new(),
            keys: Vec::new(),
        };
        let n = vocab.ends.len();
        if vocab.sorted.iter().any(|&id| id as usize >= n) {
            return None;
        }
        if vocab
            .sorted
            .windows(2)
            .any(|w| vocab.bytes(w[0]) >= vocab.bytes(w[1]))
        {
            return None;
        }
        vocab.first = (0..=256u32)
            .map(|b| {
                vocab.sorted.partition_point(|&id| {
                    vocab.bytes(id).first().map_or(0, |&f| u32::from(f) + 1) <= b
                }) as u32
            })
            .collect();
        vocab.keys = vocab
            .sorted
            .iter()
            .map(|&id| {
                let mut key = [0u8; 8];
                let bytes = vocab.bytes(id);
                let n = bytes.len().min(8);
                key[..n].copy_from_slice(&bytes[..n]);
                u64::from_be_bytes(key)
            })
            .collect();
        Some(vocab)
    }

    /// Byte `depth` of token `sorted[i]`, which is longer than `depth`.
    fn byte_at(&self, i: usize, depth: usize) -> u8 {
        if depth < 8 {
            (self.keys[i] >> (56 - 8 * depth)) as u8
        } else {
            self.bytes(self.sorted[i])[depth]
        }
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn parts(&self) -> (&str, &[u32], &[u32]) {
        (&self.blob, &self.ends, &self.sorted)
    }

    pub fn token(&self, id: u32) -> Option<&str> {
        let id = id as usize;
        let end = *self.ends.get(id)? as usize;
        let start = if id == 0 {
            0
        } else {
            self.ends[id - 1] as usize
        };
        Some(&self.blob[start..end])
    }

    fn bytes(&self, id: u32) -> &[u8] {
        self.token(id).map_or(&[], str::as_bytes)
    }

    /// The id of `prefix` followed by `rest` (no allocation for WordPiece's `##piece`).
    pub fn get_joined(&self, prefix: &[u8], rest: &[u8]) -> Option<u32> {
        let key_len = prefix.len() + rest.len();
        let key_byte = |i: usize| {
            if i < prefix.len() {
                prefix[i]
            } else {
                rest[i - prefix.len()]
            }
        };
        let (lo, hi) = match prefix.first().or(rest.first()) {
            None => (0, self.first[0] as usize),
            Some(&b) => (
                self.first[b as usize] as usize,
                self.first[b as usize + 1] as usize,
            ),
        };
        let range = &self.sorted[lo..hi];
        let found = range.binary_search_by(|&id| {
            let token = self.bytes(id);
            for (i, &t) in token.iter().enumerate() {
                if i >= key_len {
                    return std::cmp::Ordering::Greater;
                }
                match t.cmp(&key_byte(i)) {
                    std::cmp::Ordering::Equal => {}
                    other => return other,
                }
            }
            token.len().cmp(&key_len)
        });
        found.ok().map(|i| range[i])
    }

    pub fn get(&self, key: &str) -> Option<u32> {
        self.get_joined(&[], key.as_bytes())
    }

    /// Every token that is a prefix of `text`, shortest first, as (length, id).
    pub fn for_each_prefix(&self, text: &[u8], mut found: impl FnMut(usize, u32)) {
        let Some(&b0) = text.first() else { return };
        let (mut lo, mut hi) = (
            self.first[b0 as usize] as usize,
            self.first[b0 as usize + 1] as usize,
        );
        let mut depth = 1;
        // Invariant: every token in sorted[lo..hi] starts with text[..depth]; the one equal
        // to it, if any, sorts first.
        while lo < hi {
            if self.bytes(self.sorted[lo]).len() == depth {
                found(depth, self.sorted[lo]);
                lo += 1;
            }
            if depth == text.len() {
                return;
            }
            let b = text[depth];
            let (base, len) = (lo, hi - lo);
            let start = partition(len, |i| self.byte_at(base + i, depth) < b);
            let end =
                start + partition(len - start, |i| self.byte_at(base + start + i, depth) <= b);
            hi = base + end;
            lo = base + start;
            depth += 1;
        }
    }
}

/// The first `i` in `0..len` where `before(i)` is false (`before` holds for a prefix).
fn partition(len: usize, before: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if before(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// `tokenizers`' WordPiece over a [`FlatVocab`].
#[derive(Debug, Clone)]
pub struct FlatWordPiece {
    pub vocab: FlatVocab,
    pub unk_token: String,
    pub continuing_subword_prefix: String,
    pub max_input_chars_per_word: usize,
}

/// `tokenizers`' Unigram over a [`FlatVocab`], with its scores by id.
#[derive(Debug, Clone)]
pub struct FlatUnigram {
    pub vocab: FlatVocab,
    pub scores: Vec<f64>,
    pub unk_id: Option<u32>,
    pub byte_fallback: bool,
    min_score: f64,
}

/// Unigram's penalty below the lowest score for an unknown character (`K_UNK_PENALTY`).
const UNK_PENALTY: f64 = 10.0;

impl FlatUnigram {
    pub fn new(
        vocab: FlatVocab,
        scores: Vec<f64>,
        unk_id: Option<u32>,
        byte_fallback: bool,
    ) -> Option<Self> {
        if scores.len() != vocab.len() || vocab.is_empty() {
            return None;
        }
        if unk_id.is_some_and(|unk| unk as usize >= vocab.len()) {
            return None;
        }
        let min_score = scores
            .iter()
            .copied()
            .fold(f64::INFINITY, |min, s| if s < min { s } else { min });
        Some(FlatUnigram {
            vocab,
            scores,
            unk_id,
            byte_fallback,
            min_score,
        })
    }

    /// `Unigram::encode_optimized`: the best path's pieces as (start, end, id), consecutive
    /// unknowns fused into one piece (with no id: it is looked up as a string).
    fn best_path(&self, sentence: &str) -> tokenizers::Result<Vec<(usize, usize, Option<u32>)>> {
        #[derive(Clone, Copy)]
        struct Node {
            id: u32,
            score: f64,
            starts_at: Option<usize>,
        }
        let size = sentence.len();
        let bytes = sentence.as_bytes();
        let unk_score = self.min_score - UNK_PENALTY;
        let mut best = vec![
            Node {
                id: 0,
                score: 0.0,
                starts_at: None
            };
            size + 1
        ];
        let mut starts_at = 0;
        while starts_at < size {
            let here = best[starts_at].score;
            let mut has_single_node = false;
            let mblen = sentence[starts_at..]
                .chars()
                .next()
                .map_or(1, char::len_utf8);
            self.vocab
                .for_each_prefix(&bytes[starts_at..], |length, id| {
                    let target = &mut best[starts_at + length];
                    let candidate = self.scores[id as usize] + here;
                    if target.starts_at.is_none() || candidate > target.score {
                        *target = Node {
                            id,
                            score: candidate,
                            starts_at: Some(starts_at),
                        };
                    }
                    if length == mblen {
                        has_single_node = true;
                    }
                });
            if !has_single_node {
                let target = &mut best[starts_at + mblen];
                let candidate = unk_score + here;
                if target.starts_at.is_none() || candidate > target.score {
                    *target = Node {
                        id: self.unk_id.ok_or("Unigram: missing unk id")?,
                        score: candidate,
                        starts_at: Some(starts_at),
                    };
                }
            }
            starts_at += mblen;
        }
        let mut pieces = Vec::new();
        let mut ends_at = size;
        let mut fused_start: Option<(usize, usize)> = None;
        while ends_at > 0 {
            let node = best[ends_at];
            let starts_at = node.starts_at.ok_or("Unigram: broken path")?;
            if Some(node.id) == self.unk_id {
                fused_start = Some((starts_at, fused_start.map_or(ends_at, |(_, end)| end)));
            } else {
                if let Some((start, end)) = fused_start.take() {
                    pieces.push((start, end, None));
                }
                pieces.push((starts_at, ends_at, Some(node.id)));
            }
            ends_at = starts_at;
        }
        if let Some((start, end)) = fused_start {
            pieces.push((start, end, None));
        }
        pieces.reverse();
        Ok(pieces)
    }
}

/// The WordPiece or Unigram model that [`super::model_cache`] loads.
#[derive(Debug, Clone)]
pub enum FlatModel {
    WordPiece(FlatWordPiece),
    Unigram(FlatUnigram),
}

impl FlatModel {
    fn vocab(&self) -> &FlatVocab {
        match self {
            FlatModel::WordPiece(m) => &m.vocab,
            FlatModel::Unigram(m) => &m.vocab,
        }
    }
}

impl FlatWordPiece {
    fn unk(&self, len: usize) -> tokenizers::Result<Vec<Token>> {
        let id = self
            .vocab
            .get(&self.unk_token)
            .ok_or("WordPiece: missing unk token")?;
        Ok(vec![Token::new(id, self.unk_token.clone(), (0, len))])
    }

    fn tokenize(&self, sequence: &str) -> tokenizers::Result<Vec<Token>> {
        if sequence.chars().count() > self.max_input_chars_per_word {
            return self.unk(sequence.len());
        }
        let prefix = self.continuing_subword_prefix.as_bytes();
        let mut start = 0;
        let mut tokens = Vec::new();
        while start < sequence.len() {
            let mut end = sequence.len();
            let mut found = None;
            while start < end {
                let piece = &sequence[start..end];
                let id = if start > 0 {
                    self.vocab.get_joined(prefix, piece.as_bytes())
                } else {
                    self.vocab.get(piece)
                };
                if let Some(id) = id {
                    found = Some(id);
                    break;
                }
                // `tokenizers` steps back by the last character of `##piece`: with an empty
                // piece that would be the prefix's, but `start < end` keeps it non-empty.
                end -= piece.chars().next_back().map_or(1, char::len_utf8);
            }
            let Some(id) = found else {
                return self.unk(sequence.len());
            };
            let value = if start > 0 {
                format!(
                    "{}{}",
                    self.continuing_subword_prefix,
                    &sequence[start..end]
                )
            } else {
                sequence[start..end].to_owned()
            };
            tokens.push(Token::new(id, value, (start, end)));
            start = end;
        }
        Ok(tokens)
    }
}

impl FlatUnigram {
    fn tokenize(&self, sentence: &str) -> tokenizers::Result<Vec<Token>> {
        if sentence.is_empty() {
            return Ok(Vec::new());
        }
        let mut tokens = Vec::new();
        for (start, end, id) in self.best_path(sentence)? {
            let piece = &sentence[start..end];
            let offsets = (start, end);
            let id = match id.or_else(|| self.vocab.get(piece)) {
                Some(id) => id,
                None => {
                    if self.byte_fallback {
                        let bytes: Option<Vec<Token>> = piece
                            .bytes()
                            .map(|byte| {
                                let name = format!("<0x{byte:02X}>");
                                self.vocab
                                    .get(&name)
                                    .map(|id| Token::new(id, name, offsets))
                            })
                            .collect();
                        if let Some(bytes) = bytes {
                            tokens.extend(bytes);
                            continue;
                        }
                    }
                    self.unk_id.ok_or("Unigram: missing unk id")?
                }
            };
            tokens.push(Token::new(id, piece.to_owned(), offsets));
        }
        Ok(tokens)
    }
}

impl Model for FlatModel {
    // Never trained: any trainer type satisfies the trait.
    type Trainer = BpeTrainer;

    fn tokenize(&self, sequence: &str) -> tokenizers::Result<Vec<Token>> {
        match self {
            FlatModel::WordPiece(m) => m.tokenize(sequence),
            FlatModel::Unigram(m) => m.tokenize(sequence),
        }
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        self.vocab().get(token)
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        self.vocab().token(id).map(str::to_owned)
    }

    fn get_vocab(&self) -> HashMap<String, u32> {
        let vocab = self.vocab();
        vocab
            .sorted
            .iter()
            .filter_map(|&id| Some((vocab.token(id)?.to_owned(), id)))
            .collect()
    }

    fn get_vocab_size(&self) -> usize {
        self.vocab().len()
    }

    fn save(&self, _folder: &Path, _prefix: Option<&str>) -> tokenizers::Result<Vec<PathBuf>> {
        Err("prefixlint's flat models are not saved".into())
    }

    fn get_trainer(&self) -> BpeTrainer {
        BpeTrainer::default()
    }
}

/// A normalized character and the byte range of the original text it came from, relative to
/// its segment (the alignment `tokenizers`' `NormalizedString` keeps for each of its bytes).
type Aligned = (char, (usize, usize));

/// The normalizer and pre-tokenizer, done here when the file's are ones we reproduce
/// exactly: BertNormalizer + BertPreTokenizer, or literal Replaces + Metaspace.
#[derive(Debug, Clone)]
pub enum Pipeline {
    Bert {
        clean_text: bool,
        handle_chinese_chars: bool,
        strip_accents: bool,
        lowercase: bool,
    },
    Metaspace {
        /// `Replace` normalizers with a literal pattern, in order.
        replaces: Vec<(String, String)>,
        replacement: char,
        prepend: Prepend,
        split: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prepend {
    Always,
    First,
    Never,
}

impl Pipeline {
    /// From the file's `normalizer` and `pre_tokenizer`; `None` for any other shape.
    pub fn from_json(
        normalizer: &serde_json::Value,
        pre_tokenizer: &serde_json::Value,
    ) -> Option<Self> {
        use serde_json::Value;
        let kind = |v: &Value| v.get("type").and_then(Value::as_str).map(str::to_owned);
        match kind(pre_tokenizer)?.as_str() {
            "BertPreTokenizer" => {
                if kind(normalizer)?.as_str() != "BertNormalizer" {
                    return None;
                }
                let flag = |key: &str| normalizer.get(key)?.as_bool();
                let lowercase = flag("lowercase")?;
                let strip_accents = match normalizer.get("strip_accents")? {
                    Value::Null => lowercase,
                    v => v.as_bool()?,
                };
                Some(Pipeline::Bert {
                    clean_text: flag("clean_text")?,
                    handle_chinese_chars: flag("handle_chinese_chars")?,
                    strip_accents,
                    lowercase,
                })
            }
            "Metaspace" => {
                let replace = |v: &Value| -> Option<(String, String)> {
                    (kind(v)?.as_str() == "Replace").then_some(())?;
                    let pattern = v.get("pattern")?.as_object()?;
                    if pattern.len() != 1 {
                        return None;
                    }
                    let literal = pattern.get("String")?.as_str()?;
                    if literal.is_empty() {
                        return None;
                    }
                    Some((literal.to_owned(), v.get("content")?.as_str()?.to_owned()))
                };
                let replaces = match normalizer {
                    Value::Null => Vec::new(),
                    v if kind(v)?.as_str() == "Sequence" => v
                        .get("normalizers")?
                        .as_array()?
                        .iter()
                        .map(replace)
                        .collect::<Option<_>>()?,
                    v => vec![replace(v)?],
                };
                let mut chars = pre_tokenizer.get("replacement")?.as_str()?.chars();
                let (Some(replacement), None) = (chars.next(), chars.next()) else {
                    return None;
                };
                let prepend = match pre_tokenizer.get("prepend_scheme")?.as_str()? {
                    "always" => Prepend::Always,
                    "first" => Prepend::First,
                    "never" => Prepend::Never,
                    _ => return None,
                };
                Some(Pipeline::Metaspace {
                    replaces,
                    replacement,
                    prepend,
                    split: pre_tokenizer.get("split")?.as_bool()?,
                })
            }
            _ => None,
        }
    }

    /// The pre-tokens of one segment (text between added tokens, at original offset `base`
    /// of the whole text), each as its aligned characters.
    fn pre_tokens(&self, segment: &str, base: usize, out: &mut Vec<Vec<Aligned>>) {
        let mut chars: Vec<Aligned> = segment
            .char_indices()
            .map(|(i, c)| (c, (i, i + c.len_utf8())))
            .collect();
        match self {
            Pipeline::Bert {
                clean_text,
                handle_chinese_chars,
                strip_accents,
                lowercase,
            } => {
                bert_normalize(
                    &mut chars,
                    *clean_text,
                    *handle_chinese_chars,
                    *strip_accents,
                    *lowercase,
                );
                let mut word: Vec<Aligned> = Vec::new();
                for &(c, align) in &chars {
                    if c.is_whitespace() {
                        if !word.is_empty() {
                            out.push(std::mem::take(&mut word));
                        }
                    } else if is_bert_punctuation(c) {
                        if !word.is_empty() {
                            out.push(std::mem::take(&mut word));
                        }
                        out.push(vec![(c, align)]);
                    } else {
                        word.push((c, align));
                    }
                }
                if !word.is_empty() {
                    out.push(word);
                }
            }
            Pipeline::Metaspace {
                replaces,
                replacement,
                prepend,
                split,
            } => {
                for (pattern, content) in replaces {
                    chars = replace_literal(&chars, pattern, content);
                }
                for c in chars.iter_mut() {
                    if c.0 == ' ' {
                        c.0 = *replacement;
                    }
                }
                let prepend = match prepend {
                    Prepend::Always => true,
                    // `tokenizers` re-slices the normalized segment: "first" means its first
                    // normalized character comes from the start of the whole text.
                    Prepend::First => chars.first().is_some_and(|c| base + c.1 .0 == 0),
                    Prepend::Never => false,
                };
                if prepend {
                    if let Some(&(first, align)) = chars.first() {
                        if first != *replacement {
                            chars.insert(0, (*replacement, align));
                        }
                    }
                }
                if !*split {
                    if !chars.is_empty() {
                        out.push(chars);
                    }
                    return;
                }
                let mut piece: Vec<Aligned> = Vec::new();
                for c in chars {
                    if c.0 == *replacement && !piece.is_empty() {
                        out.push(std::mem::take(&mut piece));
                    }
                    piece.push(c);
                }
                if !piece.is_empty() {
                    out.push(piece);
                }
            }
        }
    }
}

/// `tokenizers`' `Replace` with a literal pattern: leftmost, non-overlapping matches; each
/// character of the content takes the alignment of the last matched character.
fn replace_literal(chars: &[Aligned], pattern: &str, content: &str) -> Vec<Aligned> {
    let text: String = chars.iter().map(|c| c.0).collect();
    if !text.contains(pattern) {
        return chars.to_vec();
    }
    // Byte position → char index, for the matches.
    let mut char_at = vec![usize::MAX; text.len() + 1];
    for (n, (i, _)) in text.char_indices().enumerate() {
        char_at[i] = n;
    }
    char_at[text.len()] = chars.len();
    let mut out = Vec::with_capacity(chars.len());
    let mut last = 0;
    for (start, matched) in text.match_indices(pattern) {
        let (from, to) = (char_at[start], char_at[start + matched.len()]);
        out.extend_from_slice(&chars[last..from]);
        let align = chars[to - 1].1;
        out.extend(content.chars().map(|c| (c, align)));
        last = to;
    }
    out.extend_from_slice(&chars[last..]);
    out
}

/// BertNormalizer's steps, in its order, keeping each character's alignment as
/// `NormalizedString::transform` assigns it.
fn bert_normalize(
    chars: &mut Vec<Aligned>,
    clean_text: bool,
    handle_chinese_chars: bool,
    strip_accents: bool,
    lowercase: bool,
) {
    use unicode_categories::UnicodeCategories;
    if clean_text {
        chars.retain(|&(c, _)| {
            let control = !matches!(c, '\t' | '\n' | '\r') && c.is_other();
            !(c == '\0' || c == '\u{fffd}' || control)
        });
        for c in chars.iter_mut() {
            if matches!(c.0, '\t' | '\n' | '\r') || c.0.is_whitespace() {
                c.0 = ' ';
            }
        }
    }
    if handle_chinese_chars && chars.iter().any(|&(c, _)| is_chinese(c)) {
        let mut out = Vec::with_capacity(chars.len() + 16);
        for &(c, align) in chars.iter() {
            if is_chinese(c) {
                out.extend([(' ', align), (c, align), (' ', align)]);
            } else {
                out.push((c, align));
            }
        }
        *chars = out;
    }
    if strip_accents && !chars.iter().all(|&(c, _)| c.is_ascii()) {
        use unicode_normalization_alignments::UnicodeNormalization;
        let mut out = Vec::with_capacity(chars.len() + 8);
        let mut at = 0usize;
        for (c, change) in chars.iter().map(|c| c.0).nfd() {
            // `get`: a change list that ran past the source would be a bug in the crate,
            // not a reason to panic.
            let align = if change > 0 {
                at.checked_sub(1)
                    .and_then(|i| chars.get(i))
                    .map_or((0, 0), |c| c.1)
            } else {
                chars.get(at).map_or((0, 0), |c| c.1)
            };
            if change <= 0 {
                at += 1 + change.unsigned_abs();
            }
            out.push((c, align));
        }
        out.retain(|&(c, _)| !c.is_mark_nonspacing());
        *chars = out;
    }
    if lowercase {
        if chars.iter().all(|&(c, _)| c.is_ascii()) {
            for c in chars.iter_mut() {
                c.0 = c.0.to_ascii_lowercase();
            }
        } else {
            *chars = chars
                .iter()
                .flat_map(|&(c, align)| c.to_lowercase().map(move |l| (l, align)))
                .collect();
        }
    }
}

fn is_bert_punctuation(c: char) -> bool {
    use unicode_categories::UnicodeCategories;
    c.is_ascii_punctuation() || c.is_punctuation()
}

/// Our model and our pipeline, with the file's added tokens split out first: no part of
/// `tokenizers` runs.
pub struct FlatEngine {
    model: FlatModel,
    pipeline: Pipeline,
    added: Option<super::added::AddedTokens>,
    /// Pre-token → its tokens (id, start, end in the pre-token), as `tokenizers` caches
    /// them: renders of one template repeat most of their words.
    words: std::sync::Mutex<HashMap<Box<str>, WordTokens>>,
    /// Whether [`FlatEngine::safe_boundary`] may reuse an earlier text's tokens: no added
    /// token holds whitespace, and (Metaspace) no Replace pattern holds a space or newline.
    incremental: bool,
}

/// A pre-token's tokens: (id, start, end) with byte offsets in the pre-token.
type WordTokens = Box<[(u32, u32, u32)]>;

/// Pre-tokens longer than this are not cached; past `WORD_CACHE_ENTRIES` the cache restarts.
const WORD_CACHE_MAX_LEN: usize = 256;
const WORD_CACHE_ENTRIES: usize = 100_000;

impl FlatEngine {
    /// `None` unless the pipeline and every added token are shapes we reproduce: added tokens
    /// matched on the raw text (not normalized), without lstrip/rstrip/single_word.
    pub fn new(model: FlatModel, rest: &serde_json::Value) -> Option<Self> {
        let null = serde_json::Value::Null;
        let pipeline = Pipeline::from_json(
            rest.get("normalizer").unwrap_or(&null),
            rest.get("pre_tokenizer").unwrap_or(&null),
        )?;
        let mut added = Vec::new();
        if let Some(tokens) = rest.get("added_tokens") {
            for token in tokens.as_array()? {
                let flag = |key: &str| token.get(key).and_then(serde_json::Value::as_bool);
                if flag("normalized")? || flag("lstrip")? || flag("rstrip")? || flag("single_word")?
                {
                    return None;
                }
                let content = token.get("content")?.as_str()?;
                let id = u32::try_from(token.get("id")?.as_u64()?).ok()?;
                if content.is_empty() || model.token_to_id(content).is_some_and(|v| v != id) {
                    return None;
                }
                added.push((content.to_owned(), id));
            }
        }
        let incremental = added
            .iter()
            .all(|(content, _)| !content.bytes().any(|b| b.is_ascii_whitespace()))
            && match &pipeline {
                Pipeline::Bert { .. } => true,
                Pipeline::Metaspace {
                    replaces, split, ..
                } => *split && replaces.iter().all(|(p, _)| !p.contains([' ', '\n'])),
            };
        let added = super::added::AddedTokens::new(&added).ok()?;
        Some(FlatEngine {
            model,
            pipeline,
            added,
            words: std::sync::Mutex::new(HashMap::new()),
            incremental,
        })
    }

    pub fn token_text(&self, id: u32) -> Option<String> {
        self.model.id_to_token(id)
    }

    /// The last position before `earlier` and `text` differ where both have a space (for
    /// Metaspace) or ASCII whitespace (for BERT): no pre-token spans it and everything before
    /// it is decided by the text before it, so the tokens before it are the same in both
    /// (`tests/it/flat_models.rs` proves it on related renders). 0 when there is none.
    pub fn safe_boundary(&self, earlier: &str, text: &str) -> usize {
        if !self.incremental {
            return 0;
        }
        let common = earlier
            .bytes()
            .zip(text.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        let safe = |b: u8| match self.pipeline {
            Pipeline::Bert { .. } => b.is_ascii_whitespace(),
            Pipeline::Metaspace { .. } => b == b' ',
        };
        text.as_bytes()[..common]
            .iter()
            .rposition(|&b| safe(b))
            .unwrap_or(0)
    }

    fn tokenize_word(&self, word: &str) -> tokenizers::Result<WordTokens> {
        let cacheable = word.len() <= WORD_CACHE_MAX_LEN;
        if cacheable {
            if let Some(found) = self.words.lock().ok().and_then(|w| w.get(word).cloned()) {
                return Ok(found);
            }
        }
        let tokens: WordTokens = Model::tokenize(&self.model, word)?
            .into_iter()
            .map(|t| (t.id, t.offsets.0 as u32, t.offsets.1 as u32))
            .collect();
        if cacheable {
            if let Ok(mut words) = self.words.lock() {
                if words.len() >= WORD_CACHE_ENTRIES {
                    words.clear();
                }
                words.insert(word.into(), tokens.clone());
            }
        }
        Ok(tokens)
    }

    pub fn encode(&self, text: &str, tokens: &mut super::Tokens) -> tokenizers::Result<()> {
        use super::added::Piece;
        let mut words = Vec::new();
        let mut word = String::new();
        let mut starts: Vec<usize> = Vec::new();
        for piece in super::added::split(self.added.as_ref(), text) {
            match piece {
                Piece::Added(id, from, to) => {
                    tokens.ids.push(id);
                    tokens.offsets.push((from, to));
                }
                Piece::Text(from, to) => {
                    words.clear();
                    self.pipeline.pre_tokens(&text[from..to], from, &mut words);
                    for chars in &words {
                        word.clear();
                        word.extend(chars.iter().map(|c| c.0));
                        // Where each character starts in `word`.
                        starts.clear();
                        let mut at = 0;
                        starts.extend(chars.iter().map(|c| {
                            let start = at;
                            at += c.0.len_utf8();
                            start
                        }));
                        let char_of = |byte: usize| starts.partition_point(|&s| s < byte);
                        for (id, start, end) in self.tokenize_word(&word)?.iter().copied() {
                            let (start, end) = (start as usize, end as usize);
                            let first = char_of(start).min(chars.len() - 1);
                            let last = char_of(end).saturating_sub(1).max(first);
                            tokens.ids.push(id);
                            tokens
                                .offsets
                                .push((from + chars[first].1 .0, from + chars[last].1 .1));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_and_prefixes() {
        let tokens = ["b", "ab", "a", "abc", "", "ab", "##c"];
        let vocab = FlatVocab::new(&tokens).unwrap();
        assert_eq!(vocab.get("a"), Some(2));
        // The last duplicate wins, as in a map built in id order.
        assert_eq!(vocab.get("ab"), Some(5));
        assert_eq!(vocab.get(""), Some(4));
        assert_eq!(vocab.get("abd"), None);
        assert_eq!(vocab.get_joined(b"##", b"c"), Some(6));
        assert_eq!(vocab.token(1), Some("ab"));
        let mut found = Vec::new();
        vocab.for_each_prefix(b"abcd", |len, id| found.push((len, id)));
        assert_eq!(found, vec![(1, 2), (2, 5), (3, 3)]);
        let (blob, ends, sorted) = vocab.parts();
        let again = FlatVocab::from_parts(blob.to_owned(), ends.to_vec(), sorted.to_vec()).unwrap();
        assert_eq!(again.get("abc"), Some(3));
        assert!(FlatVocab::from_parts(blob.to_owned(), ends.to_vec(), vec![3, 1]).is_none());
    }
}
