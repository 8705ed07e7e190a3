//! Random scripted scenarios on every variant: the parser, the engine and the renderers never
//! panic, and the same file always gives the same timeline and trace hash.

use leasehold_model::{AckPolicy, Broker, Variant};
use leasehold_sim::parse::parse;
use leasehold_sim::script;
use leasehold_sim::svg;
use proptest::prelude::*;

const WORKERS: [&str; 3] = ["A", "B", "C"];
const OUTCOMES: [&str; 5] = ["ok", "error", "ack", "nack", "reject"];
const FAULTS: [&str; 5] = ["", "lost_reply", "dropped", "unavailable", "failed"];

#[derive(Clone, Debug)]
struct RawStep {
    op: u8,
    worker: u8,
    lease: u8,
    dt_ms: u16,
    outcome: u8,
    fault: u8,
}

fn raw_step() -> impl Strategy<Value = RawStep> {
    (0u8..11, 0u8..3, 0u8..8, 0u16..1500, 0u8..5, 0u8..5).prop_map(
        |(op, worker, lease, dt_ms, outcome, fault)| RawStep {
            op,
            worker,
            lease,
            dt_ms,
            outcome,
            fault,
        },
    )
}

#[allow(clippy::too_many_arguments)]
fn scenario_text(
    variant: usize,
    policy: usize,
    workers: usize,
    events: u32,
    lease_ms: u64,
    max_attempts: u32,
    steps: &[RawStep],
    drain: bool,
) -> String {
    let variant = Variant::ALL[variant % Variant::ALL.len()];
    let policy = AckPolicy::ALL[policy % 4];
    let names: Vec<String> = WORKERS[..workers]
        .iter()
        .map(|w| format!("\"{w}\""))
        .collect();
    let mut src = format!(
        "name = \"fuzz\"\nvariant = \"{variant}\"\n[config]\ngroups = [\"g\"]\nevents = {events}\nworkers = [{}]\nlease_ms = {lease_ms}\nmax_attempts = {max_attempts}\nack_policy = \"{policy}\"\n",
        names.join(", ")
    );
    // Every list starts with a fetch, so that no list is empty.
    src.push_str("[[step]]\nat_ms = 0\nworker = \"A\"\nop = \"fetch\"\nbind = \"L1\"\n");
    let mut at_ms = 0u64;
    let mut bound = 1u8;
    let mut crashed = [false; 3];
    for step in steps {
        at_ms += u64::from(step.dt_ms);
        let w = step.worker as usize % workers;
        let worker = WORKERS[w];
        // Keep the list valid, so that the engine (not the parser) sees most of it: restart
        // only a crashed worker; a crashed worker only restarts or sends in-flight settles;
        // settles and handler runs only on bound leases.
        let valid = match step.op {
            8 => crashed[w],
            0 | 1 | 6 | 7 => !crashed[w] && (step.op != 6 || bound > 0),
            2..=5 => bound > 0,
            _ => true,
        };
        if !valid {
            continue;
        }
        match step.op {
            7 => crashed[w] = true,
            8 => crashed[w] = false,
            _ => {}
        }
        let lease = format!("L{}", step.lease % bound.max(1) + 1);
        let fault = FAULTS[step.fault as usize];
        let fault = if fault.is_empty() {
            String::new()
        } else {
            format!("fault = \"{fault}\"\n")
        };
        let body = match step.op {
            0 | 1 => {
                bound += 1;
                format!("worker = \"{worker}\"\nop = \"fetch\"\nbind = \"L{bound}\"\n")
            }
            2 => format!("worker = \"{worker}\"\nop = \"ack\"\nlease = \"{lease}\"\n{fault}"),
            3 => format!("worker = \"{worker}\"\nop = \"nack\"\nlease = \"{lease}\"\n{fault}"),
            4 => format!("worker = \"{worker}\"\nop = \"renew\"\nlease = \"{lease}\"\n"),
            5 => format!("worker = \"{worker}\"\nop = \"reject\"\nlease = \"{lease}\"\n"),
            6 => format!(
                "worker = \"{worker}\"\nop = \"handle\"\nlease = \"{lease}\"\noutcome = \"{}\"\n{fault}",
                OUTCOMES[step.outcome as usize]
            ),
            7 => format!("worker = \"{worker}\"\nop = \"crash\"\n"),
            8 => format!("worker = \"{worker}\"\nop = \"restart\"\n"),
            9 => "op = \"broker_restart\"\n".to_string(),
            _ => "op = \"publish\"\n".to_string(),
        };
        src.push_str(&format!("[[step]]\nat_ms = {at_ms}\n{body}"));
    }
    if drain {
        src.push_str(&format!(
            "[[step]]\nat_ms = {}\nop = \"drain\"\n",
            at_ms + 1
        ));
    }
    src
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn generated_scenarios_are_valid(
        steps in prop::collection::vec(raw_step(), 1..14),
        drain in any::<bool>(),
    ) {
        let src = scenario_text(0, 0, 3, 2, 1000, 2, &steps, drain);
        if let Err(e) = parse(&src, "fuzz.toml") {
            prop_assert!(false, "{}\n{}", e, src);
        }
    }

    #[test]
    fn random_scenarios_run_deterministically(
        variant in 0usize..64,
        policy in 0usize..4,
        workers in 1usize..=3,
        events in 1u32..=3,
        lease_ms in prop::sample::select(vec![100u64, 1000, 30_000]),
        max_attempts in 1u32..=3,
        steps in prop::collection::vec(raw_step(), 1..14),
        drain in any::<bool>(),
    ) {
        let src = scenario_text(variant, policy, workers, events, lease_ms, max_attempts, &steps, drain);
        // Some random step lists are invalid (a crashed worker fetching, …): that is an error,
        // never a panic.
        let script = match parse(&src, "fuzz.toml") {
            Ok(script) => script,
            Err(e) => {
                prop_assert!(!e.to_string().contains('\n'));
                return Ok(());
            }
        };
        let a = script::run(&script, Broker::new(script.setup.broker_config()));
        let b = script::run(&script, Broker::new(script.setup.broker_config()));
        prop_assert_eq!(&a.timeline, &b.timeline);
        prop_assert_eq!(&a.trace_hash, &b.trace_hash);
        for (t, line) in a.timeline.iter().enumerate() {
            let prefix = format!("t{t}  ");
            prop_assert!(line.starts_with(&prefix), "{}", line);
        }
        let drawing = svg::render(&a.trace, "fuzz", "", "");
        prop_assert!(drawing.ends_with("</svg>\n"));
        prop_assert_eq!(drawing, svg::render(&b.trace, "fuzz", "", ""));
    }
}
