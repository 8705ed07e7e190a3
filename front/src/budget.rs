//! A wall-clock budget for long work (a campaign, a check): a timer thread raises a stop flag
//! when the budget is spent, and ends with the work. The clock decides only when the work
//! stops, never what it does.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Runs `work`, raising `stop` if `budget` (from now) is spent before it returns; returns its
/// result and whether the budget raised `stop`. Without a budget, runs `work` alone.
pub fn within<T>(
    budget: Option<Duration>,
    stop: &AtomicBool,
    work: impl FnOnce() -> T,
) -> (T, bool) {
    let Some(budget) = budget else {
        return (work(), false);
    };
    let deadline = Instant::now().checked_add(budget);
    let finished = AtomicBool::new(false);
    let spent = AtomicBool::new(false);
    let result = std::thread::scope(|scope| {
        let timer = scope.spawn(|| {
            while !finished.load(Ordering::Acquire) {
                let Some(left) = deadline.map(|d| d.saturating_duration_since(Instant::now()))
                else {
                    // Beyond what the clock can hold: the budget is never spent.
                    std::thread::park();
                    continue;
                };
                if left.is_zero() {
                    spent.store(true, Ordering::Release);
                    stop.store(true, Ordering::Release);
                    break;
                }
                std::thread::park_timeout(left);
            }
        });
        let result = work();
        finished.store(true, Ordering::Release);
        timer.thread().unpark();
        result
    });
    (result, spent.load(Ordering::Acquire))
}
