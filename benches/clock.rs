//! The core's clock as a program sees it: a chain of dependent integer additions, one cycle
//! each on every x86-64 and AArch64 core, timed against the monotonic clock. Prints the rate in
//! GHz. On a shared host the core's clock moves with its neighbours' load, and a program's
//! speed with it; a benchmark prints this beside its timings, so that a timing can be read as
//! cycles (`benches/sim.sh`, which builds it with `rustc -O`). Run alone:
//!
//!     cargo bench --bench clock           # or: taskset -c 1 target/release/deps/clock-*
//!
//! An optional argument sets the chain's length in millions of iterations (default 400, about
//! a second at 3 GHz).

use std::time::Instant;

/// Eight dependent additions of 1 to `x`: eight cycles.
#[inline(always)]
fn eight(mut x: u64) -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: register arithmetic only; no memory, stack or flags another statement reads.
    unsafe {
        std::arch::asm!(
            "add {x}, 1", "add {x}, 1", "add {x}, 1", "add {x}, 1",
            "add {x}, 1", "add {x}, 1", "add {x}, 1", "add {x}, 1",
            x = inout(reg) x,
            options(nomem, nostack),
        );
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: register arithmetic only; no memory, stack or flags another statement reads.
    unsafe {
        std::arch::asm!(
            "add {x}, {x}, 1", "add {x}, {x}, 1", "add {x}, {x}, 1", "add {x}, {x}, 1",
            "add {x}, {x}, 1", "add {x}, {x}, 1", "add {x}, {x}, 1", "add {x}, {x}, 1",
            x = inout(reg) x,
            options(nomem, nostack),
        );
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    compile_error!("the clock probe knows the one-cycle addition of x86-64 and AArch64 only");
    x
}

fn main() {
    // `cargo bench` passes `--bench`; the length is the one other argument.
    let millions: u64 = match std::env::args().skip(1).find(|a| !a.starts_with("--")) {
        None => 400,
        Some(text) => match text.parse() {
            Ok(n) if n > 0 => n,
            _ => {
                eprintln!("clock: the argument is a chain length in millions, not {text:?}");
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
    println!("{:.3} GHz", (iterations * 8) as f64 / seconds / 1e9);
}
