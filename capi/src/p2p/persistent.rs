//! Persistent requests (MPI 4.1 §3.9): the `*_init` calls, start, and
//! cancel (§3.8.4).

use mpi::persistent::P2p;
use mpi::slot::Started;

use super::*;

/// A persistent request over `op` (§3.9.1), inactive until started.
///
/// # Safety
/// `request` is writable.
pub(crate) unsafe fn persistent(st: &mut State, comm: Handle, op: PersistentOp, request: *mut Handle) -> R<()> {
    let handle = comm;
    let comm = st.comm(comm)?.comm.clone();
    // SAFETY: `request` is valid for writing one handle for this call (`persistent`'s `# Safety`, from the `*_init`
    // call's out-argument); `new_request` also refuses null.
    unsafe { new_request(st, Req::persistent(Recipe { comm, handle, op }), request) }
}

/// A persistent send of any mode.
///
/// # Safety
/// `request` is writable; `buf` stays valid while the request lives.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
pub(crate) unsafe fn send_init(
    call: &str,
    buf: *const c_void,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
    mode: SendMode,
) -> c_int {
    with_state(call, comm, |st| {
        let span = st.span(count, datatype)?;
        mpi::check_tag(tag)?;
        let op = PersistentOp::P2p(P2p::Send { buf: buf.cast(), span, dest, tag, mode });
        // SAFETY: `request` is valid for writing one handle for this call (`send_init`'s `# Safety`); `buf` is only
        // stored here, and read at each start, while the request lives (also `send_init`'s `# Safety`).
        unsafe { persistent(st, comm, op, request) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Recv_init(
    buf: *mut c_void,
    count: c_int,
    datatype: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    with_state("MPI_Recv_init", comm, |st| {
        let span = st.span(count, datatype)?;
        let op = PersistentOp::P2p(P2p::Recv { buf: buf.cast(), span, source, tag: recv_tag(tag)? });
        // SAFETY: `request` is MPI_Recv_init's out-argument (MPI 4.1 §3.9), valid for writing one handle for this call:
        // `persistent`'s `# Safety`. `buf` is only stored here, to be written by each started receive.
        unsafe { persistent(st, comm, op, request) }
    })
}

/// Start persistent request `h` (§3.9.2).
pub(crate) fn start(st: &mut State, h: Handle) -> R<()> {
    if !st.partitioned.is_empty() && crate::p2p::partitions::start(st, h)? == Some(true) {
        return Ok(());
    }
    // A persistent collective starts with the whole state in hand (its
    // communicator's schedule, its datatypes), then becomes the request's
    // active operation.
    let coll = match st.requests.get(h) {
        Some(Req::Persistent(p)) => match &p.recipe.op {
            PersistentOp::Coll(start, place) => Some((start.clone(), place.clone(), p.recipe.comm.clone())),
            _ => None,
        },
        _ => None,
    };
    if let Some((coll, place, comm)) = coll {
        if !matches!(st.requests.get(h).map(Req::part), Some(mpi::request::Part::Idle)) {
            return Err(Fail::new(
                MPI_ERR_REQUEST,
                "MPI_Start of a persistent collective that is still active (complete it first, §6.13)",
            ));
        }
        let op = place.start(&comm, || coll(st))?;
        let Some(Req::Persistent(p)) = st.requests.get_mut(h) else {
            return Err(Fail::new(MPI_ERR_REQUEST, format!("{h:#x} was freed while it started")));
        };
        return p.start(|_| Ok(Started::Op(op))).map_err(Fail::from);
    }
    let Some(Req::Persistent(p)) = st.requests.get_mut(h) else {
        return Err(Fail::new(MPI_ERR_REQUEST, format!("{h:#x} is not a persistent request")));
    };
    let (comms, sessions, buffered) = (&mut st.comms, &mut st.sessions, &mut st.buffered);
    let mut sent = None;
    let started = p.start(|Recipe { comm: c, handle, op }| {
        let PersistentOp::P2p(op) = op else {
            return Err(mpi::MpiError::Request(mpi::RequestMisuse::CollectiveStart));
        };
        // SAFETY: the buffer recorded at the `*_init` call is, at each MPI_Start, what MPI 4.1 §3.9 (and §4.2) obliges
        // the program to keep: the elements to send, unmodified until the operation completes; room for those to
        // receive, left alone until it completes. That is `P2p::start`'s contract.
        let (started, s) = unsafe { op.start(c, || crate::bsend::buffer_for(comms, sessions, buffered, *handle)) }?;
        sent = s.map(|s| (*handle, s));
        Ok(started)
    });
    started.map_err(Fail::from)?;
    if let Some((comm, sent)) = sent {
        crate::bsend::note_sent(st, h, comm, sent);
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Start(request: *mut Handle) -> c_int {
    with_state("MPI_Start", MPI_COMM_WORLD, |st| {
        // SAFETY: `request` is MPI_Start's in/out handle argument (MPI 4.1 §3.9), null or readable for one handle for
        // this call; `read_arg` refuses null.
        start(st, unsafe { read_arg(request, "request")? })
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Startall(count: c_int, array_of_requests: *mut Handle) -> c_int {
    with_state("MPI_Startall", MPI_COMM_WORLD, |st| {
        // SAFETY: `array_of_requests` holds `count` handles, readable and writable for this call, as MPI 4.1 §3.9
        // requires of MPI_Startall's caller: what `handles` requires (it checks `count` and null).
        for h in unsafe { handles(count, array_of_requests)? }.iter() {
            start(st, *h)?;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cancel(request: *mut Handle) -> c_int {
    with_state("MPI_Cancel", MPI_COMM_WORLD, |st| {
        // SAFETY: `request` is MPI_Cancel's handle argument (MPI 4.1 §3.8.4), null or readable for one handle for this
        // call; `read_arg` refuses null.
        let h = unsafe { read_arg(request, "request")? };
        let Some(slot) = st.requests.get(h) else {
            if crate::greq::cancel(st, h).is_some() {
                return Ok(());
            }
            return Err(Fail::new(MPI_ERR_REQUEST, format!("{h:#x} is not an active request")));
        };
        let r = slot.active();
        // The request must still be completed; its status says whether the
        // cancellation won (§3.8.4).
        match r {
            Some(r) => r.request.cancel().map_err(|e| Fail::new(MPI_ERR_UNSUPPORTED_OPERATION, e.to_string()))?,
            // Complete since its start: a buffered send's, whose message
            // may still be withdrawn.
            None if !st.bsent.is_empty() => crate::bsend::cancel(st, h)?,
            None => {}
        }
        Ok(())
    })
}
