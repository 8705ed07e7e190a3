//! The queue against the shared conformance suite (`leasehold::conformance`), as the embedded
//! broker and the Redis backend run it: the fixed queue gives the fenced reference broker's
//! outputs and state after every step of 600 sequences; the queue that acks by event id does
//! not, and the suite names the step where it parts from the reference.

use leasehold::conformance::Suite;
use leasehold::Variant;
use leasehold_example_queue::{AcksByIdQueue, FixedQueue};

#[test]
fn the_fixed_queue_conforms_to_the_fenced_reference() {
    let ran = Suite::new(Variant::Fenced)
        .cases(600)
        .run(|config| Ok(FixedQueue::new(config)), |_, _, _| Ok(()));
    match ran {
        Ok(ran) => assert_eq!(ran.cases, 600),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn the_suite_catches_the_queue_that_acks_by_event_id() {
    let ran = Suite::new(Variant::Fenced)
        .cases(600)
        .run(|config| Ok(AcksByIdQueue::new(config)), |_, _, _| Ok(()));
    let message = match ran {
        Ok(ran) => panic!(
            "{} sequences passed on the queue that acks by event id",
            ran.cases
        ),
        Err(e) => e.to_string(),
    };
    // The first difference is a settle the reference refuses as stale and the queue accepts.
    assert!(
        message.contains("Settle {") && message.contains("Err(stale_lease)"),
        "{message}"
    );
}
