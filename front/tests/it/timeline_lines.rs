//! The lines `leasehold timeline FILE` prints of a scripted scenario
//! ([`leasehold_front::replay::timeline_lines`]): the t0–t5 stale-ack story of the README, a
//! stretch of it, and a stretch past its end refused in one line naming the file.

use leasehold_front::replay::{load, run_script, timeline_lines};
use leasehold_sim::seeded::BackendKind;
use leasehold_sim::timeline::Style;
use std::path::Path;

const STALE_ACK: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../scenarios/t0-t5-stale-ack.toml"
);

#[test]
fn the_story_and_a_stretch_of_it() {
    let replay = run_script(
        &load(Path::new(STALE_ACK)).expect("loads"),
        &BackendKind::Pure,
    )
    .expect("runs");
    let all = timeline_lines(&replay, Style::default(), None).expect("shown");
    // The README's story: six lines, t0 to t5, and the fenced broker breaks nothing.
    assert_eq!(all.len(), 6, "{all:?}");
    assert_eq!(all[0], "t0  worker A fetches event E1 → lease L1");
    assert!(all[5].starts_with("t5  worker B ACK L2"), "{all:?}");
    let stretch = timeline_lines(&replay, Style::default(), Some(1..3)).expect("shown");
    assert_eq!(stretch, all[1..3].to_vec());
    let text = timeline_lines(&replay, Style::default(), Some(10..12))
        .expect_err("past the end")
        .to_string();
    assert!(
        text.contains("t0-t5-stale-ack.toml: --lines 10..12: the run shows 6 lines"),
        "{text}"
    );
}
