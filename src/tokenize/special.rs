//! The special tokens a server adds around a prompt (BOS, sometimes EOS), read from the
//! tokenizer's own configuration: the `post_processor` of `tokenizer.json` (what
//! `encode(text, add_special_tokens=True)` applies, as vLLM and TGI tokenize a prompt) and
//! `add_bos_token`/`add_eos_token` in the `tokenizer_config.json` beside it (what
//! transformers and llama.cpp's converter honour). Padding and truncation are never
//! applied: a server neither pads nor cuts a prompt.

use super::Tokens;
use serde_json::Value as Json;

/// Token ids added before and after every whole prompt.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SpecialTokens {
    pub prefix: Vec<u32>,
    pub suffix: Vec<u32>,
}

impl SpecialTokens {
    pub fn none() -> &'static SpecialTokens {
        static NONE: SpecialTokens = SpecialTokens {
            prefix: Vec::new(),
            suffix: Vec::new(),
        };
        &NONE
    }

    pub fn is_empty(&self) -> bool {
        self.prefix.is_empty() && self.suffix.is_empty()
    }

    /// Adds the tokens as a completions endpoint does: always, even when the text itself
    /// starts with the BOS text (the server then sees two BOS tokens too).
    /// They cover no text: offsets `(0, 0)` before, `(len, len)` after.
    pub fn apply(&self, tokens: &mut Tokens, text_len: usize) {
        if self.is_empty() {
            return;
        }
        splice_prefix(tokens, &self.prefix);
        for &id in &self.suffix {
            tokens.ids.push(id);
            tokens.offsets.push((text_len, text_len));
        }
    }

    /// Adds the tokens the text does not already start (end) with, as llama.cpp's chat
    /// endpoint does after a chat template wrote `bos_token` itself.
    pub fn apply_once(&self, tokens: &mut Tokens, text_len: usize) {
        if !tokens.ids.starts_with(&self.prefix) {
            splice_prefix(tokens, &self.prefix);
        }
        if !tokens.ids.ends_with(&self.suffix) {
            for &id in &self.suffix {
                tokens.ids.push(id);
                tokens.offsets.push((text_len, text_len));
            }
        }
    }

    /// What `tokenizer.json` (its post-processor) and, when given, the
    /// `tokenizer_config.json` beside it (`add_bos_token`, `add_eos_token`) say.
    pub fn from_tokenizer_files(tokenizer_json: &[u8], config: Option<&[u8]>) -> Option<Self> {
        Declared::from_tokenizer_json(tokenizer_json)?.with_config(config)
    }
}

/// What a `tokenizer.json` declares: its post-processor's tokens and the added tokens the
/// config's `bos_token`/`eos_token` name. Small, so it is cached beside the engine.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Declared {
    pub post_processor: SpecialTokens,
    pub added: Vec<(String, u32)>,
}

impl Declared {
    /// `None` only for JSON that does not parse; a post-processor this does not know adds nothing.
    pub fn from_tokenizer_json(tokenizer_json: &[u8]) -> Option<Self> {
        let json: TokenizerJsonSpecials = serde_json::from_slice(tokenizer_json).ok()?;
        Some(Declared {
            post_processor: json
                .post_processor
                .as_ref()
                .map(from_post_processor)
                .unwrap_or_default(),
            added: json
                .added_tokens
                .into_iter()
                .map(|t| (t.content, t.id))
                .collect(),
        })
    }

    /// Applies `add_bos_token`/`add_eos_token` from a `tokenizer_config.json`; `None` when
    /// that file is not JSON. A flag whose token is not an added token changes nothing.
    pub fn with_config(&self, config: Option<&[u8]>) -> Option<SpecialTokens> {
        let mut specials = self.post_processor.clone();
        let Some(config) = config else {
            return Some(specials);
        };
        let config: Json = serde_json::from_slice(config).ok()?;
        let lookup = |key: &str| {
            let content = token_content(config.get(key)?)?;
            self.added
                .iter()
                .find(|(c, _)| c == content)
                .map(|&(_, id)| id)
        };
        if let Some(add) = config.get("add_bos_token").and_then(Json::as_bool) {
            set_flag(&mut specials.prefix, lookup("bos_token"), add, true);
        }
        if let Some(add) = config.get("add_eos_token").and_then(Json::as_bool) {
            set_flag(&mut specials.suffix, lookup("eos_token"), add, false);
        }
        Some(specials)
    }
}

fn splice_prefix(tokens: &mut Tokens, prefix: &[u32]) {
    tokens.ids.splice(0..0, prefix.iter().copied());
    tokens
        .offsets
        .splice(0..0, std::iter::repeat_n((0, 0), prefix.len()));
}

/// `add_bos_token: true` adds the BOS the post-processor lacks; `false` removes it.
fn set_flag(ids: &mut Vec<u32>, token: Option<u32>, add: bool, at_start: bool) {
    let Some(token) = token else { return };
    let present = ids.contains(&token);
    if add && !present {
        if at_start {
            ids.insert(0, token);
        } else {
            ids.push(token);
        }
    } else if !add && present {
        ids.retain(|&id| id != token);
    }
}

/// `"<s>"` or `{"content": "<s>", ...}` (an AddedToken as transformers saves it).
fn token_content(value: &Json) -> Option<&str> {
    value
        .as_str()
        .or_else(|| value.get("content").and_then(Json::as_str))
}

/// The special tokens of the `single` template of a `TemplateProcessing` (also inside a
/// `Sequence`), or of `BertProcessing`/`RobertaProcessing` (`cls` … `sep`).
fn from_post_processor(post: &Json) -> SpecialTokens {
    let mut specials = SpecialTokens::default();
    match post.get("type").and_then(Json::as_str) {
        Some("Sequence") => {
            for step in post
                .get("processors")
                .and_then(Json::as_array)
                .into_iter()
                .flatten()
            {
                let inner = from_post_processor(step);
                specials.prefix.extend(inner.prefix);
                specials.suffix.extend(inner.suffix);
            }
        }
        Some("TemplateProcessing") => {
            let tokens = post.get("special_tokens");
            let mut seen_sequence = false;
            for piece in post
                .get("single")
                .and_then(Json::as_array)
                .into_iter()
                .flatten()
            {
                if piece.get("Sequence").is_some() {
                    seen_sequence = true;
                    continue;
                }
                let Some(name) = piece
                    .get("SpecialToken")
                    .and_then(|t| t.get("id"))
                    .and_then(Json::as_str)
                else {
                    continue;
                };
                let ids = tokens
                    .and_then(|t| t.get(name))
                    .and_then(|t| t.get("ids"))
                    .and_then(Json::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|id| id.as_u64().and_then(|id| u32::try_from(id).ok()));
                if seen_sequence {
                    specials.suffix.extend(ids);
                } else {
                    specials.prefix.extend(ids);
                }
            }
        }
        Some("BertProcessing" | "RobertaProcessing") => {
            let id = |key: &str| {
                post.get(key)?
                    .as_array()?
                    .get(1)?
                    .as_u64()
                    .and_then(|id| u32::try_from(id).ok())
            };
            specials.prefix.extend(id("cls"));
            specials.suffix.extend(id("sep"));
        }
        _ => {}
    }
    specials
}

#[derive(serde::Deserialize)]
struct TokenizerJsonSpecials {
    #[serde(default)]
    added_tokens: Vec<AddedToken>,
    post_processor: Option<Json>,
}

#[derive(serde::Deserialize)]
struct AddedToken {
    id: u32,
    content: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokenizer(post: Json) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "added_tokens": [{"id": 1, "content": "<s>"}, {"id": 2, "content": "</s>"}],
            "post_processor": post,
            "model": {"type": "BPE", "vocab": {"a": 3}, "merges": []},
        }))
        .unwrap()
    }

    fn template(single: Json) -> Json {
        serde_json::json!({
            "type": "TemplateProcessing",
            "single": single,
            "pair": [],
            "special_tokens": {
                "<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]},
                "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]},
            },
        })
    }

    #[test]
    fn template_processing_inside_a_sequence_gives_bos_and_eos() {
        let single = serde_json::json!([
            {"SpecialToken": {"id": "<s>", "type_id": 0}},
            {"Sequence": {"id": "A", "type_id": 0}},
            {"SpecialToken": {"id": "</s>", "type_id": 0}},
        ]);
        let post = serde_json::json!({
            "type": "Sequence",
            "processors": [{"type": "ByteLevel", "trim_offsets": false}, template(single)],
        });
        let specials = SpecialTokens::from_tokenizer_files(&tokenizer(post), None).unwrap();
        assert_eq!(specials.prefix, vec![1]);
        assert_eq!(specials.suffix, vec![2]);
    }

    #[test]
    fn the_config_flags_override_the_post_processor() {
        let single = serde_json::json!([
            {"SpecialToken": {"id": "<s>", "type_id": 0}},
            {"Sequence": {"id": "A", "type_id": 0}},
        ]);
        let json = tokenizer(template(single));
        let off = br#"{"add_bos_token": false, "bos_token": "<s>"}"#;
        let specials = SpecialTokens::from_tokenizer_files(&json, Some(off)).unwrap();
        assert!(specials.is_empty());
        let on = br#"{"add_bos_token": true, "add_eos_token": true,
            "bos_token": {"content": "<s>"}, "eos_token": "</s>"}"#;
        let plain = tokenizer(serde_json::json!({"type": "ByteLevel"}));
        let specials = SpecialTokens::from_tokenizer_files(&plain, Some(on)).unwrap();
        assert_eq!((specials.prefix, specials.suffix), (vec![1], vec![2]));
    }

    #[test]
    fn bert_processing_adds_cls_and_sep() {
        let post =
            serde_json::json!({"type": "BertProcessing", "sep": ["</s>", 2], "cls": ["<s>", 1]});
        let specials = SpecialTokens::from_tokenizer_files(&tokenizer(post), None).unwrap();
        assert_eq!((specials.prefix, specials.suffix), (vec![1], vec![2]));
    }

    #[test]
    fn apply_once_does_not_double_a_bos_the_text_wrote() {
        let specials = SpecialTokens {
            prefix: vec![1],
            suffix: vec![],
        };
        let mut tokens = Tokens {
            ids: vec![1, 3],
            offsets: vec![(0, 3), (3, 4)],
        };
        specials.apply_once(&mut tokens, 4);
        assert_eq!(tokens.ids, vec![1, 3]);
        specials.apply(&mut tokens, 4);
        assert_eq!(tokens.ids, vec![1, 1, 3]);
        assert_eq!(tokens.offsets[0], (0, 0));
    }
}
