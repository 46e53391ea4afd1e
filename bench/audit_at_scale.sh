#!/usr/bin/env bash
# Issue 30 §3: the partitioned audit on Ray Data (examples/audit_at_scale.py) on a generated
# log (default 1,000,000 requests), with 1 and 2 workers, each checked against the
# single-process `prefixlint audit` summary (--compare), all in one run. Needs Ray's venv
# (scripts/setup.d/70-ray.sh). Builds the release binary and the release wheel first. vLLM's
# 16-token blocks: one key is 8 bytes a block (a token-level profile hashes every token).
#   bash bench/audit_at_scale.sh [REQUESTS]
set -euo pipefail
cd "$(dirname "$0")/.."
requests="${1:-1000000}"
source scripts/setup.d/10-python.sh
source scripts/setup.d/70-ray.sh
cargo build --release --locked
mkdir -p bench/out
"$PYTHON_VENV/bin/maturin" build --release --locked --manifest-path python/Cargo.toml -o bench/out/wheel >/dev/null
site="bench/out/wheel-site"
rm -rf "$site"
"$PREFIXLINT_RAY_PYTHON" -m pip install -q --no-deps --target "$site" bench/out/wheel/prefixlint-*.whl
log="bench/out/traffic-$requests.jsonl"
[ -f "$log" ] || python3 bench/gen_audit_log.py "$log" "$requests"
echo "log: $log, $(wc -l < "$log") lines, $(du -h "$log" | cut -f1); $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for workers in 1 2; do
  PYTHONPATH="$site" "$PREFIXLINT_RAY_PYTHON" examples/audit_at_scale.py "$log" \
    --workers "$workers" --engine vllm:block_size=16 --compare target/release/prefixlint
done
