//! Point-to-point (MPI 4.1 §3): blocking and non-blocking sends and
//! receives straight from and into the caller's buffer (`mpi::raw`: no
//! copy), probes, and completion (§3.7.3-3.7.5), with `MPI_PROC_NULL`
//! (§3.10), `MPI_ANY_SOURCE`/`MPI_ANY_TAG` and `MPI_STATUS(ES)_IGNORE`.

use std::ffi::{c_int, c_void};

use mpi::request::slot::Started;
use mpi::request::{Need, Part};
use mpi::{raw, Communicator, Process, Source};

use crate::abi::*;
use crate::datatype::{direct_bytes, near_null, outgoing, Span};
use crate::*;

/// The tag selector of a receive or probe: `None` is any tag.
pub(crate) fn recv_tag(tag: c_int) -> R<Option<c_int>> {
    match tag {
        MPI_ANY_TAG => Ok(None),
        t if t >= 0 => Ok(Some(t)),
        t => Err(Fail::new(MPI_ERR_TAG, format!("tag {t} is negative (and not MPI_ANY_TAG)"))),
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
    // SAFETY: this function's contract is `isend`'s.
    Ok(unsafe { mpi::staged::isend(to, buf.cast(), span, tag, sync) }?)
}

/// Start receiving `span` of `buf` (`mpi::staged::irecv`).
///
/// # Safety
/// `buf` has room for the span's elements and is left alone until the
/// operation completes.
unsafe fn start_recv<S: Source + ?Sized>(from: &S, buf: *mut c_void, span: &Span, tag: Option<c_int>) -> R<Staged> {
    // SAFETY: this function's contract is `irecv`'s.
    Ok(unsafe { mpi::staged::irecv(from, buf.cast(), span, tag) }?)
}

/// Blocking send of every mode: standard, synchronous (`sync`), ready
/// (a ready send is a standard send whose receive is known to be posted).
///
/// # Safety
/// `buf` holds `count` elements of `datatype` (the standard's contract).
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
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
    with_state(call, comm, |st| {
        let c = &st.comm(comm)?.comm;
        // The fast path: a predefined type, sent from the caller's bytes.
        if let (Some(len), true) = (direct_bytes(count, dt), dest != MPI_PROC_NULL) {
            let p = if len == 0 { std::ptr::NonNull::<u8>::dangling().as_ptr() } else { buf.cast::<u8>() };
            if len > 0 && near_null(buf.cast(), 0) {
                return Err(Fail::new(MPI_ERR_BUFFER, "the send buffer is a null pointer"));
            }
            // SAFETY: `buf` holds `len` bytes for this call (the caller's
            // contract), or `len` is 0 and `p` is never read.
            return Ok(unsafe { raw::send(&c.process_at_rank(dest), p, len, tag, sync) }?);
        }
        let span = st.span(count, dt)?;
        if dest == MPI_PROC_NULL {
            return Ok(());
        }
        // SAFETY: `buf` holds the elements for this call (the caller's contract).
        Ok(unsafe { mpi::staged::send(&c.process_at_rank(dest), buf.cast(), &span, tag, sync) }?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Send(
    buf: *const c_void,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    if crate::threads::multiple() {
        // SAFETY: the standard's contract on the arguments.
        return unsafe { send_multiple("MPI_Send", buf, count, datatype, dest, tag, comm, false) };
    }
    // SAFETY: the standard's contract on the arguments.
    unsafe { send("MPI_Send", buf, count, datatype, dest, tag, comm, false) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ssend(
    buf: *const c_void,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    if crate::threads::multiple() {
        // SAFETY: the standard's contract on the arguments.
        return unsafe { send_multiple("MPI_Ssend", buf, count, datatype, dest, tag, comm, true) };
    }
    // SAFETY: the standard's contract on the arguments.
    unsafe { send("MPI_Ssend", buf, count, datatype, dest, tag, comm, true) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Rsend(
    buf: *const c_void,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    if crate::threads::multiple() {
        // SAFETY: the standard's contract on the arguments.
        return unsafe { send_multiple("MPI_Rsend", buf, count, datatype, dest, tag, comm, false) };
    }
    // SAFETY: the standard's contract on the arguments.
    unsafe { send("MPI_Rsend", buf, count, datatype, dest, tag, comm, false) }
}

/// Blocking receive.
///
/// # Safety
/// `buf` has room for `count` elements of `dt`; `status` is null or writable.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
#[inline]
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
    let tag = recv_tag(tag)?;
    // The fast path: a predefined type, received into the caller's bytes.
    if let (Some(len), true) = (direct_bytes(count, dt), source != MPI_PROC_NULL) {
        let p = if len == 0 { std::ptr::null_mut() } else { buf.cast::<u8>() };
        if len > 0 && near_null(buf.cast(), 0) {
            return Err(Fail::new(MPI_ERR_BUFFER, "the receive buffer is a null pointer"));
        }
        // SAFETY: `buf` has room for `len` bytes for this call (the
        // caller's contract); a 0-byte receive writes nothing.
        let s = unsafe { from_source!(c, source, from => raw::recv(from, p, len, tag)) }?;
        // SAFETY: the caller's contract on `status`.
        unsafe { put_status(status, c_status(&s)) };
        return Ok(());
    }
    // SAFETY: the caller's contract, passed on.
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
    tag: Option<c_int>,
    comm: Handle,
    status: *mut MpiStatus,
) -> R<()> {
    let c = &st.comm(comm)?.comm;
    let span = st.span(count, dt)?;
    if source == MPI_PROC_NULL {
        // SAFETY: the caller's contract on `status`.
        unsafe { put_status(status, MpiStatus::proc_null()) };
        return Ok(());
    }
    // SAFETY: `buf` has room for the elements for this call (the caller's contract).
    let s = unsafe { from_source!(c, source, from => mpi::staged::recv(from, buf.cast(), &span, tag)) }?;
    // SAFETY: the caller's contract on `status`.
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
        // SAFETY: the standard's contract on the arguments, passed on.
        return unsafe { recv_multiple(buf, count, datatype, source, tag, comm, status) };
    }
    with_state("MPI_Recv", comm, |st| {
        // SAFETY: the standard's contract on the arguments.
        let r = unsafe { recv(st, buf, count, datatype, source, tag, comm, status) };
        if let Err(f) = r {
            // A truncated receive still says whose message it was (§3.2.5).
            // SAFETY: the standard's contract on `status`.
            return unsafe { put_outcome(status, Err(f)) };
        }
        Ok(())
    })
}

/// Register `r` as a new request handle and write it to `out`.
///
/// # Safety
/// `out` is writable.
pub(crate) unsafe fn new_request(st: &mut State, r: Req, out: *mut Handle) -> R<()> {
    if out.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "request is a null pointer"));
    }
    let h = st.new_handle();
    st.requests.insert(h, r);
    // SAFETY: non-null; the caller's contract.
    unsafe { out.write(h) };
    Ok(())
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
    // SAFETY: `h` is a local; the caller's contract on `status`.
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
    // SAFETY: the caller's contract; the call waits for the send.
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
    // SAFETY: the caller's contract; the call waits for the receive.
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
        // SAFETY: the caller keeps `buf` until the operation completes
        // (this function's contract, the standard's §3.7.2); the request's
        // handle is the only way to complete it, and MPI_Finalize
        // completes what is left.
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
        // SAFETY: the caller keeps `buf` untouched until the operation
        // completes (this function's contract, the standard's §3.7.2).
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
        // SAFETY: the caller's contract on the buffer, passed on.
        let r = unsafe { send_req(st, buf, count, dt, dest, tag, comm, sync) }?;
        // SAFETY: the caller's contract on `request`.
        unsafe { new_request(st, r, request) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Isend(
    buf: *const c_void,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    // SAFETY: the standard's contract on the arguments.
    unsafe { isend("MPI_Isend", buf, count, datatype, dest, tag, comm, request, false) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Issend(
    buf: *const c_void,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    // SAFETY: the standard's contract on the arguments.
    unsafe { isend("MPI_Issend", buf, count, datatype, dest, tag, comm, request, true) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Irsend(
    buf: *const c_void,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    // SAFETY: the standard's contract on the arguments.
    unsafe { isend("MPI_Irsend", buf, count, datatype, dest, tag, comm, request, false) }
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
        // SAFETY: the standard's contract on the buffer, passed on.
        let r = unsafe { recv_req(st, buf, count, datatype, source, tag, comm) }?;
        // SAFETY: the caller's contract on `request`.
        unsafe { new_request(st, r, request) }
    })
}

/// What a send-receive sends: the caller's send buffer, or (the
/// `_replace` forms) a copy of the receive buffer, taken before the
/// receive may overwrite it.
enum SendPart {
    Buffer { buf: *const c_void, count: c_int, dt: Handle },
    Copy,
}

/// Start a send-receive (§3.10): the send starts first, so that two ranks
/// exchanging with each other cannot deadlock however large the messages.
/// One operation, which completes when both halves have and reports the
/// receive's status.
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
    let tag = recv_tag(recvtag)?;
    if sendtag < 0 {
        return Err(Fail::new(MPI_ERR_TAG, format!("sendtag {sendtag} is negative")));
    }
    let sent = match send {
        _ if dest == MPI_PROC_NULL => None,
        SendPart::Buffer { buf, count, dt } => {
            let span = st.span(count, dt)?;
            // SAFETY: the caller's contract on the send buffer.
            Some(unsafe { start_send(&c.process_at_rank(dest), buf, &span, sendtag, false) }?)
        }
        SendPart::Copy => {
            // SAFETY: the receive buffer holds the elements to send.
            let data = unsafe { outgoing(recvbuf.cast(), &rspan, "send")? }.into_owned();
            Some(mpi::staged::isend_owned(&c.process_at_rank(dest), data, sendtag, false)?)
        }
    };
    let received = if source == MPI_PROC_NULL {
        None
    } else {
        // SAFETY: the caller's contract on the receive buffer.
        Some(unsafe { from_source!(c, source, from => start_recv(from, recvbuf, &rspan, tag)) }?)
    };
    Ok(match (sent, received) {
        (None, None) => Req::Done(Ok(mpi::Status::proc_null())),
        (None, Some(r)) => Req::Op(r),
        (Some(mut s), None) => {
            s.stage.status = Some(mpi::Status::proc_null());
            Req::Op(s)
        }
        (Some(s), Some(mut r)) => {
            r.stage.with.push(s);
            Req::Op(r)
        }
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
        // SAFETY: the standard's contract on the buffers and `status`; the
        // call waits for the operation.
        return unsafe {
            block_on("MPI_Sendrecv", comm, status, |st| {
                start_sendrecv(st, send, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm)
            })
        };
    }
    with_state("MPI_Sendrecv", comm, |st| {
        // SAFETY: the standard's contract on the buffers; complete before returning.
        let r =
            unsafe { start_sendrecv(st, send, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm) }?;
        // SAFETY: the standard's contract on `status`.
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
        // SAFETY: the standard's contract: the buffers are the request's
        // until it completes (§3.7.2).
        let r =
            unsafe { start_sendrecv(st, send, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm) }?;
        // SAFETY: the standard's contract on `request`.
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
        // SAFETY: the standard's contract on the buffer and `status`; the
        // call waits for the operation.
        return unsafe {
            block_on("MPI_Sendrecv_replace", comm, status, |st| {
                start_sendrecv(st, SendPart::Copy, dest, sendtag, buf, count, datatype, source, recvtag, comm)
            })
        };
    }
    with_state("MPI_Sendrecv_replace", comm, |st| {
        // SAFETY: the standard's contract on the buffer; complete before returning.
        let r =
            unsafe { start_sendrecv(st, SendPart::Copy, dest, sendtag, buf, count, datatype, source, recvtag, comm) }?;
        // SAFETY: the standard's contract on `status`.
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
        // SAFETY: the standard's contract: the buffer is the request's
        // until it completes.
        let r =
            unsafe { start_sendrecv(st, SendPart::Copy, dest, sendtag, buf, count, datatype, source, recvtag, comm) }?;
        // SAFETY: the standard's contract on `request`.
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
    let s = from_source!(c, source, from => raw::probe_until(from, tag, &crate::threads::stop)?);
    s.as_ref().map(c_status).ok_or_else(crate::threads::yielded)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Probe(source: c_int, tag: c_int, comm: Handle, status: *mut MpiStatus) -> c_int {
    if crate::threads::multiple() {
        return crate::threads::blocking_call("MPI_Probe", comm, |st| {
            let s = probe_multiple(st, source, tag, comm)?;
            // SAFETY: the standard's contract on `status`.
            unsafe { put_status(status, s) };
            Ok(())
        });
    }
    with_state("MPI_Probe", comm, |st| {
        let s = probe(st, source, tag, comm, true)?.unwrap_or_else(MpiStatus::empty);
        // SAFETY: the standard's contract on `status`.
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
        // SAFETY: the standard's contract on `flag` and `status`.
        unsafe {
            put(flag, s.is_some() as c_int, "flag")?;
            if let Some(s) = s {
                put_status(status, s);
            }
        }
        Ok(())
    })
}

// ---- completion (MPI 4.1 §3.7.3-3.7.5) ---------------------------------------
//
// Every completion call is one call of `mpi::request::settle`, the engine
// the Rust API's `wait_all`/`wait_any`/`wait_some` use: one MPI call
// charged, the engine's wait (which idles) when blocking, one progress pass
// when testing. What stays here is C's: handles, inactive persistent
// requests, arrays of statuses and indices, and error classes.

fn not_active(h: Handle) -> Fail {
    let what = if h == MPI_REQUEST_NULL { "MPI_REQUEST_NULL".to_string() } else { format!("{h:#x}") };
    Fail::new(MPI_ERR_REQUEST, format!("{what} is not an active request (completed and freed, or never started)"))
}

/// The part request `h` plays in a completion call (`Slot::part`).
fn part(st: &State, h: Handle) -> R<Part<'_, 'static>> {
    if h == MPI_REQUEST_NULL {
        return Ok(Part::Idle);
    }
    match st.requests.get(&h) {
        Some(r) => Ok(r.part()),
        None => crate::greq::part(st, h).ok_or_else(|| not_active(h)),
    }
}

/// Settle requests `hs` as one call (see `mpi::request::settle`): which
/// have ended, and which take no part. A generalized request not yet
/// complete takes part but cannot end here: a wait that only it could end
/// fails (`crate::greq`).
fn settle(st: &State, hs: &[Handle], need: Need, block: bool, call: &str) -> R<(Vec<bool>, Vec<bool>)> {
    let parts = hs.iter().map(|&h| part(st, h)).collect::<R<Vec<_>>>()?;
    let pending: Vec<bool> = if st.greqs.is_empty() && st.partitioned.is_empty() {
        Vec::new()
    } else {
        hs.iter().map(|&h| held(st, h)).collect()
    };
    let multiple = block && crate::threads::multiple();
    if let (true, Some(i)) = (block, pending.iter().position(|&p| p)) {
        let stuck = need == Need::All || parts.iter().all(|p| matches!(p, Part::Idle));
        if stuck && !(multiple && crate::threads::others_exist()) {
            return Err(wait_for_ever(st, call, hs[i]));
        }
    }
    let ended = if multiple {
        mpi::request::settle_until(&parts, need, call, &crate::threads::stop)?
    } else {
        mpi::request::settle(&parts, need, block, call)?
    };
    let idle: Vec<bool> =
        parts.iter().enumerate().map(|(i, p)| matches!(p, Part::Idle) && !pending.get(i).is_some_and(|&x| x)).collect();
    if multiple {
        let done = match need {
            Need::All => ended.iter().zip(&idle).all(|(e, i)| *e || *i),
            Need::One => idle.iter().all(|&i| i) || ended.iter().any(|&e| e),
        };
        if !done {
            return Err(crate::threads::again(st, pending.iter().any(|&p| p)));
        }
    }
    Ok((ended, idle))
}

/// Run completion call `call`'s body: blocking under
/// `MPI_THREAD_MULTIPLE`, again each time it lets another thread in
/// (`crate::threads::blocking_call`).
fn completion(call: &str, comm: Handle, block: bool, body: impl FnMut(&mut State) -> R<()>) -> c_int {
    if block && crate::threads::multiple() {
        return crate::threads::blocking_call(call, comm, body);
    }
    with_state(call, comm, body)
}

/// Whether request `h` is active but cannot end while this process waits:
/// a generalized request not yet complete, or a partitioned send whose
/// partitions are not all ready.
fn held(st: &State, h: Handle) -> bool {
    crate::greq::pending(st, h) || crate::partitioned::waiting(st, h)
}

/// The error of a wait that only request `h`, [`held`], could end.
fn wait_for_ever(st: &State, call: &str, h: Handle) -> Fail {
    if crate::partitioned::waiting(st, h) {
        crate::partitioned::would_wait_for_ever(call, h)
    } else {
        crate::greq::would_wait_for_ever(call, h)
    }
}

/// Settle one request (`MPI_Wait`, `MPI_Test`, `MPI_Request_get_status`):
/// whether it has ended or takes no part (then it completes at once, with
/// an empty status). The polling loop's call: one allocation, no more.
fn settle_one(st: &State, h: Handle, block: bool, call: &str) -> R<bool> {
    let p = part(st, h)?;
    let idle = matches!(p, Part::Idle);
    let multiple = block && crate::threads::multiple();
    if idle && !(st.greqs.is_empty() && st.partitioned.is_empty()) && held(st, h) {
        return match block {
            false => Ok(false),
            true if multiple && crate::threads::others_exist() => Err(crate::threads::again(st, true)),
            true => Err(wait_for_ever(st, call, h)),
        };
    }
    if multiple {
        let done = mpi::request::settle_until(std::slice::from_ref(&p), Need::All, call, &crate::threads::stop)?[0];
        return if done || idle { Ok(true) } else { Err(crate::threads::again(st, false)) };
    }
    Ok(mpi::request::settle(std::slice::from_ref(&p), Need::All, block, call)?[0] || idle)
}

/// Complete request `h`, which has ended or takes no part
/// (`Slot::complete`): its outcome, and what its handle becomes. `out`
/// is where the call writes the status (a generalized request's
/// `query_fn` fills it in after), `in_array` whether the call reports on
/// an array of requests.
fn take(st: &mut State, h: Handle, out: *mut MpiStatus, in_array: bool) -> (R<MpiStatus>, Handle) {
    if h == MPI_REQUEST_NULL {
        return (Ok(MpiStatus::empty()), h);
    }
    let Some(slot) = st.requests.remove(&h) else {
        return crate::greq::report(st, h, out, in_array, true).unwrap_or_else(|| (Err(not_active(h)), h));
    };
    let (mut s, left) = slot.complete();
    if !st.idups.is_empty() {
        crate::env::settle_idup(st, h, &mut s);
    }
    let nh = match left {
        Some(slot) => {
            st.requests.insert(h, slot);
            h
        }
        None => MPI_REQUEST_NULL,
    };
    (outcome(s), nh)
}

/// Keep the outcome of request `h`, found ended, without freeing or
/// deactivating it (`Slot::keep`, `MPI_Request_get_status`); `out` and
/// `in_array` as for [`take`].
pub(crate) fn keep(st: &mut State, h: Handle, out: *mut MpiStatus, in_array: bool) -> R<MpiStatus> {
    if h == MPI_REQUEST_NULL {
        return Ok(MpiStatus::empty());
    }
    let Some(slot) = st.requests.remove(&h) else {
        return crate::greq::report(st, h, out, in_array, false).map_or_else(|| Err(not_active(h)), |(s, _)| s);
    };
    let (s, slot) = slot.keep();
    st.requests.insert(h, slot);
    outcome(s)
}

/// A status array's entry for a request that failed, in a call that
/// reports `MPI_ERR_IN_STATUS` (§3.2.5, §3.7.5).
fn failed_status(f: &Fail) -> MpiStatus {
    f.status()
}

/// The error of a call that completed several requests of which some
/// failed: `MPI_ERR_IN_STATUS`, naming the first.
fn in_status(failed: usize, first: &Fail) -> Fail {
    Fail::new(
        MPI_ERR_IN_STATUS,
        format!("{failed} of the requests failed (see each status's MPI_ERROR); the first: {}", first.msg),
    )
}

/// `MPI_Wait` and `MPI_Test` on one request.
///
/// # Safety
/// `request` is readable and writable; `flag` and `status` are null or
/// writable.
unsafe fn one(call: &str, block: bool, request: *mut Handle, flag: *mut c_int, status: *mut MpiStatus) -> c_int {
    // SAFETY: the caller's contract, passed on.
    unsafe { one_on(call, MPI_COMM_WORLD, block, request, flag, status) }
}

/// Wait for request `*request` as `MPI_Wait` does (letting other threads
/// in under `MPI_THREAD_MULTIPLE`), its errors going to `comm`'s handler
/// under `call`'s name: the wait of a blocking call made of its
/// non-blocking form.
///
/// # Safety
/// `request` is readable and writable.
pub(crate) unsafe fn wait_request(call: &str, comm: Handle, request: *mut Handle) -> c_int {
    // SAFETY: the caller's contract; no status is written.
    unsafe { one_on(call, comm, true, request, std::ptr::null_mut(), std::ptr::null_mut()) }
}

/// [`one`], its errors going to `comm`'s handler (a blocking call made of
/// its non-blocking form and a wait, [`block_on`]).
///
/// # Safety
/// As [`one`].
unsafe fn one_on(
    call: &str,
    comm: Handle,
    block: bool,
    request: *mut Handle,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    completion(call, comm, block, |st| {
        // SAFETY: the caller's contract on `request`.
        let h = unsafe { read_arg(request, "request")? };
        let done = settle_one(st, h, block, call)?;
        if !block {
            // SAFETY: the caller's contract on `flag`.
            unsafe { put(flag, done as c_int, "flag")? };
        }
        if !done {
            return Ok(());
        }
        let (s, nh) = take(st, h, status, false);
        // SAFETY: the caller's contract on `request` and `status`. A failed
        // request is freed too, so that a test loop on it ends.
        unsafe {
            request.write(nh);
            put_result(status, &s);
        }
        s.map(drop)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Wait(request: *mut Handle, status: *mut MpiStatus) -> c_int {
    // SAFETY: the standard's contract on the arguments.
    unsafe { one("MPI_Wait", true, request, std::ptr::null_mut(), status) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Test(request: *mut Handle, flag: *mut c_int, status: *mut MpiStatus) -> c_int {
    // SAFETY: the standard's contract on the arguments.
    unsafe { one("MPI_Test", false, request, flag, status) }
}

/// The request handles of an array argument, read-only.
///
/// # Safety
/// `reqs` holds `count` handles.
unsafe fn handles_ref<'a>(count: c_int, reqs: *const Handle) -> R<&'a [Handle]> {
    if count < 0 {
        return Err(Fail::new(MPI_ERR_COUNT, format!("count {count} is negative")));
    }
    if count == 0 {
        return Ok(&[]);
    }
    if reqs.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "array_of_requests is a null pointer"));
    }
    // SAFETY: `reqs` is not null (checked) and holds `count` handles, as
    // the MPI call's `array_of_requests` (this function's contract).
    Ok(unsafe { std::slice::from_raw_parts(reqs, count as usize) })
}

/// The request handles of an array argument, which the call rewrites.
///
/// # Safety
/// `reqs` holds `count` writable handles.
unsafe fn handles<'a>(count: c_int, reqs: *mut Handle) -> R<&'a mut [Handle]> {
    // SAFETY: the caller's contract; checked as for reading.
    let n = unsafe { handles_ref(count, reqs)? }.len();
    if n == 0 {
        return Ok(&mut []);
    }
    // SAFETY: the caller's contract: `count` writable handles.
    Ok(unsafe { std::slice::from_raw_parts_mut(reqs, n) })
}

/// `MPI_Waitall` and `MPI_Testall`: all or nothing (§3.7.5). When some
/// fail, every status says how its request ended and the call returns
/// `MPI_ERR_IN_STATUS`.
///
/// # Safety
/// The arrays hold `count` entries; `flag` is null or writable.
unsafe fn all(
    call: &str,
    block: bool,
    count: c_int,
    reqs: *mut Handle,
    flag: *mut c_int,
    sts: *mut MpiStatus,
) -> c_int {
    completion(call, MPI_COMM_WORLD, block, |st| {
        // SAFETY: the caller's contract on the array.
        let reqs = unsafe { handles(count, reqs)? };
        let (ended, idle) = settle(st, reqs, Need::All, block, call)?;
        let done = ended.iter().zip(&idle).all(|(e, i)| *e || *i);
        if !block {
            // SAFETY: the caller's contract on `flag`.
            unsafe { put(flag, done as c_int, "flag")? };
        }
        if !done {
            return Ok(());
        }
        let outcomes = reqs
            .iter_mut()
            .enumerate()
            .map(|(i, h)| {
                // SAFETY: the caller's contract: `count` statuses, or none.
                let (s, nh) = take(st, *h, unsafe { status_at(sts, i) }, true);
                *h = nh;
                (i, s)
            })
            .collect();
        // SAFETY: the array has `count` statuses (the caller's contract).
        unsafe { put_outcomes(outcomes, sts) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitall(
    count: c_int,
    array_of_requests: *mut Handle,
    array_of_statuses: *mut MpiStatus,
) -> c_int {
    // SAFETY: the standard's contract on the arrays.
    unsafe { all("MPI_Waitall", true, count, array_of_requests, std::ptr::null_mut(), array_of_statuses) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testall(
    count: c_int,
    array_of_requests: *mut Handle,
    flag: *mut c_int,
    array_of_statuses: *mut MpiStatus,
) -> c_int {
    // SAFETY: the standard's contract on the arrays.
    unsafe { all("MPI_Testall", false, count, array_of_requests, flag, array_of_statuses) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status(request: Handle, flag: *mut c_int, status: *mut MpiStatus) -> c_int {
    with_state("MPI_Request_get_status", MPI_COMM_WORLD, |st| {
        let done = settle_one(st, request, false, "MPI_Request_get_status")?;
        // SAFETY: the standard's contract on `flag`.
        unsafe { put(flag, done as c_int, "flag")? };
        if done {
            let s = keep(st, request, status, false);
            // SAFETY: the standard's contract on `status`.
            unsafe { put_result(status, &s) };
            s?;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status_all(
    count: c_int,
    array_of_requests: *const Handle,
    flag: *mut c_int,
    array_of_statuses: *mut MpiStatus,
) -> c_int {
    with_state("MPI_Request_get_status_all", MPI_COMM_WORLD, |st| {
        // SAFETY: the standard's contract on the array (only read here).
        let reqs = unsafe { handles_ref(count, array_of_requests)? };
        let call = "MPI_Request_get_status_all";
        let (ended, idle) = settle(st, reqs, Need::All, false, call)?;
        let all = ended.iter().zip(&idle).all(|(e, i)| *e || *i);
        // SAFETY: the standard's contract on `flag`.
        unsafe { put(flag, all as c_int, "flag")? };
        if !all {
            return Ok(());
        }
        let sts = array_of_statuses;
        // SAFETY: the standard's contract: `count` statuses, or none.
        let outcomes: Vec<R<MpiStatus>> =
            reqs.iter().enumerate().map(|(i, &h)| keep(st, h, unsafe { status_at(sts, i) }, true)).collect();
        // SAFETY: the array has `count` statuses (the standard's contract).
        unsafe { put_outcomes(outcomes.into_iter().enumerate().collect(), array_of_statuses) }
    })
}

/// Entry `k` of a status array, or null for `MPI_STATUSES_IGNORE`.
///
/// # Safety
/// `sts` is null or has more than `k` entries.
unsafe fn status_at(sts: *mut MpiStatus, k: usize) -> *mut MpiStatus {
    if sts.is_null() {
        return sts;
    }
    // SAFETY: not null, so more than `k` entries (the caller's contract).
    unsafe { sts.add(k) }
}

/// Write the outcomes of completed requests to a status array, in order;
/// when some failed, every entry's `MPI_ERROR` says how its request ended
/// and the result is `MPI_ERR_IN_STATUS` (§3.7.5).
///
/// # Safety
/// `sts` is null or has room for every outcome.
unsafe fn put_outcomes(outcomes: Vec<(usize, R<MpiStatus>)>, sts: *mut MpiStatus) -> R<()> {
    let failed = outcomes.iter().filter(|(_, s)| s.is_err()).count();
    if !sts.is_null() {
        for (k, (_, s)) in outcomes.iter().enumerate() {
            let s = match s {
                Ok(s) if failed > 0 => MpiStatus { error: MPI_SUCCESS, ..*s },
                Ok(s) => *s,
                Err(f) => failed_status(f),
            };
            // SAFETY: the caller's contract: room for every outcome.
            unsafe { sts.add(k).write(s) };
        }
    }
    match outcomes.into_iter().find_map(|(_, s)| s.err()) {
        Some(f) => Err(in_status(failed, &f)),
        None => Ok(()),
    }
}

/// The first request of `reqs` that takes part and has ended, settled as
/// one call (`Err(())`: none takes part).
fn settle_any(st: &State, reqs: &[Handle], block: bool, call: &str) -> R<Result<Option<usize>, ()>> {
    let (ended, idle) = settle(st, reqs, Need::One, block, call)?;
    if idle.iter().all(|&i| i) {
        return Ok(Err(()));
    }
    Ok(Ok(ended.iter().position(|&e| e)))
}

/// `MPI_Waitany`, `MPI_Testany` and `MPI_Request_get_status_any`
/// (`free`: complete the request found, else keep its outcome).
///
/// # Safety
/// The array holds `count` handles (writable when `free`); `index`,
/// `flag` and `status` are null or writable.
#[allow(clippy::too_many_arguments)] // the MPI calls' own arguments
unsafe fn any(
    call: &str,
    block: bool,
    free: bool,
    count: c_int,
    reqs: *mut Handle,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    completion(call, MPI_COMM_WORLD, block, |st| {
        // SAFETY: the caller's contract on the array.
        let reqs = unsafe { handles_ref(count, reqs)? };
        let (i, f, s) = match settle_any(st, reqs, block, call)? {
            Err(()) => (MPI_UNDEFINED, 1, Some(Ok(MpiStatus::empty()))),
            Ok(None) => (MPI_UNDEFINED, 0, None),
            Ok(Some(i)) if free => {
                let (s, nh) = take(st, reqs[i], status, false);
                // SAFETY: the caller's contract: the array is writable when freeing.
                unsafe { reqs.as_ptr().cast_mut().add(i).write(nh) };
                (i as c_int, 1, Some(s))
            }
            Ok(Some(i)) => (i as c_int, 1, Some(keep(st, reqs[i], status, false))),
        };
        // SAFETY: the caller's contract on `index`, `flag` and `status`.
        unsafe {
            put(index, i, "index")?;
            if !block {
                put(flag, f, "flag")?;
            }
            match &s {
                // No active request: the empty status, whole (MPI 4.1
                // §3.7.3: its error is MPI_SUCCESS too; mpi4py checks).
                Some(Ok(e)) if i == MPI_UNDEFINED && !status.is_null() => status.write(*e),
                Some(s) => put_result(status, s),
                None => {}
            }
        }
        s.transpose().map(drop)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitany(
    count: c_int,
    array_of_requests: *mut Handle,
    index: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    let f = std::ptr::null_mut();
    // SAFETY: the standard's contract on the arguments.
    unsafe { any("MPI_Waitany", true, true, count, array_of_requests, index, f, status) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testany(
    count: c_int,
    array_of_requests: *mut Handle,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    // SAFETY: the standard's contract on the arguments.
    unsafe { any("MPI_Testany", false, true, count, array_of_requests, index, flag, status) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status_any(
    count: c_int,
    array_of_requests: *const Handle,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    let reqs = array_of_requests.cast_mut();
    // SAFETY: the standard's contract on the arguments; the array is only read.
    unsafe { any("MPI_Request_get_status_any", false, false, count, reqs, index, flag, status) }
}

/// `MPI_Waitsome`, `MPI_Testsome` and `MPI_Request_get_status_some`
/// (`free`: complete the requests found, else keep their outcomes).
///
/// # Safety
/// The arrays hold `incount` entries (the requests writable when
/// `free`); `outcount` is null or writable.
#[allow(clippy::too_many_arguments)] // the MPI calls' own arguments
unsafe fn some(
    call: &str,
    block: bool,
    free: bool,
    incount: c_int,
    reqs: *mut Handle,
    outcount: *mut c_int,
    indices: *mut c_int,
    sts: *mut MpiStatus,
) -> c_int {
    completion(call, MPI_COMM_WORLD, block, |st| {
        // SAFETY: the caller's contract on the array.
        let hs = unsafe { handles_ref(incount, reqs)? };
        let (ended, idle) = settle(st, hs, Need::One, block, call)?;
        if idle.iter().all(|&i| i) {
            // SAFETY: the caller's contract on `outcount`.
            return unsafe { put(outcount, MPI_UNDEFINED, "outcount") };
        }
        let found: Vec<usize> = (0..hs.len()).filter(|&i| ended[i]).collect();
        if !found.is_empty() && indices.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "array_of_indices is a null pointer"));
        }
        let mut outcomes = Vec::with_capacity(found.len());
        for &i in &found {
            // SAFETY: the caller's contract: room for every request, or none.
            let out = unsafe { status_at(sts, outcomes.len()) };
            let s = if free {
                let (s, nh) = take(st, hs[i], out, true);
                // SAFETY: the caller's contract: the array is writable when freeing.
                unsafe { reqs.add(i).write(nh) };
                s
            } else {
                keep(st, hs[i], out, true)
            };
            // SAFETY: the caller's contract: room for every request.
            unsafe { indices.add(outcomes.len()).write(i as c_int) };
            outcomes.push((i, s));
        }
        // SAFETY: the caller's contract on `outcount`.
        unsafe { put(outcount, found.len() as c_int, "outcount")? };
        // SAFETY: the caller's contract on the status array.
        unsafe { put_outcomes(outcomes, sts) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status_some(
    incount: c_int,
    array_of_requests: *const Handle,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MpiStatus,
) -> c_int {
    let (r, o, i, s) = (array_of_requests.cast_mut(), outcount, array_of_indices, array_of_statuses);
    // SAFETY: the standard's contract on the arrays; the requests are only read.
    unsafe { some("MPI_Request_get_status_some", false, false, incount, r, o, i, s) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitsome(
    incount: c_int,
    array_of_requests: *mut Handle,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MpiStatus,
) -> c_int {
    let (r, o, i, s) = (array_of_requests, outcount, array_of_indices, array_of_statuses);
    // SAFETY: the standard's contract on the arrays.
    unsafe { some("MPI_Waitsome", true, true, incount, r, o, i, s) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testsome(
    incount: c_int,
    array_of_requests: *mut Handle,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MpiStatus,
) -> c_int {
    let (r, o, i, s) = (array_of_requests, outcount, array_of_indices, array_of_statuses);
    // SAFETY: the standard's contract on the arrays.
    unsafe { some("MPI_Testsome", false, true, incount, r, o, i, s) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_free(request: *mut Handle) -> c_int {
    with_state("MPI_Request_free", MPI_COMM_WORLD, |st| {
        // SAFETY: the standard's contract on `request`.
        let h = unsafe { read_arg(request, "request")? };
        // An idup's duplicate is installed when its request completes: a
        // freed one would leave the new handle unusable for ever. Freeing
        // a non-blocking collective's request is erroneous (§6.12).
        if st.idups.iter().any(|&(r, _)| r == h) {
            return Err(Fail::new(
                MPI_ERR_REQUEST,
                "the request of an MPI_Comm_idup cannot be freed (MPI 4.1 §6.12): complete it with MPI_Wait or MPI_Test",
            ));
        }
        // The operation still completes (§3.7.3), with the buffer the
        // caller's to keep until then: the request is kept, progressed by
        // every later call, and waited for at MPI_Finalize at the latest.
        // MPI_REQUEST_NULL is no request to free (§3.7.3).
        if !st.partitioned.is_empty() {
            crate::partitioned::free(st, h)?;
        }
        if !st.requests.contains_key(&h) && crate::greq::free(st, h).is_some() {
            // SAFETY: the standard's contract on `request` (INOUT).
            unsafe { request.write(MPI_REQUEST_NULL) };
            return Ok(());
        }
        let r = st.requests.remove(&h).ok_or_else(|| {
            let what = if h == MPI_REQUEST_NULL { "MPI_REQUEST_NULL".to_string() } else { format!("{h:#x}") };
            Fail::new(MPI_ERR_REQUEST, format!("{what} is not a request (completed and freed, or never started)"))
        })?;
        st.detached.extend(r.detach().map(Req::Op));
        // SAFETY: the standard's contract on `request` (INOUT, MPI 4.1
        // §3.7.3): readable above, and writable.
        unsafe { request.write(MPI_REQUEST_NULL) };
        Ok(())
    })
}

/// A persistent request over `op` (§3.9.1), inactive until started.
///
/// # Safety
/// `request` is writable.
unsafe fn persistent(st: &mut State, comm: Handle, op: PersistentOp, request: *mut Handle) -> R<()> {
    let handle = comm;
    let comm = st.comm(comm)?.comm.clone();
    // SAFETY: the caller's contract on `request`.
    unsafe { new_request(st, Req::persistent(Recipe { comm, handle, op }), request) }
}

/// The mode of a persistent send (§3.4; a ready send is a standard one
/// whose receive is known to be posted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Standard,
    Synchronous,
    Buffered,
}

/// A persistent send of any mode.
///
/// # Safety
/// `request` is writable; `buf` stays valid while the request lives.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn send_init(
    call: &str,
    buf: *const c_void,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
    mode: Mode,
) -> c_int {
    with_state(call, comm, |st| {
        let span = st.span(count, datatype)?;
        if tag < 0 {
            return Err(Fail::new(MPI_ERR_TAG, format!("tag {tag} is negative")));
        }
        let op = PersistentOp::Send { buf, span, dest, tag, mode };
        // SAFETY: the caller's contract on `request`.
        unsafe { persistent(st, comm, op, request) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Send_init(
    buf: *const c_void,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    // SAFETY: the standard's contract on the arguments.
    unsafe { send_init("MPI_Send_init", buf, count, datatype, dest, tag, comm, request, Mode::Standard) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ssend_init(
    buf: *const c_void,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    // SAFETY: the standard's contract on the arguments.
    unsafe { send_init("MPI_Ssend_init", buf, count, datatype, dest, tag, comm, request, Mode::Synchronous) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Rsend_init(
    buf: *const c_void,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    // SAFETY: the standard's contract on the arguments.
    unsafe { send_init("MPI_Rsend_init", buf, count, datatype, dest, tag, comm, request, Mode::Standard) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Bsend_init(
    buf: *const c_void,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    // SAFETY: the standard's contract on the arguments.
    unsafe { send_init("MPI_Bsend_init", buf, count, datatype, dest, tag, comm, request, Mode::Buffered) }
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
        let op = PersistentOp::Recv { buf, span, source, tag: recv_tag(tag)? };
        // SAFETY: the standard's contract on `request`.
        unsafe { persistent(st, comm, op, request) }
    })
}

/// Start persistent request `h` (§3.9.2).
fn start(st: &mut State, h: Handle) -> R<()> {
    if !st.partitioned.is_empty() && crate::partitioned::start(st, h)? == Some(true) {
        return Ok(());
    }
    // A persistent collective starts with the whole state in hand (its
    // communicator's schedule, its datatypes), then becomes the request's
    // active operation.
    let coll = match st.requests.get(&h) {
        Some(Req::Persistent(p)) => match &p.recipe.op {
            PersistentOp::Coll(start, place) => Some((start.clone(), place.clone(), p.recipe.comm.clone())),
            _ => None,
        },
        _ => None,
    };
    if let Some((coll, place, comm)) = coll {
        if !matches!(st.requests.get(&h).map(Req::part), Some(mpi::request::Part::Idle)) {
            return Err(Fail::new(
                MPI_ERR_REQUEST,
                "MPI_Start of a persistent collective that is still active (complete it first, §6.13)",
            ));
        }
        let op = place.start(&comm, || coll(st))?;
        let Some(Req::Persistent(p)) = st.requests.get_mut(&h) else {
            return Err(Fail::new(MPI_ERR_REQUEST, format!("{h:#x} was freed while it started")));
        };
        return p.start(|_| Ok(Started::Op(op))).map_err(Fail::from);
    }
    let Some(Req::Persistent(p)) = st.requests.get_mut(&h) else {
        return Err(Fail::new(MPI_ERR_REQUEST, format!("{h:#x} is not a persistent request")));
    };
    let (comms, sessions, buffered) = (&mut st.comms, &mut st.sessions, &mut st.buffered);
    let mut sent = None;
    let started = p.start(|Recipe { comm: c, handle, op }| {
        Ok(match op {
            PersistentOp::Send { dest: MPI_PROC_NULL, .. }
            | PersistentOp::Recv { source: MPI_PROC_NULL, .. }
            | PersistentOp::Precv { source: MPI_PROC_NULL, .. } => Started::Done(mpi::Status::proc_null()),
            PersistentOp::Send { buf, span, dest, tag, mode: Mode::Buffered } => {
                // The message is copied now: the started request is complete.
                let b = crate::bsend::buffer_for(comms, sessions, buffered, *handle);
                // SAFETY: the caller keeps the buffer given to MPI_Bsend_init
                // valid while the request lives (§3.9).
                sent = Some((*handle, unsafe { b.send(&c.process_at_rank(*dest), buf.cast(), span, *tag) }?));
                Started::Done(mpi::Status::empty())
            }
            PersistentOp::Send { buf, span, dest, tag, mode } => {
                let sync = *mode == Mode::Synchronous;
                // SAFETY: the caller keeps the buffer given to MPI_Send_init
                // until each started operation completes (§3.9).
                Started::Op(unsafe { mpi::staged::isend(&c.process_at_rank(*dest), buf.cast(), span, *tag, sync) }?)
            }
            PersistentOp::Recv { buf, span, source, tag } => {
                let (buf, tag) = (buf.cast(), *tag);
                // SAFETY: as above, for MPI_Recv_init's buffer.
                Started::Op(unsafe { from_source!(c, *source, from => mpi::staged::irecv(from, buf, span, tag)) }?)
            }
            PersistentOp::Precv { buf, span, channel, .. } => {
                // SAFETY: the program keeps the buffer given to
                // MPI_Precv_init until each started receive completes (§4.2).
                Started::Op(unsafe { mpi::staged::partitioned::irecv(c, channel, buf.cast(), span) }?)
            }
            PersistentOp::Psend { .. } => {
                return Err(mpi::MpiError::Request("a partitioned send starts when its partitions are ready".into()))
            }
            PersistentOp::Coll(..) => {
                return Err(mpi::MpiError::Request("a persistent collective is started by its own path".into()))
            }
        })
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
        // SAFETY: the standard's contract on `request`.
        start(st, unsafe { read_arg(request, "request")? })
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Startall(count: c_int, array_of_requests: *mut Handle) -> c_int {
    with_state("MPI_Startall", MPI_COMM_WORLD, |st| {
        // SAFETY: the standard's contract on the array.
        for h in unsafe { handles(count, array_of_requests)? }.iter() {
            start(st, *h)?;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cancel(request: *mut Handle) -> c_int {
    with_state("MPI_Cancel", MPI_COMM_WORLD, |st| {
        // SAFETY: the standard's contract on `request`.
        let h = unsafe { read_arg(request, "request")? };
        let Some(slot) = st.requests.get(&h) else {
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
