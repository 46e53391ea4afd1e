"""The Python pipeline on a prompt repository (issue 18, target 4): what `prefixlint check
DIR` does with zero config, written as a user would with Jinja2 and `tokenizers`.

usage: realrepo_baseline.py TOKENIZER_JSON REPO SAMPLES_DIR TEMPLATE_LIST

Renders each template named in TEMPLATE_LIST (one path a line, relative to REPO, the
templates prefixlint checked) over the samples in SAMPLES_DIR/<path>.samples.yaml (what
`prefixlint samples` printed: the samples prefixlint synthesizes), with a FileSystemLoader
at the repository root and at prompts/ (where the includes and imports are named from), then tokenizes and takes the
longest common prefix, as tests/python/reference.py does. Prints the same per-template
numbers as `prefixlint check --format json`.

A template without a samples file of its own has synthesized samples, so every string in
them stands in for a value nobody gave:
where a `{{ }}` prints one (Jinja2's `finalize`), the output is marked, and the stable text
after the divergence leaves it out, as `prefixlint check` does with its own synthesized
samples (strings of at least 3 characters found in every sample, every occurrence in a
printed value).
"""
import json
import os
import sys

import jinja2
import yaml
from tokenizers import Tokenizer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
from reference import clock, common_prefix, stable_lines_after  # noqa: E402


OPEN, CLOSE = "\ufdd4", "\ufdd5"
STAND_INS = []


def strings(value, out):
    """The strings in a sample value (not mapping keys), at least 3 characters long."""
    if isinstance(value, str):
        if len(value) >= 3:
            out.add(value)
    elif isinstance(value, list):
        for item in value:
            strings(item, out)
    elif isinstance(value, dict):
        for item in value.values():
            strings(item, out)


@jinja2.pass_context
def finalize(_context, value):
    """A printed value with every occurrence of a stand-in string between markers."""
    text = value if isinstance(value, str) else str(value)
    ranges = []
    for stand_in in STAND_INS:
        at = text.find(stand_in)
        while at >= 0:
            ranges.append((at, at + len(stand_in)))
            at = text.find(stand_in, at + 1)
    if not ranges:
        return value
    out, copied = [], 0
    for start, end in merge(ranges):
        out += [text[copied:start], OPEN, text[start:end], CLOSE]
        copied = end
    out.append(text[copied:])
    return "".join(out)


def merge(ranges):
    merged = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def strip(marked):
    """The text without markers, and the stand-in ranges in it."""
    text, ranges, open_at = [], [], []
    at = 0
    for ch in marked:
        if ch == OPEN:
            open_at.append(at)
        elif ch == CLOSE:
            ranges.append((open_at.pop(), at))
        else:
            text.append(ch)
            at += 1
    return "".join(text), [tuple(r) for r in merge(ranges)]


def analyse(env, name, samples, tokenizer, synthesized):
    template = env.get_template(name)
    found = None
    if synthesized:
        # Only a value that is the same in every render can write stable lines.
        for context in samples:
            texts = set()
            strings(context, texts)
            found = texts if found is None else found & texts
    STAND_INS[:] = sorted(found or ())
    renders = []
    stand_ins = []
    for n, context in enumerate(samples):
        at = clock(n)
        env.globals["now"] = lambda at=at: at.replace(tzinfo=None)
        env.globals["strftime_now"] = lambda fmt, at=at: at.strftime(fmt)
        text, ranges = strip(template.render(**context))
        renders.append(text)
        stand_ins.append(ranges)
    ids = [tokenizer.encode(r, add_special_tokens=False).ids for r in renders]
    shared = min((common_prefix(ids[0], other) for other in ids[1:]), default=len(ids[0]))
    differing = [common_prefix(renders[0], r) for r in renders[1:] if r != renders[0]]
    recoverable = 0
    if differing:
        stable = stable_lines_after(renders, min(differing), stand_ins[0])
        recoverable = len(tokenizer.encode(stable, add_special_tokens=False).ids) if stable else 0
    return {
        "path": name,
        "samples": len(renders),
        "tokens": {"min": min(map(len, ids)), "max": max(map(len, ids))},
        "shared_prefix_tokens": shared,
        "recoverable_tokens": recoverable,
    }


def main():
    tokenizer_json, repo, samples_dir, listing = sys.argv[1:5]
    tokenizer = Tokenizer.from_file(tokenizer_json)
    # The application's loader: templates by their path in the repository, includes by
    # their path under prompts/.
    loader = jinja2.FileSystemLoader([repo, os.path.join(repo, "prompts")])
    env = jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined, finalize=finalize)
    with open(listing, encoding="utf-8") as f:
        names = [line.strip() for line in f if line.strip()]
    report = []
    for name in names:
        with open(os.path.join(samples_dir, name + ".samples.yaml"), encoding="utf-8") as f:
            samples = yaml.safe_load(f)
        own = os.path.join(repo, os.path.splitext(name)[0] + ".samples.yaml")
        report.append(analyse(env, name, samples, tokenizer, not os.path.exists(own)))
    json.dump({"templates": report}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
