# What the test setup needs from the system (README "Development"). A missing piece stops here
# with what to install, instead of failing halfway through a download.
prerequisites_missing=()
rust_minor=$(rustc --version 2>/dev/null | sed -n 's/^rustc 1\.\([0-9]*\)\..*/\1/p')
if [ -z "$rust_minor" ] || [ "$rust_minor" -lt 85 ]; then
  prerequisites_missing+=("Rust 1.85 or newer (rustup update stable)")
fi
if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  prerequisites_missing+=("python3 with the venv module (Debian: apt-get install python3-venv)")
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  prerequisites_missing+=("node and npm (Debian: apt-get install nodejs npm)")
fi
if [ "${#prerequisites_missing[@]}" -gt 0 ]; then
  echo "scripts/test.sh needs:" >&2
  printf '  - %s\n' "${prerequisites_missing[@]}" >&2
  exit 1
fi
unset prerequisites_missing rust_minor
