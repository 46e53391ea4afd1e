#!/usr/bin/env bash
# Issue 18, target 2: the tokenizer stage alone on the corpus's renders, one thread each:
# prefixlint's engine, the `tokenizers` crate's own encode, and the Python library.
# All three must produce the same ids (same SHA-256). Usage: bench/tokenize_stage.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.d/10-python.sh
cargo build --release --locked --quiet --example tokenize_stage
mkdir -p bench/out
[ -f bench/out/tokenizer.json ] || gzip -dc assets/qwen3/tokenizer.json.gz > bench/out/tokenizer.json
[ -d bench/corpus ] || python3 bench/gen_corpus.py bench/corpus --templates 1000
# The renders, from Jinja2 (they equal prefixlint's: bench/compare.sh checks the figures).
[ -f bench/out/renders.jsonl ] || "$PYTHON_VENV/bin/python" -P bench/tokenize_stage.py --dump bench/corpus bench/out/renders.jsonl
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"${CARGO_TARGET_DIR:-target}/release/examples/tokenize_stage" bench/out/renders.jsonl bench/out/tokenizer.json
"$PYTHON_VENV/bin/python" -P bench/tokenize_stage.py bench/out/tokenizer.json bench/out/renders.jsonl
