//! The broker's injected clock: a [`ManualClock`] for tests and engines, a [`MonotonicClock`]
//! for embedding in a real process.

use crate::sync::{AtomicU64, Ordering};
use leasehold_model::Ms;

/// Where the broker reads `now` when an operation does not pass it explicitly.
pub trait Clock: Send + Sync {
    /// Milliseconds on this clock. Must never go backwards.
    fn now_ms(&self) -> Ms;
}

/// A clock that moves only when told to: tests and simulators own time.
#[derive(Debug)]
pub struct ManualClock {
    now_ms: AtomicU64,
}

impl ManualClock {
    /// A clock showing `now_ms`.
    pub fn new(now_ms: Ms) -> ManualClock {
        ManualClock {
            now_ms: AtomicU64::new(now_ms),
        }
    }

    /// Moves the clock forward by `delta_ms`; returns the new time.
    pub fn advance(&self, delta_ms: Ms) -> Ms {
        self.now_ms.fetch_add(delta_ms, Ordering::SeqCst) + delta_ms
    }

    /// Sets the clock to `now_ms`, which must not be earlier than the current time.
    ///
    /// # Panics
    /// If `now_ms` is earlier than the clock's current time (time never goes backwards).
    pub fn set(&self, now_ms: Ms) {
        let previous = self.now_ms.fetch_max(now_ms, Ordering::SeqCst);
        assert!(previous <= now_ms, "a clock never goes backwards");
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> Ms {
        self.now_ms.load(Ordering::SeqCst)
    }
}

/// Milliseconds elapsed since the clock was created, from the operating system's monotonic
/// clock. For embedding the broker in a real process; never used by the simulator.
#[derive(Debug)]
pub struct MonotonicClock {
    origin: std::time::Instant,
}

impl MonotonicClock {
    /// A clock starting at 0 now.
    pub fn new() -> MonotonicClock {
        MonotonicClock {
            origin: std::time::Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        MonotonicClock::new()
    }
}

impl Clock for MonotonicClock {
    fn now_ms(&self) -> Ms {
        u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(Ms::MAX)
    }
}
