#!/usr/bin/env python3
"""Times `prefixlint simulate` on block-hash traces, each against a baseline run in this
same script, and prints the ratios:

1. a 1,000,000-request Mooncake-shaped trace (bench/simulate_gen_trace.py's 12,000-request
   conversation trace, copied one after another with ids of their own: 84 copies make a
   1M-request trace with the 12k trace's shape), one request at a time (`--sequential`), against a plain Python LRU replay of the
   same trace and capacity (bench/simulate_reference.py); the target is a tenth of its
   time or less, with a peak RSS under 1 GiB;
2. a sweep of 8 capacities on a 12,000-request trace against one replay × 8; the target is
   no more than that.

Each check also runs on a second corpus of another shape (the tool-agent shape).

Usage: simulate_traces.py BIN [--workdir DIR] [--requests N] [--keep]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def timed(cmd, stdout=subprocess.DEVNULL):
    """Wall seconds and the child's peak RSS (KiB), from wait4."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{err}")
    return seconds, usage.ru_maxrss


def generate(path, shape, requests):
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(HERE, "simulate_gen_trace.py"), path,
                        "--shape", shape, "--format", "mooncake", "--requests", str(requests)], check=True)


def tile(small, path, requests):
    """`requests` lines made of copies of `small` one after another in time, each copy with
    ids of its own (so copies share nothing; the shape, not the size, is the trace's)."""
    if os.path.exists(path):
        return
    with open(small) as f:
        lines = [json.loads(line) for line in f]
    top = 1 + max(i for line in lines for i in line["hash_ids"])
    span = lines[-1]["timestamp"] + 1000
    written = 0
    with open(path, "w") as out:
        copy = 0
        while written < requests:
            for line in lines[: requests - written]:
                out.write(json.dumps({"timestamp": line["timestamp"] + copy * span,
                                      "input_length": line["input_length"],
                                      "output_length": line["output_length"],
                                      "hash_ids": [i + copy * top for i in line["hash_ids"]]},
                                     separators=(",", ":")) + "\n")
            written += min(len(lines), requests - written)
            copy += 1


def million(binary, trace, kv_blocks):
    ours, rss = timed([binary, "simulate", "--no-config", trace, "--block-size", "512",
                       "--kv-blocks", str(kv_blocks), "--sequential", "-o", os.devnull])
    with tempfile.TemporaryFile() as out:
        python, python_rss = timed([sys.executable, os.path.join(HERE, "simulate_reference.py"), trace,
                                    "--format", "mooncake", "--block-size", "512", "--kv-blocks", str(kv_blocks)],
                                   stdout=out)
        out.seek(0)
        reference = json.loads(out.read())
    check = json.loads(subprocess.run(
        [binary, "simulate", "--no-config", trace, "--block-size", "512", "--kv-blocks", str(kv_blocks),
         "--sequential", "--sweep", f"kv-blocks={kv_blocks}", "--format", "json"],
        check=True, capture_output=True, text=True).stdout)["rows"][0]["summary"]
    return {
        "requests": reference["requests"],
        "prefixlint_seconds": round(ours, 2),
        "prefixlint_peak_rss_mib": round(rss / 1024, 1),
        "python_lru_seconds": round(python, 2),
        "python_peak_rss_mib": round(python_rss / 1024, 1),
        "ratio_python_over_prefixlint": round(python / ours, 1),
        "hit_rate": {"prefixlint": round(check["hit_rate"], 6), "python": round(reference["rows"][0]["hit_rate"], 6)},
        "infinite": {"prefixlint": round(check["infinite_cache_hit_rate"], 6),
                     "python": round(reference["infinite_cache_hit_rate"], 6)},
    }


def sweep(binary, trace, capacities):
    one = []
    for n in capacities:
        seconds, _ = timed([binary, "simulate", "--no-config", trace, "--block-size", "16",
                            "--kv-blocks", str(n), "-o", os.devnull])
        one.append(seconds)
    swept, rss = timed([binary, "simulate", "--no-config", trace, "--block-size", "16", "--sweep",
                        "kv-blocks=" + ",".join(map(str, capacities)), "-o", os.devnull])
    return {
        "capacities": capacities,
        "one_replay_seconds_each": [round(s, 2) for s in one],
        "sum_of_8_replays_seconds": round(sum(one), 2),
        "max_replay_x8_seconds": round(max(one) * 8, 2),
        "sweep_seconds": round(swept, 2),
        "sweep_peak_rss_mib": round(rss / 1024, 1),
        "ratio_sweep_over_sum_of_replays": round(swept / sum(one), 2),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("binary")
    p.add_argument("--workdir", default=tempfile.gettempdir())
    p.add_argument("--requests", type=int, default=1_000_000)
    p.add_argument("--keep", action="store_true", help="keep the generated traces")
    a = p.parse_args()
    made = []
    for shape in ("conversation", "toolagent"):
        big = os.path.join(a.workdir, f"simulate-bench-{shape}-{a.requests}.jsonl")
        small = os.path.join(a.workdir, f"simulate-bench-{shape}-12000.jsonl")
        generate(small, shape, 12000)
        tile(small, big, a.requests)
        made += [big, small]
        print(json.dumps({"shape": shape, "million": million(a.binary, big, 8000)}), flush=True)
        print(json.dumps({"shape": shape, "sweep": sweep(
            a.binary, small, [2000, 4000, 8000, 12000, 16000, 24000, 32000, 48000])}), flush=True)
    if not a.keep:
        for path in made:
            os.remove(path)


if __name__ == "__main__":
    main()
