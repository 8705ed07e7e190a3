//! The set of visited states' fingerprints, shared by the search threads.
//!
//! A fingerprint is a `u64` (never 0: the empty slot). The set is one open-addressing table
//! (linear probing) of atomic slots: an insert reads slots and, when the fingerprint is new,
//! claims an empty slot with one compare-and-swap. No lock and no counter is written per
//! insert, so two threads inserting at once do not pass a cache line back and forth (only
//! the slots themselves, and two threads rarely want the same slot at the same time).
//!
//! The table doubles when it is two-thirds full. To know when without a shared counter per
//! insert, a thread inserts through an [`Inserter`]: it holds a read guard of the table and
//! a *budget*, a number of new fingerprints it reserved at once (one atomic add for up to
//! [`CHUNK`] of them). The reservations never exceed the table's limit, so the table never
//! fills; a thread that finds nothing left to reserve lets go of its guard, takes the write
//! lock once every other reader has let go too, and doubles the table. A thread lets go when
//! its budget is spent and nothing is left to reserve, and before it waits for anything (the
//! search releases its inserter before waiting for work). Huge pages where the kernel allows;
//! a doubling gives the old slots' memory back as it copies them. About 8–16 bytes per state.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{RwLock, RwLockReadGuard, TryLockError};

/// The initial number of slots.
const SLOTS_MIN: usize = 1 << 12;
/// The most new fingerprints an [`Inserter`] reserves at once.
pub const CHUNK: usize = 1 << 12;

struct Table {
    slots: Box<[AtomicU64]>,
    mask: usize,
}

impl Table {
    fn with_slots(count: usize) -> Table {
        debug_assert!(count.is_power_of_two());
        // Zeroed by the allocator: a large table comes as fresh pages that the kernel fills
        // on first touch, so a doubling does not make the whole new table resident before
        // the old one is released.
        // SAFETY: all-zero bytes are a valid `AtomicU64` (it has `u64`'s bit validity).
        let mut slots = unsafe { Box::<[AtomicU64]>::new_zeroed_slice(count).assume_init() };
        huge_pages(&mut slots);
        Table {
            slots,
            mask: count - 1,
        }
    }

    /// The most fingerprints the table may hold: two thirds of its slots.
    fn limit(&self) -> usize {
        self.slots.len() / 3 * 2
    }

    /// Inserts `fp`; returns whether it was new. The table must have an empty slot.
    #[inline]
    fn place(&self, fp: u64) -> bool {
        let mut index = (fp as usize) & self.mask;
        loop {
            let slot = &self.slots[index];
            match slot.load(Ordering::Relaxed) {
                0 => match slot.compare_exchange(0, fp, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => return true,
                    // Another thread took the slot: read it again.
                    Err(_) => continue,
                },
                existing if existing == fp => return false,
                _ => index = (index + 1) & self.mask,
            }
        }
    }

    fn contains(&self, fp: u64) -> bool {
        let mut index = (fp as usize) & self.mask;
        loop {
            match self.slots[index].load(Ordering::Relaxed) {
                0 => return false,
                existing if existing == fp => return true,
                _ => index = (index + 1) & self.mask,
            }
        }
    }

    /// A table of twice the slots with the same fingerprints. The old slots' memory goes
    /// back to the kernel as they are copied, so that a doubling needs the new table and
    /// little more, not both tables at once.
    fn doubled(&mut self) -> Table {
        let bigger = Table::with_slots(self.slots.len() * 2);
        // Old slots in order: their fingerprints land in nearly sequential new slots.
        for chunk in self.slots.chunks_mut(RELEASE_SLOTS) {
            for slot in chunk.iter_mut() {
                let fp = *slot.get_mut();
                if fp != 0 {
                    bigger.place(fp);
                }
            }
            release(chunk);
        }
        bigger
    }
}

/// Asks the kernel to back `slots`' allocation (not yet touched) with huge pages: a lookup
/// is a random access into the whole table, and with 4 KiB pages almost every one misses
/// the translation cache too. A hint: nothing changes if the kernel declines.
fn huge_pages<T>(slots: &mut [T]) {
    const HUGE_PAGE: usize = 2 << 20;
    let bytes = std::mem::size_of_val(slots);
    if bytes < 2 * HUGE_PAGE {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        // madvise wants a page-aligned start: the first whole huge page of the allocation.
        let start = slots.as_mut_ptr() as usize;
        let aligned = start.next_multiple_of(HUGE_PAGE);
        let length = (start + bytes - aligned) / HUGE_PAGE * HUGE_PAGE;
        // SAFETY: the range lies inside the slice's own allocation; MADV_HUGEPAGE changes
        // how the kernel backs it, never its contents.
        unsafe {
            libc::madvise(aligned as *mut libc::c_void, length, libc::MADV_HUGEPAGE);
        }
    }
}

/// Slots copied between two releases of old slots' memory in a doubling (2 MiB).
const RELEASE_SLOTS: usize = (2 << 20) / 8;

/// Gives the whole pages inside `slots` back to the kernel: their contents are no longer
/// needed (the table they belong to is dropped next), and they read as zeros if read again.
/// Nothing happens if the kernel declines.
fn release(slots: &mut [AtomicU64]) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let start = slots.as_mut_ptr() as usize;
        let end = start + std::mem::size_of_val(slots);
        let (first, last) = (start.next_multiple_of(PAGE), end / PAGE * PAGE);
        if last > first {
            // SAFETY: the range is whole pages strictly inside the slots' own allocation,
            // which this thread holds exclusively (the table's write lock) and which holds
            // nothing but slots; MADV_DONTNEED on private anonymous memory leaves it mapped
            // and reading as zeros, and nothing reads these slots again before the
            // allocation is freed.
            unsafe {
                libc::madvise(
                    first as *mut libc::c_void,
                    last - first,
                    libc::MADV_DONTNEED,
                );
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = slots;
}

/// A concurrent set of fingerprints (see the module documentation).
pub struct FingerprintSet {
    table: RwLock<Table>,
    /// Fingerprints inserted plus the budgets inserters hold; never above the table's limit.
    reserved: AtomicUsize,
    /// The table's limit (written under the write lock; read without it by a thread waiting
    /// to double the table).
    limit: AtomicUsize,
}

impl Default for FingerprintSet {
    fn default() -> Self {
        FingerprintSet::new()
    }
}

impl FingerprintSet {
    /// An empty set.
    pub fn new() -> FingerprintSet {
        let table = Table::with_slots(SLOTS_MIN);
        FingerprintSet {
            limit: AtomicUsize::new(table.limit()),
            table: RwLock::new(table),
            reserved: AtomicUsize::new(0),
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, Table> {
        self.table.read().unwrap_or_else(|p| p.into_inner())
    }

    /// A thread's way to insert (see the module documentation).
    pub fn inserter(&self) -> Inserter<'_> {
        Inserter {
            set: self,
            guard: None,
            budget: 0,
        }
    }

    /// Inserts `fp` (not 0); returns whether it was not in the set before. For a few inserts:
    /// many go faster through one [`FingerprintSet::inserter`]. Not while this thread's own
    /// [`Inserter`] holds the table: a doubling would wait for it forever.
    pub fn insert(&self, fp: u64) -> bool {
        self.inserter().insert(fp)
    }

    /// Reserves up to `wanted` new fingerprints under `table` (at least 1); returns how many,
    /// 0 when the table is at its limit.
    fn reserve(&self, table: &Table, wanted: usize) -> usize {
        let limit = table.limit();
        let mut reserved = self.reserved.load(Ordering::Relaxed);
        loop {
            let free = limit.saturating_sub(reserved);
            if free == 0 {
                return 0;
            }
            // Never more than an eighth of what is left: near the limit the reservations
            // shrink, so that one thread's unused budget does not force an early doubling.
            let take = wanted.min(free / 8).max(1);
            match self.reserved.compare_exchange_weak(
                reserved,
                reserved + take,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return take,
                Err(now) => reserved = now,
            }
        }
    }

    /// Doubles the table if it is still at its limit, once every other inserter has let go
    /// of it; returns early when another thread doubled it meanwhile. It does not queue for
    /// the write lock: a queued writer can wait forever behind a thread that doubles the
    /// table, lets it go and reads it again before the writer wakes. Instead it asks again
    /// until the others, whose budgets the limit bounds, have spent them or gone idle.
    #[cold]
    fn grow(&self) {
        loop {
            if self.reserved.load(Ordering::Relaxed) < self.limit.load(Ordering::Relaxed) {
                return;
            }
            let mut table = match self.table.try_write() {
                Ok(table) => table,
                Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
                Err(TryLockError::WouldBlock) => {
                    std::thread::yield_now();
                    continue;
                }
            };
            if self.reserved.load(Ordering::Relaxed) >= table.limit() {
                *table = table.doubled();
                self.limit.store(table.limit(), Ordering::Relaxed);
            }
            return;
        }
    }

    /// Whether `fp` is in the set.
    pub fn contains(&self, fp: u64) -> bool {
        self.read().contains(fp)
    }

    /// The number of fingerprints in the set (exact when no inserter holds a budget).
    pub fn len(&self) -> usize {
        self.reserved.load(Ordering::Relaxed)
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the set holds.
    pub fn bytes(&self) -> usize {
        self.read().slots.len() * 8
    }
}

/// One thread's inserts into a [`FingerprintSet`]: it holds the table's read guard and a
/// budget of new fingerprints between inserts (see the module documentation). Let it go with
/// [`Inserter::release`] (or drop it) before waiting for anything another thread does.
pub struct Inserter<'a> {
    set: &'a FingerprintSet,
    guard: Option<RwLockReadGuard<'a, Table>>,
    /// New fingerprints this inserter may still add (reserved in `set.reserved`).
    budget: usize,
}

impl Inserter<'_> {
    /// Inserts `fp` (not 0); returns whether it was not in the set before.
    #[inline]
    pub fn insert(&mut self, fp: u64) -> bool {
        debug_assert_ne!(fp, 0, "0 marks an empty slot");
        if self.budget == 0 {
            self.refill();
        }
        let table = self
            .guard
            .as_ref()
            .expect("a refilled inserter holds the table");
        let new = table.place(fp);
        self.budget -= usize::from(new);
        new
    }

    /// Whether `fp` is in the set (after a first insert: before it, nothing is).
    #[inline]
    pub fn contains(&self, fp: u64) -> bool {
        self.guard.as_ref().is_some_and(|table| table.contains(fp))
    }

    /// Asks the processor to start loading the slot a lookup of `fp` reads first, so that an
    /// [`Inserter::insert`] of it soon after finds it in the cache. A hint: it changes no
    /// result (and does nothing before the first insert).
    #[inline]
    pub fn prefetch(&self, fp: u64) {
        let Some(table) = self.guard.as_ref() else {
            return;
        };
        let slot = &table.slots[(fp as usize) & table.mask];
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch reads nothing into the program and never faults; the address is
        // a live slot's.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                slot.as_ptr() as *const i8
            );
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = slot;
    }

    /// Lets the table go and gives back the unused budget.
    pub fn release(&mut self) {
        self.set.reserved.fetch_sub(self.budget, Ordering::Relaxed);
        self.budget = 0;
        self.guard = None;
    }

    /// Gets a budget, doubling the table first when it is at its limit.
    #[cold]
    fn refill(&mut self) {
        loop {
            let guard = self.guard.take().unwrap_or_else(|| self.set.read());
            let budget = self.set.reserve(&guard, CHUNK);
            if budget > 0 {
                self.budget = budget;
                self.guard = Some(guard);
                return;
            }
            drop(guard);
            self.set.grow();
        }
    }
}

impl Drop for Inserter<'_> {
    fn drop(&mut self) {
        self.release();
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
        let capacity = (self.slots.len() * 2).max(SLOTS_MIN);
        // SAFETY: all-zero bytes are a valid `(u64, u32)` (padding may hold anything).
        let mut slots = unsafe { Box::<[(u64, u32)]>::new_zeroed_slice(capacity).assume_init() };
        huge_pages(&mut slots);
        let old = std::mem::replace(&mut self.slots, slots.into_vec());
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
