//! Where Anthropic's `cache_control` breakpoints serve the most tokens from the cache.
//!
//! The model: the renders are requests sent in order. A request's breakpoint at block `p`
//! writes a cache entry for the prefix up to and including `p` when that prefix has at least
//! the model's minimum of tokens; it reads the longest prefix, at a block boundary from `p`
//! back over the lookback window (20 blocks), for which an earlier request wrote an entry.
//! A request reads the longest hit of all its breakpoints and writes what follows it up to
//! its last breakpoint.
//!
//! [`simulate`] plays that model for any placement (per request, so a breakpoint on "the
//! last block" may move). [`optimal`] finds a placement of at most 4 breakpoints at the same
//! blocks of every request that reads the most tokens: for a fixed placement P, request r
//! reads g_r(max{p ∈ P : p ≤ L_r}), where L_r is the last block through which r shares its
//! prefix with an earlier request and g_r(p) is the tokens up to p (0 below the minimum),
//! since an entry at p exists only if p ∈ P and g_r grows with p. So P's total splits into
//! the runs between consecutive breakpoints: a dynamic programme over the candidate blocks
//! in order. Only the L_r are candidates (a breakpoint moved up to the next L_r serves the
//! same requests with more tokens), so it takes O(K·R³) for K breakpoints and R requests,
//! however many blocks they have. [`exhaustive`] tries every placement of every block
//! through [`simulate`]; the tests hold the two equal.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};

/// Anthropic's limits, as the placement needs them.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Below this many tokens a prefix is not cached (and no error says so).
    pub minimum: usize,
    /// Block boundaries a breakpoint checks for an earlier entry, its own included.
    pub lookback: usize,
    pub max_breakpoints: usize,
}

/// One block of a request: its identity (content and place) and its tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    pub identity: u64,
    pub tokens: usize,
}

/// Tokens read from and written to the cache over the requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Score {
    pub read: usize,
    pub written: usize,
}

/// A placement at the same block indices of every request, and the tokens it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub breakpoints: Vec<usize>,
    pub read: usize,
}

/// Each request's prefix hash and token count up to and including each block.
struct Prefixes {
    hashes: Vec<u64>,
    totals: Vec<usize>,
}

fn prefixes(request: &[Cell]) -> Prefixes {
    let mut hashes = Vec::with_capacity(request.len());
    let mut totals = Vec::with_capacity(request.len());
    let (mut hash, mut total) = (0u64, 0usize);
    for cell in request {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (hash, cell.identity).hash(&mut hasher);
        hash = hasher.finish();
        total += cell.tokens;
        hashes.push(hash);
        totals.push(total);
    }
    Prefixes { hashes, totals }
}

/// Plays the requests in order with `breakpoints[r]` (block indices) on request r.
pub fn simulate(requests: &[Vec<Cell>], breakpoints: &[Vec<usize>], limits: Limits) -> Score {
    let mut entries: HashSet<(usize, u64)> = HashSet::new();
    let mut score = Score::default();
    for (request, marks) in requests.iter().zip(breakpoints) {
        let prefix = prefixes(request);
        let mut marks: Vec<usize> = marks
            .iter()
            .copied()
            .filter(|&p| p < request.len())
            .collect();
        marks.sort_unstable();
        marks.dedup();
        let cached = |j: usize| {
            prefix.totals[j] >= limits.minimum && entries.contains(&(j, prefix.hashes[j]))
        };
        let read = marks
            .iter()
            .flat_map(|&p| (p + 1).saturating_sub(limits.lookback)..=p)
            .filter(|&j| cached(j))
            .map(|j| prefix.totals[j])
            .max()
            .unwrap_or(0);
        let last = marks
            .iter()
            .rev()
            .find(|&&p| prefix.totals[p] >= limits.minimum);
        if let Some(&last) = last {
            if !cached(last) {
                score.written += prefix.totals[last] - read;
            }
        }
        score.read += read;
        for &p in &marks {
            if prefix.totals[p] >= limits.minimum {
                entries.insert((p, prefix.hashes[p]));
            }
        }
    }
    score
}

/// `placement` on every request that has those blocks.
pub fn uniform(placement: &[usize], requests: &[Vec<Cell>]) -> Vec<Vec<usize>> {
    requests
        .iter()
        .map(|r| placement.iter().copied().filter(|&p| p < r.len()).collect())
        .collect()
}

/// The placement of at most `limits.max_breakpoints` that reads the most tokens, with as few
/// breakpoints as that takes.
pub fn optimal(requests: &[Vec<Cell>], limits: Limits) -> Placement {
    // Per request: the last block through which it shares its prefix with an earlier one,
    // and the tokens up to each block.
    let mut seen: HashSet<(usize, u64)> = HashSet::new();
    let mut shared: Vec<(usize, Vec<usize>)> = Vec::new();
    for request in requests {
        let prefix = prefixes(request);
        let last = (0..request.len())
            .rev()
            .find(|&j| seen.contains(&(j, prefix.hashes[j])));
        seen.extend(prefix.hashes.iter().copied().enumerate());
        if let Some(last) = last {
            shared.push((last, prefix.totals));
        }
    }
    let gain = |totals: &[usize], p: usize| {
        let t = totals[p];
        if t >= limits.minimum {
            t
        } else {
            0
        }
    };
    // What breakpoint p reads when the next one is at `next`: requests sharing through p but
    // not through `next`.
    let run = |p: usize, next: usize| -> usize {
        shared
            .iter()
            .filter(|(last, _)| p <= *last && *last < next)
            .map(|(_, totals)| gain(totals, p))
            .sum()
    };
    // Only the blocks where some request stops sharing are worth a breakpoint: one between
    // two of them serves the same requests as the next such block, which holds more tokens.
    let mut candidates: Vec<usize> = shared.iter().map(|(last, _)| *last).collect();
    candidates.sort_unstable();
    candidates.dedup();
    // best[k][i]: the most read by requests that share less than through candidate i, with
    // candidate i the k-th breakpoint (k from 0), and the breakpoints before it.
    let k_max = limits.max_breakpoints.min(candidates.len());
    let mut best: Vec<Vec<Option<Partial>>> = vec![vec![None; candidates.len()]; k_max];
    let mut answer = Placement {
        breakpoints: Vec::new(),
        read: 0,
    };
    for k in 0..k_max {
        for (i, &p) in candidates.iter().enumerate() {
            let entry = if k == 0 {
                Some((0, Vec::new()))
            } else {
                (0..i)
                    .filter_map(|j| {
                        let (value, before) = best[k - 1][j].as_ref()?;
                        let q = candidates[j];
                        Some((value + run(q, p), before, q))
                    })
                    // The first of equal values: the earliest breakpoints.
                    .fold(
                        None,
                        |kept: Option<(usize, &Vec<usize>, usize)>, c| match kept {
                            Some(k) if k.0 >= c.0 => Some(k),
                            _ => Some(c),
                        },
                    )
                    .map(|(value, before, q)| {
                        let mut chosen = before.clone();
                        chosen.push(q);
                        (value, chosen)
                    })
            };
            if let Some((value, before)) = &entry {
                let total = value + run(p, usize::MAX);
                // Strictly more: fewer breakpoints win a tie.
                if total > answer.read {
                    let mut chosen = before.clone();
                    chosen.push(p);
                    answer = Placement {
                        breakpoints: chosen,
                        read: total,
                    };
                }
            }
            best[k][i] = entry;
        }
    }
    answer
}

/// A breakpoint's best value so far and the breakpoints before it.
type Partial = (usize, Vec<usize>);

/// Every placement of at most `limits.max_breakpoints` blocks, scored by [`simulate`]: the
/// most read, with as few breakpoints as that takes. Exponential; for checking [`optimal`].
pub fn exhaustive(requests: &[Vec<Cell>], limits: Limits) -> Placement {
    let blocks = requests.iter().map(Vec::len).max().unwrap_or(0);
    let mut answer = Placement {
        breakpoints: Vec::new(),
        read: 0,
    };
    let mut chosen = Vec::new();
    search(requests, limits, blocks, 0, &mut chosen, &mut answer);
    answer
}

fn search(
    requests: &[Vec<Cell>],
    limits: Limits,
    blocks: usize,
    from: usize,
    chosen: &mut Vec<usize>,
    answer: &mut Placement,
) {
    let read = simulate(requests, &uniform(chosen, requests), limits).read;
    if read > answer.read || (read == answer.read && chosen.len() < answer.breakpoints.len()) {
        *answer = Placement {
            breakpoints: chosen.clone(),
            read,
        };
    }
    if chosen.len() == limits.max_breakpoints {
        return;
    }
    for p in from..blocks {
        chosen.push(p);
        search(requests, limits, blocks, p + 1, chosen, answer);
        chosen.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        minimum: 1024,
        lookback: 20,
        max_breakpoints: 4,
    };

    fn cells(blocks: &[(u64, usize)]) -> Vec<Cell> {
        blocks
            .iter()
            .map(|&(identity, tokens)| Cell { identity, tokens })
            .collect()
    }

    /// A small deterministic generator (xorshift), so failures reproduce.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    #[test]
    fn a_stable_prefix_is_read_at_its_last_block() {
        // tools (1,500) and system (800) stable, then a question that varies.
        let requests: Vec<Vec<Cell>> = (0..3)
            .map(|r| cells(&[(1, 1500), (2, 800), (100 + r, 50)]))
            .collect();
        let best = optimal(&requests, LIMITS);
        assert_eq!(best.breakpoints, vec![1]);
        assert_eq!(best.read, 2 * 2300);
        // A breakpoint after the question caches nothing any other request reads.
        let after = simulate(&requests, &uniform(&[2], &requests), LIMITS);
        assert_eq!(after.read, 0);
        assert_eq!(after.written, 3 * 2350);
    }

    #[test]
    fn below_the_minimum_nothing_is_cached() {
        let requests: Vec<Vec<Cell>> = (0..3)
            .map(|r| cells(&[(1, 600), (2, 300), (100 + r, 50)]))
            .collect();
        assert_eq!(optimal(&requests, LIMITS).read, 0);
        assert!(optimal(&requests, LIMITS).breakpoints.is_empty());
        let low = Limits {
            minimum: 900,
            ..LIMITS
        };
        assert_eq!(optimal(&requests, low).breakpoints, vec![1]);
    }

    #[test]
    fn the_lookback_reads_an_entry_a_moving_breakpoint_left_behind() {
        // A conversation: each request adds a turn, the breakpoint sits on its last block.
        let turns: Vec<(u64, usize)> = (0..30).map(|i| (i, 200)).collect();
        let requests: Vec<Vec<Cell>> = (8..12).map(|n| cells(&turns[..n])).collect();
        let last: Vec<Vec<usize>> = requests.iter().map(|r| vec![r.len() - 1]).collect();
        let score = simulate(&requests, &last, LIMITS);
        // Each later request reads the previous one's whole prompt.
        assert_eq!(score.read, 1600 + 1800 + 2000);
        // A jump of more than the lookback finds nothing.
        let far: Vec<Vec<Cell>> = vec![cells(&turns[..6]), cells(&turns[..28])];
        let last: Vec<Vec<usize>> = far.iter().map(|r| vec![r.len() - 1]).collect();
        assert_eq!(simulate(&far, &last, LIMITS).read, 0);
    }

    #[test]
    fn several_breakpoints_serve_requests_that_share_different_lengths() {
        // Tools stable; a system block shared by requests 0-2 and 3-4 in two versions
        // (a daily date); the question varies.
        let requests: Vec<Vec<Cell>> = (0..6u64)
            .map(|r| cells(&[(1, 1200), (10 + r / 3, 900), (100 + r, 40)]))
            .collect();
        let best = optimal(&requests, LIMITS);
        assert_eq!(best, exhaustive(&requests, LIMITS));
        // Request 3 brings the new version: only a breakpoint after the tools serves it.
        assert_eq!(best.breakpoints, vec![0, 1]);
        let one = simulate(&requests, &uniform(&[1], &requests), LIMITS);
        assert_eq!(one.read, 4 * 2100);
        assert_eq!(best.read, 4 * 2100 + 1200);
    }

    #[test]
    fn long_requests_cost_candidates_not_blocks() {
        // 3,000 blocks, of which the first 2,000 are shared: one candidate, one breakpoint.
        let requests: Vec<Vec<Cell>> = (0..5u64)
            .map(|r| {
                let blocks: Vec<(u64, usize)> = (0..3000u64)
                    .map(|j| (if j < 2000 { j } else { 10_000 * (r + 1) + j }, 3))
                    .collect();
                cells(&blocks)
            })
            .collect();
        let best = optimal(&requests, LIMITS);
        assert_eq!(best.breakpoints, vec![1999]);
        assert_eq!(best.read, 4 * 6000);
    }

    /// The dynamic programme against every placement, on generated requests: shared
    /// stretches of random length, versions that repeat, requests of different lengths,
    /// blocks below and above the minimum.
    #[test]
    fn optimal_equals_exhaustive_search_on_generated_requests() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        // How many cases need several breakpoints and read something: the generator must
        // exercise the programme, not only empty answers.
        let mut several = 0;
        for case in 0..400 {
            let blocks = 1 + rng.below(9) as usize;
            let count = 1 + rng.below(6) as usize;
            let versions = 1 + rng.below(3);
            let mut requests = Vec::new();
            for _ in 0..count {
                let len = 1 + rng.below(blocks as u64) as usize;
                // From a random block on, content depends on one of a few versions, and
                // from a later one on, on the request itself.
                let version = rng.below(versions);
                let versioned_from = rng.below(blocks as u64 + 1) as usize;
                let own_from = versioned_from + rng.below(blocks as u64 + 1) as usize;
                let request: Vec<Cell> = (0..len)
                    .map(|j| {
                        let identity = if j >= own_from {
                            1_000_000 + rng.next() % 1_000_000
                        } else if j >= versioned_from {
                            1000 * (version + 1) + j as u64
                        } else {
                            j as u64
                        };
                        Cell {
                            identity,
                            tokens: (j * 37 % 11) * 60 + 40,
                        }
                    })
                    .collect();
                requests.push(request);
            }
            for max_breakpoints in [1, 2, 4] {
                let limits = Limits {
                    minimum: [0, 200, 500, 1024][case % 4],
                    lookback: 20,
                    max_breakpoints,
                };
                let fast = optimal(&requests, limits);
                let slow = exhaustive(&requests, limits);
                assert_eq!(fast.read, slow.read, "case {case}: {requests:?} {limits:?}");
                assert_eq!(
                    fast.breakpoints.len(),
                    slow.breakpoints.len(),
                    "case {case}: fewest breakpoints"
                );
                several += usize::from(fast.breakpoints.len() > 1 && fast.read > 0);
                // The placement reads what it claims when it is played.
                assert_eq!(
                    simulate(&requests, &uniform(&fast.breakpoints, &requests), limits).read,
                    fast.read,
                    "case {case}"
                );
            }
        }
        assert!(
            several > 50,
            "only {several} cases need more than one breakpoint"
        );
    }
}
