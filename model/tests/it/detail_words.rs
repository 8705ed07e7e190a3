//! A violation's detail: the oracle's wording, a timeline's, its moments, and its JSON.

use leasehold_model::detail;
use leasehold_model::detail::{Detail, Happened, Issuance, Moment, Part, Piece};

fn groups(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

fn sample() -> Detail {
    detail![
        "renew of ",
        Issuance(2),
        " accepted on ",
        Part::event(1, 7),
        " while ",
        Issuance(0),
        " is unexpired; ",
        Part::frontier(1),
        " is 3 but ",
        Part::Seq(5),
        " is not settled",
    ]
}

#[test]
fn the_oracle_words_it_by_index() {
    assert_eq!(
        sample().to_string(),
        "renew of L3 accepted on event 7 of group 1 while L1 is unexpired; frontier of group 1 is 3 but event 5 is not settled"
    );
}

#[test]
fn a_timeline_words_it_by_name() {
    let named = sample().named(&groups(&["payments", "orders"]), |i| {
        (i == Issuance(2)).then_some("second")
    });
    assert_eq!(
        named,
        "renew of second accepted on E7 of orders while L1 is unexpired; frontier of orders is 3 but E5 is not settled"
    );
    // One group: no group is named; an unknown group keeps its index.
    let one = detail![
        Part::event(0, 2),
        ", ",
        Part::event(4, 3),
        " and ",
        Part::frontier(0)
    ];
    assert_eq!(
        one.named(&groups(&["orders"]), |_| None),
        "E2, E3 of group 4 and frontier"
    );
}

#[test]
fn a_moment_is_a_time_to_the_oracle_and_a_piece_of_its_own_to_a_timeline() {
    let expired = Moment::new(Happened::Expired(Issuance(0)), 30_000);
    let detail = detail![
        "ack of ",
        Issuance(0),
        " accepted, but it expired at ",
        expired
    ];
    assert_eq!(
        detail.to_string(),
        "ack of L1 accepted, but it expired at 30000 ms"
    );
    assert_eq!(
        detail.named(&groups(&["g"]), |_| Some("first")),
        "ack of first accepted, but it expired at 30000 ms"
    );
    let mut told = String::new();
    detail.tell(
        &groups(&["g"]),
        |_| None,
        |piece| match piece {
            Piece::Text(text) => told.push_str(text),
            Piece::At(moment) => {
                assert_eq!(*moment, expired);
                told.push_str("t3");
            }
        },
    );
    assert_eq!(told, "ack of L1 accepted, but it expired at t3");
}

#[test]
fn it_serializes_as_its_wording_and_reads_back_as_words() {
    let json = serde_json::to_string(&sample()).expect("serialized");
    assert_eq!(json, format!("{:?}", sample().to_string()));
    let back: Detail = serde_json::from_str(&json).expect("read back");
    assert_eq!(back, sample(), "the same words");
    assert_ne!(back, detail!["renew of L3"]);
    assert!(sample() == sample().to_string().as_str());
    assert!(sample() != "renew of L3 accepted");
    assert!(sample() != format!("{} and more", sample()).as_str());
    assert_eq!(
        back.named(&groups(&["a", "b"]), |_| None),
        sample().to_string()
    );
}
