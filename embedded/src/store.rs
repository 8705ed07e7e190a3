//! Append-only storage of slots that never move: segments of doubling size, allocated by the
//! publisher, read without locks.
//!
//! Segment `k` holds `FIRST_EVENTS << k` events, each with one slot per group. A segment pointer
//! is published with a release store before the event count that covers it, so a reader that
//! saw an event (acquire load of the count) finds its segment.

use crate::slot::Slot;
use crate::sync::{AtomicPtr, Ordering};
use leasehold_model::{GroupIx, Seq};

/// Events in the first segment (small under loom to keep each model execution cheap).
#[cfg(not(loom))]
const FIRST_EVENTS: usize = 64;
#[cfg(loom)]
const FIRST_EVENTS: usize = 2;

/// Enough segments for every `Seq` (u32) with either first size.
const SEGMENTS: usize = 32;

const _: () = assert!((FIRST_EVENTS as u128) << SEGMENTS > u32::MAX as u128);

/// The slots of every (group, event).
pub(crate) struct Store {
    group_count: usize,
    segments: Box<[AtomicPtr<Slot>]>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("group_count", &self.group_count)
            .finish_non_exhaustive()
    }
}

/// Segment index and the event's offset inside it, for a 0-based event index.
pub fn locate(index: usize) -> (usize, usize) {
    let segment = (index / FIRST_EVENTS + 1).ilog2() as usize;
    let start = FIRST_EVENTS * ((1 << segment) - 1);
    (segment, index - start)
}

/// Events in segment `segment`.
pub fn segment_events(segment: usize) -> usize {
    FIRST_EVENTS << segment
}

impl Store {
    pub(crate) fn new(group_count: usize) -> Store {
        let segments = (0..SEGMENTS)
            .map(|_| AtomicPtr::new(std::ptr::null_mut()))
            .collect();
        Store {
            group_count,
            segments,
        }
    }

    /// Makes sure event `seq` has slots. Called by the only publisher (it holds every group's
    /// write gate), before the event count is raised to `seq`.
    pub(crate) fn reserve(&self, seq: Seq) {
        let (segment, _) = locate(seq as usize - 1);
        if self.segments[segment].load(Ordering::SeqCst).is_null() {
            let slots: Box<[Slot]> = (0..segment_events(segment) * self.group_count)
                .map(|_| Slot::new())
                .collect();
            let pointer = Box::into_raw(slots) as *mut Slot;
            self.segments[segment].store(pointer, Ordering::SeqCst);
        }
    }

    /// The slot of (group, seq). The caller has checked `1 <= seq <= event count` with an
    /// acquire load of the count and `group < group_count`.
    pub(crate) fn slot(&self, group: GroupIx, seq: Seq) -> &Slot {
        debug_assert!(group < self.group_count && seq >= 1);
        let (segment, offset) = locate(seq as usize - 1);
        let pointer = self.segments[segment].load(Ordering::SeqCst);
        assert!(
            !pointer.is_null(),
            "event {seq} is published, so its segment exists"
        );
        // SAFETY: the pointer came from `Box::into_raw` of a slice of exactly
        // `segment_events(segment) * group_count` slots, is never freed before `Store` is
        // dropped (which needs `&mut self`), and the index is in bounds by `locate`.
        unsafe { &*pointer.add(offset * self.group_count + group) }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        for (segment, pointer) in self.segments.iter().enumerate() {
            let pointer = pointer.load(Ordering::SeqCst);
            if !pointer.is_null() {
                let len = segment_events(segment) * self.group_count;
                // SAFETY: created by `Box::into_raw` of a boxed slice of `len` slots in
                // `reserve`, dropped once here.
                drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(pointer, len)) });
            }
        }
    }
}
