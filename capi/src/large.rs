//! The large-count forms (`_c`, MPI 4.1 §2.5.8) of point-to-point,
//! packing and local reduction, and the `_x` queries MPI 4.1 keeps
//! (deprecated): each is its classic form once its counts are checked to
//! fit (`crate::count`: this library moves at most 2^31-1 elements per
//! call, and says so with `MPI_ERR_COUNT` rather than truncating). The
//! collectives' `_c` forms are generated with the classic ones
//! (`coll::collective!`), over the same start functions.

use std::ffi::{c_int, c_void};

use crate::abi::*;
use crate::bsend::*;
use crate::coll::MPI_Reduce_local;
use crate::count::Int;
use crate::datatype::*;
use crate::message::*;
use crate::p2p::*;
use crate::*;

/// A call that fails before its classic form runs: `f` through `comm`'s
/// error handler.
pub(crate) fn fail(call: &str, comm: Handle, f: Fail) -> c_int {
    with_state(call, comm, |_| Err(f))
}

/// `_c` entry points that are their classic form with the listed count
/// arguments narrowed to `int`.
macro_rules! large {
    ($(pub unsafe extern "C" fn $name:ident($($arg:ident: $ty:ty),*) -> c_int = $classic:ident [$($count:ident),*] on $comm:expr;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            $(
                let $count = match Int::int($count, stringify!($count)) {
                    Ok(c) => c,
                    Err(f) => return fail(stringify!($name), $comm, f),
                };
            )*
            // SAFETY: every pointer is handed unchanged to the classic form, whose arguments have the same meaning and
            // the same validity requirements (MPI 4.1 §2.5.8: a `_c` form differs only in its count types), and the
            // counts were narrowed to `int` above without loss; so the classic function's requirements are met by this
            // call's caller.
            unsafe { $classic($($arg),*) }
        }
    )*};
}

large! {
    pub unsafe extern "C" fn MPI_Send_c(buf: *const c_void, count: i64, datatype: Handle, dest: c_int, tag: c_int, comm: Handle) -> c_int = MPI_Send [count] on comm;
    pub unsafe extern "C" fn MPI_Ssend_c(buf: *const c_void, count: i64, datatype: Handle, dest: c_int, tag: c_int, comm: Handle) -> c_int = MPI_Ssend [count] on comm;
    pub unsafe extern "C" fn MPI_Rsend_c(buf: *const c_void, count: i64, datatype: Handle, dest: c_int, tag: c_int, comm: Handle) -> c_int = MPI_Rsend [count] on comm;
    pub unsafe extern "C" fn MPI_Bsend_c(buf: *const c_void, count: i64, datatype: Handle, dest: c_int, tag: c_int, comm: Handle) -> c_int = MPI_Bsend [count] on comm;
    pub unsafe extern "C" fn MPI_Recv_c(buf: *mut c_void, count: i64, datatype: Handle, source: c_int, tag: c_int, comm: Handle, status: *mut MpiStatus) -> c_int = MPI_Recv [count] on comm;
    pub unsafe extern "C" fn MPI_Isend_c(buf: *const c_void, count: i64, datatype: Handle, dest: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int = MPI_Isend [count] on comm;
    pub unsafe extern "C" fn MPI_Issend_c(buf: *const c_void, count: i64, datatype: Handle, dest: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int = MPI_Issend [count] on comm;
    pub unsafe extern "C" fn MPI_Irsend_c(buf: *const c_void, count: i64, datatype: Handle, dest: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int = MPI_Irsend [count] on comm;
    pub unsafe extern "C" fn MPI_Ibsend_c(buf: *const c_void, count: i64, datatype: Handle, dest: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int = MPI_Ibsend [count] on comm;
    pub unsafe extern "C" fn MPI_Irecv_c(buf: *mut c_void, count: i64, datatype: Handle, source: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int = MPI_Irecv [count] on comm;
    pub unsafe extern "C" fn MPI_Send_init_c(buf: *const c_void, count: i64, datatype: Handle, dest: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int = MPI_Send_init [count] on comm;
    pub unsafe extern "C" fn MPI_Ssend_init_c(buf: *const c_void, count: i64, datatype: Handle, dest: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int = MPI_Ssend_init [count] on comm;
    pub unsafe extern "C" fn MPI_Rsend_init_c(buf: *const c_void, count: i64, datatype: Handle, dest: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int = MPI_Rsend_init [count] on comm;
    pub unsafe extern "C" fn MPI_Bsend_init_c(buf: *const c_void, count: i64, datatype: Handle, dest: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int = MPI_Bsend_init [count] on comm;
    pub unsafe extern "C" fn MPI_Recv_init_c(buf: *mut c_void, count: i64, datatype: Handle, source: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int = MPI_Recv_init [count] on comm;
    pub unsafe extern "C" fn MPI_Sendrecv_c(sendbuf: *const c_void, sendcount: i64, sendtype: Handle, dest: c_int, sendtag: c_int, recvbuf: *mut c_void, recvcount: i64, recvtype: Handle, source: c_int, recvtag: c_int, comm: Handle, status: *mut MpiStatus) -> c_int = MPI_Sendrecv [sendcount, recvcount] on comm;
    pub unsafe extern "C" fn MPI_Isendrecv_c(sendbuf: *const c_void, sendcount: i64, sendtype: Handle, dest: c_int, sendtag: c_int, recvbuf: *mut c_void, recvcount: i64, recvtype: Handle, source: c_int, recvtag: c_int, comm: Handle, request: *mut Handle) -> c_int = MPI_Isendrecv [sendcount, recvcount] on comm;
    pub unsafe extern "C" fn MPI_Sendrecv_replace_c(buf: *mut c_void, count: i64, datatype: Handle, dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int, comm: Handle, status: *mut MpiStatus) -> c_int = MPI_Sendrecv_replace [count] on comm;
    pub unsafe extern "C" fn MPI_Isendrecv_replace_c(buf: *mut c_void, count: i64, datatype: Handle, dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int, comm: Handle, request: *mut Handle) -> c_int = MPI_Isendrecv_replace [count] on comm;
    pub unsafe extern "C" fn MPI_Mrecv_c(buf: *mut c_void, count: i64, datatype: Handle, message: *mut Handle, status: *mut MpiStatus) -> c_int = MPI_Mrecv [count] on MPI_COMM_WORLD;
    pub unsafe extern "C" fn MPI_Imrecv_c(buf: *mut c_void, count: i64, datatype: Handle, message: *mut Handle, request: *mut Handle) -> c_int = MPI_Imrecv [count] on MPI_COMM_WORLD;
    pub unsafe extern "C" fn MPI_Reduce_local_c(inbuf: *const c_void, inoutbuf: *mut c_void, count: i64, datatype: Handle, op: Handle) -> c_int = MPI_Reduce_local [count] on MPI_COMM_WORLD;
}

/// A position argument in its `MPI_Count` form, run through the classic
/// call's `int` one and written back.
///
/// # Safety
/// `position` is null or valid for a read and a write.
unsafe fn with_position(call: &str, comm: Handle, position: *mut i64, f: impl FnOnce(*mut c_int) -> c_int) -> c_int {
    // SAFETY: `position` is null or readable (and writable) for one `MPI_Count` for this call (`with_position`'s
    // `# Safety`); `read_arg` refuses null.
    let p = match unsafe { read_arg(position, "position") }.and_then(|p| p.int("position")) {
        Ok(p) => p,
        Err(e) => return fail(call, comm, e),
    };
    let mut p32 = p;
    let rc = f(&mut p32);
    if rc == MPI_SUCCESS {
        // SAFETY: `position` is not null (`read_arg` accepted it above) and writable for one `MPI_Count` for this call
        // (`with_position`'s `# Safety`).
        unsafe { position.write(i64::from(p32)) };
    }
    rc
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_c(
    inbuf: *const c_void,
    incount: i64,
    datatype: Handle,
    outbuf: *mut c_void,
    outsize: i64,
    position: *mut i64,
    comm: Handle,
) -> c_int {
    let (incount, outsize) = match (incount.int("incount"), outsize.int("outsize")) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(f), _) | (_, Err(f)) => return fail("MPI_Pack_c", comm, f),
    };
    // SAFETY: `position` is MPI_Pack_c's in/out argument, null or readable and writable for one `MPI_Count` for this
    // call (`with_position`'s `# Safety`); the closure, run within the call, hands MPI_Pack the caller's `inbuf`
    // (holding `incount` elements of `datatype`) and `outbuf` (`outsize` writable bytes), as MPI 4.1 §5.2.1 requires,
    // and a pointer to a local `int` position.
    unsafe {
        with_position("MPI_Pack_c", comm, position, |p| MPI_Pack(inbuf, incount, datatype, outbuf, outsize, p, comm))
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Unpack_c(
    inbuf: *const c_void,
    insize: i64,
    position: *mut i64,
    outbuf: *mut c_void,
    outcount: i64,
    datatype: Handle,
    comm: Handle,
) -> c_int {
    let (insize, outcount) = match (insize.int("insize"), outcount.int("outcount")) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(f), _) | (_, Err(f)) => return fail("MPI_Unpack_c", comm, f),
    };
    // SAFETY: `position` is MPI_Unpack_c's in/out argument, null or readable and writable for one `MPI_Count` for this
    // call (`with_position`'s `# Safety`); the closure, run within the call, hands MPI_Unpack the caller's `inbuf`
    // (`insize` readable bytes) and `outbuf` (room for `outcount` elements of `datatype`), as MPI 4.1 §5.2.1 requires,
    // and a pointer to a local `int` position.
    unsafe {
        with_position("MPI_Unpack_c", comm, position, |p| {
            MPI_Unpack(inbuf, insize, p, outbuf, outcount, datatype, comm)
        })
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_size_c(incount: i64, datatype: Handle, comm: Handle, size: *mut i64) -> c_int {
    let incount = match incount.int("incount") {
        Ok(c) => c,
        Err(f) => return fail("MPI_Pack_size_c", comm, f),
    };
    let mut n: c_int = 0;
    // SAFETY: `n` is a local `int`, writable: the one pointer MPI_Pack_size writes through.
    let rc = unsafe { MPI_Pack_size(incount, datatype, comm, &mut n) };
    if rc != MPI_SUCCESS {
        return rc;
    }
    // SAFETY: `size` is MPI_Pack_size_c's out-argument, null or valid for writing one `MPI_Count` for this call; `put`
    // refuses null.
    match unsafe { put(size, i64::from(n), "size") } {
        Ok(()) => MPI_SUCCESS,
        Err(f) => fail("MPI_Pack_size_c", comm, f),
    }
}

// ---- the `_x` queries (MPI 4.1 §19.1.x, deprecated, kept by the 5.0 ABI) ----

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_size_x(datatype: Handle, size: *mut i64) -> c_int {
    // SAFETY: the same arguments as the `_c` form's.
    unsafe { MPI_Type_size_c(datatype, size) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_extent_x(datatype: Handle, lb: *mut i64, extent: *mut i64) -> c_int {
    // SAFETY: the same arguments as the `_c` form's.
    unsafe { MPI_Type_get_extent_c(datatype, lb, extent) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_true_extent_x(
    datatype: Handle,
    true_lb: *mut i64,
    true_extent: *mut i64,
) -> c_int {
    // SAFETY: the same arguments as the `_c` form's.
    unsafe { MPI_Type_get_true_extent_c(datatype, true_lb, true_extent) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_elements_x(status: *const MpiStatus, datatype: Handle, count: *mut i64) -> c_int {
    // SAFETY: the same arguments as the `_c` form's.
    unsafe { MPI_Get_elements_c(status, datatype, count) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Status_set_elements_x(status: *mut MpiStatus, datatype: Handle, count: i64) -> c_int {
    // SAFETY: the same arguments as the `_c` form's.
    unsafe { crate::status::MPI_Status_set_elements_c(status, datatype, count) }
}
