//! The run's trace: one line per observable step, hashed as it is written (FNV-1a 64), and kept
//! as text only when asked (replay, tests), so campaigns do not grow with run length.

use super::prng::fnv1a64;
use leasehold_model::Ms;
use std::fmt::Write as _;

/// A trace sink.
#[derive(Clone, Debug)]
pub struct Trace {
    hash: u64,
    lines: u64,
    line: String,
    text: Option<String>,
}

impl Trace {
    /// A sink that keeps the text when `keep` is true.
    pub fn new(keep: bool) -> Trace {
        Trace {
            hash: fnv1a64(b""),
            lines: 0,
            line: String::new(),
            text: keep.then(String::new),
        }
    }

    /// Appends the line `t=<at_ms> <args>`.
    pub fn line(&mut self, at_ms: Ms, args: std::fmt::Arguments<'_>) {
        self.line.clear();
        let _ = write!(self.line, "{at_ms:>7} ");
        let _ = self.line.write_fmt(args);
        self.line.push('\n');
        for &byte in self.line.as_bytes() {
            self.hash ^= u64::from(byte);
            self.hash = self.hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.lines += 1;
        if let Some(text) = &mut self.text {
            text.push_str(&self.line);
        }
    }

    /// FNV-1a 64 of the whole trace text (equal to `fnv1a64(text)`).
    pub fn hash(&self) -> u64 {
        self.hash
    }

    /// Number of lines.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// The text, when kept.
    pub fn into_text(self) -> Option<String> {
        self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_streamed_hash_is_the_hash_of_the_text() {
        let mut trace = Trace::new(true);
        trace.line(0, format_args!("A fetch"));
        trace.line(1500, format_args!("B ack {}", 3));
        let hash = trace.hash();
        let text = trace.into_text().unwrap();
        assert_eq!(text, "      0 A fetch\n   1500 B ack 3\n");
        assert_eq!(hash, fnv1a64(text.as_bytes()));
    }
}
