//! vLLM's prefix cache, block for block: `vllm/v1/core/block_pool.py` (`BlockPool`),
//! `kv_cache_utils.py` (`FreeKVCacheBlockQueue`) and `kv_cache_manager.py` /
//! `single_type_kv_cache_manager.py` (`FullAttentionManager`), as docs/simulate.md states them.
//!
//! - `num_gpu_blocks` blocks; block 0 is the null block (taken out at start, never used).
//! - Full blocks are keyed by a hash chained on the parent block's hash. Several blocks may
//!   hold one hash (no de-duplication); a lookup takes the first inserted.
//! - A lookup takes the longest run of cached blocks from the start, at most
//!   `(prompt − 1) / block` blocks (the last prompt token is always computed).
//! - The free queue is a doubly linked list: new blocks are taken from its head (evicting
//!   their hash), a hit block with no holder is taken out of it (`touch`), and a finished
//!   request's blocks go back in reverse order: hashed ones appended at the tail (its last
//!   block first, so a prefix loses its tail before its head), unhashed ones prepended at the
//!   head (reused first).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The block hashes are already uniform: the map uses them as they are.
#[derive(Default)]
pub struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

pub type HashMapU64<V> = HashMap<u64, V, BuildHasherDefault<PassThrough>>;

const NONE: u32 = u32::MAX;

/// The hash of a full block of `tokens` after the block hashed `parent` (0 for the first).
pub fn block_hash(parent: u64, tokens: &[u32]) -> u64 {
    // A multiply-xorshift mix per token (wyhash's constants): 64 bits, so two different
    // prefixes collide with a chance of about n² / 2^65 over n blocks.
    let mut h =
        parent ^ 0x9E37_79B9_7F4A_7C15 ^ (tokens.len() as u64).wrapping_mul(0xA076_1D64_78BD_642F);
    for &t in tokens {
        h = (h ^ u64::from(t)).wrapping_mul(0xE703_7ED1_A0B4_28DB);
        h ^= h >> 29;
    }
    let h = h.wrapping_mul(0x8EBC_6AF0_9C88_C6E3);
    // 0 is "no parent"; never a block's hash. The top bit is clear: set, it marks a block
    // of generated tokens ([`generated_hash`]).
    ((h ^ (h >> 32)) & !GENERATED).max(1)
}

/// The top bit of a hash marks a full block of generated tokens.
pub const GENERATED: u64 = 1 << 63;

/// A hash for a full block of generated tokens: hashed like any full block (so it goes back
/// to the free queue's tail, not its head), but unique: simulate does not know the ids, and
/// no later prompt is counted as matching them.
pub fn generated_hash(serial: u64) -> u64 {
    block_hash(serial, &[]) | GENERATED
}

/// The chained hashes of a prompt's full blocks.
pub fn prompt_hashes(ids: &[u32], block: usize) -> Vec<u64> {
    let mut parent = 0;
    ids.chunks_exact(block)
        .map(|chunk| {
            parent = block_hash(parent, chunk);
            parent
        })
        .collect()
}

#[derive(Clone, Copy)]
struct Block {
    hash: Option<u64>,
    holders: u32,
    prev: u32,
    next: u32,
    /// Whether it is in the free queue.
    free: bool,
    /// Which part of the free queue it is in: `back` (else `front`).
    in_back: bool,
    /// When it last went back to the free queue (seconds), for `--ttl`.
    freed_at: f64,
}

/// Blocks that hold one hash: nearly always one.
enum Holders {
    One(u32),
    Many(Vec<u32>),
}

/// What a lookup found: the hit blocks and the tokens they cover.
pub struct Hit {
    pub blocks: Vec<u32>,
}

/// A request's blocks while it runs.
pub struct Held {
    pub blocks: Vec<u32>,
}

/// Why a block's hash left the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gone {
    Evicted,
    Expired,
}

/// The free queue in three parts, in queue order: `front` (blocks put back at the head),
/// the never-used blocks `fresh..num_blocks` (in id order, as vLLM's queue starts), then
/// `back` (blocks put back at the tail). Blocks are only ever added at the head or the
/// tail, so the never-used run stays whole; a block is made when first taken from it, so
/// memory follows the blocks used, not the blocks allowed (`--kv-blocks 1000000000`).
#[derive(Clone, Copy)]
struct List {
    head: u32,
    tail: u32,
}

const EMPTY: List = List {
    head: NONE,
    tail: NONE,
};

pub struct BlockPool {
    /// The blocks made so far: ids `0..fresh`.
    blocks: Vec<Block>,
    num_blocks: usize,
    /// The first never-used block.
    fresh: usize,
    front: List,
    back: List,
    free_count: usize,
    cached: HashMapU64<Holders>,
    /// Hashes that left, and why, in the order they left (handed to the caller).
    pub departed: Vec<(u64, Gone)>,
    /// Hashed blocks put back in the free queue, in time order, for `--ttl` (kept only
    /// with a TTL: without one nothing would take them out).
    freed_order: Option<std::collections::VecDeque<(u32, f64)>>,
}

impl BlockPool {
    /// The most blocks a pool holds: block ids are 32-bit, one value meaning "none".
    pub const MAX_BLOCKS: usize = NONE as usize - 1;

    /// `num_gpu_blocks` as vLLM reports it: the null block included. `ttl`: whether
    /// [`BlockPool::expire`] will be called.
    pub fn new(num_gpu_blocks: usize, ttl: bool) -> BlockPool {
        assert!((2..=Self::MAX_BLOCKS).contains(&num_gpu_blocks));
        // The null block (id 0) is taken out for good: made, never free.
        let null = Block {
            hash: None,
            holders: 0,
            prev: NONE,
            next: NONE,
            free: false,
            in_back: false,
            freed_at: 0.0,
        };
        BlockPool {
            blocks: vec![null],
            num_blocks: num_gpu_blocks,
            fresh: 1,
            front: EMPTY,
            back: EMPTY,
            free_count: num_gpu_blocks - 1,
            cached: HashMapU64::default(),
            departed: Vec::new(),
            freed_order: ttl.then(std::collections::VecDeque::new),
        }
    }

    /// Blocks a request can use: `num_gpu_blocks − 1`.
    pub fn usable(&self) -> usize {
        self.num_blocks - 1
    }

    pub fn free_blocks(&self) -> usize {
        self.free_count
    }

    /// Whether a block with this hash is cached.
    pub fn contains(&self, hash: u64) -> bool {
        self.cached.contains_key(&hash)
    }

    fn first_holder(&self, hash: u64) -> Option<u32> {
        match self.cached.get(&hash)? {
            Holders::One(b) => Some(*b),
            Holders::Many(list) => list.first().copied(),
        }
    }

    /// `find_longest_cache_hit`: the leading cached blocks, at most `max_blocks`.
    pub fn lookup(&self, hashes: &[u64], max_blocks: usize) -> Hit {
        let blocks = hashes
            .iter()
            .take(max_blocks)
            .map_while(|h| self.first_holder(*h))
            .collect();
        Hit { blocks }
    }

    /// The blocks a request needs beyond its hit, counting hit blocks that sit in the free
    /// queue (taking them out of it uses them up): `get_num_blocks_to_allocate`.
    pub fn blocks_needed(&self, hit: &Hit, total_blocks: usize) -> usize {
        let evictable = hit
            .blocks
            .iter()
            .filter(|&&b| self.blocks[b as usize].holders == 0)
            .count();
        total_blocks.saturating_sub(hit.blocks.len()) + evictable
    }

    /// Takes the hit and `total_blocks − hit` new blocks for a request. The new blocks are
    /// taken from the head of the free queue; their old hashes leave the cache
    /// (`departed`). Returns `None` (nothing changed) when they are not free.
    pub fn allocate(&mut self, hit: Hit, total_blocks: usize) -> Option<Held> {
        if self.blocks_needed(&hit, total_blocks) > self.free_count {
            return None;
        }
        // touch
        for &b in &hit.blocks {
            if self.blocks[b as usize].holders == 0 {
                self.unlink(b);
            }
            self.blocks[b as usize].holders += 1;
        }
        let mut held = hit.blocks;
        while held.len() < total_blocks {
            let b = self.take_head();
            if let Some(h) = self.blocks[b as usize].hash.take() {
                self.remove_hash(h, b);
                self.departed.push((h, Gone::Evicted));
            }
            self.blocks[b as usize].holders = 1;
            held.push(b);
        }
        Some(Held { blocks: held })
    }

    /// `cache_full_blocks`: gives the request's blocks `from..hashes.len()` their hashes.
    pub fn cache(&mut self, held: &Held, from: usize, hashes: &[u64]) {
        for (i, &h) in hashes.iter().enumerate().skip(from) {
            self.cache_at(held, i, h);
        }
    }

    /// Gives the request's block `index` the hash `h` (a block hashed already keeps its own).
    pub fn cache_at(&mut self, held: &Held, index: usize, h: u64) {
        let b = held.blocks[index];
        let block = &mut self.blocks[b as usize];
        if block.hash.is_some() {
            return;
        }
        block.hash = Some(h);
        match self.cached.get_mut(&h) {
            None => {
                self.cached.insert(h, Holders::One(b));
            }
            Some(Holders::One(first)) => {
                let first = *first;
                self.cached.insert(h, Holders::Many(vec![first, b]));
            }
            Some(Holders::Many(list)) => list.push(b),
        }
    }

    /// `free_blocks(reversed(blocks))` at `now`.
    pub fn release(&mut self, held: Held, now: f64) {
        let mut first = Vec::new();
        let mut last = Vec::new();
        for &b in held.blocks.iter().rev() {
            let block = &mut self.blocks[b as usize];
            block.holders -= 1;
            if block.holders == 0 {
                if block.hash.is_none() {
                    first.push(b);
                } else {
                    last.push(b);
                }
            }
        }
        // prepend_n keeps the list's order at the head.
        for &b in first.iter().rev() {
            self.push_front(b);
        }
        for &b in &last {
            self.push_back(b);
            self.blocks[b as usize].freed_at = now;
            if let Some(order) = &mut self.freed_order {
                order.push_back((b, now));
            }
        }
    }

    /// `--ttl`: the hashes of free blocks not used since `cutoff` leave the cache; the
    /// blocks stay free, unhashed.
    pub fn expire(&mut self, cutoff: f64) {
        let Some(mut order) = self.freed_order.take() else {
            return;
        };
        while let Some(&(b, at)) = order.front() {
            if at >= cutoff {
                break;
            }
            order.pop_front();
            let block = self.blocks[b as usize];
            // Still free and not freed again since (a later entry stands for it).
            if block.free && block.freed_at == at {
                if let Some(h) = block.hash {
                    self.blocks[b as usize].hash = None;
                    self.remove_hash(h, b);
                    self.departed.push((h, Gone::Expired));
                }
            }
        }
        self.freed_order = Some(order);
    }

    fn remove_hash(&mut self, h: u64, b: u32) {
        let emptied = match self.cached.get_mut(&h) {
            Some(Holders::One(x)) => *x == b,
            Some(Holders::Many(list)) => {
                list.retain(|&x| x != b);
                if list.len() == 1 {
                    let only = list[0];
                    self.cached.insert(h, Holders::One(only));
                }
                false
            }
            None => false,
        };
        if emptied {
            self.cached.remove(&h);
        }
    }

    /// Takes the block at the head of the free queue (there is one: the caller counted).
    fn take_head(&mut self) -> u32 {
        if self.front.head != NONE {
            let b = self.front.head;
            self.unlink(b);
            return b;
        }
        if self.fresh < self.num_blocks {
            let b = self.fresh as u32;
            self.fresh += 1;
            self.blocks.push(Block {
                hash: None,
                holders: 0,
                prev: NONE,
                next: NONE,
                free: false,
                in_back: false,
                freed_at: 0.0,
            });
            self.free_count -= 1;
            return b;
        }
        let b = self.back.head;
        self.unlink(b);
        b
    }

    fn unlink(&mut self, b: u32) {
        let Block {
            prev,
            next,
            in_back,
            ..
        } = self.blocks[b as usize];
        let list = if in_back {
            &mut self.back
        } else {
            &mut self.front
        };
        if prev == NONE {
            list.head = next;
        } else {
            self.blocks[prev as usize].next = next;
        }
        if next == NONE {
            list.tail = prev;
        } else {
            self.blocks[next as usize].prev = prev;
        }
        let block = &mut self.blocks[b as usize];
        block.prev = NONE;
        block.next = NONE;
        block.free = false;
        self.free_count -= 1;
    }

    fn push_front(&mut self, b: u32) {
        let head = self.front.head;
        let block = &mut self.blocks[b as usize];
        block.prev = NONE;
        block.next = head;
        block.free = true;
        block.in_back = false;
        if head == NONE {
            self.front.tail = b;
        } else {
            self.blocks[head as usize].prev = b;
        }
        self.front.head = b;
        self.free_count += 1;
    }

    fn push_back(&mut self, b: u32) {
        let tail = self.back.tail;
        let block = &mut self.blocks[b as usize];
        block.prev = tail;
        block.next = NONE;
        block.free = true;
        block.in_back = true;
        if tail == NONE {
            self.back.head = b;
        } else {
            self.blocks[tail as usize].next = b;
        }
        self.back.tail = b;
        self.free_count += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One request start to finish; returns its cached blocks.
    fn run(pool: &mut BlockPool, hashes: &[u64], total: usize) -> usize {
        let hit = pool.lookup(hashes, hashes.len());
        let n = hit.blocks.len();
        let held = pool.allocate(hit, total).expect("fits");
        pool.cache(&held, n, hashes);
        pool.release(held, 0.0);
        n
    }

    #[test]
    fn the_null_block_is_counted_and_never_used() {
        let pool = BlockPool::new(5, false);
        assert_eq!(pool.usable(), 4);
        assert_eq!(pool.free_blocks(), 4);
    }

    #[test]
    fn a_prefix_loses_its_tail_before_its_head() {
        // 6 usable blocks. A: 4 hashed blocks. B: 3 new blocks evict A's last 3? No: the
        // free queue after A is [2 never-used blocks, A4, A3, A2, A1]: B takes the two
        // unused, then A4.
        let mut pool = BlockPool::new(7, false);
        let a = [11, 12, 13, 14];
        assert_eq!(run(&mut pool, &a, 4), 0);
        assert_eq!(run(&mut pool, &[21, 22, 23], 3), 0);
        assert!(!pool.contains(14));
        assert!(pool.contains(13) && pool.contains(11));
        // A again: hits its first three blocks.
        assert_eq!(run(&mut pool, &a, 4), 3);
    }

    #[test]
    fn unhashed_blocks_are_reused_first() {
        let mut pool = BlockPool::new(5, false);
        // 2 hashed blocks and a partial one.
        let hit = pool.lookup(&[1, 2], 2);
        let held = pool.allocate(hit, 3).unwrap();
        pool.cache(&held, 0, &[1, 2]);
        let partial = held.blocks[2];
        pool.release(held, 0.0);
        let held = pool.allocate(Hit { blocks: vec![] }, 1).unwrap();
        assert_eq!(held.blocks, vec![partial]);
        assert!(pool.contains(1) && pool.contains(2));
    }

    #[test]
    fn a_request_that_does_not_fit_changes_nothing() {
        let mut pool = BlockPool::new(4, false);
        assert!(pool.allocate(Hit { blocks: vec![] }, 4).is_none());
        assert_eq!(pool.free_blocks(), 3);
    }

    #[test]
    fn ttl_drops_free_hashes_older_than_the_cutoff() {
        let mut pool = BlockPool::new(5, true);
        let hit = pool.lookup(&[1], 1);
        let held = pool.allocate(hit, 1).unwrap();
        pool.cache(&held, 0, &[1]);
        pool.release(held, 10.0);
        pool.expire(5.0);
        assert!(pool.contains(1));
        pool.expire(10.5);
        assert!(!pool.contains(1));
        assert_eq!(pool.departed, vec![(1, Gone::Expired)]);
    }

    #[test]
    fn memory_follows_the_blocks_used_not_the_blocks_allowed() {
        let mut pool = BlockPool::new(BlockPool::MAX_BLOCKS, true);
        assert_eq!(pool.usable(), BlockPool::MAX_BLOCKS - 1);
        for round in 0..3u64 {
            let hashes: Vec<u64> = (1..=8).map(|i| round * 100 + i).collect();
            assert_eq!(run(&mut pool, &hashes, 10), 0);
            assert_eq!(run(&mut pool, &hashes, 10), 8);
        }
        // At most 10 blocks made per round: what the requests used.
        assert!(pool.blocks.len() <= 1 + 3 * 10, "{}", pool.blocks.len());
        assert_eq!(pool.free_blocks(), BlockPool::MAX_BLOCKS - 1);
    }

    #[test]
    fn the_queue_runs_front_then_never_used_then_back() {
        // 3 usable blocks: A takes 1 and 2 (2 stays unhashed), releases them: 2 goes to
        // the head, 1 (hashed) to the tail, behind never-used 3.
        let mut pool = BlockPool::new(4, false);
        let hit = pool.lookup(&[7], 1);
        let held = pool.allocate(hit, 2).unwrap();
        assert_eq!(held.blocks, vec![1, 2]);
        pool.cache(&held, 0, &[7]);
        pool.release(held, 0.0);
        let held = pool.allocate(Hit { blocks: vec![] }, 2).unwrap();
        assert_eq!(held.blocks, vec![2, 3]);
        assert!(pool.contains(7));
        let more = pool.allocate(Hit { blocks: vec![] }, 1).unwrap();
        assert_eq!(more.blocks, vec![1]);
        assert!(!pool.contains(7));
    }

    #[test]
    fn hashes_chain_on_the_parent() {
        let a = prompt_hashes(&[1, 2, 3, 4, 5], 2);
        let b = prompt_hashes(&[9, 9, 3, 4], 2);
        assert_eq!(a.len(), 2);
        assert_ne!(a[1], b[1]);
        assert_eq!(a[0], block_hash(0, &[1, 2]));
    }
}
