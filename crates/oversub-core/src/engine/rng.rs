//! Seeded deterministic randomness. One ChaCha8 stream per consumer, derived from
//! the scenario seed and a stable stream number (for example a task id), so that
//! adding a task does not perturb the random draws of the others.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A deterministic random stream.
pub struct SimRng(ChaCha8Rng);

impl SimRng {
    /// The stream `stream` of the run seeded with `seed`.
    pub fn new(seed: u64, stream: u64) -> SimRng {
        let mut r = ChaCha8Rng::seed_from_u64(seed);
        r.set_stream(stream);
        SimRng(r)
    }

    /// Uniform in [0, n) (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        self.0.gen_range(0..n)
    }

    /// Uniform in [lo, hi] (inclusive).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            lo
        } else {
            self.0.gen_range(lo..=hi)
        }
    }

    /// Exponentially distributed with the given mean, in integer nanoseconds
    /// (at least 1).
    pub fn exp(&mut self, mean: u64) -> u64 {
        if mean == 0 {
            return 0;
        }
        let u: f64 = self.0.gen::<f64>();
        let x = -(1.0 - u).ln() * mean as f64;
        (x as u64).max(1)
    }

    /// True with probability p.
    pub fn chance(&mut self, p: f64) -> bool {
        self.0.gen::<f64>() < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_independent() {
        let a: Vec<u64> = (0..8)
            .map({
                let mut r = SimRng::new(7, 1);
                move |_| r.below(1000)
            })
            .collect();
        let b: Vec<u64> = (0..8)
            .map({
                let mut r = SimRng::new(7, 1);
                move |_| r.below(1000)
            })
            .collect();
        let c: Vec<u64> = (0..8)
            .map({
                let mut r = SimRng::new(7, 2);
                move |_| r.below(1000)
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
