//! Pinned results of the search on every variant with every fault on: unique and generated
//! state counts, the invariants broken and the `sometimes` properties witnessed, stopping at
//! the first violation and searching past it. The counts are exact functions of the broker's,
//! the runtime's and the oracle's semantics: a change to any of them that any explored
//! behaviour can observe changes a count (this is how stateright's own tests pin a model). A
//! deliberate change updates the table: run with `PIN=1` to print the new one.

use leasehold_model::check::model::LeaseModel;
use leasehold_model::check::search::{explore, Limits};
use leasehold_model::check::{Budgets, CheckConfig, Fairness, Renews};
use leasehold_model::{AckPolicy, Variant};

fn config(variant: Variant, events: u32, policy: AckPolicy) -> CheckConfig {
    CheckConfig {
        variant,
        group_count: 1,
        event_count: events,
        worker_count: 2,
        max_attempts: 2,
        policy,
        budgets: Budgets {
            crashes: 1,
            drops: 1,
            dups: 1,
            lost_replies: 1,
            broker_restarts: 1,
            renews: 1,
        },
        renews: Renews::Budget,
        fairness: Fairness::Weak,
    }
}

/// (unique, generated, violated bits, witness bits), stopping at the first violation and
/// past it.
type Pin = [(u64, u64, u8, u8); 2];

fn measure(config: &CheckConfig) -> Pin {
    let model = LeaseModel::new(config.clone());
    let limits = Limits::default();
    let at = explore(&model, &limits, false, None);
    let past = explore(&model.beyond_first_violation(), &limits, false, None);
    [at, past].map(|e| (e.counts.unique, e.counts.generated, e.violated, e.witnessed))
}

const PINNED: [(&str, Pin); 15] = [
    ("fenced", [(6516, 33658, 0, 15), (6516, 33658, 0, 15)]),
    (
        "redis-streams",
        [(7722, 32679, 1, 15), (9454, 44221, 1, 15)],
    ),
    (
        "redis-streams-fenced",
        [(6516, 33658, 0, 15), (6516, 33658, 0, 15)],
    ),
    (
        "unfenced-settle",
        [(10836, 32109, 13, 15), (16468, 60089, 31, 15)],
    ),
    (
        "renew-revives",
        [(6922, 33661, 2, 15), (9406, 48261, 3, 15)],
    ),
    (
        "lease-id-reuse",
        [(13075, 62001, 3, 15), (14589, 71308, 3, 15)],
    ),
    (
        "max-seen-frontier",
        [(6516, 33658, 0, 15), (6516, 33658, 0, 15)],
    ),
    (
        "no-dead-letter",
        [(8704, 35846, 16, 15), (8704, 35846, 16, 15)],
    ),
    (
        "volatile-ack",
        [(6959, 33754, 12, 15), (7934, 38605, 13, 15)],
    ),
    (
        "nack-on-ambiguous",
        [(34462, 79474, 13, 15), (86832, 283414, 31, 15)],
    ),
    (
        "worker-clock-expiry",
        [(9894, 44809, 1, 15), (12126, 59471, 1, 15)],
    ),
    ("dlq-drop", [(5756, 18978, 4, 11), (5828, 31110, 4, 11)]),
    (
        "only-ack-fenced",
        [(9548, 35402, 13, 15), (14290, 54427, 31, 15)],
    ),
    (
        "attempts-reset",
        [(11122, 42821, 16, 15), (11122, 42821, 16, 15)],
    ),
    ("stuck-lease", [(7819, 39423, 0, 15), (7819, 39423, 0, 15)]),
];

#[test]
fn every_variant_explores_exactly_the_pinned_space() {
    let print = std::env::var("PIN").is_ok();
    for (name, pinned) in PINNED {
        let variant = Variant::from_name(name).expect("a variant");
        let measured = measure(&config(variant, 1, AckPolicy::NackOnError));
        if print {
            println!("    (\"{name}\", {measured:?}),");
        } else {
            assert_eq!(measured, pinned, "{name}");
        }
    }
}

/// Two events, fewer faults: what only several records show (the frontier rules, the fetch
/// order, a restart's recomputed frontier).
#[test]
fn every_variant_with_two_events_explores_exactly_the_pinned_space() {
    let pinned: [(&str, Pin); 15] = [
        ("fenced", [(27496, 135910, 0, 15), (27496, 135910, 0, 15)]),
        (
            "redis-streams",
            [(35036, 135910, 1, 15), (62232, 290774, 1, 15)],
        ),
        (
            "redis-streams-fenced",
            [(27496, 135910, 0, 15), (27496, 135910, 0, 15)],
        ),
        (
            "unfenced-settle",
            [(50440, 132606, 13, 14), (115744, 438420, 29, 14)],
        ),
        (
            "renew-revives",
            [(27496, 135910, 0, 15), (27496, 135910, 0, 15)],
        ),
        (
            "lease-id-reuse",
            [(88593, 397733, 1, 15), (92057, 417597, 1, 15)],
        ),
        (
            "max-seen-frontier",
            [(26488, 125772, 8, 15), (28708, 139300, 8, 15)],
        ),
        (
            "no-dead-letter",
            [(31348, 138034, 16, 15), (31348, 138034, 16, 15)],
        ),
        (
            "volatile-ack",
            [(35725, 153022, 12, 15), (57280, 252979, 12, 15)],
        ),
        (
            "nack-on-ambiguous",
            [(66396, 133282, 13, 14), (252375, 840414, 31, 14)],
        ),
        (
            "worker-clock-expiry",
            [(47826, 182561, 1, 15), (71590, 344313, 1, 15)],
        ),
        ("dlq-drop", [(19468, 53312, 4, 11), (22084, 113236, 4, 11)]),
        (
            "only-ack-fenced",
            [(45538, 152696, 13, 15), (89416, 356217, 29, 15)],
        ),
        (
            "attempts-reset",
            [(59370, 250371, 16, 15), (59370, 250371, 16, 15)],
        ),
        (
            "stuck-lease",
            [(37627, 176324, 0, 15), (37627, 176324, 0, 15)],
        ),
    ];
    let print = std::env::var("PIN").is_ok();
    for (name, pin) in pinned {
        let variant = Variant::from_name(name).expect("a variant");
        let mut config = config(variant, 2, AckPolicy::NackOnError);
        config.budgets = Budgets {
            crashes: 1,
            lost_replies: 1,
            broker_restarts: 1,
            ..Budgets::default()
        };
        let measured = measure(&config);
        if print {
            println!("        (\"{name}\", {measured:?}),");
        } else {
            assert_eq!(measured, pin, "{name}");
        }
    }
}

/// The other ack policies send other settles (or none): pinned on the reference.
#[test]
fn every_policy_explores_exactly_the_pinned_space() {
    let pinned: [(AckPolicy, Pin); 3] = [
        (
            AckPolicy::AckAlways,
            [(4174, 13475, 5, 15), (4372, 19004, 5, 15)],
        ),
        (
            AckPolicy::AckFirst,
            [(4174, 13475, 5, 15), (4372, 19004, 5, 15)],
        ),
        (
            AckPolicy::Manual,
            [(5112, 16160, 13, 15), (8370, 29177, 31, 15)],
        ),
    ];
    let print = std::env::var("PIN").is_ok();
    for (policy, pin) in pinned {
        let measured = measure(&config(Variant::UnfencedSettle, 1, policy));
        if print {
            println!("        (AckPolicy::{policy:?}, {measured:?}),");
        } else {
            assert_eq!(measured, pin, "{policy}");
        }
    }
}
