#!/usr/bin/env bash
# Issues 13 and 30: `prefixlint audit` on a generated 100,000-request log against a Python
# pipeline doing the same work (json, transformers' apply_chat_template, tokenizers, longest
# prefix against the previous request), interleaved with prefixlint on one core. Prints wall
# and CPU ratios side by side, requests/s and MB/s, 1 -> 2 core scaling, the load average, and
# whether every request's numbers agree. Usage: bench/audit.sh [--requests N] [--runs K]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.d/10-python.sh
cargo build --release --locked --quiet
target="${CARGO_TARGET_DIR:-target}"
exec "$PYTHON_VENV/bin/python" bench/audit.py "$target/release/prefixlint" bench/out "$@"
