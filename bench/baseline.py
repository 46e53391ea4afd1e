"""The Python pipeline a user would otherwise write (the baseline of issue 7):
Jinja2 render, the Hugging Face `tokenizers` package, the longest common prefix of ids.

usage: baseline.py TOKENIZER_JSON PATH...      (folders are searched for *.j2)
       baseline.py --load-only TOKENIZER_JSON  (just Tokenizer.from_file, for target 2)

Prints the same per-template numbers as `prefixlint check --format json`
(samples, tokens min/max, shared_prefix_tokens, recoverable_tokens) as JSON.
"""
import json
import os
import sys

# Imported at start-up exactly as a user's script would, so `--load-only` pays the same
# interpreter and import costs it always did.
import jinja2  # noqa: F401
import yaml  # noqa: F401
from tokenizers import Tokenizer

# The pipeline itself is the reference that tests/it/reference.rs holds prefixlint to: one copy.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
from reference import analyse  # noqa: E402


def templates(paths):
    for path in paths:
        if os.path.isdir(path):
            for folder, _, names in sorted(os.walk(path)):
                for name in sorted(names):
                    if name.endswith(".j2"):
                        yield os.path.join(folder, name)
        else:
            yield path


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
