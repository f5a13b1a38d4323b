//! Partitioned communication (MPI 4.1 chapter 4): `MPI_Psend_init` and
//! `MPI_Precv_init` make persistent requests over a buffer of
//! `partitions` × `count` elements. After `MPI_Start`, the sender marks
//! partitions ready (`MPI_Pready`, `_range`, `_list`) and the receiver
//! asks whether a partition has arrived (`MPI_Parrived`); `MPI_Wait` and
//! its siblings complete them.
//!
//! The send goes as one message when its last partition is ready, and the
//! receive is one receive of the whole buffer, on the channel that keeps
//! partitioned messages apart from the others (`mpi::partitioned`,
//! where a partitioned tag must be below 2^20). So a partition "arrives"
//! when they all have, which §4.2.1 permits.
//!
//! The partitions' rules are `mpi::partitioned`'s; where each request
//! stands, for the completion calls, is `crate::p2p::partitions`.

use std::ffi::{c_int, c_void};

use mpi::partitioned::SendPartitions;
use mpi::request::{Need, Part};

use crate::p2p::partitions::{ready, Partitioned};

use crate::abi::*;
use crate::*;

/// A partitioned request's initialization.
///
/// # Safety
/// `request` is null or writable.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn init(
    st: &mut State,
    send: bool,
    buf: *mut c_void,
    partitions: c_int,
    count: i64,
    datatype: Handle,
    peer: c_int,
    tag: c_int,
    comm: Handle,
    info: Handle,
    request: *mut Handle,
) -> R<()> {
    crate::inter::refuse_inter(st, comm, if send { "MPI_Psend_init" } else { "MPI_Precv_init" })?;
    st.info_or_null(info)?;
    let parts =
        usize::try_from(partitions).map_err(|_| mpi::PartitionError::Negative { partitions: i64::from(partitions) })?;
    let total =
        count.checked_mul(partitions as i64).ok_or_else(|| Fail::new(MPI_ERR_COUNT, "partitions × count overflows"))?;
    let span = st.span(total, datatype)?;
    let channel = mpi::staged::partitioned::Channel::new(&st.comm(comm)?.comm, peer, tag, send)?;
    let op = PersistentOp::P2p(if send {
        mpi::persistent::P2p::Psend { buf: buf.cast(), span, channel }
    } else {
        mpi::persistent::P2p::Precv { buf: buf.cast(), span, channel }
    });
    let comm_c = st.comm(comm)?.comm.clone();
    // SAFETY: `request` is null or valid for writing one handle for this call (`init`'s `# Safety`, from
    // MPI_Psend_init's or MPI_Precv_init's out-argument); `new_request` refuses null.
    unsafe { crate::new_request(st, Req::persistent(Recipe { comm: comm_c, handle: comm, op }), request)? };
    // SAFETY: written just above.
    let h = unsafe { request.read() };
    let p = if send { Partitioned::Send(SendPartitions::new(parts)) } else { Partitioned::Recv { partitions: parts } };
    st.partitioned.insert(h, p);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Psend_init(
    buf: *const c_void,
    partitions: c_int,
    count: i64,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    info: Handle,
    request: *mut Handle,
) -> c_int {
    with_state("MPI_Psend_init", comm, |st| {
        // SAFETY: `request` points to one writable handle for this call, and `buf` holds `partitions` × `count`
        // elements of `datatype` that the program keeps for the request, as MPI 4.1 §4.2 requires of MPI_Psend_init's
        // caller; `init` only stores `buf` (the send, once every partition is ready, only reads it): `init`'s
        // `# Safety`.
        unsafe { init(st, true, buf.cast_mut(), partitions, count, datatype, dest, tag, comm, info, request) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Precv_init(
    buf: *mut c_void,
    partitions: c_int,
    count: i64,
    datatype: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    info: Handle,
    request: *mut Handle,
) -> c_int {
    with_state("MPI_Precv_init", comm, |st| {
        // SAFETY: `request` points to one writable handle for this call, and `buf` has room for `partitions` × `count`
        // elements of `datatype` that the program keeps for the request, as MPI 4.1 §4.2 requires of MPI_Precv_init's
        // caller; `init` only stores `buf`: `init`'s `# Safety`.
        unsafe { init(st, false, buf, partitions, count, datatype, source, tag, comm, info, request) }
    })
}

#[no_mangle]
pub extern "C" fn MPI_Pready(partition: c_int, request: Handle) -> c_int {
    with_state("MPI_Pready", MPI_COMM_WORLD, |st| ready(st, request, |p| Ok(p.mark([i64::from(partition)])?)))
}

#[no_mangle]
pub extern "C" fn MPI_Pready_range(partition_low: c_int, partition_high: c_int, request: Handle) -> c_int {
    with_state("MPI_Pready_range", MPI_COMM_WORLD, |st| {
        ready(st, request, |p| Ok(p.mark_range(i64::from(partition_low), i64::from(partition_high))?))
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pready_list(length: c_int, array_of_partitions: *const c_int, request: Handle) -> c_int {
    with_state("MPI_Pready_list", MPI_COMM_WORLD, |st| {
        // SAFETY: `array_of_partitions` holds `length` ints, readable for this call, as MPI 4.1 §4.3 requires of
        // MPI_Pready_list's caller: what `array_arg` requires (it checks `length` and null).
        let list = unsafe { array_arg(array_of_partitions, length, "array_of_partitions")? };
        ready(st, request, |p| Ok(p.mark(list.iter().map(|&i| i64::from(i)))?))
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Parrived(request: Handle, partition: c_int, flag: *mut c_int) -> c_int {
    with_state("MPI_Parrived", MPI_COMM_WORLD, |st| {
        let Some(&Partitioned::Recv { partitions }) = st.partitioned.get(&request) else {
            return Err(Fail::new(
                MPI_ERR_REQUEST,
                format!("{request:#x} is not a partitioned receive (MPI_Precv_init)"),
            ));
        };
        mpi::partitioned::check_partition(i64::from(partition), partitions).map_err(mpi::MpiError::from)?;
        let part = st.requests.get(request).map_or(Part::Idle, Req::part);
        // An inactive request's partitions have all arrived (or none was
        // asked for); an active one's when its receive has ended.
        let (arrived, under_way) = match part {
            Part::Idle | Part::Ended => (true, false),
            p => (mpi::request::settle(std::slice::from_ref(&p), Need::All, false, "MPI_Parrived")?[0], true),
        };
        // Ended: its data goes into the buffer now (a scattered layout is
        // unpacked at completion), and the completion call reports the
        // outcome kept here.
        if arrived && under_way {
            crate::p2p::keep(st, request, std::ptr::null_mut(), false)?;
        }
        // SAFETY: `flag` is MPI_Parrived's out-argument (MPI 4.1 §4.3), null or valid for writing one `int` for this
        // call; `put` refuses null.
        unsafe { put(flag, arrived as c_int, "flag") }
    })
}
