"""Where a `check` run leaves a core idle: reads the `timeline ...` lines that
PREFIXLINT_TIMELINE=1 prints on stderr (src/timeline.rs) and splits the run's wall time by
how many threads were busy, naming what the lone busy thread did while the other core had
nothing to do.

usage: PREFIXLINT_TIMELINE=1 prefixlint check ... 2> run.txt; python3 bench/timeline.py run.txt [--cores 2]
"""
import argparse
import collections


def read(path):
    spans, end = [], None
    for line in open(path, encoding="utf-8", errors="replace"):
        parts = line.split()
        if not parts or parts[0] != "timeline":
            continue
        if parts[1] == "end":
            end = int(parts[2])
            continue
        thread, label, start, stop, cpu = parts[1], " ".join(parts[2:-3]), *map(int, parts[-3:])
        spans.append((int(thread), label, start, stop, cpu))
    return spans, end


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args()
    spans, end = read(args.file)
    if end is None:
        raise SystemExit("no `timeline end` line: was PREFIXLINT_TIMELINE=1 set?")
    points = sorted({0, end} | {s[2] for s in spans} | {s[3] for s in spans})
    by_busy = collections.Counter()
    alone = collections.Counter()
    for a, b in zip(points, points[1:]):
        busy = [s for s in spans if s[2] <= a and s[3] >= b and s[3] > s[2]]
        threads = {s[0] for s in busy}
        n = min(len(threads), args.cores)
        by_busy[n] += b - a
        if n == 0:
            alone["(nothing timed: start, exit, between spans)"] += b - a
        elif n < args.cores:
            for s in busy:
                alone[s[1]] += b - a
    print(f"wall {end / 1000:.1f} ms")
    for n in range(args.cores + 1):
        print(f"  {n} thread(s) busy: {by_busy[n] / 1000:.1f} ms ({100 * by_busy[n] / end:.1f}%)")
    print("while fewer than all cores were busy, the busy thread(s) did:")
    for label, us in alone.most_common():
        print(f"  {label}: {us / 1000:.1f} ms")
    totals = collections.defaultdict(lambda: [0, 0, 0])
    for thread, label, start, stop, cpu in spans:
        t = totals[label]
        t[0] += 1
        t[1] += stop - start
        t[2] += cpu
    print("spans (count, wall, thread CPU):")
    for label, (count, wall, cpu) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
        print(f"  {label}: {count}, {wall / 1000:.1f} ms, {cpu / 1000:.1f} ms CPU")


if __name__ == "__main__":
    main()
