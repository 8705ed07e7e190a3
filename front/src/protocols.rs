//! The protocol variants and mutants as `leasehold protocols` lists them: a line each (or a
//! JSON object each), with the bounds the model checker uses for each: with no flag (the
//! covering configuration) and with `--tailored` (the variant's own).

use leasehold_model::check::{CheckConfig, Outcomes, Time};
use leasehold_model::{Variant, VariantKind};

/// Every variant as a JSON object: name, kind, expected violation, summary, the flags of
/// `check` with no flag given (`check_defaults`) and with `--tailored` (`check_tailored`).
pub fn json() -> serde_json::Value {
    let rows: Vec<_> = Variant::ALL
        .iter()
        .map(|v| {
            serde_json::json!({
                "name": v.name(),
                "kind": match v.kind() { VariantKind::Protocol => "protocol", VariantKind::Mutant => "mutant" },
                "expected": v.expected_violation().map(|i| i.id()),
                "summary": v.summary(),
                "check_defaults": CheckConfig::default_for(*v).flags(),
                "check_tailored": CheckConfig::tailored_for(*v).flags(),
            })
        })
        .collect();
    serde_json::Value::Array(rows)
}

/// The text table `leasehold protocols` prints.
pub fn table() -> String {
    let mut out = String::from(
        "`check --variant NAME` with no other flag: a variant that holds is checked in the\n\
         configuration that covers every cell of the protocol's surface it supports (`--covering`:\n\
         two groups of one event, two workers, every handler outcome, a renew, each fault once,\n\
         the clock); a variant that breaks an invariant in its own (`--tailored`, listed below),\n\
         the smallest that shows it. Either flag chooses.\n\n",
    );
    for kind in [VariantKind::Protocol, VariantKind::Mutant] {
        out.push_str(match kind {
            VariantKind::Protocol => "protocols:\n",
            VariantKind::Mutant => "\nmutants (planted bugs; each must be caught):\n",
        });
        for v in Variant::ALL.iter().filter(|v| v.kind() == kind) {
            let expect = match v.expected_violation() {
                None => "holds".to_string(),
                Some(inv) => format!("breaks {inv}"),
            };
            out.push_str(&format!(
                "  {:<22} {:<30} {}\n  {:<22} {:<30} check --tailored: {}\n",
                v.name(),
                expect,
                v.summary(),
                "",
                "",
                tailored_flags(*v)
            ));
        }
    }
    out
}

/// The bounds `leasehold check --variant NAME --tailored` starts from: the sizes, the policy,
/// the budgets that are not zero, and the clock when it is on.
pub fn tailored_flags(variant: Variant) -> String {
    let c = CheckConfig::tailored_for(variant);
    let b = &c.budgets;
    let mut text = format!(
        "--groups {} --events {} --workers {} --max-attempts {} --policy {}",
        c.group_count, c.event_count, c.worker_count, c.max_attempts, c.policy
    );
    for (flag, value) in [
        ("crashes", b.crashes),
        ("drops", b.drops),
        ("dups", b.dups),
        ("lost-replies", b.lost_replies),
        ("broker-restarts", b.broker_restarts),
        ("renews", b.renews),
    ] {
        if value > 0 {
            text.push_str(&format!(" --{flag} {value}"));
        }
    }
    if c.outcomes == Outcomes::All {
        text.push_str(" --outcomes all");
    }
    if let Time::Ticks {
        tick_ms,
        lease_ticks,
        skew_ticks,
    } = c.time
    {
        text.push_str(&format!(
            " --time ticks --tick-ms {tick_ms} --lease-ticks {lease_ticks} --skew-ticks {skew_ticks}"
        ));
    }
    text
}
