//! The verdict matrix: every variant through every engine, each (variant, invariant, engine)
//! one judged cell. What is expected of a variant (docs/variants.md, or an override), how a cell
//! is judged against it, and the run itself are values and library calls; the command line
//! (`leasehold report`) only writes the files [`render`] makes of the rows.
//!
//! ```no_run
//! use leasehold_front::matrix::{self, Depth};
//! use leasehold_model::Variant;
//!
//! let rows = matrix::config(Depth::Quick)
//!     .variants(&[Variant::Fenced, Variant::UnfencedSettle])
//!     .run(std::path::Path::new("target/verdicts"), &|_, _, _| {})?;
//! assert!(rows.iter().all(|row| row.unexpected().is_empty()));
//! # Ok::<(), leasehold_front::Error>(())
//! ```
//!
//! * [`engines`] — the model checker and the simulator behind the [`EngineRun`] seam.
//! * [`render`] — the rows as `VERDICTS.md` (byte-stable) and `verdicts.json`.
//! * [`report`] — those files written into a folder, or compared with the committed ones, and
//!   the lines that summarise a run (`leasehold report`).
//! * [`config`] — which variants, what is expected of them, how deep: the run of the matrix.

pub mod engines;
pub mod render;
pub mod report;
pub mod request;
mod run;

pub use request::MatrixRequest;
pub use run::{config, evidence_files, stale_evidence, MatrixConfig};

use leasehold_model::{Invariant, Variant, VariantKind};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

/// One of the two engines that judge every variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// The exhaustive model checker (`leasehold check`).
    Check,
    /// The seeded simulator (`leasehold sim`).
    Sim,
}

impl Engine {
    /// Both engines, in column order.
    pub const ALL: [Engine; 2] = [Engine::Check, Engine::Sim];

    /// `check` or `sim`: the command that runs the engine.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Check => "check",
            Engine::Sim => "sim",
        }
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How much work each engine does per variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Depth {
    /// A few hundred simulator seeds per variant (the model checker keeps its bounds): for CI.
    Quick,
    /// Each variant's own model-checking configuration and up to 10,000 seeds.
    Full,
}

/// The evidence of a violation: enough to find the failing run again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "engine", rename_all = "snake_case")]
pub enum Evidence {
    /// A shortest counterexample found by the model checker.
    Check {
        /// Its number of model steps (breadth-first: no shorter one exists within the bounds).
        depth: usize,
        /// The scenario file that replays it, relative to the report's folder.
        scenario: Option<String>,
        /// Whether replaying that file (`leasehold replay`) reproduces the violation.
        replays: bool,
    },
    /// Failing seeds found by a simulator campaign.
    Sim {
        /// The 1-based position of the first failing seed in the campaign's range: how many
        /// seeds had to run to see the first failure.
        seeds_to_first_failure: u64,
        /// The first failing seed itself.
        first_seed: u64,
        /// The median of the seeds run between successive failures (first gap: from the start
        /// of the range), over the first few failures; `None` with a single failure.
        median_seeds_to_failure: Option<u64>,
        /// How many of the first failures the median is taken over.
        failures_sampled: usize,
        /// Seeds that broke the invariant.
        failures: u64,
        /// Seeds run.
        seeds_run: u64,
        /// The seeded scenario file that replays the first failure, relative to the report's
        /// folder.
        scenario: Option<String>,
        /// Whether replaying that file (`leasehold replay`) reproduces the violation.
        replays: bool,
    },
}

impl Evidence {
    /// The scenario file, if one was written.
    pub fn scenario(&self) -> Option<&str> {
        match self {
            Evidence::Check { scenario, .. } | Evidence::Sim { scenario, .. } => {
                scenario.as_deref()
            }
        }
    }

    /// Whether the scenario file was replayed and reproduced the violation.
    pub fn replays(&self) -> bool {
        match self {
            Evidence::Check { replays, .. } | Evidence::Sim { replays, .. } => *replays,
        }
    }

    /// A short description: `depth 5` or `4 seeds, median 6`.
    pub fn short(&self) -> String {
        match self {
            Evidence::Check { depth, .. } => format!("depth {depth}"),
            Evidence::Sim {
                seeds_to_first_failure,
                median_seeds_to_failure,
                ..
            } => {
                let seeds = match seeds_to_first_failure {
                    1 => "1 seed".to_string(),
                    n => format!("{n} seeds"),
                };
                match median_seeds_to_failure {
                    Some(median) => format!("{seeds}, median {median}"),
                    None => seeds,
                }
            }
        }
    }
}

/// The median seeds-to-failure of sorted failing seeds of a range starting at `start`: the
/// seeds run from the start to the first failure, then between successive failures.
pub fn median_gap(start: u64, failing_sorted: &[u64]) -> Option<u64> {
    if failing_sorted.len() < 2 {
        return None;
    }
    let mut previous = start;
    let mut gaps: Vec<u64> = Vec::with_capacity(failing_sorted.len());
    for (i, &seed) in failing_sorted.iter().enumerate() {
        // The first gap counts the failing seed itself (seed `start` fails after 1 seed).
        gaps.push(if i == 0 {
            seed - previous + 1
        } else {
            seed - previous
        });
        previous = seed;
    }
    gaps.sort_unstable();
    // The lower median: a seed count, never a fraction.
    Some(gaps[(gaps.len() - 1) / 2])
}

/// One engine's verdict on one invariant for one variant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Cell {
    /// Not violated: the model checker's search was exhaustive within its bounds; the simulator
    /// ran every seed of its campaign without a failure.
    Holds,
    /// Violated, with the evidence.
    Violated(Evidence),
    /// The engine evaluates the invariant, but no run reached a state where it applies.
    NotReached {
        /// Why.
        why: String,
    },
    /// The engine stopped at a named bound before a verdict: nothing is proven.
    Bounded {
        /// The bound, e.g. `max-states 2000000`.
        bound: String,
    },
    /// The engine does not evaluate this invariant at all.
    NotChecked,
}

impl Cell {
    /// `holds`, `violated`, `not reached`, `bounded` or `not checked`.
    pub fn word(&self) -> &'static str {
        match self {
            Cell::Holds => "holds",
            Cell::Violated(_) => "violated",
            Cell::NotReached { .. } => "not reached",
            Cell::Bounded { .. } => "bounded",
            Cell::NotChecked => "not checked",
        }
    }
}

/// What one engine found for one variant.
#[derive(Clone, Debug, Serialize)]
pub struct EngineResult {
    /// The exact command that reproduces this run.
    pub command: String,
    /// A verdict for every invariant I1–I7.
    pub cells: BTreeMap<Invariant, Cell>,
    /// Wall-clock seconds (JSON only: the Markdown report stays byte-stable).
    pub seconds: f64,
    /// Engine-specific counts (states, seeds, steps …), JSON only.
    pub stats: serde_json::Value,
}

/// An engine that can judge a variant: the model checker or the simulator, or a stand-in in
/// tests. `scenarios` is the folder (inside the report's folder) where evidence files go; the
/// evidence names them relative to the report's folder.
pub trait EngineRun {
    /// Which engine this is.
    fn engine(&self) -> Engine;
    /// Runs the engine on one variant.
    fn run(
        &self,
        variant: Variant,
        depth: Depth,
        out: &std::path::Path,
    ) -> Result<EngineResult, crate::Error>;
}

/// What a variant is expected to do: break one named invariant, or hold everywhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Expectation {
    /// The invariant both engines must find violated; `None`: every cell must hold.
    pub violated: Option<Invariant>,
    /// Whether this expectation was overridden on the command line (`--expect`).
    pub overridden: bool,
}

impl Expectation {
    /// The expectation docs/variants.md states for `variant`.
    pub fn of(variant: Variant) -> Expectation {
        Expectation {
            violated: variant.expected_violation(),
            overridden: false,
        }
    }

    /// `holds` or `violates I3`.
    pub fn text(&self) -> String {
        match self.violated {
            None => "holds".to_string(),
            Some(inv) => format!("violates {}", inv.id()),
        }
    }
}

/// A cell's standing against the expectation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "judgement", rename_all = "snake_case")]
pub enum Judgement {
    /// The cell is what docs/variants.md asks for (or says nothing about and it holds).
    Expected,
    /// The variant breaks another invariant besides the one it must break: informational,
    /// docs/variants.md names only what each variant must break.
    AlsoViolated,
    /// The engine does not evaluate the invariant, which the expectation does not need.
    NotApplicable,
    /// A verdict other than the expected one on a variant expected to violate a different
    /// invariant (not reached, bounded): informational.
    Informational,
    /// The cell differs from its expectation.
    Unexpected {
        /// What was expected: `violated` or `holds`.
        expected: &'static str,
    },
}

impl Judgement {
    /// Whether this cell makes the report fail.
    pub fn is_unexpected(&self) -> bool {
        matches!(self, Judgement::Unexpected { .. })
    }
}

/// Judges one cell: `invariant` of a variant with `expectation`, as `cell` says.
pub fn judge(expectation: Expectation, invariant: Invariant, cell: &Cell) -> Judgement {
    match expectation.violated {
        Some(target) if target == invariant => match cell {
            Cell::Violated(e) if e.replays() => Judgement::Expected,
            Cell::Violated(_) => Judgement::Unexpected {
                expected: "violated with evidence that replays",
            },
            _ => Judgement::Unexpected {
                expected: "violated",
            },
        },
        // A variant expected to hold everywhere: every cell the engine evaluates must hold.
        None => match cell {
            Cell::Holds => Judgement::Expected,
            Cell::NotChecked => Judgement::NotApplicable,
            _ => Judgement::Unexpected { expected: "holds" },
        },
        // An invariant other than the one the variant must break.
        Some(_) => match cell {
            Cell::Holds => Judgement::Expected,
            Cell::Violated(_) => Judgement::AlsoViolated,
            Cell::NotChecked => Judgement::NotApplicable,
            Cell::NotReached { .. } | Cell::Bounded { .. } => Judgement::Informational,
        },
    }
}

/// One row of the matrix: a variant, its expectation and both engines' results.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The variant.
    pub variant: Variant,
    /// Protocol or mutant.
    pub kind: VariantKind,
    /// What it is expected to do.
    pub expectation: Expectation,
    /// Per engine, its result.
    pub results: BTreeMap<Engine, EngineResult>,
}

/// A cell that differs from its expectation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Unexpected {
    /// The variant.
    pub variant: Variant,
    /// The invariant.
    pub invariant: Invariant,
    /// The engine.
    pub engine: Engine,
    /// What the engine found: `holds`, `violated`, …
    pub found: &'static str,
    /// What was expected.
    pub expected: &'static str,
}

impl fmt::Display for Unexpected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unexpected: {} × {} × {}: {}, expected {}",
            self.variant,
            self.invariant.id(),
            self.engine,
            self.found,
            self.expected
        )
    }
}

impl Row {
    /// The cell of `invariant` by `engine` (`NotChecked` when the engine gave none).
    pub fn cell(&self, engine: Engine, invariant: Invariant) -> &Cell {
        const NOT_CHECKED: Cell = Cell::NotChecked;
        self.results
            .get(&engine)
            .and_then(|r| r.cells.get(&invariant))
            .unwrap_or(&NOT_CHECKED)
    }

    /// The judgement of one cell.
    pub fn judgement(&self, engine: Engine, invariant: Invariant) -> Judgement {
        judge(self.expectation, invariant, self.cell(engine, invariant))
    }

    /// Every unexpected cell of the row, invariant by invariant, check before sim.
    pub fn unexpected(&self) -> Vec<Unexpected> {
        let mut out = Vec::new();
        for invariant in Invariant::ALL {
            for engine in Engine::ALL {
                if let Judgement::Unexpected { expected } = self.judgement(engine, invariant) {
                    out.push(Unexpected {
                        variant: self.variant,
                        invariant,
                        engine,
                        found: match self.cell(engine, invariant) {
                            Cell::Violated(e) if !e.replays() => {
                                "violated, but its scenario does not replay"
                            }
                            cell => cell.word(),
                        },
                        expected,
                    });
                }
            }
        }
        out
    }
}

/// Parses `--expect VARIANT=INV` (or `VARIANT=holds`): an expectation override.
pub fn parse_expect(text: &str) -> Result<(Variant, Option<Invariant>), String> {
    let (name, what) = text
        .split_once('=')
        .ok_or_else(|| format!("--expect {text}: expected VARIANT=INVARIANT or VARIANT=holds"))?;
    let variant = Variant::from_name(name.trim()).ok_or_else(|| {
        format!(
            "--expect {text}: unknown variant '{}'; valid: {}",
            name.trim(),
            Variant::names()
        )
    })?;
    let what = what.trim();
    if what == "holds" {
        return Ok((variant, None));
    }
    let invariant = Invariant::parse(what).ok_or_else(|| {
        format!("--expect {text}: unknown invariant '{what}' (I1 … I7, a name, or holds)")
    })?;
    Ok((variant, Some(invariant)))
}
