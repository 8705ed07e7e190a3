//! A restart's wait for the server's state writers, on a state file written by hand. No
//! server needed.

use leasehold_jetstream::stop::{read_complete, wait_idle, STATE_IDLE};
use std::time::Duration;

/// F21: a state file truncated longer ago than [`STATE_IDLE`] whose bytes are still to come
/// is a write under way, not an idle writer.
#[test]
fn a_state_file_truncated_and_not_yet_written_is_waited_for() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let file = dir.path().join("o.dat");
    std::fs::write(&file, b"").expect("the truncation");
    let bytes = b"\x16\x02state".to_vec();
    let late = STATE_IDLE + Duration::from_millis(150);
    let writer = {
        let (file, bytes) = (file.clone(), bytes.clone());
        std::thread::spawn(move || {
            std::thread::sleep(late);
            std::fs::write(file, bytes).expect("the write");
        })
    };
    assert!(wait_idle(None, std::slice::from_ref(&file)));
    assert_eq!(
        std::fs::read(&file).expect("the state file"),
        bytes,
        "the wait ended before the write that followed the truncation"
    );
    assert_eq!(read_complete(&file), Some(bytes));
    writer.join().expect("the writer");
}
