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
use crate::count::{Int, Ints};
use crate::datatype::Span;
use crate::*;
use mpi::staged::inter;

/// `comm`, which must be an intercommunicator.
fn inter_comm(st: &State, comm: Handle) -> R<&mpi::SimpleCommunicator> {
    let c = &st.comm(comm)?.comm;
    if !c.is_inter() {
        return Err(Fail::new(MPI_ERR_COMM, format!("{comm:#x} is an intracommunicator, not an intercommunicator")));
    }
    Ok(c)
}

/// The root argument of a rooted collective on intercommunicator `c`
/// (`InterRoot::from_arg`).
pub(crate) fn root_arg(c: &mpi::SimpleCommunicator, root: c_int) -> R<InterRoot> {
    Ok(InterRoot::from_arg(c, root)?)
}

/// The blocks of one process each: a v-collective's `(counts, displs)`
/// arrays, or `n` blocks of `count` elements one after another.
///
/// # Safety
/// Both arrays of `v` hold `n` values.
unsafe fn per_process(v: Option<(Ints, Ints)>, count: impl Int, n: usize) -> R<(Vec<c_int>, Vec<c_int>)> {
    let count = count.int("count")?;
    Ok(match v {
        // SAFETY: `cs` and `ds` hold one count and displacement per remote process (MPI 4.1 §6.5);
        // `read` refuses null pointers.
        Some((cs, ds)) => unsafe { (cs.read(n as c_int, "counts")?, ds.read(n as c_int, "displs")?) },
        None => (vec![count; n], (0..n as c_int).map(|i| i * count).collect()),
    })
}

/// The blocks of `buf` for each remote process: the v-arrays `v`, or
/// `count` each (`fill`: staged with their current values, to be sent).
///
/// # Safety
/// The arrays hold one value per remote process; `buf` holds the blocks.
unsafe fn blocks_of(
    st: &State,
    buf: *const c_void,
    v: Option<(Ints, Ints)>,
    count: impl Int,
    dt: Handle,
    n: usize,
    fill: bool,
) -> R<mpi::staged::Blocks> {
    // SAFETY: the arrays of `v`, if any, hold `n` values (one per remote process) and `buf` holds the blocks they (or
    // `count`) name, for this call (`blocks_of`'s `# Safety`): what `per_process` and `State::blocks` require. The
    // caller runs the operation made of the blocks to completion within the MPI call.
    unsafe {
        let (counts, displs) = per_process(v, count, n)?;
        st.blocks(buf.cast_mut(), &counts, &displs, dt, fill)
    }
}

pub(crate) fn barrier(st: &mut State, comm: Handle) -> R<()> {
    Ok(inter_comm(st, comm)?.barrier()?)
}

/// # Safety
/// `buffer` holds `count` elements of `datatype` for the call (read at the root, written in the other
/// group).
pub(crate) unsafe fn bcast(
    st: &mut State,
    buffer: *mut c_void,
    count: impl Int,
    datatype: Handle,
    root: c_int,
    comm: Handle,
) -> R<()> {
    let c = inter_comm(st, comm)?;
    let root = root_arg(c, root)?;
    if root == InterRoot::Idle {
        return Ok(());
    }
    // SAFETY: `buffer` holds `count` elements of `datatype`, readable at the root and writable in the other group, for
    // this call (`bcast`'s `# Safety`, MPI 4.1 §6.4); this branch is not reached by an idle process (MPI_PROC_NULL):
    // what `inter::bcast` requires.
    Ok(unsafe { inter::bcast(c, root, buffer.cast(), &st.span(count, datatype)?) }?)
}

/// The remote group's size on intercommunicator `c`.
fn remote_size(c: &mpi::SimpleCommunicator) -> usize {
    c.remote_members().map_or(0, |m| m.len())
}

/// `MPI_Gather` (`v` `None`) and `MPI_Gatherv`.
///
/// # Safety
/// At the root, `v`'s arrays hold one value per remote process and `recvbuf` the blocks they (or
/// `recvcount`) name; in the other group, `sendbuf` holds `sendcount` elements; for the call.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
pub(crate) unsafe fn gather(
    st: &mut State,
    sendbuf: *const c_void,
    sendcount: impl Int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: impl Int,
    v: Option<(Ints, Ints)>,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> R<()> {
    let c = inter_comm(st, comm)?;
    // SAFETY: only the arguments significant here (MPI 4.1 §6.5) are used, each valid for this call (`gather`'s
    // `# Safety`): at the root, `recvbuf` with the blocks of `recvcount` (or `v`'s arrays, one value per remote
    // process); in the other group, `sendbuf` with `sendcount` elements of `sendtype`. That is `blocks_of`'s and
    // `inter::gather`'s requirement.
    Ok(unsafe {
        match root_arg(c, root)? {
            InterRoot::Idle => return Ok(()),
            InterRoot::Here => {
                let recv = blocks_of(st, recvbuf, v, recvcount, recvtype, remote_size(c), false)?;
                inter::gather(c, InterRoot::Here, (std::ptr::null(), &Span::bytes(0)), Some(recv))
            }
            r => inter::gather(c, r, (sendbuf.cast(), &st.span(sendcount, sendtype)?), None),
        }
    }?)
}

/// `MPI_Scatter` (`v` `None`) and `MPI_Scatterv`.
///
/// # Safety
/// At the root, `v`'s arrays hold one value per remote process and `sendbuf` the blocks they (or
/// `sendcount`) name; in the other group, `recvbuf` has room for `recvcount` elements; for the call.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
pub(crate) unsafe fn scatter(
    st: &mut State,
    sendbuf: *const c_void,
    sendcount: impl Int,
    v: Option<(Ints, Ints)>,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: impl Int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> R<()> {
    let c = inter_comm(st, comm)?;
    // SAFETY: only the arguments significant here (MPI 4.1 §6.6) are used, each valid for this call (`scatter`'s
    // `# Safety`): at the root, `sendbuf` with the blocks of `sendcount` (or `v`'s arrays, one value per remote
    // process), only read; in the other group, `recvbuf` with room for `recvcount` elements of `recvtype`. That is
    // `blocks_of`'s and `inter::scatter`'s requirement.
    Ok(unsafe {
        match root_arg(c, root)? {
            InterRoot::Idle => return Ok(()),
            InterRoot::Here => {
                let send = blocks_of(st, sendbuf, v, sendcount, sendtype, remote_size(c), true)?;
                inter::scatter(c, InterRoot::Here, Some(send), (std::ptr::null_mut(), &Span::bytes(0)))
            }
            r => inter::scatter(c, r, None, (recvbuf.cast(), &st.span(recvcount, recvtype)?)),
        }
    }?)
}

/// `MPI_Allgather` (`v` `None`) and `MPI_Allgatherv`.
///
/// # Safety
/// `sendbuf` holds `sendcount` elements; `v`'s arrays hold one value per remote process and `recvbuf` the
/// blocks they (or `recvcount`) name; for the call.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
pub(crate) unsafe fn allgather(
    st: &mut State,
    sendbuf: *const c_void,
    sendcount: impl Int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: impl Int,
    v: Option<(Ints, Ints)>,
    recvtype: Handle,
    comm: Handle,
) -> R<()> {
    let c = inter_comm(st, comm)?;
    // SAFETY: `sendbuf` holds `sendcount` elements of `sendtype`, and `recvbuf` the blocks of `recvcount` (or `v`'s
    // arrays, one value per remote process), for this call (`allgather`'s `# Safety`, MPI 4.1 §6.7): what `blocks_of`
    // and `inter::allgather` require.
    Ok(unsafe {
        let recv = blocks_of(st, recvbuf, v, recvcount, recvtype, remote_size(c), false)?;
        inter::allgather(c, sendbuf.cast(), &st.span(sendcount, sendtype)?, recv)
    }?)
}

/// `MPI_Alltoall` (`v` `None`) and `MPI_Alltoallv`.
///
/// # Safety
/// `sv`'s and `rv`'s arrays hold one value per remote process, and `sendbuf` and `recvbuf` the blocks they
/// (or the counts) name; for the call.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
pub(crate) unsafe fn alltoall(
    st: &mut State,
    sendbuf: *const c_void,
    sendcount: impl Int,
    sv: Option<(Ints, Ints)>,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: impl Int,
    rv: Option<(Ints, Ints)>,
    recvtype: Handle,
    comm: Handle,
) -> R<()> {
    let c = inter_comm(st, comm)?;
    let n = remote_size(c);
    // SAFETY: `sendbuf` holds the send blocks (only read) and `recvbuf` the receive blocks, each of its count (or its
    // `v` arrays, one value per remote process), for this call (`alltoall`'s `# Safety`, MPI 4.1 §6.8): what
    // `blocks_of` and `inter::alltoall` require.
    Ok(unsafe {
        let send = blocks_of(st, sendbuf, sv, sendcount, sendtype, n, true)?;
        inter::alltoall(c, send, blocks_of(st, recvbuf, rv, recvcount, recvtype, n, false)?)
    }?)
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
        let h = crate::comm_table::register(st, Some(c), local_comm)?;
        // SAFETY: `newintercomm` is not null (checked above) and is MPI_Intercomm_create's out-argument (MPI 4.1
        // §7.6.2), valid for writing one handle for this call.
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
        // SAFETY: `stringtag` is MPI_Intercomm_create_from_groups' string tag (MPI 4.1 §7.6.2), a NUL-terminated string
        // readable for this call, or null: `from_group_args`' `# Safety`.
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
        let h = crate::comm_table::register(st, Some(c), MPI_COMM_WORLD)?;
        let session = st.session_groups.get(&local_group).copied();
        if let Some(e) = st.comms.get_mut(&h) {
            e.errhandler = errhandler;
            e.session = session;
        }
        // SAFETY: `newintercomm` is not null (checked above) and is MPI_Intercomm_create_from_groups' out-argument,
        // valid for writing one handle for this call.
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
        let h = crate::comm_table::register(st, Some(c), intercomm)?;
        // SAFETY: `newintracomm` is not null (checked above) and is MPI_Intercomm_merge's out-argument (MPI 4.1
        // §7.6.2), valid for writing one handle for this call.
        unsafe { newintracomm.write(h) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_remote_size(comm: Handle, size: *mut c_int) -> c_int {
    with_state("MPI_Comm_remote_size", comm, |st| {
        let n = remote_size(inter_comm(st, comm)?) as c_int;
        // SAFETY: `size` is MPI_Comm_remote_size's out-argument (MPI 4.1 §7.6.1), null or valid for writing one `int`
        // for this call; `put` refuses null.
        unsafe { put(size, n, "size") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_remote_group(comm: Handle, group: *mut Handle) -> c_int {
    with_state("MPI_Comm_remote_group", comm, |st| {
        let members = inter_comm(st, comm)?.remote_members().unwrap_or_default().to_vec();
        // SAFETY: `group` is MPI_Comm_remote_group's out-argument (MPI 4.1 §7.6.1), null or valid for writing one group
        // handle for this call; `new_group` refuses null.
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
