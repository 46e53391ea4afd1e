# The SGLang router (Rust, from PyPI) that tests/heavy/fleet.rs puts in front of two llama.cpp
# test servers: one run with `--policy round_robin`, one with `--policy manual` (sticky by
# the X-SMG-Routing-Key header). Its `--backend openai` mode serves chat only, so the tests
# use the default mode, which proxies /v1/completions to any OpenAI-compatible worker.
if [ ! -x "$(dirname "$PREFIXLINT_TEST_PYTHON")/sglang-router" ]; then
  "$PREFIXLINT_TEST_PYTHON" -m pip install -q "sglang-router==0.3.2"
fi
