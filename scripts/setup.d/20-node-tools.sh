# Node tools for the integration tests, installed into .tools/ (pinned versions):
# Microsoft's SARIF multitool validates `--format sarif` against SARIF and GitHub's ingestion rules.
SARIF_MULTITOOL_VERSION=5.7.0
NODE_TOOLS="$PWD/.tools"
if [ ! -x "$NODE_TOOLS/node_modules/.bin/sarif-multitool" ] \
  || [ "$(cat "$NODE_TOOLS/.sarif-multitool.version" 2>/dev/null)" != "$SARIF_MULTITOOL_VERSION" ]; then
  mkdir -p "$NODE_TOOLS"
  npm install --silent --no-audit --no-fund --prefix "$NODE_TOOLS" \
    "@microsoft/sarif-multitool@$SARIF_MULTITOOL_VERSION" >&2
  echo "$SARIF_MULTITOOL_VERSION" > "$NODE_TOOLS/.sarif-multitool.version"
fi
# The package's bin.js re-joins its arguments through a shell (so `Gh;Sarif` would split at
# the `;`): the tests call the native executable it wraps instead.
PREFIXLINT_TEST_SARIF_MULTITOOL=$(node -p "require('$NODE_TOOLS/node_modules/@microsoft/sarif-multitool')")
export PREFIXLINT_TEST_SARIF_MULTITOOL
