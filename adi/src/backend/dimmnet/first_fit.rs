//! A first-fit arena over a range of the rank's SO-DIMM partition: what
//! the collective offload places its programs in, and what one-sided
//! windows place their public copies in.

/// `len` bytes from `base`, handed out in 64-byte aligned pieces.
#[derive(Debug, Default)]
pub(super) struct FirstFit {
    base: u64,
    len: u64,
    /// Ranges in use, sorted by start.
    used: Vec<(u64, u64)>,
}

impl FirstFit {
    pub(super) fn new(base: u64, len: u64) -> FirstFit {
        FirstFit { base, len, used: Vec::new() }
    }

    /// First fit of `n` bytes (64-byte aligned); `None` when nothing fits.
    pub(super) fn alloc(&mut self, n: u64) -> Option<u64> {
        let n = n.max(1).div_ceil(64).checked_mul(64)?;
        let mut at = self.base;
        let mut idx = 0;
        for (i, &(s, l)) in self.used.iter().enumerate() {
            if s >= at.checked_add(n)? {
                break;
            }
            at = s + l;
            idx = i + 1;
        }
        if at.checked_add(n)? > self.base + self.len {
            return None;
        }
        self.used.insert(idx, (at, n));
        Some(at)
    }

    /// Give the piece at `base` back.
    pub(super) fn free(&mut self, base: u64) {
        self.used.retain(|&(s, _)| s != base);
    }

    /// The whole range.
    pub(super) fn range(&self) -> (u64, u64) {
        (self.base, self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_fit_first_and_come_back() {
        let mut a = FirstFit::new(4096, 256);
        assert_eq!(a.alloc(10), Some(4096));
        assert_eq!(a.alloc(64), Some(4160));
        assert_eq!(a.alloc(200), None, "only 128 bytes left");
        a.free(4096);
        assert_eq!(a.alloc(64), Some(4096), "the freed piece is reused");
        assert_eq!(a.alloc(u64::MAX), None, "no overflow");
    }
}
