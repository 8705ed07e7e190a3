//! The store's segments: they double in size and tile the event indexes without a gap.
#![cfg(not(loom))]

use leasehold_embedded::store::{locate, segment_events};

#[test]
fn segments_tile_the_index_space() {
    let mut expected = (0, 0);
    for index in 0..10_000 {
        assert_eq!(locate(index), expected, "index {index}");
        expected.1 += 1;
        if expected.1 == segment_events(expected.0) {
            expected = (expected.0 + 1, 0);
        }
    }
}
