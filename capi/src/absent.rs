//! The functions of the MPI 5.0 ABI this library does not provide (yet):
//! each is exported, so that a program or a binding built against the
//! whole standard (mpi4py's default build) loads and runs, and each
//! fails with `MPI_ERR_UNSUPPORTED_OPERATION` through the error handler
//! that applies, with a message naming the function and what is missing.
//! docs/guide/not-supported.md lists them by chapter.

use std::ffi::{c_char, c_int, c_void};

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
    "MPI-IO (MPI 4.1 chapter 14) is not implemented" on MPI_FILE_NULL;
    pub unsafe extern "C" fn MPI_File_call_errhandler(fh: Handle, errorcode: c_int) -> c_int;
    pub unsafe extern "C" fn MPI_File_close(fh: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_delete(filename: *const c_char, info: Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_get_amode(fh: Handle, amode: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_File_get_atomicity(fh: Handle, flag: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_File_get_byte_offset(fh: Handle, offset: i64, disp: *mut i64) -> c_int;
    pub unsafe extern "C" fn MPI_File_get_errhandler(file: Handle, errhandler: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_get_group(fh: Handle, group: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_get_info(fh: Handle, info_used: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_get_position(fh: Handle, offset: *mut i64) -> c_int;
    pub unsafe extern "C" fn MPI_File_get_position_shared(fh: Handle, offset: *mut i64) -> c_int;
    pub unsafe extern "C" fn MPI_File_get_size(fh: Handle, size: *mut i64) -> c_int;
    pub unsafe extern "C" fn MPI_File_get_type_extent(fh: Handle, datatype: Handle, extent: *mut isize) -> c_int;
    pub unsafe extern "C" fn MPI_File_get_type_extent_c(fh: Handle, datatype: Handle, extent: *mut i64) -> c_int;
    pub unsafe extern "C" fn MPI_File_get_view(fh: Handle, disp: *mut i64, etype: *mut Handle, filetype: *mut Handle, datarep: *mut c_char) -> c_int;
    pub unsafe extern "C" fn MPI_File_iread(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_iread_all(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_iread_all_c(fh: Handle, buf: *mut c_void, count: i64, datatype: Handle, request: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_iread_at(fh: Handle, offset: i64, buf: *mut c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_iread_at_all(fh: Handle, offset: i64, buf: *mut c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_iread_at_all_c(fh: Handle, offset: i64, buf: *mut c_void, count: i64, datatype: Handle, request: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_iread_at_c(fh: Handle, offset: i64, buf: *mut c_void, count: i64, datatype: Handle, request: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_iread_c(fh: Handle, buf: *mut c_void, count: i64, datatype: Handle, request: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_iread_shared(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_iread_shared_c(fh: Handle, buf: *mut c_void, count: i64, datatype: Handle, request: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_iwrite(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_iwrite_all(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_iwrite_all_c(fh: Handle, buf: *const c_void, count: i64, datatype: Handle, request: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_iwrite_at(fh: Handle, offset: i64, buf: *const c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_iwrite_at_all(fh: Handle, offset: i64, buf: *const c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_iwrite_at_all_c(fh: Handle, offset: i64, buf: *const c_void, count: i64, datatype: Handle, request: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_iwrite_at_c(fh: Handle, offset: i64, buf: *const c_void, count: i64, datatype: Handle, request: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_iwrite_c(fh: Handle, buf: *const c_void, count: i64, datatype: Handle, request: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_iwrite_shared(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_iwrite_shared_c(fh: Handle, buf: *const c_void, count: i64, datatype: Handle, request: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_open(comm: Handle, filename: *const c_char, amode: c_int, info: Handle, fh: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_preallocate(fh: Handle, size: i64) -> c_int;
    pub unsafe extern "C" fn MPI_File_read(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_read_all(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_read_all_begin(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_read_all_begin_c(fh: Handle, buf: *mut c_void, count: i64, datatype: Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_read_all_c(fh: Handle, buf: *mut c_void, count: i64, datatype: Handle, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_read_all_end(fh: Handle, buf: *mut c_void, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_read_at(fh: Handle, offset: i64, buf: *mut c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_read_at_all(fh: Handle, offset: i64, buf: *mut c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_read_at_all_begin(fh: Handle, offset: i64, buf: *mut c_void, count: c_int, datatype: Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_read_at_all_begin_c(fh: Handle, offset: i64, buf: *mut c_void, count: i64, datatype: Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_read_at_all_c(fh: Handle, offset: i64, buf: *mut c_void, count: i64, datatype: Handle, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_read_at_all_end(fh: Handle, buf: *mut c_void, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_read_at_c(fh: Handle, offset: i64, buf: *mut c_void, count: i64, datatype: Handle, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_read_c(fh: Handle, buf: *mut c_void, count: i64, datatype: Handle, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_read_ordered(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_read_ordered_begin(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_read_ordered_begin_c(fh: Handle, buf: *mut c_void, count: i64, datatype: Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_read_ordered_c(fh: Handle, buf: *mut c_void, count: i64, datatype: Handle, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_read_ordered_end(fh: Handle, buf: *mut c_void, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_read_shared(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_read_shared_c(fh: Handle, buf: *mut c_void, count: i64, datatype: Handle, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_seek(fh: Handle, offset: i64, whence: c_int) -> c_int;
    pub unsafe extern "C" fn MPI_File_seek_shared(fh: Handle, offset: i64, whence: c_int) -> c_int;
    pub unsafe extern "C" fn MPI_File_set_atomicity(fh: Handle, flag: c_int) -> c_int;
    pub unsafe extern "C" fn MPI_File_set_errhandler(file: Handle, errhandler: Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_set_info(fh: Handle, info: Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_set_size(fh: Handle, size: i64) -> c_int;
    pub unsafe extern "C" fn MPI_File_set_view(fh: Handle, disp: i64, etype: Handle, filetype: Handle, datarep: *const c_char, info: Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_sync(fh: Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_write(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_write_all(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_write_all_begin(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_write_all_begin_c(fh: Handle, buf: *const c_void, count: i64, datatype: Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_write_all_c(fh: Handle, buf: *const c_void, count: i64, datatype: Handle, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_write_all_end(fh: Handle, buf: *const c_void, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_write_at(fh: Handle, offset: i64, buf: *const c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_write_at_all(fh: Handle, offset: i64, buf: *const c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_write_at_all_begin(fh: Handle, offset: i64, buf: *const c_void, count: c_int, datatype: Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_write_at_all_begin_c(fh: Handle, offset: i64, buf: *const c_void, count: i64, datatype: Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_write_at_all_c(fh: Handle, offset: i64, buf: *const c_void, count: i64, datatype: Handle, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_write_at_all_end(fh: Handle, buf: *const c_void, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_write_at_c(fh: Handle, offset: i64, buf: *const c_void, count: i64, datatype: Handle, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_write_c(fh: Handle, buf: *const c_void, count: i64, datatype: Handle, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_write_ordered(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_write_ordered_begin(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_write_ordered_begin_c(fh: Handle, buf: *const c_void, count: i64, datatype: Handle) -> c_int;
    pub unsafe extern "C" fn MPI_File_write_ordered_c(fh: Handle, buf: *const c_void, count: i64, datatype: Handle, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_write_ordered_end(fh: Handle, buf: *const c_void, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_write_shared(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_File_write_shared_c(fh: Handle, buf: *const c_void, count: i64, datatype: Handle, status: *mut MpiStatus) -> c_int;
    pub unsafe extern "C" fn MPI_Register_datarep(datarep: *const c_char, read_conversion_fn: usize, write_conversion_fn: usize, dtype_file_extent_fn: usize, extra_state: *mut c_void) -> c_int;
    pub unsafe extern "C" fn MPI_Register_datarep_c(datarep: *const c_char, read_conversion_fn: usize, write_conversion_fn: usize, dtype_file_extent_fn: usize, extra_state: *mut c_void) -> c_int;
}

absent! {
    "process creation and client/server connection (MPI 4.1 §11.8-11.10) need a process manager that can start and join jobs; dnrun starts one job of fixed size" on MPI_COMM_WORLD;
    pub unsafe extern "C" fn MPI_Close_port(port_name: *const c_char) -> c_int;
    pub unsafe extern "C" fn MPI_Comm_accept(port_name: *const c_char, info: Handle, root: c_int, comm: Handle, newcomm: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_Comm_connect(port_name: *const c_char, info: Handle, root: c_int, comm: Handle, newcomm: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_Comm_join(fd: c_int, intercomm: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_Comm_spawn(command: *const c_char, argv: *mut *mut c_char, maxprocs: c_int, info: Handle, root: c_int, comm: Handle, intercomm: *mut Handle, array_of_errcodes: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_Comm_spawn_multiple(count: c_int, array_of_commands: *mut *mut c_char, array_of_argv: *mut *mut *mut c_char, array_of_maxprocs: *const c_int, array_of_info: *const Handle, root: c_int, comm: Handle, intercomm: *mut Handle, array_of_errcodes: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_Lookup_name(service_name: *const c_char, info: Handle, port_name: *mut c_char) -> c_int;
    pub unsafe extern "C" fn MPI_Open_port(info: Handle, port_name: *mut c_char) -> c_int;
    pub unsafe extern "C" fn MPI_Publish_name(service_name: *const c_char, info: Handle, port_name: *const c_char) -> c_int;
    pub unsafe extern "C" fn MPI_Unpublish_name(service_name: *const c_char, info: Handle, port_name: *const c_char) -> c_int;
}
