//! What `dnbench` and its TCP baseline `tcpbench` have in common: the rows
//! they print (one shape, so their outputs can be compared line by line) and
//! how many iterations and warm-up rounds a size gets.

use serde::Serialize;

/// One measured size, as printed by `--json` (an array of these).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// Message size in bytes.
    pub size: usize,
    /// One-way latency (half the round trip), for `latency`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_us: Option<f64>,
    /// Bandwidth in 10^6 bytes per second, for `bw` and `bibw`.
    #[serde(rename = "MBps", skip_serializing_if = "Option::is_none")]
    pub mbps: Option<f64>,
    /// Non-blocking collectives: how much of the communication time the
    /// computation hid, in percent (as OSU's non-blocking benchmarks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overlap_pct: Option<f64>,
    /// `eager`, `rndv`, or the baseline's name (`tcp`); for collectives, the
    /// collective.
    pub protocol: &'static str,
    /// Timed iterations.
    pub iterations: u32,
}

/// Warm-up round trips per size before a latency is timed.
pub const LATENCY_WARMUP: u32 = 10;
/// At most this many windows are timed per size in a bandwidth test.
pub const BW_MAX_ITERATIONS: u32 = 100;
/// At most this many warm-up windows per size in a bandwidth test.
pub const BW_MAX_WARMUP: u32 = 3;

impl Row {
    /// The human-readable line: size, figure, protocol.
    pub fn text(&self) -> String {
        match (self.latency_us, self.mbps) {
            (Some(l), _) => match self.overlap_pct {
                Some(o) => format!("{:>10} {:>12.3} us  {}  overlap {o:.1}%", self.size, l, self.protocol),
                None => format!("{:>10} {:>12.3} us  {}", self.size, l, self.protocol),
            },
            (_, Some(b)) => format!("{:>10} {:>12.2} MB/s  {}", self.size, b, self.protocol),
            _ => format!("{:>10} {:>12}  {}", self.size, "-", self.protocol),
        }
    }
}

/// Timed windows for `size` in a bandwidth test.
pub fn bw_iterations(size: usize, iters: u32) -> u32 {
    iterations_for(size, iters).min(BW_MAX_ITERATIONS)
}

/// Iterations for `size`: sizes of 64 KiB and more get a tenth (at least 10),
/// as the OSU benchmarks do, so that a `0:4M` sweep stays short.
pub fn iterations_for(size: usize, iters: u32) -> u32 {
    if size >= 64 * 1024 {
        (iters / 10).max(10)
    } else {
        iters
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_sizes_get_a_tenth_but_at_least_ten() {
        assert_eq!(iterations_for(0, 1000), 1000);
        assert_eq!(iterations_for(65535, 1000), 1000);
        assert_eq!(iterations_for(65536, 1000), 100);
        assert_eq!(iterations_for(1 << 20, 50), 10);
    }

    #[test]
    fn rows_print_only_the_measured_figure() {
        let r =
            Row { size: 8, latency_us: Some(1.5), mbps: None, overlap_pct: None, protocol: "eager", iterations: 10 };
        let j = serde_json::to_string(&r).unwrap();
        assert_eq!(j, r#"{"size":8,"latency_us":1.5,"protocol":"eager","iterations":10}"#);
    }
}
