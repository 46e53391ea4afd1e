#!/usr/bin/env bash
# Issue 23's performance targets for templates embedded in host files:
#  1. `check` on a repository of 10,000 Python and YAML files without prompts: <= 1 s
#     (baseline in the same run: the same walk with `embedded: {recognize: false}`);
#  2. the 1,000-template corpus (bench/gen_corpus.py) with embedded discovery on vs off:
#     <= 1.05x.
# Medians of --runs runs (default 5), with the load average, since the machine is shared.
# Usage: bench/embedded.sh [--runs N]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=5
[ "${1:-}" = "--runs" ] && runs="$2"
cargo build --release --locked --quiet
bin="${CARGO_TARGET_DIR:-target}/release/prefixlint"
mkdir -p bench/out
[ -d bench/out/hosts-10k ] || python3 bench/gen_hosts.py bench/out/hosts-10k --files 10000
[ -d bench/corpus ] || python3 bench/gen_corpus.py bench/corpus --templates 1000
off=bench/out/embedded-off.yaml
printf 'embedded:\n  recognize: false\n' > "$off"

# The median wall time of a command, in seconds.
median() {
  local times=()
  for _ in $(seq "$runs"); do
    local start end
    start=$(date +%s.%N)
    "$@" >/dev/null 2>&1 || true
    end=$(date +%s.%N)
    times+=("$(echo "$end - $start" | bc)")
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
hosts_on=$(median "$bin" check bench/out/hosts-10k --no-config --no-cache --format json)
hosts_off=$(median "$bin" check bench/out/hosts-10k --config "$off" --no-cache --format json)
echo "10,000 Python and YAML files without prompts: ${hosts_on}s (target <= 1 s); embedded off: ${hosts_off}s; ratio $(echo "scale=2; $hosts_on / $hosts_off" | bc)x"
corpus_on=$(median "$bin" check bench/corpus --no-config --no-cache --format json)
corpus_off=$(median "$bin" check bench/corpus --config "$off" --no-cache --format json)
echo "1,000-template corpus: embedded on ${corpus_on}s, off ${corpus_off}s: $(echo "scale=3; $corpus_on / $corpus_off" | bc)x (target <= 1.05x)"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
