"""Issue 41: two builds side by side on what bench/targets.py and bench/audit.py time, in one
script on one machine: `check` cold (`--no-cache`) and warm (the results cache filled by an
earlier run) on the three targets corpora, and `audit` on the bench log and the long-session
log. The builds alternate run by run; each run is timed on its own (wall: spawn to `wait4`;
CPU: the child's user + system time from `wait4`; output to /dev/null). Prints medians, the
after / before ratio of each, and the load average before and after each figure (the machine
may be shared: CPU time moves least with the load).

usage: python3 bench/before_after.py BEFORE AFTER [--runs N] [--audit-runs N] [--only check,audit]
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
OUT = os.path.join(HERE, "out")


def timed(cmd, cwd, env):
    """(wall s, CPU s) of one run."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        sys.exit(f"failed ({code}): {' '.join(cmd)}")
    return wall, usage.ru_utime + usage.ru_stime


def load():
    return os.getloadavg()[0]


def compare(name, commands, cwd, env, runs):
    """Runs each build's command `runs` times, alternating; prints one row."""
    rows = {side: [] for side in commands}
    load_before = load()
    for _ in range(runs):
        for side, cmd in commands.items():
            rows[side].append(timed(cmd, cwd, env))
    med = {side: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r)) for side, r in rows.items()}
    (bw, bc), (aw, ac) = med["before"], med["after"]
    unit, scale = ("ms", 1000) if bw < 1 else ("s", 1)
    print(f"| {name} | {bw * scale:.1f} ({bc * scale:.1f}) {unit} | {aw * scale:.1f} ({ac * scale:.1f}) {unit} | "
          f"{aw / bw:.3f} ({ac / bc:.3f}) | {load_before:.1f} -> {load():.1f} |", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--runs", type=int, default=10, help="runs of each check figure per build")
    parser.add_argument("--audit-runs", type=int, default=3, help="runs of each audit figure per build")
    parser.add_argument("--only", default="check,audit")
    args = parser.parse_args()
    builds = {"before": os.path.abspath(args.before), "after": os.path.abspath(args.after)}
    work = tempfile.mkdtemp(prefix="prefixlint-before-after-")
    env = dict(os.environ, NO_COLOR="1", PREFIXLINT_CACHE_DIR=os.path.join(work, "tokenizers"))
    for name in ("PREFIXLINT_STAGE_TIMES", "PREFIXLINT_TIMELINE", "PREFIXLINT_NO_CACHE"):
        env.pop(name, None)
    print(f"{os.cpu_count()} CPUs; medians; wall (CPU); ratio after / before")
    print("| figure | before | after | ratio wall (CPU) | load |")
    print("|---|---:|---:|---:|---|")
    try:
        if "check" in args.only:
            corpora = [("generated", os.path.join(HERE, "corpus"), ["--no-config"]),
                       ("realrepo", os.path.join(OUT, "realrepo"), []),
                       ("fewshot", os.path.join(OUT, "fewshot"), [])]
            for name, root, extra in corpora:
                base = ["check", ".", *extra, "--format", "json"]
                cold = {side: [b, *base, "--no-cache"] for side, b in builds.items()}
                compare(f"check {name} cold", cold, root, env, args.runs)
                warm = {}
                for side, b in builds.items():
                    cache = os.path.join(work, name, side)
                    warm[side] = [b, *base, "--cache-dir", cache]
                    timed(warm[side], root, env)  # fills the cache
                compare(f"check {name} warm", warm, root, env, args.runs)
        if "audit" in args.only:
            for name, log in (("bench log, 100,000 requests", "audit-100000.jsonl"),
                              ("long sessions, 15,000 requests", "audit-long-15000.jsonl")):
                path = os.path.join(OUT, log)
                cmds = {side: [b, "audit", path, "--no-config", "--engine", "llama.cpp", "--format", "json",
                               "--fail-on", "never"] for side, b in builds.items()}
                compare(f"audit {name}", cmds, HERE, env, args.audit_runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
