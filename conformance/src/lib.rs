//! The conformance suite of leasehold's `Backend` contract: a backend and the reference
//! broker (`leasehold_model::Broker`) of a named variant, driven through the same `Backend`
//! trait by the same operation sequences (proptest), must give identical outputs — leases (ids,
//! attempts, deadlines, receipts), errors (by class: the words are the backend's own), expiries —
//! and identical `BrokerView` state after
//! every step (statuses, dead-letter reasons, frontiers, the next deadline, the unsettled
//! count).
//!
//! * [`Suite`] — what to run: the reference variant, the number of sequences, their seed and
//!   length, how often a sequence restarts the broker; [`Suite::run_parts`] runs it in parts
//!   at once, each on its own server.
//! * [`Op`] — one operation of a sequence.
//! * [`Step`] — a step as a backend's own checks see it.
//! * [`view`], [`view_of`] — everything an observer can read of a backend, as text.
//! * [`mod@bench`] — the operations-per-second workload of the server-backed backends' benchmarks.
//! * [`servers`] — how the tests of a server-backed backend find a real server.
//!
//! A backend's own test calls it with a constructor; anything it wants to check beyond the
//! contract (a server's own state, internal indexes) goes in the `after_step` hook:
//!
//! ```
//! use leasehold_conformance::Suite;
//! use leasehold_model::{Broker, Variant};
//!
//! // The reference broker against itself: the smallest backend there is.
//! let ran = Suite::new(Variant::Fenced)
//!     .cases(20)
//!     .run(|config| Ok(Broker::new(*config)), |_, _, _| Ok(()))
//!     .unwrap();
//! assert_eq!(ran.cases, 20);
//! ```
#![deny(missing_docs)]

pub mod bench;
pub mod servers;

use leasehold_model::{
    Backend, Broker, BrokerConfig, BrokerView, Lease, LeaseId, Ms, Reason, Receipt, SettleError,
    SettleOp, SettleRequest, Status, Variant,
};
use proptest::prelude::*;
use proptest::test_runner::{
    Config, FileFailurePersistence, RngAlgorithm, RngSeed, TestCaseError, TestRunner,
};
use std::cell::{Cell, RefCell};

/// The worker names a sequence fetches and settles as (a backend that keeps an identity per
/// consumer sees two consumers; the reference broker ignores the names).
pub const WORKERS: [&str; 2] = ["c1", "c2"];

/// One operation of a sequence.
#[derive(Clone, Debug)]
pub enum Op {
    /// Publish one event.
    Publish,
    /// Fetch up to `limit` leases of `group` (one beyond the last group: an unknown group) as
    /// worker `worker`, with `lease_ms` or the configured lease.
    Fetch {
        /// Index into [`WORKERS`].
        worker: usize,
        /// The group.
        group: usize,
        /// The most leases.
        limit: usize,
        /// The lease's length, or the configuration's.
        lease_ms: Option<u64>,
    },
    /// Settle a lease from the pool of every lease handed out so far (current or stale), sent
    /// by the worker that fetched it.
    Settle {
        /// Which lease of the pool (modulo its length).
        pick: usize,
        /// Ack, nack, reject or renew.
        op: SettleOp,
        /// The request carries a receipt the broker never issued.
        forged_receipt: bool,
        /// How far the worker's clock runs ahead of the broker's.
        worker_clock_skew_ms: u64,
    },
    /// A request naming a record that does not exist (0: seq 0; else that far beyond the
    /// last event).
    SettleUnknown {
        /// How far beyond.
        seq_beyond: u32,
    },
    /// The clock moves on.
    Advance {
        /// By this much.
        ms: u64,
    },
    /// The broker applies due expiries.
    ExpireDue,
    /// The broker restarts.
    Restart,
}

/// What to run: see the crate documentation.
#[derive(Clone, Debug)]
pub struct Suite {
    variant: Variant,
    cases: u32,
    seed: u64,
    ops_max: usize,
    restarts_in_100: u32,
}

/// One step of a sequence, as the `after_step` hook of [`Suite::run`] sees it.
#[derive(Clone, Copy, Debug)]
pub struct Step<'a> {
    /// Its index in the sequence.
    pub index: usize,
    /// The operation.
    pub op: &'a Op,
    /// The leases the step handed out (a fetch's, a renew's), each with the index into
    /// [`WORKERS`] of the worker it went to.
    pub leased: &'a [(Lease, usize)],
}

/// What a run of the suite did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ran {
    /// Sequences run, each identical on both sides.
    pub cases: u32,
    /// Broker restarts among their operations.
    pub restarts: u64,
}

impl Suite {
    /// The suite against the reference broker of `variant`: 320 sequences of up to 60
    /// operations, a fixed seed, restarts at the weight of an expiry.
    pub fn new(variant: Variant) -> Suite {
        Suite {
            variant,
            cases: 320,
            seed: 0x1ea5_e401d,
            ops_max: 60,
            restarts_in_100: 100,
        }
    }

    /// Number of sequences.
    pub fn cases(mut self, cases: u32) -> Suite {
        self.cases = cases;
        self
    }

    /// The seed of the sequences (the same seed gives the same sequences).
    pub fn seed(mut self, seed: u64) -> Suite {
        self.seed = seed;
        self
    }

    /// The most operations in a sequence.
    pub fn ops_max(mut self, ops: usize) -> Suite {
        self.ops_max = ops.max(1);
        self
    }

    /// How often a broker restart is drawn, as a percentage of the default weight (a backend
    /// whose restart is a server's restart makes it rarer).
    pub fn restarts_percent(mut self, percent: u32) -> Suite {
        self.restarts_in_100 = percent.min(100);
        self
    }

    /// Runs every sequence on a fresh backend from `make` and on the reference broker of the
    /// same configuration; `after_step(backend, reference, step)` checks what the contract
    /// does not (a server's own state, a backend's indexes). The first difference is an `Err`
    /// naming the sequence (shrunk by proptest), the step and both outputs.
    pub fn run<B: Backend>(
        &self,
        make: impl FnMut(&BrokerConfig) -> Result<B, String>,
        after_step: impl FnMut(&mut B, &Broker, Step<'_>) -> Result<(), String>,
    ) -> Result<Ran, String> {
        let mut runner = TestRunner::new(Config {
            cases: self.cases,
            rng_algorithm: RngAlgorithm::ChaCha,
            rng_seed: RngSeed::Fixed(self.seed),
            failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
            ..Config::default()
        });
        // proptest's runner takes a `Fn`: the caller's closures and the count are borrowed
        // one case at a time.
        let (make, after_step) = (RefCell::new(make), RefCell::new(after_step));
        let restarts = Cell::new(0u64);
        let strategy = case(self.variant, self.ops_max, self.restarts_in_100);
        runner
            .run(&strategy, |(config, ops)| {
                let mut backend = (make.borrow_mut())(&config)
                    .map_err(|e| TestCaseError::fail(format!("backend: {e}")))?;
                let mut reference = Broker::new(config);
                let (mut ours, mut theirs) = (Driver::default(), Driver::default());
                for (step, op) in ops.iter().enumerate() {
                    restarts.set(restarts.get() + u64::from(matches!(op, Op::Restart)));
                    let before = theirs.pool.len();
                    let expected = ours.apply(&mut reference, op);
                    let actual = theirs.apply(&mut backend, op);
                    prop_assert_eq!(&actual, &expected, "output of step {} {:?}", step, op);
                    prop_assert_eq!(
                        view(&backend),
                        view(&reference),
                        "state after step {} {:?}",
                        step,
                        op
                    );
                    let step_seen = Step {
                        index: step,
                        op,
                        leased: &theirs.pool[before..],
                    };
                    (after_step.borrow_mut())(&mut backend, &reference, step_seen).map_err(
                        |e| TestCaseError::fail(format!("after step {step} {op:?}: {e}")),
                    )?;
                }
                Ok(())
            })
            .map_err(|e| format!("{}: {e}", self.variant))?;
        Ok(Ran {
            cases: self.cases,
            restarts: restarts.get(),
        })
    }

    /// [`Suite::run`] in as many parts as `parts` has, all at once, one thread each: part `i`
    /// runs its share of the cases (they add up to [`Suite::cases`]) from the seed plus `i`,
    /// on backends `make` builds from that part's value (a server of its own, say). A suite
    /// that spends its time waiting on a server then waits on several at once. The
    /// sequences are not one run's (each part draws its own from its seed), and each part is
    /// deterministic as [`Suite::run`] is. The first part that fails gives the error, naming
    /// the part and its seed.
    ///
    /// # Panics
    /// When `parts` is empty, and with the panic of a part that panicked.
    pub fn run_parts<B: Backend, P: Send>(
        &self,
        parts: Vec<P>,
        make: impl Fn(&P, &BrokerConfig) -> Result<B, String> + Sync,
        after_step: impl Fn(&mut B, &Broker, Step<'_>) -> Result<(), String> + Sync,
    ) -> Result<Ran, String> {
        let count = u32::try_from(parts.len()).expect("a few parts");
        assert!(count > 0, "a suite in no parts");
        let (make, after_step) = (&make, &after_step);
        let results: Vec<(u64, Result<Ran, String>)> = std::thread::scope(|scope| {
            let running: Vec<_> = parts
                .into_iter()
                .zip(0u32..)
                .map(|(part, i)| {
                    let suite = Suite {
                        cases: self.cases / count + u32::from(i < self.cases % count),
                        seed: self.seed.wrapping_add(u64::from(i)),
                        ..self.clone()
                    };
                    scope.spawn(move || {
                        let ran = suite.run(|config| make(&part, config), after_step);
                        (suite.seed, ran)
                    })
                })
                .collect();
            running
                .into_iter()
                .map(|part| part.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        let mut total = Ran {
            cases: 0,
            restarts: 0,
        };
        for (i, (seed, ran)) in results.into_iter().enumerate() {
            let ran =
                ran.map_err(|e| format!("part {} of {count} (seed {seed:#x}): {e}", i + 1))?;
            total.cases += ran.cases;
            total.restarts += ran.restarts;
        }
        Ok(total)
    }
}

fn settle_op() -> impl Strategy<Value = SettleOp> {
    let reason =
        prop_oneof![Just("max attempts".to_string()), "[a-c ]{0,3}"].prop_map(|t| Reason::new(&t));
    prop_oneof![
        3 => Just(SettleOp::Ack),
        2 => (0u64..15, proptest::option::of(reason.clone()))
            .prop_map(|(delay_ms, reason)| SettleOp::Nack { delay_ms, reason }),
        2 => (0u64..40).prop_map(|extend_ms| SettleOp::Renew { extend_ms }),
        1 => reason.prop_map(|reason| SettleOp::Reject { reason }),
    ]
}

fn op(group_count: usize, restarts_in_100: u32) -> impl Strategy<Value = Op> {
    let fetch = (0..WORKERS.len(), 0..group_count + 1, 0usize..4);
    let settle = (
        any::<usize>(),
        settle_op(),
        proptest::bool::weighted(0.05),
        0u64..30,
    );
    let restart = f64::from(restarts_in_100) / 100.0;
    prop_oneof![
        2 => Just(Op::Publish),
        4 => (fetch, proptest::option::of(0u64..40)).prop_map(
            |((worker, group, limit), lease_ms)| Op::Fetch { worker, group, limit, lease_ms }
        ),
        6 => settle.prop_map(|(pick, op, forged_receipt, worker_clock_skew_ms)| Op::Settle {
            pick,
            op,
            forged_receipt,
            worker_clock_skew_ms,
        }),
        1 => (0u32..3).prop_map(|seq_beyond| Op::SettleUnknown { seq_beyond }),
        3 => (0u64..25).prop_map(|ms| Op::Advance { ms }),
        1 => Just(Op::ExpireDue),
        1 => proptest::bool::weighted(restart)
            .prop_map(|restart| if restart { Op::Restart } else { Op::ExpireDue }),
    ]
}

fn case(
    variant: Variant,
    ops_max: usize,
    restarts_in_100: u32,
) -> impl Strategy<Value = (BrokerConfig, Vec<Op>)> {
    (1usize..=2, 5u64..30, 1u32..=3).prop_flat_map(move |(group_count, lease_ms, max_attempts)| {
        let config = BrokerConfig {
            group_count,
            lease_ms,
            max_attempts,
            variant,
        };
        (
            Just(config),
            proptest::collection::vec(op(group_count, restarts_in_100), 1..=ops_max),
        )
    })
}

/// Everything an observer can read of a backend, as text: [`view_of`] with its next deadline.
pub fn view<B: Backend + ?Sized>(backend: &B) -> String {
    view_of(backend, backend.next_deadline())
}

/// Everything an observer can read of a broker, as text: per group its frontier and every
/// record's status and dead-letter reason (and one record either side of the published
/// ones), `next_deadline` and the unsettled count. Asserts that the view's shortcuts
/// (`status_kind`, `unsettled_count`) agree with its full reads.
pub fn view_of<V: BrokerView + ?Sized>(broker: &V, next_deadline: Option<Ms>) -> String {
    let mut out = format!("events {} ", broker.event_count());
    for group in 0..broker.group_count() {
        out += &format!("| g{group} frontier {} :", broker.frontier(group));
        for seq in 0..=broker.event_count() + 1 {
            let (status, reason) = broker.status(group, seq);
            assert_eq!(
                broker.status_kind(group, seq),
                status,
                "status_kind of {group}/{seq} against status"
            );
            out += &format!(" {:?}", (status, reason));
        }
    }
    let read: u64 = (0..broker.group_count())
        .map(|group| {
            (1..=broker.event_count())
                .filter(|&seq| {
                    !matches!(
                        broker.status_kind(group, seq),
                        Status::Acked | Status::DeadLettered
                    )
                })
                .count() as u64
        })
        .sum();
    assert_eq!(
        broker.unsettled_count(),
        read,
        "unsettled_count against the records"
    );
    out + &format!(" | next deadline {next_deadline:?} | unsettled {read}")
}

/// The driver's side of a sequence: the clock, and the leases handed out with who fetched
/// them.
#[derive(Default)]
struct Driver {
    now_ms: u64,
    pool: Vec<(Lease, usize)>,
}

impl Driver {
    /// Applies `op` to `backend`; returns its output as text.
    fn apply<B: Backend + ?Sized>(&mut self, backend: &mut B, op: &Op) -> String {
        let now_ms = self.now_ms;
        match op {
            Op::Publish => format!("{:?}", backend.publish()),
            Op::Fetch {
                worker,
                group,
                limit,
                lease_ms,
            } => {
                let result = backend.fetch_as(WORKERS[*worker], *group, *limit, now_ms, *lease_ms);
                if let Ok(leases) = &result {
                    self.pool.extend(leases.iter().map(|l| (*l, *worker)));
                }
                shown(&result)
            }
            Op::Settle {
                pick,
                op,
                forged_receipt,
                worker_clock_skew_ms,
            } => {
                if self.pool.is_empty() {
                    return "no lease yet".to_string();
                }
                let (mut lease, worker) = self.pool[pick % self.pool.len()];
                if *forged_receipt {
                    lease.receipt = Some(Receipt(7));
                }
                let request = SettleRequest::new(&lease, *op, now_ms + worker_clock_skew_ms);
                let result = backend.settle_as(WORKERS[worker], &request, now_ms);
                if let Ok(Some(renewed)) = &result {
                    self.pool.push((*renewed, worker));
                }
                shown(&result)
            }
            Op::SettleUnknown { seq_beyond } => {
                let lease = Lease {
                    lease_id: LeaseId(1),
                    group: 0,
                    seq: match seq_beyond {
                        0 => 0,
                        beyond => backend.event_count() + beyond,
                    },
                    attempt: 1,
                    deadline_ms: now_ms + 100,
                    receipt: None,
                };
                let request = SettleRequest::new(&lease, SettleOp::Ack, now_ms);
                shown(&backend.settle(&request, now_ms))
            }
            Op::Advance { ms } => {
                self.now_ms += ms;
                format!("now {}", self.now_ms)
            }
            Op::ExpireDue => format!("{:?}", backend.expire_due(now_ms)),
            Op::Restart => {
                backend.restart();
                "restarted".to_string()
            }
        }
    }
}

/// An output as the contract fixes it: a value exactly, an error by its class (`stale_lease`,
/// `invalid`, …) — the words of an `invalid`, `failed` or `ambiguous` error are the
/// backend's own.
fn shown<T: std::fmt::Debug>(result: &Result<T, SettleError>) -> String {
    match result {
        Ok(value) => format!("Ok({value:?})"),
        Err(e) => format!("Err({})", e.name()),
    }
}
