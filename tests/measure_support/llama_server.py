#!/usr/bin/env python3
"""A real llama.cpp server for prefixlint's `measure` tests.

Builds (once, cached under .cache/) a llama-architecture GGUF with random F16 weights that
carries the real Qwen3 tokenizer and chat template prefixlint embeds, so the server's token
counts match prefixlint's exactly. Then starts llama.cpp's own HTTP server (PyPI `xllamacpp`)
on 127.0.0.1, prints `PORT <n>` on stdout once it answers /health, and runs until killed.

With `--tokenizer DIR --pre NAME`, the model carries that folder's tokenizer.json and
tokenizer_config.json instead (a BOS-adding one such as Llama 3.1's, for the special-token
tests), with llama.cpp's pre-tokenizer NAME.

With `--pre spm`, a byte-fallback BPE tokenizer.json (Llama 2's) is written as a llama.cpp
SentencePiece (`llama`) vocabulary instead, scored by merge rank.

With `--pre wpm`, a WordPiece tokenizer.json (BERT's) is written as a llama.cpp `bert` (WPM)
vocabulary the way llama.cpp's convert_hf_to_gguf.py writes one: `▁` before word-start tokens,
`##` dropped from continuations, [BRACKETED] tokens kept; [CLS] is the BOS, [SEP] the SEP.

With `--model FILE`, that GGUF (a real model such as SmolLM2's) is served as it is.

Usage: llama_server.py [--port N] [--model-only] [--tokenizer DIR --pre NAME] [--model FILE]
       [--parallel N] [--ctx N] [--cache-ram MIB] [--slot-prompt-similarity F] [--cache-reuse N]
Recipe: shared/notes/real-server-for-tests.md.
"""

import argparse
import gzip
import hashlib
import json
import os
import socket
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TOKENIZER_GZ = REPO / "assets" / "qwen3" / "tokenizer.json.gz"
TOKENIZER_CONFIG = REPO / "assets" / "qwen3" / "tokenizer_config.json"
CACHE = REPO / ".cache" / "llama-server"
# Bump when the model layout below changes, so a stale cached file is rebuilt.
MODEL_LAYOUT = "llama-256d-4l-4h-1024ffn-f16-v1"

# A tiny model: prefill cost is what the tests measure, not output quality.
DIM, LAYERS, HEADS, FFN, CTX = 256, 4, 4, 1024, 8192


class Tokenizer:
    """The tokenizer files a model is built from, and llama.cpp's pre-tokenizer name."""

    def __init__(self, folder=None, pre="qwen2"):
        self.folder = folder
        self.pre = pre
        self.name = Path(folder).resolve().parent.name if folder else "qwen3"

    def json_bytes(self) -> bytes:
        if self.folder is None:
            return gzip.decompress(TOKENIZER_GZ.read_bytes())
        return (Path(self.folder) / "tokenizer.json").read_bytes()

    def config_bytes(self) -> bytes:
        if self.folder is None:
            return TOKENIZER_CONFIG.read_bytes()
        path = Path(self.folder) / "tokenizer_config.json"
        return path.read_bytes() if path.is_file() else b"{}"


def model_path(tokenizer: Tokenizer) -> Path:
    digest = hashlib.sha256()
    digest.update(MODEL_LAYOUT.encode())
    if tokenizer.folder is None:
        digest.update(TOKENIZER_GZ.read_bytes())
        digest.update(TOKENIZER_CONFIG.read_bytes())
        return CACHE / f"qwen3-tok-random-{digest.hexdigest()[:16]}.gguf"
    digest.update(tokenizer.pre.encode())
    digest.update(tokenizer.json_bytes())
    digest.update(tokenizer.config_bytes())
    return CACHE / f"{tokenizer.name}-tok-random-{digest.hexdigest()[:16]}.gguf"


def adds_bos(tok, config, bos_id) -> bool:
    """As the server tokenizes: the config's `add_bos_token`, else the post-processor's."""
    if isinstance(config.get("add_bos_token"), bool):
        return config["add_bos_token"]

    def walk(post):
        if not post:
            return False
        if post.get("type") == "Sequence":
            return any(walk(p) for p in post.get("processors", []))
        if post.get("type") == "TemplateProcessing":
            first = (post.get("single") or [{}])[0]
            name = first.get("SpecialToken", {}).get("id")
            return name is not None and bos_id in post["special_tokens"][name]["ids"]
        return False

    return walk(tok.get("post_processor"))


def build_model(path: Path, tokenizer: Tokenizer) -> None:
    import numpy as np
    import gguf

    tok = json.loads(tokenizer.json_bytes())
    config = json.loads(tokenizer.config_bytes())
    vocab = dict(tok["model"]["vocab"])
    added = {t["content"]: t for t in tok.get("added_tokens", [])}
    for content, t in added.items():
        vocab[content] = t["id"]
    size = max(vocab.values()) + 1
    tokens = [f"[PAD{i}]" for i in range(size)]
    types = [gguf.TokenType.UNUSED] * size
    for text, idx in vocab.items():
        tokens[idx] = text
        types[idx] = gguf.TokenType.NORMAL
    for content, t in added.items():
        types[t["id"]] = gguf.TokenType.CONTROL if t.get("special") else gguf.TokenType.USER_DEFINED
    merges = tok["model"].get("merges", [])
    merges = [m if isinstance(m, str) else " ".join(m) for m in merges]

    def token_id(name):
        value = config.get(name)
        if isinstance(value, dict):
            value = value.get("content")
        return vocab.get(value) if value else None

    # One temporary name per process: concurrent tests may build the same model at once.
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    writer = gguf.GGUFWriter(str(tmp), "llama")
    writer.add_name(f"{tokenizer.name}-tokenizer-random-weights")
    writer.add_context_length(CTX)
    writer.add_embedding_length(DIM)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(HEADS)
    writer.add_rope_dimension_count(DIM // HEADS)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_rope_freq_base(1_000_000.0)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    if tokenizer.pre == "spm":
        # SentencePiece: a merged token scores by its merge's rank (earlier = higher).
        scores = [-1e9] * size
        for rank, merge in enumerate(merges):
            merged = merge.replace(" ", "", 1)
            if merged in vocab:
                scores[vocab[merged]] = max(scores[vocab[merged]], -float(rank))
        for text, idx in vocab.items():
            if len(text) == 1:
                scores[idx] = 0.0
            if text.startswith("<0x") and len(text) == 6:
                types[idx] = gguf.TokenType.BYTE
        unk = tok["model"].get("unk_token")
        if unk in vocab:
            types[vocab[unk]] = gguf.TokenType.UNKNOWN
            writer.add_unk_token_id(vocab[unk])
        writer.add_tokenizer_model("llama")
        writer.add_token_list(tokens)
        writer.add_token_scores(scores)
        writer.add_token_types(types)
        writer.add_add_space_prefix(True)
    elif tokenizer.pre == "wpm":

        def phantom(text):
            if text.startswith("[") and text.endswith("]"):
                return text
            if text.startswith("##"):
                return text[2:]
            return "\u2581" + text

        writer.add_tokenizer_model("bert")
        writer.add_tokenizer_pre("default")
        writer.add_token_list([phantom(t) for t in tokens])
        writer.add_token_types(types)
        for key, add in [
            ("cls_token", writer.add_bos_token_id),
            ("sep_token", writer.add_sep_token_id),
            ("unk_token", writer.add_unk_token_id),
            ("mask_token", writer.add_mask_token_id),
        ]:
            if token_id(key) is not None:
                add(token_id(key))
    else:
        writer.add_tokenizer_model("gpt2")
        writer.add_tokenizer_pre(tokenizer.pre)
        writer.add_token_list(tokens)
        writer.add_token_types(types)
        writer.add_token_merges(merges)
    eos = token_id("eos_token")
    pad = token_id("pad_token")
    if eos is not None:
        writer.add_eos_token_id(eos)
    if pad is not None:
        writer.add_pad_token_id(pad)
    bos = token_id("bos_token")
    if bos is not None:
        writer.add_bos_token_id(bos)
    # Qwen3 adds no BOS; Llama 3.1 does (its post-processor), and so does its server.
    # llama.cpp's `bert` vocabulary adds [CLS] and [SEP] by its own defaults.
    if tokenizer.pre != "wpm":
        writer.add_add_bos_token(bos is not None and adds_bos(tok, config, bos))
    if config.get("chat_template"):
        writer.add_chat_template(config["chat_template"])

    rng = np.random.default_rng(0)

    def weights(*shape):
        return (rng.standard_normal(shape) * 0.02).astype(np.float16)

    writer.add_tensor("token_embd.weight", weights(size, DIM))
    writer.add_tensor("output_norm.weight", np.ones(DIM, dtype=np.float32))
    writer.add_tensor("output.weight", weights(size, DIM))
    for layer in range(LAYERS):
        p = f"blk.{layer}."
        writer.add_tensor(p + "attn_norm.weight", np.ones(DIM, dtype=np.float32))
        writer.add_tensor(p + "attn_q.weight", weights(DIM, DIM))
        writer.add_tensor(p + "attn_k.weight", weights(DIM, DIM))
        writer.add_tensor(p + "attn_v.weight", weights(DIM, DIM))
        writer.add_tensor(p + "attn_output.weight", weights(DIM, DIM))
        writer.add_tensor(p + "ffn_norm.weight", np.ones(DIM, dtype=np.float32))
        writer.add_tensor(p + "ffn_gate.weight", weights(FFN, DIM))
        writer.add_tensor(p + "ffn_up.weight", weights(FFN, DIM))
        writer.add_tensor(p + "ffn_down.weight", weights(DIM, FFN))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(tmp, path)  # atomic: a concurrent test never sees half a file


def ensure_model(tokenizer: Tokenizer) -> Path:
    path = model_path(tokenizer)
    if not path.is_file():
        CACHE.mkdir(parents=True, exist_ok=True)
        build_model(path, tokenizer)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(port: int, deadline: float) -> None:
    url = f"http://127.0.0.1:{port}/health"
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"llama.cpp server on port {port} did not become healthy")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--exit-on-stdin-eof", action="store_true")
    parser.add_argument("--model-only", action="store_true", help="build the model and exit")
    parser.add_argument("--tokenizer", help="a folder with tokenizer.json [and tokenizer_config.json]")
    parser.add_argument("--pre", default="qwen2", help="llama.cpp's pre-tokenizer name for it")
    parser.add_argument("--parallel", type=int, default=1, help="slots (n_parallel); n_ctx is shared")
    parser.add_argument("--model", help="serve this GGUF as it is (a real model) instead of building one")
    parser.add_argument(
        "--cache-ram", type=int, help="MiB of host-RAM prompt cache (llama-server --cache-ram); 0 = off"
    )
    parser.add_argument("--ctx", type=int, default=CTX, help="context tokens over all slots (llama-server -c)")
    parser.add_argument(
        "--slot-prompt-similarity", type=float, help="llama-server --slot-prompt-similarity (0.1 by default)"
    )
    parser.add_argument("--cache-reuse", type=int, help="llama-server --cache-reuse (0 by default: off)")
    args = parser.parse_args()
    path = Path(args.model) if args.model else ensure_model(Tokenizer(args.tokenizer, args.pre))
    if args.model_only:
        print(path)
        return

    import xllamacpp

    port = args.port or free_port()
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.n_ctx = args.ctx
    params.n_parallel = args.parallel
    if args.cache_ram is not None:
        params.cache_ram_mib = args.cache_ram
    if args.slot_prompt_similarity is not None:
        params.slot_prompt_similarity = args.slot_prompt_similarity
    if args.cache_reuse is not None:
        params.n_cache_reuse = args.cache_reuse
    # One thread: timings are steadier while other work shares the CPU.
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.endpoint_metrics = True
    params.endpoint_slots = True
    params.use_jinja = True
    params.warmup = False
    server = xllamacpp.Server(params)
    wait_healthy(port, time.monotonic() + 60)
    print(f"PORT {port}", flush=True)
    if args.exit_on_stdin_eof:
        # The test process holds our stdin: when it exits (even killed), stdin closes and so
        # do we, so no server outlives its tests.
        try:
            sys.stdin.buffer.read()
        except (OSError, KeyboardInterrupt):
            pass
        os._exit(0)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    del server


if __name__ == "__main__":
    sys.exit(main())
