//! The two engines behind [`EngineRun`]: the model checker (`leasehold check`) and the
//! simulator (`leasehold sim`). Each run is built from values — the variant's default check
//! configuration, the simulator's default campaign under swarm — that the command it prints
//! builds from the same defaults, so that command reproduces it.

use super::{median_gap, Cell, Depth, Engine, EngineResult, EngineRun, Evidence};
use crate::defaults;
use crate::files;
use crate::Error as UserError;
use leasehold_model::check::{CheckConfig, LeaseModel, Limits, Options, Verdict};
use leasehold_model::{Invariant, Variant};
use leasehold_sim::seeded::campaign::{Campaign, FAILING_SEEDS_KEPT};
use leasehold_sim::seeded::seeded_file::{check_expect, parse_toml, scenario_of, to_toml};
use leasehold_sim::seeded::{BackendKind, Fault, Ratio};
use std::collections::BTreeMap;
use std::path::Path;

/// The folder, inside the report's, where evidence scenarios go.
pub const SCENARIOS: &str = "scenarios";

/// States the model checker may generate per variant, at either depth: the check command's
/// own default (each variant's own configuration finishes far below it).
pub const CHECK_STATES_MAX: u64 = defaults::STATES_MAX;
/// Seeds per variant at most (full depth).
pub const SIM_SEEDS_MAX_FULL: u64 = 10_000;
/// Seeds per variant at most (quick depth).
pub const SIM_SEEDS_MAX_QUICK: u64 = 300;
/// The first campaign chunk; each next chunk doubles the seeds run so far.
pub const SIM_CHUNK_FIRST: u64 = 100;
/// A mutant's campaign stops at the end of the first chunk with this many failures of its
/// expected invariant (the median is taken over at most [`FAILING_SEEDS_KEPT`] of them).
pub const SIM_FAILURES_WANTED: u64 = 5;

/// The model checker (it explores the reference broker; each counterexample it finds is
/// replayed on `backend`) and the simulator (on `backend`), each on `threads` threads (the
/// results do not depend on it).
pub fn engines(threads: usize, backend: &BackendKind) -> Vec<Box<dyn EngineRun>> {
    vec![
        Box::new(ModelChecker {
            threads,
            backend: backend.clone(),
        }),
        Box::new(Simulator {
            threads,
            backend: backend.clone(),
        }),
    ]
}

/// One line per engine describing its bounds at `depth`, and the broker it ran on when that
/// is not the reference broker, for the report's header.
pub fn bounds(depth: Depth, backend: &BackendKind) -> Vec<(Engine, String)> {
    let seeds = match depth {
        Depth::Quick => SIM_SEEDS_MAX_QUICK,
        Depth::Full => SIM_SEEDS_MAX_FULL,
    };
    let (replayed, ran, restarts) = match backend {
        BackendKind::Pure => (String::new(), String::new(), ""),
        other => (
            format!("; it explores the reference model, and each counterexample is replayed on `{other}` (*does not replay* when that run does not break the invariant)"),
            format!("; every seed runs on `{other}`"),
            if !other.restarts() {
                ", without broker restarts (the backend does not restart a server it did not start)"
            } else {
                ""
            },
        ),
    };
    vec![
        (
            Engine::Check,
            format!(
                "each variant's own configuration (`check --tailored`: a planted bug's smallest, \
                 a holding protocol's one group explored deep; the same at both depths), \
                 depth-first with symmetry and partial-order reduction, at most {CHECK_STATES_MAX} states, past the first \
                 violation (`--all-violations`); counterexample depths from a breadth-first \
                 search (shortest){replayed}"
            ),
        ),
        (
            Engine::Sim,
            format!(
                "swarm campaigns from seed 0 (each seed draws its own fault subset, workload size, ack policy, handler outcome rates, leases per fetch and lease duration){restarts}, in chunks of \
                 {SIM_CHUNK_FIRST} seeds doubling; a variant expected to break an invariant stops \
                 after the chunk with {SIM_FAILURES_WANTED} failures of it, others run {seeds} seeds{ran}"
            ),
        ),
    ]
}

fn scenario_path(variant: Variant, engine: Engine, invariant: Invariant) -> String {
    format!("{SCENARIOS}/{variant}-{engine}-{}.toml", invariant.id())
}

/// Whether the scripted scenario at `path` replays on `backend` (as `leasehold replay
/// --backend …` does) to a run that matches its `[expect]` and breaks `invariant`.
fn replays_scripted(path: &Path, backend: &BackendKind, invariant: Invariant) -> bool {
    crate::replay::load(path)
        .and_then(|script| crate::replay::run_script(&script, backend))
        .is_ok_and(|replay| replay.matched && replay.violated(invariant))
}

/// Whether the seeded scenario at `path` replays (as `leasehold replay` does) to a run
/// that matches its `[expect]` and breaks `invariant`.
fn replays_seeded(path: &Path, backend: &BackendKind, invariant: Invariant) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    let Ok(scenario) = parse_toml(&text) else {
        return false;
    };
    leasehold_sim::run_seeded(&scenario, backend).is_ok_and(|outcome| {
        check_expect(&scenario, &outcome).is_empty()
            && outcome.violations.iter().any(|v| v.invariant == invariant)
    })
}

/// The model checker.
pub struct ModelChecker {
    threads: usize,
    /// Where its counterexamples are replayed.
    backend: BackendKind,
}

impl EngineRun for ModelChecker {
    fn engine(&self) -> Engine {
        Engine::Check
    }

    fn run(&self, variant: Variant, _depth: Depth, out: &Path) -> Result<EngineResult, UserError> {
        let states_max = CHECK_STATES_MAX;
        let config = CheckConfig::tailored_for(variant);
        config
            .validate()
            .map_err(|e| UserError(format!("report: check --variant {variant}: {e}")))?;
        let options = Options {
            limits: Limits {
                states_max,
                threads: self.threads,
                ..Limits::default()
            },
            symmetry: true,
            counterexample_states_max: states_max.min(defaults::COUNTEREXAMPLE_STATES_MAX),
            beyond_first_violation: true,
            ..Options::default()
        };
        let report = leasehold_model::check::run(&config, &options, None);
        let model = LeaseModel::new(config.clone());
        let mut cells = BTreeMap::new();
        for invariant in Invariant::ALL {
            let cell = match report.verdict(invariant) {
                None => Cell::NotChecked,
                Some(Verdict::Violated) => match report.counterexample(invariant) {
                    Some(cx) => {
                        let path = scenario_path(variant, Engine::Check, invariant);
                        let scenario = leasehold_sim::counterexample::scenario(&model, cx);
                        let body = toml::to_string(&scenario).map_err(|e| {
                            UserError(format!("cannot serialise the scenario: {e}"))
                        })?;
                        files::write_atomic(&out.join(&path), body.as_bytes())?;
                        Cell::Violated(Evidence::Check {
                            depth: cx.len(),
                            replays: replays_scripted(&out.join(&path), &self.backend, invariant),
                            scenario: Some(path),
                        })
                    }
                    None => Cell::Bounded {
                        bound: format!(
                            "violated, but the shortest-counterexample search stopped at {} states",
                            options.counterexample_states_max
                        ),
                    },
                },
                Some(Verdict::Holds) => Cell::Holds,
                Some(_) => Cell::Bounded {
                    bound: match report.bounded {
                        Some(bound) => format!("max-states {bound}"),
                        None => "I6 unproven (the ranking function did not decrease)".to_string(),
                    },
                },
            };
            cells.insert(invariant, cell);
        }
        Ok(EngineResult {
            command: format!("leasehold check {config} --all-violations"),
            cells,
            seconds: 0.0,
            stats: serde_json::json!({ "report": report }),
        })
    }
}

/// The simulator, on a backend (the reference broker unless the matrix names another).
pub struct Simulator {
    threads: usize,
    backend: BackendKind,
}

/// Failures of one invariant over the chunks of a campaign.
#[derive(Default)]
struct Found {
    count: u64,
    seeds: Vec<u64>,
}

impl EngineRun for Simulator {
    fn engine(&self) -> Engine {
        Engine::Sim
    }

    fn run(&self, variant: Variant, depth: Depth, out: &Path) -> Result<EngineResult, UserError> {
        let seeds_max = match depth {
            Depth::Quick => SIM_SEEDS_MAX_QUICK,
            Depth::Full => SIM_SEEDS_MAX_FULL,
        };
        let mut template = defaults::sim_template(variant)
            .map_err(|e| UserError(format!("report: sim --variant {variant}: {e}")))?;
        // A server someone else runs is not restarted by a run: the campaign runs without
        // broker restarts (its command says `--broker-restart 0`).
        if !self.backend.restarts() {
            *template.faults.ratio_mut(Fault::BrokerRestart) = Ratio::ZERO;
        }
        self.backend
            .check(&template)
            .map_err(|e| UserError(format!("report: sim --variant {variant}: {e}")))?;
        let mut found: BTreeMap<Invariant, Found> = BTreeMap::new();
        let (mut seeds_run, mut inconclusive, mut steps, mut sim_ms) = (0u64, 0u64, 0u64, 0u64);
        let mut end = 0u64;
        let mut chunks = 0u32;
        let target = variant.expected_violation();
        let campaign_of = |range: std::ops::Range<u64>| Campaign {
            template: template.clone(),
            swarm: true,
            seeds: range,
            shard: (1, 1),
            threads: self.threads,
            backend: self.backend.clone(),
            stop_on_failure: false,
            expiry_mixed: true,
            pinned: Default::default(),
        };
        while end < seeds_max {
            let start = end;
            end = (if start == 0 {
                SIM_CHUNK_FIRST
            } else {
                2 * start
            })
            .min(seeds_max);
            chunks += 1;
            let summary = campaign_of(start..end).run(&|_| {});
            seeds_run += summary.seeds_run;
            inconclusive += summary.seeds_inconclusive;
            steps += summary.steps;
            sim_ms += summary.sim_ms;
            for (invariant, failures) in summary.failures {
                let entry = found.entry(invariant).or_default();
                entry.count += failures.count;
                entry.seeds.extend(failures.seeds);
                entry.seeds.sort_unstable();
                entry.seeds.truncate(FAILING_SEEDS_KEPT);
            }
            if let Some(target) = target {
                if found.get(&target).map_or(0, |f| f.count) >= SIM_FAILURES_WANTED {
                    break;
                }
            }
        }
        let campaign = campaign_of(0..end);
        let recipe = campaign.recipe();
        let flags = self.backend.flags();
        let command = format!("leasehold sim --seeds 0..{end} {recipe}{flags}");
        let mut cells = BTreeMap::new();
        for invariant in Invariant::ALL {
            let cell = if invariant == Invariant::I7 && !template.policy.at_least_once() {
                Cell::NotChecked
            } else if let Some(f) = found.get(&invariant) {
                let first = f.seeds[0];
                let path = scenario_path(variant, Engine::Sim, invariant);
                let note = format!("found by: leasehold sim --seed {first} {recipe}{flags}");
                let scenario =
                    scenario_of(&campaign.setup(first), Some(invariant.id()), Some(note));
                files::write_atomic(&out.join(&path), to_toml(&scenario).as_bytes())?;
                Cell::Violated(Evidence::Sim {
                    replays: replays_seeded(&out.join(&path), &self.backend, invariant),
                    seeds_to_first_failure: first + 1,
                    first_seed: first,
                    median_seeds_to_failure: median_gap(0, &f.seeds),
                    failures_sampled: f.seeds.len(),
                    failures: f.count,
                    seeds_run,
                    scenario: Some(path),
                })
            } else if seeds_run > 0 && inconclusive == seeds_run {
                Cell::Bounded {
                    bound: "a named bound on every seed (inconclusive)".to_string(),
                }
            } else {
                Cell::Holds
            };
            cells.insert(invariant, cell);
        }
        Ok(EngineResult {
            command,
            cells,
            seconds: 0.0,
            stats: serde_json::json!({
                "seeds_run": seeds_run,
                "chunks": chunks,
                "seeds_inconclusive": inconclusive,
                "steps": steps,
                "sim_ms": sim_ms,
                "faults": template.faults.summary(),
            }),
        })
    }
}
