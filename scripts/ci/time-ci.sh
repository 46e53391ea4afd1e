#!/usr/bin/env bash
# Times `.ci/run` in a fresh clone, as CI runs it (CI=true, no standard input), and prints
# where the time went: each CI step, each setup step, the tests by file (module) and the
# slowest tests, with the machine's load before and after and which machine-wide caches
# were there at the start (a cold machine builds every dependency and installs vLLM).
#
# usage: bash scripts/ci/time-ci.sh [COMMIT]   (default: HEAD of this checkout)
# The clone and its log stay in the printed folder.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
commit=${1:-HEAD}
work=$(mktemp -d "${TMPDIR:-/tmp}/prefixlint-ci-time.XXXXXX")
git clone -q "$repo" "$work/clone"
git -C "$work/clone" checkout -q "$(git -C "$repo" rev-parse "$commit")"

cache=${XDG_CACHE_HOME:-$HOME/.cache}
cached() { if [ -e "$1" ]; then echo "present"; else echo "absent"; fi; }
{
  echo "commit: $(git -C "$work/clone" log -1 --format='%h %s')"
  echo "machine: $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "caches at the start: CI target folder $(cached "$cache/prefixlint-ci/target/debug"), vLLM venv $(cached "$(ls -d "$cache"/prefixlint-test/vllm-*/venv 2>/dev/null | head -1)"), cargo tools $(cached "$(ls -d "$cache"/prefixlint-test/cargo-tools-* 2>/dev/null | head -1)"), pip cache $(cached "$cache/pip")"
} | tee "$work/summary.txt"

start=$SECONDS
status=0
(cd "$work/clone" && CI=true bash .ci/run </dev/null >"$work/ci.log" 2>&1) || status=$?
took=$((SECONDS - start))

{
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo ".ci/run exit status $status, $((took / 60)) min $((took % 60)) s in all"
  echo
  echo "CI steps:"
  sed -n 's/^== ci: \(.*\) took \([0-9]*\) s$/\2\t\1/p' "$work/ci.log" |
    while IFS=$'\t' read -r seconds name; do printf '%6d s  %s\n' "$seconds" "$name"; done
  echo
  echo "setup steps (inside the tests step):"
  sed -n 's/^== setup: \(.*\) took \([0-9]*\) s$/\2\t\1/p' "$work/ci.log" |
    while IFS=$'\t' read -r seconds name; do printf '%6d s  %s\n' "$seconds" "$name"; done
  echo
  echo "build and test runs (inside the tests step, one after the other):"
  sed -n 's/^== tests: \(.*\) took \([0-9]*\) s$/\2\t\1/p' "$work/ci.log" |
    while IFS=$'\t' read -r seconds name; do printf '%6d s  %s\n' "$seconds" "$name"; done
  junit=$(ls "$work"/clone/target/nextest/default/junit.xml "$cache"/prefixlint-ci/target/nextest/default/junit.xml 2>/dev/null | head -1)
  if [ -n "$junit" ]; then
    echo
    python3 "$repo/scripts/ci/junit-times.py" "$junit"
  fi
} | tee -a "$work/summary.txt"
echo "log: $work/ci.log; summary: $work/summary.txt"
exit "$status"
