"""The straightforward reference for `prefixlint check`: Python Jinja2 + Hugging Face
`tokenizers` + the longest common prefix of token ids.

usage: reference.py TOKENIZER_JSON TEMPLATE...
Each TEMPLATE renders once per sample in NAME.samples.yaml beside it. Prints JSON:
{"templates": [{"path", "samples", "tokens": {"min", "max"}, "shared_prefix_tokens",
"recoverable_tokens"}]}.
"""
import datetime
import json
import os
import sys
from collections import Counter

import jinja2
import yaml
from tokenizers import Tokenizer

# The clock of prefixlint's render n: a fixed base moved by 1 day 1 h 1 min 1 s 7 ms per render.
BASE = datetime.datetime(2026, 3, 14, 9, 26, 53, tzinfo=datetime.timezone.utc)
STEP = datetime.timedelta(days=1, hours=1, minutes=1, seconds=1, milliseconds=7)


def clock(n):
    return BASE + STEP * n


def render_all(path):
    folder, name = os.path.split(path)
    stem = name.rsplit(".", 1)[0]
    with open(os.path.join(folder, stem + ".samples.yaml"), encoding="utf-8") as f:
        samples = yaml.safe_load(f)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(folder), undefined=jinja2.StrictUndefined)
    template = env.get_template(name)
    renders = []
    for n, context in enumerate(samples):
        at = clock(n)
        # An application passes a naive datetime; it prints as str(datetime) does.
        env.globals["now"] = lambda at=at: at.replace(tzinfo=None)
        env.globals["strftime_now"] = lambda fmt, at=at: at.strftime(fmt)
        renders.append(template.render(**context))
    return renders


def common_prefix(a, b):
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def stable_lines_after(texts, offset, stand_ins=()):
    """Lines after the one holding `offset` that occur (as a multiset) in every render,
    less the characters of the first render that `stand_ins` (sorted (start, end) ranges)
    cover: stand-ins' output is not stable text."""
    def tail_start(text):
        i = text.find("\n", offset)
        return i + 1 if i >= 0 else len(text)

    first, others = texts[0], texts[1:]
    counts = [Counter(t[tail_start(t):].splitlines(keepends=True)) for t in others]
    stable = []
    at = tail_start(first)
    for line in first[at:].splitlines(keepends=True):
        if all(c[line] > 0 for c in counts):
            for c in counts:
                c[line] -= 1
            end, kept = at + len(line), at
            for start, stop in stand_ins:
                if stop <= kept or start >= end:
                    continue
                stable.append(first[kept:max(start, kept)])
                kept = min(stop, end)
            stable.append(first[kept:end])
        at += len(line)
    return "".join(stable)


def analyse(path, tokenizer):
    renders = render_all(path)
    ids = [tokenizer.encode(r, add_special_tokens=False).ids for r in renders]
    shared = min((common_prefix(ids[0], other) for other in ids[1:]), default=len(ids[0]))
    differing = [common_prefix(renders[0], r) for r in renders[1:] if r != renders[0]]
    recoverable = 0
    if differing:
        stable = stable_lines_after(renders, min(differing))
        recoverable = len(tokenizer.encode(stable, add_special_tokens=False).ids) if stable else 0
    return {
        "path": path,
        "samples": len(renders),
        "tokens": {"min": min(map(len, ids)), "max": max(map(len, ids))},
        "shared_prefix_tokens": shared,
        "recoverable_tokens": recoverable,
    }


def main():
    tokenizer = Tokenizer.from_file(sys.argv[1])
    print(json.dumps({"templates": [analyse(p, tokenizer) for p in sys.argv[2:]]}, indent=2))


if __name__ == "__main__":
    main()
