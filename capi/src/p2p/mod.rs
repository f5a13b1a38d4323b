//! Point-to-point (MPI 4.1 §3): blocking and non-blocking sends and
//! receives straight from and into the caller's buffer (`mpi::staged::direct`: no
//! copy), probes, and completion (§3.7.3-3.7.5), with `MPI_PROC_NULL`
//! (§3.10), `MPI_ANY_SOURCE`/`MPI_ANY_TAG` and `MPI_STATUS(ES)_IGNORE`.

use std::ffi::{c_int, c_void};

use mpi::persistent::SendMode;
use mpi::sendrecv::{isendrecv, Outgoing};
use mpi::slot::Started;
use mpi::staged::direct;
use mpi::{probe, Communicator, Process, Source};

use crate::abi::*;
use crate::datatype::{direct_bytes, near_null, Span};
use crate::*;

/// The tag selector of a receive or probe: `None` is any tag.
pub(crate) fn recv_tag(tag: c_int) -> R<Option<c_int>> {
    match tag {
        MPI_ANY_TAG => Ok(None),
        t => Ok(mpi::check_tag(t).map(|()| Some(t))?),
    }
}

/// Evaluate `$e` with `$s` the source `$source` names in `$c`: any
/// process (`MPI_ANY_SOURCE`) or the one at that rank.
macro_rules! from_source {
    ($c:expr, $source:expr, $s:ident => $e:expr) => {
        if $source == MPI_ANY_SOURCE {
            let $s = &$c.any_process();
            $e
        } else {
            let $s = &$c.process_at_rank($source);
            $e
        }
    };
}

/// Start sending `span` of `buf` (`mpi::staged::isend`).
///
/// # Safety
/// `buf` holds the span's elements until the operation completes.
pub(crate) unsafe fn start_send(
    to: &Process<'_>,
    buf: *const c_void,
    span: &Span,
    tag: c_int,
    sync: bool,
) -> R<Staged> {
    // SAFETY: `buf` holds the span's elements and keeps them until the operation completes, as `start_send`'s
    // `# Safety` requires of its callers; that is exactly `mpi::staged::isend`'s requirement.
    Ok(unsafe { mpi::staged::isend(to, buf.cast(), span, tag, sync) }?)
}

/// Start receiving `span` of `buf` (`mpi::staged::irecv`).
///
/// # Safety
/// `buf` has room for the span's elements and is left alone until the
/// operation completes.
unsafe fn start_recv<S: Source + ?Sized>(from: &S, buf: *mut c_void, span: &Span, tag: Option<c_int>) -> R<Staged> {
    // SAFETY: `buf` has room for the span's elements and is left alone until the operation completes, as `start_recv`'s
    // `# Safety` requires of its callers; that is exactly `mpi::staged::irecv`'s requirement.
    Ok(unsafe { mpi::staged::irecv(from, buf.cast(), span, tag) }?)
}

/// Blocking send of every mode: standard, synchronous (`sync`), ready
/// (a ready send is a standard send whose receive is known to be posted).
/// Inlined into each MPI call, so a predefined type's send pays one
/// function's entry and exit, not two (`scripts/capi-cost.sh`).
///
/// # Safety
/// `buf` holds `count` elements of `datatype` (the standard's contract).
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
#[inline(always)]
unsafe fn send(
    call: &str,
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    sync: bool,
) -> c_int {
    with_state(
        call,
        comm,
        #[inline(always)]
        |st| {
            let c = &st.comm(comm)?.comm;
            // The fast path: a predefined type, sent from the caller's bytes.
            if let (Some(len), true) = (direct_bytes(count, dt), dest != MPI_PROC_NULL) {
                let p = if len == 0 { std::ptr::NonNull::<u8>::dangling().as_ptr() } else { buf.cast::<u8>() };
                if len > 0 && near_null(buf.cast(), 0) {
                    return Err(Fail::new(MPI_ERR_BUFFER, "the send buffer is a null pointer"));
                }
                // SAFETY: `buf` holds `len` bytes for this call (the caller's
                // contract), or `len` is 0 and `p` is never read.
                return Ok(unsafe { direct::send(&c.process_at_rank(dest), p, len, tag, sync) }?);
            }
            // SAFETY: `buf` holds `count` elements of `dt`, readable for this blocking call (`send`'s `# Safety`,
            // unchanged): the same as `send_derived`'s.
            unsafe { send_derived(st, buf, count, dt, dest, tag, comm, sync) }
        },
    )
}

/// [`send`] of a derived datatype (or to `MPI_PROC_NULL`), out of the
/// fast path's way.
///
/// # Safety
/// `buf` holds `count` elements of `dt`, readable for the call.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
#[cold]
#[inline(never)]
unsafe fn send_derived(
    st: &mut State,
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    sync: bool,
) -> R<()> {
    let c = &st.comm(comm)?.comm;
    let span = st.span(count, dt)?;
    if dest == MPI_PROC_NULL {
        return Ok(());
    }
    // SAFETY: `buf` holds `count` elements of `dt` (`span`), readable for the duration of this blocking call, as
    // MPI 4.1 §3.2.1 requires of the send buffer (`send_derived`'s `# Safety`); `mpi::staged::send` needs no more, as
    // it returns once the data is out of the buffer.
    Ok(unsafe { mpi::staged::send(&c.process_at_rank(dest), buf.cast(), &span, tag, sync) }?)
}

/// A blocking send (`MPI_Send`, `MPI_Ssend`, `MPI_Rsend`, §3.4): under
/// `MPI_THREAD_MULTIPLE` started and waited for, letting other threads in
/// ([`send_multiple`]), else whole ([`send`]).
///
/// # Safety
/// `buf` holds `count` elements of `datatype`, readable until the call returns.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
#[inline(always)] // MPI_Send's fast path
unsafe fn blocking_send(
    call: &str,
    buf: *const c_void,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    sync: bool,
) -> c_int {
    if crate::threads::multiple() {
        // SAFETY: `buf` holds `count` elements of `datatype`, readable until this call returns (`blocking_send`'s
        // `# Safety`), which is what `send_multiple`'s asks: it waits for the send to complete before returning.
        return unsafe { send_multiple(call, buf, count, datatype, dest, tag, comm, sync) };
    }
    // SAFETY: as above: `send`'s `# Safety`.
    unsafe { send(call, buf, count, datatype, dest, tag, comm, sync) }
}

forward! {
    pub unsafe extern "C" fn MPI_Send(buf: *const c_void, count: c_int, datatype: Handle, dest: c_int, tag: c_int, comm: Handle) -> c_int = blocking_send(buf, count, datatype, dest, tag, comm, false);
    pub unsafe extern "C" fn MPI_Ssend(buf: *const c_void, count: c_int, datatype: Handle, dest: c_int, tag: c_int, comm: Handle) -> c_int = blocking_send(buf, count, datatype, dest, tag, comm, true);
    pub unsafe extern "C" fn MPI_Rsend(buf: *const c_void, count: c_int, datatype: Handle, dest: c_int, tag: c_int, comm: Handle) -> c_int = blocking_send(buf, count, datatype, dest, tag, comm, false);
    pub unsafe extern "C" fn MPI_Isend(buf: *const c_void, count: c_int, datatype: Handle, dest: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int = isend(buf, count, datatype, dest, tag, comm, request, false);
    pub unsafe extern "C" fn MPI_Issend(buf: *const c_void, count: c_int, datatype: Handle, dest: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int = isend(buf, count, datatype, dest, tag, comm, request, true);
    pub unsafe extern "C" fn MPI_Irsend(buf: *const c_void, count: c_int, datatype: Handle, dest: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int = isend(buf, count, datatype, dest, tag, comm, request, false);
    pub unsafe extern "C" fn MPI_Send_init(buf: *const c_void, count: c_int, datatype: Handle, dest: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int = send_init(buf, count, datatype, dest, tag, comm, request, SendMode::Standard);
    pub unsafe extern "C" fn MPI_Ssend_init(buf: *const c_void, count: c_int, datatype: Handle, dest: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int = send_init(buf, count, datatype, dest, tag, comm, request, SendMode::Synchronous);
    pub unsafe extern "C" fn MPI_Rsend_init(buf: *const c_void, count: c_int, datatype: Handle, dest: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int = send_init(buf, count, datatype, dest, tag, comm, request, SendMode::Standard);
    pub unsafe extern "C" fn MPI_Bsend_init(buf: *const c_void, count: c_int, datatype: Handle, dest: c_int, tag: c_int, comm: Handle, request: *mut Handle) -> c_int = send_init(buf, count, datatype, dest, tag, comm, request, SendMode::Buffered);
}

/// Blocking receive.
///
/// # Safety
/// `buf` has room for `count` elements of `dt`; `status` is null or writable.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
#[inline(always)]
unsafe fn recv(
    st: &mut State,
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    status: *mut MpiStatus,
) -> R<()> {
    let c = &st.comm(comm)?.comm;
    // The fast path: a predefined type, received into the caller's bytes.
    if let (Some(len), true) = (direct_bytes(count, dt), source != MPI_PROC_NULL) {
        // A negative tag other than MPI_ANY_TAG is `direct::recv`'s to refuse
        // (`MpiError::InvalidTag`, MPI_ERR_TAG), before it waits for anything.
        let tag = (tag != MPI_ANY_TAG).then_some(tag);
        if len > 0 && near_null(buf.cast(), 0) {
            return Err(Fail::new(MPI_ERR_BUFFER, "the receive buffer is a null pointer"));
        }
        // SAFETY: `buf` has room for `len` bytes (`count` elements of the predefined `dt`), writable for this call
        // (`recv`'s `# Safety`, from MPI_Recv's caller, MPI 4.1 §3.2.4), and is not null (checked above) when `len` >
        // 0. That is `direct::recv`'s requirement, which touches no byte of a 0-byte receive, whatever its pointer.
        let s = unsafe { from_source!(c, source, from => direct::recv(from, buf.cast(), len, tag)) }?;
        // SAFETY: `status` is null (MPI_STATUS_IGNORE) or valid for writing one MPI_Status for this call (`recv`'s
        // `# Safety`, MPI 4.1 §3.2.5), which is `put_status`'s requirement.
        unsafe { put_status(status, c_status(&s)) };
        return Ok(());
    }
    // SAFETY: `buf` has room for `count` elements of `dt` and `status` is null or writable for one MPI_Status, for this
    // call (`recv`'s `# Safety`, unchanged): the same as `recv_derived`'s.
    unsafe { recv_derived(st, buf, count, dt, source, tag, comm, status) }
}

/// [`recv`] of a derived datatype (or from `MPI_PROC_NULL`), out of the
/// fast path's way.
///
/// # Safety
/// `buf` has room for `count` elements of `dt`; `status` is null or writable.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
#[cold]
#[inline(never)]
unsafe fn recv_derived(
    st: &mut State,
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    status: *mut MpiStatus,
) -> R<()> {
    let c = &st.comm(comm)?.comm;
    let tag = recv_tag(tag)?;
    let span = st.span(count, dt)?;
    if source == MPI_PROC_NULL {
        // SAFETY: `status` is null (MPI_STATUS_IGNORE) or valid for writing one MPI_Status for this call
        // (`recv_derived`'s `# Safety`), which is `put_status`'s requirement.
        unsafe { put_status(status, MpiStatus::proc_null()) };
        return Ok(());
    }
    // SAFETY: `buf` has room for `count` elements of `dt` (`span`), writable for this call (`recv_derived`'s
    // `# Safety`, from MPI_Recv's caller, MPI 4.1 §3.2.4), which is what `mpi::staged::recv` requires; it returns once
    // the data is in.
    let s = unsafe { from_source!(c, source, from => mpi::staged::recv(from, buf.cast(), &span, tag)) }?;
    // SAFETY: `status` is null (MPI_STATUS_IGNORE) or valid for writing one MPI_Status for this call (`recv_derived`'s
    // `# Safety`), which is `put_status`'s requirement.
    unsafe { put_status(status, c_status(&s)) };
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Recv(
    buf: *mut c_void,
    count: c_int,
    datatype: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    status: *mut MpiStatus,
) -> c_int {
    if crate::threads::multiple() {
        // SAFETY: `buf` has room for `count` elements of `datatype`, writable until MPI_Recv returns (MPI 4.1 §3.2.4),
        // and `status` is null or points to one writable MPI_Status (§3.2.5): `recv_multiple`'s `# Safety`, which waits
        // for the receive before returning.
        return unsafe { recv_multiple(buf, count, datatype, source, tag, comm, status) };
    }
    with_state("MPI_Recv", comm, |st| {
        // SAFETY: `buf` has room for `count` elements of `datatype`, writable until MPI_Recv returns (MPI 4.1
        // §3.2.4), and `status` is null or points to one writable MPI_Status (§3.2.5): `recv`'s `# Safety`.
        let r = unsafe { recv(st, buf, count, datatype, source, tag, comm, status) };
        if let Err(f) = r {
            // A truncated receive still says whose message it was (§3.2.5).
            // SAFETY: `status` is MPI_Recv's out-argument, null (MPI_STATUS_IGNORE) or valid for writing one
            // MPI_Status for this call (MPI 4.1 §3.2.5), which is `put_outcome`'s requirement.
            return unsafe { put_outcome(status, Err(f)) };
        }
        Ok(())
    })
}

/// A blocking call under `MPI_THREAD_MULTIPLE` (`crate::threads`): its
/// non-blocking form, whose operation `start` makes under the lock and the
/// state keeps as a request, then a wait for it as `MPI_Wait` does, which
/// lets other threads in; the status goes to `status`. Errors go to
/// `comm`'s handler, under `call`'s name.
///
/// # Safety
/// The buffers of the operation `start` makes stay valid until it
/// completes, which is before this returns; `status` is null or writable.
pub(crate) unsafe fn block_on(
    call: &str,
    comm: Handle,
    status: *mut MpiStatus,
    start: impl FnOnce(&mut State) -> R<Req>,
) -> c_int {
    let mut h = MPI_REQUEST_NULL;
    let rc = with_state(call, comm, |st| {
        let r = start(st)?;
        // SAFETY: `h` is a local.
        unsafe { new_request(st, r, &mut h) }
    });
    if rc != MPI_SUCCESS {
        return rc;
    }
    // SAFETY: `h` is a local handle, readable and writable for the call; `flag` is null; `status` is null or valid for
    // writing one MPI_Status for this call (`block_on`'s `# Safety`): what `one_on` requires.
    unsafe { one_on(call, comm, true, &mut h, std::ptr::null_mut(), status) }
}

/// `MPI_Send` and its modes under `MPI_THREAD_MULTIPLE` ([`block_on`]),
/// out of the single-threaded path's way.
///
/// # Safety
/// `buf` holds `count` elements of `dt` (the standard's contract).
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
#[cold]
#[inline(never)]
unsafe fn send_multiple(
    call: &str,
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    sync: bool,
) -> c_int {
    // SAFETY: `buf` holds `count` elements of `dt` for the whole of this call (`send_multiple`'s `# Safety`, from the
    // blocking send's caller), and `block_on` waits for the send it starts to complete before returning, so the buffer
    // outlives the operation as `send_req` and `block_on` require; no status is written.
    unsafe { block_on(call, comm, std::ptr::null_mut(), |st| send_req(st, buf, count, dt, dest, tag, comm, sync)) }
}

/// `MPI_Recv` under `MPI_THREAD_MULTIPLE` ([`block_on`]).
///
/// # Safety
/// `buf` has room for `count` elements of `dt`; `status` is null or
/// writable (the standard's contract).
#[cold]
#[inline(never)]
unsafe fn recv_multiple(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    status: *mut MpiStatus,
) -> c_int {
    // SAFETY: `buf` has room for `count` elements of `dt` and `status` is null or writable, for the whole of this call
    // (`recv_multiple`'s `# Safety`, from MPI_Recv's caller), and `block_on` waits for the receive it starts to
    // complete before returning, so the buffer outlives the operation as `recv_req` and `block_on` require.
    unsafe { block_on("MPI_Recv", comm, status, |st| recv_req(st, buf, count, dt, source, tag, comm)) }
}

/// What a send starts (`MPI_Isend`, and `MPI_Send` under
/// `MPI_THREAD_MULTIPLE`).
///
/// # Safety
/// `buf` holds `count` elements of `dt` and stays unchanged until the
/// operation completes.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn send_req(
    st: &mut State,
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    sync: bool,
) -> R<Req> {
    let c = &st.comm(comm)?.comm;
    let span = st.span(count, dt)?;
    Ok(if dest == MPI_PROC_NULL {
        Req::Done(Ok(mpi::Status::proc_null()))
    } else {
        // SAFETY: `buf` holds `count` elements of `dt` (`span`) and stays unchanged until the operation completes
        // (`send_req`'s `# Safety`, from MPI 4.1 §3.7.2 for MPI_Isend, or a blocking send that waits for it): what
        // `start_send` requires. The request's handle is the only way to complete it, and MPI_Finalize completes what
        // is left.
        Req::Op(unsafe { start_send(&c.process_at_rank(dest), buf, &span, tag, sync) }?)
    })
}

/// What a receive starts (`MPI_Irecv`, and `MPI_Recv` under
/// `MPI_THREAD_MULTIPLE`).
///
/// # Safety
/// `buf` has room for `count` elements of `dt` and is left alone until
/// the operation completes.
unsafe fn recv_req(
    st: &mut State,
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
) -> R<Req> {
    let c = &st.comm(comm)?.comm;
    let span = st.span(count, dt)?;
    let tag = recv_tag(tag)?;
    Ok(if source == MPI_PROC_NULL {
        Req::Done(Ok(mpi::Status::proc_null()))
    } else {
        // SAFETY: `buf` has room for `count` elements of `dt` (`span`) and is left alone until the operation completes
        // (`recv_req`'s `# Safety`, from MPI 4.1 §3.7.2 for MPI_Irecv, or a blocking receive that waits for it): what
        // `start_recv` requires.
        Req::Op(unsafe { from_source!(c, source, from => start_recv(from, buf, &span, tag)) }?)
    })
}

/// Start a send.
///
/// # Safety
/// `buf` holds `count` elements of `dt` and stays unchanged until the
/// request completes; `request` is writable.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn isend(
    call: &str,
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
    sync: bool,
) -> c_int {
    with_state(call, comm, |st| {
        // SAFETY: `buf` holds `count` elements of `dt` and stays unchanged until the request completes (`isend`'s
        // `# Safety`, from the caller of MPI_Isend and its modes, MPI 4.1 §3.7.2): what `send_req` requires.
        let r = unsafe { send_req(st, buf, count, dt, dest, tag, comm, sync) }?;
        // SAFETY: `request` is valid for writing one handle for this call (`isend`'s `# Safety`); `new_request` also
        // refuses null.
        unsafe { new_request(st, r, request) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Irecv(
    buf: *mut c_void,
    count: c_int,
    datatype: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    with_state("MPI_Irecv", comm, |st| {
        // SAFETY: `buf` has room for `count` elements of `datatype` and the program leaves it alone until the request
        // completes, as MPI 4.1 §3.7.2 requires of MPI_Irecv's caller: what `recv_req` requires.
        let r = unsafe { recv_req(st, buf, count, datatype, source, tag, comm) }?;
        // SAFETY: `request` is MPI_Irecv's out-argument, valid for writing one handle for this call (MPI 4.1 §3.7.2);
        // `new_request` refuses null.
        unsafe { new_request(st, r, request) }
    })
}

/// What a send-receive sends: the caller's send buffer, or (the
/// `_replace` forms) a copy of the receive buffer.
enum SendPart {
    Buffer { buf: *const c_void, count: c_int, dt: Handle },
    Copy,
}

/// Start a send-receive (§3.10, `mpi::sendrecv::isendrecv`).
///
/// # Safety
/// The buffers hold their elements and are left alone until the operation
/// completes (the standard's contract).
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn start_sendrecv(
    st: &State,
    send: SendPart,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    source: c_int,
    recvtag: c_int,
    comm: Handle,
) -> R<Req> {
    let c = &st.comm(comm)?.comm;
    let rspan = st.span(recvcount, recvtype)?;
    // The send's datatype is not looked at when it goes to MPI_PROC_NULL
    // (nothing is sent then: an empty span stands for it).
    let span = match send {
        SendPart::Buffer { count, dt, .. } if dest != MPI_PROC_NULL => st.span(count, dt)?,
        _ => Span::bytes(0),
    };
    let out = match send {
        SendPart::Buffer { buf, .. } => Outgoing::Buffer(buf.cast(), &span),
        SendPart::Copy => Outgoing::Replace,
    };
    // SAFETY: the send buffer holds its elements and `recvbuf` has room for `recvcount` elements of `recvtype` (holds
    // them under the `_replace` forms), left alone until the operation completes (`start_sendrecv`'s `# Safety`):
    // what `isendrecv` requires.
    let started = unsafe { isendrecv(c, out, dest, sendtag, recvbuf.cast(), &rspan, source, recv_tag(recvtag)?) }?;
    Ok(match started {
        Started::Op(op) => Req::Op(op),
        Started::Done(s) => Req::Done(Ok(s)),
    })
}

/// Wait for a request made here and now (the blocking forms of the calls
/// written as non-blocking ones).
fn wait_req(r: Req) -> R<MpiStatus> {
    match r {
        Req::Op(a) => outcome(a.wait()),
        Req::Done(s) => outcome(s),
        Req::Persistent(_) => Err(Fail::new(MPI_ERR_INTERN, "a persistent request where none was made")),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    source: c_int,
    recvtag: c_int,
    comm: Handle,
    status: *mut MpiStatus,
) -> c_int {
    let send = SendPart::Buffer { buf: sendbuf, count: sendcount, dt: sendtype };
    if crate::threads::multiple() {
        // SAFETY: `sendbuf` holds `sendcount` elements of `sendtype` and `recvbuf` has room for `recvcount` elements of
        // `recvtype` for the whole of MPI_Sendrecv (MPI 4.1 §3.10), and `status` is null or writable for one
        // MPI_Status; `block_on` waits for the operation before returning, so the buffers outlive it as
        // `start_sendrecv` and `block_on` require.
        return unsafe {
            block_on("MPI_Sendrecv", comm, status, |st| {
                start_sendrecv(st, send, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm)
            })
        };
    }
    with_state("MPI_Sendrecv", comm, |st| {
        // SAFETY: `sendbuf` holds `sendcount` elements of `sendtype` and `recvbuf` has room for `recvcount` elements of
        // `recvtype` for the whole of MPI_Sendrecv (MPI 4.1 §3.10), and `wait_req` below completes the operation before
        // this call returns: `start_sendrecv`'s `# Safety`.
        let r =
            unsafe { start_sendrecv(st, send, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm) }?;
        // SAFETY: `status` is MPI_Sendrecv's out-argument, null (MPI_STATUS_IGNORE) or valid for writing one MPI_Status
        // for this call (MPI 4.1 §3.2.5), which is `put_outcome`'s requirement.
        unsafe { put_outcome(status, wait_req(r)) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Isendrecv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: Handle,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    source: c_int,
    recvtag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    with_state("MPI_Isendrecv", comm, |st| {
        let send = SendPart::Buffer { buf: sendbuf, count: sendcount, dt: sendtype };
        // SAFETY: `sendbuf` holds `sendcount` elements of `sendtype` and `recvbuf` has room for `recvcount` elements of
        // `recvtype`, and the program leaves both alone until the request completes, as MPI 4.1 §3.7.2 requires of
        // MPI_Isendrecv's caller: `start_sendrecv`'s `# Safety`.
        let r =
            unsafe { start_sendrecv(st, send, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm) }?;
        // SAFETY: `request` is MPI_Isendrecv's out-argument, valid for writing one handle for this call; `new_request`
        // refuses null.
        unsafe { new_request(st, r, request) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv_replace(
    buf: *mut c_void,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: Handle,
    status: *mut MpiStatus,
) -> c_int {
    if crate::threads::multiple() {
        // SAFETY: `buf` holds `count` elements of `datatype` (sent, then received into) for the whole of
        // MPI_Sendrecv_replace (MPI 4.1 §3.10), and `status` is null or writable for one MPI_Status; `block_on` waits
        // for the operation before returning, so the buffer outlives it as `start_sendrecv` and `block_on` require.
        return unsafe {
            block_on("MPI_Sendrecv_replace", comm, status, |st| {
                start_sendrecv(st, SendPart::Copy, dest, sendtag, buf, count, datatype, source, recvtag, comm)
            })
        };
    }
    with_state("MPI_Sendrecv_replace", comm, |st| {
        // SAFETY: `buf` holds `count` elements of `datatype` (sent, then received into) for the whole of
        // MPI_Sendrecv_replace (MPI 4.1 §3.10), and `wait_req` below completes the operation before this call returns:
        // `start_sendrecv`'s `# Safety`.
        let r =
            unsafe { start_sendrecv(st, SendPart::Copy, dest, sendtag, buf, count, datatype, source, recvtag, comm) }?;
        // SAFETY: `status` is MPI_Sendrecv_replace's out-argument, null (MPI_STATUS_IGNORE) or valid for writing one
        // MPI_Status for this call (MPI 4.1 §3.2.5), which is `put_outcome`'s requirement.
        unsafe { put_outcome(status, wait_req(r)) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Isendrecv_replace(
    buf: *mut c_void,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    with_state("MPI_Isendrecv_replace", comm, |st| {
        // SAFETY: `buf` holds `count` elements of `datatype` (sent, then received into), and the program leaves it
        // alone until the request completes, as MPI 4.1 §3.7.2 requires of MPI_Isendrecv_replace's caller:
        // `start_sendrecv`'s `# Safety`.
        let r =
            unsafe { start_sendrecv(st, SendPart::Copy, dest, sendtag, buf, count, datatype, source, recvtag, comm) }?;
        // SAFETY: `request` is MPI_Isendrecv_replace's out-argument, valid for writing one handle for this call;
        // `new_request` refuses null.
        unsafe { new_request(st, r, request) }
    })
}

/// Probe: blocking, or not (`None` when nothing matches yet).
fn probe(st: &State, source: c_int, tag: c_int, comm: Handle, block: bool) -> R<Option<MpiStatus>> {
    let c = &st.comm(comm)?.comm;
    let tag = recv_tag(tag)?;
    if source == MPI_PROC_NULL {
        return Ok(Some(MpiStatus::proc_null()));
    }
    let s = from_source!(c, source, from => match (tag, block) {
        (None, true) => Some(from.probe()?),
        (Some(t), true) => Some(from.probe_with_tag(t)?),
        (None, false) => from.immediate_probe()?,
        (Some(t), false) => from.immediate_probe_with_tag(t)?,
    });
    Ok(s.as_ref().map(c_status))
}

/// A blocking probe under `MPI_THREAD_MULTIPLE`: it gives the lock up
/// (`crate::threads::yielded`) where it would idle while another thread
/// wants it, and runs again.
fn probe_multiple(st: &State, source: c_int, tag: c_int, comm: Handle) -> R<MpiStatus> {
    let c = &st.comm(comm)?.comm;
    let tag = recv_tag(tag)?;
    if source == MPI_PROC_NULL {
        return Ok(MpiStatus::proc_null());
    }
    let s = from_source!(c, source, from => probe::probe_until(from, tag, &crate::threads::stop)?);
    s.as_ref().map(c_status).ok_or_else(crate::threads::yielded)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Probe(source: c_int, tag: c_int, comm: Handle, status: *mut MpiStatus) -> c_int {
    if crate::threads::multiple() {
        return crate::threads::blocking_call("MPI_Probe", comm, |st| {
            let s = probe_multiple(st, source, tag, comm)?;
            // SAFETY: `status` is MPI_Probe's out-argument, null (MPI_STATUS_IGNORE) or valid for writing one
            // MPI_Status for this call (MPI 4.1 §3.8.1), which is `put_status`'s requirement.
            unsafe { put_status(status, s) };
            Ok(())
        });
    }
    with_state("MPI_Probe", comm, |st| {
        let s = probe(st, source, tag, comm, true)?.unwrap_or_else(MpiStatus::empty);
        // SAFETY: `status` is MPI_Probe's out-argument, null (MPI_STATUS_IGNORE) or valid for writing one MPI_Status
        // for this call (MPI 4.1 §3.8.1), which is `put_status`'s requirement.
        unsafe { put_status(status, s) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iprobe(
    source: c_int,
    tag: c_int,
    comm: Handle,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    with_state("MPI_Iprobe", comm, |st| {
        let s = probe(st, source, tag, comm, false)?;
        // SAFETY: `flag` points to one writable `int` (`put` refuses null) and `status` is null (MPI_STATUS_IGNORE) or
        // points to one writable MPI_Status, both for this call, as MPI 4.1 §3.8.1 defines MPI_Iprobe's out-arguments.
        unsafe {
            put(flag, s.is_some() as c_int, "flag")?;
            if let Some(s) = s {
                put_status(status, s);
            }
        }
        Ok(())
    })
}

// After the macros above, which both use.
mod completion;
pub(crate) mod partitions;
mod persistent;

pub(crate) use self::completion::*;
pub(crate) use self::persistent::*;
