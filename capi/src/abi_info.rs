//! The ABI's own queries (MPI 5.0, the ABI chapter): what the library's
//! C types are (`MPI_Abi_get_info`), and the Fortran details a Fortran
//! layer over this C library would tell it (`MPI_Abi_set_fortran_info`,
//! `MPI_Abi_set_fortran_booleans`). The library has no Fortran binding
//! of its own, so it knows none of them until told: the getters answer
//! `MPI_INFO_NULL` and "not set", and each may be set once (a second
//! setting is `MPI_ERR_ABI`, as it could contradict the first).

use std::ffi::{c_int, c_void};

use crate::abi::*;
use crate::*;

#[no_mangle]
pub unsafe extern "C" fn MPI_Abi_get_info(info: *mut Handle) -> c_int {
    with_state("MPI_Abi_get_info", MPI_COMM_WORLD, |_| {
        let mut pairs = info::Pairs::new();
        pairs.set("mpi_aint_size", &std::mem::size_of::<isize>().to_string())?;
        pairs.set("mpi_count_size", &std::mem::size_of::<i64>().to_string())?;
        pairs.set("mpi_offset_size", &std::mem::size_of::<i64>().to_string())?;
        // SAFETY: `info` is MPI_Abi_get_info's out-argument (MPI 5.0's ABI chapter), null or valid for writing one info
        // handle for this call; `hand_out` refuses null.
        unsafe { info::hand_out(pairs, info, "info") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Abi_get_fortran_info(info: *mut Handle) -> c_int {
    with_state("MPI_Abi_get_fortran_info", MPI_COMM_WORLD, |_| {
        match crate::process::process().fortran.lock().info.clone() {
            // SAFETY: `info` is MPI_Abi_get_fortran_info's out-argument, null or valid for writing one info handle for
            // this call; `hand_out` refuses null.
            Some(pairs) => unsafe { info::hand_out(pairs, info, "info") },
            // SAFETY: `info` is MPI_Abi_get_fortran_info's out-argument, null or valid for writing one handle for this
            // call; `put` refuses null.
            None => unsafe { put(info, MPI_INFO_NULL, "info") },
        }
    })
}

#[no_mangle]
pub extern "C" fn MPI_Abi_set_fortran_info(info: Handle) -> c_int {
    with_state("MPI_Abi_set_fortran_info", MPI_COMM_WORLD, |st| {
        let pairs = st.info(info)?;
        let mut f = crate::process::process().fortran.lock();
        if f.info.is_some() {
            return Err(Fail::new(MPI_ERR_ABI, "the Fortran ABI details were set already; they can be set once"));
        }
        f.info = Some(pairs);
        Ok(())
    })
}

/// A LOGICAL size the booleans calls accept: a power of two up to 16.
fn logical_size(n: c_int) -> R<usize> {
    match usize::try_from(n) {
        Ok(n) if n.is_power_of_two() && n <= 16 => Ok(n),
        _ => Err(Fail::new(MPI_ERR_ARG, format!("logical_size {n} is not a power of two from 1 to 16"))),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Abi_set_fortran_booleans(
    logical_size_: c_int,
    logical_true: *mut c_void,
    logical_false: *mut c_void,
) -> c_int {
    with_state("MPI_Abi_set_fortran_booleans", MPI_COMM_WORLD, |_| {
        let n = logical_size(logical_size_)?;
        if logical_true.is_null() || logical_false.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "logical_true or logical_false is a null pointer"));
        }
        // SAFETY: `logical_true` and `logical_false` are not null (checked above) and each holds one Fortran LOGICAL of
        // `n` bytes, readable for this call, as MPI 5.0's ABI chapter requires of MPI_Abi_set_fortran_booleans' caller;
        // both are copied out at once.
        let (t, f) = unsafe {
            (
                std::slice::from_raw_parts(logical_true.cast::<u8>(), n).to_vec(),
                std::slice::from_raw_parts(logical_false.cast::<u8>(), n).to_vec(),
            )
        };
        let mut fortran = crate::process::process().fortran.lock();
        if fortran.booleans.contains_key(&logical_size_) {
            return Err(Fail::new(MPI_ERR_ABI, format!("the booleans of size {n} were set already")));
        }
        fortran.booleans.insert(logical_size_, (t, f));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Abi_get_fortran_booleans(
    logical_size_: c_int,
    logical_true: *mut c_void,
    logical_false: *mut c_void,
    is_set: *mut c_int,
) -> c_int {
    with_state("MPI_Abi_get_fortran_booleans", MPI_COMM_WORLD, |_| {
        let n = logical_size(logical_size_)?;
        let set = crate::process::process().fortran.lock().booleans.get(&logical_size_).cloned();
        if let Some((t, f)) = &set {
            if logical_true.is_null() || logical_false.is_null() {
                return Err(Fail::new(MPI_ERR_ARG, "logical_true or logical_false is a null pointer"));
            }
            // SAFETY: `logical_true` and `logical_false` are not null (checked above) and each has room for one Fortran
            // LOGICAL of `n` bytes, writable for this call (MPI_Abi_get_fortran_booleans' out-arguments); `t` and `f`
            // hold `n` bytes each and are the library's own, so nothing overlaps.
            unsafe {
                std::ptr::copy_nonoverlapping(t.as_ptr(), logical_true.cast::<u8>(), n);
                std::ptr::copy_nonoverlapping(f.as_ptr(), logical_false.cast::<u8>(), n);
            }
        }
        // SAFETY: `is_set` is MPI_Abi_get_fortran_booleans' out-argument, null or valid for writing one `int` for this
        // call; `put` refuses null.
        unsafe { put(is_set, set.is_some() as c_int, "is_set") }
    })
}
