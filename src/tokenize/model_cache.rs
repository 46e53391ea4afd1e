//! The on-disk cache of WordPiece and Unigram tokenizers, which the byte-level engine does
//! not run, in the flat form our own models ([`super::flat`]) load without building a map
//! or trie of the vocabulary. One file per tokenizer, named by the SHA-256 of its
//! `tokenizer.json` (as [`super::cache`]): the vocabulary as one string blob in id order,
//! its ids sorted by their bytes (plus the Unigram scores), and the rest of the file
//! (normalizer, pre-tokenizer, post-processor, decoder, added tokens, model options) as its
//! own small JSON, which `tokenizers` builds its pipeline from. A cached form is written only
//! after it encoded the probe texts exactly as the tokenizer it came from.

use super::cache::{checksum, put_strings, put_u32, put_u32s, Reader};
use super::flat::{FlatModel, FlatUnigram, FlatVocab, FlatWordPiece};
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use tokenizers::{AddedToken, DecoderWrapper, NormalizerWrapper, PostProcessorWrapper};
use tokenizers::{PreTokenizerWrapper, TokenizerImpl};

/// Bump when the layout below changes: old files are then simply not found.
const FORMAT: &str = "model-v2";
const MAGIC: &[u8; 8] = b"PLMDL\x00\x02\x00";
const WORDPIECE: u32 = 1;
const UNIGRAM: u32 = 2;
const NO_UNK: u32 = u32::MAX;

/// `tokenizers`' pipeline around our own flat model.
pub type FlatTokenizer = TokenizerImpl<
    FlatModel,
    NormalizerWrapper,
    PreTokenizerWrapper,
    PostProcessorWrapper,
    DecoderWrapper,
>;

pub fn entry_path(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{FORMAT}-{key}.bin"))
}

/// The cached form of a WordPiece or Unigram `tokenizer.json`; `None` for other models and
/// for shapes the flat models do not take (a WordPiece vocabulary whose ids are not exactly
/// 0..n).
pub fn encode(tokenizer_json: &[u8]) -> Option<Vec<u8>> {
    let mut rest: Json = serde_json::from_slice(tokenizer_json).ok()?;
    let model = rest.get_mut("model")?.as_object_mut()?;
    let mut body = Vec::new();
    match model.get("type")?.as_str()? {
        "WordPiece" => {
            let vocab = model.remove("vocab")?;
            let vocab = vocab.as_object()?;
            let mut by_id: Vec<Option<&str>> = vec![None; vocab.len()];
            for (token, id) in vocab {
                let slot = by_id.get_mut(usize::try_from(id.as_u64()?).ok()?)?;
                if slot.replace(token.as_str()).is_some() {
                    return None;
                }
            }
            let tokens: Vec<&str> = by_id.into_iter().collect::<Option<_>>()?;
            let unk = model.get("unk_token")?.as_str()?;
            let prefix = model.get("continuing_subword_prefix")?.as_str()?;
            let max = model.get("max_input_chars_per_word")?.as_u64()?;
            put_u32(&mut body, WORDPIECE);
            put_vocab(&mut body, &FlatVocab::new(&tokens)?);
            put_strings(&mut body, &[unk.to_owned(), prefix.to_owned()]);
            body.extend_from_slice(&max.to_le_bytes());
        }
        "Unigram" => {
            let vocab = model.remove("vocab")?;
            let pieces: Vec<(&str, f64)> = vocab
                .as_array()?
                .iter()
                .map(|entry| Some((entry.get(0)?.as_str()?, entry.get(1)?.as_f64()?)))
                .collect::<Option<_>>()?;
            let unk = match model.get("unk_id") {
                None | Some(Json::Null) => NO_UNK,
                Some(id) => u32::try_from(id.as_u64()?)
                    .ok()
                    .filter(|&id| id != NO_UNK)?,
            };
            let byte_fallback = match model.get("byte_fallback") {
                None => false,
                Some(b) => b.as_bool()?,
            };
            let tokens: Vec<&str> = pieces.iter().map(|(t, _)| *t).collect();
            put_u32(&mut body, UNIGRAM);
            put_vocab(&mut body, &FlatVocab::new(&tokens)?);
            for (_, score) in &pieces {
                body.extend_from_slice(&score.to_bits().to_le_bytes());
            }
            put_u32(&mut body, unk);
            body.push(u8::from(byte_fallback));
        }
        _ => return None,
    }
    put_strings(&mut body, &[serde_json::to_string(&rest).ok()?]);
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&checksum(&body).to_le_bytes());
    out.extend_from_slice(&body);
    Some(out)
}

fn put_vocab(out: &mut Vec<u8>, vocab: &FlatVocab) {
    let (blob, ends, sorted) = vocab.parts();
    put_u32(out, blob.len() as u32);
    out.extend_from_slice(blob.as_bytes());
    put_u32s(out, ends);
    put_u32s(out, sorted);
}

fn vocab(reader: &mut Reader) -> Option<FlatVocab> {
    let len = reader.u32()? as usize;
    let blob = String::from_utf8(reader.take(len)?.to_vec()).ok()?;
    let ends = reader.u32s()?;
    let sorted = reader.u32s()?;
    FlatVocab::from_parts(blob, ends, sorted)
}

/// The flat model and the rest of the file (without the vocabulary), from the cached form.
pub fn decode_parts(bytes: &[u8]) -> Option<(FlatModel, Json)> {
    let rest = bytes.strip_prefix(MAGIC.as_slice())?;
    let (sum, body) = rest.split_at_checked(8)?;
    if u64::from_le_bytes(sum.try_into().ok()?) != checksum(body) {
        return None;
    }
    let mut reader = Reader::new(body);
    let model = match reader.u32()? {
        WORDPIECE => {
            let vocab = vocab(&mut reader)?;
            let [unk_token, continuing_subword_prefix] =
                <[String; 2]>::try_from(reader.strings()?).ok()?;
            let max = u64::from_le_bytes(reader.take(8)?.try_into().ok()?);
            FlatModel::WordPiece(FlatWordPiece {
                vocab,
                unk_token,
                continuing_subword_prefix,
                max_input_chars_per_word: usize::try_from(max).ok()?,
            })
        }
        UNIGRAM => {
            let vocab = vocab(&mut reader)?;
            let raw = reader.take(vocab.len().checked_mul(8)?)?;
            let scores = raw
                .chunks_exact(8)
                .map(|c| f64::from_bits(u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))))
                .collect();
            let unk = reader.u32()?;
            let [byte_fallback] = reader.take(1)? else {
                return None;
            };
            FlatModel::Unigram(FlatUnigram::new(
                vocab,
                scores,
                (unk != NO_UNK).then_some(unk),
                *byte_fallback == 1,
            )?)
        }
        _ => return None,
    };
    let rest = rest_json(&mut reader)?;
    Some((model, rest))
}

/// Builds `tokenizers`' pipeline around the flat model, as `Tokenizer::from_bytes` builds it
/// from the JSON: the model and the pipeline first, then the added tokens in file order.
pub fn decode(bytes: &[u8]) -> Option<FlatTokenizer> {
    let (model, rest) = decode_parts(bytes)?;
    finish(model, &rest)
}

fn rest_json(reader: &mut Reader) -> Option<Json> {
    let text = reader.strings()?.pop()?;
    reader.is_empty().then_some(())?;
    serde_json::from_str(&text).ok()
}

pub fn finish(model: FlatModel, rest: &Json) -> Option<FlatTokenizer> {
    let part = |key: &str| rest.get(key).filter(|v| !v.is_null()).cloned();
    let mut tokenizer = FlatTokenizer::new(model);
    if let Some(v) = part("normalizer") {
        tokenizer
            .with_normalizer(Some(serde_json::from_value::<NormalizerWrapper>(v).ok()?))
            .ok()?;
    }
    if let Some(v) = part("pre_tokenizer") {
        tokenizer.with_pre_tokenizer(Some(serde_json::from_value::<PreTokenizerWrapper>(v).ok()?));
    }
    if let Some(v) = part("post_processor") {
        tokenizer.with_post_processor(Some(
            serde_json::from_value::<PostProcessorWrapper>(v).ok()?,
        ));
    }
    if let Some(v) = part("decoder") {
        tokenizer.with_decoder(Some(serde_json::from_value::<DecoderWrapper>(v).ok()?));
    }
    let added: Vec<AddedToken> = match part("added_tokens") {
        Some(v) => serde_json::from_value(v).ok()?,
        None => Vec::new(),
    };
    tokenizer.add_tokens(added).ok()?;
    Some(tokenizer)
}
