//! Scenario files: the data a run is replayed from. The format is documented for users in
//! docs/scenarios.md; this summary is for the code's reader.
//!
//! The scripted form is a public contract that users write by hand. The model checker and the
//! simulator write their findings in the same format. Parsing with file/line/column errors
//! lives beside these types ([`crate::parse`]); running a scripted scenario is
//! [`crate::script`].
//!
//! # Beyond the basic format (the steps fetch, settles, handle, crash, restart, pause)
//! Steps:
//! * `fault = "lost_reply" | "dropped" | "unavailable" | "failed"` on a settle, `handle` or
//!   `fetch` step (for `handle`: on the settles that handler run sends, not on the runtime's follow-up nack);
//! * `receipt = N` on a settle: send this receipt instead of the lease's own;
//! * `before_timer = true` on a settle: it lands before the broker's expiries due at its
//!   `at_ms` (a settle at exactly the deadline under `expiry = "at_deadline"`);
//! * `calls = ["ack", "nack", "reject"]` on `handle`: the handler's calls on its message handle;
//! * `error_kind = "RuntimeError"` on `handle` / `drain` with `outcome = "error"`: the error's
//!   type name (the dead-letter reason when `reason` is empty; default `RuntimeError`);
//! * op `wait`: time reaches the step's `at_ms` and nothing else happens; the step's checks run,
//!   and a lease whose deadline passed while the broker still holds its record (it expires
//!   lazily, `expiry = "on_fetch"`) is told as `lease L1 lapses` (what `check`'s
//!   counterexamples use for the model's expiry);
//! * ops `publish` (one more event), `broker_restart`, and `drain`: the liveness phase — faults
//!   heal (crashed workers restart), the workers fetch and run the handler (`outcome`, or
//!   `outcomes[seq - 1]` per event) until every event is settled, the queue is quiescent, or
//!   `liveness_ms_max` passes (default `(events × max_attempts + 2) × lease_ms`); then I6
//!   (eventually-settled) is checked;
//! * a `fetch` with `limit = n` binds `bind`, `bind-2`, …, `bind-n`;
//! * `expect` of a `handle` step is the first failed settle's error, else `ok`; of a `drain`
//!   step, `ok` (every event settled) or `unsettled`; a settle's is what the worker saw, or
//!   the broker's answer when its sender crashed before the reply (a delayed in-flight
//!   request);
//! * a settle step by a worker that crashed since it fetched the lease is a request it sent
//!   before crashing that lands late (the timeline says `delayed`);
//! * `repeat = true` on any step: the step belongs to a lasso's loop (see *Lassos* below).
//!
//! Config: `clock_offset_ms = { A = -5000 }` (a worker's clock reads broker time + offset);
//! `expiry = "on_fetch"` (the broker expires due leases only when it next fetches, as Redis
//! claims idle entries; default `"at_deadline"`: before a step at time `t` every lease whose
//! deadline is `<= t` expires). The oracle's ghost leases expire at their deadline either way.
//!
//! Seeded form: a seed above TOML's largest integer (2⁶³ − 1) is written as a string of its
//! decimal digits, `seed = "18446744073709551615"`; either form is read.
//!
//! Seeded form: `draws = "uniform"` (beside `seed`) says how the run turns its random words into
//! numbers in a range: rand's `Uniform` distribution, which `sim` runs and writes; or
//! `"gen_range"`, rand's `Rng::gen_range`, which draws other numbers from the same words. A
//! seeded file without `draws` was written before the key existed, and replays as
//! `gen_range`, as it was found.
//!
//! # Lassos: behaviours that never settle
//! A liveness counterexample with a cycle (found by `leasehold check --renews unbounded
//! --fairness none`) is a *lasso*: a prefix, then a loop that can repeat forever without
//! settling an event. In a scenario file, the loop's steps are marked `repeat = true`: they
//! must be the last steps of the file, in one block. `[expect] loop_passes = N` (default 3,
//! at least 2) says how many times the replay runs the block: pass `p` (0-based) runs each
//! marked step at its `at_ms` plus `p × period`, where the period is the block's span plus
//! the gap before it (`last.at_ms − first.at_ms + first.at_ms − previous.at_ms`), so the
//! passes follow each other at the pace of the file. Every pass must give each step the
//! result its `expect` names. The replay then checks that the block is a cycle that makes no
//! progress: every pass leaves every record's status and every group's frontier exactly as
//! they were when the first pass began, with some event unsettled. If so it reports I6
//! (eventually-settled) violated — the block can repeat forever — and a file that expects
//! `violated = "I6"` matches; if not, the replay reports a mismatch ("the steps marked repeat
//! do not form a cycle"). The loop's timing is part of the file: a lease that must outlive a
//! pass is renewed inside it, as the model checker's lassos do.
//!
//! I7 (at-least-once) is checked when the policy is `nack_on_error` or `manual` and every ack
//! comes from a `handle` or `drain` step (a bare `ack` step is not a handler's).
//!
//! `[expect]`, beyond `invariants = "hold"`, `violated = "I1"`, `frontier` and `dead_letters`:
//! * `handler_calls = N` — handler runs in the whole run;
//! * `handler_runs = ["E1#1", "E3#2"]` — every handler run in order, as event # delivery;
//! * `pending = N` — records (over all groups) neither acked nor dead-lettered at the end;
//! * `dead_letter_reasons = ["NackMessage"]` — every dead letter's reason, by group then seq;
//! * `loop_passes = N` — how many times a lasso's loop runs (see *Lassos* above).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A whole scenario file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// A human name.
    pub name: String,
    /// The protocol variant or mutant (`leasehold protocols`).
    pub variant: String,
    /// A comment kept with the file (e.g. a post-mortem for a regression scenario).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The configuration.
    pub config: Config,
    /// A seed, for the seeded form (the simulator's failures). TOML's integers stop at
    /// 2⁶³ − 1: a larger seed is written as a string of its digits ([`seed_toml`]).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "seed_toml")]
    pub seed: Option<u64>,
    /// The seeded form's way of drawing numbers from its random words: `uniform` (what `sim`
    /// runs and writes) or `gen_range` (the way of the seeded files written before this key;
    /// a seeded file without it draws that way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draws: Option<String>,
    /// The seeded form's workload beyond `[config]` (defaults when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<crate::seeded::Workload>,
    /// The seeded form's effective fault plan (the default mix when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<crate::seeded::FaultPlan>,
    /// The explicit steps of the scripted form, in order.
    #[serde(default, rename = "step", skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<Step>,
    /// What the run must show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expect>,
}

/// `[config]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Consumer group names.
    pub groups: Vec<String>,
    /// Events published at time 0.
    pub events: u32,
    /// Worker names.
    pub workers: Vec<String>,
    /// Lease duration (for Redis variants: the claim idle time; `claim_idle_ms` is an alias).
    #[serde(alias = "claim_idle_ms")]
    pub lease_ms: u64,
    /// Deliveries per (group, event) before dead-lettering.
    pub max_attempts: u32,
    /// The runtime's ack policy (default `nack_on_error`).
    #[serde(default = "default_policy")]
    pub ack_policy: String,
    /// Per-worker clock offsets in ms (a worker's clock reads broker time + offset).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub clock_offset_ms: BTreeMap<String, i64>,
    /// When the broker applies due expiries: `at_deadline` (default) or `on_fetch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiry: Option<String>,
}

fn default_policy() -> String {
    "nack_on_error".to_string()
}

impl Default for Config {
    fn default() -> Config {
        Config {
            groups: vec!["g".to_string()],
            events: 1,
            workers: vec!["A".to_string()],
            lease_ms: 30_000,
            max_attempts: 3,
            ack_policy: default_policy(),
            clock_offset_ms: BTreeMap::new(),
            expiry: None,
        }
    }
}

/// One `[[step]]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Virtual time of the step; never goes backwards.
    pub at_ms: u64,
    /// The acting worker (absent for broker-wide ops such as `broker_restart`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    /// `fetch | ack | nack | renew | reject | handle | crash | restart | pause | publish |
    /// broker_restart | wait | drain`.
    pub op: String,
    /// `fetch`: the name bound to the returned lease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind: Option<String>,
    /// Settles and `handle`: the lease name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<String>,
    /// `fetch`: the group (default: the only group).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// `fetch`: how many leases (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// `fetch`: lease duration (default: the config's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_ms: Option<u64>,
    /// `nack`: redelivery delay (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// `renew`: new duration from now (default: the config's `lease_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extend_ms: Option<u64>,
    /// `reject`, `nack`, `handle`: the reason text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `handle`, `drain`: `ok | error | ack | nack | reject`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// `handle`: calls the handler makes on its message handle, in order
    /// (`ack`, `nack`, `reject`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<String>,
    /// `pause`: how long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_ms: Option<u64>,
    /// Settles: a network or backend fault on this request: `lost_reply` (applied, the reply
    /// is lost: the worker sees `ambiguous`), `dropped` (never arrives: `ambiguous`, not
    /// applied), `unavailable` (fails fast: `backend_unavailable`, not applied), `failed` (the
    /// backend reports a failure: `failed`, not applied). Also on `handle` (its settles)
    /// and `fetch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
    /// Settles: send this receipt instead of the lease's own (to provoke `receipt_mismatch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<u64>,
    /// `handle`, `drain`: the error's type name for `outcome = "error"` (default
    /// `RuntimeError`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<String>,
    /// `drain`: the handler's outcome per event (`outcomes[seq - 1]`), overriding `outcome`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outcomes: Vec<String>,
    /// `drain`: the bound on the liveness phase's virtual time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub liveness_ms_max: Option<u64>,
    /// The expected result: `ok`, `empty`, `stale_lease`, `receipt_mismatch`,
    /// `backend_unavailable`, `ambiguous`, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<String>,
    /// The step belongs to the loop of a lasso (see the module documentation).
    #[serde(default, skip_serializing_if = "is_false")]
    pub repeat: bool,
    /// Settles: the request lands before the broker's expiries due at `at_ms` (default: they
    /// run first). With `expiry = "at_deadline"`, a settle at exactly its lease's deadline
    /// then meets the lease the broker has not expired yet.
    #[serde(default, skip_serializing_if = "is_false")]
    pub before_timer: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// `[expect]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// `"hold"`: no invariant may break.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invariants: Option<String>,
    /// `"I1"`: the run must break this invariant (among others).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violated: Option<String>,
    /// The committed frontier at the end (single group).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frontier: Option<u32>,
    /// Dead letters at the end, over all groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dead_letters: Option<u32>,
    /// Handler runs in the whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handler_calls: Option<u32>,
    /// Every handler run in order, as `E<seq>#<delivery>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handler_runs: Option<Vec<String>>,
    /// Records neither acked nor dead-lettered at the end, over all groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<u32>,
    /// Every dead letter's reason, by group then sequence number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dead_letter_reasons: Option<Vec<String>>,
    /// How many times the steps marked `repeat` run (a lasso; default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_passes: Option<u32>,
    /// The run's trace hash, 16 hex digits (what `replay` prints): pins the very run the file
    /// was written for, so that a build, a backend or a change that runs it otherwise is told
    /// (the other expectations may still hold on a different run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_hash: Option<String>,
}

/// A `trace_hash` expectation: exactly 16 hex digits.
pub fn parse_trace_hash(text: &str) -> Option<u64> {
    let digits = text.len() == 16 && text.bytes().all(|b| b.is_ascii_hexdigit());
    digits.then(|| u64::from_str_radix(text, 16).ok()).flatten()
}

/// A seed in TOML: an integer up to 2⁶³ − 1 (TOML's largest), a string of decimal digits
/// above it; either form is read, so every `u64` seed a run takes can be saved and replayed.
pub mod seed_toml {
    use serde::de::{self, Visitor};
    use serde::{Deserializer, Serializer};
    use std::fmt;

    /// Writes `seed` as an integer when TOML can hold it, else as a string of its digits.
    pub fn serialize<S: Serializer>(seed: &Option<u64>, serializer: S) -> Result<S::Ok, S::Error> {
        match *seed {
            Some(seed) if i64::try_from(seed).is_ok() => serializer.serialize_u64(seed),
            Some(seed) => serializer.serialize_str(&seed.to_string()),
            None => serializer.serialize_none(),
        }
    }

    /// Reads a seed written either way.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<u64>, D::Error> {
        struct Seed;
        impl Visitor<'_> for Seed {
            type Value = Option<u64>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a seed: an integer from 0 to 18446744073709551615, or a string of its digits",
                )
            }
            fn visit_i64<E: de::Error>(self, value: i64) -> Result<Self::Value, E> {
                u64::try_from(value)
                    .map(Some)
                    .map_err(|_| E::custom(format!("a seed is not negative: {value}")))
            }
            fn visit_u64<E: de::Error>(self, value: u64) -> Result<Self::Value, E> {
                Ok(Some(value))
            }
            fn visit_str<E: de::Error>(self, value: &str) -> Result<Self::Value, E> {
                if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(E::custom(format!(
                        "a seed string is decimal digits: {value:?}"
                    )));
                }
                value.parse().map(Some).map_err(|_| {
                    E::custom(format!("a seed is at most 18446744073709551615: {value}"))
                })
            }
        }
        deserializer.deserialize_any(Seed)
    }
}
