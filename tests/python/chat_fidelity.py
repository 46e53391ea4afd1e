"""Reference renders of chat templates with transformers' own machinery.

For every (template x conversation) pair, renders the conversation the way
`tokenizer.apply_chat_template(messages, tools=..., add_generation_prompt=..., **kwargs)`
does: messages normalized with `_normalize_chat_messages`, then
`transformers.utils.chat_template_utils.render_jinja_template`. The clock that
`strftime_now` reads is pinned to --now, so prefixlint can render with the same time.

Prints one JSON object: {"transformers": VERSION, "pairs": [{template, conversation, ok,
text | error}]}. Used by tests/it/chat.rs (the fidelity test).
"""

import argparse
import datetime as real_datetime
import json
import pathlib
import sys

import yaml
import transformers
from transformers.utils import chat_template_utils
from transformers.utils.chat_template_utils import _normalize_chat_messages, render_jinja_template


def pin_clock(iso):
    at = real_datetime.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    # strftime_now calls `datetime.now()` (naive local time): give it the pinned UTC wall time.
    naive = at.astimezone(real_datetime.timezone.utc).replace(tzinfo=None)

    class PinnedDatetime(real_datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return naive if tz is None else at.astimezone(tz)

    chat_template_utils.datetime = PinnedDatetime


def render(template, request):
    request = dict(request)
    messages = _normalize_chat_messages(request.pop("messages"))
    tools = request.pop("tools", None)
    documents = request.pop("documents", None)
    add_generation_prompt = request.pop("add_generation_prompt", True)
    rendered, _ = render_jinja_template(
        conversations=[messages],
        tools=tools,
        documents=documents,
        chat_template=template,
        add_generation_prompt=add_generation_prompt,
        **request,
    )
    return rendered[0]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--templates", required=True, type=pathlib.Path)
    parser.add_argument("--conversations", required=True, type=pathlib.Path)
    parser.add_argument("--now", required=True)
    args = parser.parse_args()
    pin_clock(args.now)
    pairs = []
    for template_path in sorted(args.templates.glob("*.jinja")):
        template = template_path.read_text(encoding="utf-8")
        for conversation_path in sorted(args.conversations.glob("*.yaml")):
            request = yaml.safe_load(conversation_path.read_text(encoding="utf-8"))
            pair = {"template": template_path.name, "conversation": conversation_path.name}
            try:
                pair["text"] = render(template, request)
                pair["ok"] = True
            except Exception as e:  # noqa: BLE001 - any failure excludes the pair
                pair["ok"] = False
                pair["error"] = f"{type(e).__name__}: {e}"
            pairs.append(pair)
    json.dump({"transformers": transformers.__version__, "pairs": pairs}, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
