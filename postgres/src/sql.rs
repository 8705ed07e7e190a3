//! Every statement the backend sends, one constant each, so that `docs/postgres.md` and a
//! reader comparing them with their own job table see exactly what runs.
//!
//! `$now` is always a parameter: the engine's virtual milliseconds, never `now()`. Deadlines
//! and not-before times are computed by the caller (`now + lease_ms`, `now + delay_ms`) and
//! passed as parameters too, so the server's clock decides nothing.
//!
//! The table `jobs` holds the unsettled records: `lease_id IS NULL` is a visible (available)
//! row, from `visible_at` on; otherwise the row is leased until `visible_at`. An ack deletes
//! the row; a dead letter moves it to `dead_letters` with its error.

/// The schema of one run (`{s}` is the run's schema).
pub const SCHEMA: &str = "
CREATE SCHEMA {s};
CREATE TABLE {s}.meta (
    published     bigint NOT NULL,   -- events published so far
    next_lease_id bigint NOT NULL    -- the durable lease-token counter
);
INSERT INTO {s}.meta VALUES (0, 1);
CREATE TABLE {s}.jobs (
    grp        int    NOT NULL,
    seq        bigint NOT NULL,
    attempts   int    NOT NULL DEFAULT 0,  -- deliveries so far
    lease_id   bigint,                     -- NULL: visible; else the lease token of the last read
    visible_at bigint NOT NULL DEFAULT 0,  -- engine ms: leased until / visible from
    PRIMARY KEY (grp, seq)
);
CREATE TABLE {s}.dead_letters (
    grp      int    NOT NULL,
    seq      bigint NOT NULL,
    attempts int    NOT NULL,
    error    text   NOT NULL,
    PRIMARY KEY (grp, seq)
);";

/// Publish: the event's number from the counter, one row per group.
pub const PUBLISH: &str = "
WITH e AS (UPDATE {s}.meta SET published = published + 1 RETURNING published)
INSERT INTO {s}.jobs (grp, seq) SELECT g, e.published FROM e, generate_series(0, $1 - 1) AS g
RETURNING seq";

/// Expiry (at the start of every fetch, and `expire_due`): leases whose deadline passed become
/// visible again from their deadline, or move to the dead letters once their attempts are
/// used up. `$1` = now, `$2` = max attempts.
pub const EXPIRE: &str = "
WITH due AS (
    SELECT grp, seq, lease_id, attempts, visible_at FROM {s}.jobs
    WHERE lease_id IS NOT NULL AND visible_at <= $1
    FOR UPDATE
), dead AS (
    DELETE FROM {s}.jobs j USING due d
    WHERE j.grp = d.grp AND j.seq = d.seq AND d.attempts >= $2
    RETURNING j.grp, j.seq, j.attempts
), moved AS (
    INSERT INTO {s}.dead_letters (grp, seq, attempts, error)
    SELECT grp, seq, attempts, 'max attempts' FROM dead
), back AS (
    UPDATE {s}.jobs j SET lease_id = NULL FROM due d
    WHERE j.grp = d.grp AND j.seq = d.seq AND d.attempts < $2
)
SELECT visible_at, grp, seq, lease_id, attempts >= $2 FROM due
ORDER BY visible_at, grp, seq";

/// Fetch, step 1 of 3 (one transaction): the lowest visible rows of the group, skipping rows
/// another transaction holds. `$1` = group, `$2` = now, `$3` = limit.
pub const PICK: &str = "
SELECT seq FROM {s}.jobs
WHERE grp = $1 AND lease_id IS NULL AND visible_at <= $2
ORDER BY seq LIMIT $3
FOR UPDATE SKIP LOCKED";

/// Fetch, step 2: `$1` fresh lease tokens from the durable counter; returns the first.
pub const TOKENS: &str = "
UPDATE {s}.meta SET next_lease_id = next_lease_id + $1 RETURNING next_lease_id - $1";

/// Fetch, step 3: each picked row leased with its token until `$4` (now + lease_ms).
/// `$1` = group, `$2` = the picked seqs in order, `$3` = the first token.
pub const LEASE: &str = "
UPDATE {s}.jobs j SET lease_id = $3 + t.ord - 1, attempts = j.attempts + 1, visible_at = $4
FROM unnest($2::bigint[]) WITH ORDINALITY AS t(seq, ord)
WHERE j.grp = $1 AND j.seq = t.seq
RETURNING j.seq, j.lease_id, j.attempts";

/// The row a settle names, in `pg-visibility`: by id alone (`$1` = group, `$2` = seq). The
/// statements are prepared with the types of every parameter, so `$3` (the caller's token)
/// and `$4` (now) may go unread.
pub const BY_ID: &str = "grp = $1 AND seq = $2";

/// The row a settle names, in `pg-fenced`: by id, lease token (`$3`) and unexpired lease
/// (`$4` = now).
pub const BY_TOKEN: &str = "grp = $1 AND seq = $2 AND lease_id = $3 AND visible_at > $4";

/// Ack: the row is deleted. `{fence}` is [`BY_ID`] or [`BY_TOKEN`].
pub const ACK: &str = "DELETE FROM {s}.jobs WHERE {fence}";

/// Reject: the row moves to the dead letters with `$5` as its error.
pub const REJECT: &str = "
WITH gone AS (DELETE FROM {s}.jobs WHERE {fence} RETURNING grp, seq, attempts)
INSERT INTO {s}.dead_letters (grp, seq, attempts, error)
SELECT grp, seq, attempts, $5 FROM gone";

/// Nack: visible again from `$5` (now + delay), or, with its attempts used up (`$6` = max
/// attempts), moved to the dead letters with `$7` (or 'max attempts') as its error.
pub const NACK: &str = "
WITH gone AS (
    DELETE FROM {s}.jobs WHERE {fence} AND attempts >= $6 RETURNING grp, seq, attempts
), dead AS (
    INSERT INTO {s}.dead_letters (grp, seq, attempts, error)
    SELECT grp, seq, attempts, coalesce($7, 'max attempts') FROM gone RETURNING 1
), back AS (
    UPDATE {s}.jobs SET lease_id = NULL, visible_at = $5
    WHERE {fence} AND attempts < $6 RETURNING 1
)
SELECT (SELECT count(*) FROM dead) + (SELECT count(*) FROM back)";

/// Renew (extend): leased until `$5` (now + extend_ms), by the caller's token (`$3`).
pub const RENEW: &str = "UPDATE {s}.jobs SET lease_id = $3, visible_at = $5 WHERE {fence}";

/// Whether a settle's fence would match (a request with a receipt is refused before it
/// writes: `receipt_mismatch` if it would, `stale_lease` if not).
pub const WOULD_MATCH: &str = "SELECT count(*) FROM {s}.jobs WHERE {fence}";

/// The whole state, read back: every unsettled row and every dead letter.
pub const STATE: &str = "
SELECT grp, seq, attempts, lease_id, visible_at, NULL::text FROM {s}.jobs
UNION ALL
SELECT grp, seq, attempts, NULL, NULL, error FROM {s}.dead_letters";

/// Events published so far.
pub const PUBLISHED: &str = "SELECT published FROM {s}.meta";

/// `sql` for the schema `schema` and the fence `fence`.
pub fn render(sql: &str, schema: &str, fence: &str) -> String {
    sql.replace("{fence}", fence).replace("{s}", schema)
}
