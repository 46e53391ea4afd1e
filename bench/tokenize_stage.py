"""The tokenizer stage alone in Python (issue 18, target 2): `tokenizers`' `encode` on each
render of the corpus, on one thread, as bench/baseline.py calls it.

usage: tokenize_stage.py TOKENIZER_JSON RENDERS_JSONL
       tokenize_stage.py --dump CORPUS_DIR RENDERS_JSONL   (writes the Jinja2 renders)
"""
import hashlib
import json
import os
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))


def dump(corpus, out):
    from reference import render_all
    with open(out, "w", encoding="utf-8") as f:
        for name in sorted(os.listdir(corpus)):
            if name.endswith(".j2"):
                f.write(json.dumps(render_all(os.path.join(corpus, name)), ensure_ascii=False) + "\n")


def main():
    if sys.argv[1] == "--dump":
        dump(sys.argv[2], sys.argv[3])
        return
    from tokenizers import Tokenizer
    started = time.perf_counter()
    tokenizer = Tokenizer.from_file(sys.argv[1])
    loaded = time.perf_counter() - started
    with open(sys.argv[2], encoding="utf-8") as f:
        texts = [text for line in f for text in json.loads(line)]
    size = sum(len(t.encode("utf-8")) for t in texts)
    started = time.perf_counter()
    ids = [tokenizer.encode(text, add_special_tokens=False).ids for text in texts]
    seconds = time.perf_counter() - started
    digest = hashlib.sha256()
    count = 0
    for row in ids:
        digest.update(struct.pack(f"<{len(row)}I", *row))
        count += len(row)
    print(f"python tokenizers, encode per text: {size} bytes, {count} tokens, {seconds:.3f} s, "
          f"{size / seconds / 1e6:.1f} MB/s, ids sha256 {digest.hexdigest()}")
    print(f"(python: Tokenizer.from_file took {loaded:.3f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
