"""Issue 31's targets side by side, on three corpora and against two Python baselines;
bench/targets.sh prepares everything and calls this.

usage: targets.py PREFIXLINT PYTHON TOKENIZER_JSON OUT_DIR [--runs N] [--only NAME,...]

Corpora (bench/targets.sh generates them, deterministically):
- generated: bench/gen_corpus.py, 1,000 templates of 4 KB, each with a samples file;
- realrepo: bench/gen_realrepo.py, a prompt repository (includes, macros, zero config,
  synthesized samples);
- fewshot: bench/gen_fewshot.py, many small templates, few samples files, synthesized
  samples, long few-shot blocks (inline, shared partials, loops).

Baselines, each given the same samples prefixlint renders (written beforehand, untimed: a
template's own samples file, else `prefixlint samples T`, the same synthesizer as check's):
- full: the Python pipeline a user would write to get what `check` reports (Jinja2,
  `tokenizers` encode per render, longest common prefix, recoverable tokens:
  bench/baseline.py on the generated corpus, bench/realrepo_baseline.py on the others);
- minimal: Jinja2 render over YAML samples, one `encode_batch` (all cores), the longest
  common prefix (bench/baseline_minimal.py).
Both must print the same per-template numbers as prefixlint, or the script stops.

Per corpus, each round runs, one after the other: `check --no-cache` (cold), `check` with
the results cache left by an earlier run (warm, unchanged corpus), the full and the minimal
baseline; the rounds repeat N times, and every figure is a median, with the load average
taken before each round. Then, interleaved the same way: 1,000 against 10,000 templates
(peak RSS), a 5-template pre-commit run against Python's `Tokenizer.from_file` alone, and
the physical floor (process start, reading the files). Ends with one summary table; the
headline is the lowest cold ratio.

Every run, prefixlint's and the baselines' alike, is measured one way (`timed`): the wall
from the spawn to `wait4`, CPU and peak RSS from `wait4`'s rusage, stdout and stderr into
temporary files (no `/usr/bin/time`, no pipe for Python to poll while the process writes).
"""
import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
KEYS = ("samples", "tokens", "shared_prefix_tokens")


def progress(text):
    """What the script is doing, on stderr: a run takes minutes."""
    print(f"[{time.strftime('%H:%M:%S')}, load {loadavg():.1f}] {text}", file=sys.stderr, flush=True)


def loadavg():
    return os.getloadavg()[0]


def timed(cmd, cwd=None, env=None):
    """(wall s, peak RSS MiB, stdout, CPU s) of one whole process, measured the same way for
    every command (prefixlint cold and warm, the Python baselines): stdout and stderr go to
    unlinked temporary files, the wall is `perf_counter` from the spawn to `wait4`'s return,
    CPU (user + system, microseconds) and peak RSS are `wait4`'s rusage of the process.

    Until round 8 each run went through `/usr/bin/time -v` with its output captured by
    `subprocess.run(capture_output=True, text=True)`: the wall then held `time`'s own
    exec and exit and Python's polling of both pipes (about 6 ms a run at load 3.5, the
    same for a cold and a warm run), and `time -v` gave CPU to 10 ms only."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode(errors="replace")
    if proc.returncode not in (0, 1):
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{stderr[-3000:]}")
    # ru_maxrss is in KiB on Linux (what `time -v` printed as its maximum resident set).
    return seconds, usage.ru_maxrss / 1024, stdout, usage.ru_utime + usage.ru_stime


def interleaved(named, runs):
    """Runs each (cmd, cwd, env) of `named` once per round, `runs` rounds; returns
    name -> {wall, rss, cpu, out} (medians; `out` the last stdout) and the rounds' loads."""
    rows = {name: [] for name in named}
    outs, loads = {}, []
    for n in range(runs):
        progress(f"round {n + 1}/{runs}: {', '.join(named)}")
        loads.append(loadavg())
        for name, (cmd, cwd, env) in named.items():
            wall, rss, out, cpu = timed(cmd, cwd, env)
            rows[name].append((wall, rss, cpu))
            outs[name] = out
    med = {
        name: {
            "wall": statistics.median(r[0] for r in rs),
            "rss": statistics.median(r[1] for r in rs),
            "cpu": statistics.median(r[2] for r in rs),
            "out": outs[name],
        }
        for name, rs in rows.items()
    }
    return med, loads


def numbers(report, keys):
    base = os.path.basename
    return {base(t["path"]): {k: t[k] for k in keys} for t in json.loads(report)["templates"]}


def agree(ours, theirs, keys, what):
    a, b = numbers(ours, keys), numbers(theirs, keys)
    if a != b:
        for k in [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)][:5]:
            print(f"  MISMATCH {k}: prefixlint {a.get(k)} {what} {b.get(k)}")
        sys.exit(f"the numbers of prefixlint and the {what} baseline differ")
    return len(a)


def stage_times(cmd, cwd, env, runs=3):
    """Median stage CPU seconds and the rendered bytes (PREFIXLINT_STAGE_TIMES=1)."""
    per, rendered = {}, 0
    for _ in range(runs):
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                              env=dict(env, PREFIXLINT_STAGE_TIMES="1"))
        for name, s in re.findall(r"^  stage (\w+) ([\d.]+) s", done.stderr, re.M):
            per.setdefault(name, []).append(float(s))
        for name, s in re.findall(r"^  (process cpu|stages total) ([\d.]+) s", done.stderr, re.M):
            per.setdefault(name, []).append(float(s))
        found = re.search(r"^  rendered bytes (\d+)", done.stderr, re.M)
        rendered = int(found.group(1)) if found else 0
    return {k: statistics.median(v) for k, v in per.items()}, rendered


class Corpus:
    def __init__(self, name, root, check_args, full, search):
        self.name, self.root, self.check_args, self.full, self.search = name, root, check_args, full, search


def prepare(prefixlint, corpus, env, out):
    """The listing of checked templates and each one's samples, for the baselines (untimed)."""
    check = [prefixlint, "check"] + corpus.check_args + ["--format", "json", "--no-cache"]
    first = subprocess.run(check, cwd=corpus.root, env=env, capture_output=True, text=True)
    if first.returncode not in (0, 1):
        sys.exit(f"prefixlint check failed on {corpus.name} ({first.returncode}):\n{first.stderr[-3000:]}")
    report = json.loads(first.stdout)
    if report.get("errors"):
        sys.exit(f"{corpus.name}: prefixlint could not check {len(report['errors'])} templates: {report['errors'][:2]}")
    names = [t["path"] for t in report["templates"]]
    samples_dir = os.path.join(out, "samples")
    for name in names:
        target = os.path.join(samples_dir, name + ".samples.yaml")
        if os.path.exists(target):
            continue
        os.makedirs(os.path.dirname(target), exist_ok=True)
        own = os.path.join(corpus.root, os.path.splitext(name)[0] + ".samples.yaml")
        if os.path.exists(own):
            shutil.copyfile(own, target)
        else:
            text = subprocess.run([prefixlint, "samples", name], cwd=corpus.root, env=env,
                                  capture_output=True, text=True, check=True).stdout
            with open(target, "w", encoding="utf-8") as f:
                f.write(text)
    listing = os.path.join(out, "templates.txt")
    with open(listing, "w", encoding="utf-8") as f:
        f.write("\n".join(names) + "\n")
    files = [os.path.join(d, n) for d, ds, ns in os.walk(corpus.root) if ".git" not in d.split(os.sep) for n in ns]
    own_samples = sum(1 for n in names if os.path.exists(os.path.join(corpus.root, os.path.splitext(n)[0] + ".samples.yaml")))
    return check, names, samples_dir, listing, files, own_samples


def measure_corpus(args, corpus, env):
    out = os.path.join(args.out, "targets", corpus.name)
    os.makedirs(out, exist_ok=True)
    progress(f"{corpus.name}: the baselines' samples (untimed)")
    check, names, samples_dir, listing, files, own_samples = prepare(args.prefixlint, corpus, env, out)
    cache_dir = os.path.join(out, "results-cache")
    shutil.rmtree(cache_dir, ignore_errors=True)
    cached = check[:-1] + ["--cache-dir", cache_dir]
    subprocess.run(cached, cwd=corpus.root, env=env, capture_output=True, check=False)  # fills the cache
    py = [args.python, "-P"]
    full = py + corpus.full(args.tokenizer, samples_dir, listing)
    minimal = py + [os.path.join(HERE, "baseline_minimal.py"), args.tokenizer, corpus.root, samples_dir,
                    listing] + corpus.search
    med, loads = interleaved(
        {
            "cold": (check, corpus.root, env),
            "warm": (cached, corpus.root, env),
            "full": (full, corpus.root, env),
            "minimal": (minimal, corpus.root, env),
        },
        args.runs,
    )
    if med["warm"]["out"] != med["cold"]["out"]:
        sys.exit(f"{corpus.name}: the warm run's report differs from --no-cache's")
    agree(med["cold"]["out"], med["full"]["out"], KEYS + ("recoverable_tokens",), "full")
    agree(med["cold"]["out"], med["minimal"]["out"], KEYS, "minimal")
    progress(f"{corpus.name}: stage times")
    stages, rendered = stage_times(check, corpus.root, env)
    size = sum(os.path.getsize(f) for f in files)
    read = interleaved({"read": (["sh", "-c", 'find . -type f -not -path "./.git/*" -print0 | xargs -0 cat > /dev/null'],
                                 corpus.root, env)}, args.runs)[0]["read"]
    return {
        "name": corpus.name, "templates": len(names), "own_samples": own_samples, "files": len(files),
        "bytes": size, "rendered": rendered, "stages": stages, "read": read, "loads": loads, **med,
    }


def main():
    parser = argparse.ArgumentParser()
    for name in ("prefixlint", "python", "tokenizer", "out"):
        parser.add_argument(name)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", default="generated,realrepo,fewshot", help="corpora to measure")
    args = parser.parse_args()
    args.prefixlint, args.python, args.tokenizer, args.out = map(
        os.path.abspath, (args.prefixlint, args.python, args.tokenizer, args.out))
    env = dict(os.environ, PREFIXLINT_CACHE_DIR=os.path.join(args.out, "targets", "tokenizer-cache"), NO_COLOR="1")
    reference = lambda tok, samples, listing: [os.path.join(HERE, "realrepo_baseline.py"), tok, ".", samples, listing]
    corpora = {
        "generated": Corpus("generated", os.path.join(HERE, "corpus"), [".", "--no-config"],
                            lambda tok, samples, listing: [os.path.join(HERE, "baseline.py"), tok, "."], []),
        "realrepo": Corpus("realrepo", os.path.join(args.out, "realrepo"), ["."], reference, ["prompts"]),
        "fewshot": Corpus("fewshot", os.path.join(args.out, "fewshot"), ["."], reference, ["prompts"]),
    }
    print(f"machine: {platform.node()}, {os.cpu_count()} CPUs, load average {os.getloadavg()}")
    print(f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, runs per figure: {args.runs} (median, interleaved)")
    # The converted tokenizer is cached per machine: one run fills it, as any user's first.
    subprocess.run([args.prefixlint, "check", ".", "--no-config", "--no-cache"], cwd=os.path.join(args.out, "corpus-5"),
                   env=env, capture_output=True)
    results = [measure_corpus(args, corpora[name], env) for name in args.only.split(",")]

    # Memory: 10x the templates; pre-commit: 5 templates against the tokenizer's load alone;
    # process start: the floor under any run.
    check = lambda path: [args.prefixlint, "check", ".", "--format", "json", "--no-config", "--no-cache"]
    base = interleaved(
        {
            "1k": (check(None), os.path.join(HERE, "corpus"), env),
            "10k": (check(None), os.path.join(args.out, "corpus-10x"), env),
            "5": (check(None), os.path.join(args.out, "corpus-5"), env),
            "load": ([args.python, "-P", os.path.join(HERE, "baseline.py"), "--load-only", args.tokenizer], None, env),
            "start": ([args.prefixlint, "--version"], None, env),
        },
        args.runs,
    )
    med, loads = base

    print()
    print("## Per corpus (medians of interleaved whole-process runs; CPU = user + sys)")
    print()
    print("| corpus | templates (own samples files) | MB rendered | load avg (min-max) | prefixlint --no-cache | warm rerun | python full | python minimal |")
    print("|---|---:|---:|---|---:|---:|---:|---:|")
    for r in results:
        cell = lambda m: f"{m['wall']*1000:.0f} ms ({m['cpu']*1000:.0f} ms CPU, {m['rss']:.0f} MiB)"
        print(f"| {r['name']} | {r['templates']} ({r['own_samples']}) | {r['rendered']/1e6:.1f} | "
              f"{min(r['loads']):.1f}-{max(r['loads']):.1f} | {cell(r['cold'])} | {cell(r['warm'])} | "
              f"{cell(r['full'])} | {cell(r['minimal'])} |")
    print()
    print("| corpus | full / prefixlint | minimal / prefixlint | warm / --no-cache | MB/s rendered | templates/s | "
          "tokenizer MB/s (stage, per core) | read files | floor (start + read + tokenize on 2 cores) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    cold_ratios = []
    for r in results:
        wall = r["cold"]["wall"]
        full, minimal = r["full"]["wall"] / wall, r["minimal"]["wall"] / wall
        cold_ratios += [(full, r["name"], "full"), (minimal, r["name"], "minimal")]
        tok = r["rendered"] / 1e6 / r["stages"].get("tokenize", float("nan"))
        floor = med["start"]["wall"] + r["read"]["wall"] + r["rendered"] / 1e6 / tok / 2
        print(f"| {r['name']} | {full:.1f}x (CPU {r['full']['cpu']/r['cold']['cpu']:.1f}x) | "
              f"{minimal:.1f}x (CPU {r['minimal']['cpu']/r['cold']['cpu']:.1f}x) | "
              f"{100*r['warm']['wall']/wall:.1f}% (CPU {100*r['warm']['cpu']/r['cold']['cpu']:.1f}%) | "
              f"{r['rendered']/1e6/wall:.1f} | {r['templates']/wall:.0f} | {tok:.0f} | "
              f"{r['read']['wall']*1000:.0f} ms ({r['files']} files, {r['bytes']/1e6:.1f} MB) | {floor*1000:.0f} ms |")
    print()
    print("stage CPU (PREFIXLINT_STAGE_TIMES=1, summed over threads, median of 3):")
    for r in results:
        stages = {k: v for k, v in r["stages"].items() if " " not in k}
        total = sum(stages.values()) or float("nan")
        print(f"  {r['name']}: " + ", ".join(f"{k} {v:.3f} s ({100*v/total:.0f}%)" for k, v in stages.items())
              + f"; stages {total:.3f} s of process CPU {r['stages'].get('process cpu', float('nan')):.3f} s")
    print()
    print(f"other runs, load average {min(loads):.1f}-{max(loads):.1f}:")
    for name, label in [("1k", "check, generated 1,000 templates"), ("10k", "check, generated 10,000 templates"),
                        ("5", "check, 5 templates (pre-commit)"), ("load", "python Tokenizer.from_file only"),
                        ("start", "prefixlint --version (process start)")]:
        m = med[name]
        print(f"  {label}: {m['wall']*1000:.0f} ms wall, {m['cpu']*1000:.0f} ms CPU, {m['rss']:.0f} MiB")
    print()
    verdict = lambda ok: "MET" if ok else "NOT MET"
    low = min(cold_ratios)
    print("## Targets")
    print()
    print(f"| target | figure | status |")
    print("|---|---|---|")
    print(f"| cold >= 40x, every corpus, both baselines (headline: the lowest) | **{low[0]:.1f}x** ({low[1]}, {low[2]}); "
          + ", ".join(f"{n}/{b} {x:.1f}x" for x, n, b in cold_ratios) + f" | {verdict(low[0] >= 40)} |")
    warm = [(100 * r["warm"]["wall"] / r["cold"]["wall"], r["name"]) for r in results]
    print(f"| warm rerun <= 10% of --no-cache | " + ", ".join(f"{n} {x:.1f}%" for x, n in warm)
          + f" | {verdict(max(warm)[0] <= 10)} |")
    rss = med["10k"]["rss"] / med["1k"]["rss"]
    print(f"| peak RSS 10k <= 1.3x 1k | {med['10k']['rss']:.1f} / {med['1k']['rss']:.1f} MiB = {rss:.2f} | {verdict(rss <= 1.3)} |")
    pre = med["5"]["wall"] / med["load"]["wall"]
    print(f"| 5 templates <= 0.5x python tokenizer load | {med['5']['wall']*1000:.0f} / {med['load']['wall']*1000:.0f} ms = {pre:.2f} | {verdict(pre <= 0.5)} |")
    print()
    print(f"load average at the end: {os.getloadavg()}, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")


if __name__ == "__main__":
    main()
