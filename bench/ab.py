"""Two prefixlint binaries side by side on the runs bench/targets.py and bench/audit.py time:
`check --no-cache` (cold) and `check` with a filled results cache (warm) on the generated,
realrepo and fewshot corpora, and `audit --engine llama.cpp` on a generated log (with and
without a chat template). Every figure is a median of interleaved rounds (old, new, old,
new, ...), measured as targets.py measures (`timed`: wall from spawn to wait4, CPU from
rusage); the table gives new / old. The Python baselines of targets.py and audit.py are
the same for both binaries, so their ratios move as these do.

usage: ab.py OLD_PREFIXLINT NEW_PREFIXLINT OUT_DIR [--runs N] [--requests N]
Needs the corpora bench/targets.sh generates (bench/corpus, OUT/realrepo, OUT/fewshot).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from targets import interleaved, loadavg  # noqa: E402
import audit as audit_bench  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("out")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--requests", type=int, default=20_000)
    args = parser.parse_args()
    old, new, out = map(os.path.abspath, (args.old, args.new, args.out))
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, PREFIXLINT_CACHE_DIR=os.path.join(out, "tokenizer-cache"), NO_COLOR="1")
    log = os.path.join(out, f"ab-audit-{args.requests}.jsonl")
    if not os.path.exists(log):
        audit_bench.generate(audit_bench.Path(log), args.requests)
    chat_template = os.path.join(os.path.dirname(HERE), "assets", "qwen3", "tokenizer_config.json")
    corpora = {
        "generated": (os.path.join(HERE, "corpus"), [".", "--no-config"]),
        "realrepo": (os.path.join(out, "realrepo"), ["."]),
        "fewshot": (os.path.join(out, "fewshot"), ["."]),
    }
    named = {}
    caches = tempfile.mkdtemp(prefix="ab-cache-", dir=out)
    for side, binary in (("old", old), ("new", new)):
        for name, (root, check_args) in corpora.items():
            check = [binary, "check"] + check_args + ["--format", "json"]
            cache = os.path.join(caches, f"{side}-{name}")
            # Fill the results cache once: the warm runs find every template in it.
            subprocess.run(check + ["--cache-dir", cache], cwd=root, env=env, capture_output=True)
            named[f"{side} check cold {name}"] = (check + ["--no-cache"], root, env)
            named[f"{side} check warm {name}"] = (check + ["--cache-dir", cache], root, env)
        report = os.path.join(out, f"ab-audit-{side}.json")
        audit = [binary, "audit", log, "--engine", "llama.cpp", "--format", "json", "--output", report]
        named[f"{side} audit"] = (audit, None, env)
        named[f"{side} audit chat-template"] = (audit + ["--chat-template", chat_template], None, env)
    # Interleave old and new run by run: each round runs every command once, the two sides
    # of a command one after the other.
    order = sorted(named, key=lambda k: (k.split(" ", 1)[1], k.split(" ", 1)[0] != "old"))
    start = loadavg()
    med, loads = interleaved({k: named[k] for k in order}, args.runs)
    print(f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, {os.cpu_count()} CPUs, runs per figure: {args.runs} (median, interleaved)")
    print(f"load average: {start:.1f} at the start, {min(loads):.1f}-{max(loads):.1f} over the rounds, {loadavg():.1f} at the end")
    print()
    print("| run | old wall | new wall | new / old wall | old CPU | new CPU | new / old CPU |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for key in order:
        side, what = key.split(" ", 1)
        if side != "old":
            continue
        o, n = med[f"old {what}"], med[f"new {what}"]
        print(f"| {what} | {o['wall']*1000:.0f} ms | {n['wall']*1000:.0f} ms | {n['wall']/o['wall']:.3f} | "
              f"{o['cpu']*1000:.0f} ms | {n['cpu']*1000:.0f} ms | {n['cpu']/o['cpu']:.3f} |")


if __name__ == "__main__":
    main()
