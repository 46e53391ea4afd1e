//! Arbitrary bytes as a `.gguf` model file: the bounded metadata reader, then the llama.cpp
//! tokenizer built from it (`gpt2` byte-level BPE, `llama` SentencePiece, `bert` WordPiece).
//! Errors are fine; a panic, a hang or a huge allocation is not, and a tokenizer that loads
//! gives every token a byte range inside the text it encoded.

use prefixlint::tokenize::{GgufTokenizer, TokenEngine};

const TEXTS: [&str; 4] = [
    "Hello world, hello!",
    "<|endoftext|><s>[CLS] x </s>",
    "ünïcödé 123 4567\n\n\t  spaces  ",
    "",
];

pub fn run(data: &[u8]) {
    let Ok(tokenizer) = GgufTokenizer::from_bytes(data, "fuzz.gguf", true) else {
        return;
    };
    for text in TEXTS {
        for tokens in [tokenizer.encode(text), tokenizer.encode_prompt(text)]
            .into_iter()
            .flatten()
        {
            assert_eq!(tokens.ids.len(), tokens.offsets.len(), "{text:?}");
            for &(start, end) in &tokens.offsets {
                assert!(
                    start <= end && end <= text.len(),
                    "{text:?}: offset {start}..{end}"
                );
            }
        }
    }
}
