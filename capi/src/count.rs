//! Count and displacement arguments in both of their C forms: `int` in the
//! classic functions, `MPI_Count` and `MPI_Aint` in the large-count `_c`
//! forms (MPI 4.1 §2.5.8, §5.2.1). Each function is written once over
//! [`Int`] and [`Ints`], so a `_c` form is the classic one with other
//! argument types, not a second implementation.
//!
//! This library moves at most `i32::MAX` elements (and 2 GiB per block of
//! a v-collective, `mpi::staged::blocks`) per call; a larger count in a
//! `_c` form is `MPI_ERR_COUNT` with a message saying so, never a
//! truncated transfer.

use std::ffi::c_int;

use crate::abi::MPI_ERR_COUNT;
use crate::{Fail, R};

/// One count or displacement argument: `int`, `MPI_Count` or `MPI_Aint`.
pub(crate) trait Int: Copy + std::fmt::Display {
    /// The value as the library's `int`, or `MPI_ERR_COUNT` when it does
    /// not fit (`what` names the argument).
    fn int(self, what: &str) -> R<c_int>;

    /// The value as an `MPI_Count` (every form fits).
    fn wide(self) -> i64;
}

impl Int for c_int {
    #[inline(always)]
    fn int(self, _: &str) -> R<c_int> {
        Ok(self)
    }

    fn wide(self) -> i64 {
        self.into()
    }
}

/// The error for a large-count argument beyond what this library moves.
#[cold]
fn too_large(v: impl std::fmt::Display, what: &str) -> Fail {
    Fail::new(
        MPI_ERR_COUNT,
        format!("{what} {v} is beyond this library's limit of 2^31-1 (elements, or bytes of displacement) per call; split the transfer"),
    )
}

impl Int for i64 {
    fn int(self, what: &str) -> R<c_int> {
        c_int::try_from(self).map_err(|_| too_large(self, what))
    }

    fn wide(self) -> i64 {
        self
    }
}

impl Int for isize {
    fn int(self, what: &str) -> R<c_int> {
        c_int::try_from(self).map_err(|_| too_large(self, what))
    }

    fn wide(self) -> i64 {
        self as i64
    }
}

/// An array of counts or displacements, one per process or neighbour, in
/// either form.
#[derive(Clone, Copy)]
pub(crate) enum Ints {
    Int(*const c_int),
    Count(*const i64),
    Aint(*const isize),
}

impl From<*const c_int> for Ints {
    fn from(p: *const c_int) -> Ints {
        Ints::Int(p)
    }
}

impl From<*const i64> for Ints {
    fn from(p: *const i64) -> Ints {
        Ints::Count(p)
    }
}

impl From<*const isize> for Ints {
    fn from(p: *const isize) -> Ints {
        Ints::Aint(p)
    }
}

impl Ints {
    /// Its `n` values as `int`s: none when `n` is 0 (the pointer is then
    /// not read); `MPI_ERR_ARG` for a null pointer or a negative `n`,
    /// `MPI_ERR_COUNT` for a value that does not fit.
    ///
    /// # Safety
    /// The pointer is null or holds `n` values.
    pub(crate) unsafe fn read(self, n: c_int, what: &str) -> R<Vec<c_int>> {
        /// The values of one form.
        ///
        /// # Safety
        /// `p` is null or holds `n` values.
        unsafe fn each<T: Int>(p: *const T, n: c_int, what: &str) -> R<Vec<c_int>> {
            // SAFETY: `p` is null or holds `n` values of `T`, readable for this call (`each`'s `# Safety`), which is
            // what `array_arg` requires; it refuses a negative `n` and, when `n` > 0, a null `p`.
            unsafe { crate::array_arg(p, n, what) }?.iter().map(|v| v.int(what)).collect()
        }
        // SAFETY: the pointer of whichever form this is is null or holds `n` values of its type, readable for this call
        // (`read`'s `# Safety`), which is what `array_arg` and `each` require.
        unsafe {
            match self {
                Ints::Int(p) => Ok(crate::array_arg(p, n, what)?.to_vec()),
                Ints::Count(p) => each(p, n, what),
                Ints::Aint(p) => each(p, n, what),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_that_fits_passes_and_one_that_does_not_is_an_error_naming_it() {
        assert_eq!(7i64.int("count").map_err(|f| f.class).ok(), Some(7));
        let f = (1i64 << 31).int("recvcount").err().map(|f| (f.class, f.msg));
        let (class, msg) = f.unwrap_or_default();
        assert_eq!(class, MPI_ERR_COUNT);
        assert!(msg.contains("recvcount 2147483648"), "{msg}");
        assert!((-1isize).int("displacement").is_ok(), "negative displacements are valid");
    }

    #[test]
    fn arrays_of_each_form_read_the_same_values() {
        let a: [c_int; 3] = [1, 2, 3];
        let b: [i64; 3] = [1, 2, 3];
        let c: [isize; 3] = [1, 2, 3];
        // SAFETY: each array holds 3 values.
        let (x, y, z) = unsafe {
            (
                Ints::from(a.as_ptr()).read(3, "a").ok(),
                Ints::from(b.as_ptr()).read(3, "b").ok(),
                Ints::from(c.as_ptr()).read(3, "c").ok(),
            )
        };
        assert_eq!(x, Some(vec![1, 2, 3]));
        assert_eq!(x, y);
        assert_eq!(y, z);
        let big: [i64; 2] = [1, i64::MAX];
        // SAFETY: holds 2 values.
        assert!(unsafe { Ints::from(big.as_ptr()).read(2, "counts") }.is_err());
        // SAFETY: a null pointer is refused before any read.
        assert!(unsafe { Ints::Count(std::ptr::null()).read(2, "counts") }.is_err());
    }
}
