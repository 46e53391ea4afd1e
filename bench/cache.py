"""The results cache's figure for issue 18; bench/cache.sh prepares everything and calls this.

usage: cache.py PREFIXLINT CORPUS CACHE_DIR [--runs N]

Each round times one whole `check` process with an empty cache folder (it checks every
template and fills the cache), then one with the cache it left (nothing changed). The two
kinds of run are interleaved, so load on the machine hits both alike; the figures are
medians. The reports must be byte for byte the same, and the same as `--no-cache`'s.
"""
import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time


def timed(cmd):
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True,
                          env=dict(os.environ, PREFIXLINT_CACHE_STATS="1"))
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-3000:]}")
    stats = [l for l in done.stderr.splitlines() if l.startswith("cache: ")]
    return seconds, done.stdout, stats[-1] if stats else "cache: off"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("prefixlint")
    parser.add_argument("corpus")
    parser.add_argument("cache_dir")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    check = [args.prefixlint, "check", args.corpus, "--format", "json", "--no-config",
             "--cache-dir", args.cache_dir]
    print(f"machine: {platform.node()}, {os.cpu_count()} CPUs, load average {os.getloadavg()}")
    print(f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, runs per figure: {args.runs} (median)")
    _, reference, _ = timed(check[:-2] + ["--no-cache"])
    first, second = [], []
    for _ in range(args.runs):
        shutil.rmtree(args.cache_dir, ignore_errors=True)
        seconds, cold_out, cold_stats = timed(check)
        first.append(seconds)
        seconds, warm_out, warm_stats = timed(check)
        second.append(seconds)
        if not (cold_out == warm_out == reference):
            sys.exit("the cached report differs from the uncached one")
    shutil.rmtree(args.cache_dir, ignore_errors=True)
    cold, warm = statistics.median(first), statistics.median(second)
    print(f"first run (empty cache):   {cold:.3f} s  [{cold_stats}]")
    print(f"second run (warm, unchanged corpus): {warm:.3f} s  [{warm_stats}]")
    print(f"second / first: {100 * warm / cold:.1f}%  (target <= 10%)")
    print(f"reports: byte-identical to --no-cache in every run")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
