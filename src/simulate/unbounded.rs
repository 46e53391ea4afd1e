//! The infinite-cache bound: the hit rate with unbounded memory, in the same replay order.
//! Every full prompt block a request sends stays cached for good; a request hits the
//! longest run of its leading blocks sent before, at most `(prompt − 1) / block` blocks (the
//! last prompt token is always computed), as vLLM looks up. Generated blocks are never
//! matched (simulate does not know their ids), as in the bounded replay. Memory: one hash a
//! distinct block of the whole replay (ids, not tokens).

use super::block_pool::PassThrough;
use super::prepare::Prepared;
use super::replica::cacheable_blocks;
use std::collections::HashSet;
use std::hash::BuildHasherDefault;

pub struct Unbounded {
    seen: HashSet<u64, BuildHasherDefault<PassThrough>>,
    block: usize,
    cached_tokens: usize,
    prompt_tokens: usize,
}

impl Unbounded {
    pub fn new(block: usize) -> Unbounded {
        Unbounded {
            seen: HashSet::default(),
            block,
            cached_tokens: 0,
            prompt_tokens: 0,
        }
    }

    /// One request arrives: its hit, then its blocks are cached.
    pub fn request(&mut self, r: &Prepared) {
        let cap = cacheable_blocks(r.prompt_tokens, self.block).min(r.hashes.len());
        let hit = r.hashes[..cap]
            .iter()
            .take_while(|h| self.seen.contains(h))
            .count();
        self.cached_tokens += hit * self.block;
        self.prompt_tokens += r.prompt_tokens;
        self.seen.extend(r.hashes[hit..].iter().copied());
    }

    pub fn hit_rate(&self) -> f64 {
        if self.prompt_tokens == 0 {
            0.0
        } else {
            self.cached_tokens as f64 / self.prompt_tokens as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn request(prompt_tokens: usize, hashes: &[u64]) -> Prepared {
        Prepared {
            file: Arc::from("t"),
            line: 1,
            session: None,
            prompt_tokens,
            hashes: hashes.to_vec(),
            ids: None,
            generated: 0,
            time: None,
            duration: None,
            logged_cached_tokens: None,
        }
    }

    #[test]
    fn a_repeat_hits_all_but_its_last_token_s_block() {
        let mut u = Unbounded::new(4);
        u.request(&request(12, &[1, 2, 3]));
        // 12 tokens again: at most (12 - 1) / 4 = 2 blocks.
        u.request(&request(12, &[1, 2, 3]));
        // A fork after the first block.
        u.request(&request(13, &[1, 9, 3]));
        assert_eq!(u.cached_tokens, 8 + 4);
        assert_eq!(u.prompt_tokens, 37);
        assert!((u.hit_rate() - 12.0 / 37.0).abs() < 1e-12);
    }
}
