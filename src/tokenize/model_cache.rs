//! The on-disk cache of WordPiece and Unigram tokenizers, which the byte-level engine does
//! not run: they stay on the `tokenizers` crate, but its loaded form is cached so a run
//! need not parse the JSON vocabulary again. One file per tokenizer, named by the SHA-256 of
//! its `tokenizer.json` (as [`super::cache`]): the vocabulary as one string blob (plus the
//! Unigram scores), and the rest of the file (normalizer, pre-tokenizer, post-processor,
//! decoder, added tokens, model options) as its own small JSON. A cached form is written
//! only after it encoded a probe text exactly as the tokenizer it came from.

use super::cache::{put_strings, put_u32, Reader};
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use tokenizers::models::unigram::Unigram;
use tokenizers::models::wordpiece::WordPiece;
use tokenizers::{AddedToken, DecoderWrapper, NormalizerWrapper, PostProcessorWrapper};
use tokenizers::{PreTokenizerWrapper, Tokenizer};

/// Bump when the layout below changes: old files are then simply not found.
const FORMAT: &str = "model-v1";
const MAGIC: &[u8; 8] = b"PLMDL\x00\x01\x00";
const WORDPIECE: u32 = 1;
const UNIGRAM: u32 = 2;

pub fn entry_path(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{FORMAT}-{key}.bin"))
}

/// The cached form of a WordPiece or Unigram `tokenizer.json`; `None` for other models.
pub fn encode(tokenizer_json: &[u8]) -> Option<Vec<u8>> {
    let mut rest: Json = serde_json::from_slice(tokenizer_json).ok()?;
    let model = rest.get_mut("model")?.as_object_mut()?;
    let mut out = MAGIC.to_vec();
    match model.get("type")?.as_str()? {
        "WordPiece" => {
            let vocab = model.remove("vocab")?;
            let mut by_id: Vec<(u32, String)> = vocab
                .as_object()?
                .iter()
                .map(|(token, id)| Some((u32::try_from(id.as_u64()?).ok()?, token.clone())))
                .collect::<Option<_>>()?;
            by_id.sort();
            put_u32(&mut out, WORDPIECE);
            let ids: Vec<u32> = by_id.iter().map(|(id, _)| *id).collect();
            let tokens: Vec<String> = by_id.into_iter().map(|(_, token)| token).collect();
            put_strings(&mut out, &tokens);
            super::cache::put_u32s(&mut out, &ids);
        }
        "Unigram" => {
            let vocab = model.remove("vocab")?;
            let pieces: Vec<(String, f64)> = vocab
                .as_array()?
                .iter()
                .map(|entry| Some((entry.get(0)?.as_str()?.to_owned(), entry.get(1)?.as_f64()?)))
                .collect::<Option<_>>()?;
            put_u32(&mut out, UNIGRAM);
            let tokens: Vec<String> = pieces.iter().map(|(t, _)| t.clone()).collect();
            put_strings(&mut out, &tokens);
            for (_, score) in &pieces {
                out.extend_from_slice(&score.to_bits().to_le_bytes());
            }
        }
        _ => return None,
    }
    put_strings(&mut out, &[serde_json::to_string(&rest).ok()?]);
    Some(out)
}

/// Builds the tokenizer from its cached form, as `Tokenizer::from_bytes` builds it from
/// the JSON: the model and the pipeline first, then the added tokens in file order.
pub fn decode(bytes: &[u8]) -> Option<Tokenizer> {
    let mut reader = Reader::new(bytes.strip_prefix(MAGIC.as_slice())?);
    let kind = reader.u32()?;
    let tokens = reader.strings()?;
    match kind {
        WORDPIECE => {
            let ids = reader.u32s()?;
            (ids.len() == tokens.len()).then_some(())?;
            let rest = rest(&mut reader)?;
            let options = rest.get("model")?;
            let vocab: ahash::AHashMap<String, u32> = tokens.into_iter().zip(ids).collect();
            let mut builder = WordPiece::builder().vocab(vocab);
            if let Some(unk) = options.get("unk_token").and_then(Json::as_str) {
                builder = builder.unk_token(unk.to_owned());
            }
            if let Some(prefix) = options
                .get("continuing_subword_prefix")
                .and_then(Json::as_str)
            {
                builder = builder.continuing_subword_prefix(prefix.to_owned());
            }
            if let Some(max) = options
                .get("max_input_chars_per_word")
                .and_then(Json::as_u64)
            {
                builder = builder.max_input_chars_per_word(max as usize);
            }
            finish(builder.build().ok()?.into(), &rest)
        }
        UNIGRAM => {
            let raw = reader.take(tokens.len().checked_mul(8)?)?;
            let scores = raw
                .chunks_exact(8)
                .map(|c| f64::from_bits(u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))));
            let vocab: Vec<(String, f64)> = tokens.into_iter().zip(scores).collect();
            let rest = rest(&mut reader)?;
            let options = rest.get("model")?;
            let unk = options
                .get("unk_id")
                .and_then(Json::as_u64)
                .map(|id| id as usize);
            let byte_fallback = options
                .get("byte_fallback")
                .and_then(Json::as_bool)
                .unwrap_or(false);
            let model = Unigram::from(vocab, unk, byte_fallback).ok()?;
            finish(model.into(), &rest)
        }
        _ => None,
    }
}

fn rest(reader: &mut Reader) -> Option<Json> {
    let text = reader.strings()?.pop()?;
    reader.is_empty().then_some(())?;
    serde_json::from_str(&text).ok()
}

fn finish(model: tokenizers::ModelWrapper, rest: &Json) -> Option<Tokenizer> {
    let part = |key: &str| rest.get(key).filter(|v| !v.is_null()).cloned();
    let mut tokenizer = Tokenizer::new(model);
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

/// Whether `cached` encodes like `reference` (ids and offsets) on `texts`.
pub fn agrees(cached: &Tokenizer, reference: &Tokenizer, texts: &[&str]) -> bool {
    texts.iter().all(
        |text| match (cached.encode(*text, false), reference.encode(*text, false)) {
            (Ok(a), Ok(b)) => a.get_ids() == b.get_ids() && a.get_offsets() == b.get_offsets(),
            _ => false,
        },
    )
}
