//! The names a run uses on the server: its keys under one prefix, entry ids and their
//! sequence numbers, the values of a group's lease hash. No server needed.

use leasehold_redis::keys::{entry_id, seq_of, Keys};
use leasehold_redis::state::{idle_value, Kept};

#[test]
fn entry_ids_round_trip() {
    for seq in [1, 2, 10, u32::MAX] {
        assert_eq!(seq_of(&entry_id(seq)), Some(seq));
    }
    for bad in ["0-0", "1-1", "x-0", "1", ""] {
        assert_eq!(seq_of(bad), None, "{bad}");
    }
}

#[test]
fn every_key_is_under_the_prefix() {
    let keys = Keys::new("leasehold:t:", 2);
    assert_eq!(keys.dlq, "leasehold:t:stream-dlq");
    assert!(keys.all().iter().all(|k| k.starts_with("leasehold:t:")));
    assert_eq!(keys.all().len(), 5);
}

#[test]
fn lease_hash_values_round_trip() {
    assert_eq!(
        Kept::parse("L 12 3400"),
        Some(Kept::Leased {
            lease_id: 12,
            deadline_ms: 3400
        })
    );
    assert_eq!(
        Kept::parse(&idle_value(77)),
        Some(Kept::Idle { not_before_ms: 77 })
    );
    for bad in ["", "L 1", "X 1 2", "L 1 2 3", "L a 2"] {
        assert_eq!(Kept::parse(bad), None, "{bad}");
    }
}
