#!/usr/bin/env bash
# The test command (README.md and .ci/run call exactly this). It installs what the tests
# need into the checkout (.venv, .tools, .cache) from the package registries, then runs
# every test (tests/README.md) once everything is built, in two runs:
# - the unit tests and tests/it with `cargo test`: each binary's tests on threads of one
#   process, sharing what one file computes once (the corpus runs);
# - then tests/heavy with cargo-nextest (.config/nextest.toml): a process per test, so the
#   server tests run side by side, with what they share made once per run
#   (tests/support/shared.rs).
# Safe to re-run: each setup step is idempotent.
#
# With arguments, they go to `cargo test --locked` after the setup instead:
# `bash scripts/test.sh --test it readme::` runs one file's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
for step in scripts/setup.d/*.sh; do
  echo "== setup: $step" >&2
  step_start=$SECONDS
  # shellcheck source=/dev/null
  source "$step"
  echo "== setup: $step took $((SECONDS - step_start)) s" >&2
done
if [ "$#" -gt 0 ]; then
  exec cargo test --locked "$@"
fi

step_start=$SECONDS
cargo test --all-targets --locked --no-run
echo "== tests: build took $((SECONDS - step_start)) s" >&2

# One run after the other: tests/it holds tests bounded in time (bad_inputs' 20 s hang
# guard, measure_faults' 2 s client timeout) that the heavy run's servers would starve of
# the two cores (both failed at a load of 30 with a heavy run beside them).
step_start=$SECONDS
cargo test --locked --lib --bins --test it --benches --examples
echo "== tests: unit tests and tests/it (cargo test) took $((SECONDS - step_start)) s" >&2
# What earlier runs shared (tests/support/shared.rs: a wheel, servers' notes) goes; their
# servers stopped with their runs.
rm -rf "${CARGO_TARGET_DIR:-target}/tmp/shared"
step_start=$SECONDS
cargo nextest run --locked --test heavy
echo "== tests: tests/heavy (cargo nextest) took $((SECONDS - step_start)) s" >&2
