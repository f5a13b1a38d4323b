//! Array datatypes: subarrays (MPI 4.1 §5.1.3) and distributed arrays
//! (§5.1.4), built by `mpi::datatype::arrays`; here, their arguments and
//! what `MPI_Type_get_contents` gives back. (`MPI_Dims_create`, which
//! programs call to choose the process grid of a distributed array, is
//! with the topologies in `topo.rs`.)

use std::ffi::c_int;

use mpi::datatype::arrays::{self, DarrayDim, Distribution, Order};

use crate::abi::*;
use crate::datatype::{array, define, wides, Contents, Count, Form};
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

/// `MPI_Type_create_subarray(_c)` (§5.1.3), the arrays of `C`s (`int`s,
/// or `MPI_Count`s in the `_c` form).
///
/// # Safety
/// `newtype` is null or writable; `sizes`, `subsizes` and `starts` hold
/// `ndims` values, readable for the call.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn subarray<C: Count>(
    call: &str,
    ndims: c_int,
    sizes: *const C,
    subsizes: *const C,
    starts: *const C,
    order: c_int,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    with_state(call, MPI_COMM_WORLD, |st| {
        let n = ndims_arg(ndims)?;
        // SAFETY: the three arrays hold `ndims` values, readable for this call (`subarray`'s `# Safety`), and `n` is
        // `ndims` (not negative): `wides`' requirement (it refuses null when `n` > 0).
        let (sizes, subsizes, starts) = unsafe {
            (
                wides(sizes, n, "array_of_sizes")?,
                wides(subsizes, n, "array_of_subsizes")?,
                wides(starts, n, "array_of_starts")?,
            )
        };
        let layout = arrays::subarray(&st.layout(oldtype)?, &sizes, &subsizes, &starts, order_arg(order)?)?;
        let types = vec![st.part(oldtype)?];
        let contents = match C::FORM {
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

/// `MPI_Type_create_darray(_c)` (§5.1.4), the global sizes `C`s (`int`s,
/// or `MPI_Count`s in the `_c` form).
///
/// # Safety
/// `newtype` is null or writable; the four arrays hold `ndims` values,
/// readable for the call.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn darray<C: Count>(
    call: &str,
    size: c_int,
    rank: c_int,
    ndims: c_int,
    gsizes: *const C,
    distribs: *const c_int,
    dargs: *const c_int,
    psizes: *const c_int,
    order: c_int,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    with_state(call, MPI_COMM_WORLD, |st| {
        let n = ndims_arg(ndims)?;
        // SAFETY: the four arrays hold `ndims` values, readable for this call (`darray`'s `# Safety`), and `n` is
        // `ndims` (not negative): what `wides` and `array` require (they refuse null when `n` > 0); the slices are
        // used within the call.
        let (gsizes, distribs, dargs, psizes) = unsafe {
            (
                wides(gsizes, n, "array_of_gsizes")?,
                array(distribs, n, "array_of_distribs")?,
                array(dargs, n, "array_of_dargs")?,
                array(psizes, n, "array_of_psizes")?,
            )
        };
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
        match C::FORM {
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

forward! {
    pub unsafe extern "C" fn MPI_Type_create_subarray(ndims: c_int, array_of_sizes: *const c_int, array_of_subsizes: *const c_int, array_of_starts: *const c_int, order: c_int, oldtype: Handle, newtype: *mut Handle) -> c_int = subarray(ndims, array_of_sizes, array_of_subsizes, array_of_starts, order, oldtype, newtype);
    pub unsafe extern "C" fn MPI_Type_create_subarray_c(ndims: c_int, array_of_sizes: *const i64, array_of_subsizes: *const i64, array_of_starts: *const i64, order: c_int, oldtype: Handle, newtype: *mut Handle) -> c_int = subarray(ndims, array_of_sizes, array_of_subsizes, array_of_starts, order, oldtype, newtype);
    pub unsafe extern "C" fn MPI_Type_create_darray(size: c_int, rank: c_int, ndims: c_int, array_of_gsizes: *const c_int, array_of_distribs: *const c_int, array_of_dargs: *const c_int, array_of_psizes: *const c_int, order: c_int, oldtype: Handle, newtype: *mut Handle) -> c_int = darray(size, rank, ndims, array_of_gsizes, array_of_distribs, array_of_dargs, array_of_psizes, order, oldtype, newtype);
    pub unsafe extern "C" fn MPI_Type_create_darray_c(size: c_int, rank: c_int, ndims: c_int, array_of_gsizes: *const i64, array_of_distribs: *const c_int, array_of_dargs: *const c_int, array_of_psizes: *const c_int, order: c_int, oldtype: Handle, newtype: *mut Handle) -> c_int = darray(size, rank, ndims, array_of_gsizes, array_of_distribs, array_of_dargs, array_of_psizes, order, oldtype, newtype);
}
