//! SGLang's radix cache (`RadixCache`, sglang 0.5.23) over a pool of N tokens, page size 1:
//! the same calls in the same order as its scheduler makes them for one request (match the
//! first `n - 1` prompt tokens, lock the matched path, evict only when the pool is short by
//! `need - available`, and on finish insert prompt + reply, then the prompt alone again so the
//! leaf splits at the prompt's end). Eviction is leaf-first LRU of whole nodes by
//! `last_access_time`, here a counter (ties cannot occur one request at a time).
//!
//! Reply tokens get ids no prompt can match (simulate knows a reply's length, not its ids).
//!
//! Each node also keeps the chained `--block-size` hashes of the prompt blocks that end in
//! it (from the request that inserted it), so an evicted leaf says which blocks left the
//! cache without hashing its path again.

use std::collections::{BinaryHeap, HashMap};

/// Reply ids start here: above any vocabulary.
const REPLY_BASE: u32 = 1 << 31;
const ROOT: usize = 0;

struct Node {
    key: Vec<u32>,
    children: HashMap<u32, usize>,
    parent: usize,
    lock_ref: u32,
    last_access: u64,
    live: bool,
    /// Tokens on the path before this node's key.
    depth: usize,
    /// The hashes of the prompt blocks ending in this node's key, in order (blocks of reply
    /// tokens have none: no prompt asks for them).
    hashes: Vec<u64>,
}

/// What an eviction took out of the tree, in order: a leaf's tokens, then its blocks' hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Departed {
    Tokens(usize),
    Block(u64),
}

pub struct RadixTree {
    nodes: Vec<Node>,
    free_nodes: Vec<usize>,
    pool: usize,
    /// Tokens the tree holds.
    in_tree: usize,
    /// Tokens running requests hold outside the tree.
    held: usize,
    clock: u64,
    replies: u32,
    block: usize,
    /// Evictions not yet read by the replica (drained after each admission).
    pub departed: Vec<Departed>,
}

/// What a running request holds: its locked node, its allocation and its token ids.
pub struct RadixHeld {
    node: usize,
    allocated: usize,
    prompt: Vec<u32>,
    hashes: Vec<u64>,
    generated: usize,
}

impl RadixTree {
    pub fn new(pool: usize, block: usize) -> RadixTree {
        RadixTree {
            nodes: vec![Node {
                key: Vec::new(),
                children: HashMap::new(),
                parent: ROOT,
                lock_ref: 1,
                last_access: 0,
                live: true,
                depth: 0,
                hashes: Vec::new(),
            }],
            free_nodes: Vec::new(),
            pool,
            in_tree: 0,
            held: 0,
            clock: 0,
            replies: 0,
            block: block.max(1),
            departed: Vec::new(),
        }
    }

    pub fn pool(&self) -> usize {
        self.pool
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn new_node(
        &mut self,
        key: Vec<u32>,
        parent: usize,
        lock_ref: u32,
        depth: usize,
        hashes: Vec<u64>,
    ) -> usize {
        let node = Node {
            key,
            children: HashMap::new(),
            parent,
            lock_ref,
            last_access: self.tick(),
            live: true,
            depth,
            hashes,
        };
        match self.free_nodes.pop() {
            Some(i) => {
                self.nodes[i] = node;
                i
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        }
    }

    /// `_split_node`: a new parent holds the first `at` tokens of `child`.
    fn split(&mut self, child: usize, at: usize) -> usize {
        let parent = self.nodes[child].parent;
        let head: Vec<u32> = self.nodes[child].key[..at].to_vec();
        let lock = self.nodes[child].lock_ref;
        let depth = self.nodes[child].depth;
        // The blocks ending in the head go with it.
        let ending = (depth + at) / self.block - depth / self.block;
        let tail_hashes = {
            let hashes = &mut self.nodes[child].hashes;
            hashes.split_off(ending.min(hashes.len()))
        };
        let head_hashes = std::mem::replace(&mut self.nodes[child].hashes, tail_hashes);
        let new = self.new_node(head, parent, lock, depth, head_hashes);
        self.nodes[child].depth = depth + at;
        let rest = self.nodes[child].key.split_off(at);
        self.nodes[child].key = rest;
        let first = self.nodes[child].key[0];
        self.nodes[new].children.insert(first, child);
        self.nodes[child].parent = new;
        let key0 = self.nodes[new].key[0];
        self.nodes[parent].children.insert(key0, new);
        new
    }

    /// The tokens of `key` the tree holds, without touching it.
    pub fn peek(&self, key: &[u32]) -> usize {
        let mut node = ROOT;
        let mut matched = 0;
        let mut key = key;
        while let Some(&child) = key.first().and_then(|k| self.nodes[node].children.get(k)) {
            let common = common_prefix(&self.nodes[child].key, key);
            matched += common;
            if common < self.nodes[child].key.len() {
                break;
            }
            key = &key[common..];
            node = child;
        }
        matched
    }

    /// `_match_prefix_helper`: stamps the path, splits a node the match ends inside.
    fn match_prefix(&mut self, mut key: &[u32]) -> (usize, usize) {
        let now = self.tick();
        let mut node = ROOT;
        self.nodes[node].last_access = now;
        let mut matched = 0;
        while let Some(&child) = key.first().and_then(|k| self.nodes[node].children.get(k)) {
            self.nodes[child].last_access = now;
            let common = common_prefix(&self.nodes[child].key, key);
            matched += common;
            if common < self.nodes[child].key.len() {
                node = self.split(child, common);
                break;
            }
            node = child;
            key = &key[common..];
        }
        (matched, node)
    }

    /// `_insert_helper`: returns the tokens already in the tree. `hashes` are the chained
    /// hashes of the key's full prompt blocks.
    fn insert(&mut self, mut key: &[u32], hashes: &[u64]) -> usize {
        let now = self.tick();
        let mut node = ROOT;
        self.nodes[node].last_access = now;
        let mut prefix = 0;
        while let Some(&child) = key.first().and_then(|k| self.nodes[node].children.get(k)) {
            node = child;
            self.nodes[node].last_access = now;
            let common = common_prefix(&self.nodes[node].key, key);
            prefix += common;
            key = &key[common..];
            if common < self.nodes[node].key.len() {
                node = self.split(node, common);
            }
        }
        if !key.is_empty() {
            let first = (prefix / self.block).min(hashes.len());
            let end = ((prefix + key.len()) / self.block).min(hashes.len());
            let new = self.new_node(key.to_vec(), node, 0, prefix, hashes[first..end].to_vec());
            self.nodes[node].children.insert(key[0], new);
            self.in_tree += key.len();
        }
        prefix
    }

    fn lock(&mut self, mut node: usize, up: bool) {
        while node != ROOT {
            let n = &mut self.nodes[node];
            if up {
                n.lock_ref += 1;
            } else {
                n.lock_ref -= 1;
            }
            node = n.parent;
        }
    }

    /// `evict`: the unlocked leaves, least recently accessed first, whole; a parent left a
    /// leaf joins. Stops once `tokens` are freed.
    fn evict(&mut self, tokens: usize) -> usize {
        let mut heap: BinaryHeap<std::cmp::Reverse<(u64, usize)>> = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(i, n)| *i != ROOT && n.live && n.children.is_empty() && n.lock_ref == 0)
            .map(|(i, n)| std::cmp::Reverse((n.last_access, i)))
            .collect();
        let mut evicted = 0;
        while evicted < tokens {
            let Some(std::cmp::Reverse((_, x))) = heap.pop() else {
                break;
            };
            let len = self.nodes[x].key.len();
            self.departed.push(Departed::Tokens(len));
            let hashes = std::mem::take(&mut self.nodes[x].hashes);
            self.departed
                .extend(hashes.into_iter().map(Departed::Block));
            evicted += len;
            self.in_tree -= len;
            let parent = self.nodes[x].parent;
            let first = self.nodes[x].key[0];
            self.nodes[parent].children.remove(&first);
            self.nodes[x].live = false;
            self.nodes[x].key = Vec::new();
            self.free_nodes.push(x);
            let p = &self.nodes[parent];
            if parent != ROOT && p.children.is_empty() && p.lock_ref == 0 {
                heap.push(std::cmp::Reverse((p.last_access, parent)));
            }
        }
        evicted
    }

    fn available(&self) -> usize {
        self.pool.saturating_sub(self.in_tree + self.held)
    }

    /// The scheduler's admission: match the first `n - 1` tokens, lock, evict if short,
    /// allocate the prompt's uncached tokens and every generated token but the last.
    /// `None` when the pool cannot hold it now (nothing stays locked; what was evicted stays
    /// evicted). `hashes` are the prompt's chained block hashes.
    pub fn admit(
        &mut self,
        prompt: &[u32],
        hashes: &[u64],
        generated: usize,
    ) -> Option<(usize, RadixHeld)> {
        let lookup = prompt.len().saturating_sub(1);
        let (cached, node) = self.match_prefix(&prompt[..lookup]);
        self.lock(node, true);
        let need = prompt.len() + generated.saturating_sub(1) - cached;
        if self.available() < need {
            self.evict(need - self.available());
        }
        if self.available() < need {
            self.lock(node, false);
            return None;
        }
        self.held += need;
        Some((
            cached,
            RadixHeld {
                node,
                allocated: need,
                prompt: prompt.to_vec(),
                hashes: hashes.to_vec(),
                generated,
            },
        ))
    }

    /// On finish: prompt + reply (all but the last sampled token) into the tree, then the
    /// prompt alone (`split_prompt`); duplicates go back to the pool; the path unlocks.
    pub fn release(&mut self, held: RadixHeld) {
        let mut full = held.prompt;
        let prompt_len = full.len();
        for _ in 0..held.generated.saturating_sub(1) {
            full.push(REPLY_BASE | (self.replies & !REPLY_BASE));
            self.replies = self.replies.wrapping_add(1);
        }
        self.held -= held.allocated;
        self.insert(&full, &held.hashes);
        self.insert(&full[..prompt_len], &held.hashes);
        self.lock(held.node, false);
    }
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_turn_hits_the_prompt_but_not_the_reply() {
        let mut tree = RadixTree::new(100, 2);
        let (cached, held) = tree.admit(&[1, 2, 3, 4], &[], 3).unwrap();
        assert_eq!(cached, 0);
        tree.release(held);
        assert_eq!(tree.in_tree, 6);
        let (cached, held) = tree.admit(&[1, 2, 3, 4, 9, 9], &[], 1).unwrap();
        assert_eq!(cached, 4);
        tree.release(held);
    }

    #[test]
    fn eviction_takes_the_least_recent_leaf_whole() {
        let mut tree = RadixTree::new(10, 2);
        let (_, h) = tree.admit(&[1, 2, 3, 4], &[], 1).unwrap();
        tree.release(h);
        let (_, h) = tree.admit(&[5, 6, 7, 8], &[], 1).unwrap();
        tree.release(h);
        // 8 in the tree, 2 free; 4 more needed: the older leaf [1..4] goes.
        let (cached, h) = tree.admit(&[9, 10, 11, 12], &[], 1).unwrap();
        assert_eq!(cached, 0);
        tree.release(h);
        assert_eq!(tree.peek(&[1, 2, 3]), 0);
        assert_eq!(tree.peek(&[5, 6, 7]), 3);
    }
}
