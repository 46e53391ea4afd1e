//! A byte-level BPE engine for the `tokenizer.json` shape of every byte-level family (Qwen,
//! Llama 3, GPT-4o/o200k, cl100k, DeepSeek, gpt-oss, GLM, MiniMax, claude): NFC, NFKC or no normalizer,
//! `Split` regex pre-tokenizers (`Isolated`, or `Removed` with `invert`, one or several),
//! byte-level BPE with or without `ignore_merges`, added tokens, and post-processors that
//! leave a plain encoding alone. It reproduces `tokenizers` 0.23.2 ids and offsets exactly
//! (see the equality tests) and loads from a compact binary form in a few milliseconds.
//!
//! Anything it cannot reproduce is refused at conversion ([`BpeParts::from_tokenizer_json`]
//! returns `None`) and left to the caller's fallback engine.

use super::pretokenize::{SplitRule, SplitSequence, DIGITS_INDIVIDUAL};
use super::Tokens;
use serde::Deserialize;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

/// A pair of adjacent token ids → (merge rank, id of the merged token).
type MergeMap = HashMap<u64, (u32, u32), BuildHasherDefault<PairHasher>>;

/// Multiplicative hash for the packed `(left, right)` id pairs and, eight bytes a step, for
/// byte keys (pre-tokens, the results cache's paths): SipHash costs more than the whole merge
/// step on these small keys. The keys are the user's own text: nothing to defend against.
#[derive(Default)]
pub(crate) struct PairHasher(u64);

impl Hasher for PairHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Eight bytes a step (the word cache hashes every pre-token it looks up), each step's
        // high bits folded down: the table's bucket is the hash's low bits.
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            self.mix(u64::from_le_bytes(word.try_into().unwrap_or([0; 8])));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.mix(u64::from_le_bytes(last));
        }
    }
    fn write_usize(&mut self, n: usize) {
        // A slice's length prefix: one step, not eight.
        self.mix(n as u64);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (n ^ (n >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        self.0 ^= self.0 >> 32;
    }
}

impl PairHasher {
    fn mix(&mut self, word: u64) {
        let h = (self.0.rotate_left(8) ^ word).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 32);
    }
}

fn pair_key(left: u32, right: u32) -> u64 {
    (u64::from(left) << 32) | u64::from(right)
}

/// What the engine needs, in a form that serializes to a flat binary file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BpeParts {
    /// Token text as the vocabulary spells it (byte-level alphabet), indexed by id.
    pub id_to_token: TokenTexts,
    /// The id of each single byte.
    pub byte_ids: Vec<u32>,
    /// `(left, right, merged)` ids in rank order.
    pub merges: Vec<(u32, u32, u32)>,
    /// Added tokens (split out before pre-tokenization), with their ids.
    pub added: Vec<(String, u32)>,
    /// The `Split` pre-tokenizers, in order.
    pub splits: Vec<SplitRule>,
    /// Whether the normalizer is NFC (otherwise there is none, or NFKC).
    pub nfc: bool,
    /// Whether the normalizer is NFKC (claude's): done like NFC, text NFKC leaves alone on
    /// the fast path, other text through `tokenizers`' own normalization.
    pub nfkc: bool,
    /// A pre-token that is itself in the vocabulary is that token, unmerged (Llama 3, gpt-oss).
    pub ignore_merges: bool,
    /// SentencePiece-style BPE (Llama 2, Gemma, Mistral) instead of byte-level: spaces become
    /// `▁`, symbols start as characters, and `byte_ids` are the `<0xXX>` fallback tokens.
    pub metaspace: Option<Metaspace>,
    /// tiktoken's ranking: a merge ranks as the token it makes (its id), so every pair that
    /// makes one token ties and the leftmost goes first; otherwise a merge ranks by its place
    /// in `merges`, as in `tokenizers`.
    pub rank_is_merged_id: bool,
}

/// The vocabulary's token texts in id order, as one string and each token's end: one
/// allocation, where a string per token made 150,000 of them at every load (most of the time
/// a cached tokenizer took to load).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenTexts {
    blob: String,
    ends: Vec<u32>,
}

impl TokenTexts {
    /// From the parts [`TokenTexts::parts`] gave; `None` unless every end is a character
    /// boundary of `blob`, in order, the last at its end.
    pub fn from_parts(blob: String, ends: Vec<u32>) -> Option<TokenTexts> {
        let mut previous = 0;
        for &end in &ends {
            let end = end as usize;
            if end < previous || !blob.is_char_boundary(end) {
                return None;
            }
            previous = end;
        }
        (previous == blob.len()).then_some(TokenTexts { blob, ends })
    }

    /// The blob and the ends, for the cache file.
    pub fn parts(&self) -> (&str, &[u32]) {
        (&self.blob, &self.ends)
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The text of token `id` (empty for an id no token has).
    pub fn get(&self, id: usize) -> Option<&str> {
        let end = *self.ends.get(id)? as usize;
        let start = match id {
            0 => 0,
            _ => self.ends[id - 1] as usize,
        };
        self.blob.get(start..end)
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.len()).map(|id| self.get(id).unwrap_or(""))
    }
}

impl<S: AsRef<str>> FromIterator<S> for TokenTexts {
    fn from_iter<I: IntoIterator<Item = S>>(texts: I) -> Self {
        let mut out = TokenTexts::default();
        for text in texts {
            out.blob.push_str(text.as_ref());
            out.ends.push(out.blob.len() as u32);
        }
        out
    }
}

/// The normalizer of a SentencePiece-style BPE: `Replace(" ", "▁")`, after `Prepend("▁")`
/// when `prepend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metaspace {
    pub prepend: bool,
}

pub struct ByteLevelBpe {
    parts: BpeParts,
    merges: MergeMap,
    added: Option<aho_corasick::AhoCorasick>,
    pre_tokenizer: SplitSequence,
    /// For `ignore_merges`: each vocabulary token's bytes → its id.
    whole_words: Option<HashMap<Box<[u8]>, u32, BuildHasherDefault<PairHasher>>>,
    /// For SentencePiece-style BPE: each one-character token's id.
    char_ids: HashMap<char, u32>,
    /// Whether [`ByteLevelBpe::encode_related`] may reuse shared prefixes (see there), and
    /// the line starts that are not a safe boundary for this pre-tokenizer.
    incremental: Option<&'static [u8]>,
    /// SentencePiece-style BPE: each added token's id by its text, and the longest text's
    /// length (a restart point is the end of an added token, see [`Self::reuse_boundary`]).
    added_ids: HashMap<Box<str>, u32>,
    longest_added: usize,
    /// Metaspace BPE: no merge joins a character to a `▁` after it, so each word (a `▁` run
    /// and what follows up to the next `▁` after a non-`▁`) merges on its own, cached.
    metaspace_words: bool,
    /// Which thread-local word caches belong to this engine.
    instance: u64,
}

/// A `byte_ids` entry for a byte the vocabulary has no token for (SmolLM2's GGUF lacks 21,
/// such as 0xC0 and 0xF5–0xFF): it takes part in no merge and is dropped from the output,
/// as llama.cpp drops it.
pub const MISSING_BYTE: u32 = u32::MAX;

/// The reason a text could not be encoded here; the caller then uses the reference engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeedsFallback;

impl ByteLevelBpe {
    pub fn new(parts: BpeParts) -> Option<Self> {
        if parts.byte_ids.len() != 256 {
            return None;
        }
        let mut merges = MergeMap::with_capacity_and_hasher(parts.merges.len(), Default::default());
        for (index, &(left, right, merged)) in parts.merges.iter().enumerate() {
            let rank = if parts.rank_is_merged_id {
                merged
            } else {
                index as u32
            };
            // Later duplicates win, as in `tokenizers`' HashMap collect.
            merges.insert(pair_key(left, right), (rank, merged));
        }
        let added = if parts.added.is_empty() {
            None
        } else {
            Some(
                aho_corasick::AhoCorasick::builder()
                    .match_kind(aho_corasick::MatchKind::LeftmostLongest)
                    .build(parts.added.iter().map(|(content, _)| content.as_str()))
                    .ok()?,
            )
        };
        let pre_tokenizer = match parts.metaspace {
            // No pre-tokenization: each stretch between added tokens is one word.
            Some(_) => SplitSequence::whole(),
            None => SplitSequence::new(&parts.splits)?,
        };
        let whole_words = parts.ignore_merges.then(|| {
            let byte_of: HashMap<char, u8> = byte_to_char()
                .iter()
                .enumerate()
                .map(|(b, &c)| (c, b as u8))
                .collect();
            parts
                .id_to_token
                .iter()
                .enumerate()
                .filter_map(|(id, token)| {
                    // Added tokens that are not byte-level spellings are split out earlier.
                    let bytes = token
                        .chars()
                        .map(|c| byte_of.get(&c).copied())
                        .collect::<Option<Box<[u8]>>>()?;
                    (!bytes.is_empty()).then_some((bytes, id as u32))
                })
                .collect()
        });
        let char_ids = match parts.metaspace {
            None => HashMap::new(),
            Some(_) => parts
                .id_to_token
                .iter()
                .enumerate()
                .filter_map(|(id, token)| {
                    let mut chars = token.chars();
                    match (chars.next(), chars.next()) {
                        (Some(c), None) => Some((c, id as u32)),
                        _ => None,
                    }
                })
                .collect(),
        };
        let byte_tokens: std::collections::HashSet<u32> = parts.byte_ids.iter().copied().collect();
        let metaspace_words = parts.metaspace.is_some()
            && parts.merges.iter().all(|&(left, right, merged)| {
                let crosses = parts.id_to_token.get(merged as usize).is_none_or(|token| {
                    let mut previous = None;
                    token.chars().any(|c| {
                        let joins = c == '\u{2581}' && previous.is_some_and(|p| p != '\u{2581}');
                        previous = Some(c);
                        joins
                    })
                });
                !crosses && !byte_tokens.contains(&left) && !byte_tokens.contains(&right)
            });
        let incremental = if parts.metaspace.is_some()
            || parts
                .added
                .iter()
                .any(|(content, _)| content.contains('\n'))
        {
            None
        } else if pre_tokenizer.is_single_scanner() {
            Some(&b""[..])
        } else {
            match parts.splits.as_slice() {
                [rule] if !rule.removed && !rule.invert && !rule.digits => {
                    super::pretokenize::line_starts_not_safe(&rule.pattern)
                }
                _ => None,
            }
        };
        let added_ids: HashMap<Box<str>, u32> = match parts.metaspace {
            Some(_) => parts
                .added
                .iter()
                .map(|(content, id)| (content.as_str().into(), *id))
                .collect(),
            None => HashMap::new(),
        };
        let longest_added = parts.added.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
        Some(ByteLevelBpe {
            instance: NEXT_INSTANCE.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            incremental,
            added_ids,
            longest_added,
            metaspace_words,
            parts,
            merges,
            added,
            pre_tokenizer,
            whole_words,
            char_ids,
        })
    }

    /// Whether Metaspace text is merged word by word (see `metaspace_words`).
    pub fn merges_metaspace_words(&self) -> bool {
        self.metaspace_words
    }

    pub fn parts(&self) -> &BpeParts {
        &self.parts
    }

    pub fn token_text(&self, id: u32) -> Option<String> {
        self.parts
            .id_to_token
            .get(id as usize)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
    }

    /// Encodes like `Tokenizer::encode(text, false)`: ids and byte offsets into `text`.
    pub fn encode(
        &self,
        text: &str,
        ids: &mut Vec<u32>,
        offsets: &mut Vec<(usize, usize)>,
    ) -> Result<(), NeedsFallback> {
        let mut scratch = Scratch::default();
        let mut last = 0;
        if let Some(added) = &self.added {
            for found in added.find_iter(text) {
                self.encode_segment(&text[last..found.start()], last, ids, offsets, &mut scratch)?;
                ids.push(self.parts.added[found.pattern().as_usize()].1);
                offsets.push((found.start(), found.end()));
                last = found.end();
            }
        }
        self.encode_segment(&text[last..], last, ids, offsets, &mut scratch)
    }

    /// Encodes like [`Self::encode`], a line at a time where that is exact, remembering each
    /// line's tokens: the renders of one template repeat most of their lines after their
    /// first divergence, and templates that include one partial repeat its lines, so most
    /// lines of a run are encoded once. A line starts at a safe boundary (see
    /// [`Self::encode_related`]): the tokens on either side of it are those of the text on
    /// that side alone. Engines without safe boundaries encode the text whole.
    pub fn encode_lines(
        &self,
        text: &str,
        ids: &mut Vec<u32>,
        offsets: &mut Vec<(usize, usize)>,
    ) -> Result<(), NeedsFallback> {
        let Some(not_safe) = self.incremental else {
            return self.encode(text, ids, offsets);
        };
        let bytes = text.as_bytes();
        let mut start = 0;
        while start < text.len() {
            let end = next_safe_boundary(bytes, start, not_safe).unwrap_or(text.len());
            self.encode_line(&text[start..end], start, ids, offsets)?;
            start = end;
        }
        Ok(())
    }

    /// One line of [`Self::encode_lines`], from the line cache when it was seen before.
    fn encode_line(
        &self,
        line: &str,
        base: usize,
        ids: &mut Vec<u32>,
        offsets: &mut Vec<(usize, usize)>,
    ) -> Result<(), NeedsFallback> {
        // One `extend` a vector (one capacity check, a tight loop), not a push a token.
        let emit = |ids: &mut Vec<u32>, offsets: &mut Vec<(usize, usize)>, tokens: &[Piece]| {
            ids.extend(tokens.iter().map(|t| t.0));
            offsets.extend(
                tokens
                    .iter()
                    .map(|&(_, start, end)| (base + start as usize, base + end as usize)),
            );
        };
        if line.len() > CACHED_LINE_BYTES {
            let from = offsets.len();
            self.encode(line, ids, offsets)?;
            for offset in &mut offsets[from..] {
                offset.0 += base;
                offset.1 += base;
            }
            return Ok(());
        }
        let hit = LINE_CACHE.with(|cache| {
            let mut cache = cache.borrow_mut();
            cache.claim(self.instance);
            cache
                .lines
                .get(line)
                .map(|tokens| emit(ids, offsets, tokens))
        });
        if hit.is_some() {
            return Ok(());
        }
        // Encoded straight into the output (offsets then moved by `base`), the line's
        // pieces read back from there.
        let from = ids.len();
        self.encode(line, ids, offsets)?;
        let tokens: Box<[Piece]> = ids[from..]
            .iter()
            .zip(&mut offsets[from..])
            .map(|(&id, offset)| {
                let piece = (id, offset.0 as u32, offset.1 as u32);
                offset.0 += base;
                offset.1 += base;
                piece
            })
            .collect();
        LINE_CACHE.with(|cache| {
            let mut cache = cache.borrow_mut();
            if cache.bytes + line.len() > CACHED_LINES_BYTES {
                cache.lines.clear();
                cache.bytes = 0;
            }
            cache.bytes += line.len() + tokens.len() * std::mem::size_of::<Piece>();
            cache.lines.insert(line.into(), tokens);
        });
        Ok(())
    }

    /// Encodes renders of one template, which share text up to their first divergence:
    /// `texts[0]` fully, each other text only after the last safe boundary it shares with
    /// `texts[0]`. Equal to encoding each text alone (`tests/it/engines.rs` proves it).
    ///
    /// A safe boundary is a position right after `\n` whose character is ASCII and not
    /// whitespace, before the divergence. No pre-token of the supported patterns spans it,
    /// every pre-token before it is decided by the text up to it, no added token contains
    /// `\n`, and NFC never composes across it; so the tokens before it are the same.
    pub fn encode_related(&self, texts: &[&str]) -> Result<Vec<Tokens>, NeedsFallback> {
        let Some((first, rest)) = texts.split_first() else {
            return Ok(Vec::new());
        };
        let mut first_tokens = Tokens::default();
        self.encode_lines(first, &mut first_tokens.ids, &mut first_tokens.offsets)?;
        let mut out = Vec::with_capacity(texts.len());
        for text in rest {
            out.push(self.encode_after(first, &first_tokens, text)?);
        }
        out.insert(0, first_tokens);
        Ok(out)
    }

    /// Encodes `text` knowing an earlier text and its tokens (from [`Self::encode`], possibly
    /// with a server's BOS at offset 0): the tokens before [`Self::reuse_boundary`] are
    /// taken over, only the rest is encoded.
    pub fn encode_after(
        &self,
        earlier: &str,
        earlier_tokens: &Tokens,
        text: &str,
    ) -> Result<Tokens, NeedsFallback> {
        let boundary = self.reuse_boundary(earlier, earlier_tokens, text);
        let kept = earlier_tokens
            .offsets
            .partition_point(|&(start, _)| start < boundary);
        let mut tokens = Tokens {
            ids: Vec::with_capacity(kept + (text.len() - boundary) / 3 + 16),
            offsets: Vec::with_capacity(kept + (text.len() - boundary) / 3 + 16),
        };
        tokens.ids.extend_from_slice(&earlier_tokens.ids[..kept]);
        tokens
            .offsets
            .extend_from_slice(&earlier_tokens.offsets[..kept]);
        let from = tokens.offsets.len();
        self.encode_lines(&text[boundary..], &mut tokens.ids, &mut tokens.offsets)?;
        for offset in &mut tokens.offsets[from..] {
            offset.0 += boundary;
            offset.1 += boundary;
        }
        Ok(tokens)
    }

    /// [`Self::encode_after`] of `earlier` followed by `extension` (a reply after its prompt),
    /// without copying the tokens taken over: how many of `earlier_tokens` are taken over,
    /// and the tokens of the rest (offsets into the whole text). `None` where none are
    /// taken over or the engine refuses the text (the caller encodes it whole, as
    /// `encode_after`'s callers do).
    pub fn encode_extension(
        &self,
        earlier: &str,
        earlier_tokens: &Tokens,
        extension: &str,
    ) -> Option<(usize, Tokens)> {
        // The whole text starts with `earlier`: they share all of it.
        let boundary = self.reuse_boundary_within(earlier, earlier_tokens, earlier.len());
        if boundary == 0 {
            return None;
        }
        let kept = earlier_tokens
            .offsets
            .partition_point(|&(start, _)| start < boundary);
        let rest = [&earlier[boundary..], extension].concat();
        let mut tokens = Tokens {
            ids: Vec::with_capacity(rest.len() / 3 + 8),
            offsets: Vec::with_capacity(rest.len() / 3 + 8),
        };
        self.encode_lines(&rest, &mut tokens.ids, &mut tokens.offsets)
            .ok()?;
        for offset in &mut tokens.offsets {
            offset.0 += boundary;
            offset.1 += boundary;
        }
        Some((kept, tokens))
    }

    /// Where encoding `text` may restart, knowing `earlier` and its tokens: the tokens of
    /// `earlier` before it are the tokens of `text` before it (0: encode it all).
    ///
    /// Byte-level BPE restarts at the last [`safe_boundary`] before the first difference.
    /// SentencePiece-style BPE has no pre-tokenizer: the text between two added tokens is
    /// normalized and merged on its own, so it restarts right after the last added token
    /// of `earlier` that the texts share along with the longest added token's length after
    /// its start (the leftmost-longest search for added tokens saw the same bytes up to
    /// there in both, so it found the same tokens; after it, the search starts afresh).
    pub fn reuse_boundary(&self, earlier: &str, earlier_tokens: &Tokens, text: &str) -> usize {
        if let Some(not_safe) = self.incremental {
            return safe_boundary_but(earlier, text, not_safe);
        }
        if self.parts.metaspace.is_none() || self.added_ids.is_empty() {
            return 0;
        }
        let shared = common_prefix(earlier.as_bytes(), text.as_bytes());
        self.reuse_boundary_within(earlier, earlier_tokens, shared)
    }

    /// [`Self::reuse_boundary`] for texts known to share their first `shared` bytes.
    fn reuse_boundary_within(
        &self,
        earlier: &str,
        earlier_tokens: &Tokens,
        shared: usize,
    ) -> usize {
        if let Some(not_safe) = self.incremental {
            return last_safe_boundary(earlier.as_bytes(), shared, not_safe);
        }
        if self.parts.metaspace.is_none() || self.added_ids.is_empty() {
            return 0;
        }
        let offsets = &earlier_tokens.offsets;
        // Tokens are in text order: the last one starting early enough, back to the first.
        let usable = offsets.partition_point(|&(start, _)| start + self.longest_added <= shared);
        for i in (0..usable).rev() {
            let (start, end) = offsets[i];
            // An added token's id over exactly its text is where the search found it: any
            // other token lies between matches, where the search found none.
            let is_added = earlier
                .get(start..end)
                .and_then(|t| self.added_ids.get(t))
                .is_some_and(|&id| id == earlier_tokens.ids[i]);
            if is_added && end > 0 {
                return end;
            }
        }
        0
    }

    /// One stretch between added tokens: normalize, pre-tokenize, then BPE each piece.
    fn encode_segment(
        &self,
        segment: &str,
        base: usize,
        ids: &mut Vec<u32>,
        offsets: &mut Vec<(usize, usize)>,
        scratch: &mut Scratch,
    ) -> Result<(), NeedsFallback> {
        if segment.is_empty() {
            return Ok(());
        }
        if let Some(metaspace) = self.parts.metaspace {
            self.encode_metaspace(segment, metaspace, base, ids, offsets, scratch);
            return Ok(());
        }
        if (self.parts.nfc || self.parts.nfkc)
            && !segment.is_ascii()
            && !(if self.parts.nfkc {
                unicode_normalization_alignments::is_nfkc(segment)
            } else {
                unicode_normalization_alignments::is_nfc(segment)
            })
        {
            self.encode_denormalized(segment, base, ids, offsets, scratch);
            return Ok(());
        }
        // The word cache borrowed once a segment, not once a pre-token.
        WORD_CACHE.with(|cache| {
            let mut cache = cache.borrow_mut();
            cache.claim(self.instance);
            self.pre_tokenizer.split(segment, |start, end| {
                let piece = &segment[start..end];
                self.encode_piece(piece, base + start, ids, offsets, scratch, &mut cache);
            });
        });
        Ok(())
    }

    /// SentencePiece-style BPE of one stretch: normalized through `tokenizers`' own
    /// `NormalizedString` (so offsets map back exactly as the reference maps them), then
    /// merged as one word from characters, unknown ones as their `<0xXX>` bytes.
    fn encode_metaspace(
        &self,
        segment: &str,
        metaspace: Metaspace,
        base: usize,
        ids: &mut Vec<u32>,
        offsets: &mut Vec<(usize, usize)>,
        scratch: &mut Scratch,
    ) {
        let mut normalized = tokenizers::NormalizedString::from(segment);
        if metaspace.prepend {
            normalized.prepend("\u{2581}");
        }
        // Replacing a literal string cannot fail.
        let _ = normalized.replace(" ", "\u{2581}");
        let text = normalized.get();
        let mut emit = |tokens: &[Piece], at: usize| {
            for &(id, start, end) in tokens.iter().filter(|t| t.0 != MISSING_BYTE) {
                let (start, end) = (at + start as usize, at + end as usize);
                let range = tokenizers::normalizer::Range::Normalized(start..end);
                let (start, end) = normalized
                    .convert_offsets(range)
                    .map_or((start, end), |r| (r.start, r.end));
                ids.push(id);
                offsets.push((base + start, base + end));
            }
        };
        if !self.metaspace_words {
            emit(&self.merge_metaspace_word(text, scratch), 0);
            return;
        }
        let mut word_start = 0;
        let mut previous = None;
        for (at, c) in text.char_indices() {
            if c == '\u{2581}' && previous.is_some_and(|p| p != '\u{2581}') {
                self.metaspace_word(&text[word_start..at], word_start, scratch, &mut emit);
                word_start = at;
            }
            previous = Some(c);
        }
        self.metaspace_word(&text[word_start..], word_start, scratch, &mut emit);
    }

    /// One Metaspace word through this thread's word cache.
    fn metaspace_word(
        &self,
        word: &str,
        at: usize,
        scratch: &mut Scratch,
        emit: &mut impl FnMut(&[Piece], usize),
    ) {
        if word.is_empty() {
            return;
        }
        let cacheable = word.len() <= CACHED_PIECE_BYTES;
        if cacheable {
            let hit = WORD_CACHE.with(|cache| {
                let mut cache = cache.borrow_mut();
                cache.claim(self.instance);
                cache
                    .words
                    .get(word.as_bytes())
                    .map(|tokens| emit(tokens, at))
            });
            if hit.is_some() {
                return;
            }
        }
        let tokens = self.merge_metaspace_word(word, scratch);
        emit(&tokens, at);
        if cacheable {
            WORD_CACHE.with(|cache| {
                let mut cache = cache.borrow_mut();
                if cache.words.len() >= CACHED_WORDS {
                    cache.words.clear();
                }
                cache.words.insert(word.as_bytes().into(), tokens.into());
            });
        }
    }

    /// BPE of normalized Metaspace text from its characters (unknown ones as their
    /// `<0xXX>` bytes): (id, start, end) in `text`, missing bytes included.
    fn merge_metaspace_word(&self, text: &str, scratch: &mut Scratch) -> Vec<Piece> {
        let symbols = &mut scratch.symbols;
        symbols.clear();
        for (start, c) in text.char_indices() {
            match self.char_ids.get(&c) {
                Some(&id) => symbols.push(Symbol::new(id, start, c.len_utf8())),
                None => {
                    let mut buf = [0u8; 4];
                    for (i, b) in c.encode_utf8(&mut buf).bytes().enumerate() {
                        symbols.push(Symbol::new(self.parts.byte_ids[b as usize], start + i, 1));
                    }
                }
            }
        }
        link(symbols);
        self.merge_symbols(scratch);
        scratch
            .symbols
            .iter()
            .filter(|s| s.len != 0)
            .map(|s| (s.id, s.start as u32, (s.start + s.len) as u32))
            .collect()
    }

    /// A segment that NFC changes: encoded in its NFC form, with offsets mapped back to the
    /// original text through `tokenizers`' own alignments (so they are the reference's).
    fn encode_denormalized(
        &self,
        segment: &str,
        base: usize,
        ids: &mut Vec<u32>,
        offsets: &mut Vec<(usize, usize)>,
        scratch: &mut Scratch,
    ) {
        let mut normalized = tokenizers::NormalizedString::from(segment);
        if self.parts.nfkc {
            normalized.nfkc();
        } else {
            normalized.nfc();
        }
        let text = normalized.get();
        let from = offsets.len();
        WORD_CACHE.with(|cache| {
            let mut cache = cache.borrow_mut();
            cache.claim(self.instance);
            self.pre_tokenizer.split(text, |start, end| {
                self.encode_piece(&text[start..end], start, ids, offsets, scratch, &mut cache);
            });
        });
        for offset in &mut offsets[from..] {
            let range = tokenizers::normalizer::Range::Normalized(offset.0..offset.1);
            let original = normalized
                .convert_offsets(range)
                .map_or(*offset, |r| (r.start, r.end));
            *offset = (base + original.0, base + original.1);
        }
    }

    /// BPE of one pre-token, from this thread's word cache when it was seen before:
    /// prompt text repeats its words, and the merge loop was most of the encode time.
    fn encode_piece(
        &self,
        piece: &str,
        base: usize,
        ids: &mut Vec<u32>,
        offsets: &mut Vec<(usize, usize)>,
        scratch: &mut Scratch,
        cache: &mut WordCache,
    ) {
        let emit = |ids: &mut Vec<u32>, offsets: &mut Vec<(usize, usize)>, tokens: &[Piece]| {
            if tokens.len() == 1 && tokens[0].0 != MISSING_BYTE {
                // Most pre-tokens are one token over the whole piece (char boundaries both).
                ids.push(tokens[0].0);
                offsets.push((base, base + piece.len()));
                return;
            }
            for &(id, start, end) in tokens.iter().filter(|t| t.0 != MISSING_BYTE) {
                ids.push(id);
                // Byte-level offsets widen to whole characters, as `tokenizers`' alignments do.
                let start = floor_char_boundary(piece, start as usize);
                let end = ceil_char_boundary(piece, end as usize);
                offsets.push((base + start, base + end));
            }
        };
        if let Some(id) = self
            .whole_words
            .as_ref()
            .and_then(|w| w.get(piece.as_bytes()))
        {
            emit(ids, offsets, &[(*id, 0, piece.len() as u32)]);
            return;
        }
        let cacheable = piece.len() <= CACHED_PIECE_BYTES;
        if cacheable {
            if let Some(tokens) = cache.words.get(piece.as_bytes()) {
                emit(ids, offsets, tokens);
                return;
            }
        }
        self.merge_piece(piece, scratch);
        let tokens: Vec<Piece> = scratch
            .symbols
            .iter()
            .filter(|s| s.len != 0)
            .map(|s| (s.id, s.start as u32, (s.start + s.len) as u32))
            .collect();
        emit(ids, offsets, &tokens);
        if cacheable {
            if cache.words.len() >= CACHED_WORDS {
                cache.words.clear();
            }
            cache.words.insert(piece.as_bytes().into(), tokens.into());
        }
    }

    /// BPE over the bytes of one pre-token, exactly as `tokenizers`' `Word::merge_all`:
    /// a heap of candidate merges by (rank, position), stale entries skipped. The result
    /// is left in `scratch.symbols` (merged-away symbols have `len == 0`).
    fn merge_piece(&self, piece: &str, scratch: &mut Scratch) {
        let bytes = piece.as_bytes();
        let symbols = &mut scratch.symbols;
        symbols.clear();
        symbols.extend(
            bytes
                .iter()
                .enumerate()
                .map(|(i, &b)| Symbol::new(self.parts.byte_ids[b as usize], i, 1)),
        );
        link(symbols);
        self.merge_symbols(scratch);
    }

    /// The merge loop over linked symbols (see [`ByteLevelBpe::merge_piece`]).
    fn merge_symbols(&self, scratch: &mut Scratch) {
        let symbols = &mut scratch.symbols;
        let queue = &mut scratch.queue;
        queue.clear();
        for (pos, window) in symbols.windows(2).enumerate() {
            if let Some(&(rank, merged)) = self.merges.get(&pair_key(window[0].id, window[1].id)) {
                queue.push(Candidate { rank, pos, merged });
            }
        }
        while let Some(top) = queue.pop() {
            let current = symbols[top.pos];
            if current.len == 0 || current.next == -1 {
                continue;
            }
            let next_pos = current.next as usize;
            let right = symbols[next_pos];
            match self.merges.get(&pair_key(current.id, right.id)) {
                Some(&(_, merged)) if merged == top.merged => {}
                _ => continue,
            }
            symbols[top.pos].id = top.merged;
            symbols[top.pos].len += right.len;
            symbols[top.pos].next = right.next;
            symbols[next_pos].len = 0;
            if right.next >= 0 {
                symbols[right.next as usize].prev = top.pos as isize;
            }
            let current = symbols[top.pos];
            if current.prev >= 0 {
                let prev = symbols[current.prev as usize];
                if let Some(&(rank, merged)) = self.merges.get(&pair_key(prev.id, current.id)) {
                    queue.push(Candidate {
                        rank,
                        pos: current.prev as usize,
                        merged,
                    });
                }
            }
            if current.next >= 0 {
                let next = symbols[current.next as usize];
                if let Some(&(rank, merged)) = self.merges.get(&pair_key(current.id, next.id)) {
                    queue.push(Candidate {
                        rank,
                        pos: top.pos,
                        merged,
                    });
                }
            }
        }
    }
}

/// A token of a cached piece: id and byte range within the piece.
type Piece = (u32, u32, u32);

/// Pieces longer than this are rare repeats; they are not cached.
const CACHED_PIECE_BYTES: usize = 64;
/// The cache is cleared when it reaches this many words, so memory stays bounded.
const CACHED_WORDS: usize = 1 << 16;

/// Each thread's cache of encoded pieces, for one engine instance at a time.
#[derive(Default)]
struct WordCache {
    instance: u64,
    words: HashMap<Box<[u8]>, Box<[Piece]>, BuildHasherDefault<PairHasher>>,
}

impl WordCache {
    /// Empties the cache when another engine (another vocabulary) starts using it.
    fn claim(&mut self, instance: u64) {
        if self.instance != instance {
            self.words.clear();
            self.instance = instance;
        }
    }
}

thread_local! {
    static WORD_CACHE: std::cell::RefCell<WordCache> = std::cell::RefCell::default();
}

/// Lines longer than this are encoded without the line cache.
const CACHED_LINE_BYTES: usize = 4096;
/// The line cache is cleared when its lines and tokens reach this many bytes.
const CACHED_LINES_BYTES: usize = 8 << 20;

/// Each thread's cache of encoded lines ([`ByteLevelBpe::encode_lines`]), for one engine
/// instance at a time.
#[derive(Default)]
struct LineCache {
    instance: u64,
    bytes: usize,
    lines: HashMap<Box<str>, Box<[Piece]>, BuildHasherDefault<LineHasher>>,
}

impl LineCache {
    /// Empties the cache when another engine (another vocabulary) starts using it.
    fn claim(&mut self, instance: u64) {
        if self.instance != instance {
            self.lines.clear();
            self.bytes = 0;
            self.instance = instance;
        }
    }
}

/// A hash for whole lines, eight bytes a step, the tail a byte a step.
#[derive(Default)]
struct LineHasher(u64);

impl Hasher for LineHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let word = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
            self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517C_C1B7_2722_0A95);
        }
        for &b in words.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x517C_C1B7_2722_0A95);
        }
    }
}

thread_local! {
    static LINE_CACHE: std::cell::RefCell<LineCache> = std::cell::RefCell::default();
}

/// The first safe boundary after `from` (see [`safe_boundary_but`]): right after a `\n`, at
/// an ASCII character that is not whitespace nor in `not_safe`.
fn next_safe_boundary(bytes: &[u8], from: usize, not_safe: &[u8]) -> Option<usize> {
    let mut at = from;
    while let Some(newline) = memchr::memchr(b'\n', &bytes[at..]) {
        let next = at + newline + 1;
        let &c = bytes.get(next)?;
        let space = matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
        if c.is_ascii() && !space && !not_safe.contains(&c) {
            return Some(next);
        }
        at = next;
    }
    None
}

/// Distinct ids for engine instances (0 is never used, so a fresh cache is unclaimed).
static NEXT_INSTANCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

#[derive(Default)]
struct Scratch {
    symbols: Vec<Symbol>,
    queue: BinaryHeap<Candidate>,
}

#[derive(Debug, Clone, Copy)]
struct Symbol {
    id: u32,
    prev: isize,
    next: isize,
    start: usize,
    len: usize,
}

impl Symbol {
    fn new(id: u32, start: usize, len: usize) -> Self {
        Symbol {
            id,
            prev: -1,
            next: -1,
            start,
            len,
        }
    }
}

/// Chains the symbols left to right.
fn link(symbols: &mut [Symbol]) {
    let count = symbols.len();
    for (i, symbol) in symbols.iter_mut().enumerate() {
        symbol.prev = i as isize - 1;
        symbol.next = if i + 1 < count { i as isize + 1 } else { -1 };
    }
}

#[derive(Debug, PartialEq, Eq)]
struct Candidate {
    rank: u32,
    pos: usize,
    merged: u32,
}

impl Ord for Candidate {
    // A max-heap that pops the lowest rank first, then the leftmost position.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other
            .rank
            .cmp(&self.rank)
            .then_with(|| other.pos.cmp(&self.pos))
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The last position after a `\n` whose character is ASCII non-whitespace and lies
/// before the first byte where `a` and `b` differ; 0 if there is none.
pub fn safe_boundary(a: &str, b: &str) -> usize {
    safe_boundary_but(a, b, b"")
}

/// [`safe_boundary`] where a line starting with one of `not_safe` is not a boundary (o200k's
/// pattern takes `/` after a newline into the punctuation before it).
pub fn safe_boundary_but(a: &str, b: &str, not_safe: &[u8]) -> usize {
    last_safe_boundary(
        a.as_bytes(),
        common_prefix(a.as_bytes(), b.as_bytes()),
        not_safe,
    )
}

/// [`safe_boundary_but`] of texts whose first `shared` bytes are `bytes[..shared]`.
fn last_safe_boundary(bytes: &[u8], shared: usize, not_safe: &[u8]) -> usize {
    // The character at the boundary must be shared too, hence `< shared`.
    let mut end = shared;
    while let Some(newline) = memchr::memrchr(b'\n', &bytes[..end]) {
        let at = newline + 1;
        if at < shared {
            // ASCII whitespace as `\s` has it (with vertical tab, unlike `is_ascii_whitespace`).
            let space = matches!(bytes[at], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
            if bytes[at].is_ascii() && !space && !not_safe.contains(&bytes[at]) {
                return at;
            }
        }
        end = newline;
    }
    0
}

/// The length of the prefix `a` and `b` share, compared a chunk at a time (a `memcmp`)
/// before the last, element-wise.
pub fn common_prefix<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    const CHUNK: usize = 64;
    let n = a.len().min(b.len());
    let mut at = 0;
    while at + CHUNK <= n && a[at..at + CHUNK] == b[at..at + CHUNK] {
        at += CHUNK;
    }
    at + a[at..n]
        .iter()
        .zip(&b[at..n])
        .take_while(|(x, y)| x == y)
        .count()
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// GPT-2's byte ↔ printable-character map used by byte-level vocabularies.
pub fn byte_to_char() -> [char; 256] {
    let printable = |b: u32| {
        (0x21..=0x7E).contains(&b) || (0xA1..=0xAC).contains(&b) || (0xAE..=0xFF).contains(&b)
    };
    let mut map = ['\0'; 256];
    let mut shifted = 0;
    for byte in 0..256u32 {
        // Unprintable bytes map, in order, to the characters after U+00FF.
        let c = if printable(byte) {
            byte
        } else {
            shifted += 1;
            255 + shifted
        };
        map[byte as usize] = char::from_u32(c).unwrap_or('\0');
    }
    map
}

/// The parts of `tokenizer.json` that decide encoding. Unknown fields are ignored; the
/// supported-shape checks below refuse anything that would change ids or offsets.
#[derive(Deserialize)]
struct TokenizerJson {
    #[serde(default)]
    added_tokens: Vec<AddedTokenJson>,
    normalizer: Option<serde_json::Value>,
    pre_tokenizer: Option<serde_json::Value>,
    post_processor: Option<serde_json::Value>,
    model: ModelJson,
}

#[derive(Deserialize)]
struct AddedTokenJson {
    id: u32,
    content: String,
    #[serde(default)]
    single_word: bool,
    #[serde(default)]
    lstrip: bool,
    #[serde(default)]
    rstrip: bool,
    #[serde(default)]
    normalized: bool,
}

#[derive(Deserialize)]
struct ModelJson {
    #[serde(rename = "type")]
    kind: Option<String>,
    dropout: Option<f64>,
    continuing_subword_prefix: Option<String>,
    end_of_word_suffix: Option<String>,
    #[serde(default)]
    byte_fallback: bool,
    #[serde(default)]
    ignore_merges: bool,
    vocab: HashMap<String, u32>,
    merges: Vec<MergeJson>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum MergeJson {
    Pair(String, String),
    Joined(String),
}

impl BpeParts {
    /// Extracts the parts from a `tokenizer.json`; `None` when its shape is not one this
    /// engine reproduces exactly.
    pub fn from_tokenizer_json(bytes: &[u8]) -> Option<BpeParts> {
        let json: TokenizerJson = serde_json::from_slice(bytes).ok()?;
        let model = &json.model;
        let metaspace = if model.byte_fallback {
            Some(metaspace_shape(
                json.normalizer.as_ref()?,
                json.pre_tokenizer.as_ref(),
            )?)
        } else {
            None
        };
        let (form, splits) = match metaspace {
            Some(_) => (0, Vec::new()),
            None => {
                let form = match json.normalizer.as_ref().map(normalizer_kind) {
                    None => 0,
                    Some(kind) => kind?,
                };
                (form, split_rules(json.pre_tokenizer.as_ref()?)?)
            }
        };
        // Both in one sequence: the same text, but maybe not the same alignments; not taken.
        if form == NFC | NFKC {
            return None;
        }
        let (nfc, nfkc) = (form == NFC, form == NFKC);
        if let Some(post) = &json.post_processor {
            if !leaves_plain_encoding(post) {
                return None;
            }
        }
        // `padding` and `truncation` are ignored: a server neither pads nor cuts a prompt.
        let model = json.model;
        let empty = |s: &Option<String>| s.as_deref().unwrap_or("").is_empty();
        if model.kind.as_deref().unwrap_or("BPE") != "BPE"
            || model.dropout.is_some_and(|p| p != 0.0)
            || (metaspace.is_some() && model.ignore_merges)
            || !empty(&model.continuing_subword_prefix)
            || !empty(&model.end_of_word_suffix)
        {
            return None;
        }
        let byte_ids = match metaspace {
            // A missing `<0xXX>` is never reached when it is an ASCII byte whose character
            // is a token itself (Gemini has no `<0x09>`, but has `\t`): stand that in.
            Some(_) => (0..=255u8)
                .map(|b| {
                    model
                        .vocab
                        .get(format!("<0x{b:02X}>").as_str())
                        .or_else(|| {
                            b.is_ascii()
                                .then(|| model.vocab.get(&(b as char).to_string()))?
                        })
                        .copied()
                })
                .collect::<Option<Vec<u32>>>()?,
            // Bytes that never occur in UTF-8 text may be missing (DeepSeek LLM lacks them).
            None => byte_to_char()
                .iter()
                .enumerate()
                .map(|(b, c)| {
                    let never_in_utf8 = matches!(b, 0xC0 | 0xC1 | 0xF5..=0xFF);
                    model
                        .vocab
                        .get(c.to_string().as_str())
                        .copied()
                        .or(never_in_utf8.then_some(u32::MAX))
                })
                .collect::<Option<Vec<u32>>>()?,
        };
        let mut merges = Vec::with_capacity(model.merges.len());
        for merge in &model.merges {
            let (left, right) = match merge {
                MergeJson::Pair(l, r) => (l.as_str(), r.as_str()),
                MergeJson::Joined(joined) => {
                    let mut parts = joined.split(' ');
                    let (Some(l), Some(r), None) = (parts.next(), parts.next(), parts.next())
                    else {
                        return None;
                    };
                    (l, r)
                }
            };
            let merged = format!("{left}{right}");
            merges.push((
                *model.vocab.get(left)?,
                *model.vocab.get(right)?,
                *model.vocab.get(merged.as_str())?,
            ));
        }
        let mut added = Vec::new();
        for token in &json.added_tokens {
            // A normalized added token is matched on normalized text: the same text
            // when there is no normalizer.
            if token.single_word
                || token.lstrip
                || token.rstrip
                || (token.normalized && (nfc || nfkc))
            {
                return None;
            }
            if token.content.is_empty() {
                continue;
            }
            added.push((token.content.clone(), token.id));
        }
        let size = model
            .vocab
            .values()
            .chain(added.iter().map(|(_, id)| id))
            .max()
            .map_or(0, |m| *m as usize + 1);
        let mut id_to_token = vec![String::new(); size];
        for (token, &id) in &model.vocab {
            id_to_token[id as usize] = token.clone();
        }
        for (content, id) in &added {
            id_to_token[*id as usize] = content.clone();
        }
        Some(BpeParts {
            id_to_token: id_to_token.into_iter().collect(),
            byte_ids,
            merges,
            added,
            splits,
            nfc,
            nfkc,
            ignore_merges: model.ignore_merges,
            metaspace,
            rank_is_merged_id: false,
        })
    }
}

/// The SentencePiece-style shapes: normalizer `Replace(" ", "▁")`, optionally after
/// `Prepend("▁")` (Llama 2), and no pre-tokenizer, or Gemma 3's `Split(" ")`, which finds
/// no space once they are all replaced.
fn metaspace_shape(
    normalizer: &serde_json::Value,
    pre_tokenizer: Option<&serde_json::Value>,
) -> Option<Metaspace> {
    let replace =
        serde_json::json!({"type": "Replace", "pattern": {"String": " "}, "content": "\u{2581}"});
    let prepend = serde_json::json!({"type": "Prepend", "prepend": "\u{2581}"});
    let metaspace = if *normalizer == replace {
        Metaspace { prepend: false }
    } else if normalizer.get("type")?.as_str()? == "Sequence"
        && normalizer.get("normalizers")?.as_array()? == &vec![prepend, replace]
    {
        Metaspace { prepend: true }
    } else {
        return None;
    };
    match pre_tokenizer {
        None | Some(serde_json::Value::Null) => Some(metaspace),
        Some(split)
            if *split
                == serde_json::json!({"type": "Split", "pattern": {"String": " "},
                    "behavior": "MergedWithPrevious", "invert": false}) =>
        {
            Some(metaspace)
        }
        Some(_) => None,
    }
}

const NFC: u8 = 1;
const NFKC: u8 = 2;

/// The normal forms a normalizer applies ([`NFC`], [`NFKC`] bits; 0 for an empty
/// `Sequence`, which changes nothing), `None` for anything else.
fn normalizer_kind(normalizer: &serde_json::Value) -> Option<u8> {
    match normalizer.get("type")?.as_str()? {
        "NFC" => Some(NFC),
        "NFKC" => Some(NFKC),
        "Sequence" => {
            let steps = normalizer.get("normalizers")?.as_array()?;
            let mut forms = 0;
            for step in steps {
                forms |= normalizer_kind(step)?;
            }
            // NFC twice is NFC once; NFC after NFKC (or before) changes nothing more.
            Some(forms)
        }
        _ => None,
    }
}

/// Post-processors that do nothing to an encoding without special tokens: `ByteLevel`
/// without offset trimming, `TemplateProcessing` (special tokens are added elsewhere, see
/// [`super::special`]), and `Sequence`s of those.
fn leaves_plain_encoding(post: &serde_json::Value) -> bool {
    match post.get("type").and_then(|t| t.as_str()) {
        Some("ByteLevel") => post.get("trim_offsets").and_then(|t| t.as_bool()) == Some(false),
        Some("TemplateProcessing") => true,
        Some("Sequence") => post
            .get("processors")
            .and_then(|p| p.as_array())
            .is_some_and(|steps| steps.iter().all(leaves_plain_encoding)),
        _ => false,
    }
}

/// `Sequence[Split(Regex)…, ByteLevel(no prefix space, no regex)]` → the splits.
/// `tokenizers`' ByteLevel pre-tokenizer regex (GPT-2's).
const BYTE_LEVEL_REGEX: &str =
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

fn split_rules(pre: &serde_json::Value) -> Option<Vec<SplitRule>> {
    if pre.get("type")?.as_str()? == "ByteLevel" {
        // A lone ByteLevel with its regex (claude's): the same as Split(its GPT-2 regex,
        // Isolated) before a ByteLevel without one. Absent flags take serde's defaults (true).
        let flag = |key: &str| pre.get(key).map_or(Some(true), serde_json::Value::as_bool);
        if flag("add_prefix_space")? || !flag("use_regex")? {
            return None;
        }
        return Some(vec![SplitRule {
            pattern: BYTE_LEVEL_REGEX.to_owned(),
            removed: false,
            invert: false,
            digits: false,
        }]);
    }
    if pre.get("type")?.as_str()? != "Sequence" {
        return None;
    }
    let steps = pre.get("pretokenizers")?.as_array()?;
    let (byte_level, splits) = steps.split_last()?;
    if byte_level.get("type")?.as_str()? != "ByteLevel"
        || byte_level.get("add_prefix_space")?.as_bool()?
        || byte_level.get("use_regex")?.as_bool()?
    {
        return None;
    }
    let rules = splits
        .iter()
        .map(|split| {
            // `Digits` cuts at `char::is_numeric`, which is not quite the regex `\p{N}`
            // (another Unicode version, see `digits_are_not_the_regex_number_class`).
            if split.get("type")?.as_str()? == "Digits" {
                let individual = split.get("individual_digits")?.as_bool()?;
                return Some(SplitRule {
                    pattern: if individual {
                        DIGITS_INDIVIDUAL
                    } else {
                        "contiguous"
                    }
                    .to_owned(),
                    removed: false,
                    invert: false,
                    digits: true,
                });
            }
            if split.get("type")?.as_str()? != "Split" {
                return None;
            }
            let removed = match split.get("behavior")?.as_str()? {
                "Isolated" => false,
                "Removed" => true,
                _ => return None,
            };
            Some(SplitRule {
                pattern: split.get("pattern")?.get("Regex")?.as_str()?.to_owned(),
                removed,
                invert: split.get("invert")?.as_bool()?,
                digits: false,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    (!rules.is_empty()).then_some(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_are_not_the_regex_number_class() {
        // Why `Digits` gets its own step: std's Unicode is newer than regex-syntax's.
        let number = fancy_regex::Regex::new(r"^\p{N}$").unwrap();
        let differ = (0..=0x10FFFFu32)
            .filter_map(char::from_u32)
            .filter(|c| c.is_numeric() != number.is_match(c.encode_utf8(&mut [0; 4])).unwrap())
            .count();
        assert!(differ > 0);
    }

    #[test]
    fn token_texts_hold_each_token_and_refuse_bad_ends() {
        let texts: TokenTexts = ["a", "", "Ġé", "ab"].into_iter().collect();
        assert_eq!(texts.len(), 4);
        assert_eq!(texts.iter().collect::<Vec<_>>(), ["a", "", "Ġé", "ab"]);
        assert_eq!(texts.get(2), Some("Ġé"));
        assert_eq!(texts.get(4), None);
        let (blob, ends) = texts.parts();
        assert_eq!(
            TokenTexts::from_parts(blob.to_owned(), ends.to_vec()),
            Some(texts.clone())
        );
        let blob = blob.to_owned();
        // Inside `Ġ`, out of order, short of the end, past it.
        for ends in [
            vec![1, 1, 2, 7],
            vec![1, 3, 1, 7],
            vec![1, 1, 5],
            vec![1, 1, 5, 9],
        ] {
            assert_eq!(
                TokenTexts::from_parts(blob.clone(), ends.clone()),
                None,
                "{ends:?}"
            );
        }
    }

    #[test]
    fn byte_map_is_gpt2s() {
        let map = byte_to_char();
        assert_eq!(map[b' ' as usize], 'Ġ');
        assert_eq!(map[b'\n' as usize], 'Ċ');
        assert_eq!(map[b'a' as usize], 'a');
        let distinct: std::collections::BTreeSet<char> = map.iter().copied().collect();
        assert_eq!(distinct.len(), 256);
    }
}
