//! The set of visited states' fingerprints, shared by the search threads.
//!
//! A fingerprint is a `u64` (never 0: the empty slot). The set is split into shards by the
//! fingerprint's top bits; each shard is an open-addressing table (linear probing) behind its
//! own lock, padded to a cache line, so two threads rarely touch the same lock and an insert
//! costs one uncontended lock and, usually, one cache miss. A shard doubles when it is
//! two-thirds full. About 8–16 bytes per state.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

const SHARD_BITS: u32 = 8;
const SHARDS: usize = 1 << SHARD_BITS;
const SHARD_SLOTS_MIN: usize = 1 << 10;

#[derive(Default)]
struct Shard {
    slots: Vec<u64>,
    len: usize,
}

impl Shard {
    /// Inserts `fp`; returns whether it was new.
    fn insert(&mut self, fp: u64) -> bool {
        if (self.len + 1) * 3 > self.slots.len() * 2 {
            self.grow();
        }
        if Shard::place(&mut self.slots, fp) {
            self.len += 1;
            true
        } else {
            false
        }
    }

    fn place(slots: &mut [u64], fp: u64) -> bool {
        let mask = slots.len() - 1;
        let mut index = (fp as usize) & mask;
        loop {
            match slots[index] {
                0 => {
                    slots[index] = fp;
                    return true;
                }
                existing if existing == fp => return false,
                _ => index = (index + 1) & mask,
            }
        }
    }

    fn grow(&mut self) {
        let capacity = (self.slots.len() * 2).max(SHARD_SLOTS_MIN);
        let mut slots = vec![0u64; capacity];
        for &fp in self.slots.iter().filter(|&&fp| fp != 0) {
            Shard::place(&mut slots, fp);
        }
        self.slots = slots;
    }

    fn contains(&self, fp: u64) -> bool {
        if self.slots.is_empty() {
            return false;
        }
        let mask = self.slots.len() - 1;
        let mut index = (fp as usize) & mask;
        loop {
            match self.slots[index] {
                0 => return false,
                existing if existing == fp => return true,
                _ => index = (index + 1) & mask,
            }
        }
    }
}

/// A shard on its own cache line, with where its slots are for [`FingerprintSet::prefetch`]
/// (read without the lock: a stale value costs a useless prefetch, nothing else).
#[repr(align(128))]
#[derive(Default)]
struct Padded {
    shard: Mutex<Shard>,
    /// The address of the shard's slots.
    base: AtomicUsize,
    /// The number of slots minus one (0: no slots yet).
    mask: AtomicUsize,
}

/// A concurrent set of fingerprints (see the module documentation).
pub struct FingerprintSet {
    shards: Box<[Padded]>,
}

impl Default for FingerprintSet {
    fn default() -> Self {
        FingerprintSet::new()
    }
}

impl FingerprintSet {
    /// An empty set.
    pub fn new() -> FingerprintSet {
        FingerprintSet {
            shards: (0..SHARDS).map(|_| Padded::default()).collect(),
        }
    }

    fn padded(&self, fp: u64) -> &Padded {
        &self.shards[(fp >> (64 - SHARD_BITS)) as usize]
    }

    fn shard(&self, fp: u64) -> std::sync::MutexGuard<'_, Shard> {
        Self::lock(self.padded(fp))
    }

    fn lock(padded: &Padded) -> std::sync::MutexGuard<'_, Shard> {
        padded
            .shard
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Inserts `fp` (not 0); returns whether it was not in the set before.
    #[inline]
    pub fn insert(&self, fp: u64) -> bool {
        debug_assert_ne!(fp, 0, "0 marks an empty slot");
        let padded = self.padded(fp);
        let mut shard = Self::lock(padded);
        let new = shard.insert(fp);
        if shard.slots.len() - 1 != padded.mask.load(Ordering::Relaxed) {
            padded
                .base
                .store(shard.slots.as_ptr() as usize, Ordering::Relaxed);
            padded.mask.store(shard.slots.len() - 1, Ordering::Relaxed);
        }
        new
    }

    /// Asks the processor to start loading the slot a lookup of `fp` reads first, so that an
    /// [`FingerprintSet::insert`] of it soon after finds it in the cache. A hint: it changes
    /// no result.
    #[inline]
    pub fn prefetch(&self, fp: u64) {
        let padded = self.padded(fp);
        let mask = padded.mask.load(Ordering::Relaxed);
        if mask == 0 {
            return;
        }
        let address = padded.base.load(Ordering::Relaxed) + ((fp as usize) & mask) * 8;
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch reads nothing into the program and never faults, whatever the
        // address (a stale one, of slots since freed, only wastes the hint).
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                address as *const i8,
            );
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = address;
    }

    /// Whether `fp` is in the set.
    pub fn contains(&self, fp: u64) -> bool {
        self.shard(fp).contains(fp)
    }

    /// The number of fingerprints in the set.
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.shard.lock().map_or(0, |s| s.len))
            .sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the set holds.
    pub fn bytes(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.shard.lock().map_or(0, |s| s.slots.len() * 8))
            .sum()
    }
}

/// A single-threaded map from fingerprint (not 0) to a dense id, by open addressing: the
/// liveness search's node table.
#[derive(Default)]
pub struct FingerprintMap {
    slots: Vec<(u64, u32)>,
    len: usize,
}

impl FingerprintMap {
    /// The id of `fp`, inserting it with id `len()` when absent; and whether it was new.
    pub fn id_or_insert(&mut self, fp: u64) -> (u32, bool) {
        debug_assert_ne!(fp, 0, "0 marks an empty slot");
        if (self.len + 1) * 3 > self.slots.len() * 2 {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut index = (fp as usize) & mask;
        loop {
            match self.slots[index] {
                (0, _) => {
                    let id = u32::try_from(self.len).expect("fewer than 2^32 states");
                    self.slots[index] = (fp, id);
                    self.len += 1;
                    return (id, true);
                }
                (existing, id) if existing == fp => return (id, false),
                _ => index = (index + 1) & mask,
            }
        }
    }

    fn grow(&mut self) {
        let capacity = (self.slots.len() * 2).max(SHARD_SLOTS_MIN);
        let old = std::mem::replace(&mut self.slots, vec![(0, 0); capacity]);
        let mask = capacity - 1;
        for (fp, id) in old.into_iter().filter(|&(fp, _)| fp != 0) {
            let mut index = (fp as usize) & mask;
            while self.slots[index].0 != 0 {
                index = (index + 1) & mask;
            }
            self.slots[index] = (fp, id);
        }
    }

    /// The number of ids handed out.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes the map holds.
    pub fn bytes(&self) -> usize {
        self.slots.len() * std::mem::size_of::<(u64, u32)>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserts_report_new_fingerprints_once_across_growth() {
        let set = FingerprintSet::new();
        let fp = |i: u64| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1).rotate_left(17);
        for i in 0..100_000 {
            assert!(set.insert(fp(i)), "{i}");
        }
        for i in 0..100_000 {
            assert!(!set.insert(fp(i)), "{i}");
            assert!(set.contains(fp(i)));
        }
        assert!(!set.contains(fp(100_001)));
        assert_eq!(set.len(), 100_000);
    }

    #[test]
    fn the_map_hands_out_dense_ids_in_insertion_order() {
        let mut map = FingerprintMap::default();
        for i in 1..5_000u64 {
            assert_eq!(map.id_or_insert(i * 7919), ((i - 1) as u32, true));
        }
        for i in 1..5_000u64 {
            assert_eq!(map.id_or_insert(i * 7919), ((i - 1) as u32, false));
        }
        assert_eq!(map.len(), 4_999);
    }
}
