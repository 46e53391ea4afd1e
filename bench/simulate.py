#!/usr/bin/env python3
"""Times `prefixlint simulate` replaying a generated log of N requests (issue 29: 1,000,000
requests in under a minute on 2 cores), against a baseline run in the same script: the same
binary's `audit --engine vllm` over the same log (what reading, rendering and tokenizing
cost without the cache model). Prints both times and the ratio.

The log: records `{"request", "response", "metadata": {"session_id", "timestamp"}}`, sessions
of growing chats (the last three turns kept) over a few shared system prompts, requests a
tenth of a second apart, replies of 8 to 64 tokens. Written gzipped (about 1 KB a request
before compression).

Usage: bench/simulate.py PREFIXLINT OUT_DIR [--requests N] [--log PATH]

`--log` replays a log of another shape instead (the second corpus: `bench/gen_audit_log.py`'s
agent sessions with tools, clocks that move mid-session and non-JSON lines).
"""

import argparse
import gzip
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

WORDS = ("river stone light garden window paper music forest table cloud bridge market winter "
         "summer letter engine silver orange valley island ocean mountain candle shadow").split()


def generate(path: Path, requests: int, seed: int = 29) -> None:
    rng = random.Random(seed)
    systems = [" ".join(rng.choice(WORDS) for _ in range(60)) + f" (desk {i})" for i in range(8)]
    sessions = {}
    with gzip.open(path, "wt", compresslevel=1) as out:
        for i in range(requests):
            # About 2,000 sessions live at once, each about 12 turns.
            s = rng.randrange(max(1, i // 12 + 1), i // 12 + 2000)
            history = sessions.setdefault(s, [])
            history.append({"role": "user", "content": " ".join(rng.choice(WORDS) for _ in range(12))})
            messages = [{"role": "system", "content": systems[s % len(systems)]}] + history[-5:]
            completion = rng.randrange(8, 64)
            record = {
                "request": {"model": "m", "messages": messages},
                "response": {"usage": {"prompt_tokens": 0, "completion_tokens": completion}},
                "metadata": {"session_id": f"s{s}", "timestamp": 1_800_000_000 + i / 10},
            }
            out.write(json.dumps(record) + "\n")
            history.append({"role": "assistant", "content": " ".join(rng.choice(WORDS) for _ in range(8))})
            if len(sessions) > 4000:
                sessions.pop(next(iter(sessions)))


def timed(command) -> tuple:
    """Wall seconds, and the CPU seconds (user + system) the command used: on a shared
    machine the wall time depends on the load, the CPU time much less."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("prefixlint")
    parser.add_argument("out", type=Path)
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--log", type=Path, help="replay this log instead of the generated one")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    log = args.log or args.out / f"simulate-{args.requests}.jsonl.gz"
    if not log.exists():
        print(f"generating {args.requests:,} requests into {log}", file=sys.stderr)
        generate(log, args.requests)
    report = args.out / "simulate-report.json"
    load_before = os.getloadavg()[0]
    simulate, simulate_cpu = timed([args.prefixlint, "simulate", str(log), "--no-config", "--kv-blocks", "4096",
                      "--block-size", "16", "--replicas", "2", "--router", "prefix", "--ttl", "300",
                      "--format", "json", "--output", str(report)])
    audit, audit_cpu = timed([args.prefixlint, "audit", str(log), "--no-config", "--engine", "vllm:block_size=16",
                   "--format", "json", "--fail-on", "never", "--output", str(args.out / "audit-report.json")])
    load_after = os.getloadavg()[0]
    summary = json.loads(report.read_text())["summary"]
    cores = os.cpu_count() or 1
    print(f"simulate: {summary['requests']:,} requests in {simulate:.1f} s, {simulate_cpu:.1f} CPU s "
          f"(hit rate {summary['hit_rate']:.3f}, {summary['evicted_blocks']:,} blocks evicted)")
    print(f"baseline, audit --engine vllm on the same log: {audit:.1f} s, {audit_cpu:.1f} CPU s")
    print(f"ratio simulate / audit: {simulate / audit:.2f} wall, {simulate_cpu / audit_cpu:.2f} CPU; "
          f"target: under 60 s for 1,000,000")
    print(f"load average (1 min) {load_before:.1f} before, {load_after:.1f} after, on {cores} cores; "
          f"CPU seconds / cores = {simulate_cpu / cores:.1f} s, the wall time an idle machine "
          f"would take at best")


if __name__ == "__main__":
    main()
