//! The v-collectives (MPI 4.1 §6.5-6.8): a count and displacement per
//! process, and `MPI_Alltoallw`'s datatype per process.

use super::*;

/// A v-collective's blocks of `buf`: one count and displacement per
/// process (`fill`: staged with their current values).
///
/// # Safety
/// The arrays hold `n` values; `buf` holds the blocks they name.
unsafe fn v_blocks(
    st: &State,
    buf: *mut c_void,
    counts: impl Into<Ints>,
    displs: impl Into<Ints>,
    dt: Handle,
    n: c_int,
    fill: bool,
) -> R<Blocks> {
    // SAFETY: `counts` and `displs` hold `n` values each and `buf` holds the blocks they name (`v_blocks`' `# Safety`):
    // what `per_rank` and `State::blocks` require.
    unsafe { st.blocks(buf, &per_rank(counts, n, "counts")?, &per_rank(displs, n, "displs")?, dt, fill) }
}

#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn gatherv(
    st: &mut State,
    sendbuf: *const c_void,
    sendcount: impl Int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: impl Into<Ints>,
    displs: impl Into<Ints>,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> R<Staged> {
    let (c, at_root) = rooted(st, comm, root)?;
    // SAFETY: only what is significant here (MPI 4.1 §6.5) is used: off the root, `sendbuf` holds `sendcount` elements
    // of `sendtype`; at the root, `recvcounts` and `displs` hold one value per process, `recvbuf` the blocks they name,
    // and `sendbuf` is MPI_IN_PLACE or holds its elements. The buffers stay valid until the operation completes (the
    // blocking form waits; §6.12, §6.13 otherwise): what `sc::igather`, `v_blocks` and `sc::igatherv_root` require.
    Ok(unsafe {
        if !at_root {
            sc::igather(c, root, sendbuf.cast(), &st.span(sendcount, sendtype)?, true)
        } else {
            let recv = v_blocks(st, recvbuf, recvcounts, displs, recvtype, c.size(), in_place(sendbuf))?;
            sc::igatherv_root(c, send_arg(st, sendbuf, sendcount, sendtype)?, recv)
        }
    }?)
}
collective!(MPI_Gatherv / MPI_Igatherv / MPI_Gatherv_init = gatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: Handle, root: c_int, comm: Handle) on comm, inter = |st| crate::inter::gather(st, sendbuf, sendcount, sendtype, recvbuf, 0, Some((recvcounts.into(), displs.into())), recvtype, root, comm));
collective!(MPI_Gatherv_c / MPI_Igatherv_c / MPI_Gatherv_init_c = gatherv(sendbuf: *const c_void, sendcount: i64, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const i64, displs: *const isize, recvtype: Handle, root: c_int, comm: Handle) on comm, inter = |st| crate::inter::gather(st, sendbuf, sendcount, sendtype, recvbuf, 0, Some((recvcounts.into(), displs.into())), recvtype, root, comm));

#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn scatterv(
    st: &mut State,
    sendbuf: *const c_void,
    sendcounts: impl Into<Ints>,
    displs: impl Into<Ints>,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: impl Int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> R<Staged> {
    let (c, at_root) = rooted(st, comm, root)?;
    // SAFETY: only what is significant here (MPI 4.1 §6.6) is used: off the root, `recvbuf` has room for `recvcount`
    // elements of `recvtype`; at the root, `sendcounts` and `displs` hold one value per process, `sendbuf` the blocks
    // they name, which are only read (`fill`; the `cast_mut` is never written through), and `recvbuf` is MPI_IN_PLACE
    // or has room for its elements. The buffers stay valid until the operation completes (the blocking form waits;
    // §6.12, §6.13 otherwise): what `sc::iscatter`, `v_blocks` and `sc::iscatterv_root` require.
    Ok(unsafe {
        if !at_root {
            sc::iscatter(c, root, recvbuf.cast(), &st.span(recvcount, recvtype)?, true)
        } else {
            let send = v_blocks(st, sendbuf.cast_mut(), sendcounts, displs, sendtype, c.size(), true)?;
            sc::iscatterv_root(c, send, recv_arg(st, recvbuf, recvcount, recvtype)?)
        }
    }?)
}
collective!(MPI_Scatterv / MPI_Iscatterv / MPI_Scatterv_init = scatterv(sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int, sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int, recvtype: Handle, root: c_int, comm: Handle) on comm, inter = |st| crate::inter::scatter(st, sendbuf, 0, Some((sendcounts.into(), displs.into())), sendtype, recvbuf, recvcount, recvtype, root, comm));
collective!(MPI_Scatterv_c / MPI_Iscatterv_c / MPI_Scatterv_init_c = scatterv(sendbuf: *const c_void, sendcounts: *const i64, displs: *const isize, sendtype: Handle, recvbuf: *mut c_void, recvcount: i64, recvtype: Handle, root: c_int, comm: Handle) on comm, inter = |st| crate::inter::scatter(st, sendbuf, 0, Some((sendcounts.into(), displs.into())), sendtype, recvbuf, recvcount, recvtype, root, comm));

#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn allgatherv(
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
    let c = &st.comm(comm)?.comm;
    // SAFETY: `recvcounts` and `displs` hold one value per process and `recvbuf` the blocks they name, and `sendbuf` is
    // MPI_IN_PLACE or holds `sendcount` elements of `sendtype` (MPI 4.1 §6.7); the buffers stay valid until the
    // operation completes (the blocking form waits; §6.12, §6.13 otherwise): what `v_blocks` and `sc::iallgatherv`
    // require.
    Ok(unsafe {
        let recv = v_blocks(st, recvbuf, recvcounts, displs, recvtype, c.size(), in_place(sendbuf))?;
        sc::iallgatherv(c, send_arg(st, sendbuf, sendcount, sendtype)?, recv)
    }?)
}
collective!(MPI_Allgatherv / MPI_Iallgatherv / MPI_Allgatherv_init = allgatherv(sendbuf: *const c_void, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: Handle, comm: Handle) on comm, inter = |st| crate::inter::allgather(st, sendbuf, sendcount, sendtype, recvbuf, 0, Some((recvcounts.into(), displs.into())), recvtype, comm));
collective!(MPI_Allgatherv_c / MPI_Iallgatherv_c / MPI_Allgatherv_init_c = allgatherv(sendbuf: *const c_void, sendcount: i64, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const i64, displs: *const isize, recvtype: Handle, comm: Handle) on comm, inter = |st| crate::inter::allgather(st, sendbuf, sendcount, sendtype, recvbuf, 0, Some((recvcounts.into(), displs.into())), recvtype, comm));

#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn alltoallv(
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
    let c = &st.comm(comm)?.comm;
    let n = c.size();
    // SAFETY: the four arrays hold one value per process and the buffers the blocks they name (the send side is not
    // read under MPI_IN_PLACE), MPI 4.1 §6.8; the send blocks are only read (`fill`; the `cast_mut` is never written
    // through); the buffers stay valid until the operation completes (the blocking form waits; §6.12, §6.13 otherwise):
    // what `v_blocks` and `sc::ialltoallv` require.
    Ok(unsafe {
        let recv = v_blocks(st, recvbuf, recvcounts, rdispls, recvtype, n, in_place(sendbuf))?;
        let send = match in_place(sendbuf) {
            true => None,
            false => Some(v_blocks(st, sendbuf.cast_mut(), sendcounts, sdispls, sendtype, n, true)?),
        };
        sc::ialltoallv(c, send, recv)
    }?)
}
collective!(MPI_Alltoallv / MPI_Ialltoallv / MPI_Alltoallv_init = alltoallv(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: Handle, comm: Handle) on comm, inter = |st| crate::inter::alltoall(st, sendbuf, 0, Some((sendcounts.into(), sdispls.into())), sendtype, recvbuf, 0, Some((recvcounts.into(), rdispls.into())), recvtype, comm));
collective!(MPI_Alltoallv_c / MPI_Ialltoallv_c / MPI_Alltoallv_init_c = alltoallv(sendbuf: *const c_void, sendcounts: *const i64, sdispls: *const isize, sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const i64, rdispls: *const isize, recvtype: Handle, comm: Handle) on comm, inter = |st| crate::inter::alltoall(st, sendbuf, 0, Some((sendcounts.into(), sdispls.into())), sendtype, recvbuf, 0, Some((recvcounts.into(), rdispls.into())), recvtype, comm));

/// One block of a w-style exchange: `count` elements of `dt` at `at`.
pub(crate) fn wblock(st: &State, at: *mut u8, count: c_int, dt: Handle) -> R<WBlock> {
    Ok(WBlock { at, layout: st.committed(dt)?, count: count_of(count)? })
}

/// Pack and stage `MPI_Alltoallw`'s blocks for `n` peers (the remote
/// group's size on an intercommunicator); displacements in bytes.
///
/// # Safety
/// The arrays hold `n` entries each (the send ones are not read under `MPI_IN_PLACE`); each send block
/// they name holds its elements for the call, and each receive block has room for its elements and is left
/// alone until the operation made of the result completes (MPI 4.1 §6.8).
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn wblocks(
    st: &State,
    n: c_int,
    sendbuf: *const c_void,
    sendcounts: impl Into<Ints>,
    sdispls: impl Into<Ints>,
    sendtypes: *const Handle,
    recvbuf: *mut c_void,
    recvcounts: impl Into<Ints>,
    rdispls: impl Into<Ints>,
    recvtypes: *const Handle,
) -> R<Wblocks> {
    // SAFETY: `recvcounts`, `rdispls` and `recvtypes` hold `n` entries each, one per process (per remote process on an
    // intercommunicator), as MPI 4.1 §6.8 requires of MPI_Alltoallw's caller (`wblocks`' `# Safety`); `per_rank` and
    // `types_per_rank` refuse null.
    let (rc, rd, rt) = unsafe {
        (
            per_rank(recvcounts, n, "recvcounts")?,
            per_rank(rdispls, n, "rdispls")?,
            types_per_rank(recvtypes, n, "recvtypes")?,
        )
    };
    let (sc, sd, stypes, sbuf) = if in_place(sendbuf) {
        (rc.clone(), rd.clone(), rt, recvbuf.cast_const())
    } else {
        // SAFETY: `sendcounts`, `sdispls` and `sendtypes` hold one entry per process (§6.8);
        // `per_rank` and `types_per_rank` refuse null pointers.
        unsafe {
            (
                per_rank(sendcounts, n, "sendcounts")?,
                per_rank(sdispls, n, "sdispls")?,
                types_per_rank(sendtypes, n, "sendtypes")?,
                sendbuf,
            )
        }
    };
    let at = |buf: *const c_void, d: c_int| crate::datatype::addr(buf.cast(), d as isize);
    let sends = (0..n as usize).map(|i| wblock(st, at(sbuf, sd[i]), sc[i], stypes[i])).collect::<R<Vec<_>>>()?;
    let recvs =
        (0..n as usize).map(|i| wblock(st, at(recvbuf.cast_const(), rd[i]), rc[i], rt[i])).collect::<R<Vec<_>>>()?;
    // SAFETY: each send block (at its byte displacement from `sendbuf`, or from `recvbuf` under MPI_IN_PLACE) holds its
    // elements for this call, and each receive block has room for its elements and is left alone until the operation
    // made of the result completes (`wblocks`' `# Safety`, MPI 4.1 §6.8): what `Wblocks::new` requires.
    Ok(unsafe { Wblocks::new(&sends, &recvs) }?)
}

/// `MPI_Alltoallw` (§6.8): a block per peer, each with its own count,
/// datatype and byte displacement. The blocks to send are packed into one
/// buffer and the received ones land in a staging buffer, unpacked into
/// their places at completion; the bytes in between move as `Alltoallv`
/// of bytes. With `MPI_IN_PLACE`, what goes out is what the receive
/// blocks hold.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn alltoallw(
    st: &mut State,
    sendbuf: *const c_void,
    sendcounts: impl Into<Ints>,
    sdispls: impl Into<Ints>,
    sendtypes: *const Handle,
    recvbuf: *mut c_void,
    recvcounts: impl Into<Ints>,
    rdispls: impl Into<Ints>,
    recvtypes: *const Handle,
    comm: Handle,
) -> R<Staged> {
    let c = &st.comm(comm)?.comm;
    // SAFETY: the four count and displacement arrays and the two datatype arrays hold one entry per process of `comm`,
    // the send blocks they name hold their elements and the receive blocks have room for theirs, and the program leaves
    // the buffers alone until the operation completes (MPI 4.1 §6.8; the blocking form waits, §6.12 and §6.13
    // otherwise, as the `collective!` entry points rely on): `wblocks`' `# Safety`.
    let w = unsafe {
        wblocks(st, c.size(), sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes)?
    };
    Ok(w.start(|out, into, w| {
        c.immediate_all_to_all_varcount_into(out, &w.scounts, &w.sdispls, into, &w.rcounts, &w.rdispls)
    })?)
}

/// `MPI_Alltoallw` on an intercommunicator: a block for each process of
/// the remote group (§6.8). `MPI_IN_PLACE` is not valid there.
///
/// # Safety
/// The arrays hold one entry per process of the remote group, and the buffers the blocks they name, for
/// the call (MPI 4.1 §6.8).
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn inter_alltoallw(
    st: &mut State,
    sendbuf: *const c_void,
    sendcounts: impl Into<Ints>,
    sdispls: impl Into<Ints>,
    sendtypes: *const Handle,
    recvbuf: *mut c_void,
    recvcounts: impl Into<Ints>,
    rdispls: impl Into<Ints>,
    recvtypes: *const Handle,
    comm: Handle,
) -> R<()> {
    if in_place(sendbuf) {
        return Err(Fail::new(MPI_ERR_BUFFER, "MPI_IN_PLACE is not valid on an intercommunicator (§6.8)"));
    }
    let c = &st.comm(comm)?.comm;
    let n = c.remote_members().map_or(0, |m| m.len()) as c_int;
    // SAFETY: the arrays hold one entry per process of the remote group and the buffers the blocks they name, for this
    // call (`inter_alltoallw`'s `# Safety`, MPI 4.1 §6.8), and the exchange completes within it: `wblocks`' `# Safety`.
    let w =
        unsafe { wblocks(st, n, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes)? };
    Ok(w.inter_exchange(c)?)
}
collective!(MPI_Alltoallw / MPI_Ialltoallw / MPI_Alltoallw_init = alltoallw(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtypes: *const Handle, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtypes: *const Handle, comm: Handle) on comm, inter = |st| inter_alltoallw(st, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm));
collective!(MPI_Alltoallw_c / MPI_Ialltoallw_c / MPI_Alltoallw_init_c = alltoallw(sendbuf: *const c_void, sendcounts: *const i64, sdispls: *const isize, sendtypes: *const Handle, recvbuf: *mut c_void, recvcounts: *const i64, rdispls: *const isize, recvtypes: *const Handle, comm: Handle) on comm, inter = |st| inter_alltoallw(st, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm));

/// The datatypes of an array argument, one per process.
///
/// # Safety
/// `p` is null or holds `n` handles.
unsafe fn types_per_rank<'a>(p: *const Handle, n: c_int, what: &str) -> R<&'a [Handle]> {
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, format!("{what} is a null pointer")));
    }
    // SAFETY: `p` is not null (checked above) and holds `n` datatype handles, one per process
    // (§6.8).
    Ok(unsafe { std::slice::from_raw_parts(p, n.max(0) as usize) })
}
