//! [`Channels`]: the AMQP channels of the `rabbitmq-channel` variant (docs/rabbitmq.md).
//!
//! A consumer (a worker, by name) keeps **one channel per group** and holds several deliveries
//! on it. Delivery tags are numbered per channel from 1. A lease names its delivery as
//! (channel, tag), packed in its lease id ([`lease_id`], [`channel_of`], [`tag_of`]); a
//! channel number is never reused, so neither is a lease id, and the broker remembers which
//! consumer each channel belonged to. A settle travels on its
//! consumer's **current** channel for the lease's group, whatever channel the lease came
//! from: a tag from a closed channel names whatever delivery holds that number on the new
//! one. Closing a channel (a refused tag's `406`, a delivery's timeout) returns every delivery
//! it held and opens the consumer's next channel.
//!
//! Only the broker of that variant fills these tables; in every other variant they stay empty
//! and take no part in the broker's equality or hash.

use crate::broker::Expired;
use crate::inline::InlineVec;
use crate::types::{GroupIx, LeaseId, Seq};

/// Bits of a lease id that hold the delivery tag; the channel number sits above them.
pub const TAG_BITS: u32 = 20;

/// The lease id of the delivery `tag` on channel `channel`.
///
/// # Panics
/// When a channel has handed out 2^20 deliveries (no run gets there).
pub fn lease_id(channel: u32, tag: u32) -> LeaseId {
    assert!(
        tag < 1 << TAG_BITS,
        "delivery tag {tag} overflows a lease id"
    );
    LeaseId(u64::from(channel) << TAG_BITS | u64::from(tag))
}

/// The channel a lease id names (0 or past the last opened: none).
pub fn channel_of(id: LeaseId) -> u32 {
    u32::try_from(id.0 >> TAG_BITS).unwrap_or(u32::MAX)
}

/// The delivery tag a lease id names.
pub fn tag_of(id: LeaseId) -> u32 {
    (id.0 & ((1 << TAG_BITS) - 1)) as u32
}

/// A consumer's current channel for one group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Current {
    /// The consumer (an index into the names).
    pub consumer: u32,
    /// The group.
    pub group: u32,
    /// Its channel number.
    pub channel: u32,
    /// The tag its next delivery gets.
    pub next_tag: u32,
}

/// An unacked delivery on an open channel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Delivery {
    /// The channel it arrived on.
    pub channel: u32,
    /// Its tag there.
    pub tag: u32,
    /// The record's group.
    pub group: u32,
    /// The record's event.
    pub seq: Seq,
}

/// Every consumer's channels and the deliveries they hold.
#[derive(Clone, Debug, Default)]
pub struct Channels {
    /// Consumer names, by index (index 0: the unnamed consumer of a plain `fetch`). Kept
    /// beside the state: an index is a function of the order in which names first fetched.
    names: Vec<Box<str>>,
    /// One entry per (consumer, group) that has fetched.
    current: InlineVec<Current, 2>,
    /// `owners[channel - 1]`: the consumer the channel belongs to (numbered from 1).
    owners: InlineVec<u16, 8>,
    /// The unacked deliveries of open channels, in the order they were delivered.
    open: InlineVec<Delivery, 4>,
    /// Deliveries a channel's close returned (the server puts them back at once), not yet
    /// reported by an `expire_due`.
    pub(crate) returned: InlineVec<Expired, 2>,
}

impl PartialEq for Channels {
    fn eq(&self, other: &Channels) -> bool {
        self.current == other.current
            && self.owners == other.owners
            && self.open == other.open
            && self.returned == other.returned
    }
}

impl Eq for Channels {}

impl std::hash::Hash for Channels {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.current.hash(state);
        self.owners.hash(state);
        self.open.hash(state);
        self.returned.hash(state);
    }
}

impl Channels {
    /// The index of the consumer named `name` (`""`: the unnamed one), added when new.
    pub fn consumer(&mut self, name: &str) -> u32 {
        if self.names.is_empty() {
            self.names.push("".into());
        }
        match self.names.iter().position(|n| &**n == name) {
            Some(index) => index as u32,
            None => {
                self.names.push(name.into());
                self.names.len() as u32 - 1
            }
        }
    }

    /// The current channel of (consumer, group), opened when it has none.
    fn current_mut(&mut self, consumer: u32, group: GroupIx) -> &mut Current {
        let group = group as u32;
        let position = match self
            .current
            .iter()
            .position(|c| c.consumer == consumer && c.group == group)
        {
            Some(position) => position,
            None => {
                let channel = self.open_channel(consumer);
                self.current.push(Current {
                    consumer,
                    group,
                    channel,
                    next_tag: 1,
                });
                self.current.len() - 1
            }
        };
        &mut self.current[position]
    }

    fn open_channel(&mut self, consumer: u32) -> u32 {
        let consumer = u16::try_from(consumer).expect("fewer than 2^16 consumers");
        self.owners.push(consumer);
        self.owners.len() as u32
    }

    /// The current channel of `consumer` for `group` (opened when it has none).
    pub fn current(&mut self, consumer: u32, group: GroupIx) -> u32 {
        self.current_mut(consumer, group).channel
    }

    /// A new delivery of (group, seq) to `consumer` on its current channel: its lease id.
    pub fn deliver(&mut self, consumer: u32, group: GroupIx, seq: Seq) -> LeaseId {
        let current = self.current_mut(consumer, group);
        let (channel, tag) = (current.channel, current.next_tag);
        current.next_tag += 1;
        self.open.push(Delivery {
            channel,
            tag,
            group: group as u32,
            seq,
        });
        lease_id(channel, tag)
    }

    /// The consumer channel `channel` belongs to (`None`: no such channel).
    pub fn owner(&self, channel: u32) -> Option<u32> {
        let index = (channel as usize).checked_sub(1)?;
        self.owners.get(index).map(|&c| u32::from(c))
    }

    /// The channel a request naming lease `id` of `group` travels on: its consumer's current
    /// channel for the group (opened when it has none). `None` for a lease id that names no
    /// consumer or channel of this broker.
    pub fn route(&mut self, id: LeaseId, group: GroupIx) -> Option<(u32, u32)> {
        let index = (channel_of(id) as usize).checked_sub(1)?;
        let consumer = u32::from(*self.owners.get(index)?);
        Some((consumer, self.current_mut(consumer, group).channel))
    }

    /// The delivery `tag` on `channel`, if it holds one.
    pub fn find(&self, channel: u32, tag: u32) -> Option<Delivery> {
        self.open
            .iter()
            .copied()
            .find(|d| d.channel == channel && d.tag == tag)
    }

    /// The delivery of (group, seq) on an open channel, if any.
    pub fn holding(&self, group: GroupIx, seq: Seq) -> Option<Delivery> {
        self.open
            .iter()
            .copied()
            .find(|d| d.group == group as u32 && d.seq == seq)
    }

    /// The delivery is settled (acked, nacked, rejected) or expired: off its channel.
    pub fn remove(&mut self, channel: u32, tag: u32) {
        self.open
            .retain(|d| !(d.channel == channel && d.tag == tag));
    }

    /// Whether `channel` is some consumer's current channel.
    pub fn is_current(&self, channel: u32) -> bool {
        self.current.iter().any(|c| c.channel == channel)
    }

    /// Closes `channel`: returns the deliveries it held (in the order they were delivered)
    /// and makes a new channel its consumer's current one for that group.
    pub fn close(&mut self, channel: u32) -> InlineVec<Delivery, 4> {
        let held: InlineVec<Delivery, 4> = self
            .open
            .iter()
            .copied()
            .filter(|d| d.channel == channel)
            .collect();
        self.open.retain(|d| d.channel != channel);
        if let Some(position) = self.current.iter().position(|c| c.channel == channel) {
            let consumer = self.current[position].consumer;
            let next = self.open_channel(consumer);
            self.current[position].channel = next;
            self.current[position].next_tag = 1;
        }
        held
    }

    /// The deliveries held on `channel`.
    pub fn on(&self, channel: u32) -> impl Iterator<Item = Delivery> + '_ {
        self.open
            .iter()
            .copied()
            .filter(move |d| d.channel == channel)
    }
}
