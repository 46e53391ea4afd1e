"""Target 4 of issue 18: `prefixlint check DIR` with zero config on a generated prompt
repository, against the Python pipeline doing the same work; bench/realrepo.sh prepares
everything and calls this.

usage: realrepo.py PREFIXLINT PYTHON TOKENIZER_JSON REPO OUT_DIR [--runs N]

Before timing (not timed): the templates prefixlint checks and, for each, the samples it
synthesizes (`prefixlint samples T`, the same synthesizer) into OUT_DIR/samples/, for the
Python side. Then both whole processes are run N times, interleaved; the figures are
medians, and the per-template numbers of both must be equal.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare import check_agreement, timed  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    for name in ("prefixlint", "python", "tokenizer", "repo", "out"):
        parser.add_argument(name)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    prefixlint, repo = os.path.abspath(args.prefixlint), os.path.abspath(args.repo)
    out = os.path.abspath(args.out)
    env = dict(os.environ, PREFIXLINT_CACHE_DIR=os.path.join(out, "cache"), NO_COLOR="1")
    check = [prefixlint, "check", ".", "--format", "json", "--no-cache"]
    first = subprocess.run(check, cwd=repo, env=env, capture_output=True, text=True)
    if first.returncode not in (0, 1):
        sys.exit(f"prefixlint check failed ({first.returncode}):\n{first.stderr[-3000:]}")
    names = [t["path"] for t in json.loads(first.stdout)["templates"]]
    samples_dir = os.path.join(out, "samples")
    for name in names:
        target = os.path.join(samples_dir, name + ".samples.yaml")
        if not os.path.exists(target):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            text = subprocess.run([prefixlint, "samples", name], cwd=repo, env=env,
                                  capture_output=True, text=True, check=True).stdout
            with open(target, "w", encoding="utf-8") as f:
                f.write(text)
    listing = os.path.join(out, "templates.txt")
    with open(listing, "w", encoding="utf-8") as f:
        f.write("\n".join(names) + "\n")
    rendered = sum(os.path.getsize(os.path.join(repo, n)) for n in names)
    print(f"repository: {len(names)} templates checked ({rendered / 1e6:.2f} MB of template text), "
          f"{sum(1 for _ in os.scandir(os.path.join(repo, 'prompts', 'partials')))} shared partials")
    print(f"load average at the start: {os.getloadavg()}, runs per figure: {args.runs} (median)")
    python = [args.python, "-P", os.path.join(HERE, "realrepo_baseline.py"), os.path.abspath(args.tokenizer),
              repo, samples_dir, listing]
    samples = {"prefixlint": [], "python": []}
    outputs = {}
    here = os.getcwd()
    for _ in range(args.runs):
        for side, cmd in (("prefixlint", check), ("python", python)):
            os.chdir(repo)
            seconds, rss, stdout, cpu = timed(cmd, env)
            os.chdir(here)
            samples[side].append((seconds, rss, cpu))
            outputs[side] = stdout
    agreed = check_agreement(outputs["prefixlint"], outputs["python"])
    print(f"numbers agree on all {agreed} templates (samples, tokens min/max, shared prefix, recoverable)")
    print("| run | median wall | median CPU (user+sys) | peak RSS |")
    print("|---|---:|---:|---:|")
    med = {}
    for side, label in (("prefixlint", "prefixlint check DIR (zero config, --no-cache)"),
                        ("python", "python: Jinja2 + tokenizers, same samples")):
        rows = samples[side]
        med[side] = tuple(statistics.median(r[i] for r in rows) for i in range(3))
        print(f"| {label} | {med[side][0]*1000:.0f} ms | {med[side][2]*1000:.0f} ms | {med[side][1]:.0f} MiB |")
    ratio = med["python"][0] / med["prefixlint"][0]
    print(f"target 4: python / prefixlint on the repository = {ratio:.1f}x (wall), "
          f"{med['python'][2] / med['prefixlint'][2]:.1f}x (CPU)")
    print(f"load average at the end: {os.getloadavg()}, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")


if __name__ == "__main__":
    main()
