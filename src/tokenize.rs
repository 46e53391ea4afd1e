//! Stage 4: tokenize renders with the serving model's tokenizer.
//!
//! The engine sits behind [`TokenEngine`] so another implementation can be swapped in
//! and compared; [`TokenizerSpec`] says where the tokenizer comes from.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The default tokenizer: Qwen3's (Apache-2.0), embedded gzipped so `check` needs no setup.
static BUILTIN_QWEN3_GZ: &[u8] = include_bytes!("../assets/qwen3/tokenizer.json.gz");
pub const BUILTIN_NAME: &str = "builtin:qwen3";

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
    /// The token's text as the vocabulary spells it, for display.
    fn token_text(&self, id: u32) -> Option<String>;
    /// Where the tokenizer came from, for messages and cache keys.
    fn name(&self) -> &str;
}

/// Where to find a tokenizer: `--tokenizer SPEC` or `tokenizer:` in config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenizerSpec {
    Builtin,
    File(PathBuf),
    /// A Hugging Face model id, looked up in the local HF cache only (never downloaded).
    HubModel(String),
}

impl TokenizerSpec {
    pub fn parse(spec: &str) -> Result<Self> {
        let spec = spec.trim();
        if spec.is_empty() || matches!(spec, "default" | "builtin" | BUILTIN_NAME | "qwen3") {
            return Ok(TokenizerSpec::Builtin);
        }
        let path = Path::new(spec);
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
            message: "not a file, a Hugging Face model id (org/name), or `default`".into(),
            help: Some("pass a path to a tokenizer.json, e.g. --tokenizer ./tokenizer.json".into()),
        })
    }

    pub fn load(&self) -> Result<HfTokenizer> {
        match self {
            TokenizerSpec::Builtin => HfTokenizer::builtin(),
            TokenizerSpec::File(path) => HfTokenizer::from_file(path),
            TokenizerSpec::HubModel(id) => HfTokenizer::from_file(&find_in_hf_cache(id)?),
        }
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
        let bytes = std::fs::read(path).map_err(|e| Error::Tokenizer {
            spec: name.clone(),
            message: format!("cannot read: {e}"),
            help: None,
        })?;
        Self::from_json_bytes(&bytes, &name)
    }

    pub fn from_json_bytes(bytes: &[u8], name: &str) -> Result<Self> {
        let inner = tokenizers::Tokenizer::from_bytes(bytes).map_err(|e| Error::Tokenizer {
            spec: name.to_owned(),
            message: format!("not a valid tokenizer.json: {e}"),
            help: Some("pass the tokenizer.json of the model you serve".into()),
        })?;
        Ok(HfTokenizer {
            inner,
            name: name.to_owned(),
        })
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
