//! The trace hash: a rolling hash of the engine's event stream, word by word.
//!
//! Each [`crate::event::Event`] is encoded as a few 64-bit words ([`Event::hash_into`]) and
//! folded in as it happens, so a run keeps eight bytes of state instead of its story. The
//! function is written out here (no `std` hasher, whose output may change between Rust
//! releases): per word, `h = (h.rotate_left(5) ^ word) * K` with FxHash's odd constant `K`;
//! the reported value passes the state through SplitMix64's finaliser so that every input bit
//! reaches every output bit. It detects divergence; it is not meant to resist an adversary.
//!
//! [`Event::hash_into`]: crate::event::Event::hash_into

/// FxHash's multiplier (an odd 64-bit constant with well-spread bits).
const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;

/// The initial state (an arbitrary non-zero constant: the FNV-1a 64 offset basis).
const SEED: u64 = 0xcbf2_9ce4_8422_2325;

/// A rolling 64-bit hash of words and texts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceHasher {
    state: u64,
    words: u64,
}

impl Default for TraceHasher {
    fn default() -> TraceHasher {
        TraceHasher::new()
    }
}

impl TraceHasher {
    /// A hasher that has seen nothing.
    pub const fn new() -> TraceHasher {
        TraceHasher {
            state: SEED,
            words: 0,
        }
    }

    /// Folds in one word.
    #[inline]
    pub fn word(&mut self, word: u64) {
        self.state = (self.state.rotate_left(5) ^ word).wrapping_mul(K);
        // No run folds 2^64 words; wrapping spares the hot path an overflow check (and lets
        // the state stay in a register across an event's words).
        self.words = self.words.wrapping_add(1);
    }

    /// Folds in a text: its length, then its bytes eight at a time (little-endian, the last
    /// word padded with zeros).
    pub fn text(&mut self, text: &str) {
        let bytes = text.as_bytes();
        self.word(bytes.len() as u64);
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.word(u64::from_le_bytes(word));
        }
    }

    /// Words folded in so far.
    pub fn words(&self) -> u64 {
        self.words
    }

    /// The hash of everything folded in so far.
    pub fn finish(&self) -> u64 {
        // SplitMix64's finaliser.
        let mut z = self.state ^ self.words.wrapping_mul(K);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}
