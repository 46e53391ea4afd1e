#!/usr/bin/env bash
# Issue 14's latency figure: `prefixlint server` save -> diagnostics for a 4 KB template with
# three samples, against `prefixlint check` of the same file in the same run.
# Usage: bench/server.sh [--runs N]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --quiet
exec python3 bench/server.py "${CARGO_TARGET_DIR:-target}/release/prefixlint" "$@"
