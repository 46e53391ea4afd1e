"""The minimal Python pipeline of issue 31: Jinja2 render over YAML samples, `tokenizers`
`encode_batch`, the longest common prefix. No recoverable tokens, no rules, nothing else:
the least a user's script does to get the shared prefix of each template.

usage: baseline_minimal.py TOKENIZER_JSON ROOT SAMPLES_DIR LISTING [SEARCH_PATH...]

LISTING names one template a line (relative to ROOT, as prefixlint reports it); its samples
are SAMPLES_DIR/<template>.samples.yaml (bench/targets.py writes them beforehand: the
template's own samples file, or what `prefixlint samples` synthesizes). One Jinja2
environment (`StrictUndefined`) loads templates from ROOT and the SEARCH_PATHs (the
folders includes are named from). All renders are encoded in one `encode_batch` call, which
the `tokenizers` library spreads over every core. Prints the per-template numbers
(`samples`, `tokens` min/max, `shared_prefix_tokens`) as JSON, for bench/targets.py to
compare with prefixlint's.
"""
import json
import os
import sys

import jinja2
import yaml
from tokenizers import Tokenizer


def common_prefix(a, b):
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def main():
    tokenizer_json, root, samples_dir, listing = sys.argv[1:5]
    search = [root] + [os.path.join(root, p) for p in sys.argv[5:]]
    tokenizer = Tokenizer.from_file(tokenizer_json)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(search), undefined=jinja2.StrictUndefined)
    with open(listing, encoding="utf-8") as f:
        rows = [line.strip() for line in f if line.strip()]
    names, texts, counts = [], [], []
    for name in rows:
        with open(os.path.join(samples_dir, name + ".samples.yaml"), encoding="utf-8") as f:
            samples = yaml.safe_load(f)
        template = env.get_template(name)
        names.append(name)
        counts.append(len(samples))
        texts.extend(template.render(**context) for context in samples)
    encoded = tokenizer.encode_batch(texts, add_special_tokens=False)
    report, at = [], 0
    for name, count in zip(names, counts):
        ids = [e.ids for e in encoded[at:at + count]]
        at += count
        shared = min((common_prefix(ids[0], other) for other in ids[1:]), default=len(ids[0]))
        report.append({
            "path": name,
            "samples": count,
            "tokens": {"min": min(map(len, ids)), "max": max(map(len, ids))},
            "shared_prefix_tokens": shared,
        })
    json.dump({"templates": report}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
