#!/usr/bin/env bash
# Issue 18, target 2: the tokenizer stage alone on the corpus's renders, one thread each:
# prefixlint's engine, the `tokenizers` crate's own encode, and the Python library.
# All three must produce the same ids (same SHA-256). Usage: bench/tokenize_stage.sh [--runs N]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.d/10-python.sh
cargo build --release --locked --quiet --example tokenize_stage
mkdir -p bench/out
[ -f bench/out/tokenizer.json ] || gzip -dc assets/qwen3/tokenizer.json.gz > bench/out/tokenizer.json
[ -d bench/corpus ] || python3 bench/gen_corpus.py bench/corpus --templates 1000
# The renders, from Jinja2 (they equal prefixlint's: bench/compare.sh checks the figures).
[ -f bench/out/renders.jsonl ] || "$PYTHON_VENV/bin/python" -P bench/tokenize_stage.py --dump bench/corpus bench/out/renders.jsonl
runs=5
[ "${1:-}" = "--runs" ] && runs=$2
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg), runs: $runs (interleaved; medians below)"
for _ in $(seq "$runs"); do
  "${CARGO_TARGET_DIR:-target}/release/examples/tokenize_stage" bench/out/renders.jsonl bench/out/tokenizer.json
  "$PYTHON_VENV/bin/python" -P bench/tokenize_stage.py bench/out/tokenizer.json bench/out/renders.jsonl
done | tee bench/out/tokenize_stage.txt
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
# Medians per engine; every run of every engine must give the same ids.
python3 - bench/out/tokenize_stage.txt <<'PY'
import re, statistics, sys
runs = {}
hashes = set()
for line in open(sys.argv[1]):
    m = re.match(r"(.+?): (\d+) bytes, \d+ tokens, ([\d.]+) s, [\d.]+ MB/s, ids sha256 (\w+)", line)
    if m:
        runs.setdefault(m.group(1), []).append((int(m.group(2)), float(m.group(3))))
        hashes.add(m.group(4))
assert len(hashes) == 1, "the engines' ids differ"
for name, rows in runs.items():
    seconds = statistics.median(s for _, s in rows)
    print(f"median of {len(rows)}: {name}: {seconds:.3f} s, {rows[0][0] / seconds / 1e6:.1f} MB/s")
print(f"all runs: the same ids (sha256 {hashes.pop()})")
PY
