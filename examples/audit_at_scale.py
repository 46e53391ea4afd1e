"""`prefixlint audit` of a large request log on Ray Data: the two-phase design (docs/python.md,
"At scale").

1. A parallel map on the engine: the log is read in byte ranges (one task each), every
   record gets its session key as `prefixlint audit` reads it, the rows are grouped by
   session (`groupby(...).map_groups`), and each group is audited in log order by a
   `prefixlint.Auditor`: its `requests[]` entries, its summary, and a compact cache key per
   request (its blocks' chained hashes and time).
2. A cheap replay on the driver: the keys, sorted in log order by the engine, are fed to
   `prefixlint.Replay`, the engine's cache model, for the hits one session gets from another.

Requests without a session key form one fallback group (the empty key), audited in log order
by one worker; the summary counts them (`requests_without_session`).

    python examples/audit_at_scale.py LOG [--workers N] [--engine SPEC] [--compare PREFIXLINT]
        [--address ADDRESS]

Local mode starts Ray on this machine with N worker CPUs. On a cluster, the same script with
`--address auto` (on a cluster node) or `--address ray://HEAD:10001` runs the same code on the
cluster's workers: the log path must then be readable from every node (a shared file
system), and each worker needs the prefixlint wheel installed (or a `runtime_env` with it).
`--compare` runs the single-process `prefixlint audit --format json` on the same log and
checks that the summaries are equal, field for field.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import pandas as pd
import ray

import prefixlint

# One Auditor per worker process and engine: the tokenizer and chat template load once.
_AUDITORS = {}


def auditor(engine):
    if engine not in _AUDITORS:
        _AUDITORS[engine] = prefixlint.Auditor(engine=engine)
    return _AUDITORS[engine]


def byte_ranges(path, parts):
    """`parts` ranges of the file that start and end at line starts."""
    size = os.path.getsize(path)
    cuts = [0]
    with open(path, "rb") as f:
        for i in range(1, parts):
            f.seek(max(cuts[-1], size * i // parts))
            f.readline()
            cuts.append(min(f.tell(), size))
    cuts.append(size)
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def count_lines(row):
    with open(row["path"], "rb") as f:
        f.seek(row["start"])
        data = f.read(row["end"] - row["start"])
    return {**row, "lines": data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)}


def records(row, engine):
    """The rows of one byte range: file, line, session key ("" for none), text."""
    a = auditor(engine)
    with open(row["path"], "rb") as f:
        f.seek(row["start"])
        data = f.read(row["end"] - row["start"])
    out = []
    for i, text in enumerate(data.split(b"\n")):
        if not text.strip():
            continue
        out.append({"file": row["name"], "line": row["first_line"] + i,
                    "session": a.session_of(text) or "", "text": text})
    return out


def audit_group(group: pd.DataFrame, engine) -> pd.DataFrame:
    """Phase 1 for one session (or the fallback group): entries, keys, the summary."""
    group = group.sort_values(["file", "line"])
    a = auditor(engine)
    a.reset()
    entries = a.audit(list(group["text"]), file=list(group["file"]), lines=list(group["line"]))
    rows = [{"kind": "key", "file": f, "line": n, "data": k} for f, n, k in a.keys()]
    rows += [{"kind": "request", "file": e["file"], "line": e["line"],
              "data": json.dumps(e).encode()} for e in entries]
    rows.append({"kind": "summary", "file": "", "line": 0,
                 "data": json.dumps(a.summary()).encode()})
    return pd.DataFrame(rows)


def audit(log, workers, engine=None, address=None, name=None):
    """The summary and the entries (by line) of `log`, audited on Ray Data."""
    ray.init(address=address, num_cpus=None if address else workers,
             include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    name = name or log
    ranges = [{"path": log, "name": name, "start": a, "end": b}
              for a, b in byte_ranges(log, max(2, 4 * workers))]
    counted = ray.data.from_items(ranges).map(count_lines).take_all()
    first = 1
    for r in sorted(counted, key=lambda r: r["start"]):
        r["first_line"] = first
        first += r["lines"]
    rows = ray.data.from_items(counted).flat_map(records, fn_args=(engine,))
    # A few partitions per worker: each is one shuffle task and one block to sort later.
    results = (rows.groupby("session", num_partitions=2 * workers)
                   .map_groups(audit_group, fn_args=(engine,), batch_format="pandas")
                   .materialize())
    summaries = [json.loads(r["data"]) for r in
                 results.filter(lambda r: r["kind"] == "summary").take_all()]
    # Phase 2: the keys in log order, through the cache model, a batch at a time.
    replay = prefixlint.Replay(engine=engine)
    keys = results.filter(lambda r: r["kind"] == "key").sort(["file", "line"])
    predicted = []
    for batch in keys.iter_batches(batch_size=65536, batch_format="pandas"):
        predicted += replay.feed(list(batch["data"]))
    summary = replay.apply(prefixlint.merge_summaries(summaries))
    return summary, results, predicted


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--engine")
    parser.add_argument("--address", help="a Ray cluster (default: local mode)")
    parser.add_argument("--compare", metavar="PREFIXLINT",
                        help="check the summary against this binary's single-process audit")
    args = parser.parse_args()
    start = time.perf_counter()
    summary, _, _ = audit(args.log, args.workers, args.engine, args.address)
    elapsed = time.perf_counter() - start
    print(json.dumps({"workers": args.workers, "seconds": round(elapsed, 1),
                      "requests": summary["requests"],
                      "requests_without_session": summary["requests_without_session"],
                      "predicted_cached_tokens": summary["predicted_cached_tokens"]}))
    if args.compare:
        start = time.perf_counter()
        command = [args.compare, "audit", "--no-config", "--format", "json", args.log]
        if args.engine:
            command += ["--engine", args.engine]
        done = subprocess.run(command, capture_output=True)
        single = time.perf_counter() - start
        expected = json.loads(done.stdout)["summary"]
        equal = summary == expected
        print(json.dumps({"single_process_seconds": round(single, 1), "summaries_equal": equal}))
        if not equal:
            for field in expected:
                if summary.get(field) != expected[field]:
                    print(f"differs: {field}", file=sys.stderr)
            sys.exit(1)


if __name__ == "__main__":
    main()
