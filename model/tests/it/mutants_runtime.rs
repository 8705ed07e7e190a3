//! The runtime's names and guarantees as docs/protocol.md states them: the policy names used on
//! the command line and in scenario files, which policies promise at least once, which handler
//! outcomes count as a completed run, and `max_retries = r` ⇒ `max_attempts = r + 1`.

use leasehold_model::runtime::{decide, max_attempts_for_retries, When};
use leasehold_model::types::{Reason, SettleOp};
use leasehold_model::{AckPolicy, Outcome};

#[test]
fn every_policy_is_found_by_its_snake_case_name_and_prints_it() {
    let named = [
        (AckPolicy::NackOnError, "nack_on_error"),
        (AckPolicy::AckAlways, "ack_always"),
        (AckPolicy::AckFirst, "ack_first"),
        (AckPolicy::Manual, "manual"),
    ];
    for (policy, name) in named {
        assert_eq!(policy.name(), name);
        assert_eq!(policy.to_string(), name);
        assert_eq!(AckPolicy::from_name(name), Some(policy), "{name}");
    }
    for unknown in ["", "nack-on-error", "NackOnError", "ack", "manual "] {
        assert_eq!(AckPolicy::from_name(unknown), None, "{unknown:?}");
    }
}

#[test]
fn only_nack_on_error_and_manual_promise_at_least_once() {
    // The guarantee column of the policy table.
    assert!(AckPolicy::NackOnError.at_least_once());
    assert!(AckPolicy::Manual.at_least_once());
    assert!(!AckPolicy::AckAlways.at_least_once());
    assert!(!AckPolicy::AckFirst.at_least_once());
}

#[test]
fn a_run_completed_its_work_when_it_returned_or_raised_ack_message() {
    let reason = Reason::new("boom");
    assert!(Outcome::Ok.is_success());
    assert!(Outcome::Ack.is_success());
    assert!(!Outcome::Nack(reason).is_success());
    assert!(!Outcome::Reject(reason).is_success());
    assert!(!Outcome::Error {
        kind: Reason::new("ValueError"),
        text: reason,
    }
    .is_success());
}

#[test]
fn max_retries_counts_the_deliveries_after_the_first() {
    assert_eq!(max_attempts_for_retries(0), 1);
    assert_eq!(max_attempts_for_retries(1), 2);
    assert_eq!(max_attempts_for_retries(4), 5);
    assert_eq!(max_attempts_for_retries(u32::MAX), u32::MAX);
}

#[test]
fn a_nack_after_an_error_carries_the_error_text_as_its_dead_letter_reason() {
    let outcome = Outcome::Error {
        kind: Reason::new("ValueError"),
        text: Reason::new("bad payload"),
    };
    let actions = decide(AckPolicy::NackOnError, &[], &outcome);
    assert_eq!(actions.len(), 1);
    assert_eq!(actions[0].when, When::After);
    assert_eq!(
        actions[0].op,
        SettleOp::Nack {
            delay_ms: 0,
            reason: Some(Reason::new("bad payload")),
        }
    );
}
