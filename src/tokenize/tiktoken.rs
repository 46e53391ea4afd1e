//! OpenAI's tiktoken encodings, `o200k_base` (GPT-4o, GPT-4.1, o-series) and `cl100k_base`
//! (GPT-4, GPT-3.5), built in and run on the byte-level BPE engine ([`super::bpe`]).
//!
//! The ranks are embedded compactly (`assets/tiktoken/README.md`). tiktoken's BPE merges, in
//! each pre-token, the adjacent pair whose joined bytes have the lowest rank, leftmost first,
//! and takes a pre-token that is itself a token whole. The engine does the same given every
//! pair that joins into a token as a merge ranked by that token's rank (= its id), with
//! `ignore_merges` and [`BpeParts::rank_is_merged_id`]. The pre-tokenizer regexes and
//! special tokens are tiktoken's own (`tiktoken_ext/openai_public.py`); `tests/it/tiktoken.rs`
//! holds the ids equal to Python `tiktoken`'s.

use super::bpe::{byte_to_char, BpeParts};
use super::pretokenize::{
    SplitRule, TIKTOKEN_CL100K_PATTERN as CL100K_PATTERN, TIKTOKEN_O200K_PATTERN as O200K_PATTERN,
};
use std::collections::HashMap;
use std::io::Read;

/// A built-in tiktoken encoding, named as `--tokenizer` takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    O200kBase,
    Cl100kBase,
}

static O200K_RANKS: &[u8] = include_bytes!("../../assets/tiktoken/o200k_base.ranks.zlib");
static CL100K_RANKS: &[u8] = include_bytes!("../../assets/tiktoken/cl100k_base.ranks.zlib");

impl Encoding {
    pub const ALL: [Encoding; 2] = [Encoding::O200kBase, Encoding::Cl100kBase];

    pub fn from_name(name: &str) -> Option<Self> {
        Encoding::ALL.into_iter().find(|e| e.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
        }
    }

    /// The SHA-256 of the embedded ranks (computed by build.rs): the cache key.
    pub fn key(self) -> &'static str {
        match self {
            Encoding::O200kBase => env!("PREFIXLINT_O200K_SHA256"),
            Encoding::Cl100kBase => env!("PREFIXLINT_CL100K_SHA256"),
        }
    }

    pub fn embedded_ranks(self) -> &'static [u8] {
        match self {
            Encoding::O200kBase => O200K_RANKS,
            Encoding::Cl100kBase => CL100K_RANKS,
        }
    }

    fn pattern(self) -> &'static str {
        match self {
            Encoding::O200kBase => O200K_PATTERN,
            Encoding::Cl100kBase => CL100K_PATTERN,
        }
    }

    pub fn special_tokens(self) -> &'static [(&'static str, u32)] {
        match self {
            Encoding::O200kBase => &[("<|endoftext|>", 199_999), ("<|endofprompt|>", 200_018)],
            Encoding::Cl100kBase => &[
                ("<|endoftext|>", 100_257),
                ("<|fim_prefix|>", 100_258),
                ("<|fim_middle|>", 100_259),
                ("<|fim_suffix|>", 100_260),
                ("<|endofprompt|>", 100_276),
            ],
        }
    }

    /// Each token's bytes, in rank order, from the embedded ranks.
    pub fn ranks(self) -> Option<Vec<Vec<u8>>> {
        let mut blob = Vec::with_capacity(2 << 20);
        flate2::read::ZlibDecoder::new(self.embedded_ranks())
            .read_to_end(&mut blob)
            .ok()?;
        let mut ranks = Vec::with_capacity(blob.len() / 7);
        let mut rest = blob.as_slice();
        while let Some((&len, tail)) = rest.split_first() {
            let token = tail.get(..usize::from(len))?;
            ranks.push(token.to_vec());
            rest = &tail[usize::from(len)..];
        }
        Some(ranks)
    }

    /// What the engine needs: tokens spelled in the byte-level alphabet, every split of a
    /// token into two tokens as a merge (in rank order), tiktoken's regex and specials.
    pub fn parts(self) -> Option<BpeParts> {
        let ranks = self.ranks()?;
        let id_of: HashMap<&[u8], u32> = ranks
            .iter()
            .enumerate()
            .map(|(rank, token)| (token.as_slice(), rank as u32))
            .collect();
        let byte_ids = (0..=255u8)
            .map(|b| id_of.get([b].as_slice()).copied())
            .collect::<Option<Vec<u32>>>()?;
        let mut merges = Vec::new();
        for (rank, token) in ranks.iter().enumerate() {
            for split in 1..token.len() {
                let (left, right) = token.split_at(split);
                if let (Some(&left), Some(&right)) = (id_of.get(left), id_of.get(right)) {
                    merges.push((left, right, rank as u32));
                }
            }
        }
        let alphabet = byte_to_char();
        let specials = self.special_tokens();
        let size = specials
            .iter()
            .map(|&(_, id)| id as usize + 1)
            .max()
            .unwrap_or(0)
            .max(ranks.len());
        let mut id_to_token = vec![String::new(); size];
        for (spelled, token) in id_to_token.iter_mut().zip(&ranks) {
            *spelled = token.iter().map(|&b| alphabet[usize::from(b)]).collect();
        }
        for &(content, id) in specials {
            id_to_token[id as usize] = content.to_owned();
        }
        Some(BpeParts {
            id_to_token: id_to_token.into_iter().collect(),
            byte_ids,
            merges,
            added: specials
                .iter()
                .map(|&(content, id)| (content.to_owned(), id))
                .collect(),
            splits: vec![SplitRule {
                pattern: self.pattern().to_owned(),
                removed: false,
                invert: false,
                digits: false,
            }],
            nfc: false,
            nfkc: false,
            ignore_merges: true,
            metaspace: None,
            rank_is_merged_id: true,
        })
    }
}

/// OpenAI's chat format is applied inside its API, never published as a template.
pub fn no_chat_template(encoding: Encoding) -> crate::error::Error {
    crate::error::Error::input_with_help(
        format!(
            "{} has no chat template: OpenAI applies its chat format inside the API",
            encoding.name()
        ),
        "pass --chat-template FILE (a .jinja template or a tokenizer_config.json)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenize::bpe::ByteLevelBpe;
    use crate::tokenize::cache;

    #[test]
    fn build_rs_keys_are_the_hashes_of_the_embedded_ranks() {
        for encoding in Encoding::ALL {
            assert_eq!(
                encoding.key(),
                cache::content_key(encoding.embedded_ranks())
            );
        }
    }

    #[test]
    fn ranks_are_complete_and_round_trip_through_the_cache_format() {
        for (encoding, count) in [
            (Encoding::O200kBase, 199_998),
            (Encoding::Cl100kBase, 100_256),
        ] {
            let parts = encoding.parts().expect("embedded ranks decode");
            assert_eq!(
                parts.id_to_token.iter().filter(|t| !t.is_empty()).count(),
                count + encoding.special_tokens().len()
            );
            assert_eq!(cache::decode(&cache::encode(&parts)).as_ref(), Some(&parts));
            assert!(ByteLevelBpe::new(parts).is_some(), "{encoding:?}");
        }
    }

    #[test]
    fn hello_world_is_tiktokens() {
        // `tiktoken.get_encoding(name).encode("Hello, world!")`.
        for (encoding, expected) in [
            (Encoding::O200kBase, vec![13225, 11, 2375, 0]),
            (Encoding::Cl100kBase, vec![9906, 11, 1917, 0]),
        ] {
            let bpe = ByteLevelBpe::new(encoding.parts().unwrap()).unwrap();
            let (mut ids, mut offsets) = (Vec::new(), Vec::new());
            bpe.encode("Hello, world!", &mut ids, &mut offsets).unwrap();
            assert_eq!(ids, expected, "{encoding:?}");
        }
    }
}
