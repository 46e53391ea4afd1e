//! `--tokenizer model.gguf`: the tokenizer a llama.cpp (or Ollama) model file carries in its
//! `tokenizer.ggml.*` metadata, tokenized as llama.cpp does.
//!
//! Only the metadata section is read (never the weights), through bounded reads: every
//! length is checked against what is left of the file before anything is allocated, so a
//! corrupt or hostile file gives a clear error instead of a huge allocation.

use super::bpe::{byte_to_char, BpeParts, MISSING_BYTE};
use super::pretokenize::SplitRule;
use super::special::SpecialTokens;
use super::spm::SpmParts;
use super::wpm::WpmParts;
use std::collections::HashMap;
use std::io::{BufReader, Read};
use std::path::Path;

/// The GGUF value types (the format's numbering).
const TYPE_U8: u32 = 0;
const TYPE_I8: u32 = 1;
const TYPE_U16: u32 = 2;
const TYPE_I16: u32 = 3;
const TYPE_U32: u32 = 4;
const TYPE_I32: u32 = 5;
const TYPE_F32: u32 = 6;
const TYPE_BOOL: u32 = 7;
const TYPE_STRING: u32 = 8;
const TYPE_ARRAY: u32 = 9;
const TYPE_U64: u32 = 10;
const TYPE_I64: u32 = 11;
const TYPE_F64: u32 = 12;

/// llama.cpp's token types (`tokenizer.ggml.token_type`).
const TOKEN_CONTROL: i64 = 3;
const TOKEN_USER_DEFINED: i64 = 4;

/// Token texts llama.cpp treats as end-of-generation control tokens, whatever their type
/// in the file (`llama_vocab::impl::load`).
const EOG_TEXTS: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
];

/// One metadata value; arrays of numbers are kept only as what the tokenizer needs.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(String),
    Texts(Vec<String>),
    Ints(Vec<i64>),
    Floats(Vec<f32>),
    /// An array this reader skipped.
    Other,
}

/// The `tokenizer.*` and `general.*` metadata of a GGUF file.
#[derive(Debug, Default)]
pub struct Metadata {
    pub values: HashMap<String, Value>,
}

impl Metadata {
    /// Reads the metadata of a GGUF file; the error says what is wrong and where.
    pub fn read(path: &Path) -> Result<Metadata, String> {
        // A regular file only: a GGUF's size bounds the read, and a FIFO could block.
        let file = crate::source::open_regular(path, "the file").map_err(|e| match e {
            crate::error::Error::Io { source, .. } => format!("cannot read: {source}"),
            other => other.to_string(),
        })?;
        let size = file
            .metadata()
            .map_err(|e| format!("cannot read: {e}"))?
            .len();
        Metadata::from_reader(BufReader::with_capacity(1 << 20, file), size)
    }

    /// Reads the metadata from `size` bytes of GGUF.
    pub fn from_reader(inner: impl Read, size: u64) -> Result<Metadata, String> {
        let mut reader = Reader {
            inner,
            left: size,
            at: 0,
        };
        let magic = reader.bytes(4, "the magic number")?;
        if magic != b"GGUF" {
            return Err("not a GGUF file (it does not start with `GGUF`)".into());
        }
        let version = reader.u32("the version")?;
        if !(2..=3).contains(&version) {
            return Err(format!(
                "GGUF version {version} is not supported (2 and 3 are)"
            ));
        }
        let _tensors = reader.u64("the tensor count")?;
        let count = reader.u64("the metadata count")?;
        // Each entry takes at least a key length, a type and a value: 13 bytes.
        if count > reader.left / 13 {
            return Err(format!(
                "the header claims {count} metadata entries, more than the file can hold"
            ));
        }
        let mut values = HashMap::new();
        for _ in 0..count {
            let key = reader.string("a metadata key")?;
            let kind = reader.u32("a value type")?;
            let keep = key.starts_with("tokenizer.") || key.starts_with("general.");
            let value = reader.value(kind, &key, keep)?;
            if keep {
                values.insert(key, value);
            }
        }
        Ok(Metadata { values })
    }

    fn get(&self, key: &str) -> Option<&Value> {
        self.values.get(key)
    }

    pub fn text(&self, key: &str) -> Option<&str> {
        match self.get(key)? {
            Value::Text(text) => Some(text),
            _ => None,
        }
    }

    fn int(&self, key: &str) -> Option<i64> {
        match self.get(key)? {
            Value::Int(n) => Some(*n),
            _ => None,
        }
    }

    fn flag(&self, key: &str) -> Option<bool> {
        match self.get(key)? {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    fn texts(&self, key: &str) -> Option<&[String]> {
        match self.get(key)? {
            Value::Texts(texts) => Some(texts),
            _ => None,
        }
    }

    fn ints(&self, key: &str) -> Option<&[i64]> {
        match self.get(key)? {
            Value::Ints(ints) => Some(ints),
            _ => None,
        }
    }

    fn floats(&self, key: &str) -> Option<&[f32]> {
        match self.get(key)? {
            Value::Floats(floats) => Some(floats),
            _ => None,
        }
    }

    /// The chat template the model ships (`tokenizer.chat_template`).
    pub fn chat_template(&self) -> Option<&str> {
        self.text("tokenizer.chat_template")
    }

    /// A token's text by id, e.g. for `bos_token` in a chat template.
    pub fn token(&self, id_key: &str) -> Option<&str> {
        let id = usize::try_from(self.int(id_key)?).ok()?;
        self.texts("tokenizer.ggml.tokens")?
            .get(id)
            .map(String::as_str)
    }
}

struct Reader<R> {
    inner: R,
    /// Bytes of the file not read yet: the bound for every length.
    left: u64,
    at: u64,
}

impl<R: Read> Reader<R> {
    fn bytes(&mut self, len: u64, what: &str) -> Result<Vec<u8>, String> {
        if len > self.left {
            return Err(format!(
                "truncated or corrupt at byte {}: {what} needs {len} bytes, {} are left",
                self.at, self.left
            ));
        }
        let mut buf = vec![0; len as usize];
        self.inner
            .read_exact(&mut buf)
            .map_err(|e| format!("cannot read at byte {}: {e}", self.at))?;
        self.left -= len;
        self.at += len;
        Ok(buf)
    }

    fn skip(&mut self, len: u64, what: &str) -> Result<(), String> {
        if len > self.left {
            return Err(format!(
                "truncated or corrupt at byte {}: {what} needs {len} bytes, {} are left",
                self.at, self.left
            ));
        }
        let copied = std::io::copy(&mut (&mut self.inner).take(len), &mut std::io::sink())
            .map_err(|e| format!("cannot read at byte {}: {e}", self.at))?;
        if copied != len {
            return Err(format!("truncated at byte {}", self.at + copied));
        }
        self.left -= len;
        self.at += len;
        Ok(())
    }

    fn fixed<const N: usize>(&mut self, what: &str) -> Result<[u8; N], String> {
        let bytes = self.bytes(N as u64, what)?;
        Ok(bytes.try_into().unwrap_or([0; N]))
    }

    fn u32(&mut self, what: &str) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.fixed(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.fixed(what)?))
    }

    fn string(&mut self, what: &str) -> Result<String, String> {
        let len = self.u64(what)?;
        let at = self.at;
        let bytes = self.bytes(len, what)?;
        String::from_utf8(bytes).map_err(|_| format!("{what} at byte {at} is not UTF-8"))
    }

    fn scalar_size(kind: u32) -> Option<u64> {
        Some(match kind {
            TYPE_U8 | TYPE_I8 | TYPE_BOOL => 1,
            TYPE_U16 | TYPE_I16 => 2,
            TYPE_U32 | TYPE_I32 | TYPE_F32 => 4,
            TYPE_U64 | TYPE_I64 | TYPE_F64 => 8,
            _ => return None,
        })
    }

    fn int(&mut self, kind: u32, what: &str) -> Result<Value, String> {
        Ok(match kind {
            TYPE_U8 => Value::Int(i64::from(self.fixed::<1>(what)?[0])),
            TYPE_I8 => Value::Int(i64::from(self.fixed::<1>(what)?[0] as i8)),
            TYPE_U16 => Value::Int(i64::from(u16::from_le_bytes(self.fixed(what)?))),
            TYPE_I16 => Value::Int(i64::from(i16::from_le_bytes(self.fixed(what)?))),
            TYPE_U32 => Value::Int(i64::from(u32::from_le_bytes(self.fixed(what)?))),
            TYPE_I32 => Value::Int(i64::from(i32::from_le_bytes(self.fixed(what)?))),
            TYPE_U64 => Value::Int(u64::from_le_bytes(self.fixed(what)?) as i64),
            TYPE_I64 => Value::Int(i64::from_le_bytes(self.fixed(what)?)),
            TYPE_F32 => Value::Float(f64::from(f32::from_le_bytes(self.fixed(what)?))),
            TYPE_F64 => Value::Float(f64::from_le_bytes(self.fixed(what)?)),
            TYPE_BOOL => Value::Bool(self.fixed::<1>(what)?[0] != 0),
            _ => return Err(format!("{what}: unknown value type {kind}")),
        })
    }

    fn value(&mut self, kind: u32, key: &str, keep: bool) -> Result<Value, String> {
        let what = format!("the value of `{key}`");
        match kind {
            TYPE_STRING => self.string(&what).map(Value::Text),
            TYPE_ARRAY => {
                let item = self.u32(&what)?;
                let count = self.u64(&what)?;
                if let Some(size) = Self::scalar_size(item) {
                    let bytes = count.checked_mul(size).ok_or_else(|| {
                        format!("{what}: an array of {count} items cannot fit in the file")
                    })?;
                    if !keep {
                        self.skip(bytes, &what)?;
                        return Ok(Value::Other);
                    }
                    if bytes > self.left {
                        return Err(format!(
                            "truncated or corrupt at byte {}: {what} needs {bytes} bytes, {} are left",
                            self.at, self.left
                        ));
                    }
                    let mut ints = Vec::new();
                    let mut floats = Vec::new();
                    for _ in 0..count {
                        match self.int(item, &what)? {
                            Value::Int(n) => ints.push(n),
                            Value::Bool(b) => ints.push(i64::from(b)),
                            Value::Float(f) => floats.push(f as f32),
                            _ => {}
                        }
                    }
                    return Ok(if matches!(item, TYPE_F32 | TYPE_F64) {
                        Value::Floats(floats)
                    } else {
                        Value::Ints(ints)
                    });
                }
                match item {
                    TYPE_STRING => {
                        // Each string takes at least its 8-byte length.
                        if count > self.left / 8 {
                            return Err(format!(
                                "{what}: an array of {count} strings cannot fit in the file"
                            ));
                        }
                        let mut texts = Vec::with_capacity(if keep { count as usize } else { 0 });
                        for _ in 0..count {
                            if keep {
                                texts.push(self.string(&what)?);
                            } else {
                                let len = self.u64(&what)?;
                                self.skip(len, &what)?;
                            }
                        }
                        Ok(if keep {
                            Value::Texts(texts)
                        } else {
                            Value::Other
                        })
                    }
                    TYPE_ARRAY => Err(format!("{what}: nested arrays are not supported")),
                    _ => Err(format!("{what}: unknown array item type {item}")),
                }
            }
            _ => self.int(kind, &what),
        }
    }
}

/// llama.cpp's pre-tokenizer regexes for a `tokenizer.ggml.pre` name (from its
/// `llm_tokenizer_bpe`), and whether that type ignores merges for whole-token words.
fn pre_tokenizer(pre: &str) -> Option<(Vec<&'static str>, bool)> {
    const LLAMA3: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
    const QWEN2: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
    const GPT2: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)";
    const GPT4O: &str = r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";
    const DEEPSEEK3: &str = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+";
    Some(match pre {
        "llama3" | "llama-v3" | "llama-bpe" | "falcon3" | "pixtral" => (vec![LLAMA3], true),
        "dbrx" | "smaug-bpe" | "chatglm-bpe" => (vec![LLAMA3], false),
        "qwen2" | "stablelm2" | "deepseek-r1-qwen" | "megrez" | "hunyuan" | "grok-2" => {
            (vec![QWEN2], false)
        }
        "gpt-4o" | "minimax-m2" => (vec![GPT4O], false),
        "deepseek-v3" => (vec![r"\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+", DEEPSEEK3], false),
        "gpt2" | "gpt-2" | "mpt" | "olmo" | "jais" | "trillion" => (vec![GPT2], false),
        "starcoder" | "refact" | "command-r" | "smollm" | "codeshell" | "exaone" | "minerva-7b" => {
            (vec![r"\p{N}", GPT2], false)
        }
        _ => return None,
    })
}

/// A GGUF's tokenizer, by vocabulary type.
pub enum Vocab {
    /// `gpt2`: byte-level BPE.
    Bpe(BpeParts),
    /// `llama`: SentencePiece.
    Spm(SpmParts),
    /// `bert`: WordPiece.
    Wpm(WpmParts),
}

/// The tokenizer and the special tokens llama.cpp adds, from GGUF metadata.
pub fn vocab(meta: &Metadata) -> Result<(Vocab, SpecialTokens), String> {
    let model = meta
        .text("tokenizer.ggml.model")
        .ok_or("no `tokenizer.ggml.model`: this GGUF carries no tokenizer")?;
    match model {
        "gpt2" => bpe_parts(meta).map(|(parts, specials)| (Vocab::Bpe(parts), specials)),
        "llama" => spm_parts(meta).map(|(parts, specials)| (Vocab::Spm(parts), specials)),
        "bert" => wpm_parts(meta).map(|(parts, specials)| (Vocab::Wpm(parts), specials)),
        _ => Err(format!(
            "tokenizer.ggml.model `{model}` is not supported yet (`gpt2`, `llama` and `bert` are)"
        )),
    }
}

/// The tokens llama.cpp splits out before tokenizing: control and user-defined ones, and
/// end-of-generation spellings it forces to control (Gemma 4 excepted for `</s>`).
fn added_tokens(tokens: &[String], types: &[i64]) -> Vec<(String, u32)> {
    let gemma4 = tokens.iter().any(|t| t == "<|tool_response>");
    let end_of_generation =
        |token: &str| EOG_TEXTS.contains(&token) && !(gemma4 && token == "</s>");
    tokens
        .iter()
        .enumerate()
        .filter(|&(id, token)| {
            let kind = types.get(id).copied().unwrap_or(1);
            !token.is_empty()
                && (kind == TOKEN_CONTROL || kind == TOKEN_USER_DEFINED || end_of_generation(token))
        })
        .map(|(id, token)| (token.clone(), id as u32))
        .collect()
}

fn special_tokens(meta: &Metadata, tokens: &[String], default_bos: bool) -> SpecialTokens {
    let add_bos = meta
        .flag("tokenizer.ggml.add_bos_token")
        .unwrap_or(default_bos);
    let add_eos = meta.flag("tokenizer.ggml.add_eos_token").unwrap_or(false);
    let id = |key: &str| {
        meta.int(key)
            .and_then(|id| u32::try_from(id).ok())
            .filter(|&id| (id as usize) < tokens.len())
    };
    let mut specials = SpecialTokens::default();
    if add_bos {
        specials.prefix.extend(id("tokenizer.ggml.bos_token_id"));
    }
    if add_eos {
        specials.suffix.extend(id("tokenizer.ggml.eos_token_id"));
    }
    specials
}

/// A `llama` (SentencePiece) vocabulary: tokens, scores and types.
fn spm_parts(meta: &Metadata) -> Result<(SpmParts, SpecialTokens), String> {
    let tokens = meta
        .texts("tokenizer.ggml.tokens")
        .ok_or("no `tokenizer.ggml.tokens` list")?;
    let scores = meta
        .floats("tokenizer.ggml.scores")
        .ok_or("no `tokenizer.ggml.scores` list")?;
    if scores.len() != tokens.len() {
        return Err(format!(
            "{} scores for {} tokens",
            scores.len(),
            tokens.len()
        ));
    }
    let types = meta.ints("tokenizer.ggml.token_type").unwrap_or(&[]);
    let parts = SpmParts {
        tokens: tokens.to_vec(),
        scores: scores.to_vec(),
        added: added_tokens(tokens, types),
        add_space_prefix: meta.flag("tokenizer.ggml.add_space_prefix").unwrap_or(true),
    };
    // SentencePiece models add BOS unless the file says otherwise.
    Ok((parts, special_tokens(meta, tokens, true)))
}

/// `pattern` with its Unicode categories as llama.cpp's tables have them: Unicode 15.1
/// (its `unicode-data.cpp`), where the regex crate knows 16.0. A letter new in 16.0 (the
/// Egyptian hieroglyphs at U+13460–U+143FF, Garay, Todhri, …) is no letter to llama.cpp, so
/// ` 𓚛` splits as ` ` + `𓚛` under DeepSeek V3's pattern, as the server splits it.
fn with_llama_cpp_unicode(pattern: &str) -> String {
    ["L", "N", "P", "S", "M"]
        .iter()
        .fold(pattern.to_owned(), |pattern, category| {
            pattern.replace(
                &format!(r"\p{{{category}}}"),
                &format!(r"[\p{{{category}}}&&\p{{Age=V15_1}}]"),
            )
        })
}

/// A `bert` (WordPiece) vocabulary in llama.cpp's phantom-space spelling. llama.cpp adds
/// [CLS] (the BOS, id 101 unless the file says) and [SEP] (102) by default.
fn wpm_parts(meta: &Metadata) -> Result<(WpmParts, SpecialTokens), String> {
    let tokens = meta
        .texts("tokenizer.ggml.tokens")
        .ok_or("no `tokenizer.ggml.tokens` list")?;
    let types = meta.ints("tokenizer.ggml.token_type").unwrap_or(&[]);
    let id = |key: &str, default: u32| {
        meta.int(key)
            .and_then(|id| u32::try_from(id).ok())
            .unwrap_or(default)
    };
    let in_vocab = |id: u32| ((id as usize) < tokens.len()).then_some(id);
    let unk = in_vocab(id("tokenizer.ggml.unknown_token_id", 100))
        .ok_or("the unknown-token id is outside the vocabulary")?;
    let lowercase = meta
        .flag("tokenizer.ggml.normalizer.lowercase")
        .unwrap_or(true);
    let parts = WpmParts {
        tokens: tokens.to_vec(),
        added: added_tokens(tokens, types),
        unk,
        lowercase,
        strip_accents: meta
            .flag("tokenizer.ggml.normalizer.strip_accents")
            .unwrap_or(lowercase),
    };
    let mut specials = SpecialTokens::default();
    if meta.flag("tokenizer.ggml.add_bos_token").unwrap_or(true) {
        specials
            .prefix
            .extend(in_vocab(id("tokenizer.ggml.bos_token_id", 101)));
    }
    if meta.flag("tokenizer.ggml.add_sep_token").unwrap_or(true) {
        specials
            .suffix
            .extend(in_vocab(id("tokenizer.ggml.seperator_token_id", 102)));
    }
    Ok((parts, specials))
}

/// The byte-level engine's parts and the special tokens llama.cpp adds, from a `gpt2`-type
/// GGUF vocabulary.
fn bpe_parts(meta: &Metadata) -> Result<(BpeParts, SpecialTokens), String> {
    let pre = meta.text("tokenizer.ggml.pre").unwrap_or("default");
    let (patterns, ignore_merges) = pre_tokenizer(pre)
        .ok_or_else(|| format!("tokenizer.ggml.pre `{pre}` is not supported yet"))?;
    let tokens = meta
        .texts("tokenizer.ggml.tokens")
        .ok_or("no `tokenizer.ggml.tokens` list")?;
    let types = meta.ints("tokenizer.ggml.token_type").unwrap_or(&[]);
    let merges = meta
        .texts("tokenizer.ggml.merges")
        .ok_or("no `tokenizer.ggml.merges` list")?;
    let ids: HashMap<&str, u32> = tokens
        .iter()
        .enumerate()
        .map(|(id, token)| (token.as_str(), id as u32))
        .collect();
    // A byte without a token is dropped, as llama.cpp does; a vocabulary with none is no
    // byte-level one.
    let byte_ids: Vec<u32> = byte_to_char()
        .iter()
        .map(|c| {
            ids.get(c.to_string().as_str())
                .copied()
                .unwrap_or(MISSING_BYTE)
        })
        .collect();
    if byte_ids.iter().all(|&id| id == MISSING_BYTE) {
        return Err("the vocabulary has no byte-level tokens".into());
    }
    let mut merge_ids = Vec::with_capacity(merges.len());
    for (n, merge) in merges.iter().enumerate() {
        let bad = || format!("merge {n} (`{merge}`) is not two tokens of the vocabulary");
        let (left, right) = merge.split_once(' ').ok_or_else(bad)?;
        let merged = format!("{left}{right}");
        merge_ids.push((
            *ids.get(left).ok_or_else(bad)?,
            *ids.get(right).ok_or_else(bad)?,
            *ids.get(merged.as_str()).ok_or_else(bad)?,
        ));
    }
    let added = added_tokens(tokens, types);
    let splits = patterns
        .into_iter()
        .map(|pattern| SplitRule {
            pattern: with_llama_cpp_unicode(pattern),
            removed: false,
            invert: false,
            digits: false,
        })
        .collect();
    let parts = BpeParts {
        id_to_token: tokens.iter().collect(),
        byte_ids,
        merges: merge_ids,
        added,
        splits,
        nfc: false,
        nfkc: false,
        ignore_merges,
        metaspace: None,
        rank_is_merged_id: false,
    };
    // llama.cpp's default for the llama3 family is to add BOS; the file's flag wins.
    let specials = special_tokens(meta, tokens, ignore_merges);
    Ok((parts, specials))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put_string(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(&(s.len() as u64).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    }

    fn header(count: u64) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend_from_slice(&3u32.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes());
        out.extend_from_slice(&count.to_le_bytes());
        out
    }

    fn read(bytes: &[u8]) -> Result<Metadata, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.gguf");
        std::fs::write(&path, bytes).unwrap();
        Metadata::read(&path)
    }

    #[test]
    fn categories_are_llama_cpp_s_unicode_15_1() {
        let (patterns, _) = pre_tokenizer("deepseek-v3").unwrap();
        let pattern = with_llama_cpp_unicode(patterns[2]);
        let re = fancy_regex::Regex::new(&pattern).unwrap();
        let pieces = |text: &str| -> Vec<String> {
            re.find_iter(text)
                .map(|m| m.unwrap().as_str().to_owned())
                .collect()
        };
        // U+1369B is a letter since Unicode 16.0 only; U+2EBF0 since 15.1.
        assert_eq!(pieces(" \u{1369B}"), vec![" "]);
        assert_eq!(pieces(" \u{2EBF0}"), vec![" \u{2EBF0}"]);
        assert_eq!(pieces(" word"), vec![" word"]);
    }

    #[test]
    fn reads_strings_ints_and_arrays() {
        let mut bytes = header(3);
        put_string(&mut bytes, "tokenizer.ggml.model");
        bytes.extend_from_slice(&TYPE_STRING.to_le_bytes());
        put_string(&mut bytes, "gpt2");
        put_string(&mut bytes, "tokenizer.ggml.token_type");
        bytes.extend_from_slice(&TYPE_ARRAY.to_le_bytes());
        bytes.extend_from_slice(&TYPE_I32.to_le_bytes());
        bytes.extend_from_slice(&2u64.to_le_bytes());
        bytes.extend_from_slice(&1i32.to_le_bytes());
        bytes.extend_from_slice(&3i32.to_le_bytes());
        put_string(&mut bytes, "llama.block_count");
        bytes.extend_from_slice(&TYPE_U32.to_le_bytes());
        bytes.extend_from_slice(&4u32.to_le_bytes());
        let meta = read(&bytes).unwrap();
        assert_eq!(meta.text("tokenizer.ggml.model"), Some("gpt2"));
        assert_eq!(meta.ints("tokenizer.ggml.token_type"), Some(&[1, 3][..]));
        assert!(
            meta.get("llama.block_count").is_none(),
            "only tokenizer keys are kept"
        );
    }

    #[test]
    fn mutated_headers_never_panic_or_overallocate() {
        let mut valid = header(2);
        put_string(&mut valid, "tokenizer.ggml.tokens");
        valid.extend_from_slice(&TYPE_ARRAY.to_le_bytes());
        valid.extend_from_slice(&TYPE_STRING.to_le_bytes());
        valid.extend_from_slice(&2u64.to_le_bytes());
        put_string(&mut valid, "a");
        put_string(&mut valid, "b");
        put_string(&mut valid, "tokenizer.ggml.scores");
        valid.extend_from_slice(&TYPE_ARRAY.to_le_bytes());
        valid.extend_from_slice(&TYPE_F32.to_le_bytes());
        valid.extend_from_slice(&2u64.to_le_bytes());
        valid.extend_from_slice(&[0; 8]);
        assert!(Metadata::from_reader(&valid[..], valid.len() as u64).is_ok());
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let mut bytes = valid.clone();
            let at = (state % bytes.len() as u64) as usize;
            bytes[at] = (state >> 32) as u8;
            let cut = ((state >> 40) as usize) % (bytes.len() + 1);
            let bytes = &bytes[..cut.max(at.min(bytes.len()))];
            // Any answer is fine; a panic or a huge allocation is not.
            let _ = Metadata::from_reader(bytes, bytes.len() as u64);
        }
    }

    #[test]
    fn corrupt_files_are_clear_errors_not_allocations() {
        assert!(read(b"GGML").unwrap_err().contains("not a GGUF"));
        assert!(read(b"GG").unwrap_err().contains("truncated"));
        assert!(read(&header(u64::MAX))
            .unwrap_err()
            .contains("more than the file"));
        let mut huge = header(1);
        huge.extend_from_slice(&u64::MAX.to_le_bytes());
        huge.extend_from_slice(&[0; 16]);
        assert!(read(&huge)
            .unwrap_err()
            .contains("truncated or corrupt at byte 32"));
        let mut array = header(1);
        put_string(&mut array, "tokenizer.ggml.tokens");
        array.extend_from_slice(&TYPE_ARRAY.to_le_bytes());
        array.extend_from_slice(&TYPE_STRING.to_le_bytes());
        array.extend_from_slice(&(u64::MAX / 2).to_le_bytes());
        array.extend_from_slice(&[0; 16]);
        assert!(read(&array).unwrap_err().contains("cannot fit"));
    }
}
