//! Buffered mode (MPI 4.1 §3.6): `MPI_Bsend`, `MPI_Ibsend`, attaching,
//! detaching and flushing buffers, over the mpi crate's accounting
//! (`mpi::bsend`). A communicator's buffer (`MPI_Comm_attach_buffer`, MPI
//! 4.1) is used when one is attached, else its session's
//! (`MPI_Session_attach_buffer`) if it derives from one, else the
//! process's (`MPI_Buffer_attach`).

use std::ffi::{c_int, c_void};

use mpi::bsend::{Buffered, Sent, Space};
use mpi::Communicator;

use crate::abi::*;
use crate::*;

/// `MPI_BUFFER_AUTOMATIC`'s value in the ABI.
const BUFFER_AUTOMATIC: usize = 2;

/// The buffer a buffered send on `comm` uses: the communicator's if one is
/// attached to it, else its session's if it derives from one that has
/// one, else the process's (MPI 4.1 §3.6). (Of the state's fields, so
/// that a caller may hold another field meanwhile.)
pub(crate) fn buffer_for<'a>(
    comms: &'a mut crate::comm_table::CommTable,
    sessions: &'a mut Table<SessionEntry>,
    process: &'a mut Buffered,
    comm: Handle,
) -> &'a mut Buffered {
    let session = comms.get(&comm).and_then(|e| e.session);
    if comms.get(&comm).is_some_and(|e| e.buffered.is_attached()) {
        if let Some(e) = comms.get_mut(&comm) {
            return &mut e.buffered;
        }
    }
    match session.and_then(|s| sessions.get_mut(&s)) {
        Some(e) if e.buffered.is_attached() => &mut e.buffered,
        _ => process,
    }
}

/// Whose buffer an attach, detach or flush works on.
#[derive(Clone, Copy)]
enum Owner {
    /// The process's (`MPI_Buffer_attach`).
    Process,
    /// A communicator's (`MPI_Comm_attach_buffer`).
    Comm(Handle),
    /// A session's (`MPI_Session_attach_buffer`).
    Session(Handle),
}

impl Owner {
    /// The object whose error handler reports the call's errors.
    fn handle(self) -> Handle {
        match self {
            Owner::Process => MPI_COMM_WORLD,
            Owner::Comm(h) | Owner::Session(h) => h,
        }
    }
}

impl State {
    /// The buffer slot of `owner`: what attach, detach and flush work on.
    fn slot(&mut self, owner: Owner) -> R<&mut Buffered> {
        match owner {
            Owner::Process => Ok(&mut self.buffered),
            Owner::Comm(c) => Ok(&mut self.comm_mut(c)?.buffered),
            Owner::Session(s) => Ok(&mut self.session_mut(s)?.buffered),
        }
    }
}

/// Copy the message and start sending it from the copy.
///
/// # Safety
/// `buf` holds `count` elements of `dt` for the call.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn bsend(
    st: &mut State,
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> R<Option<Sent>> {
    let c = st.comm(comm)?.comm.clone();
    let span = st.span(count, dt)?;
    if dest == MPI_PROC_NULL {
        return Ok(None);
    }
    // SAFETY: `buf` holds `count` elements of `datatype` for this call (MPI 4.1 §3.6); the buffered
    // send copies them.
    Ok(Some(unsafe {
        buffer_for(&mut st.comms, &mut st.sessions, &mut st.buffered, comm).send(
            &c.process_at_rank(dest),
            buf.cast(),
            &span,
            tag,
        )
    }?))
}

/// Remember that request `h`'s message is buffered send `sent` on `comm`,
/// for [`cancel`]. Entries of requests completed and freed are dropped
/// now and then (handles are never reused, so a stale one is only
/// memory).
pub(crate) fn note_sent(st: &mut State, h: Handle, comm: Handle, sent: Sent) {
    if st.bsent.len() > 64 + 2 * st.requests.len() {
        let requests = &st.requests;
        st.bsent.retain(|r, _| requests.contains(*r));
    }
    st.bsent.insert(h, (comm, sent));
}

/// `MPI_Cancel` of request `h`, complete since its start, if it is a
/// buffered send's: withdraw the message if it is still in flight, and
/// make the request wait for the outcome, cancelled or not (§3.8.4).
pub(crate) fn cancel(st: &mut State, h: Handle) -> R<()> {
    let Some(&(comm, sent)) = st.bsent.get(&h) else { return Ok(()) };
    let session = st.comms.get(&comm).and_then(|e| e.session);
    let mut op = match st.comms.get_mut(&comm) {
        Some(e) => e.buffered.cancel(sent)?,
        None => None,
    };
    if let (None, Some(e)) = (&op, session.and_then(|s| st.sessions.get_mut(&s))) {
        op = e.buffered.cancel(sent)?;
    }
    if op.is_none() {
        op = st.buffered.cancel(sent)?;
    }
    st.bsent.remove(&h);
    if let (Some(op), Some(slot)) = (op, st.requests.get_mut(h)) {
        slot.reopen(op);
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Bsend(
    buf: *const c_void,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    // SAFETY: `buf` holds `count` elements of `datatype`, readable for this call, as MPI 4.1 §3.4 requires of
    // MPI_Bsend's caller, and the closure runs within the call: `bsend`'s `# Safety` (the message is copied before it
    // returns).
    with_state("MPI_Bsend", comm, |st| unsafe { bsend(st, buf, count, datatype, dest, tag, comm).map(drop) })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ibsend(
    buf: *const c_void,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    with_state("MPI_Ibsend", comm, |st| {
        if request.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "request is a null pointer"));
        }
        // The message is copied at once: the request is already complete,
        // unless a cancellation withdraws the message.
        // SAFETY: `buf` holds `count` elements of `datatype`, readable for this call (MPI 4.1 §3.7.2 keeps MPI_Ibsend's
        // buffer the request's until it completes, which is later): `bsend`'s `# Safety`; the message is copied before
        // it returns.
        let sent = unsafe { bsend(st, buf, count, datatype, dest, tag, comm)? };
        // SAFETY: `request` is not null (checked above) and is MPI_Ibsend's out-argument, valid for writing one handle
        // for this call: what `new_request` requires.
        unsafe { crate::new_request(st, Req::Done(Ok(mpi::Status::empty())), request)? };
        if let Some(sent) = sent {
            // SAFETY: written just above.
            note_sent(st, unsafe { request.read() }, comm, sent);
        }
        Ok(())
    })
}

/// Attach to the process (`comm` null) or to a communicator.
///
/// # Safety
/// `buffer` is the program's for as long as it stays attached.
unsafe fn attach(call: &str, owner: Owner, buffer: *mut c_void, size: i64) -> c_int {
    with_state(call, owner.handle(), |st| {
        let space = if buffer as usize == BUFFER_AUTOMATIC {
            Space::Automatic
        } else {
            let n = usize::try_from(size).map_err(|_| Fail::new(MPI_ERR_BUFFER, format!("size {size} is negative")))?;
            Space::Buffer(buffer.cast(), n)
        };
        Ok(st.slot(owner)?.attach(space)?)
    })
}

/// Detach from the process or a communicator, writing the address and the
/// size (as `int` or `MPI_Count`).
///
/// # Safety
/// `buffer_addr` is the address of a `void *`; `size` is writable.
unsafe fn detach<T: TryFrom<usize>>(call: &str, owner: Owner, buffer_addr: *mut c_void, size: *mut T) -> c_int {
    with_state(call, owner.handle(), |st| {
        let (p, n) = match st.slot(owner)?.detach()? {
            Space::Buffer(b, n) => (b.cast::<c_void>(), n),
            Space::Automatic => (BUFFER_AUTOMATIC as *mut c_void, 0),
        };
        let n = T::try_from(n).map_err(|_| {
            Fail::new(MPI_ERR_COUNT, format!("the buffer's size {n} does not fit an int: use the _c call"))
        })?;
        // SAFETY: `buffer_addr` is the address of one writable `void *` and `size` null or valid for writing one `T`,
        // for this call (`detach`'s `# Safety`: the MPI call's out-arguments); `put` refuses null.
        unsafe {
            put(buffer_addr.cast::<*mut c_void>(), p, "buffer_addr")?;
            put(size, n, "size")
        }
    })
}

/// Start flushing the buffer of `owner` (`MPI_Buffer_iflush`, ...): its
/// request.
///
/// # Safety
/// `request` is null or valid for writing one handle for the call.
unsafe fn iflush(call: &str, owner: Owner, request: *mut Handle) -> c_int {
    with_state(call, owner.handle(), |st| {
        let r = st.slot(owner)?.iflush();
        // SAFETY: `request` is null or valid for writing one handle for this call (`iflush`'s `# Safety`);
        // `new_request` refuses null.
        unsafe { crate::new_request(st, r, request) }
    })
}

forward! {
    pub unsafe extern "C" fn MPI_Buffer_attach(buffer: *mut c_void, size: c_int) -> c_int = attach(Owner::Process, buffer, size.into());
    pub unsafe extern "C" fn MPI_Buffer_attach_c(buffer: *mut c_void, size: i64) -> c_int = attach(Owner::Process, buffer, size);
    pub unsafe extern "C" fn MPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) -> c_int = detach(Owner::Process, buffer_addr, size);
    pub unsafe extern "C" fn MPI_Buffer_detach_c(buffer_addr: *mut c_void, size: *mut i64) -> c_int = detach(Owner::Process, buffer_addr, size);
    pub unsafe extern "C" fn MPI_Buffer_iflush(request: *mut Handle) -> c_int = iflush(Owner::Process, request);
    pub unsafe extern "C" fn MPI_Comm_attach_buffer(comm: Handle, buffer: *mut c_void, size: c_int) -> c_int = attach(Owner::Comm(comm), buffer, size.into());
    pub unsafe extern "C" fn MPI_Comm_attach_buffer_c(comm: Handle, buffer: *mut c_void, size: i64) -> c_int = attach(Owner::Comm(comm), buffer, size);
    pub unsafe extern "C" fn MPI_Comm_detach_buffer(comm: Handle, buffer_addr: *mut c_void, size: *mut c_int) -> c_int = detach(Owner::Comm(comm), buffer_addr, size);
    pub unsafe extern "C" fn MPI_Comm_detach_buffer_c(comm: Handle, buffer_addr: *mut c_void, size: *mut i64) -> c_int = detach(Owner::Comm(comm), buffer_addr, size);
    pub unsafe extern "C" fn MPI_Comm_iflush_buffer(comm: Handle, request: *mut Handle) -> c_int = iflush(Owner::Comm(comm), request);
    pub unsafe extern "C" fn MPI_Session_attach_buffer(session: Handle, buffer: *mut c_void, size: c_int) -> c_int = attach(Owner::Session(session), buffer, size.into());
    pub unsafe extern "C" fn MPI_Session_attach_buffer_c(session: Handle, buffer: *mut c_void, size: i64) -> c_int = attach(Owner::Session(session), buffer, size);
    pub unsafe extern "C" fn MPI_Session_detach_buffer(session: Handle, buffer_addr: *mut c_void, size: *mut c_int) -> c_int = detach(Owner::Session(session), buffer_addr, size);
    pub unsafe extern "C" fn MPI_Session_detach_buffer_c(session: Handle, buffer_addr: *mut c_void, size: *mut i64) -> c_int = detach(Owner::Session(session), buffer_addr, size);
    pub unsafe extern "C" fn MPI_Session_iflush_buffer(session: Handle, request: *mut Handle) -> c_int = iflush(Owner::Session(session), request);
}

/// Flush the buffer of `owner` (`MPI_Buffer_flush`, ...).
fn flush(call: &str, owner: Owner) -> c_int {
    with_state(call, owner.handle(), |st| Ok(st.slot(owner)?.flush()?))
}

forward! {
    pub extern "C" fn MPI_Buffer_flush() -> c_int = flush(Owner::Process);
    pub extern "C" fn MPI_Comm_flush_buffer(comm: Handle) -> c_int = flush(Owner::Comm(comm));
    pub extern "C" fn MPI_Session_flush_buffer(session: Handle) -> c_int = flush(Owner::Session(session));
}
