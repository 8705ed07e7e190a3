//! Reading a run's whole state from the server, with nothing from the adapter's memory: the
//! stream's length, each group's last-delivered id and pending list (delivery counts), the
//! lease hashes and the dead-letter stream. A broker restart rebuilds the mirror from it, and
//! the conformance tests compare it with the pure broker after every step.
//!
//! Per (group, seq), with `id = <seq>-0`:
//!
//! | on the server | record |
//! |---|---|
//! | a dead-letter entry with `x-group` = group, `x-id` = id | `DeadLettered { reason: x-error }` |
//! | pending, lease hash `L <lease id> <deadline>` | `Leased { attempts: delivery count, .. }` |
//! | pending, lease hash `I 0 <not before>` | `Available { attempts: delivery count, not_before }` |
//! | not pending, id ≤ the group's last-delivered id | `Acked` |
//! | id > the group's last-delivered id | `Available { attempts: 0, not_before: 0 }` |

use crate::conn::Conn;
use crate::keys::{entry_id, seq_of, Keys};
use crate::mirror::Mirror;
use leasehold_model::{LeaseId, Ms, Record, Seq};
use redis::Value;
use std::collections::BTreeMap;

/// The state as read from the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerState {
    /// The records, frontiers and deadlines, as the server holds them.
    pub mirror: Mirror,
    /// The lease-id counter (the last id handed out).
    pub last_lease_id: u64,
    /// Per group, the consumer holding each pending entry, by seq.
    pub owners: Vec<BTreeMap<Seq, String>>,
}

/// What the lease hash says about a pending entry (reachable for the crate's tests in
/// `tests/it`).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kept {
    /// Held by a lease until `deadline_ms`.
    Leased { lease_id: u64, deadline_ms: Ms },
    /// Idle; claimable from `not_before_ms`.
    Idle { not_before_ms: Ms },
}

impl Kept {
    /// Parses `L <lease id> <deadline>` or `I 0 <not before>`.
    pub fn parse(text: &str) -> Option<Kept> {
        let mut parts = text.split(' ');
        let (kind, id, ms) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        let (id, ms): (u64, Ms) = (id.parse().ok()?, ms.parse().ok()?);
        match kind {
            "L" => Some(Kept::Leased {
                lease_id: id,
                deadline_ms: ms,
            }),
            "I" => Some(Kept::Idle { not_before_ms: ms }),
            _ => None,
        }
    }

    /// When the entry may be claimed again: its lease's deadline, or its idle time.
    pub(crate) fn pending_until(self) -> Ms {
        match self {
            Kept::Leased { deadline_ms, .. } => deadline_ms,
            Kept::Idle { not_before_ms } => not_before_ms,
        }
    }
}

/// The value of the lease hash for an idle pending entry.
#[doc(hidden)]
pub fn idle_value(not_before_ms: Ms) -> String {
    format!("I 0 {not_before_ms}")
}

/// Reads the state of the run under `keys`.
pub(crate) fn read(conn: &mut Conn, keys: &Keys) -> Result<ServerState, String> {
    let mut pipe = redis::pipe();
    pipe.cmd("XLEN").arg(&keys.stream);
    pipe.cmd("XINFO").arg("GROUPS").arg(&keys.stream);
    pipe.cmd("GET").arg(&keys.lease_counter);
    pipe.cmd("XRANGE").arg(&keys.dlq).arg("-").arg("+");
    for (group, leases) in keys.groups.iter().zip(&keys.leases) {
        pipe.cmd("XPENDING")
            .arg(&keys.stream)
            .arg(group)
            .arg("-")
            .arg("+")
            .arg(u32::MAX);
        pipe.cmd("HGETALL").arg(leases);
    }
    let replies: Vec<Value> = conn
        .try_cmd_pipe(&pipe)
        .map_err(|e| format!("reading the run's state: {e}"))?;
    let mut replies = replies.into_iter();
    let mut next = || replies.next().ok_or("short reply");
    let events = as_int(&next()?)? as Seq;
    let last_delivered = last_delivered_ids(&next()?)?;
    let last_lease_id = match next()? {
        Value::Nil => 0,
        value => as_str(&value)?.parse().map_err(|_| "lease-id counter")?,
    };
    let dead_letters = dead_letters(&next()?)?;
    let mut records = Vec::new();
    let mut owners = Vec::new();
    for group in &keys.groups {
        let pending = pending_entries(&next()?)?;
        let kept = hash(&next()?)?;
        let last = *last_delivered
            .get(group)
            .ok_or_else(|| format!("consumer group {group} is missing"))?;
        let mut group_records = Vec::with_capacity(events as usize);
        for seq in 1..=events {
            let id = entry_id(seq);
            let record = match (dead_letters.get(&(group.clone(), seq)), pending.get(&seq)) {
                (Some(_), Some(_)) => {
                    return Err(format!("{group} {id}: dead-lettered and pending"))
                }
                (Some(reason), None) => Record::DeadLettered {
                    reason: leasehold_model::Reason::new(reason),
                },
                (None, Some((_, count))) => {
                    let value = kept
                        .get(&id)
                        .ok_or_else(|| format!("{group} {id}: pending without a lease"))?;
                    let kept =
                        Kept::parse(value).ok_or_else(|| format!("{group} {id}: '{value}'"))?;
                    pending_record(*count, kept)
                }
                (None, None) if seq <= last => Record::Acked,
                (None, None) => Record::Available {
                    attempts: 0,
                    not_before_ms: 0,
                },
            };
            group_records.push(record);
        }
        records.push(group_records);
        owners.push(
            pending
                .into_iter()
                .map(|(seq, (owner, _))| (seq, owner))
                .collect(),
        );
    }
    Ok(ServerState {
        mirror: Mirror::from_records(records),
        last_lease_id,
        owners,
    })
}

fn pending_record(attempts: u32, kept: Kept) -> Record {
    match kept {
        Kept::Leased {
            lease_id,
            deadline_ms,
        } => Record::Leased {
            lease_id: LeaseId(lease_id),
            attempts,
            deadline_ms,
        },
        Kept::Idle { not_before_ms } => Record::Available {
            attempts,
            not_before_ms,
        },
    }
}

/// `XINFO GROUPS`: group name → last-delivered seq.
fn last_delivered_ids(value: &Value) -> Result<BTreeMap<String, Seq>, String> {
    let mut out = BTreeMap::new();
    for group in as_array(value)? {
        let fields = pairs(group)?;
        let name = fields.get("name").ok_or("XINFO GROUPS: no name")?;
        let last = fields
            .get("last-delivered-id")
            .ok_or("XINFO GROUPS: no last-delivered-id")?;
        let seq = if last == "0-0" {
            0
        } else {
            seq_of(last).ok_or_else(|| format!("last-delivered-id {last}"))?
        };
        out.insert(name.clone(), seq);
    }
    Ok(out)
}

/// `XPENDING key group - + n`: seq → (consumer, delivery count).
fn pending_entries(value: &Value) -> Result<BTreeMap<Seq, (String, u32)>, String> {
    let mut out = BTreeMap::new();
    for entry in as_array(value)? {
        let fields = as_array(entry)?;
        let [id, consumer, _idle, count] = fields else {
            return Err("XPENDING: an entry of 4 fields".to_string());
        };
        let id = as_str(id)?;
        let seq = seq_of(&id).ok_or_else(|| format!("pending id {id}"))?;
        out.insert(seq, (as_str(consumer)?, as_int(count)? as u32));
    }
    Ok(out)
}

/// The dead-letter stream: (group, seq) → reason.
fn dead_letters(value: &Value) -> Result<BTreeMap<(String, Seq), String>, String> {
    let mut out = BTreeMap::new();
    for entry in as_array(value)? {
        let [_id, fields] = as_array(entry)? else {
            return Err("XRANGE: an entry of 2 fields".to_string());
        };
        let fields = pairs(fields)?;
        let get = |name: &str| {
            fields
                .get(name)
                .cloned()
                .ok_or_else(|| format!("dead letter without {name}"))
        };
        let id = get("x-id")?;
        let seq = seq_of(&id).ok_or_else(|| format!("dead letter x-id {id}"))?;
        if out
            .insert((get("x-group")?, seq), get("x-error")?)
            .is_some()
        {
            return Err(format!("{id} dead-lettered twice"));
        }
    }
    Ok(out)
}

fn hash(value: &Value) -> Result<BTreeMap<String, String>, String> {
    pairs(value)
}

/// A flat `[field, value, …]` array (or a RESP3 map) of strings.
fn pairs(value: &Value) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    match value {
        Value::Map(map) => {
            for (k, v) in map {
                out.insert(as_str(k)?, as_str(v).unwrap_or_default());
            }
        }
        _ => {
            for pair in as_array(value)?.chunks(2) {
                let [k, v] = pair else {
                    return Err("an odd field list".to_string());
                };
                // Numbers (consumers, pending, lag) are not needed: keep them as text.
                out.insert(as_str(k)?, as_str(v).unwrap_or_default());
            }
        }
    }
    Ok(out)
}

pub(crate) fn as_array(value: &Value) -> Result<&[Value], String> {
    match value {
        Value::Array(items) | Value::Set(items) => Ok(items),
        Value::Nil => Ok(&[]),
        other => Err(format!("expected an array, got {other:?}")),
    }
}

pub(crate) fn as_str(value: &Value) -> Result<String, String> {
    match value {
        Value::BulkString(bytes) => Ok(String::from_utf8_lossy(bytes).into_owned()),
        Value::SimpleString(text) => Ok(text.clone()),
        Value::Int(n) => Ok(n.to_string()),
        Value::Okay => Ok("OK".to_string()),
        other => Err(format!("expected a string, got {other:?}")),
    }
}

pub(crate) fn as_int(value: &Value) -> Result<i64, String> {
    match value {
        Value::Int(n) => Ok(*n),
        Value::BulkString(_) | Value::SimpleString(_) => as_str(value)?
            .parse()
            .map_err(|_| format!("expected an integer, got {value:?}")),
        other => Err(format!("expected an integer, got {other:?}")),
    }
}
