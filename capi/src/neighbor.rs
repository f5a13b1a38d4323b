//! Neighborhood collectives (MPI 4.1 §8.6), blocking and non-blocking
//! (§8.7): each process sends to its outgoing neighbors and receives from
//! its incoming ones, in the order its topology lists them (a Cartesian
//! grid: per dimension, the neighbor below, then the one above).
//!
//! All five are one exchange: the blocks to send are packed into one
//! buffer and the received ones staged and unpacked into place at
//! completion (`coll::Wblocks`, shared with `MPI_Alltoallw`); the mpi
//! crate's [`mpi::SimpleCommunicator::immediate_neighbor_exchange`] moves
//! the bytes as one collective schedule with every send and receive
//! independent. An edge to `MPI_PROC_NULL` (off a non-periodic grid)
//! moves nothing, and its receive block keeps its contents.
//! `MPI_IN_PLACE` is not valid for these collectives.

use std::ffi::{c_int, c_void};

use mpi::topo::{Block, Edge};

use crate::abi::*;
use crate::coll::{blocking, collective, in_place, nonblocking, wblock};
use crate::count::{Int, Ints};
use crate::datatype::addr;
use crate::*;
use mpi::staged::coll::{WBlock, Wblocks};

/// One side's blocks, one per edge: byte displacement from the buffer,
/// count and datatype.
type Blocks = Vec<(isize, c_int, Handle)>;

/// `n` blocks of `count` elements of `dt`, all at the buffer's start
/// (what `MPI_Neighbor_allgather(v)` sends to every neighbor).
fn same(n: usize, count: impl Int, dt: Handle) -> R<Blocks> {
    Ok(vec![(0, count.int("count")?, dt); n])
}

/// `n` blocks of `count` elements of `dt`, one after another.
fn strided(st: &State, n: usize, count: impl Int, dt: Handle) -> R<Blocks> {
    let count = count.int("count")?;
    let step = (count as isize).checked_mul(st.committed(dt)?.extent());
    (0..n)
        .map(|i| {
            let d = step.and_then(|s| s.checked_mul(i as isize));
            d.map(|d| (d, count, dt)).ok_or_else(|| Fail::new(MPI_ERR_COUNT, "the blocks reach past the address space"))
        })
        .collect()
}

/// `n` blocks of `counts[i]` elements of `dt` at `displs[i]` extents.
///
/// # Safety
/// `counts` and `displs` hold `n` values.
unsafe fn varied(
    st: &State,
    n: usize,
    counts: impl Into<Ints>,
    displs: impl Into<Ints>,
    dt: Handle,
    side: &str,
) -> R<Blocks> {
    // SAFETY: each array holds one entry per neighbor (MPI 4.1 §8.6); the readers refuse null
    // pointers.
    let (c, d) = unsafe {
        (
            counts.into().read(n as c_int, &format!("{side}counts"))?,
            displs.into().read(n as c_int, &format!("{side}displs"))?,
        )
    };
    let ext = st.committed(dt)?.extent();
    c.iter()
        .zip(&d)
        .map(|(&c, &d)| {
            let at =
                (d as isize).checked_mul(ext).ok_or_else(|| Fail::new(MPI_ERR_COUNT, "a displacement is too large"))?;
            Ok((at, c, dt))
        })
        .collect()
}

/// `n` blocks of `counts[i]` elements of `types[i]` at `displs[i]` bytes.
///
/// # Safety
/// The three arrays hold `n` values.
unsafe fn typed(
    n: usize,
    counts: impl Into<Ints>,
    displs: *const isize,
    types: *const Handle,
    side: &str,
) -> R<Blocks> {
    // SAFETY: each array holds one entry per neighbor (MPI 4.1 §8.6); the readers refuse null
    // pointers.
    let (c, d, t) = unsafe {
        (
            counts.into().read(n as c_int, &format!("{side}counts"))?,
            array_arg(displs, n as c_int, &format!("{side}displs"))?,
            array_arg(types, n as c_int, &format!("{side}types"))?,
        )
    };
    Ok((0..n).map(|i| (d[i], c[i], t[i])).collect())
}

/// Start the exchange: the blocks `send` lays out for the outgoing edges,
/// and those `recv` lays out for the incoming ones (each told how many).
///
/// # Safety
/// The blocks are in the caller's buffers, which it keeps until the
/// operation completes.
unsafe fn start(
    st: &mut State,
    comm: Handle,
    sendbuf: *const c_void,
    send: impl FnOnce(&State, usize) -> R<Blocks>,
    recvbuf: *mut c_void,
    recv: impl FnOnce(&State, usize) -> R<Blocks>,
) -> R<Staged> {
    if in_place(sendbuf) {
        return Err(Fail::new(MPI_ERR_BUFFER, "MPI_IN_PLACE is not valid for a neighborhood collective (§8.6)"));
    }
    let (inc, out) = st.comm(comm)?.comm.neighbor_edges()?;
    let (sb, se) = on_edges(st, sendbuf, send(st, out.len())?, &out)?;
    let (rb, re) = on_edges(st, recvbuf.cast_const(), recv(st, inc.len())?, &inc)?;
    // SAFETY: each block is in the caller's buffers, which hold it until completion (§8.6, §8.7).
    let w = unsafe { Wblocks::new(&sb, &rb)? };
    let c = &st.comm(comm)?.comm;
    let block = |e: &Edge, off: mpi::Count, len: mpi::Count| Block { edge: *e, off: off as usize, len: len as usize };
    let bs: Vec<Block> = se.iter().zip(w.sdispls.iter().zip(&w.scounts)).map(|(e, (&o, &l))| block(e, o, l)).collect();
    let br: Vec<Block> = re.iter().zip(w.rdispls.iter().zip(&w.rcounts)).map(|(e, (&o, &l))| block(e, o, l)).collect();
    Ok(w.start(|out, into, _| c.immediate_neighbor_exchange(out, &bs, into, &br))?)
}

/// The blocks on the edges that lead somewhere (not `MPI_PROC_NULL`), with
/// their edges: nothing moves on the others.
fn on_edges(st: &State, buf: *const c_void, blocks: Blocks, edges: &[Edge]) -> R<(Vec<WBlock>, Vec<Edge>)> {
    let mut out = (Vec::new(), Vec::new());
    for ((d, count, dt), &e) in blocks.into_iter().zip(edges).filter(|(_, e)| e.peer.is_some()) {
        out.0.push(wblock(st, addr(buf.cast(), d), count, dt)?);
        out.1.push(e);
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn neighbor_allgather(
    st: &mut State,
    sendbuf: *const c_void,
    sendcount: impl Int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: impl Int,
    recvtype: Handle,
    comm: Handle,
) -> R<Staged> {
    // SAFETY: `sendbuf` holds `sendcount` elements of `sendtype` and `recvbuf` has room for `recvcount` elements of
    // `recvtype` per incoming neighbor (MPI 4.1 §8.6.1), both kept by the program until the operation completes (the
    // blocking form waits; §8.7, §8.8 otherwise): `start`'s `# Safety`.
    unsafe {
        start(
            st,
            comm,
            sendbuf,
            |_, n| same(n, sendcount, sendtype),
            recvbuf,
            |st, n| strided(st, n, recvcount, recvtype),
        )
    }
}
collective!(MPI_Neighbor_allgather / MPI_Ineighbor_allgather / MPI_Neighbor_allgather_init = neighbor_allgather(sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int, recvtype: Handle, comm: Handle) on comm);
collective!(MPI_Neighbor_allgather_c / MPI_Ineighbor_allgather_c / MPI_Neighbor_allgather_init_c = neighbor_allgather(sendbuf: *const c_void, sendcount: i64, sendtype: Handle, recvbuf: *mut c_void, recvcount: i64, recvtype: Handle, comm: Handle) on comm);

#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn neighbor_allgatherv(
    st: &mut State,
    sendbuf: *const c_void,
    sendcount: impl Int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: impl Into<Ints>,
    displs: impl Into<Ints>,
    recvtype: Handle,
    comm: Handle,
) -> R<Staged> {
    // SAFETY: `recvcounts` and `displs` hold one value per incoming neighbor, read within this call by `varied`, and
    // `sendbuf` holds `sendcount` elements of `sendtype` and `recvbuf` the blocks the arrays name (MPI 4.1 §8.6.1),
    // kept by the program until the operation completes (the blocking form waits; §8.7, §8.8 otherwise): `start`'s and
    // `varied`'s `# Safety`.
    unsafe {
        start(
            st,
            comm,
            sendbuf,
            |_, n| same(n, sendcount, sendtype),
            recvbuf,
            |st, n| varied(st, n, recvcounts, displs, recvtype, "recv"),
        )
    }
}
collective!(MPI_Neighbor_allgatherv / MPI_Ineighbor_allgatherv / MPI_Neighbor_allgatherv_init = neighbor_allgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: Handle, comm: Handle) on comm);
collective!(MPI_Neighbor_allgatherv_c / MPI_Ineighbor_allgatherv_c / MPI_Neighbor_allgatherv_init_c = neighbor_allgatherv(sendbuf: *const c_void, sendcount: i64, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const i64, displs: *const isize, recvtype: Handle, comm: Handle) on comm);

#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn neighbor_alltoall(
    st: &mut State,
    sendbuf: *const c_void,
    sendcount: impl Int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: impl Int,
    recvtype: Handle,
    comm: Handle,
) -> R<Staged> {
    // SAFETY: `sendbuf` holds `sendcount` elements of `sendtype` per outgoing neighbor and `recvbuf` has room for
    // `recvcount` elements of `recvtype` per incoming one (MPI 4.1 §8.6.2), both kept by the program until the
    // operation completes (the blocking form waits; §8.7, §8.8 otherwise): `start`'s `# Safety`.
    unsafe {
        start(
            st,
            comm,
            sendbuf,
            |st, n| strided(st, n, sendcount, sendtype),
            recvbuf,
            |st, n| strided(st, n, recvcount, recvtype),
        )
    }
}
collective!(MPI_Neighbor_alltoall / MPI_Ineighbor_alltoall / MPI_Neighbor_alltoall_init = neighbor_alltoall(sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int, recvtype: Handle, comm: Handle) on comm);
collective!(MPI_Neighbor_alltoall_c / MPI_Ineighbor_alltoall_c / MPI_Neighbor_alltoall_init_c = neighbor_alltoall(sendbuf: *const c_void, sendcount: i64, sendtype: Handle, recvbuf: *mut c_void, recvcount: i64, recvtype: Handle, comm: Handle) on comm);

#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn neighbor_alltoallv(
    st: &mut State,
    sendbuf: *const c_void,
    sendcounts: impl Into<Ints>,
    sdispls: impl Into<Ints>,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: impl Into<Ints>,
    rdispls: impl Into<Ints>,
    recvtype: Handle,
    comm: Handle,
) -> R<Staged> {
    // SAFETY: `sendcounts` and `sdispls` hold one value per outgoing neighbor and `recvcounts` and `rdispls` one per
    // incoming neighbor, read within this call by `varied`, and the buffers hold the blocks they name (MPI 4.1 §8.6.2),
    // kept by the program until the operation completes (the blocking form waits; §8.7, §8.8 otherwise): `start`'s and
    // `varied`'s `# Safety`.
    unsafe {
        start(
            st,
            comm,
            sendbuf,
            |st, n| varied(st, n, sendcounts, sdispls, sendtype, "send"),
            recvbuf,
            |st, n| varied(st, n, recvcounts, rdispls, recvtype, "recv"),
        )
    }
}
collective!(MPI_Neighbor_alltoallv / MPI_Ineighbor_alltoallv / MPI_Neighbor_alltoallv_init = neighbor_alltoallv(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: Handle, comm: Handle) on comm);
collective!(MPI_Neighbor_alltoallv_c / MPI_Ineighbor_alltoallv_c / MPI_Neighbor_alltoallv_init_c = neighbor_alltoallv(sendbuf: *const c_void, sendcounts: *const i64, sdispls: *const isize, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const i64, rdispls: *const isize, recvtype: Handle, comm: Handle) on comm);

#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn neighbor_alltoallw(
    st: &mut State,
    sendbuf: *const c_void,
    sendcounts: impl Into<Ints>,
    sdispls: *const isize,
    sendtypes: *const Handle,
    recvbuf: *mut c_void,
    recvcounts: impl Into<Ints>,
    rdispls: *const isize,
    recvtypes: *const Handle,
    comm: Handle,
) -> R<Staged> {
    // SAFETY: the send arrays (counts, byte displacements, datatypes) hold one entry per outgoing neighbor and the
    // receive arrays one per incoming neighbor, read within this call by `typed`, and the buffers hold the blocks they
    // name (MPI 4.1 §8.6.2), kept by the program until the operation completes (the blocking form waits; §8.7, §8.8
    // otherwise): `start`'s and `typed`'s `# Safety`.
    unsafe {
        start(
            st,
            comm,
            sendbuf,
            |_, n| typed(n, sendcounts, sdispls, sendtypes, "send"),
            recvbuf,
            |_, n| typed(n, recvcounts, rdispls, recvtypes, "recv"),
        )
    }
}
collective!(MPI_Neighbor_alltoallw / MPI_Ineighbor_alltoallw / MPI_Neighbor_alltoallw_init = neighbor_alltoallw(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const isize, sendtypes: *const Handle, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const isize, recvtypes: *const Handle, comm: Handle) on comm);
collective!(MPI_Neighbor_alltoallw_c / MPI_Ineighbor_alltoallw_c / MPI_Neighbor_alltoallw_init_c = neighbor_alltoallw(sendbuf: *const c_void, sendcounts: *const i64, sdispls: *const isize, sendtypes: *const Handle, recvbuf: *mut c_void, recvcounts: *const i64, rdispls: *const isize, recvtypes: *const Handle, comm: Handle) on comm);
