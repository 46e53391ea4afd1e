# Ray Data in local mode for the partitioned audit (tests/heavy/python_package.rs, examples/
# audit_at_scale.py): a venv of its own, once per machine outside the checkout (like vLLM's),
# from PyPI, pinned in
# scripts/requirements/ray/requirements.txt (a sub-folder, so 10-python.sh does not install
# it into the shared venv). First install: about 1-2 minutes and 1 GB; then a stamp check.
ray_want=$(sha256sum scripts/requirements/ray/requirements.txt | cut -d' ' -f1)
RAY_VENV="${XDG_CACHE_HOME:-$HOME/.cache}/prefixlint-test/ray-${ray_want:0:16}"
ray_stamp="$RAY_VENV/.requirements.sha256"
if [ "$(cat "$ray_stamp" 2>/dev/null)" != "$ray_want" ]; then
  mkdir -p "$(dirname "$RAY_VENV")"
  [ -x "$RAY_VENV/bin/python" ] || python3 -m venv "$RAY_VENV"
  "$RAY_VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
  "$RAY_VENV/bin/python" -m pip install -q -r scripts/requirements/ray/requirements.txt
  echo "$ray_want" > "$ray_stamp"
fi
export PREFIXLINT_RAY_PYTHON="$RAY_VENV/bin/python"
