"""Issue 40: `check` on the corpora with the template formats (this build) against another
build (main's), interleaved runs, medians of wall and CPU time, and the two JSON reports
compared (equal but for the new `templates[].format`, which is `jinja` on these corpora).

    python3 bench/formats_overhead.py THIS_PREFIXLINT OTHER_PREFIXLINT CORPUS... [--runs N]

bench/formats_overhead.sh builds this branch, generates the corpora and runs it.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import time


def timed(command, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if out.returncode not in (0, 1):
        raise SystemExit(f"{command[0]} failed ({out.returncode}): {out.stderr[:2000]}")
    return wall, cpu, out.stdout


def without_format(report):
    data = json.loads(report)
    for template in data.get("templates", []):
        template.pop("format", None)
    return data


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("this")
    parser.add_argument("other")
    parser.add_argument("corpora", nargs="+")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    env = dict(os.environ, NO_COLOR="1")
    print(f"load average at the start: {os.getloadavg()}; runs per figure: {args.runs} (median, interleaved)")
    print("| corpus | this wall | other wall | wall ratio | this CPU | other CPU | CPU ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for corpus in args.corpora:
        command = lambda binary: [binary, "check", corpus, "--format", "json", "--no-config", "--no-cache"]
        runs = {"this": [], "other": []}
        reports = {}
        # One warm-up each (the tokenizer's on-disk cache), then interleaved runs.
        for name in ("this", "other"):
            timed(command(getattr(args, name)), env)
        for _ in range(args.runs):
            for name in ("this", "other"):
                wall, cpu, report = timed(command(getattr(args, name)), env)
                runs[name].append((wall, cpu))
                reports[name] = report
        if without_format(reports["this"]) != without_format(reports["other"]):
            raise SystemExit(f"{corpus}: the two builds' reports differ beyond templates[].format")
        med = {n: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r)) for n, r in runs.items()}
        print(f"| {corpus} | {med['this'][0]*1000:.0f} ms | {med['other'][0]*1000:.0f} ms | "
              f"{med['this'][0]/med['other'][0]:.3f} | {med['this'][1]*1000:.0f} ms | "
              f"{med['other'][1]*1000:.0f} ms | {med['this'][1]/med['other'][1]:.3f} |")
    print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
