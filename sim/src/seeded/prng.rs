//! Seeded randomness: one root seed, one named generator per component.
//!
//! Every component (network, faults, workload, handler, swarm) draws from its own ChaCha8
//! stream: the key comes from the root seed, the stream number from the component's name. A draw
//! added in one component therefore never reshuffles another (TigerBeetle VOPR's sub-seeds).

use super::keystream::{Blocks, Keystream, WORDS};
use super::ratio::Ratio;
use crate::trace::fnv1a64;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// rand's conservative, fast bias zone of a 64-bit draw below `range` (`range > 0`; never 0:
/// the shifted range has its top bit set).
#[inline(always)]
fn zone_of(range: u64) -> u64 {
    (range << range.leading_zeros()).wrapping_sub(1)
}

/// A probability prepared for drawing: [`Prng::odds`] decides as [`Prng::chance`] of its
/// ratio does, from the same words of the stream, without working out the draw's bias zone
/// each time (a run draws the same few probabilities millions of times).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Odds {
    num: u64,
    den: u64,
    /// The bias zone of a draw below `den`; 0 when the ratio is 0 or 1 (nothing is drawn).
    zone: u64,
}

impl Odds {
    /// The odds of `ratio`.
    pub fn of(ratio: Ratio) -> Odds {
        let (num, den) = (u64::from(ratio.num), u64::from(ratio.den));
        let zone = if num == 0 || num == den {
            0
        } else {
            zone_of(den)
        };
        Odds { num, den, zone }
    }
}

/// A range of integers prepared for drawing: [`Prng::span`] draws as [`Prng::between`] of
/// its bounds does, from the same words of the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    low: u64,
    /// `high - low + 1`, wrapped: 0 for the whole of `u64`.
    range: u64,
    /// The bias zone of a draw below `range` (unused for the whole of `u64`).
    zone: u64,
}

impl Span {
    /// The integers `low..=high`.
    ///
    /// # Panics
    /// When `low > high`, as [`Prng::between`].
    pub fn new(low: u64, high: u64) -> Span {
        assert!(low <= high, "between({low}, {high}) is empty");
        let range = high.wrapping_sub(low).wrapping_add(1);
        let zone = if range == 0 { 0 } else { zone_of(range) };
        Span { low, range, zone }
    }
}

/// A component's random generator: `rand_chacha::ChaCha8Rng`'s words, sixteen blocks at a
/// time (the `keystream` module).
#[derive(Clone)]
pub struct Prng {
    stream: Keystream,
    /// The next draw to read; `WORDS / 2` when the buffer is spent. (Every draw reads two
    /// words, as rand's `next_u64`; a draw never straddles two refills.)
    index: usize,
    buffer: Buffer,
}

/// The generated words, aligned for the widest vector stores.
#[derive(Clone)]
#[repr(align(64))]
struct Buffer(Blocks);

impl std::fmt::Debug for Prng {
    /// The stream and the place in it (not the buffered words).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prng")
            .field("stream", &self.stream)
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

impl Prng {
    /// The generator of component `name` for the run seeded with `seed`: ChaCha8 keyed as
    /// `ChaCha8Rng::seed_from_u64(seed)`, on the stream numbered by the name's FNV-1a hash.
    pub fn named(seed: u64, name: &str) -> Prng {
        let key = ChaCha8Rng::seed_from_u64(seed).get_seed();
        Prng {
            stream: Keystream::new(key, fnv1a64(name.as_bytes())),
            index: WORDS / 2,
            buffer: Buffer([0; WORDS / 2]),
        }
    }

    /// The stream's next two words as one (the first in the low half), as rand's `next_u64`
    /// on `ChaCha8Rng` reads them.
    #[inline(always)]
    fn next_u64(&mut self) -> u64 {
        let mut index = self.index;
        if index >= WORDS / 2 {
            self.refill();
            index = 0;
        }
        let draw = self.buffer.0[index];
        self.index = index + 1;
        draw
    }

    #[cold]
    #[inline(never)]
    fn refill(&mut self) {
        self.stream.refill(&mut self.buffer.0);
    }

    /// A uniform draw in `low..=low + range - 1` (`range > 0`): rand's single-sample
    /// algorithm for `u64` (what `Rng::gen_range` runs), written out so that it inlines. A
    /// word of the stream, times `range`, in 128 bits: the high half is the draw, unless the
    /// low half falls outside the bias zone (then it draws again).
    #[inline(always)]
    fn sample(&mut self, low: u64, range: u64) -> u64 {
        self.sample_in_zone(low, range, zone_of(range))
    }

    /// [`Prng::sample`] with the bias zone of `range` worked out already.
    #[inline(always)]
    fn sample_in_zone(&mut self, low: u64, range: u64, zone: u64) -> u64 {
        loop {
            let wide = u128::from(self.next_u64()) * u128::from(range);
            if wide as u64 <= zone {
                return low.wrapping_add((wide >> 64) as u64);
            }
        }
    }

    /// A uniform draw in `0..n` (`n > 0`), as `Rng::gen_range(0..n)` draws it.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0) has no value");
        self.sample(0, n)
    }

    /// A uniform draw in `lo..=hi`, as `Rng::gen_range(lo..=hi)` draws it.
    #[inline]
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        assert!(lo <= hi, "between({lo}, {hi}) is empty");
        let range = hi.wrapping_sub(lo).wrapping_add(1);
        if range == 0 {
            // The whole of u64: any word will do.
            return self.next_u64();
        }
        self.sample(lo, range)
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

    /// [`Prng::chance`] of the ratio `odds` was made of: the same answer from the same draws.
    #[inline(always)]
    pub fn odds(&mut self, odds: &Odds) -> bool {
        if odds.zone == 0 {
            return odds.num != 0;
        }
        self.sample_in_zone(0, odds.den, odds.zone) < odds.num
    }

    /// [`Prng::between`] the bounds `span` was made of: the same draw from the same words.
    #[inline(always)]
    pub fn span(&mut self, span: &Span) -> u64 {
        if span.range == 0 {
            // The whole of u64: any word will do.
            return self.next_u64();
        }
        self.sample_in_zone(span.low, span.range, span.zone)
    }

    /// A fair coin.
    #[inline]
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

    /// The draws are rand's: `gen_range` on the same ChaCha8 stream, word for word, over
    /// small, odd, power-of-two, huge (often rejected) and full ranges.
    #[test]
    fn draws_are_rands_gen_range_on_the_same_stream() {
        use rand::Rng;
        let spans: [(u64, u64); 12] = [
            (0, 0),
            (0, 1),
            (1, 3),
            (0, 99),
            (5, 5 + 1023),
            (0, 6_000),
            (30_000, 90_000),
            (0, (1 << 63) + 7),
            (3, u64::MAX - 2),
            (0, u64::MAX / 3 * 2),
            (1, u64::MAX),
            (0, u64::MAX),
        ];
        for seed in [0, 1, 42, 9_999] {
            let mut ours = Prng::named(seed, "network");
            let mut theirs = ChaCha8Rng::seed_from_u64(seed);
            theirs.set_stream(fnv1a64(b"network"));
            for round in 0..300 {
                for &(lo, hi) in &spans {
                    let (a, b) = (ours.between(lo, hi), theirs.gen_range(lo..=hi));
                    assert_eq!(a, b, "seed {seed}, round {round}, {lo}..={hi}");
                    if hi < u64::MAX {
                        let n = hi + 1;
                        let (a, b) = (ours.below(n), theirs.gen_range(0..n));
                        assert_eq!(a, b, "seed {seed}, round {round}, 0..{n}");
                    }
                }
                let ratio = Ratio::new(3, 100);
                assert_eq!(ours.chance(ratio), theirs.gen_range(0..100u64) < 3);
                assert_eq!(ours.odds(&Odds::of(ratio)), theirs.gen_range(0..100u64) < 3);
                assert_eq!(ours.coin(), theirs.gen_range(0..2u64) == 1);
            }
        }
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

    /// Odds decide as the chance of their ratio, draw for draw: both generators stay in step
    /// over extreme, tiny, even and odd ratios.
    #[test]
    fn odds_draw_as_chance_does() {
        let ratios = [
            Ratio::ZERO,
            Ratio::ONE,
            Ratio::new(1, 2),
            Ratio::new(1, 3),
            Ratio::new(3, 100),
            Ratio::new(7, 7),
            Ratio::new(0, 9),
            Ratio::new(1, 1 << 31),
            Ratio::new(u32::MAX - 1, u32::MAX),
        ];
        for seed in 0..20 {
            let mut a = Prng::named(seed, "faults");
            let mut b = Prng::named(seed, "faults");
            for round in 0..500 {
                for ratio in ratios {
                    assert_eq!(
                        a.chance(ratio),
                        b.odds(&Odds::of(ratio)),
                        "seed {seed}, round {round}, {ratio}"
                    );
                }
            }
            assert_eq!(a.below(1 << 40), b.below(1 << 40), "still in step");
        }
    }

    /// Spans draw as `between` of their bounds, draw for draw (rejections included).
    #[test]
    fn spans_draw_as_between_does() {
        let bounds: [(u64, u64); 8] = [
            (0, 0),
            (1, 1),
            (0, 6_000),
            (1, 6_000),
            (15_000, 90_000),
            (0, (1 << 63) + 7),
            (3, u64::MAX - 2),
            (0, u64::MAX),
        ];
        for seed in 0..20 {
            let mut a = Prng::named(seed, "network");
            let mut b = Prng::named(seed, "network");
            for round in 0..500 {
                for (low, high) in bounds {
                    assert_eq!(
                        a.between(low, high),
                        b.span(&Span::new(low, high)),
                        "seed {seed}, round {round}, {low}..={high}"
                    );
                }
            }
            assert_eq!(a.below(1 << 40), b.below(1 << 40), "still in step");
        }
    }
}
