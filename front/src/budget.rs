//! A wall-clock budget, and a memory budget, for long work (a campaign, a check): a watcher
//! thread raises a stop flag when the time is spent or the process's resident memory passes the
//! budget, and ends with the work. The clock and the memory decide only when the work stops,
//! never what it does: a stopped search reports what it found as at any bound, where running
//! out of memory would have lost it all.

use crate::Error;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// How often the watcher reads the process's resident memory.
const MEMORY_POLL: Duration = Duration::from_millis(20);

/// Which budget stopped the work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spent {
    /// The wall-clock budget.
    Time,
    /// The memory budget: the process's resident memory passed it.
    Memory,
}

/// Runs `work`, raising `stop` if `budget` (from now) is spent before it returns; returns its
/// result and whether the budget raised `stop`. Without a budget, runs `work` alone.
pub fn within<T>(
    budget: Option<Duration>,
    stop: &AtomicBool,
    work: impl FnOnce() -> T,
) -> (T, bool) {
    let (result, spent) = within_limits(budget, None, stop, work);
    (result, spent == Some(Spent::Time))
}

/// [`within`], with a memory budget too: `stop` is also raised when the process's resident
/// memory passes `memory_bytes` (read every 20 ms; on a system without `/proc/self/status`, the
/// memory budget is never spent). Returns which budget raised `stop`, if one did.
pub fn within_limits<T>(
    time: Option<Duration>,
    memory_bytes: Option<u64>,
    stop: &AtomicBool,
    work: impl FnOnce() -> T,
) -> (T, Option<Spent>) {
    if time.is_none() && memory_bytes.is_none() {
        return (work(), None);
    }
    let deadline = time.and_then(|budget| Instant::now().checked_add(budget));
    let finished = AtomicBool::new(false);
    // 0: nothing spent; 1 + `Spent as u8` otherwise.
    let spent = AtomicU8::new(0);
    let raise = |why: Spent| {
        spent.store(1 + why as u8, Ordering::Release);
        stop.store(true, Ordering::Release);
    };
    let result = std::thread::scope(|scope| {
        let watcher = scope.spawn(|| {
            while !finished.load(Ordering::Acquire) {
                let now = Instant::now();
                if deadline.is_some_and(|d| d <= now) {
                    raise(Spent::Time);
                    break;
                }
                if let (Some(max), Some(used)) = (memory_bytes, resident_bytes()) {
                    if used > max {
                        raise(Spent::Memory);
                        break;
                    }
                }
                let left = deadline.map(|d| d.saturating_duration_since(now));
                match (left, memory_bytes) {
                    (Some(left), Some(_)) => std::thread::park_timeout(left.min(MEMORY_POLL)),
                    (Some(left), None) => std::thread::park_timeout(left),
                    (None, Some(_)) => std::thread::park_timeout(MEMORY_POLL),
                    // A time budget beyond what the clock can hold is never spent.
                    (None, None) => std::thread::park(),
                }
            }
        });
        let result = work();
        finished.store(true, Ordering::Release);
        watcher.thread().unpark();
        result
    });
    let spent = match spent.load(Ordering::Acquire) {
        0 => None,
        1 => Some(Spent::Time),
        _ => Some(Spent::Memory),
    };
    (result, spent)
}

/// The process's resident memory in bytes (`VmRSS` in `/proc/self/status`), where the system
/// tells it.
pub fn resident_bytes() -> Option<u64> {
    kib_field(
        &std::fs::read_to_string("/proc/self/status").ok()?,
        "VmRSS:",
    )
}

/// The memory the system can still give without swapping (`MemAvailable` in `/proc/meminfo`),
/// in bytes, where the system tells it.
pub fn available_bytes() -> Option<u64> {
    kib_field(
        &std::fs::read_to_string("/proc/meminfo").ok()?,
        "MemAvailable:",
    )
}

/// The `NAME:  N kB` line of a `/proc` file, in bytes.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// Parses `--for`'s duration (of `sim` and `check`).
pub fn parse_budget(text: &str) -> Result<Duration, Error> {
    let budget = humantime::parse_duration(text).map_err(|e| {
        Error(format!(
            "--for: '{text}' is not a duration such as 90s, 10m or 2h30m ({e})"
        ))
    })?;
    if budget.is_zero() {
        return Err(Error(format!(
            "--for: '{text}' is no time at all; give a budget above zero"
        )));
    }
    Ok(budget)
}

/// A memory budget as `leasehold check --max-memory` reads it: `auto` (80 % of the memory available now, where the system tells it),
/// `none`, or a size (`16GiB`, `512MiB`, `2G`, bytes alone).
pub fn parse_memory_budget(text: &str) -> Result<Option<u64>, Error> {
    match text.trim() {
        "none" => Ok(None),
        "auto" => Ok(available_bytes().map(|b| b / 5 * 4)),
        size => parse_size(size).map(Some).ok_or_else(|| {
            Error(format!(
                "--max-memory {text}: not a size (write e.g. 16GiB, 512MiB, auto or none)"
            ))
        }),
    }
}

/// A size in bytes: a number and an optional binary unit (`16GiB`, `512MiB`, `2G`, `4096`).
fn parse_size(text: &str) -> Option<u64> {
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: u64 = number.parse().ok()?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return None,
    };
    number.checked_mul(1 << shift).filter(|&bytes| bytes > 0)
}

/// `9.6 GiB`, `512.0 MiB`.
pub fn format_bytes(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < units.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", units[unit])
}

/// Why long work stopped before its end, for a report: `time budget 10m spent` when it had a
/// `budget` and no signal stopped it, else `interrupted`.
pub fn stop_reason(budget: Option<Duration>, signalled: bool) -> String {
    match budget {
        Some(budget) if !signalled => {
            format!("time budget {} spent", humantime::format_duration(budget))
        }
        _ => "interrupted".to_string(),
    }
}
