//! The matrix's run: which variants, what is expected of each, how deep, and the loop that
//! fills a row per variant with every engine's cells.

use super::engines::{self, SCENARIOS};
use super::{Cell, Depth, Engine, EngineRun, Expectation, Row};
use crate::Error;
use leasehold_model::{Invariant, Variant};
use leasehold_sim::seeded::BackendKind;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

/// How to run the matrix: the variants (rows), each one's expectation, the depth and the
/// engines' threads. Built by [`config`], adjusted by value.
#[derive(Clone, Debug)]
pub struct MatrixConfig {
    /// The rows, in the canonical order (protocols first, mutants last).
    pub variants: Vec<Variant>,
    /// What each variant is expected to do (docs/variants.md unless overridden).
    pub expectations: BTreeMap<Variant, Expectation>,
    /// Quick or full.
    pub depth: Depth,
    /// Threads for the engines (the results do not depend on it).
    pub threads: usize,
    /// The backend the simulator's campaigns run on (the model checker explores the
    /// reference broker).
    pub backend: BackendKind,
}

/// The whole matrix at `depth`: every variant, docs/variants.md's expectations, one thread.
pub fn config(depth: Depth) -> MatrixConfig {
    MatrixConfig {
        variants: Variant::ALL.to_vec(),
        expectations: Variant::ALL
            .iter()
            .map(|&v| (v, Expectation::of(v)))
            .collect(),
        depth,
        threads: 1,
        backend: BackendKind::Pure,
    }
}

impl MatrixConfig {
    /// Only these variants, in the canonical order, each once.
    pub fn variants(mut self, variants: &[Variant]) -> MatrixConfig {
        let mut chosen: Vec<Variant> = Vec::new();
        for &variant in variants {
            if !chosen.contains(&variant) {
                chosen.push(variant);
            }
        }
        chosen.sort_by_key(|v| Variant::ALL.iter().position(|w| w == v));
        self.variants = chosen;
        self
    }

    /// Overrides what `variant` is expected to do: break `violated`, or (`None`) hold.
    pub fn expect(mut self, variant: Variant, violated: Option<Invariant>) -> MatrixConfig {
        self.expectations.insert(
            variant,
            Expectation {
                violated,
                overridden: true,
            },
        );
        self
    }

    /// Threads for the engines.
    pub fn threads(mut self, threads: usize) -> MatrixConfig {
        self.threads = threads;
        self
    }

    /// The backend the simulator's campaigns run on (default: the reference broker): a
    /// variant it cannot run is an error naming it.
    pub fn backend(mut self, backend: BackendKind) -> MatrixConfig {
        self.backend = backend;
        self
    }

    /// One line per engine describing its bounds at this depth, for a report's header.
    pub fn bounds(&self) -> Vec<(Engine, String)> {
        engines::bounds(self.depth, &self.backend)
    }

    /// Runs every variant through the model checker and the simulator; evidence scenario
    /// files go under `out` (`out/scenarios/…`). `progress` hears each (variant, engine, wall
    /// seconds) as it finishes.
    pub fn run(
        &self,
        out: &Path,
        progress: &dyn Fn(Variant, Engine, f64),
    ) -> Result<Vec<Row>, Error> {
        let engines = engines::engines(self.threads, &self.backend);
        self.run_with(&engines, out, progress)
    }

    /// [`MatrixConfig::run`] with the given engines (a test passes stand-ins).
    pub fn run_with(
        &self,
        engines: &[Box<dyn EngineRun>],
        out: &Path,
        progress: &dyn Fn(Variant, Engine, f64),
    ) -> Result<Vec<Row>, Error> {
        if self.threads == 0 || self.threads > 64 {
            return Err(Error(format!(
                "threads {}: must be between 1 and 64",
                self.threads
            )));
        }
        let mut rows = Vec::new();
        for &variant in &self.variants {
            let mut results = BTreeMap::new();
            for engine in engines {
                let started = Instant::now();
                let mut result = engine.run(variant, self.depth, out)?;
                result.seconds = started.elapsed().as_secs_f64();
                progress(variant, engine.engine(), result.seconds);
                results.insert(engine.engine(), result);
            }
            rows.push(Row {
                variant,
                kind: variant.kind(),
                expectation: self
                    .expectations
                    .get(&variant)
                    .copied()
                    .unwrap_or_else(|| Expectation::of(variant)),
                results,
            });
        }
        Ok(rows)
    }
}

/// The evidence scenario files the rows link to, relative to the report's folder, sorted.
pub fn evidence_files(rows: &[Row]) -> Vec<String> {
    let mut files = Vec::new();
    for row in rows {
        for engine in Engine::ALL {
            for inv in Invariant::ALL {
                if let Cell::Violated(e) = row.cell(engine, inv) {
                    if let Some(path) = e.scenario() {
                        files.push(path.to_string());
                    }
                }
            }
        }
    }
    files.sort();
    files.dedup();
    files
}

/// Evidence files under `dir` left by an earlier run for one of the rows' variants that these
/// rows did not produce (the engine no longer finds that violation), relative to `dir`.
pub fn stale_evidence(dir: &Path, rows: &[Row]) -> Vec<String> {
    let fresh = evidence_files(rows);
    let Ok(entries) = std::fs::read_dir(dir.join(SCENARIOS)) else {
        return Vec::new();
    };
    let mut stale: Vec<String> = entries
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| {
            rows.iter().any(|row| {
                Engine::ALL
                    .iter()
                    .any(|engine| name.starts_with(&format!("{}-{engine}-I", row.variant)))
            })
        })
        .map(|name| format!("{SCENARIOS}/{name}"))
        .filter(|path| !fresh.contains(path))
        .collect();
    stale.sort();
    stale
}
