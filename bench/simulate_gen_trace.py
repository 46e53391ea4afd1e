#!/usr/bin/env python3
"""Writes a synthetic block-hash trace (deterministic for a seed) in the Mooncake,
Qwen-Bailian or SemiAnalysis format, shaped after a public trace's published figures.

It is not a public trace: the public ones cannot be fetched on this machine. It is made
the way those traces are made: chats whose prompts grow turn by turn (each request sends
the system prompt, every earlier message and reply, and the new message), hashed a block
at a time so that two requests share block k exactly when they share its whole prefix.

Shapes:
- `conversation`: after Mooncake's conversation trace (12,031 requests in an hour, mean
  prompt about 12k tokens, mean reply about 340, a prefix-cache ratio of about 40%): 30
  system prompts (Zipf popularity), long first messages (pasted documents), 1.7 turns a
  session on average, 40 s between turns.
- `toolagent`: after Mooncake's tool-agent trace (mean prompt about 8.6k tokens, reply
  about 180, a cache ratio of about 60%): 24 system prompts of tool definitions, tool
  results as turns, short replies.

Ids: Mooncake's are consecutive integers (a new id for each new block prefix, as its
remapping does), 512 tokens a block by default; Bailian's salted 64-bit hashes of 16-token
blocks with `chat_id`/`parent_chat_id`/`turn`; SemiAnalysis's one row a session,
`requests[{t, model, in, out, hash_ids, api_time}]` with local ids of 64-token blocks and
now and then a subagent's nested requests.

Usage: simulate_gen_trace.py OUT --shape conversation|toolagent --format mooncake|bailian|semianalysis
       --requests N [--seed S] [--block-size T]
"""

import argparse
import hashlib
import heapq
import json
import math
import random

SHAPES = {
    "conversation": dict(
        prompts=30, prompt_mu=math.log(1500), prompt_sigma=0.8, zipf=1.2,
        first_mu=math.log(5500), first_sigma=1.0, next_mu=math.log(250), next_sigma=1.0,
        reply_mu=math.log(300), reply_sigma=0.7, turns_mean=1.7, think=40.0, rate=3.3,
        max_context=64000,
    ),
    "toolagent": dict(
        prompts=24, prompt_mu=math.log(2500), prompt_sigma=0.5, zipf=1.0,
        first_mu=math.log(1500), first_sigma=1.0, next_mu=math.log(900), next_sigma=1.0,
        reply_mu=math.log(150), reply_sigma=0.6, turns_mean=2.2, think=6.0, rate=6.5,
        max_context=64000,
    ),
}
DEFAULT_BLOCK = {"mooncake": 512, "bailian": 16, "semianalysis": 64}


def lognormal(rng, mu, sigma, lo, hi):
    return int(min(hi, max(lo, rng.lognormvariate(mu, sigma))))


class Ids:
    """Block identities to the format's ids: consecutive integers (Mooncake) or salted
    64-bit hashes (Bailian); a session's entries are let go when it ends."""

    def __init__(self, salted):
        self.salted = salted
        self.table = {}
        self.by_session = {}
        self.next = 0

    def get(self, ident, session):
        if self.salted:
            digest = hashlib.blake2b(repr(ident).encode(), digest_size=8, key=b"prefixlint-salt").digest()
            return int.from_bytes(digest, "big") >> 1
        found = self.table.get(ident)
        if found is None:
            found = self.table[ident] = self.next
            self.next += 1
            if session is not None:
                self.by_session.setdefault(session, []).append(ident)
        return found

    def end(self, session):
        for ident in self.by_session.pop(session, []):
            del self.table[ident]


def hash_ids(ids, scope, sys_id, sys_len, stream_len, block):
    """One id per block of the prompt (the last may be partial): a block inside the system
    prompt is the system prompt's; any other is the session's own (its content is)."""
    out = []
    for k in range(-(-stream_len // block)):
        end = min((k + 1) * block, stream_len)
        if end == (k + 1) * block and end <= sys_len:
            out.append(ids.get(("sys", sys_id, k), None))
        elif end == (k + 1) * block:
            out.append(ids.get(("s", scope, k), scope))
        else:
            out.append(ids.get(("p", scope, k, end), scope))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--shape", choices=sorted(SHAPES), default="conversation")
    p.add_argument("--format", choices=sorted(DEFAULT_BLOCK), default="mooncake")
    p.add_argument("--requests", type=int, required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--block-size", type=int)
    p.add_argument("--turns-mean", type=float, help="mean turns a session (default: the shape's)")
    p.add_argument("--scale", type=float, default=1.0, help="multiplies every length (small fixtures)")
    a = p.parse_args()
    shape = dict(SHAPES[a.shape])
    if a.turns_mean:
        shape["turns_mean"] = a.turns_mean
    for k in ("prompt_mu", "first_mu", "next_mu", "reply_mu"):
        shape[k] += math.log(a.scale)
    shape["max_context"] = int(shape["max_context"] * a.scale)
    block = a.block_size or DEFAULT_BLOCK[a.format]
    rng = random.Random(a.seed)
    prompts = [lognormal(rng, shape["prompt_mu"], shape["prompt_sigma"], 100, 30000) for _ in range(shape["prompts"])]
    weights = [1.0 / (i + 1) ** shape["zipf"] for i in range(len(prompts))]
    ids = Ids(salted=a.format == "bailian")
    model = "model-a"

    # Events: (time, order, session); a session's state is in `live`.
    events = []
    live = {}
    order = 0
    next_session = 0
    t_new = 0.0
    written = 0
    rows = []  # SemiAnalysis: a session's requests until it ends
    with open(a.out, "w") as out:
        while written < a.requests:
            # The next event: a new session or a session's next turn, whichever comes first.
            if not events or t_new <= events[0][0]:
                s = next_session
                next_session += 1
                sys_id = rng.choices(range(len(prompts)), weights)[0]
                turns = min(20, 1 + int(rng.expovariate(1.0 / (shape["turns_mean"] - 1))))
                live[s] = dict(sys=sys_id, len=prompts[sys_id], turn=0, turns=turns, start=t_new,
                               chat=None, requests=[])
                heapq.heappush(events, (t_new, order, s))
                order += 1
                t_new += rng.expovariate(shape["rate"] / shape["turns_mean"])
                continue
            now, _, s = heapq.heappop(events)
            st = live[s]
            st["turn"] += 1
            mu, sigma = (shape["first_mu"], shape["first_sigma"]) if st["turn"] == 1 else (shape["next_mu"], shape["next_sigma"])
            st["len"] += lognormal(rng, mu, sigma, 5, 40000)
            reply = lognormal(rng, shape["reply_mu"], shape["reply_sigma"], 1, 4000)
            prompt = st["len"]
            ident = hash_ids(ids, s, st["sys"], prompts[st["sys"]], prompt, block)
            if a.format == "mooncake":
                line = {"timestamp": int(now * 1000), "input_length": prompt, "output_length": reply, "hash_ids": ident}
                out.write(json.dumps(line, separators=(",", ":")) + "\n")
            elif a.format == "bailian":
                chat = written + 1
                line = {"chat_id": chat, "parent_chat_id": st["chat"] if st["chat"] is not None else -1,
                        "timestamp": round(now, 3), "input_length": prompt, "output_length": reply,
                        "type": "text", "turn": st["turn"], "hash_ids": ident}
                st["chat"] = chat
                out.write(json.dumps(line, separators=(",", ":")) + "\n")
            else:
                req = {"t": round(now - st["start"], 3), "type": "n", "model": model, "in": prompt, "out": reply,
                       "hash_ids": ident, "api_time": round(0.5 + reply / 60.0, 3)}
                st["requests"].append(req)
                if rng.random() < 0.15:
                    # A subagent: the session's system prompt, then a task of its own.
                    sub = []
                    sub_len = prompts[st["sys"]]
                    for k in range(rng.randint(1, 3)):
                        sub_len += lognormal(rng, math.log(400), 0.8, 5, 8000)
                        sub_reply = lognormal(rng, math.log(100), 0.6, 1, 2000)
                        scope = (s, "agent", st["turn"])
                        sub.append({"t": round(now - st["start"] + 0.5 + k, 3), "type": "n", "model": model,
                                    "in": sub_len, "out": sub_reply,
                                    "hash_ids": hash_ids(ids, scope, st["sys"], prompts[st["sys"]], sub_len, block),
                                    "api_time": round(0.5 + sub_reply / 60.0, 3)})
                    ids.end((s, "agent", st["turn"]))
                    st["requests"].append({"t": round(now - st["start"] + 0.5, 3), "type": "subagent",
                                           "agent_id": f"agent-{s}-{st['turn']}", "requests": sub})
                    written += len(sub)
            written += 1
            st["len"] += reply
            if st["turn"] < st["turns"] and st["len"] < shape["max_context"]:
                heapq.heappush(events, (now + reply / 60.0 + rng.expovariate(1.0 / shape["think"]), order, s))
                order += 1
            else:
                if a.format == "semianalysis":
                    row = {"id": f"session-{s}", "models": [model], "block_size": block,
                           "hash_id_scope": "local", "requests": st["requests"]}
                    out.write(json.dumps(row, separators=(",", ":")) + "\n")
                ids.end(s)
                del live[s]
        if a.format == "semianalysis":
            # Sessions still open when the trace ends: their requests so far.
            for s, st in sorted(live.items()):
                if st["requests"]:
                    row = {"id": f"session-{s}", "models": [model], "block_size": block,
                           "hash_id_scope": "local", "requests": st["requests"]}
                    out.write(json.dumps(row, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
