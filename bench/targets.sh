#!/usr/bin/env bash
# Issue 31: every target on three corpora (generated, a prompt repository, many small
# few-shot templates) against two Python baselines (the full pipeline, a minimal
# Jinja2 + encode_batch one), interleaved, medians, the load average with each; ends with one
# summary table. Takes about 5 min at --runs 5 on 2 quiet cores.
# Usage: bench/targets.sh [--runs N] [--only generated,realrepo,fewshot]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.d/10-python.sh
cargo build --release --locked --quiet
mkdir -p bench/out
[ -f bench/out/tokenizer.json ] || gzip -dc assets/qwen3/tokenizer.json.gz > bench/out/tokenizer.json
# The corpora are generated (git-ignored), deterministically from fixed seeds.
[ -d bench/corpus ] || python3 bench/gen_corpus.py bench/corpus --templates 1000
[ -d bench/out/corpus-5 ] || python3 bench/gen_corpus.py bench/out/corpus-5 --templates 5
[ -d bench/out/corpus-10x ] || python3 bench/gen_corpus.py bench/out/corpus-10x --templates 10000
[ -d bench/out/realrepo ] || python3 bench/gen_realrepo.py bench/out/realrepo --templates 500
[ -d bench/out/fewshot ] || python3 bench/gen_fewshot.py bench/out/fewshot --templates 2000
exec "$PYTHON_VENV/bin/python" bench/targets.py "${CARGO_TARGET_DIR:-target}/release/prefixlint" \
  "$PYTHON_VENV/bin/python" bench/out/tokenizer.json bench/out "$@"
