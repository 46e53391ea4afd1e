"""The results cache's figures (issues 18 and 25); bench/cache.sh prepares everything and calls this.

usage: cache.py PREFIXLINT CORPUS CACHE_DIR [--runs N]

Each round times three whole `check` processes over the corpus: `--no-cache` (the baseline),
one with an empty cache folder (the first run: it checks every template and fills the
cache), then one with the cache it left (the warm run: nothing changed). The kinds of run
are interleaved, so load on the machine hits them alike; the figures are medians, in wall
time and in CPU time (user + system, which load on a shared machine disturbs less). The
primary number is the warm run against `--no-cache`: the comparison a user feels. The
reports must be byte for byte the same in every run.
"""
import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def timed(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True,
                          env=dict(os.environ, PREFIXLINT_CACHE_STATS="1"))
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        sys.exit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-3000:]}")
    stats = [l for l in done.stderr.splitlines() if l.startswith("cache: ")]
    return seconds, cpu, done.stdout, stats[-1] if stats else "cache: off"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("prefixlint")
    parser.add_argument("corpus")
    parser.add_argument("cache_dir")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    check = [args.prefixlint, "check", args.corpus, "--format", "json", "--no-config",
             "--cache-dir", args.cache_dir]
    uncached = check[:-2] + ["--no-cache"]
    print(f"machine: {platform.node()}, {os.cpu_count()} CPUs, load average {loadavg()}")
    print(f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, runs per figure: {args.runs} (median)")
    # One run of each kind first, untimed: the page cache and the tokenizer cache warm.
    _, _, reference, _ = timed(uncached)
    runs = {"no-cache": [], "first": [], "warm": []}
    stats = {}
    for _ in range(args.runs):
        for kind in runs:
            if kind == "first":
                shutil.rmtree(args.cache_dir, ignore_errors=True)
            seconds, cpu, out, stats[kind] = timed(uncached if kind == "no-cache" else check)
            runs[kind].append((seconds, cpu))
            if out != reference:
                sys.exit(f"the {kind} run's report differs from --no-cache's")
    shutil.rmtree(args.cache_dir, ignore_errors=True)
    wall = {kind: statistics.median(s for s, _ in r) for kind, r in runs.items()}
    cpu = {kind: statistics.median(c for _, c in r) for kind, r in runs.items()}
    for kind, label in [("no-cache", "--no-cache:"), ("first", "first run (empty cache):"),
                        ("warm", "warm run (unchanged corpus):")]:
        print(f"{label:30} {wall[kind]:.3f} s wall, {cpu[kind]:.3f} s CPU  [{stats[kind]}]")
    print(f"warm / --no-cache:  {100 * wall['warm'] / wall['no-cache']:.1f}% wall, "
          f"{100 * cpu['warm'] / cpu['no-cache']:.1f}% CPU  (target <= 10%)")
    print(f"first / --no-cache: {wall['first'] / wall['no-cache']:.2f}x wall, "
          f"{cpu['first'] / cpu['no-cache']:.2f}x CPU  (target <= 1.1x)")
    print("reports: byte-identical to --no-cache in every run")
    print(f"load average after: {loadavg()}")


if __name__ == "__main__":
    main()
