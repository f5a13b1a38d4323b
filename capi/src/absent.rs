//! The functions of the MPI 5.0 ABI this library does not provide (yet):
//! each is exported, so that a program or a binding built against the
//! whole standard (mpi4py's default build) loads and runs, and each
//! fails with `MPI_ERR_UNSUPPORTED_OPERATION` through the error handler
//! that applies, with a message naming the function and what is missing.
//! docs/guide/not-supported.md lists them by chapter.

use std::ffi::{c_char, c_int};

use crate::abi::*;
use crate::*;

/// Refuse `call`, part of `what`, through the error handler of `obj`
/// (a communicator or window; `MPI_COMM_WORLD`'s otherwise, §9.3; a file
/// operation's goes to the files' handler, `MPI_ERRORS_RETURN` unless
/// set, §14.7).
pub(crate) fn refuse(call: &str, what: &str, obj: Handle) -> c_int {
    with_state(call, obj, |_| {
        Err(Fail::new(
            MPI_ERR_UNSUPPORTED_OPERATION,
            format!("{call} is not supported by this library: {what} (docs/guide/not-supported.md)"),
        ))
    })
}

/// Entry points that refuse: `what` is the missing part of the standard,
/// `on` the object whose error handler applies.
macro_rules! absent {
    ($what:literal on $obj:expr; $(pub unsafe extern "C" fn $name:ident($($arg:ident: $ty:ty),*) -> c_int;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            $(let _ = $arg;)*
            refuse(stringify!($name), $what, $obj)
        }
    )*};
}

absent! {
    "process creation (MPI 4.1 §11.8) needs a process manager that can add processes to a running job; dnrun starts one job of fixed size" on MPI_COMM_WORLD;
    pub unsafe extern "C" fn MPI_Comm_spawn(command: *const c_char, argv: *mut *mut c_char, maxprocs: c_int, info: Handle, root: c_int, comm: Handle, intercomm: *mut Handle, array_of_errcodes: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_Comm_spawn_multiple(count: c_int, array_of_commands: *mut *mut c_char, array_of_argv: *mut *mut *mut c_char, array_of_maxprocs: *const c_int, array_of_info: *const Handle, root: c_int, comm: Handle, intercomm: *mut Handle, array_of_errcodes: *mut c_int) -> c_int;
}
