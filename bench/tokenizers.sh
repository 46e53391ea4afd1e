#!/usr/bin/env bash
# Issue 16's per-tokenizer table (34 real tokenizer files): a 5-template pre-commit run
# against Python's Tokenizer.from_file of the same file, and the WordPiece/Unigram
# cached-form table.
# Usage: bench/tokenizers.sh [--runs N] [--only-cached]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.d/10-python.sh
source scripts/setup.d/25-tokenizer-files.sh
source scripts/setup.d/26-wordpiece-vocab.sh
source scripts/setup.d/28-more-tokenizer-files.sh
cargo build --release --locked --quiet
mkdir -p bench/out
[ -f bench/out/tokenizer.json ] || gzip -dc assets/qwen3/tokenizer.json.gz > bench/out/tokenizer.json
[ -d bench/out/corpus-5 ] || python3 bench/gen_corpus.py bench/out/corpus-5 --templates 5
rm -rf bench/out/cache
exec "$PYTHON_VENV/bin/python" bench/tokenizers.py "${CARGO_TARGET_DIR:-target}/release/prefixlint" \
  "$PYTHON_VENV/bin/python" "$PREFIXLINT_TEST_TOKENIZERS" bench/out/corpus-5 bench/out "$@"
