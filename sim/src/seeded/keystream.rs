//! ChaCha8's keystream, sixteen blocks at a time: the words `rand_chacha::ChaCha8Rng` yields,
//! in the same order, from the same key and stream, generated with the machine's widest
//! vectors.
//!
//! A simulation run draws about eight 64-bit words a step, so the generator's block function
//! was a tenth of a campaign's time. `rand_chacha` computes four blocks per refill, two to a
//! 256-bit register. This computes sixteen with one block per vector lane (word `i` of every
//! block in one row): with AVX-512, a row is one register and a refill is 16 × 8 × 12 vector
//! operations for 1 KiB, without shuffles; with AVX2 it takes two passes of eight blocks. The
//! buffer stays in that row layout: word `k` of the sixteen blocks is row `k % 16`, lane
//! `k / 16`. Tests check every word against `rand_chacha` itself, on each path, so every
//! recorded seed replays as before. (`reports/sim-bench.md` has the figures.)

/// Blocks per refill, and lanes per row.
const LANES: usize = 16;

/// Words per refill.
pub const WORDS: usize = 16 * LANES;

/// ChaCha's constant words ("expand 32-byte k").
const SIGMA: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

/// Sixteen blocks of keystream, row by row: `rows[i][b]` is word `i` of block `b`.
pub type Rows = [[u32; LANES]; 16];

/// The state of one ChaCha8 stream between refills.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keystream {
    key: [u32; 8],
    /// The stream number's two words (ChaCha's nonce).
    stream: [u32; 2],
    /// The counter of the next block to generate.
    block: u64,
}

impl Keystream {
    /// The stream `stream` under the 32-byte `key`, from its first block.
    pub fn new(key: [u8; 32], stream: u64) -> Keystream {
        let mut words = [0; 8];
        for (word, bytes) in words.iter_mut().zip(key.chunks_exact(4)) {
            *word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        }
        Keystream {
            key: words,
            stream: [stream as u32, (stream >> 32) as u32],
            block: 0,
        }
    }

    /// Fills `rows` with the next sixteen blocks.
    #[inline(never)]
    pub fn refill(&mut self, rows: &mut Rows) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") {
                // SAFETY: the processor has AVX-512F, checked just above.
                unsafe { x86::blocks_avx512(self, rows) };
                return self.advance();
            }
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: the processor has AVX2, checked just above.
                unsafe { x86::blocks_avx2(self, rows) };
                return self.advance();
            }
        }
        blocks_scalar(self, rows);
        self.advance();
    }

    fn advance(&mut self) {
        // A 64-bit block counter, as rand_chacha's: it wraps after 2^64 blocks (2^70 bytes).
        self.block = self.block.wrapping_add(LANES as u64);
    }

    /// Word `i` of the initial state of every block (the counter's words are the first
    /// block's).
    fn initial(&self, i: usize) -> u32 {
        match i {
            0..=3 => SIGMA[i],
            4..=11 => self.key[i - 4],
            12 => self.block as u32,
            13 => (self.block >> 32) as u32,
            _ => self.stream[i - 14],
        }
    }

    /// The counter words (12 and 13) of blocks `first..first + N`.
    fn counters<const N: usize>(&self, first: usize) -> ([u32; N], [u32; N]) {
        let (mut low, mut high) = ([0; N], [0; N]);
        for lane in 0..N {
            let block = self.block.wrapping_add((first + lane) as u64);
            low[lane] = block as u32;
            high[lane] = (block >> 32) as u32;
        }
        (low, high)
    }
}

/// ChaCha8's eight rounds on a state of sixteen rows, with the row type's add, xor and
/// rotate: column rounds, then diagonal rounds, four times.
macro_rules! rounds {
    ($x:ident, $add:expr, $xor:expr, [$r16:expr, $r12:expr, $r8:expr, $r7:expr]) => {
        for _ in 0..4 {
            rounds!(@quarter $x, $add, $xor, [$r16, $r12, $r8, $r7], 0, 4, 8, 12);
            rounds!(@quarter $x, $add, $xor, [$r16, $r12, $r8, $r7], 1, 5, 9, 13);
            rounds!(@quarter $x, $add, $xor, [$r16, $r12, $r8, $r7], 2, 6, 10, 14);
            rounds!(@quarter $x, $add, $xor, [$r16, $r12, $r8, $r7], 3, 7, 11, 15);
            rounds!(@quarter $x, $add, $xor, [$r16, $r12, $r8, $r7], 0, 5, 10, 15);
            rounds!(@quarter $x, $add, $xor, [$r16, $r12, $r8, $r7], 1, 6, 11, 12);
            rounds!(@quarter $x, $add, $xor, [$r16, $r12, $r8, $r7], 2, 7, 8, 13);
            rounds!(@quarter $x, $add, $xor, [$r16, $r12, $r8, $r7], 3, 4, 9, 14);
        }
    };
    (@quarter $x:ident, $add:expr, $xor:expr, [$r16:expr, $r12:expr, $r8:expr, $r7:expr],
        $a:literal, $b:literal, $c:literal, $d:literal) => {
        $x[$a] = $add($x[$a], $x[$b]);
        $x[$d] = $r16($xor($x[$d], $x[$a]));
        $x[$c] = $add($x[$c], $x[$d]);
        $x[$b] = $r12($xor($x[$b], $x[$c]));
        $x[$a] = $add($x[$a], $x[$b]);
        $x[$d] = $r8($xor($x[$d], $x[$a]));
        $x[$c] = $add($x[$c], $x[$d]);
        $x[$b] = $r7($xor($x[$b], $x[$c]));
    };
}

/// One block at a time, word by word (machines without AVX2).
fn blocks_scalar(stream: &Keystream, rows: &mut Rows) {
    let init: [u32; 16] = std::array::from_fn(|i| stream.initial(i));
    for lane in 0..LANES {
        let mut x = init;
        let block = stream.block.wrapping_add(lane as u64);
        (x[12], x[13]) = (block as u32, (block >> 32) as u32);
        let start = x;
        rounds!(
            x,
            u32::wrapping_add,
            |a: u32, b: u32| a ^ b,
            [
                |a: u32| a.rotate_left(16),
                |a: u32| a.rotate_left(12),
                |a: u32| a.rotate_left(8),
                |a: u32| a.rotate_left(7)
            ]
        );
        for (row, (word, start)) in rows.iter_mut().zip(x.iter().zip(start)) {
            row[lane] = word.wrapping_add(start);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Keystream, Rows};
    use std::arch::x86_64::*;

    /// All sixteen blocks at once: row `i` is one 512-bit register, a block per lane.
    ///
    /// # Safety
    /// The processor must have AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn blocks_avx512(stream: &Keystream, rows: &mut Rows) {
        let (low, high) = stream.counters::<16>(0);
        let mut init: [__m512i; 16] =
            std::array::from_fn(|i| _mm512_set1_epi32(stream.initial(i) as i32));
        // SAFETY: each pointer is to sixteen readable or writable u32 (64 bytes).
        unsafe {
            init[12] = _mm512_loadu_si512(low.as_ptr().cast());
            init[13] = _mm512_loadu_si512(high.as_ptr().cast());
        }
        let mut x = init;
        rounds!(
            x,
            add512,
            _mm512_xor_si512,
            [
                rotate512::<16>,
                rotate512::<12>,
                rotate512::<8>,
                rotate512::<7>
            ]
        );
        for i in 0..16 {
            let word = _mm512_add_epi32(x[i], init[i]);
            unsafe { _mm512_storeu_si512(rows[i].as_mut_ptr().cast(), word) };
        }
    }

    #[inline(always)]
    fn add512(a: __m512i, b: __m512i) -> __m512i {
        // SAFETY: called only from `blocks_avx512`, which requires AVX-512F.
        unsafe { _mm512_add_epi32(a, b) }
    }

    #[inline(always)]
    fn rotate512<const R: i32>(a: __m512i) -> __m512i {
        // SAFETY: as `add512`.
        unsafe { _mm512_rol_epi32::<R>(a) }
    }

    /// Two passes of eight blocks: row `i` is one 256-bit register (sixteen rows of sixteen
    /// lanes would not fit AVX2's sixteen registers).
    ///
    /// # Safety
    /// The processor must have AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn blocks_avx2(stream: &Keystream, rows: &mut Rows) {
        for first in [0, 8] {
            let (low, high) = stream.counters::<8>(first);
            let mut init: [__m256i; 16] =
                std::array::from_fn(|i| _mm256_set1_epi32(stream.initial(i) as i32));
            // SAFETY: each pointer is to eight readable or writable u32 (32 bytes).
            unsafe {
                init[12] = _mm256_loadu_si256(low.as_ptr().cast());
                init[13] = _mm256_loadu_si256(high.as_ptr().cast());
            }
            let mut x = init;
            rounds!(
                x,
                add256,
                xor256,
                [
                    rotate256::<16, 16>,
                    rotate256::<12, 20>,
                    rotate256::<8, 24>,
                    rotate256::<7, 25>
                ]
            );
            for i in 0..16 {
                let word = _mm256_add_epi32(x[i], init[i]);
                unsafe { _mm256_storeu_si256(rows[i][first..].as_mut_ptr().cast(), word) };
            }
        }
    }

    #[inline(always)]
    fn add256(a: __m256i, b: __m256i) -> __m256i {
        // SAFETY: called only from `blocks_avx2`, which requires AVX2.
        unsafe { _mm256_add_epi32(a, b) }
    }

    #[inline(always)]
    fn xor256(a: __m256i, b: __m256i) -> __m256i {
        // SAFETY: as `add256`.
        unsafe { _mm256_xor_si256(a, b) }
    }

    /// Rotates each lane left by `L` bits (`R` is `32 - L`).
    #[inline(always)]
    fn rotate256<const L: i32, const R: i32>(a: __m256i) -> __m256i {
        // SAFETY: as `add256`.
        unsafe { _mm256_or_si256(_mm256_slli_epi32::<L>(a), _mm256_srli_epi32::<R>(a)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngCore, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Every word of the first 4,096 blocks (256 refills) is rand_chacha's, for several keys
    /// and streams, on every path this machine has.
    #[test]
    fn words_are_rand_chachas() {
        for (seed, stream) in [
            (0, 0),
            (1, 7),
            (42, u64::MAX),
            (9_999, 0x1234_5678_9abc_def0),
        ] {
            let mut theirs = ChaCha8Rng::seed_from_u64(seed);
            theirs.set_stream(stream);
            let ours = Keystream::new(theirs.get_seed(), stream);
            let mut paths: Vec<Keystream> = vec![ours.clone(), ours.clone(), ours];
            let mut rows = [[0; LANES]; 16];
            for refill in 0..256 {
                let expected: Vec<u32> = (0..WORDS).map(|_| theirs.next_u32()).collect();
                for (path, stream) in paths.iter_mut().enumerate() {
                    match path {
                        0 => stream.refill(&mut rows),
                        #[cfg(target_arch = "x86_64")]
                        1 if std::is_x86_feature_detected!("avx2") => {
                            // SAFETY: the processor has AVX2, checked just above.
                            unsafe { x86::blocks_avx2(stream, &mut rows) };
                            stream.advance();
                        }
                        1 => stream.refill(&mut rows),
                        _ => {
                            blocks_scalar(stream, &mut rows);
                            stream.advance();
                        }
                    }
                    for (k, &word) in expected.iter().enumerate() {
                        assert_eq!(
                            rows[k % 16][k / 16],
                            word,
                            "seed {seed}, stream {stream:?}, refill {refill}, word {k}, path {path}"
                        );
                    }
                }
            }
        }
    }

    /// The block counter's high word: blocks 2^32 - 8 .. 2^32 + 8 straddle it.
    #[test]
    fn the_counter_carries_into_its_high_word() {
        let mut theirs = ChaCha8Rng::seed_from_u64(5);
        theirs.set_stream(3);
        theirs.set_word_pos(((1u128 << 32) - 8) * 16);
        let mut ours = Keystream::new(theirs.get_seed(), 3);
        ours.block = (1 << 32) - 8;
        let mut rows = [[0; LANES]; 16];
        ours.refill(&mut rows);
        for k in 0..WORDS {
            assert_eq!(rows[k % 16][k / 16], theirs.next_u32(), "word {k}");
        }
    }
}
