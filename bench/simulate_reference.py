#!/usr/bin/env python3
"""An independent reference replay of a block-hash trace: LRU by block, one request at a
time in file order (what `prefixlint simulate --sequential` models), written from the
rules in docs/simulate.md, sharing no code with simulate.

The cache: `--kv-blocks N` blocks, one of them vLLM's null block, so N - 1 usable. Free
blocks are either empty (never used, or a partial block with no hash) or hold a hash; the
hashed free blocks form an LRU list. A request:

- looks up the longest run of its leading full prompt blocks that are cached, at most
  (prompt - 1) // block of them (the last prompt token is always computed);
- takes those blocks, and for the rest of its prompt and reply (prompt + reply - 1 tokens,
  in whole blocks) takes empty blocks first, then evicts the least recently used;
- gives its full prompt blocks their hashes (a hash may sit in two blocks: a lookup takes
  the first), its full reply blocks hashes of their own (never matched), its partial last
  block none;
- when it finishes, frees its blocks last first: hashed blocks join the LRU list's recent
  end, so a prefix loses its tail before its head; the partial block goes back empty.

A request larger than the whole cache is not replayed (not counted). The infinite cache is
the same lookup over a set that keeps every block.

Trace blocks map onto engine blocks as docs/simulate.md says: engine block j (tokens
[j*B, (j+1)*B)) is keyed by the chain of trace hashes up to the trace block m holding its
last token and by how many tokens of m it covers; only full engine blocks the trace's
hashes cover are keyed.

Usage: simulate_reference.py TRACE --format mooncake|bailian|semianalysis --block-size B
       [--trace-block-size T] --kv-blocks N [N ...]   (prints one JSON line)
"""

import argparse
import gzip
import json
import sys
import time
from collections import OrderedDict

DEFAULT_TRACE_BLOCK = {"mooncake": 512, "bailian": 16, "semianalysis": 64}


def open_text(path):
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def requests(path, fmt, trace_block_flag):
    """(prompt tokens, reply tokens, trace ids, trace block, namespace) in file order."""
    with open_text(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if fmt in ("mooncake", "bailian"):
                if not isinstance(row, dict) or "hash_ids" not in row:
                    continue
                tb = trace_block_flag or DEFAULT_TRACE_BLOCK[fmt]
                yield row["input_length"], row.get("output_length", 0), row["hash_ids"], tb, ()
            else:
                tb = row.get("block_size") or trace_block_flag or 64
                local = row.get("hash_id_scope") != "global"
                sid = row.get("id")
                flat = []

                def walk(entries):
                    for e in entries:
                        if "requests" in e and isinstance(e["requests"], list):
                            walk(e["requests"])
                        if "hash_ids" in e:
                            flat.append(e)

                walk(row["requests"])
                flat.sort(key=lambda e: e.get("t") or 0.0)  # stable, as simulate sorts
                for e in flat:
                    if "in" not in e:
                        continue
                    ns = (sid if local else None, e.get("model") or "")
                    yield e["in"], e.get("out") or 0, e["hash_ids"], tb, ns


def engine_keys(ids, tokens, trace_block, block, namespace):
    covered = min(tokens, len(ids) * trace_block)
    keys = []
    chain = ("ns", namespace)
    chained = 0
    for j in range(covered // block):
        end = (j + 1) * block
        m = (end - 1) // trace_block
        while chained <= m:
            chain = hash((chain, ids[chained]))
            chained += 1
        keys.append((chain, end - m * trace_block))
    return keys


class Lru:
    def __init__(self, kv_blocks):
        self.usable = kv_blocks - 1
        self.empty = self.usable  # free blocks without a hash
        self.free = OrderedDict()  # block id -> key, least recent first
        self.where = {}  # key -> [block ids], the first is the one a lookup takes
        self.next_block = 0
        self.unique = 0
        self.cached_tokens = 0
        self.prompt_tokens = 0
        self.too_large = 0

    def request(self, prompt, reply, keys, block):
        held = prompt + max(reply - 1, 0)
        total = -(-held // block)
        if total > self.usable:
            self.too_large += 1
            return
        cap = min(max(prompt - 1, 0) // block, len(keys))
        hit = []
        for k in keys[:cap]:
            blocks = self.where.get(k)
            if not blocks:
                break
            hit.append(blocks[0])
        for b in hit:
            del self.free[b]  # sequential: every cached block is free
        mine = list(hit)
        while len(mine) < total:
            if self.empty:
                self.empty -= 1
                self.next_block += 1
                b = ("new", self.next_block)
            else:
                b, old = self.free.popitem(last=False)
                self.where[old].remove(b)
                if not self.where[old]:
                    del self.where[old]
            mine.append(b)
        full = held // block
        labels = []
        for i, b in enumerate(mine):
            if i < len(hit):
                labels.append(keys[i])
                continue
            if i < len(keys):
                key = keys[i]
            elif i < full:
                self.unique += 1
                key = ("unique", self.unique)
            else:
                key = None
            if key is not None:
                self.where.setdefault(key, []).append(b)
            labels.append(key)
        self.cached_tokens += len(hit) * block
        self.prompt_tokens += prompt
        for b, key in reversed(list(zip(mine, labels))):
            if key is None:
                self.empty += 1
            else:
                self.free[b] = key


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace")
    p.add_argument("--format", required=True, choices=sorted(DEFAULT_TRACE_BLOCK))
    p.add_argument("--block-size", type=int, required=True)
    p.add_argument("--trace-block-size", type=int)
    p.add_argument("--kv-blocks", type=int, nargs="+", required=True)
    a = p.parse_args()
    start = time.perf_counter()
    caches = [Lru(n) for n in a.kv_blocks]
    seen = set()
    infinite_cached = infinite_prompt = count = 0
    for prompt, reply, ids, tb, ns in requests(a.trace, a.format, a.trace_block_size):
        count += 1
        keys = engine_keys(ids, prompt, tb, a.block_size, ns)
        cap = min(max(prompt - 1, 0) // a.block_size, len(keys))
        hit = 0
        while hit < cap and keys[hit] in seen:
            hit += 1
        infinite_cached += hit * a.block_size
        infinite_prompt += prompt
        seen.update(keys)
        for c in caches:
            c.request(prompt, reply, keys, a.block_size)
    out = {
        "requests": count,
        "infinite_cache_hit_rate": infinite_cached / infinite_prompt if infinite_prompt else 0.0,
        "rows": [
            {
                "kv_blocks": n,
                "hit_rate": c.cached_tokens / c.prompt_tokens if c.prompt_tokens else 0.0,
                "predicted_cached_tokens": c.cached_tokens,
                "prompt_tokens": c.prompt_tokens,
                "too_large": c.too_large,
            }
            for n, c in zip(a.kv_blocks, caches)
        ],
        "seconds": time.perf_counter() - start,
    }
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
