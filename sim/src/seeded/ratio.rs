//! `Ratio`: a probability as an integer fraction (`3/100`), printed and parsed that way, so no
//! float ever decides a run.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A probability `num / den`, with `num <= den` and `den > 0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ratio {
    /// Numerator.
    pub num: u32,
    /// Denominator (never 0).
    pub den: u32,
}

impl Ratio {
    /// Never.
    pub const ZERO: Ratio = Ratio { num: 0, den: 1 };
    /// Always.
    pub const ONE: Ratio = Ratio { num: 1, den: 1 };

    /// `num / den`.
    ///
    /// # Panics
    /// When `den == 0` or `num > den`: constants in code only (user text goes through
    /// [`Ratio::from_str`]).
    pub const fn new(num: u32, den: u32) -> Ratio {
        assert!(den > 0, "a ratio needs a positive denominator");
        assert!(num <= den, "a probability is at most 1");
        Ratio { num, den }
    }

    /// Never (for `serde(default = …)`).
    pub fn zero() -> Ratio {
        Ratio::ZERO
    }

    /// Whether the ratio is 0 (the fault is off).
    pub fn is_zero(self) -> bool {
        self.num == 0
    }
}

impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.num, self.den)
    }
}

impl FromStr for Ratio {
    type Err = String;

    /// Parses `N/D` (`3/100`), or `0` and `1` alone.
    fn from_str(text: &str) -> Result<Ratio, String> {
        let bad =
            || format!("'{text}' is not a ratio: write it as N/D with 0 <= N <= D, e.g. 3/100");
        let text_trim = text.trim();
        let (num, den) = match text_trim.split_once('/') {
            Some((num, den)) => (num.trim(), den.trim()),
            None => (text_trim, "1"),
        };
        let num: u32 = num.parse().map_err(|_| bad())?;
        let den: u32 = den.parse().map_err(|_| bad())?;
        if den == 0 || num > den {
            return Err(bad());
        }
        Ok(Ratio { num, den })
    }
}

impl Serialize for Ratio {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Ratio {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Ratio, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}
