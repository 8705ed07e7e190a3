//! A replayed scenario's timeline, plain and with times and deadlines.

use leasehold_front::{replay, replay_styled, BackendKind, Replayed, Style};

/// `Style { times: true }` gives the timeline `leasehold replay FILE --times` prints; the
/// default is the plain one.
#[test]
fn a_styled_replay_shows_times_and_deadlines() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/t0-t5-stale-ack.toml"
    );
    let plain = replay(file, &BackendKind::Pure).expect("replayed");
    let timed = replay_styled(file, &BackendKind::Pure, Style { times: true }).expect("replayed");
    let first = |r: &Replayed| r.timeline().lines().next().unwrap_or_default().to_string();
    assert_eq!(first(&plain), "t0  worker A fetches event E1 → lease L1");
    assert_eq!(
        first(&timed),
        "t0  [0 ms] worker A fetches event E1 → lease L1 (deadline 30000 ms)"
    );
    assert_eq!(plain.violations, timed.violations);
    assert_eq!(plain.trace_hash, timed.trace_hash);
}
