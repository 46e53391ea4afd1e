#!/usr/bin/env bash
# The test command (README.md and .ci/run call exactly this). It installs what the tests
# need into the checkout (.venv, .tools, .cache) from the package registries, then runs
# every test. Safe to re-run: each setup step is idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
for step in scripts/setup.d/*.sh; do
  echo "== setup: $step" >&2
  # shellcheck source=/dev/null
  source "$step"
done
cargo test --all-targets --locked "$@"
