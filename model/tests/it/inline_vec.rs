//! `InlineVec`: a list kept inline up to a few items and on the heap beyond, against `Vec`.

use leasehold_model::inline::InlineVec;

/// Every operation agrees with a `Vec` across the inline/heap boundary, both ways.
#[test]
fn behaves_as_a_vec_across_the_inline_boundary() {
    let mut list: InlineVec<u32, 3> = InlineVec::new();
    let mut model: Vec<u32> = Vec::new();
    let mut x = 7u32;
    for round in 0..400u32 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let len = model.len();
        match x % 7 {
            0 | 1 => {
                list.push(round);
                model.push(round);
            }
            2 => {
                let at = (x as usize / 7) % (len + 1);
                list.insert(at, round);
                model.insert(at, round);
            }
            3 if len > 0 => {
                let at = (x as usize / 7) % len;
                assert_eq!(list.remove(at), model.remove(at));
            }
            4 => {
                list.retain(|v| *v % 3 != 0);
                model.retain(|v| *v % 3 != 0);
            }
            5 => {
                let to = (x as usize / 7) % (len + 2);
                list.truncate(to);
                model.truncate(to);
            }
            6 if x.is_multiple_of(2) => {
                // Room ahead changes nothing that is in the list.
                list.reserve(x as usize % 9);
            }
            _ => {
                let mut copy = InlineVec::from_slice(&[1, 2, 3, 4, 5]);
                copy.clone_from(&list);
                assert_eq!(copy.as_slice(), model.as_slice());
                assert_eq!(list.clone().as_slice(), model.as_slice());
            }
        }
        assert_eq!(list.as_slice(), model.as_slice(), "round {round}");
        assert_eq!(list.len(), model.len());
    }
    list.clear();
    assert!(list.is_empty());
}
