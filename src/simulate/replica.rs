//! One replica's cache: vLLM's block pool ([`super::block_pool`]) or llama.cpp's slots, with
//! the same small interface: what a request would hit, admit it (or say it must wait),
//! release it when it finishes, expire by `--ttl`.
//!
//! Each replica also remembers the hashes that left its cache and why (evicted or expired),
//! in a ghost list as long as four caches and the order they left, so an uncached block can
//! be told apart from one never seen. Memory stays bounded by the cache. vLLM's pool reports
//! the hashes it evicts; SGLang's tree the blocks of each leaf it evicts; a llama.cpp slot
//! given to another request loses the blocks of its old tokens past the common prefix.
//! The token-granular caches count evicted tokens, and their evicted blocks are those tokens
//! ÷ `--block-size`.

use super::block_pool::{generated_hash, BlockPool, Gone, HashMapU64, Held, GENERATED};
use super::prepare::Prepared;
use super::radix::{Departed, RadixHeld, RadixTree};
use std::collections::VecDeque;

/// Which engine's cache a replica runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    Vllm,
    LlamaCpp,
    /// SGLang's radix cache ([`super::radix`]).
    Sglang,
}

/// The tokens a running request holds in its blocks: vLLM computes the prompt and every
/// generated token but the last (sampled, never fed back).
pub fn held_tokens(prompt: usize, generated: usize) -> usize {
    prompt + generated.saturating_sub(1)
}

/// The full blocks of a prompt a lookup may hit: the last prompt token is always computed.
pub fn cacheable_blocks(prompt: usize, block: usize) -> usize {
    prompt.saturating_sub(1) / block
}

/// What a running request holds, to give back when it finishes.
pub enum Running {
    Blocks(Held),
    Slot(usize),
    Radix(RadixHeld),
}

/// A request admitted: the tokens it found cached (whole blocks for vLLM; any count for
/// SGLang's tree and llama.cpp's slots), and what it holds.
pub struct Admitted {
    pub cached_tokens: usize,
    pub running: Running,
}

/// Whether a request can ever run on this replica.
pub enum Fit {
    Yes,
    Never(String),
}

struct Ghosts {
    /// Hash → why it left, the eviction serial then, and the record's own serial.
    gone: HashMapU64<(Gone, u64, u64)>,
    order: VecDeque<(u64, u64)>,
    limit: usize,
    records: u64,
    /// Blocks evicted so far (the serial of the last one).
    evictions: u64,
}

impl Ghosts {
    fn new(limit: usize) -> Ghosts {
        Ghosts {
            gone: HashMapU64::default(),
            order: VecDeque::new(),
            limit,
            records: 0,
            evictions: 0,
        }
    }

    /// One block left the cache (vLLM: each evicted block counts one eviction).
    fn record(&mut self, hash: u64, why: Gone) {
        if why == Gone::Evicted {
            self.evictions += 1;
        }
        self.remember(hash, why);
    }

    /// Remembers a hash that left, at the current eviction serial.
    fn remember(&mut self, hash: u64, why: Gone) {
        if hash & GENERATED != 0 {
            // No prompt asks for a generated block: nothing to remember.
            return;
        }
        self.records += 1;
        self.gone.insert(hash, (why, self.evictions, self.records));
        self.order.push_back((hash, self.records));
        while self.order.len() > self.limit {
            if let Some((old, serial)) = self.order.pop_front() {
                // A later record of the same hash stays.
                if self.gone.get(&old).is_some_and(|g| g.2 == serial) {
                    self.gone.remove(&old);
                }
            }
        }
    }
}

pub struct Slot {
    tokens: Vec<u32>,
    /// The chained hashes of the full blocks of `tokens` (the prompt's own).
    hashes: Vec<u64>,
    busy: bool,
    last_used: u64,
}

pub enum Cache {
    Vllm(BlockPool),
    Slots(Vec<Slot>),
    Radix(RadixTree),
}

pub struct Replica {
    pub cache: Cache,
    ghosts: Ghosts,
    block: usize,
    /// llama.cpp: the tokens one slot holds (its share of the context), where known.
    slot_tokens: Option<usize>,
    /// llama.cpp's `--slot-prompt-similarity`.
    similarity: f64,
    uses: u64,
    /// Generated blocks hashed so far (each gets its own hash).
    generated: u64,
    pub running: usize,
    /// Blocks evicted so far.
    pub evicted_blocks: u64,
    /// SGLang's tree and llama.cpp's slots: tokens evicted so far.
    evicted_tokens: u64,
}

/// The ghost list's length: four caches of blocks, and never under 64.
fn ghost_limit(blocks: usize) -> usize {
    blocks.saturating_mul(4).max(64)
}

/// llama.cpp: a slot of unbounded context counts as this many blocks for the ghost list.
const UNBOUNDED_SLOT_BLOCKS: usize = 1024;

impl Replica {
    pub fn vllm(num_gpu_blocks: usize, block: usize, ttl: bool) -> Replica {
        let pool = BlockPool::new(num_gpu_blocks, ttl);
        let limit = ghost_limit(pool.usable());
        Replica {
            cache: Cache::Vllm(pool),
            ghosts: Ghosts::new(limit),
            block,
            slot_tokens: None,
            similarity: 0.0,
            uses: 0,
            generated: 0,
            running: 0,
            evicted_blocks: 0,
            evicted_tokens: 0,
        }
    }

    /// SGLang: a pool of `tokens` KV slots (page size 1).
    pub fn radix(tokens: usize, block: usize) -> Replica {
        Replica {
            cache: Cache::Radix(RadixTree::new(tokens, block)),
            ghosts: Ghosts::new(ghost_limit(tokens / block.max(1))),
            block,
            slot_tokens: None,
            similarity: 0.0,
            uses: 0,
            generated: 0,
            running: 0,
            evicted_blocks: 0,
            evicted_tokens: 0,
        }
    }

    pub fn slots(
        slots: usize,
        slot_tokens: Option<usize>,
        similarity: f64,
        block: usize,
    ) -> Replica {
        Replica {
            cache: Cache::Slots(
                (0..slots)
                    .map(|_| Slot {
                        tokens: Vec::new(),
                        hashes: Vec::new(),
                        busy: false,
                        last_used: 0,
                    })
                    .collect(),
            ),
            ghosts: Ghosts::new(ghost_limit(slots.saturating_mul(
                slot_tokens.map_or(UNBOUNDED_SLOT_BLOCKS, |t| t / block.max(1)),
            ))),
            block,
            slot_tokens,
            similarity,
            uses: 0,
            generated: 0,
            running: 0,
            evicted_blocks: 0,
            evicted_tokens: 0,
        }
    }

    fn total_blocks(&self, r: &Prepared) -> usize {
        held_tokens(r.prompt_tokens, r.generated).div_ceil(self.block)
    }

    pub fn fits(&self, r: &Prepared) -> Fit {
        match &self.cache {
            Cache::Vllm(pool) => {
                let need = self.total_blocks(r);
                if need > pool.usable() {
                    Fit::Never(format!(
                        "needs {need} blocks of {} tokens for its prompt and reply; the cache has {}",
                        self.block,
                        pool.usable()
                    ))
                } else {
                    Fit::Yes
                }
            }
            // llama.cpp refuses a prompt as long as the slot's context; a reply that reaches
            // the end of the context stops there (no context shift by default).
            Cache::Slots(_) => match self.slot_tokens {
                Some(limit) if r.prompt_tokens >= limit => Fit::Never(format!(
                    "its prompt of {} tokens does not fit a slot's context of {limit}",
                    r.prompt_tokens
                )),
                _ => Fit::Yes,
            },
            Cache::Radix(tree) => {
                let need = held_tokens(r.prompt_tokens, r.generated);
                if need > tree.pool() {
                    Fit::Never(format!(
                        "needs {need} tokens for its prompt and reply; the pool has {}",
                        tree.pool()
                    ))
                } else {
                    Fit::Yes
                }
            }
        }
    }

    /// The prompt tokens this replica would serve from its cache now (the prefix router's
    /// question), without changing anything.
    pub fn would_hit(&self, r: &Prepared) -> usize {
        match &self.cache {
            Cache::Vllm(pool) => {
                pool.lookup(&r.hashes, cacheable_blocks(r.prompt_tokens, self.block))
                    .blocks
                    .len()
                    * self.block
            }
            Cache::Slots(slots) => slots
                .iter()
                .filter(|s| !s.busy)
                .map(|s| slot_reuse(&s.tokens, r))
                .max()
                .unwrap_or(0),
            Cache::Radix(tree) => r
                .ids
                .as_deref()
                .map_or(0, |ids| tree.peek(&ids[..ids.len().saturating_sub(1)])),
        }
    }

    /// Whether a full block of this hash is cached here (a routed-elsewhere check; vLLM).
    pub fn holds(&self, hash: u64) -> bool {
        match &self.cache {
            Cache::Vllm(pool) => pool.contains(hash),
            Cache::Slots(_) | Cache::Radix(_) => false,
        }
    }

    /// The token-granular caches' routed-elsewhere check: the longest prefix of the prompt
    /// cached here (in any slot, busy or not; in the tree, locked or not). 0 for vLLM,
    /// which answers by hash ([`Replica::holds`]).
    pub fn holds_prefix(&self, r: &Prepared) -> usize {
        match &self.cache {
            Cache::Vllm(_) => 0,
            Cache::Slots(slots) => slots
                .iter()
                .map(|s| common_prefix(&s.tokens, r))
                .max()
                .unwrap_or(0),
            Cache::Radix(tree) => r.ids.as_deref().map_or(0, |ids| tree.peek(ids)),
        }
    }

    /// A token-granular cache evicted `tokens`: the eviction serial moves to the blocks
    /// evicted so far (tokens ÷ block size).
    fn evicted(&mut self, tokens: usize) {
        self.evicted_tokens += tokens as u64;
        self.evicted_blocks = self.evicted_tokens / self.block.max(1) as u64;
        self.ghosts.evictions = self.evicted_blocks;
    }

    /// Admits a request, or `None` when its blocks (or a slot) are not free now.
    pub fn admit(&mut self, r: &Prepared) -> Option<Admitted> {
        let total = self.total_blocks(r);
        let block = self.block;
        let admitted = match &mut self.cache {
            Cache::Vllm(pool) => {
                let hit = pool.lookup(&r.hashes, cacheable_blocks(r.prompt_tokens, block));
                let cached_blocks = hit.blocks.len();
                let held = pool.allocate(hit, total)?;
                pool.cache(&held, cached_blocks, &r.hashes);
                // The blocks the reply fills are hashed too (`cache_blocks` as decoding goes).
                let full = held_tokens(r.prompt_tokens, r.generated) / block;
                for index in r.hashes.len()..full {
                    self.generated += 1;
                    pool.cache_at(&held, index, generated_hash(self.generated));
                }
                for (hash, why) in pool.departed.drain(..) {
                    if why == Gone::Evicted {
                        self.evicted_blocks += 1;
                    }
                    self.ghosts.record(hash, why);
                }
                Admitted {
                    cached_tokens: cached_blocks * block,
                    running: Running::Blocks(held),
                }
            }
            Cache::Slots(slots) => {
                let i = pick_slot(slots, r, self.similarity)?;
                let reused = slot_reuse(&slots[i].tokens, r);
                let slot = &mut slots[i];
                slot.busy = true;
                if let Some(ids) = &r.ids {
                    // The slot keeps the common prefix; its tokens after it are overwritten:
                    // evicted, with the blocks they lay in.
                    let kept = common_prefix(&slot.tokens, r);
                    let lost = slot.tokens.len() - kept;
                    let old = std::mem::replace(&mut slot.hashes, r.hashes.clone());
                    slot.tokens.clear();
                    slot.tokens.extend_from_slice(ids);
                    if lost > 0 {
                        self.evicted(lost);
                        for hash in old.into_iter().skip(kept / block) {
                            self.ghosts.remember(hash, Gone::Evicted);
                        }
                    }
                }
                Admitted {
                    cached_tokens: reused,
                    running: Running::Slot(i),
                }
            }
            Cache::Radix(tree) => {
                let ids = r.ids.as_deref().unwrap_or_default();
                let admitted = tree.admit(ids, &r.hashes, r.generated);
                // What it evicted stays evicted, admitted or not.
                let mut departed = std::mem::take(&mut tree.departed);
                for d in departed.drain(..) {
                    match d {
                        Departed::Tokens(n) => self.evicted(n),
                        Departed::Block(hash) => self.ghosts.remember(hash, Gone::Evicted),
                    }
                }
                if let Cache::Radix(tree) = &mut self.cache {
                    // Its buffer back, for the next admission.
                    tree.departed = departed;
                }
                let (cached, held) = admitted?;
                Admitted {
                    cached_tokens: cached,
                    running: Running::Radix(held),
                }
            }
        };
        self.running += 1;
        Some(admitted)
    }

    pub fn release(&mut self, running: Running, now: f64) {
        self.running -= 1;
        match (&mut self.cache, running) {
            (Cache::Vllm(pool), Running::Blocks(held)) => pool.release(held, now),
            (Cache::Slots(slots), Running::Slot(i)) => {
                // `server_slot::release` stamps `t_last_used`: LRU is by finishing time.
                self.uses += 1;
                slots[i].busy = false;
                slots[i].last_used = self.uses;
            }
            (Cache::Radix(tree), Running::Radix(held)) => tree.release(held),
            _ => unreachable!("a request is released to the cache that admitted it"),
        }
    }

    pub fn expire(&mut self, cutoff: f64) {
        if let Cache::Vllm(pool) = &mut self.cache {
            pool.expire(cutoff);
            for (hash, why) in pool.departed.drain(..) {
                self.ghosts.record(hash, why);
            }
        }
    }

    /// Why a prompt block this replica did not serve is not cached here: it left by
    /// eviction (with the number of blocks evicted after it) or by TTL, or it was never here.
    pub fn gone(&self, hash: u64) -> Option<(Gone, u64)> {
        self.ghosts
            .gone
            .get(&hash)
            .map(|&(why, at, _)| (why, self.ghosts.evictions.saturating_sub(at)))
    }
}

/// The slot llama.cpp's server gives a request (`server_context::get_available_slot`), or
/// `None` when every slot is busy. With a similarity above 0: the first idle slot, holding
/// tokens, whose common prefix with the prompt is the largest fraction of the prompt above
/// the threshold (strictly). Else the least recently released idle slot; of slots never
/// used, or released together, the last (`t_last_used <= t_last`).
fn pick_slot(slots: &[Slot], r: &Prepared, similarity: f64) -> Option<usize> {
    let idle = || slots.iter().enumerate().filter(|(_, s)| !s.busy);
    if similarity > 0.0 && r.prompt_tokens > 0 {
        let mut best: Option<(usize, f64)> = None;
        for (i, slot) in idle().filter(|(_, s)| !s.tokens.is_empty()) {
            let sim = common_prefix(&slot.tokens, r) as f64 / r.prompt_tokens as f64;
            if sim > best.map_or(0.0, |b| b.1) && sim > similarity {
                best = Some((i, sim));
            }
        }
        if let Some((i, _)) = best {
            return Some(i);
        }
    }
    let mut lru: Option<(usize, u64)> = None;
    for (i, slot) in idle() {
        if lru.is_none_or(|(_, t)| slot.last_used <= t) {
            lru = Some((i, slot.last_used));
        }
    }
    lru.map(|(i, _)| i)
}

fn common_prefix(slot: &[u32], r: &Prepared) -> usize {
    let Some(ids) = &r.ids else { return 0 };
    slot.iter().zip(ids).take_while(|(a, b)| a == b).count()
}

/// The prompt tokens llama.cpp reuses from a slot: the common prefix, less the last prompt
/// token (always evaluated).
fn slot_reuse(slot: &[u32], r: &Prepared) -> usize {
    common_prefix(slot, r).min(r.prompt_tokens.saturating_sub(1))
}
