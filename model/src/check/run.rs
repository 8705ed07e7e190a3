//! `check` as a library call: [`run`] a configuration under [`Options`], get a [`Report`] a
//! test can assert on.
//!
//! # The verdict rule
//! * A safety invariant (I1–I5) is **violated** when some reachable state breaks it, else it
//!   **holds** if the search was exhaustive, else it is **bounded** (nothing proven).
//! * I6 with finite budgets: **holds** when the search was exhaustive, the ranking function
//!   decreased on every transition taken (so every behaviour is finite) and every terminal
//!   state is settled; **violated** when a terminal state is not settled; **unproven** when the
//!   ranking function failed to decrease somewhere (the argument does not apply).
//!   With unbounded renews: **violated** by a terminal unsettled state or by a cycle among
//!   unsettled states that is fair under the chosen assumption (a lasso), **holds** otherwise.
//! * A `sometimes` property is **reached** when some transition witnessed it, **not
//!   applicable** when the configuration cannot reach it by construction (no lost-reply or
//!   drop budget ⇒ no ambiguous result, …), else **not reached** (or **bounded**).
//! * The outcome: **violated** if any invariant is; else **bounded** if the search was cut
//!   short or I6 is unproven; else **vacuous** if an applicable `sometimes` property was not
//!   reached; else **holds**.

use crate::broker::Broker;
use crate::check::checked::CheckedBroker;
use crate::check::config::{CheckConfig, Fairness};
use crate::check::coverage::Coverage;
use crate::check::engine::{self, Engine};
use crate::check::liveness;
use crate::check::model::{LeaseModel, SAFETY, SOMETIMES};
use crate::check::search::{explore, Counts, Exploration, Limits, Progress};
use crate::check::shortest::{shortest_counterexamples, Counterexample};
use crate::invariant::Invariant;
use serde::Serialize;

/// How I6 is argued.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// A ranking function with finite budgets, cycles (SCC) with unbounded renews.
    #[default]
    Auto,
    /// The ranking function, whatever the budgets (a test of the ranking assertion).
    Ranking,
    /// The explored graph's cycles, whatever the budgets.
    Cycles,
}

/// How to run a check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Bounds and threads of the proof search.
    pub limits: Limits,
    /// Symmetry reduction over workers (proof search with finite budgets only).
    pub symmetry: bool,
    /// Partial-order reduction ([`LeaseModel::with_partial_order`]): leasehold's own proof
    /// search with finite budgets only (stateright's checker and the search for fair cycles
    /// explore every interleaving).
    pub partial_order: bool,
    /// Subsumption ([`LeaseModel::with_subsumption`]): leasehold's own proof search with
    /// finite budgets only.
    pub subsumption: bool,
    /// Duplicates taken at their first delivery ([`LeaseModel::with_late_duplicates`]):
    /// leasehold's own proof search with finite budgets only.
    pub late_duplicates: bool,
    /// The bound on the shortest-counterexample search (generated states).
    pub counterexample_states_max: u64,
    /// How I6 is argued.
    pub method: Method,
    /// When an invariant is violated, search again past the first violation (as far as I5,
    /// which stays a leaf) to report every invariant the configuration can break, with a
    /// shortest counterexample for those only reachable after another broke.
    pub beyond_first_violation: bool,
    /// Which search explores the model ([`Engine`]).
    pub engine: Engine,
}

impl Options {
    /// Why `config` cannot be checked under these options, if it cannot: stateright's checker
    /// has no search for fair cycles (unbounded renews), no search past the first violation
    /// and no stop at it; a stop at the first violation ([`Limits::first_violation`]) is
    /// leasehold's search with finite budgets, and not beside a search past it.
    pub fn unsupported(&self, config: &CheckConfig) -> Option<String> {
        let cycles = match self.method {
            Method::Auto => config.cyclic(),
            Method::Ranking => false,
            Method::Cycles => true,
        };
        if self.limits.first_violation {
            if self.beyond_first_violation {
                return Some(
                    "--first-violation and --all-violations: a search stops at the first \
                     violation or goes past it, not both"
                        .to_string(),
                );
            }
            if self.engine == Engine::Stateright {
                return Some(
                    "--first-violation stops leasehold's engine only (stateright's checker runs \
                     to its end)"
                        .to_string(),
                );
            }
            if cycles {
                return Some(
                    "--first-violation: with --renews unbounded the search for fair cycles runs \
                     whole (a renew budget stops at the first violation)"
                        .to_string(),
                );
            }
        }
        if self.engine != Engine::Stateright {
            return None;
        }
        if cycles {
            return Some(
                "the stateright engine has no search for fair cycles: I6 with unbounded renews \
                 is checked by leasehold's engine only"
                    .to_string(),
            );
        }
        if self.beyond_first_violation {
            return Some(
                "the stateright engine does not search past the first violation: \
                 --all-violations is leasehold's engine only"
                    .to_string(),
            );
        }
        None
    }

    /// The words a report's header gives the search: `depth-first`, `stateright's
    /// breadth-first`, ….
    pub fn search_name(&self, config: &CheckConfig) -> &'static str {
        if config.cyclic() && self.engine == Engine::Leasehold {
            "cycle search"
        } else {
            self.engine.search(self.symmetry)
        }
    }
}

impl Default for Options {
    fn default() -> Options {
        Options {
            limits: Limits::default(),
            symmetry: true,
            partial_order: true,
            subsumption: true,
            late_duplicates: true,
            counterexample_states_max: 50_000_000,
            method: Method::Auto,
            beyond_first_violation: false,
            engine: Engine::Leasehold,
        }
    }
}

/// The verdict on one property.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// No reachable state breaks it (the search was exhaustive).
    Holds,
    /// A reachable state (or cycle) breaks it.
    Violated,
    /// The search was cut short before finding it: nothing is proven.
    Bounded,
    /// The argument for it did not apply (I6: the ranking function did not decrease).
    Unproven,
    /// A transition witnessed it (`sometimes`).
    Reached,
    /// No transition witnessed it, though the configuration allows it.
    NotReached,
    /// The configuration cannot reach it by construction.
    NotApplicable,
}

impl Verdict {
    /// The word printed for it.
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Violated => "violated",
            Verdict::Bounded => "bounded",
            Verdict::Unproven => "unproven",
            Verdict::Reached => "reached",
            Verdict::NotReached => "not reached",
            Verdict::NotApplicable => "not applicable",
        }
    }
}

/// One property's verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PropertyVerdict {
    /// `always`, `eventually` or `sometimes`.
    pub kind: &'static str,
    /// The invariant, for `always` and `eventually`.
    pub invariant: Option<Invariant>,
    /// `I1 stale-never-counts`, …, or the `sometimes` property's text.
    pub name: String,
    /// The verdict.
    pub verdict: Verdict,
}

/// The outcome of a whole check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every invariant holds and every applicable `sometimes` property is reached.
    Holds,
    /// An invariant is violated.
    Violated,
    /// The search was cut short (or I6 is unproven): nothing unviolated is proven.
    Bounded,
    /// Every invariant holds but an applicable `sometimes` property was not reached.
    Vacuous,
}

impl Outcome {
    /// `holds`, `violated`, `bounded` or `vacuous`.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Holds => "holds",
            Outcome::Violated => "violated",
            Outcome::Bounded => "bounded",
            Outcome::Vacuous => "vacuous",
        }
    }
}

/// How I6 was argued and what the argument needed.
#[derive(Clone, Debug, Serialize)]
pub struct Liveness {
    /// `ranking` (finite budgets) or `cycles` (unbounded renews).
    pub method: &'static str,
    /// The fairness assumption of the cycle search (`none` or `weak`), if one was made.
    pub fairness: Option<Fairness>,
    /// The transition on which the ranking function did not decrease, if any.
    pub rank_failure: Option<String>,
    /// Non-trivial strongly connected components among unsettled states (cycle search).
    pub cycles: u64,
    /// How many of them are fair under the assumption.
    pub fair_cycles: u64,
}

impl Liveness {
    /// The assumption I6's verdict rests on, in one line.
    pub fn assumption(&self) -> String {
        match (self.method, self.fairness) {
            ("ranking", _) => "finite budgets: a ranking function decreases on every transition, so every behaviour ends in a state with no action enabled".to_string(),
            (_, Some(Fairness::Weak)) => "weak fairness on each worker, each lease's expiry and each request in flight".to_string(),
            _ => "no fairness: any cycle through unsettled states counts".to_string(),
        }
    }
}

/// The report of a check.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The configuration.
    pub config: CheckConfig,
    /// Whether symmetry reduction was used.
    pub symmetry: bool,
    /// Whether partial-order reduction was used.
    pub partial_order: bool,
    /// Whether subsumption was used ([`LeaseModel::with_subsumption`]).
    pub subsumption: bool,
    /// Whether duplicates were taken at their first delivery
    /// ([`LeaseModel::with_late_duplicates`]).
    pub late_duplicates: bool,
    /// States the search skipped as subsumed by a visited one (not in `counts.unique`).
    pub subsumed: u64,
    /// Fingerprints the search looked up to find a subsuming state.
    pub subsumption_lookups: u64,
    /// The search that explored the model.
    pub engine: Engine,
    /// Search threads.
    pub threads: usize,
    /// Generated and unique states.
    pub counts: Counts,
    /// Longest path of the search (depth-first tree, or breadth-first levels).
    pub max_depth: u32,
    /// Reachable terminal states that break no invariant.
    pub terminal: u64,
    /// `Some(bound)` when the search stopped at its bound (or, interrupted, the states
    /// generated by then).
    pub bounded: Option<u64>,
    /// Whether [`Limits::interrupt`] stopped the search (it is then bounded).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// Whether the search stopped at the first violation ([`Limits::first_violation`]; it is
    /// then bounded: the invariants it did not find broken are not proven).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stopped_at_violation: bool,
    /// Per property.
    pub properties: Vec<PropertyVerdict>,
    /// How I6 was argued.
    pub liveness: Liveness,
    /// Which cells of the protocol's surface the search reached; a supported cell it did not
    /// reach is named in the verdict ("holds (not covered: …)").
    pub coverage: Coverage,
    /// One shortest counterexample per violated invariant (a lasso for a fair cycle).
    #[serde(skip)]
    pub counterexamples: Vec<Counterexample>,
    /// `Some(bound)` when the shortest-counterexample search stopped before finding a path
    /// for every violated invariant.
    pub counterexample_search_bounded: Option<u64>,
    /// Bytes of the fingerprint table at the end.
    pub table_bytes: usize,
    /// The counts of the second search past the first violation, when there was one.
    pub beyond_first_violation: Option<Counts>,
    /// States generated by each search thread (how evenly the work was shared).
    pub per_thread: Vec<u64>,
    /// The outcome.
    pub outcome: Outcome,
}

impl Report {
    /// The verdict on `invariant` (`None` for I7, which the checker does not evaluate).
    pub fn verdict(&self, invariant: Invariant) -> Option<Verdict> {
        self.properties
            .iter()
            .find(|p| p.invariant == Some(invariant))
            .map(|p| p.verdict)
    }

    /// The invariants violated.
    pub fn violated(&self) -> Vec<Invariant> {
        Invariant::ALL
            .into_iter()
            .filter(|&i| self.verdict(i) == Some(Verdict::Violated))
            .collect()
    }

    /// The shortest counterexample found for `invariant`.
    pub fn counterexample(&self, invariant: Invariant) -> Option<&Counterexample> {
        self.counterexamples
            .iter()
            .find(|c| c.invariant == invariant)
    }

    /// The fingerprint-collision estimate for the `n` fingerprints the search kept (its unique
    /// states and the states it skipped as subsumed) and the `l` it looked up to find a
    /// subsuming state: n²/2⁶⁵ + l·n/2⁶⁴ (an insert or a lookup that meets an equal
    /// fingerprint of another state).
    pub fn collision_estimate(&self) -> f64 {
        let n = (self.counts.unique + self.subsumed) as f64;
        let lookups = self.subsumption_lookups as f64;
        n * n / 2f64.powi(65) + lookups * n / 2f64.powi(64)
    }
}

/// What one of the searches found.
struct Found<B> {
    exploration: Exploration<B>,
    liveness: Liveness,
    counterexamples: Vec<Counterexample>,
    counterexample_search_bounded: Option<u64>,
    symmetry: bool,
    partial_order: bool,
    subsumption: bool,
    late_duplicates: bool,
}

/// Why `config`'s timed model cannot run on the broker `B`, if it cannot: a broker that does
/// not implement [`CheckedBroker::shift_clock`] keeps its times absolute, and the timed model
/// needs them relative to now.
pub fn time_unsupported<B: CheckedBroker>(config: &CheckConfig) -> Option<String> {
    if !config.time.timed() {
        return None;
    }
    let mut broker = B::with_config(&crate::check::model::broker_config(config));
    (!broker.shift_clock(0, 0)).then(|| {
        format!(
            "--time ticks: the broker under test ({}) does not implement CheckedBroker::shift_clock, which the timed model needs",
            std::any::type_name::<B>()
        )
    })
}

/// Checks `config` (validated) under `options` on the reference broker; `progress` sees the
/// counts now and then.
///
/// # Panics
/// When [`Options::unsupported`] says why `config` cannot be checked: callers ask it first.
pub fn run(config: &CheckConfig, options: &Options, progress: Option<Progress<'_>>) -> Report {
    run_on::<Broker>(config, options, progress)
}

/// [`run`] on the broker `B` (see [`CheckedBroker`]): the same search, verdict rule and
/// report.
///
/// # Panics
/// As [`run`].
pub fn run_on<B: CheckedBroker>(
    config: &CheckConfig,
    options: &Options,
    progress: Option<Progress<'_>>,
) -> Report {
    if let Some(why) = options.unsupported(config) {
        panic!("check::run called with unsupported options: {why}");
    }
    if let Some(why) = time_unsupported::<B>(config) {
        panic!("check::run called with an unsupported configuration: {why}");
    }
    let model = LeaseModel::<B>::for_broker(config.clone());
    let cycles = match options.method {
        Method::Auto => config.cyclic(),
        Method::Ranking => false,
        Method::Cycles => true,
    };
    let mut found = if cycles {
        by_cycles(&model, config, options, progress)
    } else {
        by_ranking(
            &model
                .clone()
                .with_symmetry(options.symmetry)
                .with_partial_order(options.partial_order && options.engine == Engine::Leasehold)
                .with_subsumption(options.subsumption && options.engine == Engine::Leasehold)
                .with_late_duplicates(
                    options.late_duplicates && options.engine == Engine::Leasehold,
                ),
            options,
            progress,
        )
    };
    let mut beyond = None;
    if options.beyond_first_violation && found.exploration.violated != 0 {
        beyond = Some(past_first_violation(&model, options, &mut found));
    }
    let properties = properties(&model, &found.exploration, &found.liveness, cycles);
    let outcome = outcome(&properties, found.exploration.bounded);
    let exploration = found.exploration;
    Report {
        config: config.clone(),
        symmetry: found.symmetry,
        partial_order: found.partial_order,
        subsumption: found.subsumption,
        late_duplicates: found.late_duplicates,
        subsumed: exploration.subsumed,
        subsumption_lookups: exploration.lookups,
        engine: options.engine,
        threads: if cycles {
            1
        } else {
            options.limits.threads.max(1)
        },
        counts: exploration.counts,
        max_depth: exploration.max_depth,
        terminal: exploration.terminal,
        bounded: exploration.bounded,
        interrupted: exploration.interrupted,
        stopped_at_violation: exploration.stopped_at_violation,
        properties,
        coverage: Coverage::of(model.config(), exploration.witnessed),
        liveness: found.liveness,
        counterexamples: found.counterexamples,
        counterexample_search_bounded: found.counterexample_search_bounded,
        table_bytes: exploration.table_bytes,
        per_thread: exploration.per_thread,
        beyond_first_violation: beyond,
        outcome,
    }
}

fn by_cycles<B: CheckedBroker>(
    model: &LeaseModel<B>,
    config: &CheckConfig,
    options: &Options,
    progress: Option<Progress<'_>>,
) -> Found<B> {
    let found = liveness::check(model, &options.limits, config.fairness, progress);
    Found {
        exploration: found.exploration,
        liveness: Liveness {
            method: "cycles",
            fairness: Some(config.fairness),
            rank_failure: None,
            cycles: found.cycles,
            fair_cycles: found.fair_cycles,
        },
        counterexamples: found.found,
        counterexample_search_bounded: None,
        symmetry: false,
        partial_order: false,
        subsumption: false,
        late_duplicates: false,
    }
}

fn by_ranking<B: CheckedBroker>(
    model: &LeaseModel<B>,
    options: &Options,
    progress: Option<Progress<'_>>,
) -> Found<B> {
    let exploration = match options.engine {
        Engine::Leasehold => explore(model, &options.limits, true, progress),
        Engine::Stateright => {
            // stateright's symmetry sorts every worker: not with the timed model's skewed
            // workers, which keep their places.
            let symmetry = options.symmetry && model.fixed_workers() == 0;
            engine::explore(model, &options.limits, symmetry, true, progress)
        }
    };
    let liveness = Liveness {
        method: "ranking",
        fairness: None,
        rank_failure: exploration.rank_failure.as_ref().map(|f| {
            format!(
                "{:?} from a state of rank {:?} leads to rank {:?}",
                f.action, f.from_rank, f.to_rank
            )
        }),
        cycles: 0,
        fair_cycles: 0,
    };
    let mut targets = targets(exploration.violated);
    if exploration.unsettled_terminal {
        targets.push(Invariant::I6);
    }
    let (counterexamples, bounded) = if targets.is_empty() {
        (Vec::new(), None)
    } else {
        let search = shortest_counterexamples(model, &targets, options.counterexample_states_max);
        (search.found, search.bounded)
    };
    Found {
        exploration,
        liveness,
        counterexamples,
        counterexample_search_bounded: bounded,
        symmetry: model.symmetry(),
        partial_order: model.partial_order(),
        subsumption: model.subsumption(),
        late_duplicates: model.late_duplicates(),
    }
}

/// The safety invariants of `bits`.
fn targets(bits: u8) -> Vec<Invariant> {
    SAFETY
        .into_iter()
        .filter(|&i| bits & 1 << i as u8 != 0)
        .collect()
}

/// The second search, past the first violation: adds what it finds to `found`; returns its
/// counts.
fn past_first_violation<B: CheckedBroker>(
    model: &LeaseModel<B>,
    options: &Options,
    found: &mut Found<B>,
) -> Counts {
    let model = model.clone().beyond_first_violation();
    let model = model.with_symmetry(options.symmetry && !found.liveness.method.eq("cycles"));
    let second = explore(&model, &options.limits, false, None);
    let new = targets(second.violated & !found.exploration.violated);
    found.exploration.violated |= second.violated;
    found.exploration.witnessed |= second.witnessed;
    if second.bounded.is_some() {
        found.exploration.bounded = second.bounded;
        found.exploration.interrupted |= second.interrupted;
    }
    if !new.is_empty() {
        let search = shortest_counterexamples(&model, &new, options.counterexample_states_max);
        found.counterexamples.extend(search.found);
        found
            .counterexamples
            .sort_by_key(|cx| Invariant::ALL.iter().position(|&i| i == cx.invariant));
        found.counterexample_search_bounded =
            found.counterexample_search_bounded.or(search.bounded);
    }
    second.counts
}

fn properties<B: CheckedBroker>(
    model: &LeaseModel<B>,
    exploration: &Exploration<B>,
    liveness: &Liveness,
    cycles: bool,
) -> Vec<PropertyVerdict> {
    let bounded = exploration.bounded.is_some();
    let mut out = Vec::new();
    for invariant in SAFETY {
        let verdict = if exploration.violated & 1 << invariant as u8 != 0 {
            Verdict::Violated
        } else if bounded {
            Verdict::Bounded
        } else {
            Verdict::Holds
        };
        out.push(PropertyVerdict {
            kind: "always",
            invariant: Some(invariant),
            name: invariant.to_string(),
            verdict,
        });
    }
    let i6 = if exploration.unsettled_terminal || (cycles && liveness.fair_cycles > 0) {
        Verdict::Violated
    } else if bounded {
        Verdict::Bounded
    } else if liveness.rank_failure.is_some() {
        Verdict::Unproven
    } else {
        Verdict::Holds
    };
    out.push(PropertyVerdict {
        kind: "eventually",
        invariant: Some(Invariant::I6),
        name: Invariant::I6.to_string(),
        verdict: i6,
    });
    for (bit, name) in SOMETIMES {
        let verdict = if exploration.witnessed & bit != 0 {
            Verdict::Reached
        } else if !model.applicable(bit) {
            Verdict::NotApplicable
        } else if bounded {
            Verdict::Bounded
        } else {
            Verdict::NotReached
        };
        out.push(PropertyVerdict {
            kind: "sometimes",
            invariant: None,
            name: name.to_string(),
            verdict,
        });
    }
    out
}

fn outcome(properties: &[PropertyVerdict], bounded: Option<u64>) -> Outcome {
    let any = |v: Verdict| properties.iter().any(|p| p.verdict == v);
    if any(Verdict::Violated) {
        Outcome::Violated
    } else if bounded.is_some() || any(Verdict::Unproven) {
        Outcome::Bounded
    } else if any(Verdict::NotReached) {
        Outcome::Vacuous
    } else {
        Outcome::Holds
    }
}
