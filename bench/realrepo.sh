#!/usr/bin/env bash
# Prints issue 18's target 4: `prefixlint check DIR` (zero config) on a generated prompt
# repository of 500 templates against the Python pipeline doing the same work.
# Usage: bench/realrepo.sh [--runs N]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.d/10-python.sh
cargo build --release --locked --quiet
mkdir -p bench/out
[ -f bench/out/tokenizer.json ] || gzip -dc assets/qwen3/tokenizer.json.gz > bench/out/tokenizer.json
# Generated (git-ignored), deterministically from a fixed seed.
[ -d bench/out/realrepo ] || python3 bench/gen_realrepo.py bench/out/realrepo --templates 500
exec "$PYTHON_VENV/bin/python" bench/realrepo.py "${CARGO_TARGET_DIR:-target}/release/prefixlint" \
  "$PYTHON_VENV/bin/python" bench/out/tokenizer.json bench/out/realrepo bench/out/realrepo-work "$@"
