//! The model checker's fingerprint tables: the concurrent set of seen states and the map that
//! hands out dense ids.

use leasehold_model::check::table::{FingerprintMap, FingerprintSet};

#[test]
fn inserts_report_new_fingerprints_once_across_growth() {
    let set = FingerprintSet::new();
    let fp = |i: u64| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1).rotate_left(17);
    for i in 0..100_000 {
        assert!(set.insert(fp(i)), "{i}");
    }
    for i in 0..100_000 {
        assert!(!set.insert(fp(i)), "{i}");
        assert!(set.contains(fp(i)));
    }
    assert!(!set.contains(fp(100_001)));
    assert_eq!(set.len(), 100_000);
}

#[test]
fn threads_inserting_at_once_see_each_fingerprint_new_exactly_once() {
    // Four threads insert overlapping ranges through the table's doublings (from 4,096
    // slots to 2^20): every fingerprint is new to exactly one of them, and the set ends
    // with each once.
    let set = FingerprintSet::new();
    let fp = |i: u64| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1).rotate_left(29);
    let total = 300_000u64;
    let new_counts: Vec<Vec<u64>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4u64)
            .map(|t| {
                let set = &set;
                scope.spawn(move || {
                    let mut inserter = set.inserter();
                    let mut new = Vec::new();
                    // Each thread covers half the range, from its own starting point.
                    for k in 0..total / 2 {
                        let i = (k + t * total / 4) % total;
                        if inserter.insert(fp(i)) {
                            new.push(i);
                        }
                    }
                    new
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all: Vec<u64> = new_counts.into_iter().flatten().collect();
    all.sort_unstable();
    let expected: Vec<u64> = (0..total).collect();
    assert_eq!(all, expected);
    assert_eq!(set.len(), total as usize);
    for i in 0..total {
        assert!(set.contains(fp(i)));
    }
    assert!(!set.contains(fp(total)));
    assert!(set.bytes() >= (total as usize) * 3 / 2 * 8);
}

#[test]
fn the_map_hands_out_dense_ids_in_insertion_order() {
    let mut map = FingerprintMap::default();
    for i in 1..5_000u64 {
        assert_eq!(map.id_or_insert(i * 7919), ((i - 1) as u32, true));
    }
    for i in 1..5_000u64 {
        assert_eq!(map.id_or_insert(i * 7919), ((i - 1) as u32, false));
    }
    assert_eq!(map.len(), 4_999);
}
