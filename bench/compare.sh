#!/usr/bin/env bash
# Prints the issue-7 ratios: prefixlint vs the Python baseline on the generated corpus
# (target 1), a 5-template run vs Python's Tokenizer.from_file (target 2), and 10x the
# corpus vs 1x, time and peak memory (target 3; issue 12: peak RSS 10x <= 1.3x 1x), and with
# --against BIN, the wall time of another build (e.g. main's) on the 1,000-template corpus.
# Issue 18: the same corpus run gives the 40x target, MB of rendered text per second, and the
# stage shares (separate runs with PREFIXLINT_STAGE_TIMES=1: CPU per stage, summed over threads).
# Usage: bench/compare.sh [--runs N] [--against PATH/TO/prefixlint]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.d/10-python.sh
cargo build --release --locked --quiet
mkdir -p bench/out
[ -f bench/out/tokenizer.json ] || gzip -dc assets/qwen3/tokenizer.json.gz > bench/out/tokenizer.json
# The corpora are generated (git-ignored), deterministically from a fixed seed.
[ -d bench/corpus ] || python3 bench/gen_corpus.py bench/corpus --templates 1000
[ -d bench/out/corpus-5 ] || python3 bench/gen_corpus.py bench/out/corpus-5 --templates 5
[ -d bench/out/corpus-10x ] || python3 bench/gen_corpus.py bench/out/corpus-10x --templates 10000
rm -rf bench/out/cache
exec "$PYTHON_VENV/bin/python" bench/compare.py "${CARGO_TARGET_DIR:-target}/release/prefixlint" \
  "$PYTHON_VENV/bin/python" bench/out/tokenizer.json bench/out "$@"
