"""The Python pipeline on a prompt repository (issue 18, target 4): what `prefixlint check
DIR` does with zero config, written as a user would with Jinja2 and `tokenizers`.

usage: realrepo_baseline.py TOKENIZER_JSON REPO SAMPLES_DIR TEMPLATE_LIST

Renders each template named in TEMPLATE_LIST (one path a line, relative to REPO, the
templates prefixlint checked) over the samples in SAMPLES_DIR/<path>.samples.yaml (what
`prefixlint samples` printed: the samples prefixlint synthesizes), with a FileSystemLoader
at the repository root and at prompts/ (where the includes and imports are named from), then tokenizes and takes the
longest common prefix, as tests/python/reference.py does. Prints the same per-template
numbers as `prefixlint check --format json`.
"""
import json
import os
import sys

import jinja2
import yaml
from tokenizers import Tokenizer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
from reference import clock, common_prefix, stable_lines_after  # noqa: E402


def analyse(env, name, samples, tokenizer):
    template = env.get_template(name)
    renders = []
    for n, context in enumerate(samples):
        at = clock(n)
        env.globals["now"] = lambda at=at: at.replace(tzinfo=None)
        env.globals["strftime_now"] = lambda fmt, at=at: at.strftime(fmt)
        renders.append(template.render(**context))
    ids = [tokenizer.encode(r, add_special_tokens=False).ids for r in renders]
    shared = min((common_prefix(ids[0], other) for other in ids[1:]), default=len(ids[0]))
    differing = [common_prefix(renders[0], r) for r in renders[1:] if r != renders[0]]
    recoverable = 0
    if differing:
        stable = stable_lines_after(renders, min(differing))
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
    env = jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined)
    with open(listing, encoding="utf-8") as f:
        names = [line.strip() for line in f if line.strip()]
    report = []
    for name in names:
        with open(os.path.join(samples_dir, name + ".samples.yaml"), encoding="utf-8") as f:
            samples = yaml.safe_load(f)
        report.append(analyse(env, name, samples, tokenizer))
    json.dump({"templates": report}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
