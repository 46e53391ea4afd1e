#!/usr/bin/env python3
"""Times `prefixlint audit` on a generated request log against a Python pipeline doing the same
work, and prints the ratios, wall and CPU side by side (issue 13: >= 20x; issue 30: >= 60x).

The log: N records `{"request", "response", "metadata": {"session_id"}}` in the shape the
OpenAI client writes, sessions of growing chats (system prompt with a timestamp, tools every
third session), interleaved as concurrent users produce them.

The Python pipeline, as a user would write it: `json.loads` per line, transformers'
`apply_chat_template` (jinja2 with the same template when transformers is missing), HF
`tokenizers` encode, the longest common prefix with the session's previous request and with
the previous request in the log (one llama.cpp slot), and the sums.

Each round runs, interleaved: prefixlint on both cores, prefixlint on one core (`taskset -c 0`,
`RAYON_NUM_THREADS=1`), and the Python pipeline; the medians are printed with throughput in
requests/s and MB/s of log, and the load average at the start and the end of each round (the
machine may be shared). Every request's prompt tokens and predicted cached tokens must be
equal on all three sides.

A second corpus: `--log PATH` times another log of the same record shape (made with
`--shape long`: longer sessions, tools in every one, multi-line turns), and `--chat-template
FILE` renders with another template on both sides (a template prefixlint has no native
renderer for goes through minijinja).

Usage: bench/audit.py PREFIXLINT PYTHON_OUT_DIR [--requests N] [--runs K] [--log PATH]
       [--chat-template FILE]
       bench/audit.py --generate OUT.jsonl N [--shape bench|long]
"""

import argparse
import gzip
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# bench/tokenizers.py would shadow the `tokenizers` package.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]


def generate(path: Path, requests: int, seed: int = 13, shape: str = "bench") -> None:
    with open(path, "w") as out:
        for line in (records(requests, seed) if shape == "bench" else long_records(requests, seed)):
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


def long_records(requests, seed: int = 29):
    """Another shape: fewer, longer sessions (up to 40 turns), tools in every session, a longer
    system prompt with the clock on its last line, multi-line user turns and replies."""
    rng = random.Random(seed)
    policy = [f"Section {i}.{j}: {word} requests are handled by the {team} team within {i + j} days."
              for i in range(8) for j, (word, team) in enumerate(
                  [("billing", "finance"), ("login", "identity"), ("export", "data")])]
    tools = [
        {"type": "function", "function": {"name": f"lookup_{name}", "description": f"Look up a {name} by id.",
                                          "parameters": {"type": "object", "required": ["id"],
                                                         "properties": {"id": {"type": "string"},
                                                                        "verbose": {"type": "boolean"}}}}}
        for name in ("account", "invoice", "ticket", "shipment", "refund")
    ]
    live = []
    next_session = 0
    n = 0
    while requests is None or n < requests:
        if len(live) < 24 or rng.random() < 0.05:
            system = "You are the support assistant.\n" + "\n".join(policy) + \
                f"\nToday is 2026-12-{1 + n % 28:02d}."
            live.append([f"L{next_session}", [{"role": "system", "content": system}], rng.randrange(20, 41)])
            next_session += 1
        i = rng.randrange(len(live))
        session = live[i]
        lines = [f"Ticket {rng.randrange(10**5)}: customer {rng.randrange(10**4)} reports a problem."
                 for _ in range(rng.randrange(1, 4))]
        session[1].append({"role": "user", "content": "\n".join(lines)})
        body = {"model": "m", "messages": list(session[1]), "tools": tools}
        record = {"request": body,
                  "response": {"usage": {"prompt_tokens": 0, "prompt_tokens_details": {"cached_tokens": 0}}},
                  "metadata": {"session_id": session[0]}}
        yield json.dumps(record) + "\n"
        session[1].append({"role": "assistant",
                           "content": f"Checked ticket {n}.\nThe {rng.choice(['account', 'invoice'])} is fine."})
        if len(session[1]) > session[2]:
            live.pop(i)
        n += 1


def python_pipeline(log: Path, tokenizer_dir: Path, template_file: Path = None) -> dict:
    from tokenizers import Tokenizer

    config = json.loads((tokenizer_dir / "tokenizer_config.json").read_text())
    template = template_file.read_text() if template_file else config["chat_template"]
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
    totals = {"requests": 0, "prompt_tokens": 0, "predicted": 0, "session_shared": 0, "each": []}
    with open(log) as f:
        for line in f:
            record = json.loads(line)
            body = record["request"]
            text = render(body["messages"], body.get("tools"))
            ids = tokenizer.encode(text, add_special_tokens=False).ids
            session = record["metadata"]["session_id"]
            predicted = min(lcp(slot, ids), len(ids) - 1)
            totals["requests"] += 1
            totals["prompt_tokens"] += len(ids)
            totals["predicted"] += predicted
            totals["each"].append((len(ids), predicted))
            totals["session_shared"] += lcp(last.get(session, []), ids)
            last[session] = ids
            slot = ids
    totals["renderer"] = renderer
    return totals


def timed(cmd, env=None):
    """Wall and CPU (user + system) seconds of a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.exit(f"{cmd[0]} failed: {result.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def per_request(report_path: Path):
    report = json.loads(report_path.read_text())
    each = [(r["prompt_tokens"], r["predicted_cached_tokens"]) for r in report["requests"]]
    return report["summary"], each


def load() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--generate":
        gen = argparse.ArgumentParser()
        gen.add_argument("--generate", dest="path", required=True)
        gen.add_argument("requests", type=int)
        gen.add_argument("--shape", choices=["bench", "long"], default="bench")
        g = gen.parse_args()
        generate(Path(g.path), g.requests, **({} if g.shape == "bench" else {"seed": 29}), shape=g.shape)
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("prefixlint")
    parser.add_argument("out")
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--log", type=Path, help="another log of the same record shape")
    parser.add_argument("--chat-template", type=Path, help="render with this template on both sides")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = args.log or out / f"audit-{args.requests}.jsonl"
    if not log.is_file():
        generate(log, args.requests)
    tokenizer_dir = out / "qwen3"
    tokenizer_dir.mkdir(exist_ok=True)
    if not (tokenizer_dir / "tokenizer.json").is_file():
        (tokenizer_dir / "tokenizer.json").write_bytes(gzip.decompress((REPO / "assets/qwen3/tokenizer.json.gz").read_bytes()))
        (tokenizer_dir / "tokenizer_config.json").write_bytes((REPO / "assets/qwen3/tokenizer_config.json").read_bytes())
    size = log.stat().st_size
    mb = size / 1e6
    one_core = dict(os.environ, RAYON_NUM_THREADS="1")
    sides = {"two": [], "one": [], "python": []}  # (wall, cpu) per round
    loads = []
    same = True
    totals = None
    for _ in range(args.runs):
        start_load = load()
        for side, prefix, env in (("two", [], None), ("one", ["taskset", "-c", "0"], one_core)):
            report = out / f"audit-report-{side}.json"
            cmd = prefix + [args.prefixlint, "audit", str(log), "--engine", "llama.cpp", "--format", "json",
                            "--output", str(report)]
            if args.chat_template:
                cmd += ["--chat-template", str(args.chat_template)]
            sides[side].append(timed(cmd, env))
        start_wall, start_cpu = time.perf_counter(), time.process_time()
        totals = python_pipeline(log, tokenizer_dir, args.chat_template)
        sides["python"].append((time.perf_counter() - start_wall, time.process_time() - start_cpu))
        loads.append((start_load, load()))
        summary, each_two = per_request(out / "audit-report-two.json")
        _, each_one = per_request(out / "audit-report-one.json")
        same = same and each_two == totals["each"] and each_one == each_two
    med = {side: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
           for side, runs in sides.items()}
    n = totals["requests"]
    print(f"log: {log.name}, {n:,} requests, {mb:.1f} MB; {args.runs} interleaved round(s), medians")

    def line(name, side):
        wall, cpu = med[side]
        return (f"{name}: {wall:.2f} s wall, {cpu:.2f} s CPU; {n / wall:,.0f} requests/s, "
                f"{mb / wall:.1f} MB/s")

    print(line("prefixlint audit --engine llama.cpp, 2 cores", "two"))
    print(line("prefixlint audit --engine llama.cpp, 1 core (taskset -c 0, RAYON_NUM_THREADS=1)", "one"))
    print(line(f"python ({totals['renderer']} + tokenizers + prefix), 1 thread", "python"))
    print(f"same prompt and predicted cached tokens on every request (2 cores, 1 core, python): {same} "
          f"(sums: prefixlint {summary['prompt_tokens']:,}/{summary['predicted_cached_tokens']:,}, "
          f"python {totals['prompt_tokens']:,}/{totals['predicted']:,})")
    for i, ((two_w, two_c), (one_w, one_c), (py_w, py_c), (l0, l1)) in enumerate(
            zip(sides["two"], sides["one"], sides["python"], loads), 1):
        print(f"round {i}: load average {l0} -> {l1}; wall/CPU s: 2 cores {two_w:.2f}/{two_c:.2f}, "
              f"1 core {one_w:.2f}/{one_c:.2f}, python {py_w:.2f}/{py_c:.2f}")
    (two_w, two_c), (one_w, one_c), (py_w, py_c) = med["two"], med["one"], med["python"]
    print(f"ratio python / prefixlint (2 cores): wall {py_w / two_w:.1f}x, CPU {py_c / two_c:.1f}x "
          f"(target >= 60x)")
    print(f"ratio python / prefixlint (1 core):  wall {py_w / one_w:.1f}x, CPU {py_c / one_c:.1f}x")
    print(f"scaling 1 -> 2 cores: {one_w / two_w:.2f}x wall")


if __name__ == "__main__":
    main()
