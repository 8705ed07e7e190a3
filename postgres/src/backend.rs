//! [`PgBackend`]: the `pg-visibility` and `pg-fenced` job tables on a real PostgreSQL server.
//!
//! One schema per run (`leasehold_<pid>_<n>_<server pid>`), created with the backend and
//! dropped with it. Every statement is in [`crate::sql`]; a fetch is one transaction (expire,
//! `SELECT … FOR UPDATE SKIP LOCKED`, take tokens, lease), every settle one statement. The
//! state the engines observe ([`leasehold_model::BrokerView`]) is read back from the server
//! after each change ([`crate::snapshot`]), never kept beside it.

use crate::conn::{connect, redacted, restart_refusal, Target};
use crate::snapshot::Snapshot;
use crate::sql;
use leasehold_model::variant::Fence;
use leasehold_model::{
    BrokerConfig, Expired, GroupIx, Lease, LeaseId, Ms, Reason, Seq, SettleError, SettleOp,
    SettleRequest, Variant,
};
use postgres::types::Type;
use postgres::{Client, Statement};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

/// The variants this backend runs.
pub const VARIANTS: [Variant; 2] = [Variant::PgVisibility, Variant::PgFenced];

/// Virtual times the backend stores must fit a `bigint` with room for `now + lease_ms`.
const MS_MAX: Ms = 1 << 62;

/// Checks that the backend can run `config` (one-line error otherwise), without a server.
pub fn check_config(config: &BrokerConfig) -> Result<(), String> {
    if !VARIANTS.contains(&config.variant) {
        return Err(format!(
            "runs pg-visibility and pg-fenced only, not '{}'",
            config.variant
        ));
    }
    if config.group_count == 0 || config.group_count > i32::MAX as usize {
        return Err("at least one group".to_string());
    }
    if config.max_attempts == 0 || config.max_attempts > i32::MAX as u32 {
        return Err("max_attempts must be at least 1".to_string());
    }
    if config.lease_ms >= MS_MAX {
        return Err(format!(
            "lease_ms must be below 2^62 (got {})",
            config.lease_ms
        ));
    }
    Ok(())
}

/// The prepared statements of one connection.
struct Statements {
    publish: Statement,
    expire: Statement,
    pick: Statement,
    tokens: Statement,
    lease: Statement,
    ack: Statement,
    reject: Statement,
    nack: Statement,
    renew: Statement,
    would_match: Statement,
    state: Statement,
    published: Statement,
}

impl Statements {
    fn prepare(client: &mut Client, schema: &str, fence: Fence) -> Result<Statements, String> {
        let fence = match fence {
            Fence::Row => sql::BY_ID,
            _ => sql::BY_TOKEN,
        };
        let (i4, i8, text) = (Type::INT4, Type::INT8, Type::TEXT);
        // grp, seq, token, now: every settle's first four parameters, typed, so that a fence
        // that does not read the token or the clock still prepares.
        let settle = [i4.clone(), i8.clone(), i8.clone(), i8.clone()];
        let with = |more: &[Type]| [&settle[..], more].concat();
        let mut prepare = |text: &str, types: &[Type]| {
            client
                .prepare_typed(&sql::render(text, schema, fence), types)
                .map_err(|e| {
                    format!(
                        "preparing {}: {e}",
                        text.trim().lines().next().unwrap_or("")
                    )
                })
        };
        Ok(Statements {
            publish: prepare(sql::PUBLISH, std::slice::from_ref(&i4))?,
            expire: prepare(sql::EXPIRE, &[i8.clone(), i4.clone()])?,
            pick: prepare(sql::PICK, &[i4.clone(), i8.clone(), i8.clone()])?,
            tokens: prepare(sql::TOKENS, std::slice::from_ref(&i8))?,
            lease: prepare(
                sql::LEASE,
                &[i4.clone(), Type::INT8_ARRAY, i8.clone(), i8.clone()],
            )?,
            ack: prepare(sql::ACK, &settle)?,
            reject: prepare(sql::REJECT, &with(std::slice::from_ref(&text)))?,
            nack: prepare(sql::NACK, &with(&[i8.clone(), i4.clone(), text]))?,
            renew: prepare(sql::RENEW, &with(&[i8]))?,
            would_match: prepare(sql::WOULD_MATCH, &settle)?,
            state: prepare(sql::STATE, &[])?,
            published: prepare(sql::PUBLISHED, &[])?,
        })
    }
}

/// A run of `pg-visibility` or `pg-fenced` on a PostgreSQL server, in its own schema, dropped
/// with the backend (unless [`PgBackend::keep_schema`]).
pub struct PgBackend {
    config: BrokerConfig,
    target: Target,
    client: RefCell<Client>,
    statements: Statements,
    schema: String,
    published: Seq,
    snapshot: RefCell<Option<Snapshot>>,
    keep_schema: bool,
}

impl std::fmt::Debug for PgBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgBackend")
            .field("url", &redacted(self.target.url()))
            .field("schema", &self.schema)
            .field("variant", &self.config.variant)
            .finish()
    }
}

fn ms(value: Ms) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

impl PgBackend {
    /// A fresh run of `config` on `target`, in a schema of its own. Errors (one line): a
    /// variant this backend does not run, a configuration it cannot hold, no server answering.
    pub fn new(config: &BrokerConfig, target: Target) -> Result<PgBackend, String> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        check_config(config)?;
        let mut client = connect(target.url())?;
        let server_pid: i32 = client
            .query_one("SELECT pg_backend_pid()", &[])
            .map_err(|e| e.to_string())?
            .get(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let schema = format!("leasehold_{}_{n}_{server_pid}", std::process::id());
        client
            .batch_execute(&sql::render(sql::SCHEMA, &schema, ""))
            .map_err(|e| format!("creating schema {schema}: {e}"))?;
        let fence = config.variant.fence(&SettleOp::Ack);
        let statements = Statements::prepare(&mut client, &schema, fence)?;
        Ok(PgBackend {
            config: *config,
            target,
            client: RefCell::new(client),
            statements,
            schema,
            published: 0,
            snapshot: RefCell::new(None),
            keep_schema: false,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &BrokerConfig {
        &self.config
    }

    /// The run's schema.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The server's URL (print it through [`redacted`]).
    pub fn url(&self) -> &str {
        self.target.url()
    }

    /// Keeps the schema when the backend is dropped (to look at it afterwards).
    pub fn keep_schema(&mut self) {
        self.keep_schema = true;
    }

    /// Whether broker restarts are possible (the server was started by this process).
    pub fn can_restart(&self) -> bool {
        self.target.server().is_some()
    }

    fn fail(&self, what: &str, error: impl std::fmt::Display) -> ! {
        let error = error.to_string();
        let line = error.lines().next().unwrap_or_default();
        panic!(
            "backend postgres ({}): {what}: {line}",
            redacted(self.target.url())
        )
    }

    fn changed(&mut self) {
        *self.snapshot.get_mut() = None;
    }

    /// The server's state, read afresh when something changed since the last read.
    pub(crate) fn snapshot(&self) -> std::cell::Ref<'_, Snapshot> {
        if self.snapshot.borrow().is_none() {
            let read = self
                .read_state()
                .unwrap_or_else(|e| self.fail("reading the state", e));
            *self.snapshot.borrow_mut() = Some(read);
        }
        std::cell::Ref::map(self.snapshot.borrow(), |s| {
            s.as_ref().expect("read just above")
        })
    }

    /// The whole state, read from the server alone (the tables and the counter).
    pub fn read_state(&self) -> Result<Snapshot, String> {
        let mut client = self.client.borrow_mut();
        let published: i64 = client
            .query_one(&self.statements.published, &[])
            .map_err(|e| e.to_string())?
            .get(0);
        let rows = client
            .query(&self.statements.state, &[])
            .map_err(|e| e.to_string())?;
        Snapshot::from_rows(self.config.group_count, published as Seq, &rows)
    }

    /// Appends an event: one row per group.
    pub fn publish(&mut self) -> Seq {
        let groups = self.config.group_count as i32;
        let result = self
            .client
            .get_mut()
            .query(&self.statements.publish, &[&groups]);
        let rows = result.unwrap_or_else(|e| self.fail("publish", e));
        let seq: i64 = rows[0].get(0);
        self.published = seq as Seq;
        self.changed();
        self.published
    }

    /// Applies due expiries, then leases up to `limit` visible rows of `group` (lowest seq
    /// first) until `now_ms + lease_ms`, in one transaction.
    pub fn fetch(
        &mut self,
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
        let deadline_ms = now_ms.saturating_add(lease_ms.unwrap_or(self.config.lease_ms));
        self.changed();
        let result =
            self.fetch_transaction(group as i32, limit as i64, ms(now_ms), ms(deadline_ms));
        let rows = result.unwrap_or_else(|e| self.fail("fetch", e));
        Ok(rows
            .into_iter()
            .map(|(seq, lease_id, attempts)| Lease {
                lease_id: LeaseId(lease_id as u64),
                group,
                seq: seq as Seq,
                attempt: attempts as u32,
                deadline_ms,
                receipt: None,
            })
            .collect())
    }

    fn fetch_transaction(
        &mut self,
        group: i32,
        limit: i64,
        now: i64,
        deadline: i64,
    ) -> Result<Vec<(i64, i64, i32)>, postgres::Error> {
        let max_attempts = self.config.max_attempts as i32;
        let s = &self.statements;
        let client = self.client.get_mut();
        let mut tx = client.transaction()?;
        tx.query(&s.expire, &[&now, &max_attempts])?;
        let seqs: Vec<i64> = tx
            .query(&s.pick, &[&group, &now, &limit])?
            .iter()
            .map(|row| row.get(0))
            .collect();
        if seqs.is_empty() {
            tx.commit()?;
            return Ok(Vec::new());
        }
        let count = seqs.len() as i64;
        let first: i64 = tx.query_one(&s.tokens, &[&count])?.get(0);
        let mut leased: Vec<(i64, i64, i32)> = tx
            .query(&s.lease, &[&group, &seqs, &first, &deadline])?
            .iter()
            .map(|row| (row.get(0), row.get(1), row.get(2)))
            .collect();
        tx.commit()?;
        leased.sort_unstable();
        Ok(leased)
    }

    /// Applies a settle or renew: one statement, fenced by id (`pg-visibility`) or by id and
    /// lease token (`pg-fenced`). 0 rows is `stale_lease`.
    pub fn settle(
        &mut self,
        request: &SettleRequest,
        now_ms: Ms,
    ) -> Result<Option<Lease>, SettleError> {
        let lease = request.lease;
        if lease.group >= self.config.group_count || lease.seq == 0 || lease.seq > self.published {
            return Err(SettleError::Invalid(
                format!("no record for group {} seq {}", lease.group, lease.seq).into(),
            ));
        }
        let (group, seq, token, now) = (
            lease.group as i32,
            i64::from(lease.seq),
            ms(lease.lease_id.0),
            ms(now_ms),
        );
        let max_attempts = self.config.max_attempts as i32;
        let s = &self.statements;
        let client = self.client.get_mut();
        let key: [&(dyn postgres::types::ToSql + Sync); 4] = [&group, &seq, &token, &now];
        let result: Result<(u64, Option<Lease>), postgres::Error> = if lease.receipt.is_some() {
            // A job table has no receipts: a request carrying one is refused without a write.
            let would: i64 = match client.query_one(&s.would_match, &key) {
                Ok(row) => row.get(0),
                Err(e) => self.fail("settle", e),
            };
            return Err(if would > 0 {
                SettleError::ReceiptMismatch
            } else {
                SettleError::StaleLease
            });
        } else {
            match request.op {
                SettleOp::Ack => client.execute(&s.ack, &key).map(|n| (n, None)),
                SettleOp::Reject { reason } => client
                    .execute(&s.reject, &[&group, &seq, &token, &now, &reason.as_str()])
                    .map(|n| (n, None)),
                SettleOp::Nack { delay_ms, reason } => {
                    let not_before = ms(now_ms.saturating_add(delay_ms));
                    let reason = reason.map(Reason::as_str);
                    client
                        .query_one(
                            &s.nack,
                            &[
                                &group,
                                &seq,
                                &token,
                                &now,
                                &not_before,
                                &max_attempts,
                                &reason,
                            ],
                        )
                        .map(|row| (row.get::<_, i64>(0) as u64, None))
                }
                SettleOp::Renew { extend_ms } => {
                    let deadline_ms = now_ms.saturating_add(extend_ms);
                    let deadline = ms(deadline_ms);
                    client
                        .execute(&s.renew, &[&group, &seq, &token, &now, &deadline])
                        .map(|n| {
                            (
                                n,
                                Some(Lease {
                                    deadline_ms,
                                    ..lease
                                }),
                            )
                        })
                }
            }
        };
        let (rows, renewed) = result.unwrap_or_else(|e| self.fail("settle", e));
        if rows == 0 {
            return Err(SettleError::StaleLease);
        }
        self.changed();
        Ok(renewed)
    }

    /// Expires every lease whose deadline is `<= now_ms`, in firing order (deadline, group,
    /// seq): one statement.
    pub fn expire_due(&mut self, now_ms: Ms) -> Vec<Expired> {
        let max_attempts = self.config.max_attempts as i32;
        let now = ms(now_ms);
        let result = self
            .client
            .get_mut()
            .query(&self.statements.expire, &[&now, &max_attempts]);
        let rows = result.unwrap_or_else(|e| self.fail("expiry", e));
        if !rows.is_empty() {
            self.changed();
        }
        rows.iter()
            .map(|row| Expired {
                deadline_ms: row.get::<_, i64>(0) as Ms,
                group: row.get::<_, i32>(1) as GroupIx,
                seq: row.get::<_, i64>(2) as Seq,
                lease_id: LeaseId(row.get::<_, i64>(3) as u64),
                dead_lettered: row.get(4),
                stale_timer: None,
            })
            .collect()
    }

    /// The earliest deadline of a lease, read from the server.
    pub fn next_deadline(&self) -> Option<Ms> {
        self.snapshot().next_deadline()
    }

    /// A broker restart: the server this process started is shut down at once (no
    /// checkpoint) and started again on the same data; the backend reconnects. Refused (a
    /// panic naming why) on a server given by URL.
    pub fn restart(&mut self) {
        let Some(server) = self.target.server() else {
            panic!("backend postgres: {}", restart_refusal(self.target.url()));
        };
        if let Err(e) = server.restart() {
            self.fail("restarting the server", e);
        }
        let mut client =
            connect(self.target.url()).unwrap_or_else(|e| self.fail("after a restart", e));
        let fence = self.config.variant.fence(&SettleOp::Ack);
        self.statements = Statements::prepare(&mut client, &self.schema, fence)
            .unwrap_or_else(|e| self.fail("after a restart", e));
        *self.client.get_mut() = client;
        self.changed();
        let published = self.snapshot().event_count();
        self.published = published;
    }
}

impl Drop for PgBackend {
    fn drop(&mut self) {
        if !self.keep_schema {
            let drop = format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema);
            let _ = self.client.get_mut().batch_execute(&drop);
        }
    }
}
