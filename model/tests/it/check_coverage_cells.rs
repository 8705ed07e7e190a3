//! The coverage cells: each has its own witness bit, and a cell a variant cannot reach is not
//! counted against it.

use leasehold_model::check::coverage::{all_bits, Cell};
use leasehold_model::check::state::Witness;
use leasehold_model::Variant;

#[test]
fn cell_bits_are_distinct_and_above_the_sometimes_witnesses() {
    let mut seen: Witness = 0;
    for &cell in Cell::ALL {
        assert_eq!(seen & cell.bit(), 0, "{cell:?}");
        assert_eq!(
            cell.bit() & leasehold_model::check::state::witness::ALL,
            0,
            "{cell:?}"
        );
        seen |= cell.bit();
    }
    assert_eq!(seen, all_bits());
}

#[test]
fn an_unfenced_settle_cannot_be_refused_as_stale() {
    assert!(!Cell::AckStale.supported_by(Variant::UnfencedSettle));
    assert!(Cell::AckStale.supported_by(Variant::Fenced));
    assert!(Cell::RenewStale.supported_by(Variant::UnfencedSettle));
}
