//! Array datatypes: subarrays (MPI 4.1 §5.1.3) and distributed arrays
//! (§5.1.4), built by `mpi::datatype::arrays`; here, their arguments and
//! what `MPI_Type_get_contents` gives back. (`MPI_Dims_create`, which
//! programs call to choose the process grid of a distributed array, is
//! with the topologies in `topo.rs`.)

use std::ffi::c_int;

use mpi::datatype::arrays::{self, DarrayDim, Distribution, Order};

use crate::abi::*;
use crate::datatype::{array, define, Contents, Form};
use crate::*;

/// `MPI_ORDER_C` or `MPI_ORDER_FORTRAN`.
fn order_arg(order: c_int) -> R<Order> {
    match order {
        MPI_ORDER_C => Ok(Order::C),
        MPI_ORDER_FORTRAN => Ok(Order::Fortran),
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
        let layout = arrays::subarray(&st.layout(oldtype)?, &sizes, &subsizes, &starts, order_arg(order)?)?;
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
        // SAFETY: `newtype` is null or valid for writing one handle for this call (`subarray`'s `# Safety`), which is
        // what `define` requires; it refuses null.
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
    // SAFETY: `read` runs inside `subarray`, during this call, with `n` = `ndims` (checked not negative), and reads `n`
    // ints from each of `array_of_sizes`, `array_of_subsizes` and `array_of_starts`, which MPI 4.1 §5.1.3 requires
    // MPI_Type_create_subarray's caller to provide: `array`'s requirement (it refuses null when `n` > 0).
    let read = |n| unsafe {
        let wide = |p, what| -> R<Vec<i64>> { Ok(array(p, n, what)?.iter().map(|&v: &c_int| v.into()).collect()) };
        Ok(Subarray {
            sizes: wide(array_of_sizes, "array_of_sizes")?,
            subsizes: wide(array_of_subsizes, "array_of_subsizes")?,
            starts: wide(array_of_starts, "array_of_starts")?,
        })
    };
    // SAFETY: `newtype` is MPI_Type_create_subarray's out-argument (MPI 4.1 §5.1.3), null or valid for writing one
    // handle for this call, and `read` reads only the caller's arrays: `subarray`'s `# Safety`.
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
    // SAFETY: `read` runs inside `subarray`, during this call, with `n` = `ndims` (checked not negative), and reads `n`
    // `MPI_Count`s from each of `array_of_sizes`, `array_of_subsizes` and `array_of_starts`, which MPI 4.1 §5.1.3
    // requires MPI_Type_create_subarray_c's caller to provide: `array`'s requirement.
    let read = |n| unsafe {
        Ok(Subarray {
            sizes: array(array_of_sizes, n, "array_of_sizes")?.to_vec(),
            subsizes: array(array_of_subsizes, n, "array_of_subsizes")?.to_vec(),
            starts: array(array_of_starts, n, "array_of_starts")?.to_vec(),
        })
    };
    // SAFETY: `newtype` is MPI_Type_create_subarray_c's out-argument (MPI 4.1 §5.1.3), null or valid for writing one
    // handle for this call, and `read` reads only the caller's arrays: `subarray`'s `# Safety`.
    unsafe { subarray("MPI_Type_create_subarray_c", Form::Large, ndims, read, order, oldtype, newtype) }
}

/// A distributed array's distribution argument (§5.1.4).
fn distribution(d: usize, distrib: c_int, darg: c_int) -> R<Distribution> {
    let darg = (darg != MPI_DISTRIBUTE_DFLT_DARG).then_some(i64::from(darg));
    match distrib {
        MPI_DISTRIBUTE_NONE => Ok(Distribution::None),
        MPI_DISTRIBUTE_BLOCK => Ok(Distribution::Block(darg)),
        MPI_DISTRIBUTE_CYCLIC => Ok(Distribution::Cyclic(darg)),
        _ => Err(Fail::new(
            MPI_ERR_ARG,
            format!("dimension {d}: distribution {distrib} is none of MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_NONE"),
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
        let dims = (0..n)
            .map(|d| {
                Ok(DarrayDim {
                    gsize: gsizes[d],
                    distribution: distribution(d, distribs[d], dargs[d])?,
                    psize: psizes[d],
                })
            })
            .collect::<R<Vec<_>>>()?;
        let layout = arrays::darray(&st.layout(oldtype)?, size, rank, &dims, order_arg(order)?)?;
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
        // SAFETY: `newtype` is null or valid for writing one handle for this call (`darray`'s `# Safety`), which is
        // what `define` requires; it refuses null.
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
    // SAFETY: `read` runs inside `darray`, during this call, with `n` = `ndims` (checked not negative), and reads `n`
    // ints from each of `array_of_gsizes`, `array_of_distribs`, `array_of_dargs` and `array_of_psizes`, which MPI 4.1
    // §5.1.4 requires MPI_Type_create_darray's caller to provide; the slices it returns are used only within the call:
    // `array`'s requirement.
    let read = |n| unsafe {
        Ok(Darray {
            gsizes: array(array_of_gsizes, n, "array_of_gsizes")?.iter().map(|&g| g.into()).collect(),
            distribs: array(array_of_distribs, n, "array_of_distribs")?,
            dargs: array(array_of_dargs, n, "array_of_dargs")?,
            psizes: array(array_of_psizes, n, "array_of_psizes")?,
        })
    };
    let call = "MPI_Type_create_darray";
    // SAFETY: `newtype` is MPI_Type_create_darray's out-argument (MPI 4.1 §5.1.4), null or valid for writing one handle
    // for this call, and `read` reads only the caller's arrays: `darray`'s `# Safety`.
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
    // SAFETY: `read` runs inside `darray`, during this call, with `n` = `ndims` (checked not negative), and reads `n`
    // values from each of `array_of_gsizes` (`MPI_Count`s), `array_of_distribs`, `array_of_dargs` and
    // `array_of_psizes`, which MPI 4.1 §5.1.4 requires MPI_Type_create_darray_c's caller to provide; the slices it
    // returns are used only within the call: `array`'s requirement.
    let read = |n| unsafe {
        Ok(Darray {
            gsizes: array(array_of_gsizes, n, "array_of_gsizes")?.to_vec(),
            distribs: array(array_of_distribs, n, "array_of_distribs")?,
            dargs: array(array_of_dargs, n, "array_of_dargs")?,
            psizes: array(array_of_psizes, n, "array_of_psizes")?,
        })
    };
    let call = "MPI_Type_create_darray_c";
    // SAFETY: `newtype` is MPI_Type_create_darray_c's out-argument (MPI 4.1 §5.1.4), null or valid for writing one
    // handle for this call, and `read` reads only the caller's arrays: `darray`'s `# Safety`.
    unsafe { darray(call, Form::Large, size, rank, ndims, read, order, oldtype, newtype) }
}
