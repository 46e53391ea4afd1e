# zsh and fish, which tests/it/conventions.rs parses `prefixlint completions zsh|fish` with
# (bash is already here). Debian's packages; installed only when missing. Without them that
# test fails (it never skips), so a failed install says so here first.
shells_missing=()
for shell in zsh fish; do
  command -v "$shell" >/dev/null 2>&1 || shells_missing+=("$shell")
done
if [ "${#shells_missing[@]}" -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${shells_missing[@]}" >&2 \
      || { $SUDO apt-get update -qq >&2 && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${shells_missing[@]}" >&2; } \
      || echo "warning: could not install ${shells_missing[*]}; tests/it/conventions.rs will fail until they are on PATH" >&2
  else
    echo "warning: no apt-get to install ${shells_missing[*]}; tests/it/conventions.rs will fail until they are on PATH" >&2
  fi
  unset SUDO
fi
unset shells_missing shell
