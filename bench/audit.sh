#!/usr/bin/env bash
# Issue 13: `prefixlint audit` on a generated 100,000-request log against a Python pipeline
# doing the same work (json, transformers' apply_chat_template, tokenizers, longest prefix
# against the previous request). Prints the ratio. Usage: bench/audit.sh [--requests N] [--runs K]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.d/10-python.sh
cargo build --release --locked --quiet
target="${CARGO_TARGET_DIR:-target}"
exec "$PYTHON_VENV/bin/python" bench/audit.py "$target/release/prefixlint" bench/out "$@"
