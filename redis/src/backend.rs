//! [`RedisBackend`]: the `redis-streams` variants on a real Redis server.
//!
//! One stream per run (entry `<seq>-0` per event), one consumer group per group, one consumer
//! per worker. What each operation sends:
//!
//! | operation | `redis-streams` (RillKit) | `redis-streams-fenced` |
//! |---|---|---|
//! | publish | `XADD stream <seq>-0 seq … event …` | the same |
//! | fetch | `XCLAIM stream group consumer 0 <ids whose virtual lease passed>` and `XREADGROUP GROUP group consumer COUNT n STREAMS stream >` (one `MULTI`), then `lease.lua`: fresh lease ids (`INCRBY`), delivery counts from `XPENDING`, the lease kept beside each entry | the same |
//! | ack | `XACK stream group id` (accepted when the entry is pending for anyone) | `settle.lua` |
//! | nack | `XPENDING` + `HGET`; the entry stays pending (no `XNACK`) until idle past its lease, or is dead-lettered past the retries | `settle.lua` |
//! | reject | `XPENDING`; dead-letter | `settle.lua` |
//! | renew | `settle.lua` (renew is fenced in every variant of the model) | `settle.lua` |
//! | expiry | at the engine's time: the lease hash marks the entry idle (claimable), or the entry is dead-lettered when its deliveries are used up | the same |
//! | dead-letter | `XADD <stream>-dlq * <fields> x-group … x-id … x-deliveries … x-error <reason>`, then `XACK` (one `MULTI`) | inside the script |
//!
//! Time comes from the engine: the adapter keeps each pending entry's virtual deadline in the
//! lease hash and claims exactly the entries whose deadline passed, with a min-idle-time of 0;
//! Redis's own idle clock decides nothing.

use crate::conn::{restart_refusal, Conn, Target};
use crate::keys::{entry_id, group_name, seq_of, Keys};
use crate::mirror::Mirror;
use crate::state::{self, as_array, as_int, as_str, idle_value, Kept, ServerState};
use leasehold_model::variant::Fence;
use leasehold_model::{
    BrokerConfig, Expired, GroupIx, Lease, LeaseId, Ms, Reason, Receipt, Record, Seq, SettleError,
    SettleOp, SettleRequest, Variant,
};
use redis::{Script, Value};
use std::sync::atomic::{AtomicU64, Ordering};

/// The consumer name used when the engine does not say which worker acts.
pub const DEFAULT_CONSUMER: &str = "leasehold";

/// The reason a dead letter gets when a nack or an expiry uses up the deliveries.
const REASON_MAX_ATTEMPTS: &str = leasehold_model::types::REASON_MAX_ATTEMPTS;

/// Virtual times and durations the adapter sends must be exact in Lua's doubles.
const MS_MAX: Ms = 1 << 53;

/// A run of one of the `redis-streams` variants on a Redis server, under its own key prefix.
/// Its keys are deleted when it is dropped (unless [`RedisBackend::keep_keys`]).
pub struct RedisBackend {
    config: BrokerConfig,
    target: Target,
    conn: Conn,
    keys: Keys,
    mirror: Mirror,
    settle_script: Script,
    lease_script: Script,
    keep_keys: bool,
}

impl std::fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBackend")
            .field("url", &crate::conn::redacted(self.conn.url()))
            .field("prefix", &self.keys.prefix)
            .field("variant", &self.config.variant)
            .finish()
    }
}

/// The variants this backend runs.
pub const VARIANTS: [Variant; 2] = [Variant::RedisStreams, Variant::RedisStreamsFenced];

/// Checks that the backend can run `config` (one-line error otherwise), without a server.
pub fn check_config(config: &BrokerConfig) -> Result<(), String> {
    if !VARIANTS.contains(&config.variant) {
        return Err(format!(
            "runs redis-streams and redis-streams-fenced only, not '{}'",
            config.variant
        ));
    }
    if config.group_count == 0 {
        return Err("at least one group".to_string());
    }
    if config.max_attempts == 0 {
        return Err("max_attempts must be at least 1".to_string());
    }
    if config.lease_ms >= MS_MAX {
        return Err(format!(
            "lease_ms must be below 2^53 (got {})",
            config.lease_ms
        ));
    }
    Ok(())
}

impl RedisBackend {
    /// A fresh run of `config` on `target`, under a key prefix of its own: the stream and one
    /// consumer group per group are created. Errors (one line): a variant this backend does
    /// not run, a configuration it cannot hold, no server answering.
    pub fn new(config: &BrokerConfig, target: Target) -> Result<RedisBackend, String> {
        check_config(config)?;
        let mut conn = Conn::open(target.url())?;
        let keys = Keys::new(&fresh_prefix(&mut conn)?, config.group_count);
        let taken: i64 = conn
            .try_cmd(redis::cmd("EXISTS").arg(keys.all()))
            .map_err(|e| e.to_string())?;
        if taken > 0 {
            return Err(format!("keys under {} already exist", keys.prefix));
        }
        for group in &keys.groups {
            conn.try_cmd::<()>(
                redis::cmd("XGROUP")
                    .arg("CREATE")
                    .arg(&keys.stream)
                    .arg(group)
                    .arg("0")
                    .arg("MKSTREAM"),
            )
            .map_err(|e| format!("XGROUP CREATE: {e}"))?;
        }
        Ok(RedisBackend {
            config: *config,
            target,
            conn,
            mirror: Mirror::from_records(vec![Vec::new(); config.group_count]),
            keys,
            settle_script: Script::new(SETTLE_LUA),
            lease_script: Script::new(LEASE_LUA),
            keep_keys: false,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &BrokerConfig {
        &self.config
    }

    /// The run's keys.
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// The server's URL.
    pub fn url(&self) -> &str {
        self.conn.url()
    }

    /// The records as the adapter last read them from the server's replies.
    pub fn mirror(&self) -> &Mirror {
        &self.mirror
    }

    /// Leave the run's keys on the server when dropped (for inspection; the caller deletes
    /// them, e.g. with [`delete_keys`]).
    pub fn keep_keys(&mut self, keep: bool) {
        self.keep_keys = keep;
    }

    /// The run's state read from the server alone (see `state`).
    pub fn server_view(&mut self) -> Result<ServerState, String> {
        state::read(&mut self.conn, &self.keys)
    }

    /// Appends an event: `XADD stream <seq>-0 seq <seq> event E<seq>`.
    pub fn publish(&mut self) -> Seq {
        let seq = self.mirror_event_count() + 1;
        let id: String = self.conn.cmd(
            "XADD",
            redis::cmd("XADD")
                .arg(&self.keys.stream)
                .arg(entry_id(seq))
                .arg(event_fields(seq)),
        );
        assert_eq!(id, entry_id(seq), "XADD with an explicit id returns it");
        self.mirror.push_event();
        seq
    }

    fn mirror_event_count(&self) -> Seq {
        self.mirror.records(0).len() as Seq
    }

    /// Applies due expiries, then leases up to `limit` entries of `group` to `consumer`:
    /// pending entries whose virtual lease passed (XCLAIM, min-idle-time 0), lowest id first,
    /// then new entries (XREADGROUP >).
    pub fn fetch_as(
        &mut self,
        consumer: &str,
        group: GroupIx,
        limit: usize,
        now_ms: Ms,
        lease_ms: Option<Ms>,
    ) -> Result<Vec<Lease>, SettleError> {
        if group >= self.config.group_count {
            return Err(SettleError::Invalid(
                format!("unknown group {group}").into(),
            ));
        }
        if limit == 0 {
            return Err(SettleError::Invalid("limit 0".into()));
        }
        self.expire_due(now_ms);
        let deadline_ms = now_ms.saturating_add(lease_ms.unwrap_or(self.config.lease_ms));
        assert!(
            deadline_ms < MS_MAX,
            "deadline {deadline_ms} beyond 2^53 ms"
        );
        let claim = self.mirror.claimable(group, now_ms, limit);
        let read_count = limit - claim.len();
        let read = read_count > 0 && self.mirror.has_undelivered(group);
        if claim.is_empty() && !read {
            return Ok(Vec::new());
        }
        let gname = group_name(group);
        let mut pipe = redis::pipe();
        pipe.atomic();
        if !claim.is_empty() {
            let ids: Vec<String> = claim.iter().map(|&seq| entry_id(seq)).collect();
            pipe.cmd("XCLAIM")
                .arg(&self.keys.stream)
                .arg(&gname)
                .arg(consumer)
                .arg(0)
                .arg(ids);
        }
        if read {
            pipe.cmd("XREADGROUP")
                .arg("GROUP")
                .arg(&gname)
                .arg(consumer)
                .arg("COUNT")
                .arg(read_count)
                .arg("STREAMS")
                .arg(&self.keys.stream)
                .arg(">");
        }
        let replies: Vec<Value> = self.conn.pipe("XCLAIM / XREADGROUP", &pipe);
        let mut replies = replies.iter();
        let mut seqs = Vec::new();
        if !claim.is_empty() {
            let claimed = entry_seqs(replies.next()).expect("XCLAIM reply");
            assert_eq!(claimed, claim, "XCLAIM claims every idle pending entry");
            seqs.extend(claimed);
        }
        if read {
            seqs.extend(read_seqs(replies.next()).expect("XREADGROUP reply"));
        }
        Ok(self.arm(group, &seqs, deadline_ms))
    }

    /// Gives each claimed or read entry a lease (`lease.lua`) and records it.
    fn arm(&mut self, group: GroupIx, seqs: &[Seq], deadline_ms: Ms) -> Vec<Lease> {
        if seqs.is_empty() {
            return Vec::new();
        }
        let ids: Vec<String> = seqs.iter().map(|&seq| entry_id(seq)).collect();
        let mut invocation = self.lease_script.prepare_invoke();
        invocation
            .key(&self.keys.stream)
            .key(&self.keys.lease_counter)
            .key(&self.keys.leases[group])
            .arg(group_name(group))
            .arg(deadline_ms)
            .arg(ids);
        let armed: Vec<(u64, u32)> = self.conn.script("lease.lua", &invocation);
        assert_eq!(armed.len(), seqs.len(), "one lease per entry");
        let mut leases = Vec::with_capacity(seqs.len());
        for (&seq, &(lease_id, deliveries)) in seqs.iter().zip(&armed) {
            assert!(deliveries > 0, "entry {seq} is pending after a claim");
            let lease = Lease {
                lease_id: LeaseId(lease_id),
                group,
                seq,
                attempt: deliveries,
                deadline_ms,
                receipt: Some(receipt_of(seq)),
            };
            self.mirror.set(
                group,
                seq,
                Record::Leased {
                    lease_id: lease.lease_id,
                    attempts: deliveries,
                    deadline_ms,
                },
            );
            leases.push(lease);
        }
        leases
    }

    /// Applies a settle or renew sent by `consumer` ("" or [`DEFAULT_CONSUMER`]: any).
    pub fn settle_as(
        &mut self,
        consumer: &str,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        let lease = &request.lease;
        if self.mirror.get(lease.group, lease.seq).is_none() {
            return Err(SettleError::Invalid(
                format!("no record for group {} seq {}", lease.group, lease.seq).into(),
            ));
        }
        match self.config.variant.fence(&request.op) {
            Fence::Pending => self.settle_plain(request, now_ms),
            Fence::LeaseId => self.settle_fenced(consumer, request, now_ms),
            other => unreachable!("no redis variant uses {other:?}"),
        }
    }

    /// RillKit's settle: plain XACK, or a decision taken on what XPENDING says.
    fn settle_plain(
        &mut self,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        let lease = &request.lease;
        let (group, seq) = (lease.group, lease.seq);
        let id = entry_id(seq);
        let receipt_ok = lease.receipt == Some(receipt_of(seq));
        if request.op == SettleOp::Ack && receipt_ok {
            let (acked, _): (i64, i64) = self.conn.pipe(
                "XACK",
                redis::pipe()
                    .atomic()
                    .cmd("XACK")
                    .arg(&self.keys.stream)
                    .arg(group_name(group))
                    .arg(&id)
                    .cmd("HDEL")
                    .arg(&self.keys.leases[group])
                    .arg(&id),
            );
            if acked == 0 {
                return Err(SettleError::StaleLease);
            }
            self.mirror.set(group, seq, Record::Acked);
            return Ok(None);
        }
        let (pending, kept): (Value, Option<String>) = self.conn.pipe(
            "XPENDING",
            redis::pipe()
                .cmd("XPENDING")
                .arg(&self.keys.stream)
                .arg(group_name(group))
                .arg(&id)
                .arg(&id)
                .arg(1)
                .cmd("HGET")
                .arg(&self.keys.leases[group])
                .arg(&id),
        );
        let Some(deliveries) = pending_count(&pending) else {
            return Err(SettleError::StaleLease);
        };
        if !receipt_ok {
            // XACK names the entry by its id: another id does not settle this entry.
            return Err(SettleError::ReceiptMismatch);
        }
        match &request.op {
            SettleOp::Nack { delay_ms, reason } => {
                if deliveries >= self.config.max_attempts {
                    let reason = reason.as_deref().unwrap_or(REASON_MAX_ATTEMPTS);
                    self.dead_letter(group, seq, deliveries, reason);
                } else {
                    let kept = kept.as_deref().and_then(Kept::parse);
                    let not_before_ms = now_ms
                        .saturating_add(*delay_ms)
                        .max(kept.map_or(0, Kept::pending_until));
                    self.conn.cmd::<i64>(
                        "HSET",
                        redis::cmd("HSET")
                            .arg(&self.keys.leases[group])
                            .arg(&id)
                            .arg(idle_value(not_before_ms)),
                    );
                    let record = Record::Available {
                        attempts: deliveries,
                        not_before_ms,
                    };
                    self.mirror.set(group, seq, record);
                }
            }
            SettleOp::Reject { reason } => self.dead_letter(group, seq, deliveries, reason),
            SettleOp::Ack | SettleOp::Renew { .. } => unreachable!("handled above"),
        }
        Ok(None)
    }

    /// RillKit's dead letter: `XADD <stream>-dlq` with `x-error`, then `XACK`.
    fn dead_letter(&mut self, group: GroupIx, seq: Seq, deliveries: u32, reason: &str) {
        let mut pipe = redis::pipe();
        pipe.atomic();
        self.add_dead_letter(&mut pipe, group, seq, deliveries, reason);
        let (_, acked, _): (String, i64, i64) = self.conn.pipe("dead letter", &pipe);
        assert_eq!(acked, 1, "a dead-lettered entry was pending");
        let record = Record::DeadLettered {
            reason: Reason::new(reason),
        };
        self.mirror.set(group, seq, record);
    }

    fn add_dead_letter(
        &self,
        pipe: &mut redis::Pipeline,
        group: GroupIx,
        seq: Seq,
        deliveries: u32,
        reason: &str,
    ) {
        let id = entry_id(seq);
        pipe.cmd("XADD")
            .arg(&self.keys.dlq)
            .arg("*")
            .arg(event_fields(seq))
            .arg("x-group")
            .arg(group_name(group))
            .arg("x-id")
            .arg(&id)
            .arg("x-deliveries")
            .arg(deliveries)
            .arg("x-error")
            .arg(reason);
        pipe.cmd("XACK")
            .arg(&self.keys.stream)
            .arg(group_name(group))
            .arg(&id);
        pipe.cmd("HDEL").arg(&self.keys.leases[group]).arg(&id);
    }

    /// The fenced settle: `settle.lua`, atomically on the server.
    fn settle_fenced(
        &mut self,
        consumer: &str,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        let lease = &request.lease;
        let (group, seq) = (lease.group, lease.seq);
        let (op, amount_ms, reason) = match &request.op {
            SettleOp::Ack => ("ack", 0, None),
            SettleOp::Nack { delay_ms, reason } => ("nack", *delay_ms, reason.as_deref()),
            SettleOp::Reject { reason } => ("reject", 0, Some(reason.as_str())),
            SettleOp::Renew { extend_ms } => ("renew", *extend_ms, None),
        };
        assert!(
            now_ms.saturating_add(amount_ms) < MS_MAX,
            "virtual time beyond 2^53 ms"
        );
        let consumer = if consumer == DEFAULT_CONSUMER {
            ""
        } else {
            consumer
        };
        let receipt = lease
            .receipt
            .map_or_else(String::new, |r| format!("{}-0", r.0));
        let mut invocation = self.settle_script.prepare_invoke();
        invocation
            .key(&self.keys.stream)
            .key(&self.keys.dlq)
            .key(&self.keys.leases[group])
            .arg(group_name(group))
            .arg(entry_id(seq))
            .arg(op)
            .arg(lease.lease_id.0)
            .arg(lease.attempt)
            .arg(now_ms)
            .arg(consumer)
            .arg(receipt)
            .arg(self.config.max_attempts)
            .arg(amount_ms)
            .arg(if reason.is_some() { "1" } else { "0" })
            .arg(reason.unwrap_or(""));
        let reply: Vec<Value> = self.conn.script("settle.lua", &invocation);
        let word = |i: usize| reply.get(i).map(as_str).and_then(Result::ok);
        let number = |i: usize| reply.get(i).map(as_int).and_then(Result::ok);
        match word(0).as_deref() {
            Some("acked") => {
                self.mirror.set(group, seq, Record::Acked);
                Ok(None)
            }
            Some("dead") => {
                let reason = word(1).expect("a dead letter's reason");
                let reason = Reason::new(&reason);
                self.mirror.set(group, seq, Record::DeadLettered { reason });
                Ok(None)
            }
            Some("idle") => {
                let not_before_ms = number(1).expect("not before") as Ms;
                let record = Record::Available {
                    attempts: lease.attempt,
                    not_before_ms,
                };
                self.mirror.set(group, seq, record);
                Ok(None)
            }
            Some("renewed") => {
                let deadline_ms = number(1).expect("deadline") as Ms;
                let record = Record::Leased {
                    lease_id: lease.lease_id,
                    attempts: lease.attempt,
                    deadline_ms,
                };
                self.mirror.set(group, seq, record);
                Ok(Some(Lease {
                    deadline_ms,
                    ..*lease
                }))
            }
            Some("stale_lease") => Err(SettleError::StaleLease),
            Some("receipt_mismatch") => Err(SettleError::ReceiptMismatch),
            _ => panic!("backend redis: settle.lua replied {reply:?}"),
        }
    }

    /// Expires every lease whose virtual deadline is `<= now_ms`, in firing order: the
    /// entry stays pending and becomes claimable (the lease hash marks it idle since the
    /// deadline), or is dead-lettered when its deliveries are used up.
    pub fn expire_due(&mut self, now_ms: Ms) -> Vec<Expired> {
        let due = self.mirror.due(now_ms);
        if due.is_empty() {
            return Vec::new();
        }
        let mut pipe = redis::pipe();
        pipe.atomic();
        let mut expired = Vec::with_capacity(due.len());
        for item in &due {
            let dead_lettered = item.attempts >= self.config.max_attempts;
            if dead_lettered {
                self.add_dead_letter(
                    &mut pipe,
                    item.group,
                    item.seq,
                    item.attempts,
                    REASON_MAX_ATTEMPTS,
                );
            } else {
                pipe.cmd("HSET")
                    .arg(&self.keys.leases[item.group])
                    .arg(entry_id(item.seq))
                    .arg(idle_value(item.deadline_ms));
            }
            expired.push(Expired {
                deadline_ms: item.deadline_ms,
                group: item.group,
                seq: item.seq,
                lease_id: item.lease_id,
                dead_lettered,
                stale_timer: None,
            });
        }
        let _: Vec<Value> = self.conn.pipe("expiry", &pipe);
        for (item, expired) in due.iter().zip(&expired) {
            let record = if expired.dead_lettered {
                Record::DeadLettered {
                    reason: Reason::MAX_ATTEMPTS,
                }
            } else {
                Record::Available {
                    attempts: item.attempts,
                    not_before_ms: item.deadline_ms,
                }
            };
            self.mirror.set(item.group, item.seq, record);
        }
        expired.sort_unstable(); // Firing order: by deadline, then group, then seq.
        expired
    }

    /// The earliest virtual lease deadline.
    pub fn next_deadline(&self) -> Option<Ms> {
        self.mirror.next_deadline()
    }

    /// A broker restart: the redis-server process is killed (`SIGKILL`) and started again on
    /// its AOF (`appendfsync always`); the adapter reconnects and rebuilds its records from the
    /// server alone.
    ///
    /// # Panics
    /// When the server was not started by this process (callers refuse such a run first, see
    /// [`restart_refusal`]) or does not come back.
    pub fn restart(&mut self) {
        let url = self.conn.url().to_string();
        let Some(server) = self.target.server() else {
            panic!("backend redis: {}", restart_refusal(&url));
        };
        server
            .restart()
            .unwrap_or_else(|e| panic!("backend redis: restarting the server: {e}"));
        self.conn =
            Conn::open(&url).unwrap_or_else(|e| panic!("backend redis: after a restart: {e}"));
        let state = self
            .server_view()
            .unwrap_or_else(|e| panic!("backend redis: after a restart: {e}"));
        self.mirror = state.mirror;
    }

    /// Whether broker restarts are possible (the server was started by this process).
    pub fn can_restart(&self) -> bool {
        self.target.server().is_some()
    }
}

impl Drop for RedisBackend {
    fn drop(&mut self) {
        if !self.keep_keys {
            let _ = self
                .conn
                .try_cmd::<i64>(redis::cmd("DEL").arg(self.keys.all()));
        }
    }
}

/// Deletes a run's keys (after [`RedisBackend::keep_keys`]); returns how many existed.
pub fn delete_keys(url: &str, keys: &Keys) -> Result<i64, String> {
    Conn::open(url)?
        .try_cmd(redis::cmd("DEL").arg(keys.all()))
        .map_err(|e| e.to_string())
}

/// A key prefix no other run uses: process id, a per-process counter and the connection's
/// server-wide client id.
fn fresh_prefix(conn: &mut Conn) -> Result<String, String> {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let client_id: i64 = conn
        .try_cmd(redis::cmd("CLIENT").arg("ID"))
        .map_err(|e| format!("CLIENT ID: {e}"))?;
    Ok(format!(
        "leasehold:{}.{}.{client_id}:",
        std::process::id(),
        RUNS.fetch_add(1, Ordering::Relaxed)
    ))
}

/// The entry's fields: its sequence number and event id.
fn event_fields(seq: Seq) -> Vec<String> {
    vec![
        "seq".to_string(),
        seq.to_string(),
        "event".to_string(),
        format!("E{seq}"),
    ]
}

/// The model's receipt for event `seq`: its entry id `<seq>-0`.
fn receipt_of(seq: Seq) -> Receipt {
    Receipt(u64::from(seq))
}

/// The ids of `[[id, fields], …]` (XCLAIM, XRANGE).
fn entry_seqs(value: Option<&Value>) -> Result<Vec<Seq>, String> {
    let mut seqs = Vec::new();
    for entry in as_array(value.ok_or("no reply")?)? {
        let id = match entry {
            Value::Array(parts) => as_str(parts.first().ok_or("empty entry")?)?,
            other => as_str(other)?,
        };
        seqs.push(seq_of(&id).ok_or_else(|| format!("entry id {id}"))?);
    }
    Ok(seqs)
}

/// The ids of an XREADGROUP reply `[[stream, [[id, fields], …]]]` (nil when nothing is new).
fn read_seqs(value: Option<&Value>) -> Result<Vec<Seq>, String> {
    let value = value.ok_or("no reply")?;
    let Some(stream) = as_array(value)?.first() else {
        return Ok(Vec::new());
    };
    let [_name, entries] = as_array(stream)? else {
        return Err("XREADGROUP: [stream, entries]".to_string());
    };
    entry_seqs(Some(entries))
}

/// The delivery count of `XPENDING key group id id 1`, if the entry is pending.
fn pending_count(value: &Value) -> Option<u32> {
    let entry = as_array(value).ok()?.first()?;
    let fields = as_array(entry).ok()?;
    Some(as_int(fields.get(3)?).ok()? as u32)
}

const SETTLE_LUA: &str = include_str!("lua/settle.lua");
const LEASE_LUA: &str = include_str!("lua/lease.lua");
