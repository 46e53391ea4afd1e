"""A generated request log for the partitioned-audit tests, the example and the 1M-request
run: records {"request", "response", "metadata"} as the OpenAI client's logs have them.

Concurrent agent sessions (up to 96 live at once) share one system prompt, so one session's
prefix serves the next (the cross-session hits the replay counts); some sessions put a clock
in their system prompt that moves mid-session (clock breaks), trim their history
(history-trimmed) or reorder their tools (tool-order); some responses log no cached tokens
(missed hits). Requests without a session key are one-off classification calls (the fallback
group). A few requests have a message without a role (not audited) and a few lines are not
JSON (skipped).

    python bench/gen_audit_log.py OUT.jsonl N [SEED]
"""

import json
import random
import sys

RULES = "\n".join(
    f"Rule {i}: answer questions about {topic} precisely and cite the policy section."
    for i, topic in enumerate(["orders", "refunds", "shipping", "invoices", "returns"] * 3)
)
TOOLS = [
    {"type": "function", "function": {"name": f"tool_{i}", "description": f"Tool {i}.",
                                      "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}}
    for i in range(3)
]
START = 1_764_460_800  # 2025-11-30T00:00:00Z


def lines(requests, seed=7):
    """The log's lines (without line breaks)."""
    rng = random.Random(seed)
    live = []
    next_session = 0
    n = 0
    while n < requests:
        now = START + n * 2
        if rng.random() < 0.03:
            # A one-off call without a session key: its own system prompt, one turn.
            body = {"model": "m", "messages": [
                {"role": "system", "content": f"Ticket {n} ({rng.randrange(10**9)}): classify it as billing, shipping or other."},
                {"role": "user", "content": f"My parcel {rng.randrange(10**6)} has not arrived."}]}
            yield json.dumps({"request": body, "response": {"usage": {"prompt_tokens": 0}},
                              "metadata": {"timestamp": now}})
            n += 1
            continue
        if rng.random() < 0.002:
            yield "this line is not JSON"
            n += 1
            continue
        if len(live) < 96 and (len(live) < 8 or rng.random() < 0.25):
            kind = next_session % 4
            live.append({"id": f"s{next_session}", "kind": kind, "turn": 0, "messages": [],
                         "tools": list(TOOLS) if kind == 1 else None})
            next_session += 1
        i = rng.randrange(len(live))
        s = live[i]
        system = "You are the support agent of an online shop.\n" + RULES
        if s["kind"] == 2:
            # A clock that moves each 5 turns: a clock break in the middle of the session.
            system += f"\nCurrent time: 2025-11-30T{(s['turn'] // 5) % 24:02d}:00:00Z"
        if s["kind"] == 1 and s["turn"] == 6:
            s["tools"].reverse()  # tool-order
        if s["kind"] == 3 and len(s["messages"]) > 8:
            s["messages"] = s["messages"][4:]  # history-trimmed
        s["messages"].append({"role": "user", "content": f"Question {n}: where is order {rng.randrange(10**6)}?"})
        messages = [{"role": "system", "content": system}] + list(s["messages"])
        if rng.random() < 0.003:
            messages.append({"content": "a message without a role"})  # not audited
        body = {"model": "m", "messages": messages}
        if s["tools"]:
            body["tools"] = s["tools"]
        reply = f"Answer {n}: order is on its way."
        usage = {"prompt_tokens": 0, "completion_tokens": 9}
        if rng.random() < 0.5:
            usage["prompt_tokens_details"] = {"cached_tokens": 0}
        yield json.dumps({
            "request": body,
            "response": {"choices": [{"message": {"role": "assistant", "content": reply}}], "usage": usage},
            "metadata": {"session_id": s["id"], "timestamp": now},
        })
        s["messages"].append({"role": "assistant", "content": reply})
        s["turn"] += 1
        if s["turn"] >= 12 or rng.random() < 0.04:
            live.pop(i)
        n += 1


def write(path, requests, seed=7):
    with open(path, "w") as out:
        for line in lines(requests, seed):
            out.write(line + "\n")


if __name__ == "__main__":
    write(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 7)
