# The random-weight GGUF (Qwen3 tokenizer) that the `measure` tests serve with llama.cpp:
# built once into .cache/llama-server/ so the first test does not pay for it.
"$PREFIXLINT_TEST_PYTHON" tests/measure_support/llama_server.py --model-only >/dev/null
