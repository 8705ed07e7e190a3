//! The consumer runtime's pure decisions over their whole finite domain, and the second seed's
//! two printed examples reproduced by running the runtime against the pure broker.

use leasehold_model::broker::{Broker, BrokerConfig};
use leasehold_model::runtime::{
    classify, decide, max_attempts_for_retries, AckPolicy, Action, ErrorAction, HandleCall,
    Outcome, When,
};
use leasehold_model::types::{Record, SettleError, SettleOp};
use leasehold_model::Reason;
use leasehold_model::Variant;
use std::fmt::Write as _;

fn outcomes() -> Vec<Outcome> {
    let error = |text: &str| Outcome::Error {
        kind: Reason::new("RuntimeError"),
        text: Reason::new(text),
    };
    vec![
        Outcome::Ok,
        error(""),
        error("boom"),
        Outcome::Ack,
        Outcome::Nack(Reason::EMPTY),
        Outcome::Nack(Reason::new("rate limited")),
        Outcome::Reject(Reason::EMPTY),
        Outcome::Reject(Reason::new("unknown customer")),
    ]
}

/// Every handle-call sequence of length 0, 1 and 2 over {ack, nack, reject("")}.
fn call_sequences() -> Vec<Vec<HandleCall>> {
    let alphabet = [
        HandleCall::Ack,
        HandleCall::Nack,
        HandleCall::Reject(Reason::EMPTY),
    ];
    let mut all = vec![vec![]];
    for a in &alphabet {
        all.push(vec![a.clone()]);
    }
    for a in &alphabet {
        for b in &alphabet {
            all.push(vec![a.clone(), b.clone()]);
        }
    }
    all
}

/// The whole domain: (policy, calls, outcome).
fn domain() -> Vec<(AckPolicy, Vec<HandleCall>, Outcome)> {
    let mut rows = Vec::new();
    for policy in AckPolicy::ALL {
        for outcome in outcomes() {
            for calls in call_sequences() {
                rows.push((policy, calls, outcome.clone()));
            }
        }
    }
    rows
}

fn show_outcome(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Ok => "return".to_string(),
        Outcome::Error { kind, text } => format!("raise {kind}({text:?})"),
        Outcome::Ack => "raise AckMessage".to_string(),
        Outcome::Nack(text) => format!("raise NackMessage({text:?})"),
        Outcome::Reject(text) => format!("raise RejectMessage({text:?})"),
    }
}

fn show_calls(calls: &[HandleCall]) -> String {
    if calls.is_empty() {
        return "-".to_string();
    }
    calls
        .iter()
        .map(|call| match call {
            HandleCall::Ack => "ack()".to_string(),
            HandleCall::Nack => "nack()".to_string(),
            HandleCall::Reject(reason) => format!("reject({reason:?})"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn show_op(op: &SettleOp) -> String {
    match op {
        SettleOp::Ack => "ack".to_string(),
        SettleOp::Nack { delay_ms, reason } => {
            let reason = reason.as_deref().unwrap_or("<max attempts>");
            if *delay_ms == 0 {
                format!("nack(x-error={reason:?})")
            } else {
                format!("nack(delay {delay_ms} ms, x-error={reason:?})")
            }
        }
        SettleOp::Reject { reason } => format!("reject(x-error={reason:?})"),
        SettleOp::Renew { extend_ms } => format!("renew({extend_ms} ms)"),
    }
}

fn show_actions(actions: &[Action]) -> String {
    if actions.is_empty() {
        return "nothing (lease left to expire)".to_string();
    }
    actions
        .iter()
        .map(|action| {
            let when = match action.when {
                When::Before => "before handler".to_string(),
                When::During(index) => format!("at call {}", index + 1),
                When::After => "after handler".to_string(),
            };
            format!("{} {when}", show_op(&action.op))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The whole decision table as readable text, one row per (policy, outcome, calls).
fn render_table() -> String {
    let mut out = String::new();
    writeln!(
        out,
        "{:<14} {:<40} {:<22} settles",
        "policy", "handler leaves by", "handle calls"
    )
    .unwrap();
    for (policy, calls, outcome) in domain() {
        let actions = decide(policy, &calls, &outcome).to_vec();
        writeln!(
            out,
            "{:<14} {:<40} {:<22} {}",
            policy.name(),
            show_outcome(&outcome),
            show_calls(&calls),
            show_actions(&actions)
        )
        .unwrap();
    }
    out
}

fn acks(actions: &[Action]) -> usize {
    actions.iter().filter(|a| a.op == SettleOp::Ack).count()
}

fn has_nack(actions: &[Action]) -> bool {
    actions
        .iter()
        .any(|a| matches!(a.op, SettleOp::Nack { .. }))
}

/// Whether the message is acked before the handler finishes (ack_first, or an `ack()` call).
fn acked_before_finish(policy: AckPolicy, calls: &[HandleCall]) -> bool {
    policy == AckPolicy::AckFirst || calls.contains(&HandleCall::Ack)
}

#[test]
fn the_domain_is_complete() {
    assert_eq!(call_sequences().len(), 1 + 3 + 9);
    assert_eq!(domain().len(), 4 * 8 * 13);
}

#[test]
fn every_delivery_is_settled_at_most_once_and_acked_at_most_once() {
    for (policy, calls, outcome) in domain() {
        let actions = decide(policy, &calls, &outcome).to_vec();
        let row = format!("{policy} {calls:?} {outcome:?} -> {actions:?}");
        assert!(acks(&actions) <= 1, "ack() is idempotent: {row}");
        assert!(actions.len() <= 1, "one settle per delivery: {row}");
        assert!(
            actions
                .iter()
                .all(|a| !matches!(a.op, SettleOp::Renew { .. })),
            "{row}"
        );
    }
}

#[test]
fn nack_has_no_effect_after_ack() {
    for (policy, calls, outcome) in domain() {
        if acked_before_finish(policy, &calls) {
            let actions = decide(policy, &calls, &outcome).to_vec();
            let row = format!("{policy} {calls:?} {outcome:?} -> {actions:?}");
            assert!(!has_nack(&actions), "{row}");
            assert_eq!(acks(&actions), 1, "{row}");
            // The ack is sent when it happens, never after the handler.
            let when = actions[0].when;
            if policy == AckPolicy::AckFirst {
                assert_eq!(when, When::Before, "{row}");
            } else {
                let first_ack = calls.iter().position(|c| *c == HandleCall::Ack).unwrap();
                assert_eq!(when, When::During(first_ack), "{row}");
            }
        }
    }
}

#[test]
fn reject_dead_letters_whatever_the_policy_unless_already_acked() {
    for (policy, calls, outcome) in domain() {
        let rejected_call = calls.iter().find_map(|c| match c {
            HandleCall::Reject(reason) => Some(*reason),
            _ => None,
        });
        let rejects = rejected_call.is_some() || matches!(outcome, Outcome::Reject(_));
        if !rejects || acked_before_finish(policy, &calls) {
            continue;
        }
        let actions = decide(policy, &calls, &outcome).to_vec();
        let row = format!("{policy} {calls:?} {outcome:?} -> {actions:?}");
        assert_eq!(actions.len(), 1, "{row}");
        assert_eq!(actions[0].when, When::After, "{row}");
        let SettleOp::Reject { reason } = &actions[0].op else {
            panic!("expected a reject: {row}");
        };
        // msg.reject(reason) with no reason, or RejectMessage(""), falls back to the kind name.
        let expected = match (&rejected_call, &outcome) {
            (Some(_), _) => "RejectMessage",
            (None, Outcome::Reject(text)) if !text.is_empty() => text.as_str(),
            _ => "RejectMessage",
        };
        assert_eq!(reason, expected, "{row}");
    }
}

#[test]
fn nack_then_normal_return_is_not_acked() {
    for policy in AckPolicy::ALL {
        for calls in call_sequences() {
            if !calls.contains(&HandleCall::Nack) || acked_before_finish(policy, &calls) {
                continue;
            }
            let actions = decide(policy, &calls, &Outcome::Ok).to_vec();
            let row = format!("{policy} {calls:?} -> {actions:?}");
            assert_eq!(acks(&actions), 0, "{row}");
            if !calls.iter().any(|c| matches!(c, HandleCall::Reject(_))) {
                let nack = SettleOp::Nack {
                    delay_ms: 0,
                    reason: Some(Reason::new("NackMessage")),
                };
                assert_eq!(actions.iter().map(|a| &a.op).collect::<Vec<_>>(), [&nack]);
            }
        }
    }
}

#[test]
fn an_error_after_nack_keeps_the_errors_reason() {
    // The x-error is the outcome's text, or its kind name: nack() gives no text of its own.
    for policy in [
        AckPolicy::NackOnError,
        AckPolicy::AckAlways,
        AckPolicy::Manual,
    ] {
        for (text, reason) in [("boom", "boom"), ("", "RuntimeError")] {
            let error = Outcome::Error {
                kind: Reason::new("RuntimeError"),
                text: Reason::new(text),
            };
            let expected = vec![Action {
                when: When::After,
                op: SettleOp::Nack {
                    delay_ms: 0,
                    reason: Some(Reason::new(reason)),
                },
            }];
            assert_eq!(
                decide(policy, &[HandleCall::Nack], &error).to_vec(),
                expected
            );
        }
    }
}

#[test]
fn manual_ok_without_calls_does_nothing() {
    assert!(decide(AckPolicy::Manual, &[], &Outcome::Ok).is_empty());
}

#[test]
fn ack_first_always_starts_with_an_ack_before_the_handler() {
    for (policy, calls, outcome) in domain() {
        if policy != AckPolicy::AckFirst {
            continue;
        }
        let actions = decide(policy, &calls, &outcome).to_vec();
        assert_eq!(
            actions,
            vec![Action {
                when: When::Before,
                op: SettleOp::Ack
            }],
            "{calls:?} {outcome:?}"
        );
    }
    // No other policy sends anything before the handler runs.
    for (policy, calls, outcome) in domain() {
        if policy != AckPolicy::AckFirst {
            let actions = decide(policy, &calls, &outcome).to_vec();
            assert!(actions.iter().all(|a| a.when != When::Before));
        }
    }
}

#[test]
fn the_policy_table_without_handle_calls() {
    // docs/protocol.md's policy table, row by row, for a handler that takes no handle.
    let boom = Outcome::Error {
        kind: Reason::new("RuntimeError"),
        text: Reason::new("boom"),
    };
    let after = |op: SettleOp| {
        vec![Action {
            when: When::After,
            op,
        }]
    };
    let nack_boom = SettleOp::Nack {
        delay_ms: 0,
        reason: Some(Reason::new("boom")),
    };
    let before_ack = vec![Action {
        when: When::Before,
        op: SettleOp::Ack,
    }];
    let cases = [
        (AckPolicy::NackOnError, &Outcome::Ok, after(SettleOp::Ack)),
        (AckPolicy::NackOnError, &boom, after(nack_boom)),
        (AckPolicy::AckAlways, &Outcome::Ok, after(SettleOp::Ack)),
        (AckPolicy::AckAlways, &boom, after(SettleOp::Ack)),
        (AckPolicy::AckFirst, &Outcome::Ok, before_ack.clone()),
        (AckPolicy::AckFirst, &boom, before_ack),
        (AckPolicy::Manual, &Outcome::Ok, vec![]),
        (AckPolicy::Manual, &boom, after(nack_boom)),
    ];
    for (policy, outcome, expected) in cases {
        assert_eq!(
            decide(policy, &[], outcome).to_vec(),
            expected,
            "{policy} {outcome:?}"
        );
    }
}

#[test]
fn the_dead_letter_reason_is_the_text_or_the_kind_name() {
    for policy in [AckPolicy::NackOnError, AckPolicy::Manual] {
        for outcome in outcomes() {
            let actions = decide(policy, &[], &outcome).to_vec();
            let reason = match (&outcome, actions.first().map(|a| &a.op)) {
                (Outcome::Error { .. } | Outcome::Nack(_), Some(SettleOp::Nack { reason, .. })) => {
                    (*reason).expect("the runtime always names its nacks")
                }
                (Outcome::Reject(_), Some(SettleOp::Reject { reason })) => *reason,
                (Outcome::Ok | Outcome::Ack, _) => continue,
                (_, other) => panic!("{policy} {outcome:?} -> {other:?}"),
            };
            let expected = match &outcome {
                Outcome::Error { text, .. } if text.is_empty() => "RuntimeError",
                Outcome::Error { text, .. } => text.as_str(),
                Outcome::Nack(text) if text.is_empty() => "NackMessage",
                Outcome::Reject(text) if text.is_empty() => "RejectMessage",
                Outcome::Nack(text) | Outcome::Reject(text) => text.as_str(),
                Outcome::Ok | Outcome::Ack => unreachable!(),
            };
            assert_eq!(reason, expected, "{policy} {outcome:?}");
            assert_eq!(outcome.reason(), expected, "{outcome:?}");
        }
    }
}

#[test]
fn the_whole_decision_table() {
    insta::assert_snapshot!("decision_table", render_table());
}

#[test]
fn settle_errors_are_classified_as_rheos_table() {
    let classes = [
        (SettleError::StaleLease, ErrorAction::Drop),
        (SettleError::ReceiptMismatch, ErrorAction::Drop),
        (SettleError::BackendUnavailable, ErrorAction::LeaveToExpire),
        (
            SettleError::Ambiguous("timeout".into()),
            ErrorAction::LeaveToExpire,
        ),
        (
            SettleError::Ambiguous("".into()),
            ErrorAction::LeaveToExpire,
        ),
        (SettleError::Failed("disk".into()), ErrorAction::Nack),
        (SettleError::Invalid("limit 0".into()), ErrorAction::Nack),
    ];
    for variant in Variant::ALL.iter().copied() {
        for (error, expected) in &classes {
            let expected = match error {
                // The planted runtime bug: it invents a nack after an ambiguous ack.
                SettleError::Ambiguous(_) if variant == Variant::NackOnAmbiguous => {
                    ErrorAction::Nack
                }
                _ => *expected,
            };
            assert_eq!(classify(error, variant), expected, "{variant} {error}");
        }
    }
}

// --- The second seed's printed examples, run against the pure broker -------------------------

/// What a handler run sees: the event's sequence number and `msg.deliveries`.
type Handler<'a> = dyn FnMut(u32, u32) -> (Vec<HandleCall>, Outcome) + 'a;

/// One worker runs the consumer runtime against `broker` until nothing is deliverable: fetch
/// one lease, decide, apply the settles, repeat; when nothing can be fetched, advance the
/// manual clock past the lease so that expiries and delayed redeliveries happen.
fn run_runtime(broker: &mut Broker, policy: AckPolicy, handler: &mut Handler<'_>) -> u32 {
    let lease_ms = broker.config().lease_ms;
    let mut now_ms = 0;
    let mut handler_calls = 0;
    for _ in 0..100 {
        let leases = broker.fetch(0, 1, now_ms, None).expect("fetch");
        let Some(lease) = leases.into_iter().next() else {
            if broker.all_settled() {
                return handler_calls;
            }
            now_ms += lease_ms + 1;
            continue;
        };
        let (calls, outcome) = handler(lease.seq, lease.attempt);
        let actions = decide(policy, &calls, &outcome).to_vec();
        handler_calls += 1;
        for action in actions {
            // Every settle here is sent by the lease holder in time: the broker accepts it.
            broker
                .settle(
                    &leasehold_model::SettleRequest::new(&lease, action.op, now_ms),
                    now_ms,
                )
                .unwrap_or_else(|e| panic!("{policy}: {:?} refused: {e}", action.op));
        }
        now_ms += 1;
    }
    panic!("{policy}: still deliverable after 100 rounds");
}

fn seed_broker(variant: Variant, events: u32) -> Broker {
    let mut broker = Broker::new(BrokerConfig {
        group_count: 1,
        lease_ms: 200, // claim_idle_ms=200
        max_attempts: max_attempts_for_retries(1),
        variant,
    });
    for _ in 0..events {
        broker.publish();
    }
    broker
}

fn dead_letters(broker: &Broker) -> Vec<String> {
    broker
        .records(0)
        .iter()
        .filter_map(|record| match record {
            Record::DeadLettered { reason } => Some(reason.to_string()),
            _ => None,
        })
        .collect()
}

/// The seed's first table: a handler that always raises, `max_retries=1`.
fn policy_table(variant: Variant) -> String {
    let mut out = String::new();
    for policy in AckPolicy::ALL {
        let mut broker = seed_broker(variant, 1);
        let mut always_raises = |_seq: u32, _deliveries: u32| {
            let boom = Outcome::Error {
                kind: Reason::new("RuntimeError"),
                text: Reason::new("boom"),
            };
            (vec![], boom)
        };
        let calls = run_runtime(&mut broker, policy, &mut always_raises);
        let pending = broker.records(0).iter().filter(|r| !r.is_settled()).count();
        let dlq = dead_letters(&broker);
        writeln!(
            out,
            "{:14} handler calls={calls} pending={pending} dlq={}",
            policy.name(),
            dlq.len()
        )
        .unwrap();
        for reason in dlq {
            writeln!(out, "{:14}   x-error={reason:?}", "").unwrap();
        }
    }
    out
}

#[test]
fn the_seeds_policy_table_for_a_handler_that_always_raises() {
    let table = policy_table(Variant::RedisStreams);
    // The seed's printed output, line for line, plus the x-error of each dead letter.
    let expected = "\
nack_on_error  handler calls=2 pending=0 dlq=1
                 x-error=\"boom\"
ack_always     handler calls=1 pending=0 dlq=0
ack_first      handler calls=1 pending=0 dlq=0
manual         handler calls=2 pending=0 dlq=1
                 x-error=\"boom\"
";
    assert_eq!(table, expected);
    // The same decisions on the fenced reference give the same table.
    for variant in [Variant::Fenced, Variant::RedisStreamsFenced] {
        assert_eq!(policy_table(variant), expected, "{variant}");
    }
    insta::assert_snapshot!("seed_policy_table", table);
}

/// The seed's AckMessage / NackMessage example: ok, stale → AckMessage, busy → NackMessage.
fn control_flow_example(variant: Variant) -> String {
    let kinds = ["ok", "stale", "busy"];
    let mut broker = seed_broker(variant, kinds.len() as u32);
    let mut calls: Vec<(&str, u32)> = Vec::new();
    let mut handle = |seq: u32, deliveries: u32| {
        let kind = kinds[seq as usize - 1];
        calls.push((kind, deliveries));
        let outcome = match kind {
            "stale" => Outcome::Ack,
            "busy" => Outcome::Nack(Reason::EMPTY),
            _ => Outcome::Ok,
        };
        (vec![], outcome)
    };
    run_runtime(&mut broker, AckPolicy::NackOnError, &mut handle);
    let calls = calls
        .iter()
        .map(|(kind, n)| format!("('{kind}', {n})"))
        .collect::<Vec<_>>()
        .join(", ");
    let dlq = dead_letters(&broker)
        .iter()
        .map(|reason| format!("'{reason}'"))
        .collect::<Vec<_>>()
        .join(", ");
    format!("[{calls}]\ndlq: [{dlq}]\n")
}

#[test]
fn the_seeds_ack_and_nack_message_example() {
    let printed = control_flow_example(Variant::RedisStreams);
    // The seed prints dlq: [''] but documents x-error as the text, falling back to the class
    // name when the text is empty: leasehold follows the documented rule.
    let expected = "[('ok', 1), ('stale', 1), ('busy', 1), ('busy', 2)]\ndlq: ['NackMessage']\n";
    assert_eq!(printed, expected);
    for variant in [Variant::Fenced, Variant::RedisStreamsFenced] {
        assert_eq!(control_flow_example(variant), expected, "{variant}");
    }
    insta::assert_snapshot!("seed_control_flow_example", printed);
}
