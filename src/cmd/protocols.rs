//! `leasehold protocols`: the variants and mutants, a line each.

use crate::cli::{CmdResult, Status};
use leasehold_model::{Variant, VariantKind};

/// Arguments of `leasehold protocols`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

/// Runs the command.
pub fn run(args: Args) -> CmdResult {
    if args.json {
        let rows: Vec<_> = Variant::ALL
            .iter()
            .map(|v| {
                serde_json::json!({
                    "name": v.name(),
                    "kind": match v.kind() { VariantKind::Protocol => "protocol", VariantKind::Mutant => "mutant" },
                    "expected": v.expected_violation().map(|i| i.id()),
                    "summary": v.summary(),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows).expect("json"));
        return Ok(Status::Ok);
    }
    print!("{}", table());
    Ok(Status::Ok)
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
                "  {:<22} {:<30} {}\n",
                v.name(),
                expect,
                v.summary()
            ));
        }
    }
    out
}
