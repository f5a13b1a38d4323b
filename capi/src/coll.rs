//! Collectives (MPI 4.1 §6) on the predefined contiguous datatypes, with
//! `MPI_IN_PLACE` (§6.1.2) and roots other than 0. Reductions run on the
//! element type the datatype names (`MPI_INT` is `i32`, `MPI_2INT` a
//! value-index pair, ...), through the mpi crate's algorithms, which the
//! simulator may offload to the device.

use std::ffi::{c_int, c_void};

use mpi::datatype::Equivalence;
use mpi::{Communicator, CommunicatorCollectives, Root, SystemOperation, ValueIndex};

use crate::abi::*;
use crate::*;

/// `len` bytes at `p` (empty for `len == 0`).
///
/// # Safety
/// `p..p + len` is readable for the lifetime chosen.
unsafe fn bytes<'a>(p: *const c_void, len: usize, what: &str) -> R<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_BUFFER, format!("{what} is a null pointer")));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p.cast(), len) })
}

/// `len` writable bytes at `p`.
///
/// # Safety
/// `p..p + len` is writable and not otherwise accessed for the lifetime chosen.
unsafe fn bytes_mut<'a>(p: *mut c_void, len: usize, what: &str) -> R<&'a mut [u8]> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_BUFFER, format!("{what} is a null pointer")));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast(), len) })
}

fn in_place(p: *const c_void) -> bool {
    p as usize == MPI_IN_PLACE
}

/// The root as a rank of `c`, checked (`MPI_ERR_ROOT`).
fn root_of(c: &SimpleCommunicator, root: c_int) -> R<c_int> {
    if root < 0 || root >= c.size() {
        return Err(Fail::new(
            MPI_ERR_ROOT,
            format!("root {root} is not a rank of this communicator of {} processes", c.size()),
        ));
    }
    Ok(root)
}

#[no_mangle]
pub extern "C" fn MPI_Barrier(comm: Handle) -> c_int {
    with_state("MPI_Barrier", comm, |st| Ok(st.comm(comm)?.comm.barrier()?))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    with_state("MPI_Bcast", comm, |st| {
        let c = &st.comm(comm)?.comm;
        let root = root_of(c, root)?;
        let len = byte_len(count, datatype)?;
        // SAFETY: the standard's contract: `buffer` holds `count` elements.
        let buf = unsafe { bytes_mut(buffer, len, "buffer")? };
        Ok(c.process_at_rank(root).broadcast_into(buf)?)
    })
}

/// The operation a handle names.
fn system_op(op: Handle) -> R<SystemOperation> {
    Ok(match op {
        MPI_SUM => SystemOperation::Sum,
        MPI_PROD => SystemOperation::Product,
        MPI_MIN => SystemOperation::Min,
        MPI_MAX => SystemOperation::Max,
        MPI_LAND => SystemOperation::LogicalAnd,
        MPI_LOR => SystemOperation::LogicalOr,
        MPI_LXOR => SystemOperation::LogicalXor,
        MPI_BAND => SystemOperation::BitwiseAnd,
        MPI_BOR => SystemOperation::BitwiseOr,
        MPI_BXOR => SystemOperation::BitwiseXor,
        MPI_MINLOC => SystemOperation::MinLoc,
        MPI_MAXLOC => SystemOperation::MaxLoc,
        MPI_OP_NULL => return Err(Fail::new(MPI_ERR_OP, "MPI_OP_NULL is not an operation")),
        other => return Err(Fail::new(MPI_ERR_OP, format!("{other:#x} is not an operation this library has"))),
    })
}

/// Run `$body` with `$T` the element type of datatype `$dt`.
macro_rules! typed {
    ($dt:expr, $T:ident => $body:expr) => {
        match $dt {
            MPI_SIGNED_CHAR | MPI_CHAR | MPI_INT8_T | MPI_INTEGER1 => { type $T = i8; $body }
            MPI_UNSIGNED_CHAR | MPI_UINT8_T | MPI_BYTE | MPI_C_BOOL | MPI_CXX_BOOL => { type $T = u8; $body }
            MPI_SHORT | MPI_INT16_T | MPI_INTEGER2 => { type $T = i16; $body }
            MPI_UNSIGNED_SHORT | MPI_UINT16_T => { type $T = u16; $body }
            MPI_INT | MPI_INT32_T | MPI_INTEGER | MPI_INTEGER4 | MPI_LOGICAL => { type $T = i32; $body }
            MPI_UNSIGNED | MPI_UINT32_T => { type $T = u32; $body }
            MPI_LONG | MPI_LONG_LONG | MPI_INT64_T | MPI_INTEGER8 | MPI_AINT | MPI_COUNT | MPI_OFFSET => { type $T = i64; $body }
            MPI_UNSIGNED_LONG | MPI_UNSIGNED_LONG_LONG | MPI_UINT64_T => { type $T = u64; $body }
            MPI_FLOAT | MPI_REAL | MPI_REAL4 => { type $T = f32; $body }
            MPI_DOUBLE | MPI_DOUBLE_PRECISION | MPI_REAL8 => { type $T = f64; $body }
            MPI_2INT | MPI_2INTEGER => { type $T = ValueIndex<i32, i32>; $body }
            MPI_FLOAT_INT => { type $T = ValueIndex<f32, i32>; $body }
            other => Err(Fail::new(MPI_ERR_TYPE, format!("no reduction on datatype {other:#x} in this library (predefined numbers, MPI_2INT and MPI_FLOAT_INT)"))),
        }
    };
}

/// `count` elements of `T` at `p`, checked for alignment.
///
/// # Safety
/// `p` holds `count` elements of `T` for the lifetime chosen.
unsafe fn elems<'a, T: Equivalence>(p: *const c_void, count: usize, what: &str) -> R<&'a [T]> {
    if count == 0 {
        return Ok(&[]);
    }
    if p.is_null() || (p as usize) % std::mem::align_of::<T>() != 0 {
        return Err(Fail::new(MPI_ERR_BUFFER, format!("{what} is null or not aligned for its datatype")));
    }
    // SAFETY: the caller's contract; non-null and aligned (checked).
    Ok(unsafe { std::slice::from_raw_parts(p.cast(), count) })
}

/// `count` writable elements of `T` at `p`, checked for alignment.
///
/// # Safety
/// `p` holds `count` elements of `T`, not otherwise accessed, for the lifetime chosen.
unsafe fn elems_mut<'a, T: Equivalence>(p: *mut c_void, count: usize, what: &str) -> R<&'a mut [T]> {
    if count == 0 {
        return Ok(&mut []);
    }
    if p.is_null() || (p as usize) % std::mem::align_of::<T>() != 0 {
        return Err(Fail::new(MPI_ERR_BUFFER, format!("{what} is null or not aligned for its datatype")));
    }
    // SAFETY: the caller's contract; non-null and aligned (checked).
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast(), count) })
}

/// The send side of a reduction: `count` elements at `sendbuf`, or with
/// `MPI_IN_PLACE` (where `in_place_ok`: everywhere for the all-reduce,
/// at the root for a reduce) a copy of the receive buffer's, taken before
/// the receive buffer is handed out (§6.9.3).
///
/// # Safety
/// Both pointers hold `n` elements of `T` for the lifetime chosen.
unsafe fn reduce_send<'a, T: Equivalence>(
    sendbuf: *const c_void,
    recvbuf: *const c_void,
    n: usize,
    in_place_ok: bool,
) -> R<std::borrow::Cow<'a, [T]>> {
    // SAFETY: the caller's contract.
    unsafe {
        Ok(if in_place(sendbuf) && in_place_ok {
            std::borrow::Cow::Owned(elems::<T>(recvbuf, n, "recvbuf")?.to_vec())
        } else {
            std::borrow::Cow::Borrowed(elems::<T>(sendbuf, n, "sendbuf")?)
        })
    }
}

fn count_of(count: c_int) -> R<usize> {
    usize::try_from(count).map_err(|_| Fail::new(MPI_ERR_COUNT, format!("count {count} is negative")))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: Handle,
    op: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    with_state("MPI_Reduce", comm, |st| {
        let c = &st.comm(comm)?.comm;
        let root = root_of(c, root)?;
        let n = count_of(count)?;
        let op = system_op(op)?;
        let at_root = c.rank() == root;
        typed!(datatype, T => {
            // SAFETY: the standard's contract: `count` elements in each buffer
            // (until completion for the non-blocking forms).
            let send = unsafe { reduce_send::<T>(sendbuf, recvbuf, n, at_root)? };
            let p = c.process_at_rank(root);
            if at_root {
                let recv = unsafe { elems_mut::<T>(recvbuf, n, "recvbuf")? };
                Ok(p.reduce_into_root(&send, recv, op)?)
            } else {
                Ok(p.reduce_into(&send, op)?)
            }
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Allreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: Handle,
    op: Handle,
    comm: Handle,
) -> c_int {
    with_state("MPI_Allreduce", comm, |st| {
        let c = &st.comm(comm)?.comm;
        let n = count_of(count)?;
        let op = system_op(op)?;
        typed!(datatype, T => {
            // SAFETY: the standard's contract: `count` elements in each buffer
            // (until completion for the non-blocking forms).
            let send = unsafe { reduce_send::<T>(sendbuf, recvbuf, n, true)? };
            // SAFETY: as above.
            let recv = unsafe { elems_mut::<T>(recvbuf, n, "recvbuf")? };
            Ok(c.all_reduce_into(&send, recv, op)?)
        })
    })
}

/// The two sides' blocks must be the same amount of data (§6.5).
fn same(call: &str, a: usize, b: usize) -> R<()> {
    if a != b {
        return Err(Fail::new(MPI_ERR_TRUNCATE, format!("{call}: {a} bytes sent per process, but {b} received")));
    }
    Ok(())
}

/// The block a process contributes to a gather: `sendcount` elements at
/// `sendbuf`, checked against the `rlen`-byte receive blocks, or with
/// `MPI_IN_PLACE` a copy of `own` (its block, already in the receive
/// buffer).
///
/// # Safety
/// `sendbuf` holds `sendcount` elements of `sendtype` for the lifetime chosen.
unsafe fn gather_send<'a>(
    call: &str,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    rlen: usize,
    own: &[u8],
) -> R<std::borrow::Cow<'a, [u8]>> {
    if in_place(sendbuf) {
        return Ok(std::borrow::Cow::Owned(own.to_vec()));
    }
    let slen = byte_len(sendcount, sendtype)?;
    same(call, slen, rlen)?;
    // SAFETY: the caller's contract.
    Ok(std::borrow::Cow::Borrowed(unsafe { bytes(sendbuf, slen, "sendbuf")? }))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Gather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    with_state("MPI_Gather", comm, |st| {
        let c = &st.comm(comm)?.comm;
        let root = root_of(c, root)?;
        let p = c.process_at_rank(root);
        if c.rank() != root {
            // SAFETY: the standard's contract on `sendbuf`.
            let send = unsafe { bytes(sendbuf, byte_len(sendcount, sendtype)?, "sendbuf")? };
            return Ok(p.gather_into(send)?);
        }
        let rlen = byte_len(recvcount, recvtype)?;
        let total = rlen * c.size() as usize;
        // SAFETY: the standard's contract: `recvbuf` holds size blocks at the root.
        let recv = unsafe { bytes_mut(recvbuf, total, "recvbuf")? };
        let me = c.rank() as usize * rlen;
        // SAFETY: the standard's contract on `sendbuf`.
        let send = unsafe { gather_send("MPI_Gather", sendbuf, sendcount, sendtype, rlen, &recv[me..me + rlen])? };
        Ok(p.gather_into_root(&send[..], recv)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Scatter(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    with_state("MPI_Scatter", comm, |st| {
        let c = &st.comm(comm)?.comm;
        let root = root_of(c, root)?;
        let p = c.process_at_rank(root);
        if c.rank() != root {
            // SAFETY: the standard's contract on `recvbuf`.
            let recv = unsafe { bytes_mut(recvbuf, byte_len(recvcount, recvtype)?, "recvbuf")? };
            return Ok(p.scatter_into(recv)?);
        }
        let slen = byte_len(sendcount, sendtype)?;
        // SAFETY: the standard's contract: `sendbuf` holds size blocks at the root.
        let send = unsafe { bytes(sendbuf, slen * c.size() as usize, "sendbuf")? };
        if in_place(recvbuf) {
            // The root's own block stays where it is.
            let mut mine = vec![0u8; slen];
            return Ok(p.scatter_into_root(send, &mut mine[..])?);
        }
        let rlen = byte_len(recvcount, recvtype)?;
        same("MPI_Scatter", slen, rlen)?;
        // SAFETY: the standard's contract on `recvbuf`.
        let recv = unsafe { bytes_mut(recvbuf, rlen, "recvbuf")? };
        Ok(p.scatter_into_root(send, recv)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Allgather(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    comm: Handle,
) -> c_int {
    with_state("MPI_Allgather", comm, |st| {
        let c = &st.comm(comm)?.comm;
        let rlen = byte_len(recvcount, recvtype)?;
        // SAFETY: the standard's contract: `recvbuf` holds size blocks.
        let recv = unsafe { bytes_mut(recvbuf, rlen * c.size() as usize, "recvbuf")? };
        let me = c.rank() as usize * rlen;
        // SAFETY: the standard's contract on `sendbuf`.
        let send = unsafe { gather_send("MPI_Allgather", sendbuf, sendcount, sendtype, rlen, &recv[me..me + rlen])? };
        Ok(c.all_gather_into(&send[..], recv)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoall(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    comm: Handle,
) -> c_int {
    with_state("MPI_Alltoall", comm, |st| {
        let c = &st.comm(comm)?.comm;
        let n = c.size() as usize;
        let rlen = byte_len(recvcount, recvtype)?;
        // SAFETY: the standard's contract: `recvbuf` holds size blocks.
        let recv = unsafe { bytes_mut(recvbuf, rlen * n, "recvbuf")? };
        let owned: Vec<u8>;
        let send: &[u8] = if in_place(sendbuf) {
            owned = recv.to_vec();
            &owned
        } else {
            let slen = byte_len(sendcount, sendtype)?;
            same("MPI_Alltoall", slen, rlen)?;
            // SAFETY: the standard's contract: `sendbuf` holds size blocks.
            unsafe { bytes(sendbuf, slen * n, "sendbuf")? }
        };
        Ok(c.all_to_all_into(send, recv)?)
    })
}

// ---- non-blocking collectives (§6.12) --------------------------------------

#[no_mangle]
pub unsafe extern "C" fn MPI_Ibarrier(comm: Handle, request: *mut Handle) -> c_int {
    with_state("MPI_Ibarrier", comm, |st| {
        let r = st.comm(comm)?.comm.immediate_barrier()?;
        // SAFETY: the standard's contract on `request`.
        unsafe { crate::p2p::new_request(st, Req::Op(r), request) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ibcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: Handle,
    root: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    with_state("MPI_Ibcast", comm, |st| {
        let c = &st.comm(comm)?.comm;
        let root = root_of(c, root)?;
        let len = byte_len(count, datatype)?;
        // SAFETY: the caller keeps `buffer` (count elements) untouched
        // until the request completes (§6.12); 'static stands for that.
        let buf: &'static mut [u8] = unsafe { bytes_mut(buffer, len, "buffer")? };
        let r = c.process_at_rank(root).immediate_broadcast_into(buf)?;
        // SAFETY: the standard's contract on `request`.
        unsafe { crate::p2p::new_request(st, Req::Op(r), request) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iallreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: Handle,
    op: Handle,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    with_state("MPI_Iallreduce", comm, |st| {
        let c = st.comm(comm)?.comm.clone();
        let n = count_of(count)?;
        let op = system_op(op)?;
        let r = typed!(datatype, T => {
            // SAFETY: the standard's contract: `count` elements in each buffer
            // (until completion for the non-blocking forms).
            let send = unsafe { reduce_send::<T>(sendbuf, recvbuf, n, true)? };
            // SAFETY: as above; 'static stands for "until completion".
            let recv: &'static mut [T] = unsafe { elems_mut::<T>(recvbuf, n, "recvbuf")? };
            Ok(c.immediate_all_reduce_into(&send, recv, op)?)
        })?;
        // SAFETY: the standard's contract on `request`.
        unsafe { crate::p2p::new_request(st, Req::Op(r), request) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ireduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: Handle,
    op: Handle,
    root: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    with_state("MPI_Ireduce", comm, |st| {
        let c = st.comm(comm)?.comm.clone();
        let root = root_of(&c, root)?;
        let n = count_of(count)?;
        let op = system_op(op)?;
        let at_root = c.rank() == root;
        let r = typed!(datatype, T => {
            // SAFETY: the standard's contract: `count` elements in each buffer
            // (until completion for the non-blocking forms).
            let send = unsafe { reduce_send::<T>(sendbuf, recvbuf, n, at_root)? };
            let p = c.process_at_rank(root);
            if at_root {
                // SAFETY: as above; 'static stands for "until completion".
                let recv: &'static mut [T] = unsafe { elems_mut::<T>(recvbuf, n, "recvbuf")? };
                Ok(p.immediate_reduce_into_root(&send, recv, op)?)
            } else {
                Ok(p.immediate_reduce_into(&send, op)?)
            }
        })?;
        // SAFETY: the standard's contract on `request`.
        unsafe { crate::p2p::new_request(st, Req::Op(r), request) }
    })
}
