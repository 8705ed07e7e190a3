//! How a broker restart stops the server without losing a consumer's state (docs/jetstream.md,
//! F20).
//!
//! nats-server 2.9.10 keeps each consumer's state in `obs/<consumer>/o.dat` and writes it from
//! one writer per consumer, at most every [`STATE_WRITE_PERIOD`], with `os.WriteFile` (the file
//! is truncated, then written). A change that comes while the writer waits out its period is
//! written at the end of the period, and one more write of the same state follows a period
//! later. On `SIGTERM` the server stops each consumer's store: it writes the state itself only
//! when a change is not yet taken by the writer, and waits for the writer only then; a write
//! under way is cut off when the process exits, between the truncation and the write, and the
//! file is left **empty** (the server then starts that consumer afresh).
//!
//! So a restart stops the server only once its writers are idle ([`wait_idle`]): no change for
//! [`CHANGE_QUIET`], no state file written for [`STATE_IDLE`], and none empty (a write under
//! way: under load its bytes can come long after its truncation, F21). The state files are then
//! complete and final: their copies ([`read_complete`]) are what the server holds, and a file
//! the stop emptied all the same is put back from its copy ([`put_back_emptied`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// nats-server 2.9's least time between two writes of one consumer's state (`flushLoop`).
pub const STATE_WRITE_PERIOD: Duration = Duration::from_millis(100);

/// How long after the last request that changed a consumer the stop may come: by then the
/// writer has taken that change (it writes at most one [`STATE_WRITE_PERIOD`] after it).
pub const CHANGE_QUIET: Duration = Duration::from_millis(150);

/// How long every state file must have been left unwritten before the stop: two periods, so
/// that no write that follows the last one a period later is still due.
pub const STATE_IDLE: Duration = Duration::from_millis(150);

/// How long a restart waits for the writers to be idle before it stops the server anyway.
pub const IDLE_WAIT_MAX: Duration = Duration::from_secs(5);

const _: () = assert!(CHANGE_QUIET.as_millis() > STATE_WRITE_PERIOD.as_millis());
const _: () = assert!(STATE_IDLE.as_millis() > STATE_WRITE_PERIOD.as_millis());

static STATES_PUT_BACK: AtomicU64 = AtomicU64::new(0);

/// Consumer state files that a stop emptied and a restart put back, in this process so far.
pub fn states_put_back() -> u64 {
    STATES_PUT_BACK.load(Ordering::Relaxed)
}

/// The state file of each of `group_count` consumers (`g0`, `g1`, …) of `stream` in the store
/// folder `store`: `jetstream/$G/streams/<stream>/obs/g<k>/o.dat`.
pub fn state_files(store: &Path, stream: &str, group_count: usize) -> Vec<PathBuf> {
    let obs = store
        .join("jetstream")
        .join("$G")
        .join("streams")
        .join(stream)
        .join("obs");
    (0..group_count)
        .map(|group| obs.join(format!("g{group}")).join("o.dat"))
        .collect()
}

/// How long ago `file` was last written, and whether it is empty (none: no such file, nothing
/// to wait for).
fn written_ago(file: &Path) -> Option<(Duration, bool)> {
    let meta = std::fs::metadata(file).ok()?;
    let modified = meta.modified().ok()?;
    // A time in the future (a coarse clock) counts as just written.
    Some((
        modified.elapsed().unwrap_or(Duration::ZERO),
        meta.len() == 0,
    ))
}

/// Waits until the server's state writers are idle: `last_change` (the last request that
/// changed a consumer) at least [`CHANGE_QUIET`] ago, and each of `files` written at least
/// [`STATE_IDLE`] ago and not empty. An empty state file is a write under way, truncated and
/// not yet written: under load the writer's bytes can come more than [`STATE_IDLE`] after its
/// truncation (docs/jetstream.md, F21). Gives up after [`IDLE_WAIT_MAX`]; whether they became
/// idle.
pub fn wait_idle(last_change: Option<Instant>, files: &[PathBuf]) -> bool {
    let waiting = Instant::now();
    loop {
        let quiet = last_change.is_none_or(|at| at.elapsed() >= CHANGE_QUIET);
        let idle = files
            .iter()
            .all(|file| written_ago(file).is_none_or(|(ago, empty)| !empty && ago >= STATE_IDLE));
        if quiet && idle {
            return true;
        }
        if waiting.elapsed() >= IDLE_WAIT_MAX {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `file` as the server last wrote it: read again while it is empty (a write between its
/// truncation and its bytes), for at most [`IDLE_WAIT_MAX`]. None: no such file, or it
/// stayed empty.
pub fn read_complete(file: &Path) -> Option<Vec<u8>> {
    let reading = Instant::now();
    loop {
        let bytes = std::fs::read(file).ok()?;
        if !bytes.is_empty() {
            return Some(bytes);
        }
        if reading.elapsed() >= IDLE_WAIT_MAX {
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// After the stop: each of `files` left empty is written back from its copy in `copies` (read
/// by [`read_complete`] once the writers were idle). The error is one line.
pub fn put_back_emptied(files: &[PathBuf], copies: &[Option<Vec<u8>>]) -> Result<(), String> {
    for (file, copy) in files.iter().zip(copies) {
        let Some(copy) = copy else { continue };
        let emptied = std::fs::metadata(file).is_ok_and(|meta| meta.len() == 0);
        if emptied {
            std::fs::write(file, copy).map_err(|e| format!("{}: {e}", file.display()))?;
            STATES_PUT_BACK.fetch_add(1, Ordering::Relaxed);
        }
    }
    Ok(())
}
