"""Side-by-side timings for issue 7; bench/compare.sh prepares everything and calls this.

usage: compare.py PREFIXLINT PYTHON TOKENIZER_JSON OUT_DIR [--runs N] [--against OTHER_PREFIXLINT]

Every figure is the median of N runs of a whole process (start to end, wall clock), with
peak RSS from /usr/bin/time -v. The runs of the two sides are interleaved, so that load on
the machine hits both alike.
"""
import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def timed(cmd, env=None):
    """(seconds, peak RSS in MiB, stdout, CPU seconds) of one run."""
    start = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-3000:]}")
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    cpu = sum(float(x) for x in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", done.stderr))
    return seconds, int(rss.group(1)) / 1024 if rss else float("nan"), done.stdout, cpu


def medians(named_cmds, runs, env):
    """Runs each command `runs` times, interleaved; returns
    name -> (median s, median MiB, last stdout, median CPU s)."""
    samples = {name: [] for name in named_cmds}
    out = {}
    for _ in range(runs):
        for name, cmd in named_cmds.items():
            seconds, rss, stdout, cpu = timed(cmd, env)
            samples[name].append((seconds, rss, cpu))
            out[name] = stdout
    return {
        name: (
            statistics.median(r[0] for r in runs_),
            statistics.median(r[1] for r in runs_),
            out[name],
            statistics.median(r[2] for r in runs_),
        )
        for name, runs_ in samples.items()
    }


def stage_shares(cmd, env, runs):
    """Median CPU seconds per stage over `runs` runs with PREFIXLINT_STAGE_TIMES=1, and the
    rendered bytes (src/stage_times.rs prints them to stderr)."""
    per_stage, rendered = {}, 0
    for _ in range(runs):
        done = subprocess.run(cmd, capture_output=True, text=True, env=dict(env, PREFIXLINT_STAGE_TIMES="1"))
        for name, seconds in re.findall(r"^  stage (\w+) ([\d.]+) s", done.stderr, re.M):
            per_stage.setdefault(name, []).append(float(seconds))
        for name, seconds in re.findall(r"^  (process cpu|stages total) ([\d.]+) s", done.stderr, re.M):
            per_stage.setdefault(name, []).append(float(seconds))
        found = re.search(r"^  rendered bytes (\d+)", done.stderr, re.M)
        rendered = int(found.group(1)) if found else 0
    return {name: statistics.median(v) for name, v in per_stage.items()}, rendered


def numbers(report, key_of):
    keys = ("samples", "tokens", "shared_prefix_tokens", "recoverable_tokens")
    return {key_of(t["path"]): {k: t[k] for k in keys} for t in report["templates"]}


def check_agreement(ours, theirs):
    base = os.path.basename
    a = numbers(json.loads(ours), base)
    b = numbers(json.loads(theirs), base)
    if a != b:
        diff = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)][:5]
        for k in diff:
            print(f"  MISMATCH {k}: prefixlint {a.get(k)} python {b.get(k)}")
        sys.exit("the numbers of prefixlint and the Python baseline differ")
    return len(a)


def verdict(ok):
    return "MET" if ok else "NOT MET"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("prefixlint")
    parser.add_argument("python")
    parser.add_argument("tokenizer")
    parser.add_argument("out")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--against", help="another prefixlint binary (e.g. main's) to time on the corpus")
    args = parser.parse_args()
    corpus = os.path.join(HERE, "corpus")
    small, large = (os.path.join(args.out, d) for d in ("corpus-5", "corpus-10x"))
    env = dict(os.environ, PREFIXLINT_CACHE_DIR=os.path.join(args.out, "cache"), NO_COLOR="1")
    # Cold figures: the results cache (issue 18) is measured by bench/cache.sh.
    check = lambda path: [args.prefixlint, "check", path, "--format", "json", "--no-config", "--no-cache"]
    # -P: bench/tokenizers.py must not shadow the `tokenizers` package the baseline imports.
    baseline = lambda path: [args.python, "-P", os.path.join(HERE, "baseline.py"), args.tokenizer, path]

    print(f"machine: {platform.node()}, {os.cpu_count()} CPUs, load average {os.getloadavg()}")
    print(f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, runs per figure: {args.runs} (median)")
    # Cold: the first run converts the tokenizer into the cache; every later run is warm.
    cold = timed(check(small), env)
    print(f"cold first run (builds the tokenizer cache), 5 templates: {cold[0]*1000:.0f} ms")

    # Target 2: pre-commit-sized run vs Python's Tokenizer.from_file alone.
    t2 = medians(
        {
            "prefixlint-5": check(small),
            "python-load": [args.python, "-P", os.path.join(HERE, "baseline.py"), "--load-only", args.tokenizer],
        },
        args.runs,
        env,
    )
    # For reference: the same run on the `tokenizers` engine (what the byte-level engine replaced).
    hf_env = dict(env, PREFIXLINT_ENGINE="hf")
    t2["prefixlint-5-hf-engine"] = medians({"x": check(small)}, args.runs, hf_env)["x"]

    # Target 1: the corpus, both pipelines, numbers compared.
    t1 = medians({"prefixlint": check(corpus), "python": baseline(corpus)}, args.runs, env)
    agreed = check_agreement(t1["prefixlint"][2], t1["python"][2])
    # Issue 18: where the time goes (separate runs: the timers are off in the timed ones).
    stages, rendered = stage_shares(check(corpus), env, max(3, args.runs // 2))

    # Target 3: ten times the corpus (10x the templates, so 10x the rendered bytes),
    # interleaved with fresh 1x runs so that both see the same load.
    t3 = medians({"prefixlint-1x": check(corpus), "prefixlint-10x": check(large)}, args.runs, env)

    # Issue 12: this build against another one on the corpus, interleaved; same JSON output.
    vs = None
    if args.against:
        # Builds before issue 18 have no results cache (and no --no-cache).
        other = lambda path: [args.against] + check(path)[1:-1]
        vs = medians({"this": check(corpus), "other": other(corpus)}, max(3, args.runs), env)
        if vs["this"][2] != vs["other"][2]:
            sys.exit("the two builds' JSON reports on the corpus differ")

    print()
    print("| run | median wall | median CPU (user+sys) | peak RSS |")
    print("|---|---:|---:|---:|")
    for name, (s, m, _, cpu) in [
        ("prefixlint check, 5 templates (warm cache)", t2["prefixlint-5"]),
        ("prefixlint check, 5 templates, PREFIXLINT_ENGINE=hf", t2["prefixlint-5-hf-engine"]),
        ("python Tokenizer.from_file only", t2["python-load"]),
        ("prefixlint check, 1,000 templates", t1["prefixlint"]),
        ("python baseline, 1,000 templates", t1["python"]),
        ("prefixlint check, 1,000 templates (next to the 10,000 runs)", t3["prefixlint-1x"]),
        ("prefixlint check, 10,000 templates", t3["prefixlint-10x"]),
    ]:
        print(f"| {name} | {s*1000:.0f} ms | {cpu*1000:.0f} ms | {m:.0f} MiB |")
    print()
    r1 = t1["python"][0] / t1["prefixlint"][0]
    r2 = t2["prefixlint-5"][0] / t2["python-load"][0]
    r3 = t3["prefixlint-10x"][0] / t3["prefixlint-1x"][0]
    c3 = t3["prefixlint-10x"][3] / t3["prefixlint-1x"][3]
    m3 = t3["prefixlint-10x"][1] / t3["prefixlint-1x"][1]
    print(f"numbers agree with the Python baseline on all {agreed} templates")
    wall = t1["prefixlint"][0]
    print(f"throughput: {rendered / 1e6:.1f} MB rendered in {wall:.3f} s = {rendered / 1e6 / wall:.1f} MB/s wall "
          f"({rendered / 1e6 / t1['prefixlint'][3]:.1f} MB per CPU second); python "
          f"{rendered / 1e6 / t1['python'][0]:.2f} MB/s")
    total = sum(v for k, v in stages.items() if " " not in k)
    shares = ", ".join(f"{k} {v:.3f} s ({100 * v / total:.0f}%)" for k, v in stages.items() if " " not in k)
    print(f"stage CPU (PREFIXLINT_STAGE_TIMES=1, summed over threads, median): {shares}; "
          f"stages {total:.3f} s of process CPU {stages.get('process cpu', float('nan')):.3f} s")
    r40 = t1["python"][0] / t1["prefixlint"][0]
    print(f"issue 18 target 2: python / prefixlint on the corpus, cold cache = {r40:.1f}x (want >= 40x): {verdict(r40 >= 40)}")
    print(f"target 1: python / prefixlint on the corpus = {r1:.1f}x (want >= 10x): {verdict(r1 >= 10)}")
    print(f"target 2: prefixlint 5 templates / python from_file = {r2:.2f} (want <= 0.5): {verdict(r2 <= 0.5)}")
    print(f"target 3: 10x corpus / 1x: wall {r3:.2f}, CPU {c3:.2f} (want <= 11): {verdict(r3 <= 11)}; "
          f"peak RSS {m3:.2f} (flat = ~1): {verdict(m3 <= 1.5)}")
    print(f"memory (issue 12): peak RSS 10,000 templates {t3['prefixlint-10x'][1]:.1f} MiB / "
          f"1,000 templates {t3['prefixlint-1x'][1]:.1f} MiB = {m3:.2f} (want <= 1.3): {verdict(m3 <= 1.3)}")
    if vs:
        ratio = vs["this"][0] / vs["other"][0]
        print(f"wall (issue 12), 1,000 templates: this build {vs['this'][0]*1000:.0f} ms "
              f"(CPU {vs['this'][3]*1000:.0f} ms, {vs['this'][1]:.0f} MiB), {args.against} "
              f"{vs['other'][0]*1000:.0f} ms (CPU {vs['other'][3]*1000:.0f} ms, {vs['other'][1]:.0f} MiB): "
              f"ratio {ratio:.2f} (want <= 1.0, noise allowing): {verdict(ratio <= 1.05)}; same JSON report")
    print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
