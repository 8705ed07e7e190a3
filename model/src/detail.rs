//! A violation's detail: its words, and the events, leases, frontiers and moments it names,
//! as data.
//!
//! The oracle says what it saw in its own terms (`event 7 of group 1`, `L3`, `30000 ms`); a
//! timeline names the same things its own way (`E7 of orders`, the name a scenario bound to
//! the lease, the line `t3` that tells the moment). A detail keeps what it names as data, and
//! each reader words it: [`fmt::Display`] gives the oracle's wording, [`Detail::named`] a
//! timeline's. Nothing is parsed back out of text.

use crate::types::{GroupIx, Ms, Seq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::fmt::{self, Write as _};

/// The oracle's own name for one lease: the index of the fetch that issued it (renumbered
/// canonically by the model checker).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Issuance(pub u32);

impl fmt::Display for Issuance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "L{}", self.0 + 1)
    }
}

/// One part of a [`Detail`].
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Part {
    /// Words, as they are.
    Text(Cow<'static, str>),
    /// Event `seq` of group `group`: `event 7 of group 1` (a timeline: `E7 of orders`).
    Event {
        /// The group's index.
        group: u32,
        /// The event.
        seq: Seq,
    },
    /// Event `seq` of the group the detail already named: `event 7` (`E7`).
    Seq(Seq),
    /// A lease, by the oracle's name for it: `L3` (a timeline: the name a scenario bound).
    Lease(Issuance),
    /// The committed frontier of group `group`: `frontier of group 1` (`frontier of orders`).
    Frontier {
        /// The group's index.
        group: u32,
    },
    /// A moment, by what happened then: `30000 ms` (a timeline: the line that tells it, `t3`).
    /// What a violation names as its cause.
    At(Moment),
}

/// Something the oracle saw happen, and when: what a detail names as the cause of what it
/// found (`L1 expired at t3`). A timeline finds the line that tells it by what happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Moment {
    /// What happened.
    pub what: Happened,
    /// The virtual time it happened at (an expiry's: the lease's deadline).
    pub at_ms: Ms,
}

/// What happened at a [`Moment`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Happened {
    /// The lease was issued.
    Issued(Issuance),
    /// An accepted renew gave the lease its current deadline.
    Renewed(Issuance),
    /// The lease's deadline passed (a lease is valid while `now < deadline`).
    Expired(Issuance),
    /// A settle of the lease was accepted.
    Settled(Issuance),
    /// The broker restarted, last before the lease was issued.
    RestartedBefore(Issuance),
}

impl Moment {
    /// `what` at `at_ms`.
    pub fn new(what: Happened, at_ms: Ms) -> Moment {
        Moment { what, at_ms }
    }
}

impl From<Moment> for Part {
    fn from(moment: Moment) -> Part {
        Part::At(moment)
    }
}

/// A piece of a detail as a reader words it ([`Detail::tell`]): words, or a moment the reader
/// names its own way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Words, with events, leases and frontiers named.
    Text(&'a str),
    /// A moment.
    At(&'a Moment),
}

impl Part {
    /// Event `seq` of group `group`.
    pub fn event(group: GroupIx, seq: Seq) -> Part {
        Part::Event {
            group: group as u32,
            seq,
        }
    }

    /// The committed frontier of group `group`.
    pub fn frontier(group: GroupIx) -> Part {
        Part::Frontier {
            group: group as u32,
        }
    }
}

impl From<&'static str> for Part {
    fn from(text: &'static str) -> Part {
        Part::Text(Cow::Borrowed(text))
    }
}

impl From<String> for Part {
    fn from(text: String) -> Part {
        Part::Text(Cow::Owned(text))
    }
}

impl From<Issuance> for Part {
    fn from(issuance: Issuance) -> Part {
        Part::Lease(issuance)
    }
}

/// What a violation saw, in one line: words and the things it names ([`Part`]).
///
/// Two details are equal when they say the same (their oracle wording is the same): a detail
/// read back from JSON, words only, equals the one written.
#[derive(Clone, Debug, Default)]
pub struct Detail(Vec<Part>);

impl PartialEq for Detail {
    fn eq(&self, other: &Detail) -> bool {
        self.0 == other.0 || self.to_string() == other.to_string()
    }
}

impl Eq for Detail {}

/// A detail equals a text that is its oracle wording.
impl PartialEq<&str> for Detail {
    fn eq(&self, text: &&str) -> bool {
        /// Compares what is written with what is left of the text.
        struct Against<'a>(&'a str);
        impl fmt::Write for Against<'_> {
            fn write_str(&mut self, s: &str) -> fmt::Result {
                self.0 = self.0.strip_prefix(s).ok_or(fmt::Error)?;
                Ok(())
            }
        }
        let mut against = Against(text);
        write!(against, "{self}").is_ok() && against.0.is_empty()
    }
}

impl PartialOrd for Detail {
    fn partial_cmp(&self, other: &Detail) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Detail {
    fn cmp(&self, other: &Detail) -> std::cmp::Ordering {
        self.to_string().cmp(&other.to_string())
    }
}

impl std::hash::Hash for Detail {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.to_string().hash(state)
    }
}

/// A [`Detail`] of parts: each item is a [`Part`] or converts into one (`&'static str`,
/// `String`, [`Issuance`]).
#[macro_export]
macro_rules! detail {
    ($($part:expr),* $(,)?) => {
        $crate::detail::Detail::of(vec![$($crate::detail::Part::from($part)),*])
    };
}

impl Detail {
    /// The detail of these parts.
    pub fn of(parts: Vec<Part>) -> Detail {
        Detail(parts)
    }

    /// Its parts.
    pub fn parts(&self) -> &[Part] {
        &self.0
    }

    /// Whether its oracle wording contains `text`.
    pub fn contains(&self, text: &str) -> bool {
        self.to_string().contains(text)
    }

    /// Worded as a timeline names things: `E7` (with `of NAME` when there are several groups),
    /// `frontier of NAME`, and a lease by `lease`'s name for it (its oracle name `LN` when
    /// `lease` has none). A group index past `groups` keeps the oracle's `of group N`. A
    /// moment is named by its time (`30000 ms`): [`Detail::tell`] lets a timeline name its line.
    pub fn named<'a>(
        &self,
        groups: &[String],
        lease: impl Fn(Issuance) -> Option<&'a str>,
    ) -> String {
        let mut out = String::new();
        self.tell(groups, lease, |piece| match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::At(moment) => {
                let _ = write!(out, "{} ms", moment.at_ms);
            }
        });
        out
    }

    /// [`Detail::named`], piece by piece: `f` gets the words (events, leases and frontiers
    /// named as a timeline names them) and each moment, in order.
    pub fn tell<'a>(
        &self,
        groups: &[String],
        lease: impl Fn(Issuance) -> Option<&'a str>,
        mut f: impl FnMut(Piece<'_>),
    ) {
        let of_group = |out: &mut String, group: u32| match groups.get(group as usize) {
            Some(name) if groups.len() > 1 => {
                let _ = write!(out, " of {name}");
            }
            Some(_) => {}
            None => {
                let _ = write!(out, " of group {group}");
            }
        };
        let mut out = String::new();
        for part in &self.0 {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Event { group, seq } => {
                    let _ = write!(out, "E{seq}");
                    of_group(&mut out, *group);
                }
                Part::Seq(seq) => {
                    let _ = write!(out, "E{seq}");
                }
                Part::Lease(issuance) => match lease(*issuance) {
                    Some(name) => out.push_str(name),
                    None => {
                        let _ = write!(out, "{issuance}");
                    }
                },
                Part::Frontier { group } => {
                    out.push_str("frontier");
                    of_group(&mut out, *group);
                }
                Part::At(moment) => {
                    f(Piece::Text(&out));
                    out.clear();
                    f(Piece::At(moment));
                }
            }
        }
        if !out.is_empty() {
            f(Piece::Text(&out));
        }
    }
}

/// The oracle's wording.
impl fmt::Display for Detail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for part in &self.0 {
            match part {
                Part::Text(text) => f.write_str(text)?,
                Part::Event { group, seq } => write!(f, "event {seq} of group {group}")?,
                Part::Seq(seq) => write!(f, "event {seq}")?,
                Part::Lease(issuance) => write!(f, "{issuance}")?,
                Part::Frontier { group } => write!(f, "frontier of group {group}")?,
                Part::At(moment) => write!(f, "{} ms", moment.at_ms)?,
            }
        }
        Ok(())
    }
}

/// Serialized as its oracle wording (a string).
impl Serialize for Detail {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Read back as words only: what it names is no longer told apart.
impl<'de> Deserialize<'de> for Detail {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Detail, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(Detail(vec![Part::from(text)]))
    }
}
