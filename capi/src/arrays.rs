//! Array datatypes: subarrays (MPI 4.1 §5.1.3) and distributed arrays
//! (§5.1.4). (`MPI_Dims_create`, which programs call to choose the process
//! grid of a distributed array, is with the topologies in `topo.rs`.)
//!
//! Both constructors are built the way the standard defines them: one
//! dimension at a time from the fastest-varying one outward (the last in C
//! order, the first in Fortran order), each placing copies of the inner
//! dimension's type at its indices, and the result resized to the whole
//! array: lower bound 0, extent the global array's size times the extent
//! of `oldtype`.

use std::ffi::c_int;
use std::sync::Arc;

use crate::abi::*;
use crate::datatype::{array, define, Builder, Contents, Form, Layout};
use crate::*;

/// The indices one process owns along one dimension, as `(first, how
/// many)` runs in increasing order.
type Runs = Vec<(i64, i64)>;

/// Build the array type: dimension `d` has `sizes[d]` indices, of which
/// `runs[d]` are in the type. `c_order`: the last dimension varies fastest.
fn array_layout(old: &Arc<Layout>, sizes: &[i64], runs: &[Runs], c_order: bool) -> R<Layout> {
    let overflow = || Fail::new(MPI_ERR_COUNT, "the array's size overflows the address space");
    let mut dims: Vec<usize> = (0..sizes.len()).collect();
    if c_order {
        dims.reverse();
    }
    let mut cur = old.clone();
    // Bytes between consecutive indices of the current dimension.
    let mut stride = old.extent();
    for &d in &dims {
        let mut b = Builder::new();
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
    Ok(cur.resized(0, stride)?)
}

/// `MPI_ORDER_C` (true) or `MPI_ORDER_FORTRAN` (false).
fn c_order(order: c_int) -> R<bool> {
    match order {
        MPI_ORDER_C => Ok(true),
        MPI_ORDER_FORTRAN => Ok(false),
        _ => Err(Fail::new(MPI_ERR_ARG, format!("order {order} is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN"))),
    }
}

/// `ndims` as a length (it may be zero: a single element).
pub(crate) fn ndims_arg(ndims: c_int) -> R<usize> {
    usize::try_from(ndims).map_err(|_| Fail::new(MPI_ERR_DIMS, format!("ndims {ndims} is negative")))
}

/// The arguments of a subarray constructor, read by its entry point.
struct Subarray {
    sizes: Vec<i64>,
    subsizes: Vec<i64>,
    starts: Vec<i64>,
}

/// `MPI_Type_create_subarray(_c)` (§5.1.3).
///
/// # Safety
/// `newtype` is null or writable; `read` reads the caller's arrays.
unsafe fn subarray(
    call: &str,
    form: Form,
    ndims: c_int,
    read: impl FnOnce(usize) -> R<Subarray>,
    order: c_int,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    with_state(call, MPI_COMM_WORLD, |st| {
        let n = ndims_arg(ndims)?;
        let Subarray { sizes, subsizes, starts } = read(n)?;
        let c = c_order(order)?;
        let mut runs = Vec::with_capacity(n);
        for d in 0..n {
            let (size, sub, start) = (sizes[d], subsizes[d], starts[d]);
            if size < 1 || !(0..=size).contains(&sub) || start < 0 || start > size - sub {
                return Err(Fail::new(
                    MPI_ERR_ARG,
                    format!(
                        "dimension {d}: size {size}, subsize {sub} and start {start} do not satisfy \
                         size >= 1, 0 <= subsize <= size, 0 <= start <= size - subsize"
                    ),
                ));
            }
            runs.push(vec![(start, sub)]);
        }
        let layout = array_layout(&st.layout(oldtype)?, &sizes, &runs, c)?;
        let types = vec![st.part(oldtype)?];
        let contents = match form {
            Form::Int => {
                let mut ints = vec![ndims];
                ints.extend([&sizes, &subsizes, &starts].iter().flat_map(|a| a.iter().map(|&v| v as c_int)));
                ints.push(order);
                Contents { combiner: MPI_COMBINER_SUBARRAY, ints, aints: vec![], counts: vec![], types }
            }
            Form::Large => {
                let counts = [sizes, subsizes, starts].concat();
                let ints = vec![ndims, order];
                Contents { combiner: MPI_COMBINER_SUBARRAY, ints, aints: vec![], counts, types }
            }
        };
        // SAFETY: the caller's contract on `newtype`.
        unsafe { define(st, layout, contents, newtype) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_subarray(
    ndims: c_int,
    array_of_sizes: *const c_int,
    array_of_subsizes: *const c_int,
    array_of_starts: *const c_int,
    order: c_int,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    // SAFETY: the standard's contract: each array holds `ndims` values.
    let read = |n| unsafe {
        let wide = |p, what| -> R<Vec<i64>> { Ok(array(p, n, what)?.iter().map(|&v: &c_int| v.into()).collect()) };
        Ok(Subarray {
            sizes: wide(array_of_sizes, "array_of_sizes")?,
            subsizes: wide(array_of_subsizes, "array_of_subsizes")?,
            starts: wide(array_of_starts, "array_of_starts")?,
        })
    };
    // SAFETY: the standard's contract on `newtype`.
    unsafe { subarray("MPI_Type_create_subarray", Form::Int, ndims, read, order, oldtype, newtype) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_subarray_c(
    ndims: c_int,
    array_of_sizes: *const i64,
    array_of_subsizes: *const i64,
    array_of_starts: *const i64,
    order: c_int,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    // SAFETY: the standard's contract: each array holds `ndims` values.
    let read = |n| unsafe {
        Ok(Subarray {
            sizes: array(array_of_sizes, n, "array_of_sizes")?.to_vec(),
            subsizes: array(array_of_subsizes, n, "array_of_subsizes")?.to_vec(),
            starts: array(array_of_starts, n, "array_of_starts")?.to_vec(),
        })
    };
    // SAFETY: the standard's contract on `newtype`.
    unsafe { subarray("MPI_Type_create_subarray_c", Form::Large, ndims, read, order, oldtype, newtype) }
}

/// The indices of `gsize` that grid coordinate `coord` of `psize` owns
/// under distribution `distrib` with argument `darg` (§5.1.4).
fn owned(d: usize, gsize: i64, distrib: c_int, darg: c_int, psize: c_int, coord: i64) -> R<Runs> {
    let bad = |msg: String| Err(Fail::new(MPI_ERR_ARG, format!("dimension {d}: {msg}")));
    if gsize < 1 {
        return bad(format!("global size {gsize} is not positive"));
    }
    if darg != MPI_DISTRIBUTE_DFLT_DARG && darg < 1 {
        return bad(format!("distribution argument {darg} is neither positive nor MPI_DISTRIBUTE_DFLT_DARG"));
    }
    let p = i64::from(psize);
    match distrib {
        MPI_DISTRIBUTE_NONE => {
            if psize != 1 {
                return bad(format!("MPI_DISTRIBUTE_NONE needs a process grid size of 1, not {psize}"));
            }
            Ok(vec![(0, gsize)])
        }
        MPI_DISTRIBUTE_BLOCK => {
            let b = if darg == MPI_DISTRIBUTE_DFLT_DARG { (gsize + p - 1) / p } else { i64::from(darg) };
            if b * p < gsize {
                return bad(format!("blocks of {b} over {psize} processes do not cover {gsize} elements"));
            }
            let first = (coord * b).min(gsize);
            Ok(vec![(first, (gsize - first).min(b))])
        }
        MPI_DISTRIBUTE_CYCLIC => {
            let b = if darg == MPI_DISTRIBUTE_DFLT_DARG { 1 } else { i64::from(darg) };
            let mut runs = Vec::new();
            let mut first = coord * b;
            while first < gsize {
                runs.push((first, (gsize - first).min(b)));
                first += p * b;
            }
            Ok(runs)
        }
        _ => bad(format!(
            "distribution {distrib} is none of MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_NONE"
        )),
    }
}

/// The arguments of a distributed-array constructor, read by its entry point.
struct Darray<'a> {
    gsizes: Vec<i64>,
    distribs: &'a [c_int],
    dargs: &'a [c_int],
    psizes: &'a [c_int],
}

/// `MPI_Type_create_darray(_c)` (§5.1.4).
///
/// # Safety
/// `newtype` is null or writable; `read` reads the caller's arrays.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn darray<'a>(
    call: &str,
    form: Form,
    size: c_int,
    rank: c_int,
    ndims: c_int,
    read: impl FnOnce(usize) -> R<Darray<'a>>,
    order: c_int,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    with_state(call, MPI_COMM_WORLD, |st| {
        let n = ndims_arg(ndims)?;
        let Darray { gsizes, distribs, dargs, psizes } = read(n)?;
        let c = c_order(order)?;
        if psizes.iter().any(|&p| p < 1) {
            return Err(Fail::new(MPI_ERR_ARG, format!("process grid sizes {psizes:?} are not all positive")));
        }
        let grid: i64 = psizes.iter().map(|&p| i64::from(p)).product();
        if grid != i64::from(size) {
            return Err(Fail::new(
                MPI_ERR_ARG,
                format!("process grid {psizes:?} has {grid} processes, but size is {size}"),
            ));
        }
        if !(0..size).contains(&rank) {
            return Err(Fail::new(MPI_ERR_RANK, format!("rank {rank} is not in 0..{size}")));
        }
        // The process grid is row-major whatever the array's order (§5.1.4).
        let mut coords = vec![0i64; n];
        let mut r = i64::from(rank);
        for d in (0..n).rev() {
            coords[d] = r % i64::from(psizes[d]);
            r /= i64::from(psizes[d]);
        }
        let runs =
            (0..n).map(|d| owned(d, gsizes[d], distribs[d], dargs[d], psizes[d], coords[d])).collect::<R<Vec<_>>>()?;
        let layout = array_layout(&st.layout(oldtype)?, &gsizes, &runs, c)?;
        let types = vec![st.part(oldtype)?];
        let mut ints = vec![size, rank, ndims];
        let mut counts = vec![];
        match form {
            Form::Int => ints.extend(gsizes.iter().map(|&g| g as c_int)),
            Form::Large => counts = gsizes,
        }
        ints.extend(distribs.iter().chain(dargs).chain(psizes));
        ints.push(order);
        let contents = Contents { combiner: MPI_COMBINER_DARRAY, ints, aints: vec![], counts, types };
        // SAFETY: the caller's contract on `newtype`.
        unsafe { define(st, layout, contents, newtype) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_darray(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    array_of_gsizes: *const c_int,
    array_of_distribs: *const c_int,
    array_of_dargs: *const c_int,
    array_of_psizes: *const c_int,
    order: c_int,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    // SAFETY: the standard's contract: each array holds `ndims` values.
    let read = |n| unsafe {
        Ok(Darray {
            gsizes: array(array_of_gsizes, n, "array_of_gsizes")?.iter().map(|&g| g.into()).collect(),
            distribs: array(array_of_distribs, n, "array_of_distribs")?,
            dargs: array(array_of_dargs, n, "array_of_dargs")?,
            psizes: array(array_of_psizes, n, "array_of_psizes")?,
        })
    };
    let call = "MPI_Type_create_darray";
    // SAFETY: the standard's contract on `newtype`.
    unsafe { darray(call, Form::Int, size, rank, ndims, read, order, oldtype, newtype) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_darray_c(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    array_of_gsizes: *const i64,
    array_of_distribs: *const c_int,
    array_of_dargs: *const c_int,
    array_of_psizes: *const c_int,
    order: c_int,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    // SAFETY: the standard's contract: each array holds `ndims` values.
    let read = |n| unsafe {
        Ok(Darray {
            gsizes: array(array_of_gsizes, n, "array_of_gsizes")?.to_vec(),
            distribs: array(array_of_distribs, n, "array_of_distribs")?,
            dargs: array(array_of_dargs, n, "array_of_dargs")?,
            psizes: array(array_of_psizes, n, "array_of_psizes")?,
        })
    };
    let call = "MPI_Type_create_darray_c";
    // SAFETY: the standard's contract on `newtype`.
    unsafe { darray(call, Form::Large, size, rank, ndims, read, order, oldtype, newtype) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_and_cyclic_cover_every_index_once() {
        for dist in [MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC] {
            for darg in [MPI_DISTRIBUTE_DFLT_DARG, 2, 3] {
                let (g, p) = (10, 3);
                if dist == MPI_DISTRIBUTE_BLOCK && darg != MPI_DISTRIBUTE_DFLT_DARG && darg * p < g {
                    assert!(owned(0, 10, dist, darg, p, 0).is_err());
                    continue;
                }
                let mut seen = vec![0; g as usize];
                for c in 0..i64::from(p) {
                    for (first, n) in owned(0, 10, dist, darg, p, c).unwrap() {
                        for i in first..first + n {
                            seen[i as usize] += 1;
                        }
                    }
                }
                assert_eq!(seen, vec![1; g as usize], "distrib {dist} darg {darg}");
            }
        }
    }

    #[test]
    fn a_c_order_subarray_takes_rows_of_the_inner_dimension() {
        let int = Arc::new(Layout::basic(4, 4, 1));
        // A 3x4 array of ints; the 2x2 block at (1, 1).
        let l = array_layout(&int, &[3, 4], &[vec![(1, 2)], vec![(1, 2)]], true).unwrap();
        assert_eq!(l.blocks().collect::<Vec<_>>(), vec![(20, 8), (36, 8)]);
        assert_eq!((l.lb, l.ub, l.size), (0, 48, 16));
        // The same in Fortran order: the first dimension is the fast one.
        let l = array_layout(&int, &[3, 4], &[vec![(1, 2)], vec![(1, 2)]], false).unwrap();
        assert_eq!(l.blocks().collect::<Vec<_>>(), vec![(16, 8), (28, 8)]);
    }
}
