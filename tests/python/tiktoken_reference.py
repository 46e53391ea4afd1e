"""Encodes texts with real Python tiktoken, for tests/it/tiktoken.rs.

Usage: tiktoken_reference.py ENCODING RANKS_ZLIB < texts.json > ids.json

tiktoken downloads its rank files from OpenAI, which is unreachable here. So this script
rebuilds OpenAI's `.tiktoken` file from prefixlint's embedded ranks (assets/tiktoken/) and puts
it in a fresh TIKTOKEN_CACHE_DIR under the name tiktoken looks up for OpenAI's URL. tiktoken
then loads it only if its SHA-256 is the one tiktoken expects for OpenAI's file, and uses its
own regex and special tokens (tiktoken_ext/openai_public.py): nothing here comes from
prefixlint's code. Special tokens in the text are encoded as such (allowed_special="all").
"""
import base64
import hashlib
import json
import os
import sys
import tempfile
import zlib

name, ranks_path = sys.argv[1], sys.argv[2]
blob = zlib.decompress(open(ranks_path, "rb").read())
lines, at, rank = [], 0, 0
while at < len(blob):
    size = blob[at]
    token = blob[at + 1 : at + 1 + size]
    lines.append(f"{base64.b64encode(token).decode()} {rank}\n")
    at, rank = at + 1 + size, rank + 1

with tempfile.TemporaryDirectory() as cache:
    url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
    with open(os.path.join(cache, hashlib.sha1(url.encode()).hexdigest()), "wb") as f:
        f.write("".join(lines).encode())
    os.environ["TIKTOKEN_CACHE_DIR"] = cache
    import tiktoken

    encoding = tiktoken.get_encoding(name)
    texts = json.load(sys.stdin)
    json.dump(
        {
            "tiktoken": tiktoken.__version__,
            "ids": [encoding.encode(text, allowed_special="all") for text in texts],
        },
        sys.stdout,
    )
