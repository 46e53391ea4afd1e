//! The tests' one seeded random generator: xorshift64* (Vigna), small and the same sequence
//! everywhere, so a failing case reproduces from its seed. Its output is the state times an
//! odd constant, so the low bits that `below` keeps are as good as the high ones (plain
//! xorshift's are not).

/// A deterministic generator; the same seed gives the same sequence.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`. Zero is xorshift's one fixed point, so it stands for another
    /// (fixed) seed.
    pub fn new(seed: u64) -> Rng {
        Rng(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    pub fn pick<'a, T: ?Sized>(&mut self, items: &[&'a T]) -> &'a T {
        items[self.below(items.len())]
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// Deterministic text for request sequences sent to real servers: words drawn from `list`
/// (common words, about one token each), the same for the same seed.
pub struct Words {
    rng: Rng,
    list: &'static [&'static str],
}

impl Words {
    pub fn new(seed: u64, list: &'static [&'static str]) -> Words {
        Words {
            rng: Rng::new(seed),
            list,
        }
    }

    pub fn text(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| self.rng.pick(self.list))
            .collect::<Vec<_>>()
            .join(" ")
    }
}
