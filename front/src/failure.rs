//! What a failed assertion prints: the verdict, the timeline, the file written and the exact
//! command that reproduces it; and the command line the reproducing command starts with.

use std::sync::RwLock;

static PROGRAM: RwLock<Option<String>> = RwLock::new(None);

/// Sets how reproducing commands start (default `leasehold`). A suite whose backend the stock
/// binary does not know builds its own command line with that backend registered
/// (`leasehold::cli::main_with`) and names it here, e.g.
/// `cargo run -q -p my-queue --`.
pub fn reproduce_with(program: &str) {
    *PROGRAM.write().unwrap_or_else(|e| e.into_inner()) = Some(program.to_string());
}

/// The start of every reproducing command: `leasehold`, or what [`reproduce_with`] set.
pub fn program() -> String {
    PROGRAM
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .unwrap_or_else(|| "leasehold".to_string())
}

/// A failure to report: built by the front door's assertions, printed as one panic message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The verdict, one line: `campaign of unfenced-settle on acks-by-id: VIOLATED I1 …`.
    pub verdict: String,
    /// What the oracle saw, one line each.
    pub violations: Vec<String>,
    /// The timeline of the failing run, `tN` lines.
    pub timeline: String,
    /// The scenario file written, if any.
    pub file: Option<String>,
    /// The command that reproduces the failure, as is.
    pub command: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "leasehold: {}", self.verdict)?;
        for violation in &self.violations {
            writeln!(f, "  {violation}")?;
        }
        if !self.timeline.is_empty() {
            writeln!(f, "timeline:")?;
            for line in self.timeline.lines() {
                writeln!(f, "  {line}")?;
            }
        }
        if let Some(file) = &self.file {
            writeln!(f, "scenario written to {file}")?;
        }
        write!(f, "reproduce: {}", self.command)
    }
}

impl Failure {
    /// Panics with this failure as the message.
    pub fn panic(&self) -> ! {
        panic!("{self}")
    }
}
