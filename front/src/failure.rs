//! What a failed assertion prints: the verdict, the timeline, the file written and the exact
//! command that reproduces it; and how the reproducing command starts by default.

/// How reproducing commands start unless a call says otherwise (`reproduce_with` of
/// [`crate::check()`], [`crate::campaign()`], [`crate::shrink()`], [`crate::Replayed`]): a
/// suite whose backend the stock binary does not know builds its own command line with that
/// backend registered (`leasehold::cli::main_with`) and names it there, e.g.
/// `cargo run -q -p my-queue --`.
pub const PROGRAM: &str = "leasehold";

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
