//! Seeded randomness: one root seed, one named generator per component.
//!
//! Every component (network, faults, workload, handler, swarm) draws from its own ChaCha8
//! stream: the key comes from the root seed, the stream number from the component's name. A draw
//! added in one component therefore never reshuffles another (TigerBeetle VOPR's sub-seeds).
//!
//! How a word of the stream becomes a number in a range is the run's [`Draws`]: rand's
//! `Uniform` distribution (the default), or rand's `Rng::gen_range`, which the seeded files
//! written before `Draws` existed were drawn with (a file without `draws` replays that way).

use super::keystream::{Blocks, Keystream, WORDS};
use super::ratio::Ratio;
use crate::trace::fnv1a64;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::fmt;

/// How a run turns the words of its streams into numbers in a range. Both are rand 0.8's
/// algorithms for `u64`, word for word: a word times the range, in 128 bits, whose high half
/// is the draw unless the low half falls outside a bias zone (then it draws again). They
/// differ in the zone, and so draw different numbers from the same words.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Draws {
    /// `Uniform::new_inclusive(low, high).sample(rng)`: the exact zone, which rejects the
    /// `2^64 mod range` words past the last whole multiple of the range (fewer than one in
    /// 10^13 for a range under a million). The default of every run.
    #[default]
    Uniform,
    /// `Rng::gen_range(low..=high)`: rand's conservative single-sample zone,
    /// `(range << range.leading_zeros()) - 1`, which rejects up to half the words (a coin's, a
    /// `1/20`'s three words in eight). The seeded files written before `draws` existed.
    GenRange,
}

impl Draws {
    /// Every way of drawing.
    pub const ALL: [Draws; 2] = [Draws::Uniform, Draws::GenRange];

    /// The name in a scenario file (`draws = "uniform"`) and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Draws::Uniform => "uniform",
            Draws::GenRange => "gen_range",
        }
    }

    /// The way of drawing named `name`.
    pub fn from_name(name: &str) -> Option<Draws> {
        Draws::ALL.into_iter().find(|d| d.name() == name)
    }

    /// The bias zone of a draw below `range` (`range > 0`): the largest low half accepted.
    #[inline(always)]
    fn zone(self, range: u64) -> u64 {
        match self {
            // rand's `UniformInt::new_inclusive`: reject the `2^64 mod range` low halves
            // above the last whole multiple of the range.
            Draws::Uniform => u64::MAX - range.wrapping_neg() % range,
            // rand's `UniformInt::sample_single_inclusive` (never 0: the shifted range has its
            // top bit set).
            Draws::GenRange => (range << range.leading_zeros()).wrapping_sub(1),
        }
    }
}

impl fmt::Display for Draws {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
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
    /// The odds of `ratio`, drawn as `draws` draws.
    pub fn of(ratio: Ratio, draws: Draws) -> Odds {
        let (num, den) = (u64::from(ratio.num), u64::from(ratio.den));
        let zone = if num == 0 || num == den {
            0
        } else {
            draws.zone(den)
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
    /// The integers `low..=high`, drawn as `draws` draws.
    ///
    /// # Panics
    /// When `low > high`, as [`Prng::between`].
    pub fn new(low: u64, high: u64, draws: Draws) -> Span {
        assert!(low <= high, "between({low}, {high}) is empty");
        let range = high.wrapping_sub(low).wrapping_add(1);
        let zone = if range == 0 { 0 } else { draws.zone(range) };
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
    /// How the words become numbers in a range.
    draws: Draws,
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
            .field("draws", &self.draws)
            .finish_non_exhaustive()
    }
}

impl Prng {
    /// The generator of component `name` for the run seeded with `seed`: ChaCha8 keyed as
    /// `ChaCha8Rng::seed_from_u64(seed)`, on the stream numbered by the name's FNV-1a hash,
    /// drawing as `draws`.
    pub fn named(seed: u64, name: &str, draws: Draws) -> Prng {
        let key = ChaCha8Rng::seed_from_u64(seed).get_seed();
        Prng {
            stream: Keystream::new(key, fnv1a64(name.as_bytes())),
            index: WORDS / 2,
            draws,
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

    /// A uniform draw in `low..=low + range - 1` (`range > 0`): rand's algorithm for `u64`
    /// of the run's [`Draws`], written out so that it inlines. A word of the stream, times
    /// `range`, in 128 bits: the high half is the draw, unless the low half falls outside the
    /// bias zone (then it draws again).
    #[inline(always)]
    fn sample(&mut self, low: u64, range: u64) -> u64 {
        self.sample_in_zone(low, range, self.draws.zone(range))
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

    /// How many 64-bit draws of the stream have been read.
    #[cfg(test)]
    fn draws_read(&self) -> u64 {
        // A block is sixteen 32-bit words: eight draws.
        (self.stream.next_block() * 8).saturating_sub((WORDS / 2 - self.index) as u64)
    }

    /// A uniform draw in `0..n` (`n > 0`), as rand's `Uniform` (or `Rng::gen_range(0..n)`)
    /// draws it.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0) has no value");
        self.sample(0, n)
    }

    /// A uniform draw in `lo..=hi`, as rand's `Uniform` (or `Rng::gen_range(lo..=hi)`) draws
    /// it.
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

    /// [`Prng::chance`] of the ratio `odds` was made of: the same answer from the same draws
    /// (when the odds were made for this generator's [`Draws`]).
    #[inline(always)]
    pub fn odds(&mut self, odds: &Odds) -> bool {
        if odds.zone == 0 {
            return odds.num != 0;
        }
        self.sample_in_zone(0, odds.den, odds.zone) < odds.num
    }

    /// [`Prng::between`] the bounds `span` was made of: the same draw from the same words
    /// (when the span was made for this generator's [`Draws`]).
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
            let mut prng = Prng::named(seed, name, Draws::Uniform);
            (0..8).map(|_| prng.below(1000)).collect::<Vec<_>>()
        };
        assert_eq!(draws(7, "network"), draws(7, "network"));
        assert_ne!(draws(7, "network"), draws(7, "faults"));
        assert_ne!(draws(7, "network"), draws(8, "network"));
        // Drawing more from one component leaves another's sequence as it was.
        let mut faults = Prng::named(7, "faults", Draws::Uniform);
        for _ in 0..100 {
            faults.below(10);
        }
        assert_eq!(draws(7, "network"), draws(7, "network"));
    }

    /// Ranges over small, odd, power-of-two, huge (often rejected) and full ranges.
    const SPANS: [(u64, u64); 12] = [
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

    /// Draws of `Prng` drawing as `draws` and of rand on the same ChaCha8 stream, where
    /// `theirs` draws in `lo..=hi` as rand does: the same numbers, word for word, over
    /// [`SPANS`], ranges `0..n`, a chance, prepared odds and a coin.
    fn in_step_with_rand(draws: Draws, theirs: impl Fn(&mut ChaCha8Rng, u64, u64) -> u64) {
        for seed in [0, 1, 42, 9_999] {
            let mut ours = Prng::named(seed, "network", draws);
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(fnv1a64(b"network"));
            for round in 0..300 {
                for &(lo, hi) in &SPANS {
                    let b = theirs(&mut rng, lo, hi);
                    assert_eq!(
                        ours.between(lo, hi),
                        b,
                        "seed {seed}, round {round}, {lo}..={hi}"
                    );
                    if hi < u64::MAX {
                        let n = hi + 1;
                        let b = theirs(&mut rng, 0, hi);
                        assert_eq!(ours.below(n), b, "seed {seed}, round {round}, 0..{n}");
                    }
                }
                let ratio = Ratio::new(3, 100);
                assert_eq!(ours.chance(ratio), theirs(&mut rng, 0, 99) < 3);
                let odds = Odds::of(ratio, draws);
                assert_eq!(ours.odds(&odds), theirs(&mut rng, 0, 99) < 3);
                assert_eq!(ours.coin(), theirs(&mut rng, 0, 1) == 1);
            }
        }
    }

    /// `gen_range` draws are rand's `Rng::gen_range` on the same ChaCha8 stream.
    #[test]
    fn gen_range_draws_are_rands_gen_range_on_the_same_stream() {
        use rand::Rng;
        in_step_with_rand(Draws::GenRange, |rng, lo, hi| rng.gen_range(lo..=hi));
    }

    /// `uniform` draws are rand's `Uniform` distribution on the same ChaCha8 stream.
    #[test]
    fn uniform_draws_are_rands_uniform_on_the_same_stream() {
        use rand::distributions::{Distribution, Uniform};
        in_step_with_rand(Draws::Uniform, |rng, lo, hi| {
            Uniform::new_inclusive(lo, hi).sample(rng)
        });
    }

    /// `uniform` rejects almost no draw: over the default fault plan's denominators it reads
    /// one draw per decision, where `gen_range` reads about a third more.
    #[test]
    fn uniform_reads_fewer_words_than_gen_range() {
        let draws_read = |draws| {
            let mut prng = Prng::named(3, "faults", draws);
            let odds = [20u32, 25, 50, 100].map(|den| Odds::of(Ratio::new(1, den), draws));
            for _ in 0..1_000 {
                for o in &odds {
                    prng.odds(o);
                }
            }
            prng.draws_read()
        };
        let uniform = draws_read(Draws::Uniform);
        let gen_range = draws_read(Draws::GenRange);
        assert_eq!(uniform, 4_000, "uniform rejected a draw");
        // gen_range accepts 20/32, 25/32, 50/64 and 100/128 of the draws: about 5,440 read.
        assert!(gen_range > 5_000, "gen_range read {gen_range} draws");
    }

    #[test]
    fn draws_are_named_both_ways() {
        for draws in Draws::ALL {
            assert_eq!(Draws::from_name(draws.name()), Some(draws));
        }
        assert_eq!(Draws::from_name("gen-range"), None);
    }

    #[test]
    fn chance_respects_its_extremes_and_rate() {
        let mut prng = Prng::named(1, "t", Draws::Uniform);
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
            for draws in Draws::ALL {
                let mut a = Prng::named(seed, "faults", draws);
                let mut b = Prng::named(seed, "faults", draws);
                for round in 0..500 {
                    for ratio in ratios {
                        assert_eq!(
                            a.chance(ratio),
                            b.odds(&Odds::of(ratio, draws)),
                            "seed {seed}, round {round}, {ratio}, {draws}"
                        );
                    }
                }
                assert_eq!(a.below(1 << 40), b.below(1 << 40), "still in step");
            }
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
            for draws in Draws::ALL {
                let mut a = Prng::named(seed, "network", draws);
                let mut b = Prng::named(seed, "network", draws);
                for round in 0..500 {
                    for (low, high) in bounds {
                        assert_eq!(
                            a.between(low, high),
                            b.span(&Span::new(low, high, draws)),
                            "seed {seed}, round {round}, {low}..={high}, {draws}"
                        );
                    }
                }
                assert_eq!(a.below(1 << 40), b.below(1 << 40), "still in step");
            }
        }
    }
}
