//! Reading and writing a status's fields (MPI 5.0 §3.2.5 and §13.3):
//! `MPI_Test_cancelled`, and the calls a generalized request or a layered
//! library uses to fill in a status — `MPI_Status_set_elements`,
//! `MPI_Status_set_cancelled`, and MPI 5.0's getters and setters of
//! `MPI_SOURCE`, `MPI_TAG` and `MPI_ERROR`.

use std::ffi::c_int;

use crate::abi::*;
use crate::*;

/// The status `status` points at.
///
/// # Safety
/// `status` is null or valid for reads and writes.
unsafe fn status_mut<'a>(status: *mut MpiStatus) -> R<&'a mut MpiStatus> {
    // SAFETY: `status` is null or valid for reading and writing one MPI_Status (`status_mut`'s `# Safety`), and nothing
    // else reaches it while the returned reference is used: its one caller, `on_status`, uses it only within the MPI
    // call. `as_mut` turns null into `None`.
    unsafe { status.as_mut() }
        .ok_or_else(|| Fail::new(MPI_ERR_ARG, "status is a null pointer (MPI_STATUS_IGNORE cannot be set)"))
}

/// Run `f` on the status; errors go to `MPI_COMM_WORLD`'s handler.
///
/// # Safety
/// `status` is null or valid for reads and writes.
unsafe fn on_status(call: &str, status: *mut MpiStatus, f: impl FnOnce(&State, &mut MpiStatus) -> R<()>) -> c_int {
    with_state(call, MPI_COMM_WORLD, |st| {
        // SAFETY: `status` is null or valid for reading and writing one MPI_Status for this call (`on_status`'s
        // `# Safety`), and the reference lives only while `f` runs, within the call: what `status_mut` requires.
        f(st, unsafe { status_mut(status)? })
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Test_cancelled(status: *const MpiStatus, flag: *mut c_int) -> c_int {
    with_state("MPI_Test_cancelled", MPI_COMM_WORLD, |_| {
        // SAFETY: `status` is MPI_Test_cancelled's status (MPI 4.1 §3.8.4), null or readable for one MPI_Status for
        // this call; `read_arg` refuses null.
        let c = unsafe { read_arg(status, "status")? }.cancelled();
        // SAFETY: `flag` is MPI_Test_cancelled's out-argument, null or valid for writing one `int` for this call; `put`
        // refuses null.
        unsafe { put(flag, c as c_int, "flag") }
    })
}

/// Make the status say it holds `count` basic elements of `datatype`, so
/// that `MPI_Get_elements` and `MPI_Get_count` read them back (§13.3).
///
/// # Safety
/// `status` is null or valid for reads and writes.
unsafe fn set_elements(call: &str, status: *mut MpiStatus, datatype: Handle, count: i64) -> c_int {
    // SAFETY: `status` is null or valid for reading and writing one MPI_Status for this call (`set_elements`'
    // `# Safety`), which is `on_status`'s requirement.
    unsafe {
        on_status(call, status, |st, s| {
            let n = u64::try_from(count).map_err(|_| Fail::new(MPI_ERR_COUNT, format!("count {count} is negative")))?;
            let bytes = st.layout(datatype)?.bytes_for(n);
            s.set_bytes(bytes);
            Ok(())
        })
    }
}

forward! {
    pub unsafe extern "C" fn MPI_Status_set_elements(status: *mut MpiStatus, datatype: Handle, count: c_int) -> c_int = set_elements(status, datatype, i64::from(count));
    pub unsafe extern "C" fn MPI_Status_set_elements_c(status: *mut MpiStatus, datatype: Handle, count: i64) -> c_int = set_elements(status, datatype, count);
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Status_set_cancelled(status: *mut MpiStatus, flag: c_int) -> c_int {
    // SAFETY: `status` is MPI_Status_set_cancelled's in/out status (MPI 4.1 §13.3), null or readable and writable for
    // one MPI_Status for this call: `on_status`'s `# Safety`.
    unsafe {
        on_status("MPI_Status_set_cancelled", status, |_, s| {
            s.set_cancelled(flag != 0);
            Ok(())
        })
    }
}

/// `MPI_Status_get_source`/`_tag`/`_error` and their setters (MPI 5.0
/// §3.2.5): one public field each.
macro_rules! field {
    ($get:ident, $set:ident, $field:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $get(status: *const MpiStatus, value: *mut c_int) -> c_int {
            with_state(stringify!($get), MPI_COMM_WORLD, |_| {
                // SAFETY: `status` is the getter's `const` status, null or readable for one MPI_Status for this call;
                // `read_arg` refuses null and copies it out, so nothing is written through it.
                let s = unsafe { read_arg(status, "status")? };
                // SAFETY: `value` is the getter's out-argument, null or writable for one `int` for this call; `put`
                // refuses null.
                unsafe { put(value, s.$field, "the result") }
            })
        }

        #[no_mangle]
        pub unsafe extern "C" fn $set(status: *mut MpiStatus, value: c_int) -> c_int {
            // SAFETY: `status` is the setter's in/out status, null or readable and writable for one MPI_Status for this
            // call: `on_status`'s `# Safety`.
            unsafe {
                on_status(stringify!($set), status, |_, s| {
                    s.$field = value;
                    Ok(())
                })
            }
        }
    };
}

field!(MPI_Status_get_source, MPI_Status_set_source, source);
field!(MPI_Status_get_tag, MPI_Status_set_tag, tag);
field!(MPI_Status_get_error, MPI_Status_set_error, error);
