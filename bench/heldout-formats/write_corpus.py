"""Writes the held-out corpus for issue 40's figures (bench/heldout_formats.py): seven small
repositories of another shape than fixtures/host-formats (other names, other layouts), written
after the code, never tuned on. Hand-written here; nothing copied from a public repository.

    write_corpus.py OUT_DIR
"""
import os
import sys

STYLE = """Keep a calm, plain tone and avoid jargon the reader did not use first.
Lead with the answer, then give the reasons in order of importance.
Quote names, numbers and dates exactly as the sources write them.
When the sources disagree, say which one you followed and why.
Never invent a figure, a link or a name that the sources do not contain.
Close with one sentence that tells the reader what to do next."""

FILES = {
    # A: an assistant in Python, LangChain-style objects and plain formatting.
    "assistant/agent/persona.py": f'''"""Persona prompts."""
from datetime import datetime

from langchain_core.prompts import ChatPromptTemplate, PromptTemplate, load_prompt


class Persona:
    ROUTER_INSTRUCTIONS = """Conversation {{conversation_id}}.
You route each customer message to one of: billing, shipping, returns, other.
{STYLE}
Answer with the queue name only."""

    def route(self, conversation_id):
        return self.ROUTER_INSTRUCTIONS.format(conversation_id=conversation_id)


GUARD_PROMPT = """You check an answer before it reaches the customer. Trace {{trace_id}}.
{STYLE}
Reply PASS or FAIL with one reason."""

guard = PromptTemplate(template=GUARD_PROMPT, input_variables=["trace_id"])

chat = ChatPromptTemplate.from_messages([
    ("system", GUARD_PROMPT),
    ("user", "{{question}}"),
])

legacy = load_prompt("prompts/legacy.yaml")


def messages(user, question):
    return [
        {{"role": "system", "content": f"""Time: {{datetime.now().isoformat()}}.
You are the concierge for {{user.hotel}}.
{STYLE}"""}},
        {{"role": "user", "content": question}},
    ]
''',
    "assistant/agent/util.py": '''import json


def dump(path, rows):
    with open(path, "w") as f:
        json.dump(rows, f)
    return f"wrote {len(rows)} rows to {path}"
''',
    # B: a crew with other names and a nested layout.
    "crew/src/newsroom/config/agents.yaml": f'''editor:
  role: "Night editor"
  goal: "Pick the five stories readers of {{region}} need tomorrow morning"
  backstory: |
    It is {{today}} and the paper closes at midnight.
{"".join("    " + l + chr(10) for l in STYLE.splitlines())}  verbose: true
fact_checker:
  role: "Fact checker"
  goal: "Verify every claim in the editor's picks"
  backstory: |
    You check each claim against two independent sources.
{"".join("    " + l + chr(10) for l in STYLE.splitlines())}''',
    "crew/src/newsroom/config/tasks.yaml": f'''pick_stories:
  description: |
    Edition {{edition_id}}: pick the stories for {{region}}.
{"".join("    " + l + chr(10) for l in STYLE.splitlines())}  expected_output: "Five headlines with one-line summaries."
  agent: editor
''',
    # C: a reviewer whose prompts live in a TOML settings file.
    "reviewer/settings/review_prompts.toml": f'''[pr_code_suggestions_prompt]
system = """
The current date is {{{{ date }}}}.
You suggest concrete code improvements for the pull request below.
{STYLE}
"""
user = """
Title: {{{{ title }}}}
{STYLE}
Diff:
{{{{ diff }}}}
"""

[config]
max_suggestions = 4
''',
    "reviewer/pyproject.toml": '''[project]
name = "reviewer"
version = "0.3.0"
description = "You are reading {name}'s metadata; it reviews pull requests."

[tool.commitizen]
message_template = "{{change_type}}: {{message}}"
''',
    # D: a memory layer whose prompts are a JSON document.
    "memory/mem/configs/prompts.json": '{\n  "prompts": {\n    "extract": ' + __import__("json").dumps("Today's date is {today}.\nExtract the user's stable preferences from the messages below as JSON.\n" + STYLE + "\nMessages:\n{messages}") + ',\n    "merge": ' + __import__("json").dumps("Existing memories:\n{memories}\nMerge the new facts into the existing memories and return JSON.\n" + STYLE) + '\n  },\n  "model": "small"\n}\n',
    # E: prompt files read by code, not named as prompts.
    "textprompts/assets/classify.txt": "Ticket {ticket_id} arrived at {received_at}.\nYou are a triage assistant: classify the ticket below as bug, question or request.\n" + STYLE + "\nRespond with one word.\nTicket:\n{ticket}\n",
    "textprompts/app.py": '''from pathlib import Path

CLASSIFY = (Path(__file__).parent / "assets" / "classify.txt").read_text()


def classify(ticket_id, received_at, ticket):
    return CLASSIFY.format(ticket_id=ticket_id, received_at=received_at, ticket=ticket)
''',
    "textprompts/CHANGELOG.md": "# Changes\n\n## 0.2\n- The classifier now reads {ticket_id} too; you should update your config.\n",
    # F: a Semantic Kernel layout with two functions.
    "kernel/Plugins/QA/Answer/skprompt.txt": "Question id {{$questionId}}.\nAnswer the question below from the context.\n" + STYLE + "\nContext: {{$context}}\nQuestion: {{$question}}\n",
    "kernel/Plugins/QA/Answer/config.json": '{\n  "schema": 1,\n  "description": "Answers a question from a context.",\n  "template_format": "semantic-kernel",\n  "input_variables": [{"name": "question"}, {"name": "context"}, {"name": "questionId"}]\n}\n',
    "kernel/Plugins/QA/Chat/skprompt.txt": "{{#each history}}{{role}}: {{content}}\n{{/each}}Reply to the last message politely.\n",
    "kernel/Plugins/QA/Chat/config.json": '{\n  "schema": 1,\n  "template_format": "handlebars"\n}\n',
    # G: a web app and its tooling: no prompt at all.
    "webapp/app/templates/review_task.jinja2": '''{% extends "layout.html" %}
{% block body %}
<section class="review">
  <h2>Rate this answer</h2>
  <div class="answer">{{ item.answer }}</div>
  <form method="post"><div><input type="radio" name="score" value="1"> Good</div>
  <div><input type="radio" name="score" value="0"> Bad</div><button>Send</button></form>
</section>
{% endblock %}
''',
    "webapp/app/queries.py": '''QUERY_TEMPLATE = "SELECT * FROM {table} WHERE id = {id}"
GREETING = "Hello {name}"


def query(table, id):
    return QUERY_TEMPLATE.format(table=table, id=id)


def greet(name):
    return GREETING.format(name=name)
''',
    "webapp/.github/workflows/deploy.yml": '''on: push
jobs:
  deploy:
    runs-on: ubuntu-latest
    steps:
      - run: ./deploy.sh ${{ github.ref_name }} {{ not_jinja }}
''',
    "webapp/package.json": '{\n  "name": "webapp",\n  "scripts": {"greet": "echo {name}"},\n  "description": "You are looking at the web front end; it answers {requests}."\n}\n',
    "webapp/docker-compose.yml": '''services:
  web:
    image: webapp:latest
    environment:
      GREETING: "{{ greeting }}"
''',
    "webapp/config/messages.yaml": '''errors:
  not_found: "Page {path} not found."
  forbidden: "You are not allowed to open {path}."
''',
}


def main():
    out = sys.argv[1]
    for name, text in FILES.items():
        path = os.path.join(out, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
