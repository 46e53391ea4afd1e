# The VS Code extension's packages (editors/vscode/package-lock.json: vscode-languageclient,
# the protocol its test speaks, and @vscode/vsce), so that tests/heavy/vscode_extension.rs
# packages the .vsix and runs the client's test offline. `npm ci` runs again only when the
# lock file changed (its hash is kept beside the packages).
VSCODE_EXTENSION="$PWD/editors/vscode"
vscode_lock_hash=$(sha256sum "$VSCODE_EXTENSION/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$VSCODE_EXTENSION/node_modules/.lock-sha256" 2>/dev/null)" != "$vscode_lock_hash" ]; then
  (cd "$VSCODE_EXTENSION" && npm ci --silent --no-audit --no-fund >&2)
  echo "$vscode_lock_hash" > "$VSCODE_EXTENSION/node_modules/.lock-sha256"
fi
unset VSCODE_EXTENSION vscode_lock_hash
