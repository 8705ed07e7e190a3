//! The core's clock and width as a program sees them, timed against the monotonic clock:
//!
//! * the **clock**: a chain of dependent integer additions, one cycle each on every x86-64 and
//!   AArch64 core, in GHz;
//! * the **width**: six independent chains of the same additions, in additions a cycle (the
//!   second run's rate over the first's). A core retires several a cycle when it is this
//!   program's alone (the 2-core AMD host of `reports/sim-bench.md`: up to about 4.7); when
//!   something else competes for the same core (on a shared host, typically a neighbour on its
//!   other hardware thread), the chains share its arithmetic units and the width falls, while
//!   the clock may hold.
//!
//! On a shared host a program's speed moves with both; a benchmark prints them beside its
//! timings, so that a timing can be read as cycles and its round told apart by what the core
//! had to give (`benches/sim.sh`, which builds it with `rustc -O`). Run alone:
//!
//!     cargo bench --bench clock           # or: taskset -c 1 target/release/deps/clock-*
//!
//! An optional argument sets each run's length in millions of iterations (default 400, about
//! a second at 3 GHz for the chain). The output is one line, the clock first:
//! `3.612 GHz, 4.41 additions a cycle`.

use std::time::Instant;

/// The one-cycle addition of 1 to register `$r`, in the architecture's assembly syntax.
#[cfg(target_arch = "x86_64")]
macro_rules! inc {
    ($r:literal) => {
        concat!("add ", $r, ", 1")
    };
}
#[cfg(target_arch = "aarch64")]
macro_rules! inc {
    ($r:literal) => {
        concat!("add ", $r, ", ", $r, ", 1")
    };
}
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("the clock probe knows the one-cycle addition of x86-64 and AArch64 only");

/// Eight dependent additions of 1 to `x`: eight cycles.
#[inline(always)]
fn eight(mut x: u64) -> u64 {
    // SAFETY: register arithmetic only; no memory, stack or flags another statement reads.
    unsafe {
        std::arch::asm!(
            inc!("{x}"), inc!("{x}"), inc!("{x}"), inc!("{x}"),
            inc!("{x}"), inc!("{x}"), inc!("{x}"), inc!("{x}"),
            x = inout(reg) x,
            options(nomem, nostack),
        );
    }
    x
}

/// Four rounds of one addition to each of six independent registers: 24 additions that a core
/// may run side by side.
#[inline(always)]
fn wide(x: &mut [u64; 6]) {
    // SAFETY: register arithmetic only; no memory, stack or flags another statement reads.
    unsafe {
        std::arch::asm!(
            inc!("{a}"), inc!("{b}"), inc!("{c}"), inc!("{d}"), inc!("{e}"), inc!("{f}"),
            inc!("{a}"), inc!("{b}"), inc!("{c}"), inc!("{d}"), inc!("{e}"), inc!("{f}"),
            inc!("{a}"), inc!("{b}"), inc!("{c}"), inc!("{d}"), inc!("{e}"), inc!("{f}"),
            inc!("{a}"), inc!("{b}"), inc!("{c}"), inc!("{d}"), inc!("{e}"), inc!("{f}"),
            a = inout(reg) x[0], b = inout(reg) x[1], c = inout(reg) x[2],
            d = inout(reg) x[3], e = inout(reg) x[4], f = inout(reg) x[5],
            options(nomem, nostack),
        );
    }
}

fn main() {
    // `cargo bench` passes `--bench`; the length is the one other argument.
    let millions: u64 = match std::env::args().skip(1).find(|a| !a.starts_with("--")) {
        None => 400,
        Some(text) => match text.parse() {
            Ok(n) if n > 0 => n,
            _ => {
                eprintln!("clock: the argument is a run length in millions, not {text:?}");
                std::process::exit(2);
            }
        },
    };
    let iterations = millions * 1_000_000;
    let mut x = 0u64;
    let start = Instant::now();
    for _ in 0..iterations {
        x = eight(x);
    }
    let seconds = start.elapsed().as_secs_f64();
    assert_eq!(x, iterations * 8, "the chain ran whole");
    let hz = (iterations * 8) as f64 / seconds;
    let mut chains = [0u64; 6];
    let start = Instant::now();
    for _ in 0..iterations {
        wide(&mut chains);
    }
    let seconds = start.elapsed().as_secs_f64();
    assert_eq!(chains, [iterations * 4; 6], "the chains ran whole");
    let per_cycle = (iterations * 24) as f64 / seconds / hz;
    println!("{:.3} GHz, {per_cycle:.2} additions a cycle", hz / 1e9);
}
