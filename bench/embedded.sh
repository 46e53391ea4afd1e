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
# PREFIXLINT_BIN measures another build (a dev build gives only a rough, slower figure).
if [ -z "${PREFIXLINT_BIN:-}" ]; then
  cargo build --release --locked --quiet
fi
bin="${PREFIXLINT_BIN:-${CARGO_TARGET_DIR:-target}/release/prefixlint}"
mkdir -p bench/out
[ -d bench/out/hosts-10k ] || python3 bench/gen_hosts.py bench/out/hosts-10k --files 10000
[ -d bench/corpus ] || python3 bench/gen_corpus.py bench/corpus --templates 1000
# Both sides read a config file, so only `embedded:` differs between them.
off=bench/out/embedded-off.yaml
on=bench/out/embedded-on.yaml
printf 'embedded:\n  recognize: false\n' > "$off"
printf 'embedded:\n  recognize: true\n' > "$on"

# The medians of a command's wall time and CPU time (user + system), in seconds: on a
# loaded machine the wall time waits for the CPU, the CPU time does not.
median() {
  local walls=() cpus=()
  for _ in $(seq "$runs"); do
    local out
    /usr/bin/time -o bench/out/time.txt -f "%e %U %S" "$@" >/dev/null 2>&1 || true
    out=$(tail -1 bench/out/time.txt)
    walls+=("$(echo "$out" | cut -d' ' -f1)")
    cpus+=("$(echo "$out" | awk '{print $2 + $3}')")
  done
  local wall cpu
  wall=$(printf '%s\n' "${walls[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  cpu=$(printf '%s\n' "${cpus[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  echo "$wall $cpu"
}

ratio() { echo "scale=3; $1 / $2" | bc; }

# A/B pairs, alternated, so a change of load hits both sides alike.
pair() {
  local a=() b=()
  for _ in $(seq "$runs"); do
    a+=("$(runs=1 median "$bin" check "$1" --config "$on" --no-cache --format json)")
    b+=("$(runs=1 median "$bin" check "$1" --config "$off" --no-cache --format json)")
  done
  mid() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$0} END {print a[int((NR+1)/2)]}'; }
  local on_wall on_cpu off_wall off_cpu
  on_wall=$(mid "$(printf '%s\n' "${a[@]}" | cut -d' ' -f1)")
  on_cpu=$(mid "$(printf '%s\n' "${a[@]}" | cut -d' ' -f2)")
  off_wall=$(mid "$(printf '%s\n' "${b[@]}" | cut -d' ' -f1)")
  off_cpu=$(mid "$(printf '%s\n' "${b[@]}" | cut -d' ' -f2)")
  echo "$on_wall $on_cpu $off_wall $off_cpu"
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
read -r hosts_on hosts_on_cpu hosts_off hosts_off_cpu < <(pair bench/out/hosts-10k)
echo "10,000 Python and YAML files without prompts: ${hosts_on}s wall, ${hosts_on_cpu}s CPU (target <= 1 s); embedded off: ${hosts_off}s wall, ${hosts_off_cpu}s CPU"
read -r corpus_on corpus_on_cpu corpus_off corpus_off_cpu < <(pair bench/corpus)
echo "1,000-template corpus: embedded on ${corpus_on}s wall / ${corpus_on_cpu}s CPU, off ${corpus_off}s / ${corpus_off_cpu}s: $(ratio "$corpus_on" "$corpus_off")x wall, $(ratio "$corpus_on_cpu" "$corpus_off_cpu")x CPU (target <= 1.05x)"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
