"""Issue 31, round 7: the warm rerun's wall time, for two builds side by side.

usage: python3 bench/warm.py BEFORE AFTER [--runs N] [--corpora NAME=DIR[:ARGS],...]

For each corpus and each build: one `check --format json --no-cache` run (the reference
report), one cached run into a fresh cache folder of that build's own (fills it), then `--runs`
warm runs of each build, alternating, each timed on its own (wall: `perf_counter` around the
process; CPU: the child's user + system time from `wait4`). Every warm report must be
byte-identical to the `--no-cache` one. Prints medians and minimums: on a loaded machine the
minimum of many short runs is the steadier wall figure, and CPU time moves least. The
default corpora are the ones bench/targets.sh generates.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def timed(cmd, cwd, env):
    """(wall ms, CPU ms, stdout) of one run."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - start) * 1000
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}")
    return wall, (usage.ru_utime + usage.ru_stime) * 1000, out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--corpora", default=",".join([
        f"generated={os.path.join(HERE, 'corpus')}:--no-config",
        f"realrepo={os.path.join(HERE, 'out', 'realrepo')}",
        f"fewshot={os.path.join(HERE, 'out', 'fewshot')}",
    ]))
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="prefixlint-warm-")
    env = dict(os.environ, NO_COLOR="1", PREFIXLINT_CACHE_DIR=os.path.join(work, "tokenizers"))
    builds = {"before": os.path.abspath(args.before), "after": os.path.abspath(args.after)}
    print(f"load average {os.getloadavg()}, {os.cpu_count()} CPUs, {args.runs} warm runs per build (alternating)")
    print("| corpus | build | cold wall ms | warm wall median (min) ms | warm CPU median (min) ms | warm / cold wall |")
    print("|---|---|---:|---:|---:|---:|")
    try:
        for spec in args.corpora.split(","):
            name, _, rest = spec.partition("=")
            root, _, extra = rest.partition(":")
            base = [".", *extra.split(), "--format", "json"]
            cold, reference, warm = {}, None, {}
            for build, binary in builds.items():
                walls = []
                for _ in range(3):
                    wall, _, out = timed([binary, "check", *base, "--no-cache"], root, env)
                    walls.append(wall)
                cold[build] = statistics.median(walls)
                if reference is None:
                    reference = out
                elif out != reference:
                    sys.exit(f"{name}: the two builds' --no-cache reports differ")
                cache = os.path.join(work, name, build)
                shutil.rmtree(cache, ignore_errors=True)
                warm[build] = ([binary, "check", *base, "--cache-dir", cache], [])
                # The first cached run fills the cache.
                timed(warm[build][0], root, env)
            for _ in range(args.runs):
                for build, (cmd, rows) in warm.items():
                    wall, cpu, out = timed(cmd, root, env)
                    if out != reference:
                        sys.exit(f"{name}: {build}'s warm report differs from --no-cache's")
                    rows.append((wall, cpu))
            for build, (_, rows) in warm.items():
                walls = [r[0] for r in rows]
                cpus = [r[1] for r in rows]
                print(f"| {name} | {build} | {cold[build]:.0f} | {statistics.median(walls):.1f} ({min(walls):.1f}) | "
                      f"{statistics.median(cpus):.1f} ({min(cpus):.1f}) | "
                      f"{100 * statistics.median(walls) / cold[build]:.1f}% |", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
