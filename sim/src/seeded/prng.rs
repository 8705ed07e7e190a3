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
    // Reachable for the crate's tests in tests/it.
    #[doc(hidden)]
    pub fn draws_read(&self) -> u64 {
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
