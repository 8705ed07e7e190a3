//! The fingerprint hash itself: equal values hash equal, a changed word or order changes it,
//! and small inputs spread over the whole word.

use leasehold_model::check::fingerprint::fingerprint;

#[test]
fn equal_values_have_equal_fingerprints_and_a_changed_word_changes_it() {
    let a: Vec<u32> = (0..300).collect();
    let mut b = a.clone();
    assert_eq!(fingerprint(&a), fingerprint(&b));
    b[250] += 1;
    assert_ne!(fingerprint(&a), fingerprint(&b));
    // Order matters (lanes are position-dependent).
    assert_ne!(fingerprint(&(1u32, 2u32)), fingerprint(&(2u32, 1u32)));
    assert_ne!(fingerprint(&[0u64; 4][..]), fingerprint(&[0u64; 5][..]));
}

#[test]
fn small_inputs_spread_over_the_whole_word() {
    // 2^16 consecutive inputs: no collision, and every output bit is set about half the
    // time.
    let mut seen = std::collections::BTreeSet::new();
    let mut ones = [0u32; 64];
    for i in 0u32..1 << 16 {
        let f = fingerprint(&i);
        assert!(seen.insert(f));
        for (bit, count) in ones.iter_mut().enumerate() {
            *count += (f >> bit & 1) as u32;
        }
    }
    for count in ones {
        assert!((30_000..35_500).contains(&count), "{count}");
    }
}
