#!/usr/bin/env python3
"""Replays one Mooncake-format trace through NVIDIA Dynamo's mocker (the `ai-dynamo-runtime`
wheel from PyPI: its Rust core's offline `run_mocker_trace_replay`, a vLLM-like scheduler
and KV block manager on a virtual clock, no GPU) and through `prefixlint simulate`, at the
same block count and block size, one request at a time (the mocker's
`replay_concurrency=1`, simulate's `--sequential`), and prints both hit rates and where
they differ, request by request.

Usage: simulate_peer.py PREFIXLINT TRACE --block-size B --kv-blocks N [N ...]
       [--trace-block-size T] [--python VENV_PYTHON]

The mocker runs in the interpreter given by --python (a venv with ai-dynamo-runtime),
since it is not in the test venv.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time

MOCKER = r"""
import json, sys, time
import dynamo._core as core
trace, block, trace_block, blocks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), [int(b) for b in sys.argv[4:]]
out = []
for n in blocks:
    engine = {"engine": {"backend": "vllm", "block_size": block, "num_gpu_blocks": n,
                         "enable_prefix_caching": True, "max_num_seqs": 1}}
    start = time.perf_counter()
    r = core.run_mocker_trace_replay([trace], extra_engine_args=engine, trace_block_size=trace_block,
                                     replay_mode="offline", replay_concurrency=1, capture_per_request=True)
    seconds = time.perf_counter() - start
    per = sorted(r.per_request, key=lambda p: p["arrival_time_ms"])
    out.append({"kv_blocks": n, "seconds": seconds,
                "prefix_cache_reused_ratio": r.summary["prefix_cache_reused_ratio"],
                "reused": [p["reused_input_tokens"] for p in per],
                "inputs": [p["input_length"] for p in per],
                "statuses": sorted({p["terminal_status"] for p in per})})
json.dump(out, sys.stdout)
"""


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("prefixlint")
    p.add_argument("trace")
    p.add_argument("--block-size", type=int, required=True)
    p.add_argument("--trace-block-size", type=int, default=512)
    p.add_argument("--kv-blocks", type=int, nargs="+", required=True)
    p.add_argument("--python", default=sys.executable)
    a = p.parse_args()

    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(MOCKER)
        script = f.name
    mocker = json.loads(subprocess.run(
        [a.python, script, a.trace, str(a.block_size), str(a.trace_block_size), *map(str, a.kv_blocks)],
        check=True, capture_output=True, text=True).stdout)

    def replay(n):
        start = time.perf_counter()
        report = json.loads(subprocess.run(
            [a.prefixlint, "simulate", "--no-config", a.trace, "--input-format", "mooncake",
             "--trace-block-size", str(a.trace_block_size), "--block-size", str(a.block_size),
             "--kv-blocks", str(n), "--sequential", "--format", "json"],
            check=True, capture_output=True, text=True).stdout)
        return report, time.perf_counter() - start

    for row in mocker:
        n = row["kv_blocks"]
        # vLLM's num_gpu_blocks (simulate's --kv-blocks) counts its null block; the mocker's
        # num_gpu_blocks are all usable. Both are run: the same number, and the same
        # usable blocks (n + 1 for simulate).
        for label, blocks in (("same --kv-blocks", n), ("same usable blocks", n + 1)):
            ours, seconds = replay(blocks)
            cached = [r["predicted_cached_tokens"] for r in ours["requests"]]
            pairs = list(zip(cached, row["reused"]))
            diffs = [(i + 1, x, y) for i, (x, y) in enumerate(pairs) if x != y]
            print(json.dumps({
                "mocker_num_gpu_blocks": n,
                "prefixlint_kv_blocks": blocks,
                "compared": label,
                "block_size": a.block_size,
                "requests": len(cached),
                "mocker_requests": len(row["reused"]),
                "mocker_statuses": row["statuses"],
                "prefixlint_hit_rate": round(ours["summary"]["hit_rate"], 6),
                "mocker_hit_rate": round(sum(row["reused"]) / sum(row["inputs"]), 6),
                "mocker_prefix_cache_reused_ratio": round(row["prefix_cache_reused_ratio"], 6),
                "infinite_cache_hit_rate": round(ours["summary"]["infinite_cache_hit_rate"], 6),
                "requests_equal": len(pairs) - len(diffs),
                "requests_mocker_reuses_more": sum(1 for _, x, y in diffs if x < y),
                "requests_mocker_reuses_fewer": sum(1 for _, x, y in diffs if x > y),
                "first_differences (line, prefixlint, mocker)": diffs[:4],
                "seconds": {"prefixlint": round(seconds, 2), "mocker": round(row["seconds"], 2)},
            }))


if __name__ == "__main__":
    main()
