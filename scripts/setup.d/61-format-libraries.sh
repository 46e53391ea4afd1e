# A venv with the template formats' real libraries (pinned in
# scripts/format-libraries/requirements.txt), and CrewAI's wheel without its dependencies:
# tests/heavy/formats_reference.rs renders every reference template with them.
# Its real path (.cache may link to a folder that several clones share, as .ci/run's does):
# a venv's scripts name the path it was made at, so the stamp holds that path too.
FORMAT_LIBRARIES_VENV=$(realpath -m "$PWD/.cache/format-libraries-venv")
CREWAI_WHEEL_VERSION=1.15.30
stamp="$FORMAT_LIBRARIES_VENV/.requirements.sha256"
want=$( (cat scripts/format-libraries/requirements.txt; echo "crewai $CREWAI_WHEEL_VERSION"; echo "$FORMAT_LIBRARIES_VENV") | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  rm -rf "$FORMAT_LIBRARIES_VENV"
  python3 -m venv "$FORMAT_LIBRARIES_VENV"
  "$FORMAT_LIBRARIES_VENV/bin/python" -m pip install -q -r scripts/format-libraries/requirements.txt
  rm -rf "$FORMAT_LIBRARIES_VENV/wheels"
  "$FORMAT_LIBRARIES_VENV/bin/python" -m pip download -q --no-deps \
    -d "$FORMAT_LIBRARIES_VENV/wheels" "crewai==$CREWAI_WHEEL_VERSION"
  echo "$want" > "$stamp"
fi
export PREFIXLINT_FORMAT_LIBRARIES_PYTHON="$FORMAT_LIBRARIES_VENV/bin/python"
export PREFIXLINT_CREWAI_WHEEL="$FORMAT_LIBRARIES_VENV/wheels/crewai-$CREWAI_WHEEL_VERSION-py3-none-any.whl"
