# Python venv for the reference implementations and the real clients the tests drive.
# Each requirements file under scripts/requirements/ is installed (pinned versions).
# Its real path (.venv may link to a venv kept elsewhere, as .ci/run's is): a venv's scripts
# name the python they were installed with.
PYTHON_VENV=$(realpath -m "$PWD/.venv")
if [ ! -x "$PYTHON_VENV/bin/python" ]; then
  python3 -m venv "$PYTHON_VENV"
  "$PYTHON_VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
fi
stamp="$PYTHON_VENV/.requirements.sha256"
want=$(cat scripts/requirements/*.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  for req in scripts/requirements/*.txt; do
    "$PYTHON_VENV/bin/python" -m pip install -q -r "$req"
  done
  echo "$want" > "$stamp"
fi
export PREFIXLINT_TEST_PYTHON="$PYTHON_VENV/bin/python"
export PATH="$PYTHON_VENV/bin:$PATH"
