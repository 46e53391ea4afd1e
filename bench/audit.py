#!/usr/bin/env python3
"""Times `prefixlint audit` on a generated request log against a Python pipeline doing the same
work, and prints the ratio (issue 13: target >= 20x).

The log: N records `{"request", "response", "metadata": {"session_id"}}` in the shape the
OpenAI client writes, sessions of growing chats (system prompt with a timestamp, tools every
third session), interleaved as concurrent users produce them.

The Python pipeline, as a user would write it: `json.loads` per line, transformers'
`apply_chat_template` (jinja2 with the same template when transformers is missing), HF
`tokenizers` encode, the longest common prefix with the session's previous request and with
the previous request in the log (one llama.cpp slot), and the sums.

Usage: bench/audit.py PREFIXLINT PYTHON_OUT_DIR [--requests N] [--runs K]
"""

import argparse
import gzip
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# bench/tokenizers.py would shadow the `tokenizers` package.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]


def generate(path: Path, requests: int, seed: int = 13) -> None:
    with open(path, "w") as out:
        for line in records(requests, seed):
            out.write(line)


def records(requests, seed: int = 13):
    """The log's lines, one record each (`requests=None`: without end)."""
    rng = random.Random(seed)
    rules = [
        f"Rule {i}: answer questions about {topic} precisely and cite the policy section."
        for i, topic in enumerate(["orders", "refunds", "shipping", "invoices", "returns"] * 3)
    ]
    tools = [
        {"type": "function", "function": {"name": f"tool_{i}", "description": f"Tool {i}.",
                                          "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}}
        for i in range(3)
    ]
    live = []  # [session id, messages, uses tools]
    next_session = 0
    n = 0
    while requests is None or n < requests:
        if len(live) < 64 or rng.random() < 0.2:
            system = f"Current time: 2026-11-30T{n % 24:02d}:{n % 60:02d}:00Z\n" + "\n".join(rules)
            live.append([f"s{next_session}", [{"role": "system", "content": system}], next_session % 3 == 0])
            next_session += 1
        i = rng.randrange(len(live))
        session = live[i]
        session[1].append({"role": "user", "content": f"Question {n}: where is order {rng.randrange(10**6)}?"})
        body = {"model": "m", "messages": list(session[1])}
        if session[2]:
            body["tools"] = tools
        record = {"request": body,
                  "response": {"usage": {"prompt_tokens": 0, "prompt_tokens_details": {"cached_tokens": 0}}},
                  "metadata": {"session_id": session[0]}}
        yield json.dumps(record) + "\n"
        session[1].append({"role": "assistant", "content": f"Answer {n}."})
        if len(session[1]) > 11:
            live.pop(i)
        n += 1


def python_pipeline(log: Path, tokenizer_dir: Path) -> dict:
    from tokenizers import Tokenizer

    config = json.loads((tokenizer_dir / "tokenizer_config.json").read_text())
    template = config["chat_template"]
    try:
        from transformers import PreTrainedTokenizerFast

        hf = PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_dir / "tokenizer.json"))
        hf.chat_template = template

        def render(messages, tools):
            return hf.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=True)

        renderer = "transformers"
    except ImportError:
        import jinja2

        env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
        env.filters["tojson"] = lambda v, indent=None: json.dumps(v, indent=indent, ensure_ascii=False)
        compiled = env.from_string(template)

        def render(messages, tools):
            return compiled.render(messages=messages, tools=tools, add_generation_prompt=True)

        renderer = "jinja2"
    tokenizer = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))

    def lcp(a, b):
        n = 0
        for x, y in zip(a, b):
            if x != y:
                break
            n += 1
        return n

    last = {}
    slot = []
    totals = {"requests": 0, "prompt_tokens": 0, "predicted": 0, "session_shared": 0}
    with open(log) as f:
        for line in f:
            record = json.loads(line)
            body = record["request"]
            text = render(body["messages"], body.get("tools"))
            ids = tokenizer.encode(text, add_special_tokens=False).ids
            session = record["metadata"]["session_id"]
            totals["requests"] += 1
            totals["prompt_tokens"] += len(ids)
            totals["predicted"] += min(lcp(slot, ids), len(ids) - 1)
            totals["session_shared"] += lcp(last.get(session, []), ids)
            last[session] = ids
            slot = ids
    totals["renderer"] = renderer
    return totals


def timed(cmd):
    start = time.perf_counter()
    result = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"{cmd[0]} failed: {result.stderr[-2000:]}")
    return elapsed, result.stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("prefixlint")
    parser.add_argument("out")
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / f"audit-{args.requests}.jsonl"
    if not log.is_file():
        generate(log, args.requests)
    tokenizer_dir = out / "qwen3"
    tokenizer_dir.mkdir(exist_ok=True)
    if not (tokenizer_dir / "tokenizer.json").is_file():
        (tokenizer_dir / "tokenizer.json").write_bytes(gzip.decompress((REPO / "assets/qwen3/tokenizer.json.gz").read_bytes()))
        (tokenizer_dir / "tokenizer_config.json").write_bytes((REPO / "assets/qwen3/tokenizer_config.json").read_bytes())
    size = log.stat().st_size
    rust, py = [], []
    totals = None
    report = None
    for _ in range(args.runs):
        cmd = [args.prefixlint, "audit", str(log), "--engine", "llama.cpp", "--format", "json",
               "--output", str(out / "audit-report.json")]
        rust.append(timed(cmd)[0])
        report = json.loads((out / "audit-report.json").read_text())
        start = time.perf_counter()
        totals = python_pipeline(log, tokenizer_dir)
        py.append(time.perf_counter() - start)
    s = report["summary"]
    same = (s["prompt_tokens"], s["predicted_cached_tokens"]) == (totals["prompt_tokens"], totals["predicted"])
    r, p = statistics.median(rust), statistics.median(py)
    load = os.getloadavg()
    print(f"log: {args.requests:,} requests, {size / 1e6:.1f} MB; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print(f"prefixlint audit --engine llama.cpp: {r:.2f} s ({args.requests / r:,.0f} requests/s)")
    print(f"python ({totals['renderer']} + tokenizers + prefix): {p:.2f} s ({args.requests / p:,.0f} requests/s)")
    print(f"same prompt and predicted tokens: {same} "
          f"(prefixlint {s['prompt_tokens']:,}/{s['predicted_cached_tokens']:,}, python {totals['prompt_tokens']:,}/{totals['predicted']:,})")
    if args.runs > 1:
        print("runs (prefixlint / python, s): " + ", ".join(f"{a:.2f} / {b:.2f}" for a, b in zip(rust, py)))
    print(f"ratio: {p / r:.1f}x (target >= 20x)")


if __name__ == "__main__":
    main()
