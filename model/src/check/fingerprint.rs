//! 64-bit state fingerprints.
//!
//! The `Hash` of a state feeds a [`Fingerprinter`]: word `i` goes to lane `i mod 4`, mixed with
//! a folded 64×64→128-bit multiply (the mixing step of wyhash and foldhash), so the dependent
//! chain is a quarter of the words long; [`Fingerprinter::finish`] folds the lanes and the
//! length together. The result
//! is a well-mixed 64-bit value: the collision estimate n²/2⁶⁵ assumes as much.
//! Deterministic: no per-process seed.

use std::hash::{Hash, Hasher};

const SEEDS: [u64; 4] = [
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7344,
    0xa409_3822_299f_31d0,
    0x082e_fa98_ec4e_6c89,
];
/// The bits of a fingerprint [`coded`] gives to the code.
pub const CODE_BITS: u32 = 24;
const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;
const MULTIPLIER_2: u64 = 0x4528_21e6_38d0_1377;

#[inline(always)]
fn fold_mul(a: u64, b: u64) -> u64 {
    let product = u128::from(a) * u128::from(b);
    (product as u64) ^ ((product >> 64) as u64)
}

/// A [`Hasher`] for fingerprints (see the module documentation).
#[derive(Clone, Copy)]
pub struct Fingerprinter {
    /// The lanes; the next word goes to `lanes[0]`, then the lanes rotate.
    lanes: [u64; 4],
    /// Words written.
    count: u64,
}

impl Default for Fingerprinter {
    fn default() -> Self {
        Fingerprinter {
            lanes: SEEDS,
            count: 0,
        }
    }
}

impl Fingerprinter {
    #[inline(always)]
    fn push(&mut self, word: u64) {
        // One lane read and written per word: the hasher lives in memory between the
        // (not always inlined) `Hash` impls that feed it.
        let lane = &mut self.lanes[(self.count & 3) as usize];
        *lane = fold_mul(*lane ^ word, MULTIPLIER);
        // Wrapping: no overflow check per word (2^64 words are never written).
        self.count = self.count.wrapping_add(1);
    }

    /// A hasher fed with `state` but its budgets used: [`coded`] with its `finish` and a
    /// budgets' code, or [`Fingerprinter::with_last`] with their word, then gives the
    /// fingerprint of that state with any budgets used.
    #[inline]
    pub fn core_of<B: Hash>(state: &crate::check::state::State<B>) -> Fingerprinter {
        let mut hasher = Fingerprinter::default();
        state.hash_core(&mut hasher);
        hasher
    }

    /// The fingerprint of what this hasher was fed followed by `word` (never 0).
    #[inline]
    pub fn with_last(mut self, word: u64) -> u64 {
        self.push(word);
        self.finish().max(1)
    }

    /// The fingerprint of `value` (never 0: the fingerprint table's empty slot).
    #[inline]
    pub fn of<T: Hash + ?Sized>(&mut self, value: &T) -> u64 {
        *self = Fingerprinter::default();
        value.hash(self);
        self.finish().max(1)
    }
}

impl Hasher for Fingerprinter {
    fn finish(&self) -> u64 {
        let [a, b, c, d] = self.lanes;
        let left = fold_mul(a ^ MULTIPLIER_2, b ^ self.count);
        let right = fold_mul(c ^ SEEDS[1], d ^ MULTIPLIER);
        fold_mul(left ^ SEEDS[2], right ^ MULTIPLIER_2)
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.push(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.push(u64::from_le_bytes(word) ^ (rest.len() as u64) << 59);
        }
    }

    #[inline(always)]
    fn write_u8(&mut self, i: u8) {
        self.push(u64::from(i));
    }

    #[inline(always)]
    fn write_u16(&mut self, i: u16) {
        self.push(u64::from(i));
    }

    #[inline(always)]
    fn write_u32(&mut self, i: u32) {
        self.push(u64::from(i));
    }

    #[inline(always)]
    fn write_u64(&mut self, i: u64) {
        self.push(i);
    }

    #[inline(always)]
    fn write_usize(&mut self, i: usize) {
        self.push(i as u64);
    }
}

/// The fingerprint of `value`: never 0 (the fingerprint table's empty slot).
pub fn fingerprint<T: Hash + ?Sized>(value: &T) -> u64 {
    Fingerprinter::default().of(value)
}

/// The fingerprint of a state whose hash but for its budgets used is `core`, and whose
/// budgets used have `code` ([`crate::check::config::BudgetCodes`], below 2²⁴): the code in
/// the top 24 bits (never 0). Fingerprints that differ only in their codes share their low 40
/// bits, so [`crate::check::table`] probes them from the same slot: the twins of a state with
/// other budgets used lie in the cache lines its own lookup reads. Two codes with one core
/// never give one fingerprint (but for the one in 2⁶⁴ that is 0); two cores give one with
/// the probability of any two hashes.
#[inline]
pub fn coded(core: u64, code: u64) -> u64 {
    debug_assert!(code < 1 << CODE_BITS);
    (core ^ code << (64 - CODE_BITS)).max(1)
}
