#!/usr/bin/env python3
"""Each thread of a running command: its time on a core, waiting for a core (the machine's
load) and waiting for work (blocked: on the stage before it, on the pool, on a channel). It
samples `/proc/PID/task/*/schedstat` every `--every` seconds while the command runs, so it
works on any build (issue 29 / 30 §1: which thread of `audit` or `simulate` is the critical
path, measured on a loaded machine).

Waiting for work does not grow with the load the way wall time does: on a quiet machine it
is what the idle cores are made of. A pool thread that waits for work 20% of the run leaves a
core idle about that long. Figures are within one sampling period per thread (a thread that
ends between two samples loses its last period).

Usage: bench/threads.py [--every 0.05] -- COMMAND ARGS...
"""

import argparse
import os
import subprocess
import sys
import time


TICK = os.sysconf("SC_CLK_TCK")


def started(pid, tid):
    """When a thread started, in seconds since boot (`stat` field 22)."""
    with open(f"/proc/{pid}/task/{tid}/stat") as f:
        # The name in parentheses may hold spaces: split after it.
        return int(f.read().rsplit(")", 1)[1].split()[19]) / TICK


def sample(pid):
    """tid -> (cpu ns, runqueue ns) for every thread of `pid` now."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                cpu, runqueue, _ = f.read().split()
            out[int(tid)] = (int(cpu), int(runqueue))
        except (FileNotFoundError, ProcessLookupError, ValueError):
            pass
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--every", type=float, default=0.05)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command")
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    first, last, birth = {}, {}, {}
    while child.poll() is None:
        now = time.perf_counter() - start
        for tid, (cpu, runqueue) in sample(child.pid).items():
            if tid not in first:
                try:
                    birth[tid] = started(child.pid, tid)
                except (FileNotFoundError, ProcessLookupError):
                    continue
                first[tid] = (now, cpu, runqueue)
            last[tid] = (now, cpu, runqueue)
        time.sleep(args.every)
    wall = time.perf_counter() - start
    if child.returncode != 0:
        sys.exit(f"the command failed ({child.returncode})")
    print(f"wall {wall:.2f} s; per thread, in order of appearance (seconds):")
    print(f"{'thread':>10} {'from':>7} {'to':>7} {'on a core':>10} {'for a core':>11} {'for work':>9}")
    total = {"cpu": 0.0, "runqueue": 0.0, "idle": 0.0}
    process_birth = birth.get(child.pid, 0.0)
    for tid in sorted(first, key=lambda t: (birth[t], t)):
        t0 = birth[tid] - process_birth
        t1, cpu1, rq1 = last[tid]
        # From the thread's start (its schedstat starts at 0) to its last sample.
        cpu, runqueue = cpu1 / 1e9, rq1 / 1e9
        idle = max(0.0, t1 - t0 - cpu - runqueue)
        name = "main" if tid == child.pid else str(tid)
        print(f"{name:>10} {t0:7.2f} {t1:7.2f} {cpu:10.2f} {runqueue:11.2f} {idle:9.2f}")
        total["cpu"] += cpu
        total["runqueue"] += runqueue
        total["idle"] += idle
    print(f"{'all':>10} {'':>7} {'':>7} {total['cpu']:10.2f} {total['runqueue']:11.2f} {total['idle']:9.2f}")


if __name__ == "__main__":
    main()
