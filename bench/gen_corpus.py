"""Generates the benchmark corpus for issue 7 (deterministic: the same seed gives the same files).

usage: gen_corpus.py OUT_DIR [--templates N] [--seed S] [--scale K]

Writes OUT_DIR/tNNNN.j2 (about 4 KB of prompt text each, times K with --scale) and
OUT_DIR/tNNNN.samples.yaml (4 samples). Each template has one volatile field (a request id,
a timestamp or a user name that differs per sample) at a random depth, stable variables,
a loop over few-shot examples and a conditional. Only plain Jinja2 features, so that
Python Jinja2 and prefixlint render the same bytes.
"""
import argparse
import json
import os
import random

WORDS = (
    "the model should answer questions about invoices orders shipping returns refunds "
    "accounts billing payments subscription plan customer support agent policy always "
    "never politely concise accurate verify identity before sharing personal data escalate "
    "ticket priority urgent follow guidelines tone friendly professional summary context "
    "documents retrieved search results cite sources quote exact figures currency euro "
    "dollar weekday delivery warehouse tracking number carrier delay apology compensation "
    "voucher discount eligible ineligible exception manager approval internal notes hidden "
    "tool call function arguments schema json strict format output markdown table list "
    "bullet step reasoning think carefully double check numbers units dates timezone"
).split()
UNICODE_WORDS = ["café", "naïve", "Zürich", "façade", "東京", "Straße", "résumé", "München"]
PUNCT = [".", ",", ";", ":", "!", "?", " —", " (see below)", " e.g.", " i.e."]


def sentence(rng):
    words = [rng.choice(WORDS) for _ in range(rng.randint(6, 18))]
    if rng.random() < 0.15:
        words.insert(rng.randrange(len(words)), rng.choice(UNICODE_WORDS))
    if rng.random() < 0.2:
        words.insert(rng.randrange(len(words)), str(rng.randint(1, 99999)))
    text = " ".join(words)
    return text[0].upper() + text[1:] + rng.choice(PUNCT)


def paragraph(rng):
    return " ".join(sentence(rng) for _ in range(rng.randint(2, 5)))


VOLATILE = [
    ("request_id", lambda rng, n: "req-%032x" % rng.getrandbits(128)),
    ("timestamp", lambda rng, n: "2026-03-%02dT%02d:%02d:%02dZ" % (10 + n, rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59))),
    ("user_name", lambda rng, n: rng.choice(["Ada Lovelace", "Grace Hopper", "Alan Turing", "Edsger Dijkstra", "Barbara Liskov", "Ken Thompson"]) + f" #{n}"),
]


def template_and_samples(rng, scale):
    blocks = []
    target = 4000 * scale
    size = 0
    while size < target:
        kind = rng.random()
        if kind < 0.65:
            block = paragraph(rng) + "\n\n"
        elif kind < 0.8:
            block = "## " + sentence(rng).rstrip(".,;:!?") + "\n" + "".join("- " + sentence(rng) + "\n" for _ in range(rng.randint(2, 5))) + "\n"
        elif kind < 0.9:
            block = "Company: {{ company.name }} ({{ company.region }}). Product: {{ product }}.\n\n"
        else:
            block = "{% if strict %}Strict mode: " + sentence(rng) + "{% else %}Relaxed mode.{% endif %}\n\n"
        blocks.append(block)
        size += len(block)
    blocks.append(
        "Examples:\n{% for ex in examples %}Q: {{ ex.q }}\nA: {{ ex.a }}\n{% endfor %}\nNow answer: {{ question }}\n"
    )
    name, make = rng.choice(VOLATILE)
    depth = rng.randrange(len(blocks))
    blocks.insert(depth, "[" + name.replace("_", " ") + ": {{ " + name + " }}]\n")
    stable = {
        "company": {"name": "Acme " + rng.choice(WORDS).title(), "region": rng.choice(["EU", "US", "APAC"])},
        "product": rng.choice(WORDS) + " " + rng.choice(WORDS),
        "strict": rng.random() < 0.5,
        "examples": [{"q": sentence(rng), "a": sentence(rng)} for _ in range(rng.randint(1, 3))],
        "question": sentence(rng),
    }
    samples = [dict(stable, **{name: make(rng, n)}) for n in range(4)]
    return "".join(blocks), samples


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--templates", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--scale", type=int, default=1, help="multiply each template's size")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)
    for i in range(args.templates):
        text, samples = template_and_samples(rng, args.scale)
        stem = os.path.join(args.out, f"t{i:04d}")
        with open(stem + ".j2", "w", encoding="utf-8") as f:
            f.write(text)
        # JSON is valid YAML; it keeps the generator free of a YAML dependency.
        with open(stem + ".samples.yaml", "w", encoding="utf-8") as f:
            json.dump(samples, f, ensure_ascii=False, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
