//! Computation between MPI calls as simulated time (issue 28; SimGrid's
//! `smpi/simulate-computation`).
//!
//! On the simulator a program's own computation costs no simulated time by
//! default: simulated time is then a function of the program and its inputs
//! alone, the same in every run. A Rust program charges what it computes
//! with [`crate::Universe::compute`]. A C or Python program has no such
//! call, so with `DN_COMPUTE=measured` (`dnrun --compute measured`) the
//! library measures the thread CPU time of each burst between two MPI
//! calls, multiplies it by the profile's `compute_scale` (how much slower
//! the simulated host is than this one), and charges it to the simulated
//! clock when the next call begins: the first time the call reaches the
//! engine, so before anything it does takes simulated time (calls that
//! never reach the engine, such as `MPI_Comm_rank`, leave the burst
//! running). Measured time differs from run to run,
//! so this mode gives up the byte-for-byte repeatability of the default,
//! and says so.

use std::str::FromStr;

/// The environment variable that selects the mode (`none`, `measured`, or
/// `measured:SCALE` to override the profile's scale).
pub const ENV_COMPUTE: &str = "DN_COMPUTE";

/// How computation between MPI calls is charged.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ComputeMode {
    /// Not at all (deterministic; the default).
    None,
    /// Measured thread CPU time, times `scale` (`None`: the profile's).
    Measured {
        /// Simulated ns per measured ns.
        scale: Option<f64>,
    },
}

use adi::knobs::KnobError;

/// What `DN_COMPUTE` and `dnrun --compute` take.
const TAKES: &str = "none, measured, or measured:SCALE (a positive number below 1e6)";

/// A computation mode that is none of those there are.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{given:?}: give {TAKES}")]
pub struct BadComputeMode {
    /// The text given.
    pub given: String,
}

impl FromStr for ComputeMode {
    type Err = BadComputeMode;
    fn from_str(s: &str) -> Result<ComputeMode, BadComputeMode> {
        match s.trim() {
            "" | "none" => Ok(ComputeMode::None),
            "measured" => Ok(ComputeMode::Measured { scale: None }),
            other => match other.strip_prefix("measured:").map(str::parse::<f64>) {
                Some(Ok(x)) if x.is_finite() && x > 0.0 && x < 1e6 => Ok(ComputeMode::Measured { scale: Some(x) }),
                _ => Err(BadComputeMode { given: s.to_string() }),
            },
        }
    }
}

impl ComputeMode {
    /// The mode the environment asks for.
    pub fn from_env() -> Result<ComputeMode, KnobError> {
        adi::knobs::text(ENV_COMPUTE).map_or(Ok(ComputeMode::None), |v| {
            v.parse().map_err(|BadComputeMode { given }| KnobError::Invalid {
                name: ENV_COMPUTE,
                value: given,
                takes: TAKES.into(),
                default: "none",
            })
        })
    }
}

/// The calling thread's CPU time in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec we own; the clock id is a
    // constant every Linux has.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0;
    }
    (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
}

/// Measures the bursts between MPI calls (see the module documentation).
#[derive(Debug)]
pub struct Meter {
    scale: f64,
    /// CPU time when the last MPI call ended.
    left_at: u64,
    /// Inside an MPI call whose burst is charged already.
    inside: bool,
    /// Simulated ns charged so far.
    charged: f64,
}

impl Meter {
    /// A meter charging `scale` simulated ns per measured ns, starting now.
    pub fn new(scale: f64) -> Meter {
        Meter { scale, left_at: thread_cpu_ns(), inside: false, charged: 0.0 }
    }

    /// Between two calls: the next [`Meter::enter`] charges a burst.
    pub fn outside(&self) -> bool {
        !self.inside
    }

    /// An MPI call begins: the simulated ns the burst since the last one
    /// took (0 when called again inside the same call).
    pub fn enter(&mut self) -> f64 {
        if self.inside {
            return 0.0;
        }
        self.inside = true;
        let now = thread_cpu_ns();
        let ns = now.saturating_sub(self.left_at) as f64 * self.scale;
        self.left_at = now;
        self.charged += ns;
        ns
    }

    /// An MPI call ends: the next burst starts. A call that never entered
    /// (it did not reach the engine) leaves the running burst alone.
    pub fn leave(&mut self) {
        if self.inside {
            self.inside = false;
            self.left_at = thread_cpu_ns();
        }
    }

    /// Simulated ns charged so far.
    pub fn charged_ns(&self) -> f64 {
        self.charged
    }

    /// The scale.
    pub fn scale(&self) -> f64 {
        self.scale
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_bad_ones_say_what_to_give() {
        assert_eq!("none".parse::<ComputeMode>(), Ok(ComputeMode::None));
        assert_eq!("measured".parse::<ComputeMode>(), Ok(ComputeMode::Measured { scale: None }));
        assert_eq!("measured:2.5".parse::<ComputeMode>(), Ok(ComputeMode::Measured { scale: Some(2.5) }));
        for bad in ["measured:0", "measured:-1", "measured:x", "sometimes", "measured:inf"] {
            let e = bad.parse::<ComputeMode>().unwrap_err();
            assert!(e.to_string().contains("give none, measured"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_burst_is_charged_scaled_and_time_inside_calls_is_not() {
        let mut m = Meter::new(3.0);
        let spin = |ms: u64| {
            let t0 = thread_cpu_ns();
            let mut x = 0u64;
            while thread_cpu_ns() - t0 < ms * 1_000_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        };
        spin(20); // the program computes
        let burst = m.enter();
        spin(20); // inside the call: not charged, even when entered again
        assert_eq!(m.enter(), 0.0);
        m.leave();
        let nothing = m.enter();
        m.leave();
        m.leave(); // a call that never entered: the burst goes on
        spin(20);
        assert!(m.outside());
        let skipped_leave = m.enter();
        assert!(skipped_leave >= 3.0 * 20e6, "{skipped_leave}");
        // Bounds only, not wall-clock assertions: 20 ms of CPU, times 3.
        assert!(burst >= 3.0 * 20e6, "{burst}");
        assert!(nothing < burst / 10.0, "the time inside the call was charged: {nothing}");
        assert_eq!(m.charged_ns(), burst + nothing + skipped_leave);
    }
}
