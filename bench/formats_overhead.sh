#!/usr/bin/env bash
# Issue 40: `check` of this build against another (main's) on the 1,000-template corpus and
# a second corpus of another shape (the prompt-repository one), interleaved, medians.
# Usage: bench/formats_overhead.sh PATH/TO/other/prefixlint [--runs N]
set -euo pipefail
cd "$(dirname "$0")/.."
other=$1
shift
cargo build --release --locked --quiet
[ -d bench/corpus ] || python3 bench/gen_corpus.py bench/corpus --templates 1000
[ -d bench/out/realrepo ] || python3 bench/gen_realrepo.py bench/out/realrepo --templates 500
exec python3 bench/formats_overhead.py "${CARGO_TARGET_DIR:-target}/release/prefixlint" "$other" \
  bench/corpus bench/out/realrepo "$@"
