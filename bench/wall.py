"""Issue 31, round 5: how well `check --no-cache` uses the cores, for two builds side by side.

usage: python3 bench/wall.py BEFORE AFTER [--runs N] [--corpora NAME=DIR[:ARGS],...]

For each corpus, the two binaries alternate, each run under `perf stat -e task-clock`, once
on one core (`taskset -c 0`) and once on every core. Prints the medians: wall, task-clock
and CPUs utilized (task-clock / wall). Under load, wall times are noise and task-clock moves
least; the CPUs utilized on an idle machine is the figure this round is about (hardware
counters such as instructions are not available on every machine, so none is asked for). The default corpora are the ones
bench/targets.sh generates.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def perf_stat(cmd, cwd, env, cpus):
    with tempfile.NamedTemporaryFile("r", suffix=".perf") as stat:
        pinned = ["taskset", "-c", cpus] if cpus else []
        run = ["perf", "stat", "-x", ",", "-o", stat.name, "-e", "task-clock"]
        done = subprocess.run(run + pinned + cmd, cwd=cwd, env=env, capture_output=True)
        if done.returncode not in (0, 1):
            sys.exit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr.decode()[-2000:]}")
        values = {}
        for line in stat.read().splitlines():
            fields = line.split(",")
            if len(fields) > 3 and fields[0] and not line.startswith("#"):
                try:
                    values[fields[2]] = float(fields[0])
                except ValueError:
                    pass
    return values


def timed(cmd, cwd, env, cpus):
    start = time.perf_counter()
    values = perf_stat(cmd, cwd, env, cpus)
    wall = (time.perf_counter() - start) * 1000
    return wall, values.get("task-clock", float("nan"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--corpora", default=",".join([
        f"generated={os.path.join(HERE, 'corpus')}:--no-config",
        f"realrepo={os.path.join(HERE, 'out', 'realrepo')}",
        f"fewshot={os.path.join(HERE, 'out', 'fewshot')}",
    ]))
    args = parser.parse_args()
    env = dict(os.environ, NO_COLOR="1")
    print(f"load average {os.getloadavg()}, {os.cpu_count()} CPUs, runs {args.runs} (medians)")
    print("| corpus | cores | build | wall ms | task-clock ms | CPUs utilized |")
    print("|---|---|---|---:|---:|---:|")
    for spec in args.corpora.split(","):
        name, _, rest = spec.partition("=")
        root, _, extra = rest.partition(":")
        for cpus, label in (("0", "1"), (None, str(os.cpu_count()))):
            rows = {"before": [], "after": []}
            for _ in range(args.runs):
                for build in ("before", "after"):
                    binary = os.path.abspath(getattr(args, build))
                    cmd = [binary, "check", "."] + extra.split() + ["--format", "json", "--no-cache"]
                    rows[build].append(timed(cmd, root, env, cpus))
            for build, runs in rows.items():
                wall = statistics.median(r[0] for r in runs)
                clock = statistics.median(r[1] for r in runs)
                util = statistics.median(r[1] / r[0] for r in runs)
                print(f"| {name} | {label} | {build} | {wall:.0f} | {clock:.0f} | {util:.2f} |", flush=True)
    print(f"load average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
