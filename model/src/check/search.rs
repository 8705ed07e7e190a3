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

use crate::broker::Broker;
use crate::check::checked::CheckedBroker;
use crate::check::config::{BudgetCodes, Budgets};
use crate::check::fingerprint::{coded, fingerprint, Fingerprinter};
use crate::check::model::{Actions, LeaseModel};
use crate::check::rank::{rank, Rank};
use crate::check::state::{Action, State, Witness};
use crate::check::table::{FingerprintSet, Inserter};
use std::hash::Hasher;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// Bounds on a search.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Stop (bounded) after about this many generated states.
    pub states_max: u64,
    /// Search threads.
    pub threads: usize,
    /// Stop (bounded, [`Exploration::interrupted`]) once this flag is raised: a signal, a
    /// time budget, anything the caller watches.
    pub interrupt: Interrupt,
    /// Stop at the first state found that breaks a safety invariant
    /// ([`Exploration::stopped_at_violation`]): a counterexample in the time the depth-first
    /// search takes to reach one, the other invariants not proven (as at a bound). Leasehold's
    /// search with finite budgets only.
    pub first_violation: bool,
}

/// A flag that stops a search when raised (read every few thousand states). The search stops
/// as at its bound: what it found stands, and what it did not find is not proven.
#[derive(Clone, Debug, Default)]
pub struct Interrupt(Option<Arc<AtomicBool>>);

impl Interrupt {
    /// Never raised.
    pub const NONE: Interrupt = Interrupt(None);

    /// Raised when `flag` is set (by a signal handler, a timer, another thread).
    pub fn on(flag: Arc<AtomicBool>) -> Interrupt {
        Interrupt(Some(flag))
    }

    /// Whether it has been raised.
    #[inline]
    pub fn raised(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|flag| flag.load(Ordering::Relaxed))
    }
}

impl PartialEq for Interrupt {
    /// The same flag, or none.
    fn eq(&self, other: &Interrupt) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (a, b) => a.is_none() && b.is_none(),
        }
    }
}

impl Eq for Interrupt {}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            states_max: 300_000_000,
            threads: 1,
            interrupt: Interrupt::NONE,
            first_violation: false,
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
pub struct RankFailure<B = Broker> {
    /// The state the transition left.
    pub from: State<B>,
    /// The action.
    pub action: Action,
    /// Its rank.
    pub from_rank: Rank,
    /// The successor's rank.
    pub to_rank: Rank,
}

/// What the proof search found.
#[derive(Clone, Debug)]
pub struct Exploration<B = Broker> {
    /// Generated and unique states.
    pub counts: Counts,
    /// The longest path of the search tree.
    pub max_depth: u32,
    /// Terminal states (no action enabled, no invariant broken).
    pub terminal: u64,
    /// Bits (`1 << invariant as u8`) of the safety invariants some reachable state breaks.
    pub violated: u8,
    /// States skipped as subsumed by a visited one ([`LeaseModel::with_subsumption`]).
    pub subsumed: u64,
    /// Fingerprints looked up to find a subsuming state (each may collide, as an insert may).
    pub lookups: u64,
    /// Some terminal state is not settled (I6 broken, with finite budgets).
    pub unsettled_terminal: bool,
    /// [`crate::check::state::witness`] bits seen on some transition.
    pub witnessed: Witness,
    /// The first transition found that did not decrease the rank (when checked).
    pub rank_failure: Option<Box<RankFailure<B>>>,
    /// `Some(states_max)` when the search stopped at its bound (or, interrupted, the states
    /// generated by then).
    pub bounded: Option<u64>,
    /// Whether [`Limits::interrupt`] stopped the search.
    pub interrupted: bool,
    /// Whether the search stopped at the first violation ([`Limits::first_violation`]; it is
    /// then bounded: what it did not reach is not proven).
    pub stopped_at_violation: bool,
    /// Bytes of the fingerprint set at the end.
    pub table_bytes: usize,
    /// States generated by each thread (how evenly work was shared).
    pub per_thread: Vec<u64>,
}

impl<B> Default for Exploration<B> {
    fn default() -> Exploration<B> {
        Exploration {
            counts: Counts::default(),
            max_depth: 0,
            terminal: 0,
            subsumed: 0,
            lookups: 0,
            violated: 0,
            unsettled_terminal: false,
            witnessed: 0,
            rank_failure: None,
            bounded: None,
            interrupted: false,
            stopped_at_violation: false,
            table_bytes: 0,
            per_thread: Vec::new(),
        }
    }
}

impl<B> Exploration<B> {
    fn merge(&mut self, other: Exploration<B>) {
        self.per_thread.push(other.counts.generated);
        self.counts.generated += other.counts.generated;
        self.counts.unique += other.counts.unique;
        self.max_depth = self.max_depth.max(other.max_depth);
        self.terminal += other.terminal;
        self.subsumed += other.subsumed;
        self.lookups += other.lookups;
        self.violated |= other.violated;
        self.unsettled_terminal |= other.unsettled_terminal;
        self.witnessed |= other.witnessed;
        if self.rank_failure.is_none() {
            self.rank_failure = other.rank_failure;
        }
    }
}

/// A state on a search stack, boxed: pushing, popping and sharing move a pointer, and a
/// thread recycles the boxes it popped (see `Local::free`).
type Item<B> = (Box<State<B>>, u32);

/// Generated states between two updates of the shared counters.
const BATCH: u64 = 1 << 12;
/// A thread shares work only when its stack holds at least this many states.
const SHARE_MIN: usize = 8;

struct Pool<B> {
    chunks: Vec<Vec<Item<B>>>,
    idle: usize,
    done: bool,
}

struct Shared<'a, B> {
    model: &'a LeaseModel<B>,
    check_rank: bool,
    threads: usize,
    table: FingerprintSet,
    pool: Mutex<Pool<B>>,
    wake: Condvar,
    /// Threads waiting for work, and chunks in the pool (read without the lock).
    hungry: AtomicUsize,
    pooled: AtomicUsize,
    stop: AtomicBool,
    /// [`Limits::first_violation`], and whether a violation raised `stop`.
    first_violation: bool,
    stopped_at_violation: AtomicBool,
    generated: AtomicU64,
    unique: AtomicU64,
    states_max: u64,
    interrupt: &'a Interrupt,
    progress: Option<Progress<'a>>,
}

/// Explores every state reachable in `model` (see the module documentation). `check_rank`:
/// assert the ranking function on every transition (finite budgets).
pub fn explore<B: CheckedBroker>(
    model: &LeaseModel<B>,
    limits: &Limits,
    check_rank: bool,
    progress: Option<Progress<'_>>,
) -> Exploration<B> {
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
        first_violation: limits.first_violation,
        stopped_at_violation: AtomicBool::new(false),
        generated: AtomicU64::new(0),
        unique: AtomicU64::new(1),
        states_max: limits.states_max,
        interrupt: &limits.interrupt,
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
    let results: Vec<Exploration<B>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let shared = &shared;
                let start = if thread == 0 {
                    vec![(Box::new(init.clone()), 0)]
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
    if shared.stopped_at_violation.load(Ordering::Relaxed) {
        total.stopped_at_violation = true;
        total.bounded = Some(total.counts.generated);
    } else if shared.stop.load(Ordering::Relaxed) {
        let generated = total.counts.generated;
        total.interrupted = generated < limits.states_max;
        total.bounded = Some(if total.interrupted {
            generated
        } else {
            limits.states_max
        });
    }
    total.table_bytes = shared.table.bytes();
    total
}

/// A search thread's own storage, reused from state to state.
struct Local<'a, B> {
    /// This thread's inserts into the shared fingerprint set (let go before waiting).
    seen: Inserter<'a>,
    /// The depth-first stack.
    stack: Vec<Item<B>>,
    actions: Actions,
    hasher: Fingerprinter,
    /// The successors of the state being expanded, with their fingerprints; each is pushed
    /// as it is when new.
    batch: Vec<(Box<State<B>>, u64)>,
    /// The same with subsumption on, with their hashers fed all but the budgets.
    subsuming: Vec<(Box<State<B>>, u64, Fingerprinter)>,
    /// Boxes of expanded and of already seen states, for the next successors (boxes, not
    /// states: they move to and from the stack as pointers).
    #[allow(clippy::vec_box)]
    free: Vec<Box<State<B>>>,
    out: Exploration<B>,
}

impl<B: CheckedBroker> Shared<'_, B> {
    fn run(&self, stack: Vec<Item<B>>) -> Exploration<B> {
        let mut local = Local {
            seen: self.table.inserter(),
            stack,
            actions: Actions::new(),
            hasher: Fingerprinter::default(),
            batch: Vec::new(),
            subsuming: Vec::new(),
            free: Vec::new(),
            out: Exploration::default(),
        };
        let mut flushed = Counts::default();
        loop {
            while let Some((state, depth)) = local.stack.pop() {
                self.expand(&state, depth, &mut local);
                local.free.push(state);
                if local.out.counts.generated - flushed.generated >= BATCH
                    && (self.flush(&mut flushed, local.out.counts) || self.interrupted())
                {
                    return local.out;
                }
                // After every expansion, not every batch: a hungry thread waits for this.
                // Two reads of a line that is written only when a thread goes hungry, takes
                // work or adds its counts (once a batch).
                if self.threads > 1
                    && local.stack.len() >= SHARE_MIN
                    && self.hungry.load(Ordering::Relaxed) > self.pooled.load(Ordering::Relaxed)
                {
                    self.share(&mut local.stack);
                }
            }
            self.flush(&mut flushed, local.out.counts);
            // The table may have to grow while this thread waits.
            local.seen.release();
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
        if generated >= self.states_max {
            self.stop_all();
        }
        self.stop.load(Ordering::Relaxed)
    }

    /// A state breaks an invariant: with [`Limits::first_violation`], every thread stops.
    #[inline]
    fn violation_found(&self) {
        if self.first_violation {
            self.stopped_at_violation.store(true, Ordering::Relaxed);
            self.stop_all();
        }
    }

    /// Stops every thread (once).
    fn stop_all(&self) {
        if !self.stop.swap(true, Ordering::Relaxed) {
            let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
            pool.done = true;
            self.wake.notify_all();
        }
    }

    /// Whether the caller's interrupt is raised; stops every thread if so. Asked between two
    /// expansions only (a thread that ran dry has nothing left to cut short).
    fn interrupted(&self) -> bool {
        if self.interrupt.raised() {
            self.stop_all();
            return true;
        }
        false
    }

    fn share(&self, local: &mut Vec<Item<B>>) {
        let half = local.len() / 2;
        let chunk: Vec<Item<B>> = local.drain(..half).collect();
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        pool.chunks.push(chunk);
        self.pooled.fetch_add(1, Ordering::Relaxed);
        self.wake.notify_one();
    }

    fn take_work(&self) -> Option<Vec<Item<B>>> {
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

    fn expand(&self, state: &State<B>, depth: u32, local: &mut Local<B>) {
        let model = self.model;
        let Local {
            seen,
            stack,
            actions,
            hasher,
            batch,
            subsuming,
            free,
            out,
        } = local;
        model.actions(state, actions);
        if actions.is_empty() {
            // A terminal state that breaks a safety invariant says nothing about I6.
            if !LeaseModel::violating(state) {
                out.terminal += 1;
                let unsettled = !LeaseModel::settled(state);
                out.unsettled_terminal |= unsettled;
                if unsettled {
                    // I6 broken: a terminal state short of settled.
                    self.violation_found();
                }
            }
            return;
        }
        let from_rank = self.check_rank.then(|| rank(model, state));
        // Every successor first (its fingerprint's slot is prefetched), then the lookups: the
        // table's cache misses overlap with the successors' computation.
        for &action in actions.iter() {
            let mut next = free
                .pop()
                .unwrap_or_else(|| Box::new(model.init_state(true)));
            let witness = model.successor_into(state, action, &mut next);
            out.counts.generated += 1;
            out.witnessed |= witness;
            if let Some(from_rank) = from_rank {
                let to_rank = rank(model, &next);
                if to_rank >= from_rank && out.rank_failure.is_none() {
                    out.rank_failure = Some(Box::new(RankFailure {
                        from: state.clone(),
                        action,
                        from_rank,
                        to_rank,
                    }));
                }
            }
            if model.subsumption() {
                let core = Fingerprinter::core_of(&*next);
                let fp = match model.budget_codes() {
                    Some(codes) => coded(core.finish(), codes.code(&next.used)),
                    None => core.with_last(next.used.word()),
                };
                seen.prefetch(fp);
                subsuming.push((next, fp, core));
            } else {
                let fp = hasher.of(&*next);
                seen.prefetch(fp);
                batch.push((next, fp));
            }
        }
        for (next, fp) in batch.drain(..) {
            if seen.insert(fp) {
                self.accept(next, depth, stack, free, out);
            } else {
                free.push(next);
            }
        }
        if subsuming.is_empty() {
            return;
        }
        // Successors that used a budget first, below the others: the search meets a state
        // with the fewest budgets used first, so that it subsumes the others. Not when the
        // search stops at the first violation: most bugs need a fault, and this order would
        // put every fault after every fault-free step.
        if !self.first_violation {
            let total = state.used.total();
            subsuming.sort_by_key(|(next, ..)| std::cmp::Reverse(next.used.total() > total));
        }
        for (next, fp, core) in subsuming.drain(..) {
            if !seen.insert(fp) {
                free.push(next);
            } else if subsumed(
                model.budget_codes(),
                &next.used,
                &core,
                seen,
                &mut out.lookups,
            ) {
                out.subsumed += 1;
                free.push(next);
            } else {
                self.accept(next, depth, stack, free, out);
            }
        }
    }

    /// A new successor of a state at `depth`: counted, its invariants read, and pushed unless
    /// it is a leaf.
    #[inline]
    #[allow(clippy::vec_box)]
    fn accept(
        &self,
        next: Box<State<B>>,
        depth: u32,
        stack: &mut Vec<Item<B>>,
        free: &mut Vec<Box<State<B>>>,
        out: &mut Exploration<B>,
    ) {
        out.counts.unique += 1;
        out.max_depth = out.max_depth.max(depth + 1);
        let violated = LeaseModel::violation_bits(&next);
        if violated != 0 {
            self.violation_found();
        }
        out.violated |= violated;
        if self.model.is_leaf(&next) {
            free.push(next);
        } else {
            stack.push((next, depth + 1));
        }
    }
}

/// Whether the set holds the state hashed by `core` with budgets used below `used`
/// ([`Budgets::below`]); counts the lookups.
#[inline]
fn subsumed(
    codes: Option<BudgetCodes>,
    used: &Budgets,
    core: &Fingerprinter,
    seen: &Inserter<'_>,
    lookups: &mut u64,
) -> bool {
    if let Some(codes) = codes {
        let core = core.finish();
        return codes.any_below(used, |code| {
            *lookups += 1;
            seen.contains(coded(core, code))
        });
    }
    used.below().any(|below| {
        *lookups += 1;
        seen.contains(core.with_last(below.word()))
    })
}
