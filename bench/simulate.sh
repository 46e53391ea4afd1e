#!/usr/bin/env bash
# Issue 29: `prefixlint simulate` replays a generated 1,000,000-request log; prints the time and
# the ratio against `audit` on the same log (the baseline, run in the same script).
# Usage: bench/simulate.sh [--requests N]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --quiet
target="${CARGO_TARGET_DIR:-target}"
exec python3 bench/simulate.py "$target/release/prefixlint" bench/out "$@"
