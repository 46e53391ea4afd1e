#!/usr/bin/env bash
# Issue 25's proof that a rebuilt prefixlint never reads another build's results: the
# results cache keys every entry on the build fingerprint that build.rs computes.
#
# It copies the tree, builds the copy, checks a fixture with a fresh --cache-dir, changes one
# rule message in the copy (in src/rules/, a folder cargo re-runs build.rs for), builds it
# again and checks the fixture with the same --cache-dir: the rebuilt binary must show the
# new message (a miss, not the first build's entry), and each build must then be served its
# own entry from the one folder.
#
# Both builds are of the copy, with a feature only the copy declares: cargo names a path
# package's artifacts by its name, version and features (not its folder), so without it the
# copy's build would replace this tree's artifacts in the shared target folder and this
# tree's next build would take them for its own. The dependencies come from the shared
# target folder. Cost: two builds of the prefixlint crate itself (lib and bin, dev profile;
# the second incremental), 1-3 minutes on a 2-core machine, plus seconds for five `check`
# runs. The copy lives in the target folder, so a later run reuses its artifacts.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
target=${CARGO_TARGET_DIR:-$repo/target}
case "$target" in /*) ;; *) target=$repo/$target ;; esac
work=$(mktemp -d)
# The copy's builds put their binary where this tree's is: put this tree's back at the end.
if [ -f "$target/debug/prefixlint" ]; then
  cp -p "$target/debug/prefixlint" "$work/tree-binary"
fi
restore() {
  if [ -f "$work/tree-binary" ]; then
    rm -f "$target/debug/prefixlint"
    cp -p "$work/tree-binary" "$target/debug/prefixlint"
  fi
  rm -rf "$work"
}
trap restore EXIT

rule_file=src/rules/volatile_before_stable.rs
old_message='the shared prefix ends at token'
new_message='the shared prefix (rebuilt) ends at token'
fixture=fixtures/prompts/support_agent.j2

fail() {
  echo "rebuild-check: $*" >&2
  exit 1
}

# The tree as it is now, committed or not, without ignored files (target/, .venv, ...).
tree="$target/rebuild-check/tree"
rm -rf "$tree"
mkdir -p "$tree"
git ls-files -z --cached --others --exclude-standard \
  | tar --null -T - --ignore-failed-read -cf - 2>/dev/null \
  | tar -xf - -C "$tree"
printf '\n[features]\nrebuild-check = []\n' >>"$tree/Cargo.toml"
build() {
  (cd "$tree" && CARGO_TARGET_DIR="$target" cargo build --locked --quiet --bin prefixlint \
    --features rebuild-check)
  cp "$target/debug/prefixlint" "$work/$1"
}

# `check` with the shared cache folder: prints the report, and the cache line on stderr.
check() {
  local binary=$1 out=$2
  PREFIXLINT_CACHE_STATS=1 "$work/$binary" check "$tree/$fixture" --no-config \
    --format concise --cache-dir "$work/results" >"$work/$out.out" 2>"$work/$out.err" \
    || [ $? -eq 1 ] || fail "$binary check failed: $(cat "$work/$out.err")"
}
expect() {
  local out=$1 message=$2 stats=$3
  grep -qF "$message" "$work/$out.out" || fail "$out: no '$message' in: $(cat "$work/$out.out")"
  grep -q "^$stats, " "$work/$out.err" || fail "$out: expected '$stats', got: $(cat "$work/$out.err")"
}

build before
check before before-1
expect before-1 "$old_message" "cache: 0 hits, 1 misses"
check before before-2
expect before-2 "$old_message" "cache: 1 hits, 0 misses"

grep -qF "$old_message" "$tree/$rule_file" || fail "$rule_file no longer says '$old_message': update this script"
sed -i "s|$old_message|$new_message|" "$tree/$rule_file"
grep -qF "$new_message" "$tree/$rule_file" || fail "the message was not changed"
build after

check after after-1
expect after-1 "$new_message" "cache: 0 hits, 1 misses"
if grep -qF "$old_message" "$work/after-1.out"; then
  fail "the rebuilt binary showed the old message"
fi
check after after-2
expect after-2 "$new_message" "cache: 1 hits, 0 misses"
# One folder, two builds: each is served its own entry.
check before before-3
expect before-3 "$old_message" "cache: 1 hits, 0 misses"
echo "rebuild-check: a rebuilt binary with a changed rule message showed the new message from a shared cache folder"
