//! Seeded randomness: one root seed, one named generator per component.
//!
//! Every component (network, faults, workload, handler, swarm) draws from its own ChaCha8
//! stream: the key comes from the root seed, the stream number from the component's name. A draw
//! added in one component therefore never reshuffles another (TigerBeetle VOPR's sub-seeds).

use super::ratio::Ratio;
use crate::trace::fnv1a64;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A component's random generator.
#[derive(Clone, Debug)]
pub struct Prng(ChaCha8Rng);

impl Prng {
    /// The generator of component `name` for the run seeded with `seed`.
    pub fn named(seed: u64, name: &str) -> Prng {
        let mut prng = ChaCha8Rng::seed_from_u64(seed);
        prng.set_stream(fnv1a64(name.as_bytes()));
        Prng(prng)
    }

    /// A uniform draw in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0) has no value");
        self.0.gen_range(0..n)
    }

    /// A uniform draw in `lo..=hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        assert!(lo <= hi, "between({lo}, {hi}) is empty");
        self.0.gen_range(lo..=hi)
    }

    /// True with probability `ratio`. (The draw's width is part of every recorded seed: a
    /// narrower draw would be cheaper, and would replay no saved scenario the same way.)
    #[inline]
    pub fn chance(&mut self, ratio: Ratio) -> bool {
        if ratio.num == 0 {
            return false;
        }
        if ratio.num == ratio.den {
            return true;
        }
        self.below(u64::from(ratio.den)) < u64::from(ratio.num)
    }

    /// A fair coin.
    pub fn coin(&mut self) -> bool {
        self.below(2) == 1
    }

    /// A uniform pick from a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_generators_are_reproducible_and_independent() {
        let draws = |seed, name| {
            let mut prng = Prng::named(seed, name);
            (0..8).map(|_| prng.below(1000)).collect::<Vec<_>>()
        };
        assert_eq!(draws(7, "network"), draws(7, "network"));
        assert_ne!(draws(7, "network"), draws(7, "faults"));
        assert_ne!(draws(7, "network"), draws(8, "network"));
        // Drawing more from one component leaves another's sequence as it was.
        let mut faults = Prng::named(7, "faults");
        for _ in 0..100 {
            faults.below(10);
        }
        assert_eq!(draws(7, "network"), draws(7, "network"));
    }

    #[test]
    fn chance_respects_its_extremes_and_rate() {
        let mut prng = Prng::named(1, "t");
        assert!((0..100).all(|_| !prng.chance(Ratio::ZERO)));
        assert!((0..100).all(|_| prng.chance(Ratio::ONE)));
        let hits = (0..10_000)
            .filter(|_| prng.chance(Ratio::new(1, 4)))
            .count();
        assert!((2_200..2_800).contains(&hits), "{hits}");
    }
}
