# Neovim, the real LSP client tests/heavy/server.rs drives `prefixlint server` with (headless,
# a scripted Lua session). Debian's package; installed only when `nvim` is missing. Without
# it the editor test fails (it never skips), so a failed install says so here first.
if ! command -v nvim >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends neovim >&2 \
      || { $SUDO apt-get update -qq >&2 && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends neovim >&2; } \
      || echo "warning: could not install neovim; tests/heavy/server.rs will fail until nvim is on PATH or PREFIXLINT_TEST_NVIM names it" >&2
  else
    echo "warning: no apt-get to install neovim; tests/heavy/server.rs will fail until nvim is on PATH or PREFIXLINT_TEST_NVIM names it" >&2
  fi
fi
unset SUDO
if command -v nvim >/dev/null 2>&1; then
  PREFIXLINT_TEST_NVIM="$(command -v nvim)"
  export PREFIXLINT_TEST_NVIM
fi
