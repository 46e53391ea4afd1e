# SGLang's real RadixCache (sglang 0.5.23 from PyPI) on CPU for tests/heavy/simulate_sglang.rs: a
# venv laid over the vLLM test venv of 60-vllm.sh (a .pth naming its site-packages, which
# holds torch), the pins of scripts/requirements/sglang/ installed --no-deps. Once per
# machine outside the checkout, keyed by the pins and the vLLM venv: ~300 MB, well under a
# minute the first time; a stamp check afterwards (docs/simulate.md).
pushd "$(dirname "${BASH_SOURCE[0]}")/../.." >/dev/null
sglang_pins=scripts/requirements/sglang/requirements.txt
sglang_key=$( (cat "$sglang_pins"; echo "$PREFIXLINT_TEST_VLLM_HOME") | sha256sum | cut -c1-16)
PREFIXLINT_TEST_SGLANG_HOME="${XDG_CACHE_HOME:-$HOME/.cache}/prefixlint-test/sglang-$sglang_key"
if [ -x "$PREFIXLINT_TEST_VLLM_PYTHON" ] && [ ! -f "$PREFIXLINT_TEST_SGLANG_HOME/.installed" ]; then
  mkdir -p "$PREFIXLINT_TEST_SGLANG_HOME"
  (
    flock 9
    if [ ! -f "$PREFIXLINT_TEST_SGLANG_HOME/.installed" ]; then
      echo "installing sglang's radix cache into $PREFIXLINT_TEST_SGLANG_HOME (once per machine)" >&2
      rm -rf "$PREFIXLINT_TEST_SGLANG_HOME/venv"
      "$PREFIXLINT_TEST_VLLM_PYTHON" -m venv --without-pip "$PREFIXLINT_TEST_SGLANG_HOME/venv" &&
        site=$("$PREFIXLINT_TEST_SGLANG_HOME/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') &&
        "$PREFIXLINT_TEST_VLLM_PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' > "$site/vllm-env.pth" &&
        "$PREFIXLINT_TEST_SGLANG_HOME/venv/bin/python" -m pip install -q --no-deps -r "$sglang_pins" >&2 &&
        "$PREFIXLINT_TEST_SGLANG_HOME/venv/bin/python" -c 'import sglang.srt.mem_cache.radix_cache' &&
        touch "$PREFIXLINT_TEST_SGLANG_HOME/.installed"
    fi
  ) 9>"$PREFIXLINT_TEST_SGLANG_HOME/.lock"
fi
export PREFIXLINT_TEST_SGLANG_PYTHON="$PREFIXLINT_TEST_SGLANG_HOME/venv/bin/python"
popd >/dev/null
unset sglang_pins sglang_key
