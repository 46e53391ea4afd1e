"""Drives SGLang's own RadixCache and TokenToKVPoolAllocator (sglang 0.5.23, CPU) one request
at a time, in its scheduler's order: match the first n-1 prompt tokens, lock the matched
path, evict only when the pool is short by need - available, allocate, and on finish insert
prompt + reply (all but the last sampled token: `checkpoint(up_to=owned_kv_len)`), then the
prompt alone again (`split_prompt=True`), free the duplicates, unlock.

stdin: {"pool": N, "tokenizer": "tokenizer.json.gz", "requests": [{"prompt": text,
"completion_tokens": k}]}. Prompts are tokenized with the same tokenizer file prefixlint
embeds; reply tokens get ids no prompt has. stdout: one JSON object per request.
"""

import gzip
import json
import sys
from array import array

import torch
from sglang.srt.mem_cache.allocator.token import TokenToKVPoolAllocator
from sglang.srt.mem_cache.base_prefix_cache import EvictParams, InsertParams, MatchPrefixParams
from sglang.srt.mem_cache.radix_cache import RadixCache, RadixKey
from tokenizers import Tokenizer

spec = json.load(sys.stdin)
tokenizer = Tokenizer.from_str(gzip.open(spec["tokenizer"], "rt", encoding="utf-8").read())
alloc = TokenToKVPoolAllocator(spec["pool"], torch.float16, "cpu", None, False)
tree = RadixCache.create_simulated(mock_allocator=alloc, page_size=1)
reply_id = 1 << 40
evicted = 0
for request in spec["requests"]:
    prompt = tokenizer.encode(request["prompt"], add_special_tokens=False).ids
    n = len(prompt)
    out = list(range(reply_id, reply_id + max(request["completion_tokens"] - 1, 0)))
    reply_id += len(out)
    m = tree.match_prefix(MatchPrefixParams(key=RadixKey(array("q", prompt[: n - 1]))))
    cached, node = m.device_prefix_len, m.last_device_node
    prefix = tree.path_device_indices(node)
    tree.inc_lock_ref(node)
    need = n + len(out) - cached
    if alloc.available_size() < need:
        evicted += tree.evict(EvictParams(num_tokens=need - alloc.available_size())).num_tokens_evicted
    new = alloc.alloc(need)
    assert new is not None, "pool too small"
    full = prompt + out
    values = torch.cat([prefix, new])
    r = tree.insert(InsertParams(key=RadixKey(array("q", full)), value=values))
    tree.insert(InsertParams(key=RadixKey(array("q", prompt)), value=values[:n], inserted_len=n, priority=1))
    alloc.free(values[cached : r.prefix_len])
    tree.dec_lock_ref(node)
    print(json.dumps({"prompt_tokens": n, "cached": cached, "evicted_so_far": evicted}), flush=True)
