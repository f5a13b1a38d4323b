//! Array datatypes: subarrays (MPI 4.1 §5.1.3) and distributed arrays
//! (§5.1.4).
//!
//! Both are built the way the standard defines them: one dimension at a
//! time from the fastest-varying one outward (the last in C order, the
//! first in Fortran order), each placing copies of the inner dimension's
//! type at its indices, and the result resized to the whole array: lower
//! bound 0, extent the global array's size times the extent of the old
//! type.

use std::sync::Arc;

use super::{Typemap, TypemapBuilder};
use crate::error::{ArgError, DarrayProblem};
use crate::{MpiError, Result};

/// The storage order of an array (`MPI_ORDER_C`, `MPI_ORDER_FORTRAN`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Row-major: the last dimension varies fastest.
    C,
    /// Column-major: the first dimension varies fastest.
    Fortran,
}

/// How a distributed array's dimension is spread over the process grid
/// (§5.1.4); the argument is the block size, `None` for the default
/// (`MPI_DISTRIBUTE_DFLT_DARG`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distribution {
    /// Not distributed: the grid's size in this dimension must be 1.
    None,
    /// One block per process (default: the size over the processes, rounded up).
    Block(Option<i64>),
    /// Blocks dealt round-robin (default: blocks of 1).
    Cyclic(Option<i64>),
}

/// One dimension of a distributed array.
#[derive(Clone, Copy, Debug)]
pub struct DarrayDim {
    /// The global array's size in this dimension.
    pub gsize: i64,
    /// How it is distributed.
    pub distribution: Distribution,
    /// The process grid's size in this dimension.
    pub psize: i32,
}

/// The indices one process owns along one dimension, as `(first, how
/// many)` runs in increasing order.
type Runs = Vec<(i64, i64)>;

/// The subarray type (`MPI_Type_create_subarray`): the block of
/// `subsizes` at `starts` of an array of `sizes` elements of `old`.
pub fn subarray(old: &Arc<Typemap>, sizes: &[i64], subsizes: &[i64], starts: &[i64], order: Order) -> Result<Typemap> {
    if subsizes.len() != sizes.len() || starts.len() != sizes.len() {
        return Err(ArgError::SubarrayLengths.into());
    }
    let mut runs = Vec::with_capacity(sizes.len());
    for (d, ((&size, &sub), &start)) in sizes.iter().zip(subsizes).zip(starts).enumerate() {
        if size < 1 || !(0..=size).contains(&sub) || start < 0 || start > size - sub {
            return Err(ArgError::Subarray { dim: d, size, subsize: sub, start }.into());
        }
        runs.push(vec![(start, sub)]);
    }
    array_layout(old, sizes, &runs, order)
}

/// The distributed-array type (`MPI_Type_create_darray`): the elements
/// process `rank` of a row-major grid of `size` processes owns.
pub fn darray(old: &Arc<Typemap>, size: i32, rank: i32, dims: &[DarrayDim], order: Order) -> Result<Typemap> {
    let psizes: Vec<i32> = dims.iter().map(|d| d.psize).collect();
    if psizes.iter().any(|&p| p < 1) {
        return Err(ArgError::GridNotPositive { psizes: psizes.to_vec() }.into());
    }
    let grid: i64 = psizes.iter().map(|&p| i64::from(p)).product();
    if grid != i64::from(size) {
        return Err(ArgError::GridSize { psizes: psizes.to_vec(), grid, size }.into());
    }
    if !(0..size).contains(&rank) {
        return Err(MpiError::Ranks(crate::error::RankError::NotIn { rank, what: "the process grid", size }));
    }
    // The process grid is row-major whatever the array's order (§5.1.4).
    let mut coords = vec![0i64; dims.len()];
    let mut r = i64::from(rank);
    for d in (0..dims.len()).rev() {
        coords[d] = r % i64::from(psizes[d]);
        r /= i64::from(psizes[d]);
    }
    let runs =
        dims.iter().zip(&coords).enumerate().map(|(d, (dim, &c))| owned(d, dim, c)).collect::<Result<Vec<_>>>()?;
    let gsizes: Vec<i64> = dims.iter().map(|d| d.gsize).collect();
    array_layout(old, &gsizes, &runs, order)
}

/// Build the array type: dimension `d` has `sizes[d]` indices, of which
/// `runs[d]` are in the type.
fn array_layout(old: &Arc<Typemap>, sizes: &[i64], runs: &[Runs], order: Order) -> Result<Typemap> {
    let overflow = || MpiError::TooLarge(crate::error::Overflow::Array);
    let mut dims: Vec<usize> = (0..sizes.len()).collect();
    if order == Order::C {
        dims.reverse();
    }
    let mut cur = old.clone();
    // Bytes between consecutive indices of the current dimension.
    let mut stride = old.extent();
    for &d in &dims {
        let mut b = TypemapBuilder::new();
        for &(first, n) in &runs[d] {
            let at = (first as isize).checked_mul(stride).ok_or_else(overflow)?;
            // A run of indices: `n` copies of the inner dimension's type,
            // one index (`stride` bytes) apart.
            b.place_strided(&cur, at, n as usize, stride)?;
        }
        cur = Arc::new(b.finish());
        stride = stride.checked_mul(sizes[d] as isize).ok_or_else(overflow)?;
    }
    // Resized to the whole array (§5.1.3, §5.1.4).
    cur.resized(0, stride)
}

/// The indices of dimension `d` that grid coordinate `coord` owns (§5.1.4).
fn owned(d: usize, dim: &DarrayDim, coord: i64) -> Result<Runs> {
    let bad = |problem: DarrayProblem| Err(ArgError::Darray { dim: d, problem }.into());
    let DarrayDim { gsize, distribution, psize } = *dim;
    if gsize < 1 {
        return bad(DarrayProblem::GlobalSize(gsize));
    }
    let p = i64::from(psize);
    let darg = match distribution {
        Distribution::Block(Some(b)) | Distribution::Cyclic(Some(b)) => Some(b),
        _ => None,
    };
    if darg.is_some_and(|b| b < 1) {
        return bad(DarrayProblem::Argument(darg.unwrap_or(0)));
    }
    match distribution {
        Distribution::None => {
            if psize != 1 {
                return bad(DarrayProblem::Undistributed(psize));
            }
            Ok(vec![(0, gsize)])
        }
        Distribution::Block(darg) => {
            let b = darg.unwrap_or((gsize + p - 1) / p);
            if b * p < gsize {
                return bad(DarrayProblem::Uncovered { block: b, procs: psize, size: gsize });
            }
            let first = (coord * b).min(gsize);
            Ok(vec![(first, (gsize - first).min(b))])
        }
        Distribution::Cyclic(darg) => {
            let b = darg.unwrap_or(1);
            let mut runs = Vec::new();
            let mut first = coord * b;
            while first < gsize {
                runs.push((first, (gsize - first).min(b)));
                first += p * b;
            }
            Ok(runs)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_and_cyclic_cover_every_index_once() {
        for make in [Distribution::Block, Distribution::Cyclic] {
            for darg in [None, Some(2), Some(3)] {
                let dim = DarrayDim { gsize: 10, distribution: make(darg), psize: 3 };
                if matches!(dim.distribution, Distribution::Block(Some(b)) if b * 3 < 10) {
                    assert!(owned(0, &dim, 0).is_err());
                    continue;
                }
                let mut seen = [0; 10];
                for c in 0..3 {
                    for (first, n) in owned(0, &dim, c).expect("runs") {
                        for i in first..first + n {
                            seen[i as usize] += 1;
                        }
                    }
                }
                assert_eq!(seen, [1; 10], "{:?}", dim.distribution);
            }
        }
    }

    #[test]
    fn a_c_order_subarray_takes_rows_of_the_inner_dimension() {
        let int = Arc::new(Typemap::basic(4, 4, 1));
        // A 3x4 array of ints; the 2x2 block at (1, 1).
        let l = subarray(&int, &[3, 4], &[2, 2], &[1, 1], Order::C).expect("subarray");
        assert_eq!(l.blocks().collect::<Vec<_>>(), vec![(20, 8), (36, 8)]);
        assert_eq!((l.lb, l.ub, l.size), (0, 48, 16));
        // The same in Fortran order: the first dimension is the fast one.
        let l = subarray(&int, &[3, 4], &[2, 2], &[1, 1], Order::Fortran).expect("subarray");
        assert_eq!(l.blocks().collect::<Vec<_>>(), vec![(16, 8), (28, 8)]);
    }

    #[test]
    fn a_darray_checks_its_grid_and_rank() {
        let int = Arc::new(Typemap::basic(4, 4, 1));
        let dim = DarrayDim { gsize: 8, distribution: Distribution::Block(None), psize: 2 };
        assert!(matches!(
            darray(&int, 3, 0, &[dim], Order::C),
            Err(MpiError::Arg(ArgError::GridSize { grid: 2, size: 3, .. }))
        ));
        assert!(matches!(darray(&int, 2, 2, &[dim], Order::C), Err(MpiError::Ranks(_))));
        let l = darray(&int, 2, 1, &[dim], Order::C).expect("darray");
        assert_eq!(l.blocks().collect::<Vec<_>>(), vec![(16, 16)]);
    }
}
