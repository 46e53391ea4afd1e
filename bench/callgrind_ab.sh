#!/usr/bin/env bash
# Issue 41: instruction counts (callgrind, all threads; exact under load) of two builds on the
# paths this round changed: `check` warm (the results cache's rows, the exit) and cold on the
# three targets corpora, and `audit` on the first 10,000 requests of the bench log and of the
# agent log (the log reader, the cache model). Prints one table row per figure.
#
# Usage: bench/callgrind_ab.sh BEFORE AFTER   (the inputs as bench/identical.sh makes them)
set -euo pipefail
cd "$(dirname "$0")/.."
before=$(realpath "$1")
after=$(realpath "$2")
work=$(mktemp -d /tmp/prefixlint-callgrind-XXXXXX)
trap 'rm -rf "$work"' EXIT
export NO_COLOR=1 PREFIXLINT_CACHE_DIR="$work/tokenizers"
unset PREFIXLINT_STAGE_TIMES PREFIXLINT_TIMELINE PREFIXLINT_NO_CACHE
[ -f bench/out/audit-10k.jsonl ] || head -10000 bench/out/audit-100000.jsonl > bench/out/audit-10k.jsonl
[ -f bench/out/agent-10k.jsonl ] || head -10000 bench/out/agent-20k.jsonl > bench/out/agent-10k.jsonl

# instructions DIR ARGS...: the Ir callgrind counts for one run.
instructions() {
  local dir=$1
  shift
  # (A run with findings exits 1.)
  (cd "$dir" && valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null || true) |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

echo "| run | before (M instructions) | after | after / before |"
echo "|---|---:|---:|---:|"
row() {
  local name=$1 b=$2 a=$3
  awk -v n="$name" -v b="$b" -v a="$a" 'BEGIN { printf "| %s | %.1f | %.1f | %.4f |\n", n, b / 1e6, a / 1e6, a / b }'
}
for corpus in "generated:bench/corpus:--no-config" "realrepo:bench/out/realrepo:" "fewshot:bench/out/fewshot:"; do
  IFS=: read -r name dir extra <<<"$corpus"
  read -r -a extra <<<"$extra"
  for side in before after; do
    bin=$before
    [ "$side" = after ] && bin=$after
    (cd "$dir" && "$bin" check . "${extra[@]}" --format json --cache-dir "$work/cache-$name-$side" >/dev/null) || true
  done
  b=$(instructions "$dir" "$before" check . "${extra[@]}" --format json --cache-dir "$work/cache-$name-before")
  a=$(instructions "$dir" "$after" check . "${extra[@]}" --format json --cache-dir "$work/cache-$name-after")
  row "check $name warm" "$b" "$a"
done
b=$(instructions bench/out/realrepo "$before" check . --format json --no-cache)
a=$(instructions bench/out/realrepo "$after" check . --format json --no-cache)
row "check realrepo cold" "$b" "$a"
for log in audit-10k agent-10k; do
  b=$(instructions . "$before" audit "bench/out/$log.jsonl" --no-config --engine llama.cpp --format json --fail-on never)
  a=$(instructions . "$after" audit "bench/out/$log.jsonl" --no-config --engine llama.cpp --format json --fail-on never)
  row "audit $log" "$b" "$a"
done
