//! A lossy layer inside the backend, for testing the protocol under faults:
//! `DN_UDP_FAULTS=loss=0.05,dup=0.05,reorder=0.05,corrupt=0.01,seed=7`.
//!
//! Every outgoing datagram may be dropped (`loss`), sent twice (`dup`), held
//! back and sent after the next one (`reorder`), or have one byte flipped
//! (`corrupt`); `blackhole=R` makes rank R a hung peer: everything sent to
//! or by it is dropped and it never gives up on the others itself (a frozen
//! process cannot report), so the job ends with the others naming R. Decisions come
//! from a xorshift generator seeded with `seed` and the rank, so the same
//! sequence of datagrams meets the same faults.

/// Environment variable holding the fault specification.
pub const ENV: &str = "DN_UDP_FAULTS";

/// The fault specification in [`ENV`], if set (shared by every link of
/// the datagram protocol: UDP and DPDK).
pub fn from_env() -> Result<Option<FaultSpec>, crate::error::TransportError> {
    match crate::knobs::text(ENV) {
        Some(s) => {
            FaultSpec::parse(&s).map(Some).map_err(|e| crate::error::TransportError::Config(format!("{ENV}: {e}")))
        }
        None => Ok(None),
    }
}

/// What to inject.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FaultSpec {
    /// Probability of dropping a datagram.
    pub loss: f64,
    /// Probability of sending a datagram twice.
    pub dup: f64,
    /// Probability of holding a datagram back behind the next one.
    pub reorder: f64,
    /// Probability of flipping one byte.
    pub corrupt: f64,
    /// Rank that behaves as a hung peer (all its traffic dropped, both ways).
    pub blackhole: Option<u32>,
    /// Generator seed.
    pub seed: u64,
}

impl FaultSpec {
    /// Parse `key=value,...`.
    pub fn parse(s: &str) -> Result<FaultSpec, FaultSpecError> {
        let mut f = FaultSpec { seed: 1, ..Default::default() };
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (k, v) = item.split_once('=').ok_or_else(|| FaultSpecError::NotKeyValue { item: item.into() })?;
            let bad = |wants: &'static str| FaultSpecError::BadValue { key: k.into(), value: v.into(), wants };
            let prob = |v: &str| -> Result<f64, FaultSpecError> {
                match v.parse::<f64>() {
                    Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
                    _ => Err(bad("a probability between 0 and 1")),
                }
            };
            match k {
                "loss" => f.loss = prob(v)?,
                "dup" => f.dup = prob(v)?,
                "reorder" => f.reorder = prob(v)?,
                "corrupt" => f.corrupt = prob(v)?,
                "blackhole" => f.blackhole = Some(v.parse().map_err(|_| bad("a rank"))?),
                "seed" => f.seed = v.parse().map_err(|_| bad("a whole number"))?,
                other => return Err(FaultSpecError::Unknown { name: other.into() }),
            }
        }
        Ok(f)
    }
}

/// A fault specification that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FaultSpecError {
    /// An item without `=`.
    #[error("{item:?} is not key=value")]
    NotKeyValue {
        /// The item.
        item: String,
    },
    /// A value the key does not take.
    #[error("{key}={value:?}: the value must be {wants}")]
    BadValue {
        /// The fault.
        key: String,
        /// Its value.
        value: String,
        /// What it takes.
        wants: &'static str,
    },
    /// A fault nobody knows.
    #[error("unknown fault {name:?} (loss, dup, reorder, corrupt, blackhole, seed)")]
    Unknown {
        /// The name given.
        name: String,
    },
}

/// What to do with one outgoing datagram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Send it as is.
    Send,
    /// Drop it.
    Drop,
    /// Send it twice.
    Duplicate,
    /// Hold it until the next datagram has gone.
    Hold,
    /// Flip the byte at this index, then send it.
    Corrupt(usize),
}

/// The injector of one rank.
#[derive(Clone, Debug)]
pub struct Faults {
    spec: FaultSpec,
    state: u64,
    /// Counts: dropped, duplicated, reordered, corrupted.
    pub injected: [u64; 4],
    rank: u32,
}

impl Faults {
    /// An injector for `rank`.
    pub fn new(spec: FaultSpec, rank: u32) -> Faults {
        let state = (spec.seed ^ (rank as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1;
        Faults { spec, state, injected: [0; 4], rank }
    }

    fn next(&mut self) -> f64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        (self.state >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Whether this rank plays the hung peer of `blackhole=`.
    pub fn is_hung(&self) -> bool {
        self.spec.blackhole == Some(self.rank)
    }

    /// Decide the fate of a datagram of `len` bytes to `dest`.
    pub fn decide(&mut self, dest: u32, len: usize) -> Verdict {
        if self.spec.blackhole == Some(dest) || self.is_hung() {
            self.injected[0] += 1;
            return Verdict::Drop;
        }
        let (l, d, r, c) = (self.next(), self.next(), self.next(), self.next());
        if l < self.spec.loss {
            self.injected[0] += 1;
            Verdict::Drop
        } else if c < self.spec.corrupt && len > 0 {
            self.injected[3] += 1;
            Verdict::Corrupt((self.state % len as u64) as usize)
        } else if r < self.spec.reorder {
            self.injected[2] += 1;
            Verdict::Hold
        } else if d < self.spec.dup {
            self.injected[1] += 1;
            Verdict::Duplicate
        } else {
            Verdict::Send
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_bad_ones_say_why() {
        let f = FaultSpec::parse("loss=0.05,dup=0.05,reorder=0.05,corrupt=0.01,seed=7").unwrap();
        assert_eq!((f.loss, f.dup, f.reorder, f.corrupt, f.seed), (0.05, 0.05, 0.05, 0.01, 7));
        assert_eq!(FaultSpec::parse("blackhole=3").unwrap().blackhole, Some(3));
        assert!(FaultSpec::parse("loss=2").unwrap_err().to_string().contains("probability"));
        assert_eq!(FaultSpec::parse("lose=0.1").unwrap_err(), FaultSpecError::Unknown { name: "lose".into() });
    }

    #[test]
    fn a_blackholed_rank_is_silent_both_ways() {
        let spec = FaultSpec::parse("blackhole=1").unwrap();
        let mut other = Faults::new(spec.clone(), 0);
        let mut hung = Faults::new(spec, 1);
        assert!(!other.is_hung() && hung.is_hung());
        assert_eq!(other.decide(1, 10), Verdict::Drop);
        assert_eq!(other.decide(2, 10), Verdict::Send);
        assert_eq!(hung.decide(0, 10), Verdict::Drop);
        assert_eq!(hung.decide(2, 10), Verdict::Drop);
    }

    #[test]
    fn the_same_seed_gives_the_same_faults_at_the_expected_rates() {
        let spec = FaultSpec::parse("loss=0.05,dup=0.05,reorder=0.05,corrupt=0.01,seed=7").unwrap();
        let run = || {
            let mut f = Faults::new(spec.clone(), 2);
            (0..100_000).map(|_| f.decide(1, 100)).collect::<Vec<_>>()
        };
        let a = run();
        assert_eq!(a, run());
        let drops = a.iter().filter(|v| **v == Verdict::Drop).count();
        assert!((4000..6000).contains(&drops), "{drops} drops out of 100000 at 5%");
    }
}
