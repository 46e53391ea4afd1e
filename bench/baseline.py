"""The Python pipeline a user would otherwise write (the baseline of issue 7):
Jinja2 render, the Hugging Face `tokenizers` package, the longest common prefix of ids.

usage: baseline.py TOKENIZER_JSON PATH...      (folders are searched for *.j2)
       baseline.py --load-only TOKENIZER_JSON  (just Tokenizer.from_file, for target 2)

Prints the same per-template numbers as `prefixlint check --format json`
(samples, tokens min/max, shared_prefix_tokens, recoverable_tokens) as JSON.
"""
import datetime
import json
import os
import sys
from collections import Counter

import jinja2
import yaml
from tokenizers import Tokenizer

# prefixlint's clock for render n, so that `now()` templates agree too.
BASE = datetime.datetime(2026, 3, 14, 9, 26, 53, tzinfo=datetime.timezone.utc)
STEP = datetime.timedelta(days=1, hours=1, minutes=1, seconds=1, milliseconds=7)


def templates(paths):
    for path in paths:
        if os.path.isdir(path):
            for folder, _, names in sorted(os.walk(path)):
                for name in sorted(names):
                    if name.endswith(".j2"):
                        yield os.path.join(folder, name)
        else:
            yield path


def render_all(path):
    folder, name = os.path.split(path)
    with open(os.path.join(folder, name.rsplit(".", 1)[0] + ".samples.yaml"), encoding="utf-8") as f:
        samples = yaml.safe_load(f)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(folder), undefined=jinja2.StrictUndefined)
    template = env.get_template(name)
    renders = []
    for n, context in enumerate(samples):
        at = BASE + STEP * n
        env.globals["now"] = lambda at=at: at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"
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


def stable_lines_after(texts, offset):
    def tail(text):
        rest = text[offset:]
        i = rest.find("\n")
        return rest[i + 1:] if i >= 0 else ""

    first, others = texts[0], texts[1:]
    counts = [Counter(tail(t).splitlines(keepends=True)) for t in others]
    stable = []
    for line in tail(first).splitlines(keepends=True):
        if all(c[line] > 0 for c in counts):
            for c in counts:
                c[line] -= 1
            stable.append(line)
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
    if sys.argv[1] == "--load-only":
        Tokenizer.from_file(sys.argv[2])
        return
    tokenizer = Tokenizer.from_file(sys.argv[1])
    report = [analyse(p, tokenizer) for p in templates(sys.argv[2:])]
    json.dump({"templates": report}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
