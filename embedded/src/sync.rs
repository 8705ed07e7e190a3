//! The only place where the broker's synchronisation primitives are chosen: the standard
//! library's in a normal build, loom's model-checked ones under `--cfg loom`.
//!
//! Everything else in the crate imports atomics, locks and condition variables from here, so the
//! loom suite checks the very code that ships.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64};
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard, RwLock};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64};
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard, RwLock};

pub(crate) use std::sync::atomic::Ordering;

/// Backs off while another thread holds a slot in its short transition state.
///
/// Under loom this yields to the scheduler (loom needs to see the spin to explore the holder's
/// progress); natively it spins briefly and then yields the CPU, because on an oversubscribed
/// machine the holder may be descheduled.
#[inline]
pub(crate) fn backoff(spins: &mut u32) {
    #[cfg(loom)]
    {
        let _ = spins;
        loom::thread::yield_now();
    }
    #[cfg(not(loom))]
    {
        if *spins < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
        *spins = spins.saturating_add(1);
    }
}

/// Locks a mutex; a poisoned lock (a panic while it was held) is still usable because every
/// critical section here leaves the protected value consistent at each step.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
