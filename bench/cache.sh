#!/usr/bin/env bash
# Prints the issue-18 results-cache ratio: `check` on the unchanged 1,000-template corpus
# with a warm results cache, as a share of the same run with an empty one (target <= 10%).
# Usage: bench/cache.sh [--runs N]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.d/10-python.sh
cargo build --release --locked --quiet
mkdir -p bench/out
# The corpus is generated (git-ignored), deterministically from a fixed seed.
[ -d bench/corpus ] || python3 bench/gen_corpus.py bench/corpus --templates 1000
exec "$PYTHON_VENV/bin/python" bench/cache.py "${CARGO_TARGET_DIR:-target}/release/prefixlint" \
  bench/corpus bench/out/results-cache "$@"
