//! The checker allocates nothing per state within its inline bounds (one group, up to four
//! events, up to six workers and six requests in flight): computing a successor into a reused
//! state, its fingerprint, its rank and its actions touch no heap. (The search's own stacks and
//! fingerprint table grow, by amortised doubling.)

use leasehold_model::check::fingerprint::Fingerprinter;
use leasehold_model::check::model::Actions;
use leasehold_model::check::rank::rank;
use leasehold_model::check::{Budgets, CheckConfig, Fairness, LeaseModel, Renews};
use leasehold_model::{AckPolicy, Variant};

use crate::support::counting_alloc::allocations;

fn configs() -> Vec<CheckConfig> {
    let base = |variant, events, workers, budgets| CheckConfig {
        variant,
        group_count: 1,
        event_count: events,
        worker_count: workers,
        max_attempts: 2,
        policy: AckPolicy::NackOnError,
        budgets,
        renews: Renews::Budget,
        fairness: Fairness::Weak,
        outcomes: Default::default(),
        time: Default::default(),
    };
    let faults = Budgets {
        crashes: 1,
        lost_replies: 1,
        drops: 1,
        dups: 1,
        broker_restarts: 1,
        renews: 1,
    };
    let mut out: Vec<CheckConfig> = Variant::ALL
        .iter()
        .map(|&v| base(v, 2, 2, faults))
        .collect();
    out.push(base(
        Variant::Fenced,
        4,
        3,
        Budgets {
            crashes: 1,
            ..Budgets::default()
        },
    ));
    out.push(base(Variant::Fenced, 3, 6, Budgets::default()));
    out
}

#[test]
fn successors_fingerprints_ranks_and_actions_do_not_allocate() {
    for config in configs() {
        let model = LeaseModel::new(config.clone());
        // A breadth-first sample of reachable states (collecting them allocates; computing
        // each successor, measured below, must not).
        let mut states = vec![model.init_state(true)];
        let mut actions = Actions::new();
        let mut scratch = model.init_state(true);
        let mut hasher = Fingerprinter::default();
        let mut checked = 0u64;
        let mut index = 0;
        while index < states.len() && states.len() < 3_000 {
            let state = states[index].clone();
            index += 1;
            let before = allocations();
            model.actions(&state, &mut actions);
            let _ = rank(&model, &state);
            let mut fingerprints = 0u64;
            for &action in actions.iter() {
                let at = allocations();
                model.successor_into(&state, action, &mut scratch);
                fingerprints ^= hasher.of(&scratch);
                let _ = rank(&model, &scratch);
                checked += 1;
                assert_eq!(allocations(), at, "{config}: {action:?} from {state:?}");
            }
            assert_eq!(allocations(), before, "{config}: {state:?}");
            for &action in actions.iter() {
                states.push(model.successor(&state, action).0);
            }
            assert_ne!(fingerprints, 1);
        }
        assert!(checked > 100, "{config}: {checked}");
    }
}
