#!/usr/bin/env bash
# Prints the results cache's figures on the 1,000-template corpus, against `--no-cache` runs
# interleaved with them: the warm run (unchanged corpus; issue 18, target <= 10%), the primary
# number, and the first run with an empty cache folder (issue 25, target <= 1.1x).
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
