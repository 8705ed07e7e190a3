//! `leasehold sim`: a seeded campaign (or one seed, or one seeded scenario file).
//!
//! The first line printed is the replay recipe of the whole campaign; each failing invariant's
//! smallest seed is written as a seeded scenario under `scenarios/found/` with the command that
//! replays it.

use crate::cli::{CmdResult, Status, UserError};
use crate::cmd::redis::{self, RedisArgs};
use crate::files;
use leasehold_model::{AckPolicy, Invariant, Variant};
use leasehold_sim::engine::Expiry;
use leasehold_sim::scenario::Scenario;
use leasehold_sim::seeded::campaign::{Campaign, Summary};
use leasehold_sim::seeded::seeded_file::{
    check_expect, parse_toml, run_setup, scenario_of, setup_from_scenario, to_toml,
};
use leasehold_sim::seeded::{BackendKind, Fault, FaultPlan, Ratio, RunOutcome, Setup, Workload};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Arguments of `leasehold sim` (boxed: they are many).
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The options.
    #[command(flatten)]
    pub options: Box<Options>,
}

/// The options of `leasehold sim`.
#[derive(clap::Args, Debug, Clone)]
pub struct Options {
    /// Protocol variant or mutant (`leasehold protocols`).
    #[arg(long, default_value = "fenced")]
    pub variant: String,
    /// Run this one seed and print its trace hash (with --trace, its trace).
    #[arg(long, conflicts_with = "seeds")]
    pub seed: Option<u64>,
    /// Run the seeds A..B (B excluded).
    #[arg(long, default_value = "0..100")]
    pub seeds: String,
    /// Each seed draws its own subset of the allowed faults and their intensities.
    #[arg(long)]
    pub swarm: bool,
    /// Start from a plan with every fault off (then switch some on with the fault flags).
    #[arg(long)]
    pub no_faults: bool,
    /// Worker crash + restart, per worker action (ratio N/D; 0 turns it off).
    #[arg(long)]
    pub crash: Option<Ratio>,
    /// Worker pause past the lease, per handler run.
    #[arg(long)]
    pub pause: Option<Ratio>,
    /// Network delay, per message.
    #[arg(long)]
    pub delay: Option<Ratio>,
    /// Network reorder (an extra delay), per message.
    #[arg(long)]
    pub reorder: Option<Ratio>,
    /// Network drop, per message.
    #[arg(long)]
    pub drop: Option<Ratio>,
    /// Network duplicate, per request.
    #[arg(long)]
    pub duplicate: Option<Ratio>,
    /// Partition of a worker from the broker, per worker action.
    #[arg(long)]
    pub partition: Option<Ratio>,
    /// Broker unavailable (fast failure), per request.
    #[arg(long)]
    pub unavailable: Option<Ratio>,
    /// Ambiguous response (applied, reply lost), per settle.
    #[arg(long)]
    pub lost_reply: Option<Ratio>,
    /// Broker restart, per request.
    #[arg(long)]
    pub broker_restart: Option<Ratio>,
    /// Per-worker clock offset and drift, per worker.
    #[arg(long)]
    pub clock_skew: Option<Ratio>,
    /// Slow handler (longer than the lease), per handler run.
    #[arg(long)]
    pub slow_handler: Option<Ratio>,
    /// Handler error, per handler run.
    #[arg(long)]
    pub handler_error: Option<Ratio>,
    /// Events published at time 0.
    #[arg(long, default_value_t = 20)]
    pub events: u32,
    /// Consumer groups.
    #[arg(long, default_value_t = 2)]
    pub groups: u32,
    /// Workers.
    #[arg(long, default_value_t = 3)]
    pub workers: u32,
    /// Ack policy: nack_on_error, ack_always, ack_first, manual.
    #[arg(long, default_value = "nack_on_error")]
    pub policy: String,
    /// Deliveries per (group, event) before dead-lettering.
    #[arg(long, default_value_t = 3)]
    pub max_attempts: u32,
    /// Lease duration (Redis variants: the claim idle time).
    #[arg(long, default_value_t = 30_000)]
    pub lease_ms: u64,
    /// Bound on the safety (faulty) phase, simulated ms.
    #[arg(long)]
    pub safety_ms_max: Option<u64>,
    /// Bound on steps per run.
    #[arg(long)]
    pub steps_max: Option<u64>,
    /// When the broker expires leases: `at_deadline`, `on_fetch` (lazily, as Redis claims), or
    /// `mixed` (each seed draws one).
    #[arg(long, default_value = "mixed", value_parser = ["mixed", "at_deadline", "on_fetch"])]
    pub expiry: String,
    /// Threads (the results do not depend on it).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Run only shard k of n (1-based): the seeds whose index is k-1 modulo n.
    #[arg(long, default_value = "1/1")]
    pub shard: String,
    /// The broker: `pure` (the state machine), `embedded` (the thread-safe in-process
    /// broker; fenced only) or `redis` (a Redis server; the redis-streams variants only).
    #[arg(long, default_value = "pure")]
    pub backend: String,
    /// The Redis server (with `--backend redis`).
    #[command(flatten)]
    pub redis: RedisArgs,
    /// Stop at the smallest failing seed (the seeds-to-first-failure measure).
    #[arg(long)]
    pub stop_on_failure: bool,
    /// Run a seeded scenario file instead of flags.
    #[arg(long, conflicts_with_all = ["seed", "swarm"])]
    pub file: Option<PathBuf>,
    /// With --seed or --file: print the trace.
    #[arg(long)]
    pub trace: bool,
    /// Where failing seeds are written.
    #[arg(long, default_value = "scenarios/found")]
    pub out: PathBuf,
    /// Do not write failing seeds.
    #[arg(long)]
    pub no_save: bool,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
    /// Also write the summary (text) to this file.
    #[arg(long)]
    pub report: Option<PathBuf>,
}

/// Runs the command.
pub fn run(args: Args) -> CmdResult {
    let args = *args.options;
    let backend = backend_kind(&args.backend)?;
    if args.backend == "redis" {
        redis::configure(&args.redis)?;
    }
    if let Some(path) = &args.file {
        return run_file(&args, path, backend);
    }
    let template = template(&args)?;
    backend.check(&template).map_err(UserError)?;
    if args.backend == "redis" {
        redis::refuse_restarts(redis::plan_restarts(&template.faults))?;
    }
    if let Some(seed) = args.seed {
        return run_one(&args, template, seed, backend);
    }
    let seeds = parse_seeds(&args.seeds)?;
    let shard = parse_shard(&args.shard)?;
    let campaign = Campaign {
        template,
        swarm: args.swarm,
        expiry_mixed: args.expiry == "mixed",
        seeds,
        shard,
        threads: args.threads.max(1),
        backend,
        stop_on_failure: args.stop_on_failure,
    };
    run_campaign(&args, &campaign)
}

/// The backends `--backend` names.
pub const BACKENDS: [&str; 3] = ["pure", "embedded", "redis"];

fn make_embedded(
    config: &leasehold_model::BrokerConfig,
) -> Result<Box<dyn leasehold_model::Backend + Send>, String> {
    Ok(Box::new(leasehold_embedded::EmbeddedBackend::new(config)?))
}

/// The backend a `--backend` name selects.
pub fn backend_kind(name: &str) -> Result<BackendKind, UserError> {
    match name {
        "embedded" => Ok(BackendKind::Other {
            name: "embedded",
            make: make_embedded,
        }),
        "redis" => Ok(redis::kind()),
        _ => BackendKind::from_name(name).ok_or_else(|| {
            UserError(format!(
                "--backend: unknown '{name}' (expected one of {})",
                BACKENDS.join(", ")
            ))
        }),
    }
}

/// The run template from the flags (seed 0).
pub fn template(args: &Options) -> Result<Setup, UserError> {
    let variant = Variant::from_name(&args.variant).ok_or_else(|| {
        UserError(format!(
            "--variant: unknown '{}' (one of {})",
            args.variant,
            Variant::names()
        ))
    })?;
    let policy = AckPolicy::from_name(&args.policy).ok_or_else(|| {
        UserError(format!(
            "--policy: unknown '{}' (nack_on_error, ack_always, ack_first, manual)",
            args.policy
        ))
    })?;
    for (flag, value) in [
        ("--events", u64::from(args.events)),
        ("--groups", u64::from(args.groups)),
        ("--workers", u64::from(args.workers)),
        ("--max-attempts", u64::from(args.max_attempts)),
        ("--lease-ms", args.lease_ms),
    ] {
        if value == 0 {
            return Err(UserError(format!("{flag}: must be at least 1")));
        }
    }
    let mut faults = if args.no_faults {
        FaultPlan::none()
    } else {
        FaultPlan::for_lease(args.lease_ms)
    };
    for (fault, value) in fault_flags(args) {
        if let Some(ratio) = value {
            *faults.ratio_mut(fault) = ratio;
        }
    }
    let mut workload = Workload::for_lease(args.lease_ms);
    if let Some(ms) = args.safety_ms_max {
        workload.safety_ms_max = ms;
    }
    if let Some(steps) = args.steps_max {
        workload.steps_max = steps;
    }
    Ok(Setup {
        seed: 0,
        variant,
        group_names: (0..args.groups).map(|g| format!("g{g}")).collect(),
        worker_names: (0..args.workers).map(worker_name).collect(),
        events: args.events,
        lease_ms: args.lease_ms,
        max_attempts: args.max_attempts,
        policy,
        clock_offset_ms: vec![None; args.workers as usize],
        expiry: Expiry::from_name(&args.expiry).unwrap_or_default(),
        workload,
        faults,
    })
}

fn worker_name(index: u32) -> String {
    if index < 26 {
        char::from(b'A' + index as u8).to_string()
    } else {
        format!("W{index}")
    }
}

fn fault_flags(args: &Options) -> [(Fault, Option<Ratio>); 13] {
    [
        (Fault::Crash, args.crash),
        (Fault::Pause, args.pause),
        (Fault::Delay, args.delay),
        (Fault::Reorder, args.reorder),
        (Fault::Drop, args.drop),
        (Fault::Duplicate, args.duplicate),
        (Fault::Partition, args.partition),
        (Fault::Unavailable, args.unavailable),
        (Fault::LostReply, args.lost_reply),
        (Fault::BrokerRestart, args.broker_restart),
        (Fault::ClockSkew, args.clock_skew),
        (Fault::SlowHandler, args.slow_handler),
        (Fault::HandlerError, args.handler_error),
    ]
}

/// Parses `A..B`.
pub fn parse_seeds(text: &str) -> Result<std::ops::Range<u64>, UserError> {
    let bad = || UserError(format!("--seeds: '{text}' is not a range A..B with A < B"));
    let (a, b) = text.split_once("..").ok_or_else(bad)?;
    let a: u64 = a.trim().parse().map_err(|_| bad())?;
    let b: u64 = b.trim().parse().map_err(|_| bad())?;
    if a >= b {
        return Err(bad());
    }
    Ok(a..b)
}

/// Parses `k/n` with `1 <= k <= n`.
pub fn parse_shard(text: &str) -> Result<(u64, u64), UserError> {
    let bad = || UserError(format!("--shard: '{text}' is not k/n with 1 <= k <= n"));
    let (k, n) = text.split_once('/').ok_or_else(bad)?;
    let k: u64 = k.trim().parse().map_err(|_| bad())?;
    let n: u64 = n.trim().parse().map_err(|_| bad())?;
    if k == 0 || n == 0 || k > n {
        return Err(bad());
    }
    Ok((k, n))
}

/// The flags that reproduce `setup`'s configuration (not its seed).
pub fn recipe(setup: &Setup, swarm: bool) -> String {
    recipe_with(setup, swarm, None)
}

/// The flags that reproduce a campaign's configuration.
pub fn campaign_recipe(campaign: &Campaign) -> String {
    let expiry = (!campaign.expiry_mixed).then_some(campaign.template.expiry);
    recipe_with(&campaign.template, campaign.swarm, expiry)
}

/// [`recipe`], with `--expiry` when it is not the default `mixed`.
pub fn recipe_with(setup: &Setup, swarm: bool, expiry: Option<Expiry>) -> String {
    let mut out = format!(
        "--variant {} --events {} --groups {} --workers {} --policy {} --max-attempts {} --lease-ms {}",
        setup.variant,
        setup.events,
        setup.group_names.len(),
        setup.worker_names.len(),
        setup.policy,
        setup.max_attempts,
        setup.lease_ms,
    );
    let default = Workload::for_lease(setup.lease_ms);
    if setup.workload.safety_ms_max != default.safety_ms_max {
        out.push_str(&format!(
            " --safety-ms-max {}",
            setup.workload.safety_ms_max
        ));
    }
    if setup.workload.steps_max != default.steps_max {
        out.push_str(&format!(" --steps-max {}", setup.workload.steps_max));
    }
    if swarm {
        out.push_str(" --swarm");
    }
    if let Some(expiry) = expiry {
        out.push_str(&format!(" --expiry {}", expiry.name()));
    }
    let plan = &setup.faults;
    let base = FaultPlan::for_lease(setup.lease_ms);
    for fault in Fault::ALL {
        if plan.ratio(fault) != base.ratio(fault) {
            let flag = fault.name().replace('_', "-");
            out.push_str(&format!(" --{flag} {}", plan.ratio(fault)));
        }
    }
    out
}

fn run_one(args: &Options, template: Setup, seed: u64, backend: BackendKind) -> CmdResult {
    let campaign = Campaign {
        template,
        swarm: args.swarm,
        expiry_mixed: args.expiry == "mixed",
        seeds: seed..seed + 1,
        shard: (1, 1),
        threads: 1,
        backend,
        stop_on_failure: false,
    };
    let setup = campaign.setup(seed);
    let swarm_flag = if args.swarm { " (swarm)" } else { "" };
    let header = format!(
        "leasehold sim --seed {seed} {} --backend {backend}",
        campaign_recipe(&campaign)
    );
    let started = Instant::now();
    let outcome = run_setup(&setup, backend, args.trace);
    let wall = started.elapsed();
    report_one(args, &header, &setup, &outcome, wall, swarm_flag)
}

fn run_file(args: &Options, path: &Path, backend: BackendKind) -> CmdResult {
    let scenario = load_scenario(path)?;
    let setup = setup_from_scenario(&scenario)
        .map_err(|e| UserError(format!("{}: {e}", path.display())))?;
    backend
        .check(&setup)
        .map_err(|e| UserError(format!("{}: {e}", path.display())))?;
    if backend.name() == "redis" {
        redis::refuse_restarts(redis::plan_restarts(&setup.faults))
            .map_err(|e| UserError(format!("{}: {e}", path.display())))?;
    }
    let header = format!(
        "leasehold sim --file {} --backend {backend}",
        path.display()
    );
    let started = Instant::now();
    let outcome = run_setup(&setup, backend, args.trace);
    let wall = started.elapsed();
    report_one(args, &header, &setup, &outcome, wall, "")?;
    // A file's [expect] decides the status, as for `replay`.
    let mismatches = check_expect(&scenario, &outcome);
    if !args.json {
        for mismatch in &mismatches {
            println!("mismatch: {mismatch}");
        }
    }
    Ok(if mismatches.is_empty() {
        Status::Ok
    } else {
        Status::Failed
    })
}

/// Reads a scenario file; a parse error is one line naming the file.
pub fn load_scenario(path: &Path) -> Result<Scenario, UserError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UserError(format!("{}: cannot read: {e}", path.display())))?;
    parse_toml(&text).map_err(|e| UserError(format!("{}: {e}", path.display())))
}

fn report_one(
    args: &Options,
    header: &str,
    setup: &Setup,
    outcome: &RunOutcome,
    wall: Duration,
    swarm_flag: &str,
) -> CmdResult {
    let status = if outcome.violations.is_empty() {
        Status::Ok
    } else {
        Status::Failed
    };
    if args.json {
        let value = serde_json::json!({
            "command": header,
            "variant": setup.variant.name(),
            "seed": setup.seed,
            "faults": setup.faults.summary(),
            "trace_hash": format!("{:016x}", outcome.trace_hash),
            "steps": outcome.steps,
            "sim_ms": outcome.sim_ms,
            "end": outcome.end,
            "violations": outcome.violations.iter().map(|v| serde_json::json!({
                "invariant": v.invariant.id(),
                "name": v.invariant.name(),
                "step": v.step,
                "detail": v.detail,
            })).collect::<Vec<_>>(),
            "duplicate_runs": outcome.duplicate_runs,
            "duplicate_writes": outcome.duplicate_writes,
            "ghost_writes": outcome.ghost_writes,
            "at_most_once_losses": outcome.at_most_once_losses,
            "wall_ms": wall.as_millis() as u64,
        });
        println!("{}", serde_json::to_string_pretty(&value).expect("json"));
        return Ok(status);
    }
    println!("{header}");
    println!("faults{swarm_flag}: {}", setup.faults.summary());
    if let Some(trace) = &outcome.trace {
        print!("{trace}");
    }
    println!(
        "seed {}: {} after {} steps, {} simulated ms",
        setup.seed, outcome.end, outcome.steps, outcome.sim_ms
    );
    for violation in &outcome.violations {
        println!("  {violation}");
    }
    println!(
        "duplicates: {} handler runs, {} world writes, {} ghost writes",
        outcome.duplicate_runs, outcome.duplicate_writes, outcome.ghost_writes
    );
    if outcome.at_most_once_losses > 0 {
        println!(
            "at-most-once: {} events acked without a completed handler ({}'s documented guarantee, not a protocol failure)",
            outcome.at_most_once_losses, setup.policy
        );
    }
    println!("trace hash {:016x}", outcome.trace_hash);
    if !outcome.violations.is_empty() && !args.no_save && args.file.is_none() {
        save_failure(args, setup, &outcome.violations[0].invariant)?;
    }
    Ok(status)
}

fn save_failure(args: &Options, setup: &Setup, invariant: &Invariant) -> Result<(), UserError> {
    let note = format!(
        "found by: leasehold sim --seed {} {}",
        setup.seed,
        recipe_with(setup, false, Some(setup.expiry))
    );
    let scenario = scenario_of(setup, Some(invariant.id()), Some(note));
    let stem = format!("{}-seed{}", setup.variant, setup.seed);
    let path = files::write_new(&args.out, &stem, "toml", to_toml(&scenario).as_bytes())?;
    println!(
        "{} {}: replay with: leasehold replay {}",
        invariant.id(),
        invariant.name(),
        path.display()
    );
    Ok(())
}

fn run_campaign(args: &Options, campaign: &Campaign) -> CmdResult {
    let seeds = &campaign.seeds;
    let header = format!(
        "leasehold sim --seeds {}..{} --shard {}/{} {} --backend {}",
        seeds.start,
        seeds.end,
        campaign.shard.0,
        campaign.shard.1,
        campaign_recipe(campaign),
        campaign.backend
    );
    if !args.json {
        println!("{header}");
        let kind = if campaign.swarm {
            "faults (swarm draws from)"
        } else {
            "faults"
        };
        println!("{kind}: {}", campaign.template.faults.summary());
    }
    let total = campaign.shard_len();
    let bar = (std::io::stderr().is_terminal() && !args.json).then(|| {
        let bar = indicatif::ProgressBar::new(total);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} seeds {per_sec} eta {eta}",
            )
            .expect("a valid template"),
        );
        bar
    });
    let started = Instant::now();
    let summary = campaign.run(&|done| {
        if let Some(bar) = &bar {
            bar.set_position(done);
        }
    });
    let wall = started.elapsed();
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let mut saved = Vec::new();
    if !args.no_save {
        // The variant's expected invariant first: a seed that breaks it is saved expecting it.
        let expected = campaign.template.variant.expected_violation();
        let mut order: Vec<_> = summary.failures.iter().collect();
        order.sort_by_key(|(invariant, _)| Some(**invariant) != expected);
        for (invariant, failures) in order {
            if let Some(&seed) = failures.seeds.first() {
                if saved.iter().any(|(s, _, _)| *s == seed) {
                    continue;
                }
                let setup = campaign.setup(seed);
                let note = format!(
                    "found by: leasehold sim --seed {seed} {}",
                    campaign_recipe(campaign)
                );
                let scenario = scenario_of(&setup, Some(invariant.id()), Some(note));
                let stem = format!("{}-seed{seed}", setup.variant);
                let path =
                    files::write_new(&args.out, &stem, "toml", to_toml(&scenario).as_bytes())?;
                saved.push((seed, *invariant, path));
            }
        }
    }
    let mut text = summary_text(campaign, &summary, wall, &saved);
    if args.backend == "redis" {
        if let Some(line) = redis::servers_line() {
            text.push_str(&line);
            text.push('\n');
        }
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&summary_json(&header, campaign, &summary, wall, &saved))
                .expect("json")
        );
    } else {
        print!("{text}");
    }
    if let Some(path) = &args.report {
        let contents = format!("{header}\n{text}");
        files::write_atomic(path, contents.as_bytes())?;
    }
    Ok(if summary.seeds_failed > 0 {
        Status::Failed
    } else {
        Status::Ok
    })
}

fn rate(count: f64, wall: Duration) -> f64 {
    count / wall.as_secs_f64().max(1e-9)
}

fn summary_text(
    campaign: &Campaign,
    summary: &Summary,
    wall: Duration,
    saved: &[(u64, Invariant, PathBuf)],
) -> String {
    let mut out = String::new();
    let push = |out: &mut String, line: String| {
        out.push_str(&line);
        out.push('\n');
    };
    push(
        &mut out,
        format!(
            "seeds run: {} ({} failed, {} hit steps_max)",
            summary.seeds_run, summary.seeds_failed, summary.bound_hits
        ),
    );
    if summary.failures.is_empty() {
        push(&mut out, "failures: none".to_string());
    }
    for (invariant, failures) in &summary.failures {
        let seeds: Vec<String> = failures.seeds.iter().map(u64::to_string).collect();
        push(
            &mut out,
            format!(
                "failures: {invariant}: {} seeds (smallest: {})",
                failures.count,
                seeds.join(", ")
            ),
        );
    }
    if let Some(expected) = campaign.template.variant.expected_violation() {
        let caught = summary.failures.contains_key(&expected);
        push(
            &mut out,
            format!(
                "expected: {} breaks {expected}: {}",
                campaign.template.variant,
                if caught { "caught" } else { "not caught" }
            ),
        );
    }
    if let Some((seed, violations)) = &summary.first_failure {
        push(&mut out, format!("first failing seed: {seed}"));
        for v in violations {
            push(&mut out, format!("  {v}"));
        }
    }
    push(
        &mut out,
        format!(
            "duplicates: {} handler runs, {} world writes, {} ghost writes (at least once: counted, not failed)",
            summary.duplicate_runs, summary.duplicate_writes, summary.ghost_writes
        ),
    );
    push(
        &mut out,
        format!(
            "at-most-once: {} events acked without a completed handler ({}'s documented guarantee, not a protocol failure)",
            summary.at_most_once_losses, campaign.template.policy
        ),
    );
    let sim_s = summary.sim_ms as f64 / 1000.0;
    push(
        &mut out,
        format!(
            "simulated time: {sim_s:.1} s over {} steps in {:.2} s wall",
            summary.steps,
            wall.as_secs_f64()
        ),
    );
    push(
        &mut out,
        format!(
            "speed: {:.0} steps/s, {:.1} seeds/s, simulated/wall {:.0}x (threads: {})",
            rate(summary.steps as f64, wall),
            rate(summary.seeds_run as f64, wall),
            rate(sim_s, wall),
            campaign.threads
        ),
    );
    push(
        &mut out,
        format!("campaign hash {:016x}", summary.campaign_hash),
    );
    for (seed, invariant, path) in saved {
        push(
            &mut out,
            format!(
                "{} seed {seed}: replay with: leasehold replay {}   (or: leasehold sim --seed {seed} {})",
                invariant.id(),
                path.display(),
                campaign_recipe(campaign)
            ),
        );
    }
    out
}

fn summary_json(
    header: &str,
    campaign: &Campaign,
    summary: &Summary,
    wall: Duration,
    saved: &[(u64, Invariant, PathBuf)],
) -> serde_json::Value {
    let failures: serde_json::Map<String, serde_json::Value> = summary
        .failures
        .iter()
        .map(|(inv, f)| {
            (
                inv.id().to_string(),
                serde_json::json!({ "name": inv.name(), "count": f.count, "seeds": f.seeds }),
            )
        })
        .collect();
    serde_json::json!({
        "command": header,
        "variant": campaign.template.variant.name(),
        "seeds": { "start": campaign.seeds.start, "end": campaign.seeds.end },
        "shard": format!("{}/{}", campaign.shard.0, campaign.shard.1),
        "swarm": campaign.swarm,
        "faults": campaign.template.faults.summary(),
        "seeds_run": summary.seeds_run,
        "seeds_failed": summary.seeds_failed,
        "bound_hits": summary.bound_hits,
        "failures": failures,
        "first_failing_seed": summary.first_failure.as_ref().map(|(s, _)| *s),
        "steps": summary.steps,
        "sim_ms": summary.sim_ms,
        "duplicate_runs": summary.duplicate_runs,
        "duplicate_writes": summary.duplicate_writes,
        "ghost_writes": summary.ghost_writes,
        "at_most_once_losses": summary.at_most_once_losses,
        "trace_hash": format!("{:016x}", summary.campaign_hash),
        "wall_ms": wall.as_millis() as u64,
        "threads": campaign.threads,
        "saved": saved.iter().map(|(s, i, p)| serde_json::json!({
            "seed": s, "invariant": i.id(), "path": p.display().to_string()
        })).collect::<Vec<_>>(),
    })
}

/// The seeded half of `leasehold replay FILE`: when `path` holds a seeded scenario (`seed = N`,
/// no steps), runs it through the simulator on `backend`, prints the replay recipe, the
/// timeline, the violations and the trace hash (or one JSON object), and returns the status
/// ("did the run match the file's `[expect]`?"). Returns `Ok(None)` for a scripted scenario,
/// which `replay` runs itself.
pub fn replay_if_seeded(
    path: &Path,
    json: bool,
    backend: &str,
) -> Result<Option<Status>, UserError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| UserError(format!("{name}: cannot read: {e}")))?;
    let Ok(scenario) = parse_toml(&text) else {
        return Ok(None); // Not ours to report: the scripted parser locates the error.
    };
    if scenario.seed.is_none() || !scenario.steps.is_empty() {
        return Ok(None);
    }
    let kind = backend_kind(backend)?;
    if backend == "redis" {
        let setup =
            setup_from_scenario(&scenario).map_err(|e| UserError(format!("{name}: {e}")))?;
        redis::refuse_restarts(redis::plan_restarts(&setup.faults))
            .map_err(|e| UserError(format!("{name}: {e}")))?;
    }
    let outcome = leasehold_sim::run_seeded(&scenario, kind)
        .map_err(|e| UserError(format!("{name}: {e}")))?;
    let mismatches = check_expect(&scenario, &outcome);
    let status = if mismatches.is_empty() {
        Status::Ok
    } else {
        Status::Failed
    };
    if json {
        let value = serde_json::json!({
            "header": format!("leasehold replay {name}"),
            "seed": scenario.seed,
            "timeline": outcome.trace,
            "violations": outcome.violations,
            "steps": outcome.steps,
            "mismatches": mismatches,
            "trace_hash": format!("{:016x}", outcome.trace_hash),
            "matched": mismatches.is_empty(),
        });
        println!("{value}");
        return Ok(Some(status));
    }
    println!(
        "leasehold replay {name}   (seed {}, variant {})",
        scenario.seed.unwrap_or_default(),
        scenario.variant
    );
    if let Some(faults) = &scenario.faults {
        println!("faults: {}", faults.summary());
    }
    print!("{}", outcome.trace.as_deref().unwrap_or_default());
    for violation in &outcome.violations {
        println!("{violation}");
    }
    for mismatch in &mismatches {
        println!("mismatch: {mismatch}");
    }
    println!("trace hash {:016x}", outcome.trace_hash);
    Ok(Some(status))
}
