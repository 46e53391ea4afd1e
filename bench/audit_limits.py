#!/usr/bin/env python3
"""Issue 13's limits: `prefixlint audit`'s peak memory (max RSS) as the log grows, on a line of
100 MB, and on a 2 GB log streamed from a generator through stdin (never on disk).

Usage: bench/audit_limits.py PREFIXLINT OUT_DIR [--stream-gb G]
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from audit import generate, records  # noqa: E402


def run(cmd, feed=None):
    """Runs `cmd`, feeding it what `feed` yields on stdin: (seconds, its max RSS in MB, bytes fed)."""
    # GNU time measures the command alone (a child's max RSS counts what it inherits at fork
    # from this Python process otherwise).
    measured = Path(os.environ.get("TMPDIR", "/tmp")) / f"audit-limits-{os.getpid()}.rss"
    cmd = ["/usr/bin/time", "-f", "%M", "-o", str(measured)] + cmd
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE if feed else subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    fed = 0
    if feed:
        for chunk in feed:
            data = chunk.encode()
            proc.stdin.write(data)
            fed += len(data)
        proc.stdin.close()
    stderr = proc.stderr.read()
    proc.wait()
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{cmd} failed ({proc.returncode}): {stderr[-2000:].decode(errors='replace')}")
    rss_kb = int(measured.read_text().split()[-1])
    measured.unlink()
    return elapsed, rss_kb / 1024, fed


def batched(lines, size=1 << 20):
    buf, n = [], 0
    for line in lines:
        buf.append(line)
        n += len(line)
        if n >= size:
            yield "".join(buf)
            buf, n = [], 0
    if buf:
        yield "".join(buf)


def until_bytes(lines, limit):
    total = 0
    for line in lines:
        yield line
        total += len(line)
        if total >= limit:
            return


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("prefixlint")
    parser.add_argument("out")
    parser.add_argument("--stream-gb", type=float, default=2.0)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    audit = [args.prefixlint, "audit", "--engine", "llama.cpp", "--format", "json", "--output", "/dev/null"]
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    peaks = {}
    for n in (1_000, 10_000, 100_000):
        log = out / f"audit-{n}.jsonl"
        if not log.is_file():
            generate(log, n)
        seconds, rss, _ = run(audit + [str(log)])
        peaks[n] = rss
        print(f"{n:>7,} requests ({log.stat().st_size / 1e6:.1f} MB): peak RSS {rss:.1f} MB, {seconds:.2f} s")
    print(f"peak RSS 100,000 / 10,000 requests: {peaks[100_000] / peaks[10_000]:.2f}x")

    big = out / "audit-100mb-line.jsonl"
    with open(big, "w") as f:
        small = list(records(3))
        f.write(small[0])
        f.write('{"request": {"messages": [{"role": "user", "content": "')
        chunk = "y" * (1 << 20)
        for _ in range(100):
            f.write(chunk)
        f.write('"}]}}\n')
        f.write(small[1])
    seconds, rss, _ = run(audit + [str(big)])
    print(f"a 100 MB line between two requests: skipped unread, peak RSS {rss:.1f} MB, {seconds:.2f} s")
    big.unlink()

    limit = int(args.stream_gb * 1e9)
    seconds, rss, fed = run(audit + ["-"], feed=batched(until_bytes(records(None), limit)))
    print(f"{fed / 1e9:.2f} GB log generated into stdin: peak RSS {rss:.1f} MB, {seconds:.1f} s "
          f"({fed / 1e6 / seconds:.1f} MB/s)")


if __name__ == "__main__":
    main()
