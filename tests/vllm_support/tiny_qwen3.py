# Build a tiny random-weight Qwen3ForCausalLM beside the real Qwen3 tokenizer embedded in
# prefixlint (assets/qwen3), for the vLLM tests. No hub access, no weights committed.
# usage: python tiny_qwen3.py ASSETS_QWEN3_DIR OUT_DIR
# 2 layers, hidden 128, 2 heads, 1 KV head, head_dim 64 (vLLM's CPU attention needs head_dim in
# {32, 64, 80, ...}), float32, vocab 151,936 as the real model; about 87 MB, 10 s.
import gzip
import os
import shutil
import sys

import torch
from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
with gzip.open(os.path.join(src, "tokenizer.json.gz"), "rb") as packed, open(
    os.path.join(out, "tokenizer.json"), "wb"
) as unpacked:
    shutil.copyfileobj(packed, unpacked)
shutil.copy(os.path.join(src, "tokenizer_config.json"), os.path.join(out, "tokenizer_config.json"))

tokenizer = AutoTokenizer.from_pretrained(out)
vocab = 151936  # the real Qwen3 vocab_size (>= len(tokenizer)); rows past it are padding
assert vocab >= len(tokenizer), (vocab, len(tokenizer))
assert tokenizer.chat_template, "the Qwen3 tokenizer_config.json carries the chat template"
torch.manual_seed(0)
config = Qwen3Config(
    vocab_size=vocab,
    hidden_size=128,
    intermediate_size=256,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    head_dim=64,
    max_position_embeddings=8192,
    rope_theta=1000000.0,
    tie_word_embeddings=True,
    bos_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
    eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
    pad_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
    torch_dtype="float32",
)
Qwen3ForCausalLM(config).to(torch.float32).save_pretrained(out, safe_serialization=True)
print(f"tiny Qwen3 written to {out}", file=sys.stderr)
