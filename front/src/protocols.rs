//! The protocol variants and mutants as `leasehold protocols` lists them: a line each (or a
//! JSON object each), with the bounds the model checker uses for each when no flag is given.

use leasehold_model::check::CheckConfig;
use leasehold_model::{Variant, VariantKind};

/// Every variant as a JSON object: name, kind, expected violation, summary, check defaults.
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
            })
        })
        .collect();
    serde_json::Value::Array(rows)
}

/// The text table `leasehold protocols` prints.
pub fn table() -> String {
    let mut out = String::new();
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
                "  {:<22} {:<30} {}\n  {:<22} {:<30} check defaults: {}\n",
                v.name(),
                expect,
                v.summary(),
                "",
                "",
                check_defaults(*v)
            ));
        }
    }
    out
}

/// The bounds `leasehold check --variant NAME` uses when no flag is given: the sizes, the
/// policy and the budgets that are not zero.
pub fn check_defaults(variant: Variant) -> String {
    let c = CheckConfig::default_for(variant);
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
    text
}
