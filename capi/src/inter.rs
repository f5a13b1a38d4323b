//! Intercommunicators (MPI 4.1 §7.6): `MPI_Intercomm_create`,
//! `MPI_Intercomm_create_from_groups`, `MPI_Intercomm_merge`, the remote
//! group's queries, and the blocking collectives on an intercommunicator
//! (§6.2.2), over the mpi crate's [`mpi::inter`]. Point-to-point, split
//! and `MPI_Comm_create` need nothing here: the mpi crate addresses the
//! remote group and splits both groups. The non-blocking collectives
//! (and the scans, which MPI does not define on an intercommunicator)
//! are refused there with `MPI_ERR_UNSUPPORTED_OPERATION`.

use std::ffi::{c_int, c_void};

use mpi::inter::InterRoot;
use mpi::traits::Communicator;

use crate::abi::*;
use crate::datatype::{incoming, outgoing};
use crate::*;

/// `comm`, which must be an intercommunicator.
fn inter_comm(st: &State, comm: Handle) -> R<&mpi::SimpleCommunicator> {
    let c = &st.comm(comm)?.comm;
    if !c.is_inter() {
        return Err(Fail::new(MPI_ERR_COMM, format!("{comm:#x} is an intracommunicator, not an intercommunicator")));
    }
    Ok(c)
}

/// The root argument of a rooted collective on intercommunicator `c`.
pub(crate) fn root_arg(c: &mpi::SimpleCommunicator, root: c_int) -> R<InterRoot> {
    let remote = c.remote_members().map_or(0, |m| m.len()) as c_int;
    match root {
        MPI_ROOT => Ok(InterRoot::Here),
        MPI_PROC_NULL => Ok(InterRoot::Idle),
        r if (0..remote).contains(&r) => Ok(InterRoot::Remote(r)),
        r => Err(Fail::new(
            MPI_ERR_ROOT,
            format!("root {r} is not MPI_ROOT, MPI_PROC_NULL or a rank of the remote group of {remote}"),
        )),
    }
}

/// Split `bytes` into the blocks at byte `(displs[i], counts[i])`, which
/// must not overlap (they are written).
fn split_mut<'a>(bytes: &'a mut [u8], counts: &[mpi::Count], displs: &[mpi::Count]) -> R<Vec<&'a mut [u8]>> {
    let mut order: Vec<usize> = (0..counts.len()).collect();
    order.sort_by_key(|&i| displs[i]);
    let mut out: Vec<Option<&'a mut [u8]>> = (0..counts.len()).map(|_| None).collect();
    let (mut rest, mut at) = (bytes, 0usize);
    for i in order {
        let (d, n) = (displs[i] as usize, counts[i] as usize);
        if d < at && n > 0 {
            return Err(Fail::new(MPI_ERR_BUFFER, "two receive blocks overlap"));
        }
        let skip = d.saturating_sub(at).min(rest.len());
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(skip);
        if n > tail.len() {
            return Err(Fail::new(MPI_ERR_BUFFER, "a receive block lies outside the buffer"));
        }
        let (block, tail) = tail.split_at_mut(n);
        out[i] = Some(block);
        rest = tail;
        at = at.max(d) + n;
    }
    Ok(out.into_iter().map(|b| b.unwrap_or(&mut [])).collect())
}

/// The blocks of one process each: a v-collective's `(counts, displs)`
/// arrays, or `n` blocks of `count` elements one after another.
///
/// # Safety
/// Both arrays of `v` hold `n` values.
unsafe fn per_process(v: Option<(*const c_int, *const c_int)>, count: c_int, n: usize) -> R<(Vec<c_int>, Vec<c_int>)> {
    Ok(match v {
        // SAFETY: `cs` and `ds` hold one count and displacement per remote process (MPI 4.1 §6.5);
        // `array` refuses null pointers.
        Some((cs, ds)) => unsafe {
            (crate::datatype::array(cs, n, "counts")?.to_vec(), crate::datatype::array(ds, n, "displs")?.to_vec())
        },
        None => (vec![count; n], (0..n as c_int).map(|i| i * count).collect()),
    })
}

/// Receive blocks of `counts`/`displs` elements into `buf` with `body`,
/// then unpack them.
///
/// # Safety
/// `buf` holds the blocks; the arrays hold one value per remote process.
unsafe fn receive_blocks(
    st: &State,
    buf: *mut c_void,
    counts: &[c_int],
    displs: &[c_int],
    dt: Handle,
    body: impl FnOnce(&mut [&mut [u8]]) -> R<()>,
) -> R<()> {
    // SAFETY: `buf` holds the blocks `counts` and `displs` name, writable for this call (this
    // function's contract).
    let mut b = unsafe { st.blocks(buf, counts, displs, dt, false)? };
    // SAFETY: the caller's bytes or a staging buffer, for this call.
    let bytes = unsafe { b.inc.bytes() };
    let mut blocks = split_mut(bytes, &b.counts, &b.displs)?;
    body(&mut blocks)?;
    let n = b.inc.len as u64;
    // SAFETY: `buf` is the caller's, writable.
    unsafe { b.inc.finish(n) };
    Ok(())
}

/// Receive `count` elements of `dt` into `buf` with `body`, then unpack them.
///
/// # Safety
/// `buf` has room for them.
unsafe fn receive_one(
    st: &State,
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    body: impl FnOnce(&mut [u8]) -> R<()>,
) -> R<()> {
    // SAFETY: `buf` holds `count` elements of `dt`, writable for this call (this function's
    // contract).
    let mut inc = unsafe { incoming(buf.cast(), &st.span(count, dt)?, "recvbuf", false)? };
    // SAFETY: the caller's bytes or a staging buffer, for this call.
    body(unsafe { inc.bytes() })?;
    let n = inc.len as u64;
    // SAFETY: `buf` is still the caller's, writable, for this call: the staged bytes go into its
    // elements.
    unsafe { inc.finish(n) };
    Ok(())
}

/// The bytes of `count` elements of `dt` at `buf`.
///
/// # Safety
/// `buf` holds them.
unsafe fn sent<'a>(st: &State, buf: *const c_void, count: c_int, dt: Handle) -> R<std::borrow::Cow<'a, [u8]>> {
    // SAFETY: `buf` holds `count` elements of `dt`, readable for this call (this function's
    // contract).
    Ok(unsafe { outgoing(buf.cast(), &st.span(count, dt)?, "sendbuf") }?)
}

/// Packed bytes, and each block's `(offset, length)` in them.
type Packed = (Vec<u8>, Vec<(usize, usize)>);

/// Blocks of `counts`/`displs` elements of `dt` at `buf`, packed.
///
/// # Safety
/// `buf` holds them.
unsafe fn sent_blocks(st: &State, buf: *const c_void, counts: &[c_int], displs: &[c_int], dt: Handle) -> R<Packed> {
    // SAFETY: the caller's contract; `fill` copies the current values.
    let mut b = unsafe { st.blocks(buf.cast_mut(), counts, displs, dt, true)? };
    // SAFETY: as above, read only.
    let bytes = unsafe { b.inc.bytes() }.to_vec();
    let parts = b.displs.iter().zip(&b.counts).map(|(&d, &c)| (d as usize, c as usize)).collect();
    Ok((bytes, parts))
}

pub(crate) fn barrier(st: &mut State, comm: Handle) -> R<()> {
    Ok(inter_comm(st, comm)?.barrier()?)
}

/// # Safety
/// The standard's contract on `buffer`.
pub(crate) unsafe fn bcast(
    st: &mut State,
    buffer: *mut c_void,
    count: c_int,
    datatype: Handle,
    root: c_int,
    comm: Handle,
) -> R<()> {
    let c = inter_comm(st, comm)?;
    match root_arg(c, root)? {
        InterRoot::Idle => Ok(()),
        InterRoot::Here => {
            // SAFETY: at the root `buffer` holds `count` elements of `datatype` for this call
            // (§6.4).
            let mut data = unsafe { sent(st, buffer, count, datatype)? }.into_owned();
            Ok(c.inter_broadcast(InterRoot::Here, &mut data)?)
        }
        // SAFETY: in the other group `buffer` has room for `count` elements of `datatype` for this
        // call (§6.4).
        r => unsafe { receive_one(st, buffer, count, datatype, |b| Ok(c.inter_broadcast(r, b)?)) },
    }
}

/// The remote group's size on intercommunicator `c`.
fn remote_size(c: &mpi::SimpleCommunicator) -> usize {
    c.remote_members().map_or(0, |m| m.len())
}

/// `MPI_Gather` (`counts` `None`) and `MPI_Gatherv`.
///
/// # Safety
/// The standard's contract on the buffers and arrays.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
pub(crate) unsafe fn gather(
    st: &mut State,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    v: Option<(*const c_int, *const c_int)>,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> R<()> {
    let c = inter_comm(st, comm)?;
    let n = remote_size(c);
    match root_arg(c, root)? {
        InterRoot::Idle => Ok(()),
        InterRoot::Here => {
            // SAFETY: the caller's contract on the arrays.
            let (counts, displs) = unsafe { per_process(v, recvcount, n)? };
            // SAFETY: at the root `recvbuf` holds the blocks `recvcounts` and `displs` name, for
            // this call (§6.5).
            unsafe {
                receive_blocks(st, recvbuf, &counts, &displs, recvtype, |b| {
                    Ok(c.inter_gather(InterRoot::Here, &[], b)?)
                })
            }
        }
        r => {
            // SAFETY: `sendbuf` holds `sendcount` elements of `sendtype` for this call (§6.5).
            let data = unsafe { sent(st, sendbuf, sendcount, sendtype)? };
            Ok(c.inter_gather(r, &data, &mut [])?)
        }
    }
}

/// `MPI_Scatter` (`v` `None`) and `MPI_Scatterv`.
///
/// # Safety
/// The standard's contract on the buffers and arrays.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
pub(crate) unsafe fn scatter(
    st: &mut State,
    sendbuf: *const c_void,
    sendcount: c_int,
    v: Option<(*const c_int, *const c_int)>,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> R<()> {
    let c = inter_comm(st, comm)?;
    let n = remote_size(c);
    match root_arg(c, root)? {
        InterRoot::Idle => Ok(()),
        InterRoot::Here => {
            // SAFETY: the caller's contract on the arrays.
            let (counts, displs) = unsafe { per_process(v, sendcount, n)? };
            // SAFETY: at the root `sendbuf` holds the blocks `sendcounts` and `displs` name, for
            // this call (§6.6).
            let (bytes, parts) = unsafe { sent_blocks(st, sendbuf, &counts, &displs, sendtype)? };
            let blocks: Vec<&[u8]> = parts.iter().map(|&(d, l)| &bytes[d..d + l]).collect();
            Ok(c.inter_scatter(InterRoot::Here, &blocks, &mut [])?)
        }
        // SAFETY: `recvbuf` has room for `recvcount` elements of `recvtype` for this call (§6.6).
        r => unsafe { receive_one(st, recvbuf, recvcount, recvtype, |b| Ok(c.inter_scatter(r, &[], b)?)) },
    }
}

/// `MPI_Allgather` (`v` `None`) and `MPI_Allgatherv`.
///
/// # Safety
/// The standard's contract on the buffers and arrays.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
pub(crate) unsafe fn allgather(
    st: &mut State,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    v: Option<(*const c_int, *const c_int)>,
    recvtype: Handle,
    comm: Handle,
) -> R<()> {
    let c = inter_comm(st, comm)?;
    let n = remote_size(c);
    // SAFETY: the caller's contract on the arrays.
    let (counts, displs) = unsafe { per_process(v, recvcount, n)? };
    // SAFETY: `sendbuf` holds `sendcount` elements of `sendtype` for this call (§6.7).
    let data = unsafe { sent(st, sendbuf, sendcount, sendtype)? };
    // SAFETY: `recvbuf` holds a block per remote process as `counts` and `displs` say, for this
    // call (§6.7).
    unsafe { receive_blocks(st, recvbuf, &counts, &displs, recvtype, |b| Ok(c.inter_all_gather(&data, b)?)) }
}

/// `MPI_Alltoall` (`v` `None`) and `MPI_Alltoallv`.
///
/// # Safety
/// The standard's contract on the buffers and arrays.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
pub(crate) unsafe fn alltoall(
    st: &mut State,
    sendbuf: *const c_void,
    sendcount: c_int,
    sv: Option<(*const c_int, *const c_int)>,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    rv: Option<(*const c_int, *const c_int)>,
    recvtype: Handle,
    comm: Handle,
) -> R<()> {
    let c = inter_comm(st, comm)?;
    let n = remote_size(c);
    // SAFETY: the caller's contract on the arrays.
    let ((scounts, sdispls), (rcounts, rdispls)) =
        unsafe { (per_process(sv, sendcount, n)?, per_process(rv, recvcount, n)?) };
    // SAFETY: `sendbuf` holds a block per remote process as `scounts` and `sdispls` say, for this
    // call (§6.8).
    let (bytes, parts) = unsafe { sent_blocks(st, sendbuf, &scounts, &sdispls, sendtype)? };
    let blocks: Vec<&[u8]> = parts.iter().map(|&(d, l)| &bytes[d..d + l]).collect();
    // SAFETY: `recvbuf` holds a block per remote process as `rcounts` and `rdispls` say, for this
    // call (§6.8).
    unsafe { receive_blocks(st, recvbuf, &rcounts, &rdispls, recvtype, |b| Ok(c.inter_all_to_all(&blocks, b)?)) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Intercomm_create(
    local_comm: Handle,
    local_leader: c_int,
    peer_comm: Handle,
    remote_leader: c_int,
    tag: c_int,
    newintercomm: *mut Handle,
) -> c_int {
    with_state("MPI_Intercomm_create", local_comm, |st| {
        if newintercomm.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "newintercomm is a null pointer"));
        }
        let local = &st.comm(local_comm)?.comm;
        // The peer communicator matters only at the leaders (§7.6.2).
        let peer = if local.rank() == local_leader { &st.comm(peer_comm)?.comm } else { local };
        let c = local.create_intercomm(local_leader, peer, remote_leader, tag)?;
        let h = crate::env::register(st, Some(c), local_comm)?;
        // SAFETY: checked non-null; the standard's contract.
        unsafe { newintercomm.write(h) };
        Ok(())
    })
}

/// `MPI_Intercomm_create_from_groups` (§7.6.2, MPI 4.0): an
/// intercommunicator between two disjoint groups, made without a parent
/// communicator; `stringtag` tells concurrent creations apart. Groups
/// here name `MPI_COMM_WORLD`'s processes, so the local group's
/// communicator is made as `MPI_Comm_create_from_group` makes it, and
/// the leaders meet through `MPI_COMM_WORLD`, as `MPI_Intercomm_create`'s
/// leaders meet through its peer communicator.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
pub unsafe extern "C" fn MPI_Intercomm_create_from_groups(
    local_group: Handle,
    local_leader: c_int,
    remote_group: Handle,
    remote_leader: c_int,
    stringtag: *const std::ffi::c_char,
    info: Handle,
    errhandler: Handle,
    newintercomm: *mut Handle,
) -> c_int {
    with_state("MPI_Intercomm_create_from_groups", MPI_COMM_WORLD, |st| {
        if newintercomm.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "newintercomm is a null pointer"));
        }
        // SAFETY: the standard's contract on `stringtag`.
        let tag = unsafe { crate::group::from_group_args(st, stringtag, info, errhandler)? };
        let ranks = crate::group::ranks_in(st, MPI_COMM_WORLD, local_group)?;
        let remote = st.group(remote_group)?.members();
        let leader_at = |n: usize, r: c_int, which: &str| {
            usize::try_from(r).ok().filter(|&r| r < n).ok_or_else(|| {
                Fail::new(MPI_ERR_RANK, format!("{which} {r} is not a rank of its group of {n} processes"))
            })
        };
        leader_at(ranks.len(), local_leader, "local_leader")?;
        let them = remote[leader_at(remote.len(), remote_leader, "remote_leader")?] as c_int;
        let world = &st.comm(MPI_COMM_WORLD)?.comm;
        let local = world.create_from_ranks(&ranks, tag)?.ok_or_else(|| {
            Fail::new(MPI_ERR_GROUP, "this process is not in local_group; only the groups' members call this")
        })?;
        let c = local.create_intercomm(local_leader, world, them, tag)?;
        let h = crate::env::register(st, Some(c), MPI_COMM_WORLD)?;
        if let Some(e) = st.comms.get_mut(&h) {
            e.errhandler = errhandler;
        }
        // SAFETY: checked non-null; the standard's contract.
        unsafe { newintercomm.write(h) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Intercomm_merge(intercomm: Handle, high: c_int, newintracomm: *mut Handle) -> c_int {
    with_state("MPI_Intercomm_merge", intercomm, |st| {
        if newintracomm.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "newintracomm is a null pointer"));
        }
        let c = inter_comm(st, intercomm)?.merge(high != 0)?;
        let h = crate::env::register(st, Some(c), intercomm)?;
        // SAFETY: checked non-null; the standard's contract.
        unsafe { newintracomm.write(h) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_remote_size(comm: Handle, size: *mut c_int) -> c_int {
    with_state("MPI_Comm_remote_size", comm, |st| {
        let n = remote_size(inter_comm(st, comm)?) as c_int;
        // SAFETY: the standard's contract on `size`.
        unsafe { put(size, n, "size") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_remote_group(comm: Handle, group: *mut Handle) -> c_int {
    with_state("MPI_Comm_remote_group", comm, |st| {
        let members = inter_comm(st, comm)?.remote_members().unwrap_or_default().to_vec();
        // SAFETY: the standard's contract on `group`.
        unsafe { st.new_group(mpi::group::Group::from_job_ranks(members), group) }
    })
}

/// The check every collective makes first: an intercommunicator gets
/// the blocking collectives above only.
pub(crate) fn refuse_inter(st: &State, comm: Handle, call: &str) -> R<()> {
    if st.comm(comm).is_ok_and(|e| e.comm.is_inter()) {
        return Err(Fail::new(
            MPI_ERR_UNSUPPORTED_OPERATION,
            format!("{call} on an intercommunicator is not in this library: it has the blocking collectives there (MPI defines no scans on one)"),
        ));
    }
    Ok(())
}

/// Whether `comm` is an intercommunicator.
pub(crate) fn is_inter(st: &State, comm: Handle) -> bool {
    st.comm(comm).is_ok_and(|e| e.comm.is_inter())
}
