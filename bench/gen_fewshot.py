"""Generates the third benchmark corpus of issue 31 (deterministic: the same seed gives the
same files), of another shape than gen_corpus.py's and gen_realrepo.py's.

usage: gen_fewshot.py OUT_DIR [--templates N] [--seed S]

OUT_DIR becomes a git work tree (zero config) holding N small prompt templates under
prompts/<task>/ (a few hundred bytes of instruction each, a third of them with no text but a
short instruction and an include) and long few-shot blocks, in three forms:
- inline: 8-24 labelled examples written into the template itself (a quarter of them);
- shared: `{% include "shots/<task>.j2" %}`, one of 6 few-shot partials of 20-40 examples
  that many templates include (the rendered text is mostly these);
- looped: `{% for ex in examples %}Input: {{ ex.input }} ...{% endfor %}` over the samples.
Few templates have a samples file (1 in 25, with 20-40 examples a sample); prefixlint
synthesizes the others' samples. Some put a volatile value (request id, the time, the user)
before the examples, some after. Only Jinja2 that Python Jinja2 renders to the same bytes.
"""
import argparse
import json
import os
import random
import subprocess

WORDS = (
    "classify the ticket intent extract entities from message label sentiment positive "
    "negative neutral invoice refund order shipping delay account login password reset "
    "billing plan upgrade cancel subscription warranty repair replacement address change "
    "delivery window courier parcel tracking lost damaged item size colour exchange store "
    "credit voucher loyalty points expiry balance transfer bank card declined fraud alert "
    "verify identity document upload photo passport licence consent privacy export delete "
    "language french german spanish translate formal informal tone short answer json only"
).split()
UNICODE = ["café", "naïve", "Zürich", "東京", "Straße", "résumé", "São Paulo", "Ørsted", "🙂"]
TASKS = ["intent", "sentiment", "entities", "routing", "translate", "moderation", "faq", "summary"]
LABELS = ["billing", "shipping", "refund", "account", "technical", "other"]


def sentence(rng, lo=5, hi=14):
    words = [rng.choice(WORDS) for _ in range(rng.randint(lo, hi))]
    if rng.random() < 0.12:
        words.insert(rng.randrange(len(words)), rng.choice(UNICODE))
    if rng.random() < 0.15:
        words.insert(rng.randrange(len(words)), str(rng.randint(10, 99999)))
    text = " ".join(words)
    return text[0].upper() + text[1:] + rng.choice([".", ".", "?", "!"])


def example(rng, n):
    style = n % 3
    text = " ".join(sentence(rng) for _ in range(rng.randint(1, 3)))
    if style == 0:
        return f"Input: {text}\nLabel: {rng.choice(LABELS)}\n"
    if style == 1:
        return f'Message: "{text}"\nAnswer: {json.dumps({"label": rng.choice(LABELS), "confidence": round(rng.random(), 2)})}\n'
    return f"### Example {n + 1}\nUser: {text}\nAssistant: {sentence(rng, 8, 20)}\n"


def shots(rng, lo, hi):
    return "\n".join(example(rng, n) for n in range(rng.randint(lo, hi)))


def volatile_line(rng):
    return rng.choice(
        [
            "Request: {{ request_id }}\n",
            "Time: {{ current_time }}\n",
            "User: {{ user_name }}\n",
        ]
    )


def template(rng, task, n):
    """One small template; its few-shot block inline, included or looped."""
    head = f"You {rng.choice(['label', 'classify', 'route', 'answer'])} {task} requests. {sentence(rng)}\n"
    if rng.random() < 0.5:
        head += f"Labels: {{{{ labels | join(', ') }}}}.\n"
    early = volatile_line(rng) if rng.random() < 0.2 else ""
    late = volatile_line(rng) if rng.random() < 0.3 else ""
    form = rng.random()
    if form < 0.25:
        block = "Examples:\n\n" + shots(rng, 8, 24) + "\n"
    elif form < 0.65:
        block = f'{{% include "shots/{rng.choice(TASKS[:6])}.j2" %}}\n'
    else:
        block = (
            "Examples:\n{% for ex in examples %}\nInput: {{ ex.input }}\n"
            "Label: {{ ex.label }}\n{% endfor %}\n"
        )
    tail = "{% if context %}Context: {{ context }}\n{% endif %}" if rng.random() < 0.3 else ""
    return early + head + "\n" + block + late + tail + "Input: {{ input }}\nLabel:"


def samples_for(rng, text, count=3):
    """A samples file's contexts for `text` (the variables it names; a long examples list)."""
    stable = {
        "labels": LABELS,
        "examples": [{"input": sentence(rng), "label": rng.choice(LABELS)} for _ in range(rng.randint(20, 40))],
        "context": sentence(rng),
        "input": sentence(rng),
    }
    out = []
    for n in range(count):
        sample = dict(stable)
        if "request_id" in text:
            sample["request_id"] = "req-%024x" % rng.getrandbits(96)
        if "current_time" in text:
            sample["current_time"] = "2026-05-%02dT%02d:%02d:00Z" % (1 + n, rng.randint(0, 23), rng.randint(0, 59))
        if "user_name" in text:
            sample["user_name"] = rng.choice(["Ada", "Grace", "Alan", "Edsger", "Barbara"]) + f" {n}"
        out.append(sample)
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--templates", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=31)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    prompts = os.path.join(args.out, "prompts")
    os.makedirs(os.path.join(prompts, "shots"), exist_ok=True)
    if not os.path.exists(os.path.join(args.out, ".git")):
        subprocess.run(["git", "init", "-q", args.out], check=True)
    with open(os.path.join(args.out, "README.md"), "w", encoding="utf-8") as f:
        f.write("# Classifier prompts\n\nGenerated by bench/gen_fewshot.py.\n")
    for task in TASKS[:6]:
        with open(os.path.join(prompts, "shots", task + ".j2"), "w", encoding="utf-8") as f:
            f.write("Examples:\n\n" + shots(rng, 20, 40) + "\n")
    for n in range(args.templates):
        task = TASKS[rng.randrange(len(TASKS))]
        folder = os.path.join(prompts, task)
        os.makedirs(folder, exist_ok=True)
        text = template(rng, task, n)
        stem = os.path.join(folder, f"{task}_{n:05d}")
        with open(stem + ".j2", "w", encoding="utf-8") as f:
            f.write(text)
        if n % 25 == 0:
            # JSON is valid YAML; it keeps the generator free of a YAML dependency.
            with open(stem + ".samples.yaml", "w", encoding="utf-8") as f:
                json.dump(samples_for(rng, text), f, ensure_ascii=False, indent=1)
                f.write("\n")


if __name__ == "__main__":
    main()
