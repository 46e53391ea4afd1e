#!/usr/bin/env bash
# Issue 40's performance target for prompts in every host: `check` on a repository of
# 10,000 Python, YAML, JSON, TOML and Markdown files without prompts (bench/gen_formats_hosts.py)
# takes no more than 1 s on the 2 cores. Beside it, in the same run and alternated with it:
#  - the floor: reading every file of the tree once (`find | xargs cat`, warm page cache);
#  - the walk alone: `check` with `embedded: {recognize: false}` (no host file is read).
# Prints the medians of --runs runs (default 5), the ratios, the load average and the verdict.
# Usage: bench/formats_hosts.sh [--runs N]
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
tree=bench/out/formats-hosts-10k
[ -d "$tree" ] || python3 bench/gen_formats_hosts.py "$tree" --files 10000
on=bench/out/formats-hosts-on.yaml
off=bench/out/formats-hosts-off.yaml
printf 'embedded:\n  recognize: true\n' > "$on"
printf 'embedded:\n  recognize: false\n' > "$off"

# One run's wall time in seconds (and its CPU time, user + system, in bench/out/cpu.txt:
# on a loaded machine the wall time waits for a core, the CPU time does not).
wall() {
  /usr/bin/time -o bench/out/time.txt -f "%e %U %S" "$@" >/dev/null 2>&1 || true
  tail -1 bench/out/time.txt | awk '{print $2 + $3}' >> bench/out/cpu.txt
  tail -1 bench/out/time.txt | cut -d' ' -f1
}
mid() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { echo "scale=2; $1 / $2" | bc; }

check_runs=() floor_runs=() walk_runs=() check_cpu=()
# Warm the page cache once, as a developer's repeated run finds it.
find "$tree" -type f -print0 | xargs -0 cat >/dev/null
for _ in $(seq "$runs"); do
  : > bench/out/cpu.txt
  check_runs+=("$(wall "$bin" check "$tree" --config "$on" --no-cache --format json)")
  check_cpu+=("$(cat bench/out/cpu.txt)")
  floor_runs+=("$(wall sh -c "find '$tree' -type f -print0 | xargs -0 cat >/dev/null")")
  walk_runs+=("$(wall "$bin" check "$tree" --config "$off" --no-cache --format json)")
done
check=$(mid "${check_runs[@]}")
floor=$(mid "${floor_runs[@]}")
walk=$(mid "${walk_runs[@]}")
templates=$("$bin" check "$tree" --config "$on" --no-cache --format json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d["templates"]), len(d["unchecked"]))')
echo "files: $(find "$tree" -type f | wc -l) (templates found, unchecked: $templates)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "check (every host read):   ${check} s (CPU, user + system: $(mid "${check_cpu[@]}") s)"
echo "floor (read every file):   ${floor} s   check / floor = $(ratio "$check" "$floor")x"
echo "walk only (no host read):  ${walk} s   check / walk = $(ratio "$check" "$walk")x"
if [ "$(echo "$check <= 1.0" | bc)" = 1 ]; then
  echo "target (<= 1 s): met"
else
  echo "target (<= 1 s): NOT met"
fi
