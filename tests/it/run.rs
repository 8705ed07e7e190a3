//! Running the built binary as a user does, and reading what it said: shared by the command
//! line's tests of the server-backed backends.

use std::process::{Command, Output};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_leasehold");

/// Runs `leasehold ARGS` in the repository's root.
pub fn leasehold(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the binary runs")
}

/// What it printed on stdout.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).to_string()
}

/// What it printed on stderr.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).to_string()
}

/// The one line of a usage error (exit 2); anything else fails the test.
pub fn one_line_error(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(2), "{}{}", stdout(out), stderr(out));
    let err = stderr(out);
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

/// The campaign hash a `sim` summary prints.
pub fn campaign_hash(text: &str) -> &str {
    text.lines()
        .find_map(|line| line.strip_prefix("campaign hash "))
        .expect("a campaign hash line")
}
