"""Generates a prompt repository shaped like real ones (issue 18, target 4); deterministic.

usage: gen_realrepo.py OUT_DIR [--templates N] [--seed S]

OUT_DIR becomes a git work tree (zero config: prefixlint finds the project root by `.git`)
holding N prompt templates under prompts/<area>/ and the partials they share under
prompts/partials/, in the shapes of tests/corpus/: `{% include %}`s of shared system,
safety and output-format partials, macros imported from a partial, loops over object lists
(`{% for doc in documents %}{{ doc.title }}`), Markdown prompts (`.md.j2`), `.prompt`
files, long few-shot blocks, chat-history and tool loops, and a volatile value (a request
id, the time, the user) near the top of some. No samples files: prefixlint synthesizes
them. Only Jinja2 that Python Jinja2 renders to the same bytes.
"""
import argparse
import os
import random
import subprocess

WORDS = (
    "the assistant should answer questions about invoices orders shipping returns refunds "
    "accounts billing payments subscription plan customer support agent policy always never "
    "politely concise accurate verify identity before sharing personal data escalate ticket "
    "priority urgent follow guidelines tone friendly professional summary context documents "
    "retrieved search results cite sources quote exact figures currency delivery warehouse "
    "tracking carrier delay apology voucher discount eligible exception manager approval "
    "tool call function arguments schema json strict format output markdown table list "
    "step reasoning think carefully double check numbers units dates timezone code review "
    "repository pull request diff test coverage regression latency cache prefix tokens"
).split()
UNICODE = ["café", "naïve", "Zürich", "東京", "Straße", "résumé", "São Paulo", "Ørsted"]
AREAS = ["support", "rag", "agents", "codegen", "classify", "extract", "summarize", "eval"]


def sentence(rng):
    words = [rng.choice(WORDS) for _ in range(rng.randint(6, 16))]
    if rng.random() < 0.15:
        words.insert(rng.randrange(len(words)), rng.choice(UNICODE))
    text = " ".join(words)
    return text[0].upper() + text[1:] + rng.choice([".", ".", ".", ";", ":", "!", "?"])


def paragraph(rng, lo=2, hi=5):
    return " ".join(sentence(rng) for _ in range(rng.randint(lo, hi)))


def bullets(rng, n):
    return "\n".join(f"- {sentence(rng)}" for _ in range(n))


PARTIALS = {
    "partials/system_base.j2": lambda rng: (
        "You are {{ assistant_name }}, the assistant of {{ company.name }}.\n\n"
        + paragraph(rng, 4, 6)
        + "\n\n## Rules\n\n"
        + bullets(rng, 8)
        + "\n"
    ),
    "partials/safety.md.j2": lambda rng: "## Safety\n\n" + bullets(rng, 6) + "\n\n" + paragraph(rng) + "\n",
    "partials/output_format.j2": lambda rng: (
        "## Output format\n\nAnswer in Markdown. Use this table when you compare options:\n\n"
        "| option | cost | risk |\n|---|---|---|\n| A | low | high |\n| B | high | low |\n\n"
        + paragraph(rng)
        + "\n"
    ),
    "partials/macros.j2": lambda rng: (
        "{% macro render_doc(doc, n) -%}\n"
        "### [{{ n }}] {{ doc.title }}\n"
        "Source: {{ doc.url }}\n\n"
        "{{ doc.content }}\n"
        "{%- endmacro %}\n"
        "{% macro bullet_list(items) -%}\n"
        "{% for item in items %}\n- {{ item }}{% endfor %}\n"
        "{%- endmacro %}\n"
    ),
    "partials/fewshot_support.j2": lambda rng: "## Examples\n\n"
    + "\n\n".join(
        f"### Example {i + 1}\n\nCustomer: {paragraph(rng, 1, 3)}\n\nAssistant: {paragraph(rng, 2, 4)}"
        for i in range(12)
    )
    + "\n",
    "partials/tools.j2": lambda rng: (
        "## Tools\n\nYou can call these tools:\n"
        "{% for tool in tools %}\n### {{ tool.name }}\n{{ tool.description }}\n{% endfor %}\n"
        + paragraph(rng)
        + "\n"
    ),
}


def volatile_line(rng):
    return rng.choice(
        [
            "Request id: {{ request_id }}\n",
            "Current time: {{ current_time }}\n",
            "You are talking to {{ user.name }} ({{ user.email }}).\n",
            "Session: {{ session_id }}\n",
        ]
    )


def rag(rng):
    top = volatile_line(rng) + "\n" if rng.random() < 0.3 else ""
    return (
        top
        + '{% import "partials/macros.j2" as m %}'
        + '{% include "partials/system_base.j2" %}\n'
        + paragraph(rng, 3, 6)
        + "\n\n## Retrieved documents\n\n"
        + "{% for doc in documents %}{{ m.render_doc(doc, loop.index) }}\n\n{% endfor %}"
        + '{% include "partials/output_format.j2" %}\n'
        + "## Question\n\n{{ question }}\n"
    )


def agent(rng):
    return (
        "# Role: {{ role }}\n\nGoal: {{ goal }}\n\n"
        + paragraph(rng, 4, 8)
        + "\n\n"
        + '{% include "partials/tools.j2" %}\n'
        + '{% include "partials/safety.md.j2" %}\n'
        + bullets(rng, rng.randint(4, 10))
        + "\n\n## Conversation so far\n"
        + "{% for message in history %}\n**{{ message.role }}**: {{ message.content }}\n{% endfor %}\n"
        + (volatile_line(rng) if rng.random() < 0.4 else "")
        + "\nTask: {{ task }}\n"
    )


def markdown(rng):
    sections = []
    for _ in range(rng.randint(3, 6)):
        sections.append(f"## {sentence(rng)[:-1]}\n\n{paragraph(rng, 3, 7)}\n\n{bullets(rng, rng.randint(3, 7))}\n")
    top = volatile_line(rng) + "\n" if rng.random() < 0.25 else ""
    return (
        top
        + "# {{ title }}\n\n"
        + "\n".join(sections)
        + '{% include "partials/output_format.j2" %}\n'
        + "{% if constraints %}## Constraints\n{% for c in constraints %}\n- {{ c }}{% endfor %}\n{% endif %}\n"
        + "Input:\n\n{{ input }}\n"
    )


def fewshot(rng):
    examples = "\n\n".join(
        f"Text: {paragraph(rng, 1, 3)}\nLabel: {rng.choice(['billing', 'shipping', 'refund', 'account', 'other'])}"
        for _ in range(rng.randint(15, 30))
    )
    return (
        '{% include "partials/system_base.j2" %}\n'
        + "Classify the customer's message into one of: "
        + "{{ labels | join(', ') }}.\n\n"
        + examples
        + '\n\n{% include "partials/fewshot_support.j2" %}\n'
        + "Text: {{ text }}\nLabel:"
    )


def support(rng):
    return (
        '{% import "partials/macros.j2" as m %}'
        + '{% include "partials/system_base.j2" %}\n'
        + '{% include "partials/safety.md.j2" %}\n'
        + paragraph(rng, 4, 8)
        + "\n\nKnown facts about the customer:{{ m.bullet_list(facts) }}\n\n"
        + '{% include "partials/fewshot_support.j2" %}\n'
        + "## Order history\n"
        + "{% for order in orders %}\n- {{ order.id }}: {{ order.status }} ({{ order.carrier }}){% endfor %}\n\n"
        + (volatile_line(rng) if rng.random() < 0.3 else "")
        + "Customer: {{ message }}\n"
    )


KINDS = [("rag", rag, ".j2"), ("agent", agent, ".j2"), ("markdown", markdown, ".md.j2"),
         ("fewshot", fewshot, ".prompt"), ("support", support, ".jinja2")]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--templates", type=int, default=500)
    parser.add_argument("--seed", type=int, default=18)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    prompts = os.path.join(args.out, "prompts")
    os.makedirs(os.path.join(prompts, "partials"), exist_ok=True)
    if not os.path.exists(os.path.join(args.out, ".git")):
        subprocess.run(["git", "init", "-q", args.out], check=True)
    with open(os.path.join(args.out, "README.md"), "w", encoding="utf-8") as f:
        f.write("# Prompts\n\nGenerated by bench/gen_realrepo.py.\n")
    for name, body in PARTIALS.items():
        with open(os.path.join(prompts, name), "w", encoding="utf-8") as f:
            f.write(body(rng))
    for n in range(args.templates):
        kind, make, ext = KINDS[n % len(KINDS)]
        area = AREAS[rng.randrange(len(AREAS))]
        folder = os.path.join(prompts, area)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"{kind}_{n:04d}{ext}"), "w", encoding="utf-8") as f:
            f.write(make(rng))


if __name__ == "__main__":
    main()
