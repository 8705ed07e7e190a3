//! ChaCha8's keystream, sixteen blocks at a time: the words `rand_chacha::ChaCha8Rng` yields,
//! in the same order, from the same key and stream, generated with the machine's widest
//! vectors.
//!
//! A simulation run draws about eight 64-bit words a step, so the generator's block function
//! was a tenth of a campaign's time. `rand_chacha` computes four blocks per refill, two to a
//! 256-bit register. This computes sixteen with one block per vector lane (word `i` of every
//! block in one row): with AVX-512, a row is one register, and a refill is 384 vector
//! operations for the rounds and 64 shuffles to turn rows into blocks, for 1 KiB; with AVX2 it
//! takes two passes of eight blocks; a machine with neither (or not x86-64) fills the buffer
//! from `rand_chacha` itself. The buffer is in stream order, so a draw is one load. Tests
//! check every word against `rand_chacha`, on each path, so every recorded seed replays as
//! before. (`reports/sim-bench.md` has the figures.)

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Blocks per refill, and lanes per row.
const LANES: usize = 16;

/// Words per refill.
pub const WORDS: usize = 16 * LANES;

/// ChaCha's constant words ("expand 32-byte k").
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const SIGMA: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

/// Sixteen blocks of keystream in stream order, two words to an element (the first in the
/// low half): element `d` is the stream's `d`-th 64-bit draw, as rand's `next_u64` reads it.
pub type Blocks = [u64; WORDS / 2];

/// The state of one ChaCha8 stream between refills.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keystream {
    key: [u32; 8],
    /// The stream number's two words (ChaCha's nonce).
    stream: [u32; 2],
    /// The counter of the next block to generate.
    // Reachable for the crate's tests in tests/it.
    #[doc(hidden)]
    pub block: u64,
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

    /// The counter of the next block to generate.
    // Reachable for the crate's tests in tests/it.
    #[doc(hidden)]
    pub fn next_block(&self) -> u64 {
        self.block
    }

    /// Fills `blocks` with the next sixteen blocks.
    #[inline(never)]
    pub fn refill(&mut self, blocks: &mut Blocks) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") {
                // SAFETY: the processor has AVX-512F, checked just above.
                unsafe { x86::blocks_avx512(self, blocks) };
                return self.advance();
            }
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: the processor has AVX2, checked just above.
                unsafe { x86::blocks_avx2(self, blocks) };
                return self.advance();
            }
        }
        blocks_rand(self, blocks);
        self.advance();
    }

    /// Moves the counter past the sixteen blocks just generated.
    // Reachable for the crate's tests in tests/it.
    #[doc(hidden)]
    pub fn advance(&mut self) {
        // A 64-bit block counter, as rand_chacha's: it wraps after 2^64 blocks (2^70 bytes).
        self.block = self.block.wrapping_add(LANES as u64);
    }

    /// Word `i` of the initial state of every block (the counter's words are the first
    /// block's).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
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
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
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

/// Machines without AVX2: rand_chacha's own generator, set to this stream's next block.
// Reachable for the crate's tests in tests/it.
#[doc(hidden)]
pub fn blocks_rand(stream: &Keystream, blocks: &mut Blocks) {
    let mut key = [0; 32];
    for (bytes, word) in key.chunks_exact_mut(4).zip(stream.key) {
        bytes.copy_from_slice(&word.to_le_bytes());
    }
    let mut rng = ChaCha8Rng::from_seed(key);
    rng.set_stream(u64::from(stream.stream[0]) | u64::from(stream.stream[1]) << 32);
    rng.set_word_pos(u128::from(stream.block) * 16);
    for draw in blocks.iter_mut() {
        *draw = rng.next_u64();
    }
}

#[cfg(target_arch = "x86_64")]
// Reachable for the crate's tests in tests/it.
#[doc(hidden)]
pub mod x86 {
    use super::{Blocks, Keystream};
    use std::arch::x86_64::*;

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

    /// All sixteen blocks at once: row `i` is one 512-bit register, a block per lane.
    ///
    /// # Safety
    /// The processor must have AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn blocks_avx512(stream: &Keystream, blocks: &mut Blocks) {
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
        let rows: [__m512i; 16] = std::array::from_fn(|i| _mm512_add_epi32(x[i], init[i]));
        // Rows to blocks: a 16 × 16 transpose in four stages of sixteen shuffles.
        // Pairs of rows interleaved, then quads: `quads[4 * g + m]` holds, in its 128-bit
        // chunk `c`, words 4g..4g + 3 of block 4c + m.
        let mut pairs = [_mm512_setzero_si512(); 16];
        for r in (0..16).step_by(2) {
            pairs[r] = _mm512_unpacklo_epi32(rows[r], rows[r + 1]);
            pairs[r + 1] = _mm512_unpackhi_epi32(rows[r], rows[r + 1]);
        }
        let mut quads = [_mm512_setzero_si512(); 16];
        for g in 0..4 {
            let (a, b) = (4 * g, 4 * g + 2);
            quads[4 * g] = _mm512_unpacklo_epi64(pairs[a], pairs[b]);
            quads[4 * g + 1] = _mm512_unpackhi_epi64(pairs[a], pairs[b]);
            quads[4 * g + 2] = _mm512_unpacklo_epi64(pairs[a + 1], pairs[b + 1]);
            quads[4 * g + 3] = _mm512_unpackhi_epi64(pairs[a + 1], pairs[b + 1]);
        }
        // Then chunk `c` of the four quads of `m` is block 4c + m, whole.
        let out = blocks.as_mut_ptr().cast::<__m512i>();
        for m in 0..4 {
            let low = _mm512_shuffle_i32x4::<0x44>(quads[m], quads[4 + m]);
            let high = _mm512_shuffle_i32x4::<0xee>(quads[m], quads[4 + m]);
            let low2 = _mm512_shuffle_i32x4::<0x44>(quads[8 + m], quads[12 + m]);
            let high2 = _mm512_shuffle_i32x4::<0xee>(quads[8 + m], quads[12 + m]);
            let block = [
                _mm512_shuffle_i32x4::<0x88>(low, low2),
                _mm512_shuffle_i32x4::<0xdd>(low, low2),
                _mm512_shuffle_i32x4::<0x88>(high, high2),
                _mm512_shuffle_i32x4::<0xdd>(high, high2),
            ];
            for (c, words) in block.into_iter().enumerate() {
                // SAFETY: `blocks` is 1 KiB: sixteen blocks of 64 bytes.
                unsafe { _mm512_storeu_si512(out.add(4 * c + m), words) };
            }
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
    pub unsafe fn blocks_avx2(stream: &Keystream, blocks: &mut Blocks) {
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
            let rows: [__m256i; 16] = std::array::from_fn(|i| _mm256_add_epi32(x[i], init[i]));
            // Rows to blocks: two 8 × 8 transposes (words 0..7, then 8..15).
            let out = blocks.as_mut_ptr().cast::<__m256i>();
            for half in 0..2 {
                let r = &rows[8 * half..8 * half + 8];
                let pairs = [
                    _mm256_unpacklo_epi32(r[0], r[1]),
                    _mm256_unpackhi_epi32(r[0], r[1]),
                    _mm256_unpacklo_epi32(r[2], r[3]),
                    _mm256_unpackhi_epi32(r[2], r[3]),
                    _mm256_unpacklo_epi32(r[4], r[5]),
                    _mm256_unpackhi_epi32(r[4], r[5]),
                    _mm256_unpacklo_epi32(r[6], r[7]),
                    _mm256_unpackhi_epi32(r[6], r[7]),
                ];
                // `quads[4 * g + m]`: in its 128-bit half `h`, words 4g..4g + 3 (of this
                // half's eight) of block 4h + m.
                let quads = [
                    _mm256_unpacklo_epi64(pairs[0], pairs[2]),
                    _mm256_unpackhi_epi64(pairs[0], pairs[2]),
                    _mm256_unpacklo_epi64(pairs[1], pairs[3]),
                    _mm256_unpackhi_epi64(pairs[1], pairs[3]),
                    _mm256_unpacklo_epi64(pairs[4], pairs[6]),
                    _mm256_unpackhi_epi64(pairs[4], pairs[6]),
                    _mm256_unpacklo_epi64(pairs[5], pairs[7]),
                    _mm256_unpackhi_epi64(pairs[5], pairs[7]),
                ];
                for m in 0..4 {
                    let block_m = _mm256_permute2x128_si256::<0x20>(quads[m], quads[4 + m]);
                    let block_4m = _mm256_permute2x128_si256::<0x31>(quads[m], quads[4 + m]);
                    // SAFETY: `blocks` is 1 KiB: sixteen blocks of two 32-byte halves.
                    unsafe {
                        _mm256_storeu_si256(out.add(2 * (first + m) + half), block_m);
                        _mm256_storeu_si256(out.add(2 * (first + 4 + m) + half), block_4m);
                    }
                }
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
