//! The checker's seam for a user's broker against its built-in path: the reference broker,
//! wrapped in a newtype that implements `CheckedBroker` as a user's broker would (through the
//! public `Backend` and `BrokerView` methods and the hooks, with none of the reference
//! broker's allocation-free shortcuts), explores exactly the states the built-in path
//! explores and gets the same verdicts, on every variant, with symmetry on and off.

use leasehold_model::check::{run, run_on, CheckConfig, CheckedBroker, Options, Report};
use leasehold_model::variant::Fence;
use leasehold_model::{
    Backend, Broker, BrokerConfig, BrokerView, Expired, GroupIx, Lease, LeaseId, Ms, Receipt, Seq,
    SettleError, SettleOp, SettleRequest, Status, Timer, Variant,
};

/// The reference broker as a user's broker: see the module documentation. With `SILENT`, a
/// broker with a silent bug: once it accepts an ack of event 1, it shows event 3 of the same
/// group acked, though nothing acked it (the second field); the step names event 1 only.
/// Without `CLOCK`, a broker that does not implement `shift_clock` (its times absolute).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct AsUser<const SILENT: bool = false, const CLOCK: bool = true>(Broker, bool);

impl<const SILENT: bool, const CLOCK: bool> AsUser<SILENT, CLOCK> {
    fn shown(&self, group: GroupIx, seq: Seq) -> Option<Status> {
        (SILENT && self.1 && seq == 3)
            .then_some(Status::Acked)
            .filter(|_| group == 0)
    }
}

impl<const SILENT: bool, const CLOCK: bool> BrokerView for AsUser<SILENT, CLOCK> {
    fn group_count(&self) -> usize {
        BrokerView::group_count(&self.0)
    }
    fn event_count(&self) -> Seq {
        BrokerView::event_count(&self.0)
    }
    fn status(&self, group: GroupIx, seq: Seq) -> (Status, Option<String>) {
        match self.shown(group, seq) {
            Some(status) => (status, None),
            None => BrokerView::status(&self.0, group, seq),
        }
    }
    fn frontier(&self, group: GroupIx) -> Seq {
        BrokerView::frontier(&self.0, group)
    }
    fn status_kind(&self, group: GroupIx, seq: Seq) -> Status {
        self.shown(group, seq)
            .unwrap_or_else(|| BrokerView::status_kind(&self.0, group, seq))
    }
    fn unsettled_count(&self) -> u64 {
        BrokerView::unsettled_count(&self.0)
    }
}

impl<const SILENT: bool, const CLOCK: bool> Backend for AsUser<SILENT, CLOCK> {
    fn publish(&mut self) -> Seq {
        Backend::publish(&mut self.0)
    }
    fn fetch(
        &mut self,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError> {
        Backend::fetch(&mut self.0, group, limit, now_ms, lease_ms)
    }
    fn settle(
        &mut self,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        let result = Backend::settle(&mut self.0, request, now_ms);
        if SILENT && result.is_ok() && request.op == SettleOp::Ack && request.lease.seq == 1 {
            self.1 = true;
        }
        result
    }
    fn expire_due(&mut self, now_ms: Ms) -> Vec<Expired> {
        Backend::expire_due(&mut self.0, now_ms)
    }
    fn next_deadline(&self) -> Option<Ms> {
        Backend::next_deadline(&self.0)
    }
    fn restart(&mut self) {
        Backend::restart(&mut self.0)
    }
}

/// The hooks, from the reference broker's public methods; `expire_due_each`, `fetch_one` and
/// `has_available` keep the trait's defaults (through `Backend` and `BrokerView`).
impl<const SILENT: bool, const CLOCK: bool> CheckedBroker for AsUser<SILENT, CLOCK> {
    fn with_config(config: &BrokerConfig) -> AsUser<SILENT, CLOCK> {
        AsUser(Broker::new(*config), false)
    }
    fn for_each_timer(&self, f: impl FnMut(&Timer)) {
        self.0.timers().iter().for_each(f);
    }
    fn lapse(&mut self, group: GroupIx, seq: Seq, now_ms: Ms) -> Option<bool> {
        self.0.lapse(group, seq, now_ms)
    }
    fn release_delays(&mut self, now_ms: Ms) {
        self.0.release_delays(now_ms);
    }
    fn shift_clock(&mut self, by_ms: Ms, floor_ms: Ms) -> bool {
        if CLOCK {
            self.0.shift_clock(by_ms, floor_ms);
        }
        CLOCK
    }
    fn receipt_of(&self, _group: GroupIx, seq: Seq) -> Option<Receipt> {
        self.0.receipt(seq)
    }
    fn reads_request_attempt(&self) -> bool {
        let nack = SettleOp::Nack {
            delay_ms: 0,
            reason: None,
        };
        self.0.variant().fence(&nack) == Fence::None
    }
    fn lease_id_counter(&self) -> Option<LeaseId> {
        (!self.0.variant().channel_scoped()).then(|| self.0.next_lease_id())
    }
    fn fetch_one_as(
        &mut self,
        worker: usize,
        group: GroupIx,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        self.0.fetch_one_for(worker, group, now_ms)
    }
    fn workers_interchangeable(&self) -> bool {
        !self.0.variant().channel_scoped()
    }
    fn swap_groups(&mut self, a: GroupIx, b: GroupIx) -> bool {
        self.0.swap_groups(a, b)
    }
    fn for_each_lease_id(&self, f: impl FnMut(LeaseId)) {
        self.0.for_each_lease_id(f);
    }
    fn rename_lease_ids(&mut self, rename: impl FnMut(LeaseId) -> LeaseId) {
        self.0.rename_lease_ids(rename);
    }
    fn lease_ids_survive_restart(&self) -> bool {
        self.0.variant().lease_ids_durable()
    }
}

/// Events 2, workers 2, max attempts 2, the variant's default budgets.
fn small(variant: Variant) -> CheckConfig {
    CheckConfig {
        event_count: 2,
        worker_count: 2,
        max_attempts: 2,
        ..CheckConfig::tailored_for(variant)
    }
}

fn same(built_in: &Report, seam: &Report, what: &str) {
    assert_eq!(built_in.counts, seam.counts, "{what}: states");
    assert_eq!(built_in.max_depth, seam.max_depth, "{what}: depth");
    assert_eq!(built_in.terminal, seam.terminal, "{what}: terminal states");
    assert_eq!(built_in.properties, seam.properties, "{what}: verdicts");
    assert_eq!(built_in.outcome, seam.outcome, "{what}: outcome");
    assert_eq!(
        built_in.liveness.rank_failure, seam.liveness.rank_failure,
        "{what}: ranking"
    );
    assert_eq!(
        built_in.counterexamples, seam.counterexamples,
        "{what}: counterexamples"
    );
}

#[test]
#[ignore = "slow (seconds in a debug build): every variant, with and without symmetry, through \
            both paths; .ci/run runs it (--include-ignored)"]
fn a_broker_through_the_seam_explores_the_states_of_the_built_in_path() {
    for &variant in Variant::ALL {
        for symmetry in [true, false] {
            let config = small(variant);
            let options = Options {
                symmetry,
                ..Options::default()
            };
            let built_in = run(&config, &options, None);
            let seam = run_on::<AsUser>(&config, &options, None);
            same(&built_in, &seam, &format!("{config} symmetry {symmetry}"));
        }
    }
}

/// The seam with every search: past the first violation, and the cycle search of unbounded
/// renews.
#[test]
fn the_seam_gives_the_built_in_verdicts_past_the_first_violation_and_with_cycles() {
    for variant in [
        Variant::UnfencedSettle,
        Variant::RenewRevives,
        Variant::Fenced,
    ] {
        let config = small(variant);
        let options = Options {
            beyond_first_violation: true,
            ..Options::default()
        };
        let built_in = run(&config, &options, None);
        let seam = run_on::<AsUser>(&config, &options, None);
        same(&built_in, &seam, &format!("{config} --all-violations"));
        assert_eq!(
            built_in.beyond_first_violation, seam.beyond_first_violation,
            "{config}"
        );
    }
    let cyclic = CheckConfig {
        event_count: 1,
        renews: leasehold_model::check::Renews::Unbounded,
        ..small(Variant::Fenced)
    };
    let built_in = run(&cyclic, &Options::default(), None);
    let seam = run_on::<AsUser>(&cyclic, &Options::default(), None);
    same(&built_in, &seam, &format!("{cyclic}"));
}

/// A record a step changed without naming it is caught at that step: the oracle compares every
/// record of the model's small queue with the broker after every step, so the counterexample
/// ends with the ack that made event 3 look acked (fetch, handle, the ack delivered), not at a
/// later step that happens to touch event 3.
#[test]
fn a_record_changed_silently_is_caught_at_the_step_that_changed_it() {
    use leasehold_model::check::Budgets;
    use leasehold_model::Invariant;
    let config = CheckConfig {
        event_count: 3,
        worker_count: 1,
        max_attempts: 1,
        budgets: Budgets::default(),
        ..CheckConfig::tailored_for(Variant::Fenced)
    };
    let honest = run_on::<AsUser>(&config, &Options::default(), None);
    assert!(honest.violated().is_empty(), "{:?}", honest.violated());
    let report = run_on::<AsUser<true>>(&config, &Options::default(), None);
    assert!(
        report.violated().contains(&Invariant::I3),
        "{:?}",
        report.violated()
    );
    let cx = report
        .counterexample(Invariant::I3)
        .expect("a counterexample");
    assert_eq!(cx.len(), 3, "{cx:?}");
}

/// The covering configuration is timed: a broker that keeps its times absolute (no
/// `shift_clock`) is refused by it with one line naming the hook, and checks untimed.
#[test]
fn a_broker_without_the_clock_hook_is_refused_by_the_timed_model_only() {
    use leasehold_model::check::{time_unsupported, Time};
    let covering = CheckConfig::covering_for(Variant::Fenced);
    assert!(time_unsupported::<AsUser>(&covering).is_none());
    let why = time_unsupported::<AsUser<false, false>>(&covering).expect("refused");
    assert!(
        why.contains("shift_clock") && why.lines().count() == 1,
        "{why}"
    );
    let untimed = CheckConfig {
        time: Time::Untimed,
        ..covering
    };
    assert!(time_unsupported::<AsUser<false, false>>(&untimed).is_none());
}
