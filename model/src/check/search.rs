//! The proof search: an exhaustive depth-first search over canonical states, on one or more
//! threads, deduplicated by fingerprint ([`FingerprintSet`]).
//!
//! Each thread keeps its own stack and takes the successors of the state on top. A thread
//! that runs dry announces it is hungry; a thread with a deep enough stack then hands the
//! bottom half of it (the oldest states, whose subtrees are the largest) to a shared pool. The
//! search ends when every thread is hungry and the pool is empty, or when the bound on
//! generated states is reached (then it is *bounded*: nothing unviolated is proven).
//!
//! On every transition the search takes it also checks the ranking function
//! ([`crate::check::rank`]) when the configuration has finite budgets, records the
//! `sometimes` witnesses, and treats a violating state as a leaf. A state with no enabled
//! action is terminal: I6 requires it to be settled.
//!
//! No clock: the caller measures time (the model crate reads none).

use crate::check::fingerprint::{fingerprint, Fingerprinter};
use crate::check::model::{Actions, LeaseModel};
use crate::check::rank::{rank, Rank};
use crate::check::state::{Action, State, Witness};
use crate::check::table::FingerprintSet;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

/// Bounds on a search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Stop (bounded) after about this many generated states.
    pub states_max: u64,
    /// Search threads.
    pub threads: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            states_max: 300_000_000,
            threads: 1,
        }
    }
}

/// Counts of a search, as it goes and at its end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    /// States generated (successors computed, duplicates included).
    pub generated: u64,
    /// Unique states (canonical, up to symmetry when it is on).
    pub unique: u64,
}

/// A callback that sees the counts now and then (from any search thread).
pub type Progress<'a> = &'a (dyn Fn(Counts) + Sync);

/// A transition on which the ranking function did not decrease.
#[derive(Clone, Debug)]
pub struct RankFailure {
    /// The state the transition left.
    pub from: State,
    /// The action.
    pub action: Action,
    /// Its rank.
    pub from_rank: Rank,
    /// The successor's rank.
    pub to_rank: Rank,
}

/// What the proof search found.
#[derive(Clone, Debug, Default)]
pub struct Exploration {
    /// Generated and unique states.
    pub counts: Counts,
    /// The longest path of the search tree.
    pub max_depth: u32,
    /// Terminal states (no action enabled, no invariant broken).
    pub terminal: u64,
    /// Bits (`1 << invariant as u8`) of the safety invariants some reachable state breaks.
    pub violated: u8,
    /// Some terminal state is not settled (I6 broken, with finite budgets).
    pub unsettled_terminal: bool,
    /// [`crate::check::state::witness`] bits seen on some transition.
    pub witnessed: Witness,
    /// The first transition found that did not decrease the rank (when checked).
    pub rank_failure: Option<Box<RankFailure>>,
    /// `Some(states_max)` when the search stopped at its bound.
    pub bounded: Option<u64>,
    /// Bytes of the fingerprint set at the end.
    pub table_bytes: usize,
}

impl Exploration {
    fn merge(&mut self, other: Exploration) {
        self.counts.generated += other.counts.generated;
        self.counts.unique += other.counts.unique;
        self.max_depth = self.max_depth.max(other.max_depth);
        self.terminal += other.terminal;
        self.violated |= other.violated;
        self.unsettled_terminal |= other.unsettled_terminal;
        self.witnessed |= other.witnessed;
        if self.rank_failure.is_none() {
            self.rank_failure = other.rank_failure;
        }
    }
}

type Item = (State, u32);

/// Generated states between two updates of the shared counters.
const BATCH: u64 = 1 << 12;
/// A thread shares work only when its stack holds at least this many states.
const SHARE_MIN: usize = 8;

struct Pool {
    chunks: Vec<Vec<Item>>,
    idle: usize,
    done: bool,
}

struct Shared<'a> {
    model: &'a LeaseModel,
    check_rank: bool,
    threads: usize,
    table: FingerprintSet,
    pool: Mutex<Pool>,
    wake: Condvar,
    /// Threads waiting for work, and chunks in the pool (read without the lock).
    hungry: AtomicUsize,
    pooled: AtomicUsize,
    stop: AtomicBool,
    generated: AtomicU64,
    unique: AtomicU64,
    states_max: u64,
    progress: Option<Progress<'a>>,
}

/// Explores every state reachable in `model` (see the module documentation). `check_rank`:
/// assert the ranking function on every transition (finite budgets).
pub fn explore(
    model: &LeaseModel,
    limits: &Limits,
    check_rank: bool,
    progress: Option<Progress<'_>>,
) -> Exploration {
    let threads = limits.threads.max(1);
    let shared = Shared {
        model,
        check_rank,
        threads,
        table: FingerprintSet::new(),
        pool: Mutex::new(Pool {
            chunks: Vec::new(),
            idle: 0,
            done: false,
        }),
        wake: Condvar::new(),
        hungry: AtomicUsize::new(0),
        pooled: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        generated: AtomicU64::new(0),
        unique: AtomicU64::new(1),
        states_max: limits.states_max,
        progress,
    };
    let init = model.init_state(true);
    shared.table.insert(fingerprint(&init));
    let mut total = Exploration {
        counts: Counts {
            generated: 0,
            unique: 1,
        },
        ..Exploration::default()
    };
    let results: Vec<Exploration> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let shared = &shared;
                let start = if thread == 0 {
                    vec![(init.clone(), 0)]
                } else {
                    Vec::new()
                };
                scope.spawn(move || shared.run(start))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a search thread panicked"))
            .collect()
    });
    for result in results {
        total.merge(result);
    }
    if shared.stop.load(Ordering::Relaxed) {
        total.bounded = Some(limits.states_max);
    }
    total.table_bytes = shared.table.bytes();
    total
}

/// A search thread's own storage, reused from state to state.
struct Local {
    /// The depth-first stack.
    stack: Vec<Item>,
    actions: Actions,
    hasher: Fingerprinter,
    /// The successor being computed.
    next: State,
    out: Exploration,
}

impl Shared<'_> {
    fn run(&self, stack: Vec<Item>) -> Exploration {
        let mut local = Local {
            stack,
            actions: Actions::new(),
            hasher: Fingerprinter::default(),
            next: self.model.init_state(true),
            out: Exploration::default(),
        };
        let mut flushed = Counts::default();
        loop {
            while let Some((state, depth)) = local.stack.pop() {
                self.expand(&state, depth, &mut local);
                if local.out.counts.generated - flushed.generated >= BATCH {
                    if self.flush(&mut flushed, local.out.counts) {
                        return local.out;
                    }
                    if local.stack.len() >= SHARE_MIN
                        && self.hungry.load(Ordering::Relaxed) > self.pooled.load(Ordering::Relaxed)
                    {
                        self.share(&mut local.stack);
                    }
                }
            }
            self.flush(&mut flushed, local.out.counts);
            match self.take_work() {
                Some(chunk) => local.stack = chunk,
                None => return local.out,
            }
        }
    }

    /// Adds this thread's new counts to the shared ones; reports progress; returns whether
    /// the search must stop (bound reached).
    fn flush(&self, flushed: &mut Counts, counts: Counts) -> bool {
        let generated = self
            .generated
            .fetch_add(counts.generated - flushed.generated, Ordering::Relaxed)
            + counts.generated
            - flushed.generated;
        let unique = self
            .unique
            .fetch_add(counts.unique - flushed.unique, Ordering::Relaxed)
            + counts.unique
            - flushed.unique;
        *flushed = counts;
        if let Some(progress) = self.progress {
            progress(Counts { generated, unique });
        }
        if generated >= self.states_max && !self.stop.swap(true, Ordering::Relaxed) {
            let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
            pool.done = true;
            self.wake.notify_all();
        }
        self.stop.load(Ordering::Relaxed)
    }

    fn share(&self, local: &mut Vec<Item>) {
        let half = local.len() / 2;
        let chunk: Vec<Item> = local.drain(..half).collect();
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        pool.chunks.push(chunk);
        self.pooled.fetch_add(1, Ordering::Relaxed);
        self.wake.notify_one();
    }

    fn take_work(&self) -> Option<Vec<Item>> {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        pool.idle += 1;
        self.hungry.fetch_add(1, Ordering::Relaxed);
        loop {
            if pool.done {
                return None;
            }
            if let Some(chunk) = pool.chunks.pop() {
                pool.idle -= 1;
                self.hungry.fetch_sub(1, Ordering::Relaxed);
                self.pooled.fetch_sub(1, Ordering::Relaxed);
                return Some(chunk);
            }
            if pool.idle == self.threads {
                pool.done = true;
                self.wake.notify_all();
                return None;
            }
            pool = self.wake.wait(pool).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn expand(&self, state: &State, depth: u32, local: &mut Local) {
        let model = self.model;
        let Local {
            stack,
            actions,
            hasher,
            next,
            out,
        } = local;
        model.actions(state, actions);
        if actions.is_empty() {
            // A terminal state that breaks a safety invariant says nothing about I6.
            if !LeaseModel::violating(state) {
                out.terminal += 1;
                out.unsettled_terminal |= !LeaseModel::settled(state);
            }
            return;
        }
        let from_rank = self.check_rank.then(|| rank(model, state));
        for &action in actions.iter() {
            let witness = model.successor_into(state, action, next);
            out.counts.generated += 1;
            out.witnessed |= witness;
            if let Some(from_rank) = from_rank {
                let to_rank = rank(model, next);
                if to_rank >= from_rank && out.rank_failure.is_none() {
                    out.rank_failure = Some(Box::new(RankFailure {
                        from: state.clone(),
                        action,
                        from_rank,
                        to_rank,
                    }));
                }
            }
            if self.table.insert(hasher.of(&*next)) {
                out.counts.unique += 1;
                out.max_depth = out.max_depth.max(depth + 1);
                out.violated |= LeaseModel::violation_bits(next);
                if !model.is_leaf(next) {
                    stack.push((next.clone(), depth + 1));
                }
            }
        }
    }
}
