//! Reading a Hugging Face `config.json` into a [`KvShape`], and refusing, with the file and
//! the key named, every architecture the formula 2 × layers × kv_heads × head_dim would get
//! wrong: MLA, hybrid (mamba / linear attention), per-layer shapes, shared KV, and sliding
//! windows whose layers the config does not spell out.

use super::{KvDtype, KvShape, SlidingWindow};
use crate::error::{Error, Result};
use crate::source;
use serde_json::{Map, Value};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// What `capacity` takes from a config.json.
#[derive(Debug, Clone)]
pub struct ModelConfig {
    pub path: PathBuf,
    pub display: String,
    pub shape: KvShape,
    /// The KV dtype the config implies (engines cache K and V in the model dtype by default).
    pub dtype: Option<KvDtype>,
    /// Bytes per parameter for `--params`: the 16-bit serving precision.
    pub weight_bytes_per_param: u64,
    /// The checkpoint is quantized: parameters × 2 bytes would overstate its weights.
    pub quantized: bool,
    /// How each number was found, for the report.
    pub notes: Vec<String>,
}

/// Keys that only hybrid models (attention mixed with mamba / linear-attention / recurrent
/// layers) carry. Those layers keep a fixed-size state, not K and V per token.
const HYBRID_KEYS: [&str; 9] = [
    "layers_block_type",
    "full_attention_interval",
    "hybrid_override_pattern",
    "attn_layer_period",
    "attn_layer_offset",
    "attn_layer_indices",
    "linear_attn_config",
    "full_attn_idxs",
    "block_types",
];
const HYBRID_KEY_PREFIXES: [&str; 4] = ["mamba_", "ssm_", "linear_num_", "rwkv_"];
const HYBRID_MODEL_TYPES: [&str; 14] = [
    "mamba",
    "rwkv",
    "jamba",
    "zamba",
    "bamba",
    "falcon_h1",
    "nemotron_h",
    "granitemoehybrid",
    "lfm2",
    "qwen3_next",
    "recurrent_gemma",
    "plamo2",
    "xlstm",
    "minimax",
];
/// Model types whose `sliding_window` applies to every layer (as in their transformers code).
const ALL_LAYERS_SLIDE: [&str; 4] = ["mistral", "mixtral", "phi3", "starcoder2"];
/// Keys that give the KV head count under another name; defaulting to num_attention_heads
/// beside them would be silently wrong (multi-query attention has 1 KV head).
const OTHER_KV_HEAD_KEYS: [&str; 5] = [
    "multi_query",
    "num_kv_heads",
    "n_head_kv",
    "multi_query_group_num",
    "num_key_value_groups",
];

pub fn read_config(path: &Path) -> Result<ModelConfig> {
    let display = source::display_path(path);
    let text = source::read_text(path, &display)?;
    let mut config = parse_config(&display, &text)?;
    config.path = path.to_path_buf();
    Ok(config)
}

/// The config file's text, and where to look for keys (inside `text_config` when nested).
struct Doc<'a> {
    display: &'a str,
    text: &'a str,
    search_from: usize,
}

impl Doc<'_> {
    /// The byte range of `"key"` followed by `:`, for a labelled error.
    fn key_span(&self, key: &str) -> Option<Range<usize>> {
        let needle = format!("\"{key}\"");
        let mut from = self.search_from;
        while let Some(found) = self.text[from..].find(&needle) {
            let start = from + found;
            let end = start + needle.len();
            if self.text[end..].trim_start().starts_with(':') {
                return Some(start..end);
            }
            from = end;
        }
        None
    }

    /// An error about `key`: located at the key when it is in the file, else plain.
    fn error(&self, key: &str, message: String, label: &str, help: &str) -> Error {
        match self.key_span(key) {
            Some(span) => Error::located(
                self.display,
                self.text,
                span,
                message,
                label,
                Some(help.to_owned()),
            ),
            None => Error::input_with_help(message, help),
        }
    }

    fn missing(&self, key: &str, why: &str) -> Error {
        Error::input_with_help(
            format!("{}: no `{key}` ({why})", self.display),
            "pass --layers, --kv-heads and --head-dim instead of --model-config",
        )
    }
}

/// A positive integer under `key`; `null` counts as absent.
fn positive(doc: &Doc, obj: &Map<String, Value>, key: &str) -> Result<Option<u64>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value.as_u64().filter(|v| *v > 0).map(Some).ok_or_else(|| {
            doc.error(
                key,
                format!(
                    "{}: `{key}` must be a positive integer, found {value}",
                    doc.display
                ),
                "not a positive integer",
                "fix the config, or pass --layers, --kv-heads and --head-dim",
            )
        }),
    }
}

fn present(obj: &Map<String, Value>, key: &str) -> bool {
    !matches!(
        obj.get(key),
        None | Some(Value::Null) | Some(Value::Bool(false))
    )
}

/// Parses config.json text. `display` names the file in errors.
pub fn parse_config(display: &str, text: &str) -> Result<ModelConfig> {
    let root: Value = serde_json::from_str(text).map_err(|e| {
        let at = source::offset_of(text, e.line(), e.column());
        Error::located(
            display,
            text,
            at..at + 1,
            format!("{display} is not valid JSON: {e}"),
            "here",
            None,
        )
    })?;
    let Value::Object(top) = &root else {
        return Err(Error::input(format!(
            "{display}: a config.json is a JSON object"
        )));
    };
    let mut notes = Vec::new();
    let mut doc = Doc {
        display,
        text,
        search_from: 0,
    };

    // Multimodal configs nest the language model under `text_config`.
    let obj = match top.get("text_config") {
        Some(Value::Object(inner)) if !top.contains_key("num_hidden_layers") => {
            doc.search_from = doc.key_span("text_config").map_or(0, |s| s.end);
            notes.push(format!(
                "{display}: the language model's shape is read from `text_config`"
            ));
            inner
        }
        _ => top,
    };
    let model_type = obj
        .get("model_type")
        .or_else(|| top.get("model_type"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();

    refuse_unsupported(&doc, top, obj, &model_type)?;

    let layers = positive(&doc, obj, "num_hidden_layers")?.ok_or_else(|| {
        let alias = ["n_layer", "num_layers", "n_layers"]
            .into_iter()
            .find(|k| obj.contains_key(*k));
        match alias {
            Some(alias) => doc.missing(
                "num_hidden_layers",
                &format!("it uses `{alias}`, a layout this reader does not map"),
            ),
            None => doc.missing("num_hidden_layers", "the number of layers"),
        }
    })?;
    let attention_heads = positive(&doc, obj, "num_attention_heads")?;
    let kv_heads = match positive(&doc, obj, "num_key_value_heads")? {
        Some(kv) => kv,
        None => {
            if let Some(key) = OTHER_KV_HEAD_KEYS.iter().find(|k| present(obj, k)) {
                return Err(doc.error(
                    key,
                    format!(
                        "{display}: `{key}` sets the KV heads under a name this reader does not map, and there is no `num_key_value_heads`"
                    ),
                    "KV heads given here",
                    "pass --layers, --kv-heads and --head-dim instead of --model-config",
                ));
            }
            let heads = attention_heads.ok_or_else(|| {
                doc.missing(
                    "num_key_value_heads",
                    "nor `num_attention_heads` to default to",
                )
            })?;
            notes.push(format!(
                "no num_key_value_heads: every attention head has its own K and V (multi-head attention), kv_heads = num_attention_heads = {heads}"
            ));
            heads
        }
    };
    let head_dim = match positive(&doc, obj, "head_dim")? {
        Some(dim) => dim,
        None => {
            let heads = attention_heads
                .ok_or_else(|| doc.missing("head_dim", "nor `num_attention_heads` to derive it"))?;
            let hidden = positive(&doc, obj, "hidden_size")?
                .ok_or_else(|| doc.missing("head_dim", "nor `hidden_size` to derive it"))?;
            if hidden % heads != 0 {
                return Err(doc.error(
                    "hidden_size",
                    format!(
                        "{display}: no `head_dim`, and hidden_size {hidden} is not a multiple of num_attention_heads {heads}"
                    ),
                    "does not divide",
                    "pass --head-dim with --layers and --kv-heads",
                ));
            }
            notes.push(format!(
                "no head_dim: hidden_size / num_attention_heads = {hidden} / {heads} = {}",
                hidden / heads
            ));
            hidden / heads
        }
    };
    if let Some(v_dim) = positive(&doc, obj, "v_head_dim")? {
        if v_dim != head_dim {
            return Err(doc.error(
                "v_head_dim",
                format!("{display}: values have {v_dim} dimensions and keys {head_dim}: the formula assumes equal K and V"),
                "V differs from K",
                "pass --head-dim with the mean of the K and V head dimensions",
            ));
        }
    }

    let sliding = sliding_layers(&doc, obj, layers, &model_type, &mut notes)?;
    let shape = KvShape {
        layers,
        kv_heads,
        head_dim,
        sliding,
    };
    shape.validate(display)?;

    let (dtype, weight_bytes_per_param) = config_dtype(&doc, top, obj, &mut notes)?;
    let quantized = present(top, "quantization_config") || present(obj, "quantization_config");
    Ok(ModelConfig {
        path: PathBuf::from(display),
        display: display.to_owned(),
        shape,
        dtype,
        weight_bytes_per_param,
        quantized,
        notes,
    })
}

fn refuse_unsupported(
    doc: &Doc,
    top: &Map<String, Value>,
    obj: &Map<String, Value>,
    model_type: &str,
) -> Result<()> {
    let display = doc.display;
    if top.get("is_encoder_decoder") == Some(&Value::Bool(true)) {
        return Err(doc.error(
            "is_encoder_decoder",
            format!("{display}: an encoder-decoder model: its cross-attention cache is sized by the encoder input, which the formula does not model"),
            "encoder-decoder",
            "capacity sizes decoder-only models",
        ));
    }
    if present(obj, "kv_lora_rank") {
        let rank = &obj["kv_lora_rank"];
        return Err(doc.error(
            "kv_lora_rank",
            format!("{display}: `kv_lora_rank` = {rank}: multi-head latent attention (MLA) caches one compressed latent per token and layer, not K and V per head, so 2 × layers × kv_heads × head_dim would be wrong"),
            "MLA",
            "capacity does not model MLA; vLLM caches kv_lora_rank + qk_rope_head_dim values per token and layer",
        ));
    }
    let hybrid_key = obj.keys().find(|k| {
        HYBRID_KEYS.contains(&k.as_str()) || HYBRID_KEY_PREFIXES.iter().any(|p| k.starts_with(p))
    });
    let hybrid_type = HYBRID_MODEL_TYPES.iter().find(|t| model_type.contains(*t));
    if let Some(key) = hybrid_key {
        return Err(doc.error(
            key,
            format!("{display}: `{key}` marks a hybrid model: its mamba / linear-attention layers keep a fixed-size state, not K and V per token, so 2 × layers × kv_heads × head_dim would be wrong"),
            "hybrid layers",
            "capacity does not model hybrid caches; pass --layers with only the full-attention layers, and add the recurrent state to --overhead",
        ));
    }
    if let Some(kind) = hybrid_type {
        return Err(doc.error(
            "model_type",
            format!("{display}: model_type `{model_type}` is a hybrid or recurrent architecture ({kind}): its state is not K and V per token"),
            "hybrid model",
            "capacity does not model hybrid caches; pass --layers with only the full-attention layers, and add the recurrent state to --overhead",
        ));
    }
    if obj.get("num_key_value_heads").is_some_and(Value::is_array) || present(obj, "block_configs")
    {
        let key = if present(obj, "block_configs") {
            "block_configs"
        } else {
            "num_key_value_heads"
        };
        return Err(doc.error(
            key,
            format!("{display}: `{key}` gives each layer its own attention shape; the formula takes one shape for all layers"),
            "per-layer shapes",
            "run capacity once per group of equal layers with --layers/--kv-heads/--head-dim and add the results",
        ));
    }
    if positive(doc, obj, "num_kv_shared_layers")?.is_some() {
        return Err(doc.error(
            "num_kv_shared_layers",
            format!("{display}: some layers reuse other layers' K and V (`num_kv_shared_layers`): counting every layer would overstate the cache"),
            "shared KV",
            "pass --layers with only the layers that store their own K and V",
        ));
    }
    Ok(())
}

/// Which layers slide, and the window. Computed only where the config says it exactly:
/// `layer_types`, or a `sliding_window` on a model type whose every layer slides.
fn sliding_layers(
    doc: &Doc,
    obj: &Map<String, Value>,
    layers: u64,
    model_type: &str,
    notes: &mut Vec<String>,
) -> Result<Option<SlidingWindow>> {
    let display = doc.display;
    let window = match obj.get("sliding_window") {
        Some(Value::Bool(false)) => None,
        _ => positive(doc, obj, "sliding_window")?,
    };
    let use_sliding = obj.get("use_sliding_window").and_then(Value::as_bool);

    if let Some(types) = obj.get("layer_types").filter(|v| !v.is_null()) {
        let types = types.as_array().ok_or_else(|| {
            doc.error(
                "layer_types",
                format!("{display}: `layer_types` must be a list"),
                "not a list",
                "fix the config",
            )
        })?;
        if types.len() as u64 != layers {
            return Err(doc.error(
                "layer_types",
                format!(
                    "{display}: `layer_types` lists {} layers but num_hidden_layers is {layers}",
                    types.len()
                ),
                "length differs",
                "fix the config",
            ));
        }
        let mut sliding = 0;
        for (index, kind) in types.iter().enumerate() {
            match kind.as_str().unwrap_or("") {
                "full_attention" => {}
                "sliding_attention" => sliding += 1,
                "chunked_attention" => {
                    return Err(doc.error(
                        "layer_types",
                        format!("{display}: layer {index} is `chunked_attention`: chunked local attention keeps a chunk-aligned span that depends on the engine"),
                        "chunked attention",
                        "pass --layers with only the full-attention layers for a lower bound",
                    ))
                }
                other => {
                    return Err(doc.error(
                        "layer_types",
                        format!("{display}: layer {index} is `{other}`: a hybrid model whose non-attention layers keep a fixed-size state, not K and V per token"),
                        "hybrid layers",
                        "capacity does not model hybrid caches; pass --layers with only the full-attention layers, and add the recurrent state to --overhead",
                    ))
                }
            }
        }
        if sliding == 0 {
            return Ok(None);
        }
        let Some(window) = window else {
            return Err(doc.error(
                "layer_types",
                format!("{display}: `layer_types` has sliding_attention layers but `sliding_window` is not set"),
                "no window",
                "fix the config",
            ));
        };
        if use_sliding == Some(false) {
            return Err(doc.error(
                "use_sliding_window",
                format!("{display}: `layer_types` has sliding_attention layers but `use_sliding_window` is false"),
                "contradicts layer_types",
                "fix the config",
            ));
        }
        notes.push(format!(
            "{display}: layer_types: {sliding} sliding_attention layers (window {window}) and {} full_attention layers",
            layers - sliding
        ));
        return Ok(Some(SlidingWindow {
            layers: sliding,
            window,
        }));
    }

    if let Some(chunk) = positive(doc, obj, "attention_chunk_size")? {
        return Err(doc.error(
            "attention_chunk_size",
            format!("{display}: `attention_chunk_size` = {chunk}: chunked local attention on layers the config does not list (no `layer_types`) keeps a chunk-aligned span that depends on the engine"),
            "chunked attention",
            "pass --layers with only the full-attention layers for a lower bound",
        ));
    }
    let Some(window) = window else {
        return Ok(None);
    };
    if use_sliding == Some(false) {
        notes.push(format!(
            "{display}: sliding_window = {window} is off (use_sliding_window: false): every layer keeps the whole context"
        ));
        return Ok(None);
    }
    if use_sliding == Some(true) {
        return Err(doc.error(
            "use_sliding_window",
            format!("{display}: use_sliding_window is true: which layers slide then depends on `max_window_layers`, and engines have read that differently"),
            "sliding window on",
            "write the layers out as `layer_types`, or pass --layers/--kv-heads/--head-dim for a full-attention upper bound",
        ));
    }
    if present(obj, "sliding_window_pattern") || !ALL_LAYERS_SLIDE.contains(&model_type) {
        return Err(doc.error(
            "sliding_window",
            format!("{display}: `sliding_window` = {window} on model_type `{model_type}`, but the config does not say which layers slide (no `layer_types`)"),
            "which layers?",
            "add `layer_types` to the config, or pass --layers/--kv-heads/--head-dim for a full-attention upper bound",
        ));
    }
    notes.push(format!(
        "{display}: model_type `{model_type}` applies sliding_window = {window} to every layer"
    ));
    Ok(Some(SlidingWindow { layers, window }))
}

/// The KV dtype from `dtype`/`torch_dtype`, and the weights' bytes per parameter.
fn config_dtype(
    doc: &Doc,
    top: &Map<String, Value>,
    obj: &Map<String, Value>,
    notes: &mut Vec<String>,
) -> Result<(Option<KvDtype>, u64)> {
    let found = ["dtype", "torch_dtype"].into_iter().find_map(|key| {
        obj.get(key)
            .or_else(|| top.get(key))
            .filter(|v| !v.is_null())
            .map(|v| (key, v))
    });
    let Some((key, value)) = found else {
        return Ok((None, 2));
    };
    let name = value.as_str().unwrap_or("");
    let dtype = match name {
        "float16" | "fp16" | "half" => KvDtype::Fp16,
        "bfloat16" | "bf16" => KvDtype::Bf16,
        "float32" | "fp32" | "float" => {
            notes.push(format!(
                "{key} float32: engines serve float32 checkpoints in 16-bit by default (vLLM dtype auto, llama.cpp f16 KV), so K, V and weights are counted at 2 bytes; pass --kv-dtype fp32 and --weights otherwise"
            ));
            KvDtype::Fp16
        }
        _ => {
            return Err(doc.error(
                key,
                format!(
                    "{}: `{key}` = {value} is not a dtype capacity knows",
                    doc.display
                ),
                "unknown dtype",
                "pass --kv-dtype fp16|bf16|fp8|int8|int4",
            ))
        }
    };
    notes.push(format!("KV dtype {} from {key} {name}", dtype.name()));
    Ok((Some(dtype), 2))
}

/// The total size of the `*.safetensors` files next to a config.json, and how many there are.
pub fn safetensors_bytes(config: &Path) -> Result<Option<(u64, usize)>> {
    let dir = match config.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    let mut total: u64 = 0;
    let mut files = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "safetensors") {
            // metadata() follows symlinks: Hugging Face cache snapshots link to blobs.
            if let Ok(meta) = std::fs::metadata(&path) {
                if meta.is_file() {
                    total = total.saturating_add(meta.len());
                    files += 1;
                }
            }
        }
    }
    Ok((files > 0).then_some((total, files)))
}
