#!/usr/bin/env bash
# Issue 13's limits: peak RSS of `prefixlint audit` on 1k/10k/100k-request logs, on a 100 MB
# line, and on a 2 GB log generated into stdin. Usage: bench/audit_limits.sh [--stream-gb G]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.d/10-python.sh
cargo build --release --locked --quiet
target="${CARGO_TARGET_DIR:-target}"
exec "$PYTHON_VENV/bin/python" bench/audit_limits.py "$target/release/prefixlint" bench/out "$@"
