//! The keys of one run, and the mapping between sequence numbers and stream entry ids.
//!
//! Every run owns a prefix (`leasehold:<pid>.<n>.<client id>:`) and nothing outside it: the
//! event stream, its dead-letter stream `<stream>-dlq`, the lease-id counter and one lease hash
//! per consumer group. [`Keys::all`] lists them for the clean-up at the end of the run.

use leasehold_model::{GroupIx, Seq};

/// The keys a run uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keys {
    /// The prefix every key starts with.
    pub prefix: String,
    /// The event stream: one entry per published event, id `<seq>-0`.
    pub stream: String,
    /// The dead-letter stream, `<stream>-dlq` (RillKit's name).
    pub dlq: String,
    /// The lease-id counter (INCRBY; durable, so ids are never reused across restarts).
    pub lease_counter: String,
    /// Per group: the hash kept beside the group's pending entries, field = entry id, value
    /// `L <lease id> <deadline ms>` (leased) or `I 0 <not before ms>` (pending, idle).
    pub leases: Vec<String>,
    /// Per group: the consumer group's name on the stream.
    pub groups: Vec<String>,
}

impl Keys {
    /// The keys under `prefix` for `group_count` groups.
    pub fn new(prefix: &str, group_count: usize) -> Keys {
        let stream = format!("{prefix}stream");
        Keys {
            prefix: prefix.to_string(),
            dlq: format!("{stream}-dlq"),
            lease_counter: format!("{prefix}lease-id"),
            leases: (0..group_count)
                .map(|g| format!("{prefix}leases:{}", group_name(g)))
                .collect(),
            groups: (0..group_count).map(group_name).collect(),
            stream,
        }
    }

    /// Every key of the run, for the clean-up.
    pub fn all(&self) -> Vec<String> {
        let mut keys = vec![
            self.stream.clone(),
            self.dlq.clone(),
            self.lease_counter.clone(),
        ];
        keys.extend(self.leases.iter().cloned());
        keys
    }
}

/// The consumer group name of group `group`.
pub fn group_name(group: GroupIx) -> String {
    format!("g{group}")
}

/// The stream entry id of event `seq`: `<seq>-0`. The adapter publishes with explicit ids, so
/// the receipt the pure model hands out (the entry id, `Receipt(seq)`) names the real entry.
pub fn entry_id(seq: Seq) -> String {
    format!("{seq}-0")
}

/// The sequence number of an entry id written by [`entry_id`].
pub fn seq_of(id: &str) -> Option<Seq> {
    let (ms, rest) = id.split_once('-')?;
    (rest == "0").then_some(())?;
    ms.parse().ok().filter(|&seq| seq > 0)
}
