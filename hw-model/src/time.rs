//! Simulated time: picoseconds since the start of the run.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in (or span of) simulated time, in picoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

impl SimTime {
    /// Time zero.
    pub const ZERO: SimTime = SimTime(0);
    /// The end of time (used as "never").
    pub const NEVER: SimTime = SimTime(u64::MAX);

    /// From picoseconds.
    pub const fn ps(ps: u64) -> SimTime {
        SimTime(ps)
    }

    /// From nanoseconds (fractions allowed; rounded to the picosecond).
    pub fn from_ns(ns: f64) -> SimTime {
        SimTime((ns * 1000.0).round().max(0.0) as u64)
    }

    /// In microseconds.
    pub fn as_us(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// In nanoseconds.
    pub fn as_ns(self) -> f64 {
        self.0 as f64 / 1e3
    }

    /// Saturating difference.
    pub fn since(self, earlier: SimTime) -> SimTime {
        SimTime(self.0.saturating_sub(earlier.0))
    }

    /// Microseconds with exactly six decimals, for deterministic text output.
    pub fn us_string(self) -> String {
        format!("{}.{:06}", self.0 / 1_000_000, self.0 % 1_000_000)
    }
}

impl Add for SimTime {
    type Output = SimTime;
    fn add(self, o: SimTime) -> SimTime {
        SimTime(self.0.saturating_add(o.0))
    }
}

impl AddAssign for SimTime {
    fn add_assign(&mut self, o: SimTime) {
        *self = *self + o;
    }
}

impl Sub for SimTime {
    type Output = SimTime;
    fn sub(self, o: SimTime) -> SimTime {
        self.since(o)
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3} us", self.as_us())
    }
}

/// A resource that serves one operation at a time (command engine, SO-DIMM
/// port, link direction): each operation reserves it from
/// `max(ready, free_at)` for its duration.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timeline {
    free_at: SimTime,
    busy: SimTime,
}

impl Timeline {
    /// Reserve the resource for `dur`, starting no earlier than `ready`.
    /// Returns `(start, end)`.
    pub fn reserve(&mut self, ready: SimTime, dur: SimTime) -> (SimTime, SimTime) {
        let start = ready.max(self.free_at);
        let end = start + dur;
        self.free_at = end;
        self.busy += dur;
        (start, end)
    }

    /// When the resource is next free.
    pub fn free_at(&self) -> SimTime {
        self.free_at
    }

    /// Total time reserved so far.
    pub fn busy(&self) -> SimTime {
        self.busy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timelines_serialise_operations() {
        let mut t = Timeline::default();
        assert_eq!(t.reserve(SimTime(10), SimTime(5)), (SimTime(10), SimTime(15)));
        assert_eq!(t.reserve(SimTime(12), SimTime(5)), (SimTime(15), SimTime(20)));
        assert_eq!(t.reserve(SimTime(30), SimTime(1)), (SimTime(30), SimTime(31)));
        assert_eq!(t.busy(), SimTime(11));
    }

    #[test]
    fn us_strings_are_exact() {
        assert_eq!(SimTime(2_040_000).us_string(), "2.040000");
        assert_eq!(SimTime(5).us_string(), "0.000005");
    }
}
