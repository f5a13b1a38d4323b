//! Engine configuration: defaults from the backend, overridable by
//! environment variables and by code.

/// Environment variable overriding the eager/rendezvous threshold (bytes).
pub const ENV_EAGER_THRESHOLD: &str = "DN_EAGER_THRESHOLD";
/// Environment variable: print counters at finalize when set to 1.
pub const ENV_STATS: &str = "DN_STATS";

/// Protocol configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Messages with at most this many payload bytes go eagerly (standard
    /// mode); longer ones, and every synchronous-mode send, use rendezvous.
    pub eager_threshold: usize,
    /// Send everything by rendezvous, even 0-byte messages (benchmarks).
    pub force_rendezvous: bool,
    /// Print counters at finalize.
    pub print_stats: bool,
}

impl Config {
    /// The backend's defaults with environment overrides applied.
    pub fn from_env(backend_threshold: usize) -> Result<Config, crate::knobs::KnobError> {
        let eager_threshold = match crate::knobs::bytes(ENV_EAGER_THRESHOLD)? {
            Some(v) => usize::try_from(v).unwrap_or(usize::MAX),
            None => backend_threshold,
        };
        let print_stats = stats_wanted();
        Ok(Config { eager_threshold, force_rendezvous: false, print_stats })
    }
}

/// Whether `DN_STATS` asks for counters (a bad value, refused at
/// `MPI_Init` by the check of every variable, reads as no).
pub fn stats_wanted() -> bool {
    crate::knobs::flag(ENV_STATS).unwrap_or(false)
}

/// A size or size list that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    /// Not a number with an optional K, M or G.
    #[error("{text:?} is not a size (examples: 4096, 16K, 1M)")]
    NotASize {
        /// The text.
        text: String,
    },
    /// More than a `usize` holds.
    #[error("{text:?} is too large")]
    Overflow {
        /// The text.
        text: String,
    },
    /// A listed size above [`MAX_LISTED_SIZE`].
    #[error("size {size} is above 1 GiB; pick a smaller one")]
    AboveLimit {
        /// The size.
        size: usize,
    },
    /// A range `LO:HI` with `LO > HI`.
    #[error("{text:?}: the lower bound is above the upper one")]
    Reversed {
        /// The range.
        text: String,
    },
}

/// Parse a size like `4096`, `16K`, `1M` or `max`.
pub fn parse_size(s: &str) -> Result<usize, SizeError> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("max") {
        return Ok(usize::MAX);
    }
    let (num, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1024),
        Some('m' | 'M') => (&t[..t.len() - 1], 1024 * 1024),
        Some('g' | 'G') => (&t[..t.len() - 1], 1024 * 1024 * 1024),
        _ => (t, 1),
    };
    let n: usize = num.trim().parse().map_err(|_| SizeError::NotASize { text: s.into() })?;
    n.checked_mul(mult).ok_or_else(|| SizeError::Overflow { text: s.into() })
}

/// The largest message size a size list may name (benchmarks allocate it).
pub const MAX_LISTED_SIZE: usize = 1 << 30;

/// Parses a benchmark size list: `"0,8,1K"` (explicit) or `"LO:HI"` (0 if
/// `LO` is 0, then powers of two from `max(LO, 1)` up to `HI`).
pub fn parse_size_list(s: &str) -> Result<Vec<usize>, SizeError> {
    let check = |n: usize| {
        if n > MAX_LISTED_SIZE {
            Err(SizeError::AboveLimit { size: n })
        } else {
            Ok(n)
        }
    };
    if let Some((a, b)) = s.split_once(':') {
        let (lo, hi) = (check(parse_size(a)?)?, check(parse_size(b)?)?);
        if lo > hi {
            return Err(SizeError::Reversed { text: s.into() });
        }
        let mut v = if lo == 0 { vec![0] } else { vec![] };
        let mut x = lo.max(1);
        while x <= hi {
            v.push(x);
            x *= 2;
        }
        Ok(v)
    } else {
        s.split(',').map(|t| parse_size(t).and_then(check)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("16K"), Ok(16384));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size("max"), Ok(usize::MAX));
        assert!(parse_size("lots").is_err());
    }

    #[test]
    fn size_lists_parse() {
        assert_eq!(parse_size_list("0:4"), Ok(vec![0, 1, 2, 4]));
        assert_eq!(parse_size_list("3:16"), Ok(vec![3, 6, 12]));
        assert_eq!(parse_size_list("0,8,1K"), Ok(vec![0, 8, 1024]));
        assert!(parse_size_list("0:max").is_err());
        assert_eq!(parse_size_list("2G"), Err(SizeError::AboveLimit { size: 2 << 30 }));
        assert_eq!(parse_size_list("8:4"), Err(SizeError::Reversed { text: "8:4".into() }));
        assert!(parse_size_list("1,x").is_err());
    }
}
