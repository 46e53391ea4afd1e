# A venv with the real `prompty` and `prompt-poet` packages (pinned in
# scripts/prompt-formats/requirements.txt), kept apart from .venv because prompt-poet pins
# its own dependencies. tests/it/hosts_reference.rs renders every embedded template with them.
PROMPT_FORMATS_VENV=$(realpath -m "$PWD/.cache/prompt-formats-venv")
if [ ! -x "$PROMPT_FORMATS_VENV/bin/python" ]; then
  python3 -m venv "$PROMPT_FORMATS_VENV"
fi
stamp="$PROMPT_FORMATS_VENV/.requirements.sha256"
want=$(sha256sum scripts/prompt-formats/requirements.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  "$PROMPT_FORMATS_VENV/bin/python" -m pip install -q -r scripts/prompt-formats/requirements.txt
  echo "$want" > "$stamp"
fi
export PREFIXLINT_PROMPT_FORMATS_PYTHON="$PROMPT_FORMATS_VENV/bin/python"
