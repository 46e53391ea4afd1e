//! Stage 4: tokenize renders with the serving model's tokenizer.
//!
//! The engine sits behind [`TokenEngine`] so another implementation can be swapped in
//! and compared; [`TokenizerSpec`] says where the tokenizer comes from.

pub mod added;
pub mod bpe;
pub mod cache;
pub mod flat;
pub mod gguf;
pub mod model_cache;
pub mod pretokenize;
pub mod special;
pub mod spm;
pub mod tiktoken;
pub mod wpm;

use crate::error::{Error, Result};
use crate::source;
use bpe::{BpeParts, ByteLevelBpe, NeedsFallback};
use special::{Declared, SpecialTokens};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The default tokenizer: Qwen3's (Apache-2.0), embedded gzipped so `check` needs no setup.
static BUILTIN_QWEN3_GZ: &[u8] = include_bytes!("../assets/qwen3/tokenizer.json.gz");
/// `cache::content_key(BUILTIN_QWEN3_GZ)`, computed by build.rs.
const BUILTIN_QWEN3_KEY: &str = env!("PREFIXLINT_BUILTIN_TOKENIZER_SHA256");
pub const BUILTIN_NAME: &str = "builtin:qwen3";

/// The largest tokenizer file read (the largest public `tokenizer.json` files are ~35 MB).
pub const MAX_TOKENIZER_BYTES: u64 = 256 * 1024 * 1024;

/// A tokenizer file's bytes: a regular file of at most [`MAX_TOKENIZER_BYTES`], never a
/// FIFO or a device (`tokenizer: /dev/zero` would read without end).
fn read_tokenizer_file(path: &Path) -> Result<Vec<u8>> {
    let name = path.display().to_string();
    source::read_bounded(path, "the file", MAX_TOKENIZER_BYTES).map_err(|e| Error::Tokenizer {
        spec: name,
        message: match e {
            Error::Io { source, .. } => format!("cannot read: {source}"),
            Error::Input { message, .. } => message,
            other => other.to_string(),
        },
        help: None,
    })
}

/// Token ids with the byte range of the text each one covers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tokens {
    pub ids: Vec<u32>,
    pub offsets: Vec<(usize, usize)>,
}

impl Tokens {
    pub fn len(&self) -> usize {
        self.ids.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

pub trait TokenEngine: Send + Sync {
    /// Encodes text without adding special tokens: templates carry their own.
    fn encode(&self, text: &str) -> Result<Tokens>;
    /// Encodes several renders of one template; engines may share work between them.
    fn encode_all(&self, texts: &[&str]) -> Result<Vec<Tokens>> {
        texts.iter().map(|text| self.encode(text)).collect()
    }
    /// The token's text as the vocabulary spells it, for display.
    fn token_text(&self, id: u32) -> Option<String>;
    /// Where the tokenizer came from, for messages and cache keys.
    fn name(&self) -> &str;
    /// The tokens the server adds around a whole prompt (BOS, …); none by default.
    fn special_tokens(&self) -> &SpecialTokens {
        SpecialTokens::none()
    }
    /// Encodes a whole prompt as the server tokenizes it: with its special tokens.
    fn encode_prompt(&self, text: &str) -> Result<Tokens> {
        let mut tokens = self.encode(text)?;
        self.special_tokens().apply(&mut tokens, text.len());
        Ok(tokens)
    }
    /// Encodes a chat template's output as a chat endpoint tokenizes it: with the special
    /// tokens the template did not write itself (llama.cpp strips a leading `bos_token`
    /// text and adds BOS; vLLM adds none and the template writes it).
    fn encode_chat(&self, text: &str) -> Result<Tokens> {
        let mut tokens = self.encode(text)?;
        self.special_tokens().apply_once(&mut tokens, text.len());
        Ok(tokens)
    }
    /// [`TokenEngine::encode_chat`] of `text` knowing an earlier text and its
    /// `encode_chat` tokens: engines that can take over the tokens of the prefix both share
    /// do (only the rest is encoded). Always equal to `encode_chat(text)`.
    fn encode_chat_after(
        &self,
        earlier: &str,
        earlier_tokens: &Tokens,
        text: &str,
    ) -> Result<Tokens> {
        let mut tokens = self.encode_after(earlier, earlier_tokens, text)?;
        self.special_tokens().apply_once(&mut tokens, text.len());
        Ok(tokens)
    }
    /// [`TokenEngine::encode`] of `text` knowing an earlier text and its tokens (a server's
    /// BOS at offset 0 allowed); by default the whole text is encoded.
    fn encode_after(&self, _earlier: &str, _earlier_tokens: &Tokens, text: &str) -> Result<Tokens> {
        self.encode(text)
    }
    /// [`TokenEngine::encode_after`] of `earlier` followed by `extension`, split where the
    /// tokens of `earlier` are taken over: how many are, and the tokens after them (offsets
    /// into the whole text); `None` where the engine takes none over. Saves copying the
    /// tokens taken over, for a reply after its prompt.
    fn encode_extension(
        &self,
        _earlier: &str,
        _earlier_tokens: &Tokens,
        _extension: &str,
    ) -> Result<Option<(usize, Tokens)>> {
        Ok(None)
    }
    /// [`TokenEngine::encode_all`] for whole prompts: with their special tokens.
    fn encode_prompts(&self, texts: &[&str]) -> Result<Vec<Tokens>> {
        let mut all = self.encode_all(texts)?;
        for (tokens, text) in all.iter_mut().zip(texts) {
            self.special_tokens().apply(tokens, text.len());
        }
        Ok(all)
    }
}

/// An engine plus the special tokens the server adds (see [`special`]).
struct WithSpecialTokens {
    inner: Box<dyn TokenEngine>,
    specials: SpecialTokens,
}

impl TokenEngine for WithSpecialTokens {
    fn encode(&self, text: &str) -> Result<Tokens> {
        self.inner.encode(text)
    }
    fn encode_all(&self, texts: &[&str]) -> Result<Vec<Tokens>> {
        self.inner.encode_all(texts)
    }
    fn encode_after(&self, earlier: &str, earlier_tokens: &Tokens, text: &str) -> Result<Tokens> {
        self.inner.encode_after(earlier, earlier_tokens, text)
    }
    fn encode_extension(
        &self,
        earlier: &str,
        earlier_tokens: &Tokens,
        extension: &str,
    ) -> Result<Option<(usize, Tokens)>> {
        self.inner
            .encode_extension(earlier, earlier_tokens, extension)
    }
    fn token_text(&self, id: u32) -> Option<String> {
        self.inner.token_text(id)
    }
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn special_tokens(&self) -> &SpecialTokens {
        &self.specials
    }
}

/// Where to find a tokenizer: `--tokenizer SPEC` or `tokenizer:` in config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenizerSpec {
    Builtin,
    File(PathBuf),
    /// A Hugging Face model id, looked up in the local HF cache only (never downloaded).
    HubModel(String),
    /// A llama.cpp model file: the tokenizer in its `tokenizer.ggml.*` metadata.
    Gguf(PathBuf),
    /// OpenAI's `o200k_base` or `cl100k_base`, built in.
    Tiktoken(tiktoken::Encoding),
}

impl TokenizerSpec {
    pub fn parse(spec: &str) -> Result<Self> {
        let spec = spec.trim();
        if spec.is_empty() || matches!(spec, "default" | "builtin" | BUILTIN_NAME | "qwen3") {
            return Ok(TokenizerSpec::Builtin);
        }
        if let Some(encoding) = tiktoken::Encoding::from_name(spec) {
            return Ok(TokenizerSpec::Tiktoken(encoding));
        }
        let path = Path::new(spec);
        if spec.to_ascii_lowercase().ends_with(".gguf") {
            return Ok(TokenizerSpec::Gguf(path.to_path_buf()));
        }
        if path.exists()
            || spec.ends_with(".json")
            || spec.starts_with('.')
            || spec.starts_with('/')
        {
            return Ok(TokenizerSpec::File(path.to_path_buf()));
        }
        let parts: Vec<&str> = spec.split('/').collect();
        if parts.len() == 2 && parts.iter().all(|p| !p.is_empty()) {
            return Ok(TokenizerSpec::HubModel(spec.to_owned()));
        }
        Err(Error::Tokenizer {
            spec: spec.to_owned(),
            message: "not a file, a Hugging Face model id (org/name), `o200k_base`, `cl100k_base` or `default`".into(),
            help: Some("pass a path to a tokenizer.json or a .gguf model, e.g. --tokenizer ./tokenizer.json".into()),
        })
    }

    /// What the results cache keys the tokenizer on, so an edited one re-checks everything:
    /// the embedded one's SHA-256, or the file whose content is the key.
    pub fn content(&self) -> Result<TokenizerContent> {
        Ok(match self {
            TokenizerSpec::Builtin => TokenizerContent::Builtin(BUILTIN_QWEN3_KEY),
            TokenizerSpec::File(path) | TokenizerSpec::Gguf(path) => {
                TokenizerContent::File(path.clone())
            }
            TokenizerSpec::HubModel(id) => TokenizerContent::File(find_in_hf_cache(id)?),
            TokenizerSpec::Tiktoken(encoding) => TokenizerContent::Builtin(encoding.key()),
        })
    }

    /// [`TokenizerSpec::load_with`] with the special tokens the server adds.
    pub fn load(&self) -> Result<Box<dyn TokenEngine>> {
        self.load_with(true)
    }

    /// Loads the fastest engine that reproduces the reference exactly: the byte-level BPE
    /// engine from its cache when the tokenizer has a supported shape, else `tokenizers`.
    /// `PREFIXLINT_ENGINE=hf` forces the reference engine (for comparisons).
    /// With `special_tokens`, whole prompts get the tokens the server adds (BOS, …);
    /// without (`--no-special-tokens`), none.
    pub fn load_with(&self, special_tokens: bool) -> Result<Box<dyn TokenEngine>> {
        self.load_with_cache(special_tokens, cache::cache_dir().as_deref())
    }

    /// [`TokenizerSpec::load_with`] with the converted-tokenizer cache in `cache_dir` (none:
    /// nothing is read or written) instead of the user cache folder: a caller (a test) names
    /// its own folder without touching the process environment.
    pub fn load_with_cache(
        &self,
        special_tokens: bool,
        cache_dir: Option<&Path>,
    ) -> Result<Box<dyn TokenEngine>> {
        if let TokenizerSpec::Gguf(path) = self {
            return Ok(Box::new(GgufTokenizer::load(path, special_tokens)?));
        }
        if let TokenizerSpec::Tiktoken(encoding) = self {
            // tiktoken adds nothing around a prompt: there is nothing to switch off.
            return Ok(Box::new(TiktokenTokenizer::load(*encoding)?));
        }
        let source = self.source()?;
        let read = ReadSource::read(&source)?;
        // The engine first: its errors say what is wrong with a broken tokenizer.json.
        let specials_from = ReadSource {
            key: read.key.clone(),
            json: None,
        };
        let engine: Box<dyn TokenEngine> =
            if std::env::var("PREFIXLINT_ENGINE").is_ok_and(|e| e == "hf") {
                Box::new(source.load_hf()?)
            } else {
                FastTokenizer::load(source.clone(), read, cache_dir)?
            };
        let specials = if special_tokens {
            specials_from.special_tokens(&source, cache_dir)?
        } else {
            SpecialTokens::default()
        };
        if specials.is_empty() {
            return Ok(engine);
        }
        Ok(Box::new(WithSpecialTokens {
            inner: engine,
            specials,
        }))
    }

    /// Loads the reference `tokenizers` engine.
    pub fn load_hf(&self) -> Result<HfTokenizer> {
        self.source()?.load_hf()
    }

    fn source(&self) -> Result<TokenizerSource> {
        Ok(match self {
            TokenizerSpec::Builtin => TokenizerSource::Builtin,
            TokenizerSpec::File(path) => TokenizerSource::File(path.clone()),
            TokenizerSpec::HubModel(id) => TokenizerSource::File(find_in_hf_cache(id)?),
            TokenizerSpec::Gguf(path) => {
                return Err(Error::Tokenizer {
                    spec: path.display().to_string(),
                    message: "a GGUF file has no tokenizer.json for the `tokenizers` engine".into(),
                    help: Some("load it with TokenizerSpec::load".into()),
                })
            }
            TokenizerSpec::Tiktoken(encoding) => {
                return Err(Error::Tokenizer {
                    spec: encoding.name().into(),
                    message:
                        "a tiktoken encoding has no tokenizer.json for the `tokenizers` engine"
                            .into(),
                    help: Some("load it with TokenizerSpec::load".into()),
                })
            }
        })
    }
}

/// Where a tokenizer's JSON is read from, again if the fallback engine is needed.
#[derive(Debug, Clone)]
enum TokenizerSource {
    Builtin,
    File(PathBuf),
}

impl TokenizerSource {
    fn name(&self) -> String {
        match self {
            TokenizerSource::Builtin => BUILTIN_NAME.to_owned(),
            TokenizerSource::File(path) => path.display().to_string(),
        }
    }

    fn json(&self) -> Result<Vec<u8>> {
        match self {
            TokenizerSource::Builtin => builtin_json(),
            TokenizerSource::File(path) => read_tokenizer_file(path),
        }
    }

    fn load_hf(&self) -> Result<HfTokenizer> {
        HfTokenizer::from_json_bytes(&self.json()?, &self.name())
    }
}

/// [`TokenizerSpec::content`].
pub enum TokenizerContent {
    /// The embedded tokenizer's SHA-256.
    Builtin(&'static str),
    File(PathBuf),
}

/// A tokenizer's content key (for the cache) and, for a file, its bytes (read once).
struct ReadSource {
    key: String,
    json: Option<Vec<u8>>,
}

impl ReadSource {
    fn read(source: &TokenizerSource) -> Result<Self> {
        // The builtin's key is the hash of its (small) gzip; a file's, of its content.
        Ok(match source {
            TokenizerSource::Builtin => ReadSource {
                key: BUILTIN_QWEN3_KEY.to_owned(),
                json: None,
            },
            TokenizerSource::File(_) => {
                let json = source.json()?;
                ReadSource {
                    key: cache::content_key(&json),
                    json: Some(json),
                }
            }
        })
    }

    /// The special tokens the server adds, from the post-processor (cached by content)
    /// and the `tokenizer_config.json` beside a file (read every time: it is small).
    fn special_tokens(
        &self,
        source: &TokenizerSource,
        dir: Option<&Path>,
    ) -> Result<SpecialTokens> {
        let TokenizerSource::File(path) = source else {
            // Qwen3 adds nothing: a ByteLevel post-processor, `add_bos_token: false`
            // (proved by `builtin_adds_no_special_tokens`).
            return Ok(SpecialTokens::default());
        };
        let cached = dir
            .and_then(|dir| {
                source::read_cached(&cache::specials_path(dir, &self.key), MAX_TOKENIZER_BYTES)
            })
            .and_then(|bytes| serde_json::from_slice::<Declared>(&bytes).ok());
        let declared = match cached {
            Some(declared) => declared,
            None => {
                // Read again only on a cold cache (the engine took the bytes).
                let json = match &self.json {
                    Some(json) => std::borrow::Cow::Borrowed(json.as_slice()),
                    None => std::borrow::Cow::Owned(source.json()?),
                };
                let declared =
                    Declared::from_tokenizer_json(&json).ok_or_else(|| Error::Tokenizer {
                        spec: source.name(),
                        message: "not a valid tokenizer.json".into(),
                        help: Some("pass the tokenizer.json of the model you serve".into()),
                    })?;
                if let (Some(dir), Ok(bytes)) = (dir, serde_json::to_vec(&declared)) {
                    cache::write(&cache::specials_path(dir, &self.key), &bytes);
                }
                declared
            }
        };
        let config_path = path.with_file_name("tokenizer_config.json");
        let config = match std::fs::symlink_metadata(&config_path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            _ => Some(read_tokenizer_file(&config_path)?),
        };
        declared
            .with_config(config.as_deref())
            .ok_or_else(|| Error::Tokenizer {
                spec: config_path.display().to_string(),
                message: "not valid JSON".into(),
                help: Some(
                    "fix or remove it, or pass --no-special-tokens to count no BOS/EOS".into(),
                ),
            })
    }
}

/// The byte-level BPE engine, with `tokenizers` as the fallback for text it refuses
/// (text that NFC changes), loaded only if such text shows up.
pub struct FastTokenizer {
    bpe: ByteLevelBpe,
    name: String,
    source: TokenizerSource,
    fallback: OnceLock<std::result::Result<HfTokenizer, String>>,
}

impl FastTokenizer {
    fn load(
        source: TokenizerSource,
        read: ReadSource,
        dir: Option<&Path>,
    ) -> Result<Box<dyn TokenEngine>> {
        let name = source.name();
        let ReadSource { key, json } = read;
        if let Some(dir) = dir {
            if let Some(bpe) =
                cache::read(&cache::entry_path(dir, &key)).and_then(ByteLevelBpe::new)
            {
                return Ok(Box::new(FastTokenizer::with(bpe, name, source, None)));
            }
            if cache::unsupported_marker(dir, &key).exists() {
                let (tokenizer, _) =
                    HfTokenizer::load_cached(&name, &key, dir, json.as_deref(), || source.json())?;
                return Ok(tokenizer);
            }
        }
        let json = match json {
            Some(json) => json,
            None => source.json()?,
        };
        let reference = HfTokenizer::from_json_bytes(&json, &name)?;
        let converted = BpeParts::from_tokenizer_json(&json)
            .and_then(ByteLevelBpe::new)
            .filter(|bpe| agrees_on_probe(bpe, &reference));
        match converted {
            Some(bpe) => {
                if let Some(dir) = dir {
                    cache::write(&cache::entry_path(dir, &key), &cache::encode(bpe.parts()));
                }
                Ok(Box::new(FastTokenizer::with(
                    bpe,
                    name,
                    source,
                    Some(reference),
                )))
            }
            None => {
                if let Some(dir) = dir {
                    cache::write(&cache::unsupported_marker(dir, &key), b"");
                    reference.store_cached(&key, dir, &json);
                }
                Ok(Box::new(reference))
            }
        }
    }

    fn with(
        bpe: ByteLevelBpe,
        name: String,
        source: TokenizerSource,
        reference: Option<HfTokenizer>,
    ) -> Self {
        let fallback = OnceLock::new();
        if let Some(reference) = reference {
            let _ = fallback.set(Ok(reference));
        }
        FastTokenizer {
            bpe,
            name,
            source,
            fallback,
        }
    }

    fn fallback(&self) -> Result<&HfTokenizer> {
        self.fallback
            .get_or_init(|| self.source.load_hf().map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|message| Error::Tokenizer {
                spec: self.name.clone(),
                message: message.clone(),
                help: None,
            })
    }
}

/// Text that exercises every stage; a converted engine must match the reference on it
/// before it is trusted and cached.
pub const PROBE_TEXT: &str = "Hello, world! It's 2026-03-14T09:26:53Z; they'll  say\t\"hi\"\n\n\
    \r\n   indented\n\u{00a0}nbsp caf\u{e9} na\u{ef}ve \u{6771}\u{4eac} \u{1F600}\u{1F469}\u{200d}\u{1F4bb} x\u{0301}\
    {\"key\": [1, 22, 333, 4444]} <<>> ---- ==== \u{2028} \u{3000}end   ";

fn agrees_on_probe(bpe: &ByteLevelBpe, reference: &HfTokenizer) -> bool {
    let added: String = bpe
        .parts()
        .added
        .iter()
        .map(|(c, _)| format!("{c} x{c}"))
        .collect();
    [
        PROBE_TEXT.to_owned(),
        added,
        format!("{PROBE_TEXT}{PROBE_TEXT}"),
    ]
    .iter()
    .all(|text| {
        let mut fast = Tokens::default();
        match bpe.encode(text, &mut fast.ids, &mut fast.offsets) {
            Ok(()) => reference.encode(text).is_ok_and(|r| r == fast),
            // Refusing is fine (the fallback handles it); disagreeing is not.
            Err(NeedsFallback) => true,
        }
    })
}

impl TokenEngine for FastTokenizer {
    fn encode(&self, text: &str) -> Result<Tokens> {
        let mut tokens = Tokens {
            ids: Vec::with_capacity(text.len() / 3),
            offsets: Vec::with_capacity(text.len() / 3),
        };
        match self.bpe.encode(text, &mut tokens.ids, &mut tokens.offsets) {
            Ok(()) => Ok(tokens),
            Err(NeedsFallback) => self.fallback()?.encode(text),
        }
    }

    fn encode_after(&self, earlier: &str, earlier_tokens: &Tokens, text: &str) -> Result<Tokens> {
        match self.bpe.encode_after(earlier, earlier_tokens, text) {
            Ok(tokens) => Ok(tokens),
            Err(NeedsFallback) => self.encode(text),
        }
    }

    fn encode_extension(
        &self,
        earlier: &str,
        earlier_tokens: &Tokens,
        extension: &str,
    ) -> Result<Option<(usize, Tokens)>> {
        Ok(self
            .bpe
            .encode_extension(earlier, earlier_tokens, extension))
    }

    fn encode_all(&self, texts: &[&str]) -> Result<Vec<Tokens>> {
        match self.bpe.encode_related(texts) {
            Ok(tokens) => Ok(tokens),
            Err(NeedsFallback) => texts.iter().map(|text| self.encode(text)).collect(),
        }
    }

    fn token_text(&self, id: u32) -> Option<String> {
        self.bpe.token_text(id)
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// OpenAI's tiktoken encodings on the byte-level engine, from the binary cache keyed by the
/// embedded ranks' hash (`bpe-v4-<sha256>.bin`, as for the default tokenizer), built from the
/// ranks on a cold cache.
pub struct TiktokenTokenizer {
    bpe: ByteLevelBpe,
    encoding: tiktoken::Encoding,
}

impl TiktokenTokenizer {
    pub fn load(encoding: tiktoken::Encoding) -> Result<Self> {
        let dir = cache::cache_dir();
        let cached = dir
            .as_ref()
            .and_then(|dir| cache::read(&cache::entry_path(dir, encoding.key())))
            .filter(|parts| parts.rank_is_merged_id)
            .and_then(ByteLevelBpe::new);
        let bpe = match cached {
            Some(bpe) => bpe,
            None => {
                let bpe = encoding
                    .parts()
                    .and_then(ByteLevelBpe::new)
                    .ok_or_else(|| Error::Tokenizer {
                        spec: encoding.name().into(),
                        message: "the embedded ranks are corrupt".into(),
                        help: None,
                    })?;
                if let Some(dir) = &dir {
                    cache::write(
                        &cache::entry_path(dir, encoding.key()),
                        &cache::encode(bpe.parts()),
                    );
                }
                bpe
            }
        };
        Ok(TiktokenTokenizer { bpe, encoding })
    }
}

impl TokenEngine for TiktokenTokenizer {
    fn encode(&self, text: &str) -> Result<Tokens> {
        let mut tokens = Tokens {
            ids: Vec::with_capacity(text.len() / 3),
            offsets: Vec::with_capacity(text.len() / 3),
        };
        // No normalizer: the engine never refuses this text.
        self.bpe
            .encode(text, &mut tokens.ids, &mut tokens.offsets)
            .map_err(|NeedsFallback| Error::Tokenizer {
                spec: self.encoding.name().into(),
                message: "the engine refused this text".into(),
                help: None,
            })?;
        Ok(tokens)
    }

    fn encode_after(&self, earlier: &str, earlier_tokens: &Tokens, text: &str) -> Result<Tokens> {
        match self.bpe.encode_after(earlier, earlier_tokens, text) {
            Ok(tokens) => Ok(tokens),
            Err(NeedsFallback) => self.encode(text),
        }
    }

    fn encode_extension(
        &self,
        earlier: &str,
        earlier_tokens: &Tokens,
        extension: &str,
    ) -> Result<Option<(usize, Tokens)>> {
        Ok(self
            .bpe
            .encode_extension(earlier, earlier_tokens, extension))
    }

    fn encode_all(&self, texts: &[&str]) -> Result<Vec<Tokens>> {
        match self.bpe.encode_related(texts) {
            Ok(tokens) => Ok(tokens),
            Err(NeedsFallback) => texts.iter().map(|text| self.encode(text)).collect(),
        }
    }

    fn token_text(&self, id: u32) -> Option<String> {
        self.bpe.token_text(id)
    }

    fn name(&self) -> &str {
        self.encoding.name()
    }
}

/// The tokenizer of a `.gguf` model, on the byte-level engine, as llama.cpp tokenizes.
pub struct GgufTokenizer {
    engine: GgufEngine,
    name: String,
    specials: SpecialTokens,
}

impl GgufTokenizer {
    pub fn load(path: &Path, special_tokens: bool) -> Result<Self> {
        let name = path.display().to_string();
        let meta = gguf::Metadata::read(path).map_err(|message| gguf_error(&name, message))?;
        GgufTokenizer::from_metadata(&meta, name, special_tokens)
    }

    /// The tokenizer of a GGUF file held in memory (`name` for messages).
    pub fn from_bytes(bytes: &[u8], name: &str, special_tokens: bool) -> Result<Self> {
        let meta = gguf::Metadata::from_reader(bytes, bytes.len() as u64)
            .map_err(|message| gguf_error(name, message))?;
        GgufTokenizer::from_metadata(&meta, name.to_owned(), special_tokens)
    }

    fn from_metadata(meta: &gguf::Metadata, name: String, special_tokens: bool) -> Result<Self> {
        let error = |message: String| gguf_error(&name, message);
        let (vocab, specials) = gguf::vocab(meta).map_err(&error)?;
        let engine = match vocab {
            gguf::Vocab::Bpe(parts) => GgufEngine::Bpe(
                ByteLevelBpe::new(parts)
                    .ok_or_else(|| error("its pre-tokenizer regex does not compile".into()))?,
            ),
            gguf::Vocab::Spm(parts) => GgufEngine::Spm(
                spm::Spm::new(parts)
                    .ok_or_else(|| error("its special tokens cannot be matched".into()))?,
            ),
            gguf::Vocab::Wpm(parts) => GgufEngine::Wpm(
                wpm::Wpm::new(parts)
                    .ok_or_else(|| error("its special tokens cannot be matched".into()))?,
            ),
        };
        Ok(GgufTokenizer {
            engine,
            name,
            specials: if special_tokens {
                specials
            } else {
                SpecialTokens::default()
            },
        })
    }
}

fn gguf_error(name: &str, message: String) -> Error {
    Error::Tokenizer {
        spec: name.to_owned(),
        message,
        help: Some(
            "pass a llama.cpp model file (GGUF v2/v3) with a `gpt2`, `llama` or `bert` tokenizer, or its tokenizer.json".into(),
        ),
    }
}

// One per loaded tokenizer: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
enum GgufEngine {
    Bpe(ByteLevelBpe),
    Spm(spm::Spm),
    Wpm(wpm::Wpm),
}

impl TokenEngine for GgufTokenizer {
    fn encode(&self, text: &str) -> Result<Tokens> {
        let cannot = |message: &str| Error::Tokenizer {
            spec: self.name.clone(),
            message: message.into(),
            help: None,
        };
        match &self.engine {
            GgufEngine::Bpe(bpe) => {
                let mut tokens = Tokens::default();
                bpe.encode(text, &mut tokens.ids, &mut tokens.offsets)
                    .map_err(|NeedsFallback| {
                        cannot("this text needs a normalizer the GGUF engine does not have")
                    })?;
                Ok(tokens)
            }
            GgufEngine::Spm(spm) => spm
                .encode(text)
                .ok_or_else(|| cannot("the vocabulary lacks a <0xXX> byte token this text needs")),
            GgufEngine::Wpm(wpm) => Ok(wpm.encode(text)),
        }
    }

    fn encode_after(&self, earlier: &str, earlier_tokens: &Tokens, text: &str) -> Result<Tokens> {
        if let GgufEngine::Bpe(bpe) = &self.engine {
            if let Ok(tokens) = bpe.encode_after(earlier, earlier_tokens, text) {
                return Ok(tokens);
            }
        }
        self.encode(text)
    }

    fn encode_extension(
        &self,
        earlier: &str,
        earlier_tokens: &Tokens,
        extension: &str,
    ) -> Result<Option<(usize, Tokens)>> {
        Ok(match &self.engine {
            GgufEngine::Bpe(bpe) => bpe.encode_extension(earlier, earlier_tokens, extension),
            _ => None,
        })
    }

    fn encode_all(&self, texts: &[&str]) -> Result<Vec<Tokens>> {
        if let GgufEngine::Bpe(bpe) = &self.engine {
            if let Ok(tokens) = bpe.encode_related(texts) {
                return Ok(tokens);
            }
        }
        texts.iter().map(|text| self.encode(text)).collect()
    }

    fn token_text(&self, id: u32) -> Option<String> {
        match &self.engine {
            GgufEngine::Bpe(bpe) => bpe.token_text(id),
            GgufEngine::Spm(spm) => spm.token_text(id),
            GgufEngine::Wpm(wpm) => wpm.token_text(id),
        }
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn special_tokens(&self) -> &SpecialTokens {
        &self.specials
    }
}

/// Finds `models--org--name/snapshots/*/tokenizer.json` under the local HF cache.
pub fn find_in_hf_cache(model_id: &str) -> Result<PathBuf> {
    let hub = hf_hub_dir();
    let dir = hub
        .join(format!("models--{}", model_id.replace('/', "--")))
        .join("snapshots");
    let mut candidates: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.path().join("tokenizer.json"))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    // Newest snapshot first, so a refreshed cache wins.
    candidates.sort_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok());
    candidates.pop().ok_or_else(|| Error::Tokenizer {
        spec: model_id.to_owned(),
        message: format!("no tokenizer.json in the local Hugging Face cache ({})", dir.display()),
        help: Some(
            "prefixlint never downloads; fetch the model once (e.g. `huggingface-cli download MODEL tokenizer.json`) or pass a path".into(),
        ),
    })
}

fn hf_hub_dir() -> PathBuf {
    if let Some(cache) = std::env::var_os("HF_HUB_CACHE") {
        return PathBuf::from(cache);
    }
    if let Some(home) = std::env::var_os("HF_HOME") {
        return PathBuf::from(home).join("hub");
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    home.join(".cache").join("huggingface").join("hub")
}

/// The Hugging Face `tokenizers` engine.
pub struct HfTokenizer {
    inner: tokenizers::Tokenizer,
    name: String,
}

impl HfTokenizer {
    pub fn builtin() -> Result<Self> {
        let json = builtin_json()?;
        Self::from_json_bytes(&json, BUILTIN_NAME)
    }

    pub fn from_file(path: &Path) -> Result<Self> {
        let name = path.display().to_string();
        let bytes = read_tokenizer_file(path)?;
        Self::from_json_bytes(&bytes, &name)
    }

    pub fn from_json_bytes(bytes: &[u8], name: &str) -> Result<Self> {
        let mut inner = tokenizers::Tokenizer::from_bytes(bytes).map_err(|e| Error::Tokenizer {
            spec: name.to_owned(),
            message: format!("not a valid tokenizer.json: {e}"),
            help: Some("pass the tokenizer.json of the model you serve".into()),
        })?;
        // A server neither pads nor truncates a prompt (a BERT tokenizer.json pads to 128).
        inner.with_padding(None);
        let _ = inner.with_truncation(None);
        Ok(HfTokenizer {
            inner,
            name: name.to_owned(),
        })
    }
}

impl HfTokenizer {
    /// A WordPiece or Unigram tokenizer from its cached flat form in `dir`
    /// ([`model_cache`], our own models in [`flat`]), else from its JSON with `tokenizers`
    /// (then cached); `true` when the cache served it.
    pub fn load_cached(
        name: &str,
        key: &str,
        dir: &Path,
        json: Option<&[u8]>,
        read_json: impl FnOnce() -> Result<Vec<u8>>,
    ) -> Result<(Box<dyn TokenEngine>, bool)> {
        let path = model_cache::entry_path(dir, key);
        if let Some(flat) = source::read_cached(&path, MAX_TOKENIZER_BYTES)
            .and_then(|bytes| FlatTokenizer::from_cached(&bytes, name))
        {
            return Ok((Box::new(flat), true));
        }
        let owned;
        let json = match json {
            Some(json) => json,
            None => {
                owned = read_json()?;
                &owned
            }
        };
        let tokenizer = HfTokenizer::from_json_bytes(json, name)?;
        tokenizer.store_cached(key, dir, json);
        Ok((Box::new(tokenizer), false))
    }

    /// Caches a WordPiece or Unigram tokenizer's flat form, if it encodes the probe texts
    /// exactly as this one.
    fn store_cached(&self, key: &str, dir: &Path, json: &[u8]) {
        let Some(bytes) = model_cache::encode(json) else {
            return;
        };
        let added: String = self
            .inner
            .get_added_tokens_decoder()
            .values()
            .map(|t| format!("{} x{}", t.content, t.content))
            .collect();
        let probes = [
            PROBE_TEXT,
            added.as_str(),
            "\u{0}\u{fffd}\u{200b}\u{e000}x\u{378}y \u{2f800}\u{4e00}\u{130}\u{1e9e}\u{fb01}\u{2163}",
        ];
        let agrees = |flat: FlatTokenizer| {
            probes
                .iter()
                .all(|text| match (flat.encode(text), self.encode(text)) {
                    (Ok(a), Ok(b)) => a == b,
                    _ => false,
                })
        };
        if FlatTokenizer::from_cached(&bytes, &self.name).is_some_and(agrees) {
            cache::write(&model_cache::entry_path(dir, key), &bytes);
        }
    }

    /// `tokenizer.json` at `path` through the flat-form cache in `dir` (as `--tokenizer`
    /// loads a WordPiece or Unigram file); `true` when the cache served it.
    pub fn from_file_cached(path: &Path, dir: &Path) -> Result<(Box<dyn TokenEngine>, bool)> {
        let name = path.display().to_string();
        let json = read_tokenizer_file(path)?;
        let key = cache::content_key(&json);
        HfTokenizer::load_cached(&name, &key, dir, Some(&json), || read_tokenizer_file(path))
    }
}

/// A WordPiece or Unigram tokenizer: our own flat model ([`flat`]), loaded from
/// [`model_cache`], with our own normalizer and pre-tokenizer where the file's are ones we
/// reproduce ([`flat::Pipeline`]), else in `tokenizers`' pipeline.
pub struct FlatTokenizer {
    inner: FlatInner,
    name: String,
}

enum FlatInner {
    Own(Box<flat::FlatEngine>),
    Pipeline(Box<model_cache::FlatTokenizer>),
}

impl FlatTokenizer {
    /// From the cached form.
    pub fn from_cached(bytes: &[u8], name: &str) -> Option<Self> {
        let (model, rest) = model_cache::decode_parts(bytes)?;
        let inner = match flat::FlatEngine::new(model.clone(), &rest) {
            Some(engine) => FlatInner::Own(Box::new(engine)),
            None => FlatInner::Pipeline(Box::new(model_cache::finish(model, &rest)?)),
        };
        Some(FlatTokenizer {
            inner,
            name: name.to_owned(),
        })
    }

    /// The flat form of a WordPiece or Unigram `tokenizer.json`, built directly (the exactness
    /// tests use it); `None` for any other model.
    pub fn from_json_bytes(json: &[u8], name: &str) -> Option<Self> {
        Self::from_cached(&model_cache::encode(json)?, name)
    }

    /// Whether our own normalizer and pre-tokenizer run (else `tokenizers`' do).
    pub fn own_pipeline(&self) -> bool {
        matches!(self.inner, FlatInner::Own(_))
    }
}

impl TokenEngine for FlatTokenizer {
    fn encode(&self, text: &str) -> Result<Tokens> {
        let failed = |e: tokenizers::Error| Error::Tokenizer {
            spec: self.name.clone(),
            message: format!("encoding failed: {e}"),
            help: None,
        };
        match &self.inner {
            FlatInner::Own(engine) => {
                let mut tokens = Tokens {
                    ids: Vec::with_capacity(text.len() / 3),
                    offsets: Vec::with_capacity(text.len() / 3),
                };
                engine.encode(text, &mut tokens).map_err(failed)?;
                Ok(tokens)
            }
            FlatInner::Pipeline(inner) => {
                let encoding = inner.encode(text, false).map_err(failed)?;
                Ok(Tokens {
                    ids: encoding.get_ids().to_vec(),
                    offsets: encoding.get_offsets().to_vec(),
                })
            }
        }
    }

    fn encode_after(&self, earlier: &str, earlier_tokens: &Tokens, text: &str) -> Result<Tokens> {
        let boundary = match &self.inner {
            FlatInner::Own(engine) => engine.safe_boundary(earlier, text),
            FlatInner::Pipeline(_) => 0,
        };
        if boundary == 0 {
            return self.encode(text);
        }
        let kept = earlier_tokens
            .offsets
            .partition_point(|&(start, _)| start < boundary);
        let rest = self.encode(&text[boundary..])?;
        let mut tokens = Tokens {
            ids: Vec::with_capacity(kept + rest.len()),
            offsets: Vec::with_capacity(kept + rest.len()),
        };
        tokens.ids.extend_from_slice(&earlier_tokens.ids[..kept]);
        tokens
            .offsets
            .extend_from_slice(&earlier_tokens.offsets[..kept]);
        tokens.ids.extend_from_slice(&rest.ids);
        tokens.offsets.extend(
            rest.offsets
                .iter()
                .map(|&(start, end)| (start + boundary, end + boundary)),
        );
        Ok(tokens)
    }

    fn encode_all(&self, texts: &[&str]) -> Result<Vec<Tokens>> {
        let Some((first, rest)) = texts.split_first() else {
            return Ok(Vec::new());
        };
        let first_tokens = self.encode(first)?;
        let mut out = Vec::with_capacity(texts.len());
        for text in rest {
            out.push(self.encode_after(first, &first_tokens, text)?);
        }
        out.insert(0, first_tokens);
        Ok(out)
    }

    fn token_text(&self, id: u32) -> Option<String> {
        match &self.inner {
            FlatInner::Own(engine) => engine.token_text(id),
            FlatInner::Pipeline(inner) => inner.id_to_token(id),
        }
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// The decompressed JSON of the embedded default tokenizer.
pub fn builtin_json() -> Result<Vec<u8>> {
    use std::io::Read;
    let mut json = Vec::with_capacity(12 << 20);
    flate2::read::GzDecoder::new(BUILTIN_QWEN3_GZ)
        .read_to_end(&mut json)
        .map_err(|e| Error::Tokenizer {
            spec: BUILTIN_NAME.into(),
            message: format!("embedded tokenizer is corrupt: {e}"),
            help: None,
        })?;
    Ok(json)
}

impl TokenEngine for HfTokenizer {
    fn encode(&self, text: &str) -> Result<Tokens> {
        let encoding = self
            .inner
            .encode(text, false)
            .map_err(|e| Error::Tokenizer {
                spec: self.name.clone(),
                message: format!("encoding failed: {e}"),
                help: None,
            })?;
        Ok(Tokens {
            ids: encoding.get_ids().to_vec(),
            offsets: encoding.get_offsets().to_vec(),
        })
    }

    fn token_text(&self, id: u32) -> Option<String> {
        self.inner.id_to_token(id)
    }

    fn name(&self) -> &str {
        &self.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_key_from_build_rs_is_the_hash_of_the_embedded_bytes() {
        assert_eq!(BUILTIN_QWEN3_KEY, cache::content_key(BUILTIN_QWEN3_GZ));
    }

    #[test]
    fn builtin_adds_no_special_tokens() {
        let json = builtin_json().expect("embedded tokenizer");
        let config = include_bytes!("../assets/qwen3/tokenizer_config.json");
        let specials = SpecialTokens::from_tokenizer_files(&json, Some(config)).expect("parses");
        assert!(specials.is_empty(), "{specials:?}");
    }
}
