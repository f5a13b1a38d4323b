//! Point-to-point (MPI 4.1 §3): blocking and non-blocking sends and
//! receives straight from and into the caller's buffer (`mpi::raw`: no
//! copy), probes, and completion (§3.7.3-3.7.5), with `MPI_PROC_NULL`
//! (§3.10), `MPI_ANY_SOURCE`/`MPI_ANY_TAG` and `MPI_STATUS(ES)_IGNORE`.

use std::ffi::{c_int, c_void};

use std::borrow::Cow;

use mpi::{raw, Communicator, Process, Source};

use crate::abi::*;
use crate::datatype::{direct_bytes, incoming, near_null, outgoing, Span};
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

/// Start sending `span` of `buf`: from the caller's bytes in place, or
/// from a packed copy the operation keeps.
///
/// # Safety
/// `buf` holds the span's elements until the operation completes.
pub(crate) unsafe fn start_send(
    to: &Process<'_>,
    buf: *const c_void,
    span: &Span,
    tag: c_int,
    sync: bool,
) -> R<Active> {
    // SAFETY: the caller's contract.
    Ok(match unsafe { outgoing(buf, span, "send")? } {
        // SAFETY: the caller keeps `b` until completion.
        Cow::Borrowed(b) => Active::plain(unsafe { raw::isend(to, b.as_ptr(), b.len(), tag, sync) }?),
        Cow::Owned(v) => send_owned(to, v, tag, sync)?,
    })
}

/// Start sending bytes of our own (a packed or buffered copy), which the
/// operation keeps until it completes.
pub(crate) fn send_owned(to: &Process<'_>, v: Vec<u8>, tag: c_int, sync: bool) -> R<Active> {
    // SAFETY: `v`'s heap bytes do not move when `v` does, and the request
    // keeps `v` until it completes.
    let r = unsafe { raw::isend(to, v.as_ptr(), v.len(), tag, sync) }?;
    Ok(Active { r, stage: Stage { hold: vec![v], ..Stage::default() } })
}

/// Start receiving `span` of `buf`: into the caller's bytes in place, or
/// into a staging buffer unpacked at completion.
///
/// # Safety
/// `buf` has room for the span's elements and is left alone until the
/// operation completes.
unsafe fn start_recv<S: Source + ?Sized>(from: &S, buf: *mut c_void, span: &Span, tag: Option<c_int>) -> R<Active> {
    // SAFETY: the caller's contract.
    let inc = unsafe { incoming(buf, span, "receive", false)? };
    // SAFETY: `inc.ptr` is the caller's buffer or the staging buffer the
    // request keeps, valid for `inc.len` bytes until completion.
    let r = unsafe { raw::irecv(from, inc.ptr, inc.len, tag) }?;
    Ok(Active { r, stage: Stage { unpack: inc.stage, ..Stage::default() } })
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
            if len > 0 && near_null(buf, 0) {
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
        let data = unsafe { outgoing(buf, &span, "send")? };
        // SAFETY: `data` is valid for this call.
        Ok(unsafe { raw::send(&c.process_at_rank(dest), data.as_ptr(), data.len(), tag, sync) }?)
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
        if len > 0 && near_null(buf, 0) {
            return Err(Fail::new(MPI_ERR_BUFFER, "the receive buffer is a null pointer"));
        }
        // SAFETY: `buf` has room for `len` bytes for this call (the
        // caller's contract); a 0-byte receive writes nothing.
        let s = unsafe { from_source!(c, source, from => raw::recv(from, p, len, tag)) }?;
        // SAFETY: the caller's contract on `status`.
        unsafe { put_status(status, c_status(&s)) };
        return Ok(());
    }
    let span = st.span(count, dt)?;
    if source == MPI_PROC_NULL {
        // SAFETY: the caller's contract on `status`.
        unsafe { put_status(status, MpiStatus::proc_null()) };
        return Ok(());
    }
    // SAFETY: `buf` has room for the elements for this call (the caller's contract).
    let inc = unsafe { incoming(buf, &span, "receive", false)? };
    // SAFETY: `inc` is valid for `inc.len` bytes for this call.
    let s = unsafe { from_source!(c, source, from => raw::recv(from, inc.ptr, inc.len, tag)) }?;
    // SAFETY: the caller's contract on `buf` and `status`.
    unsafe {
        inc.finish(s.bytes());
        put_status(status, c_status(&s));
    }
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
    // SAFETY: the standard's contract on the arguments.
    with_state("MPI_Recv", comm, |st| unsafe { recv(st, buf, count, datatype, source, tag, comm, status) })
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
        let c = &st.comm(comm)?.comm;
        let span = st.span(count, dt)?;
        let r = if dest == MPI_PROC_NULL {
            Req::Done(MpiStatus::proc_null())
        } else {
            // SAFETY: the caller keeps `buf` until the request completes
            // (the standard's contract, §3.7.2); the request's handle is
            // the only way to complete it, and MPI_Finalize completes what
            // is left.
            Req::Op(unsafe { start_send(&c.process_at_rank(dest), buf, &span, tag, sync) }?)
        };
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
        let c = &st.comm(comm)?.comm;
        let span = st.span(count, datatype)?;
        let tag = recv_tag(tag)?;
        let r = if source == MPI_PROC_NULL {
            Req::Done(MpiStatus::proc_null())
        } else {
            // SAFETY: the caller keeps `buf` untouched until the request
            // completes (the standard's contract, §3.7.2).
            Req::Op(unsafe { from_source!(c, source, from => start_recv(from, buf, &span, tag)) }?)
        };
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
            let data = unsafe { outgoing(recvbuf, &rspan, "send")? }.into_owned();
            Some(send_owned(&c.process_at_rank(dest), data, sendtag, false)?)
        }
    };
    let received = if source == MPI_PROC_NULL {
        None
    } else {
        // SAFETY: the caller's contract on the receive buffer.
        Some(unsafe { from_source!(c, source, from => start_recv(from, recvbuf, &rspan, tag)) }?)
    };
    Ok(match (sent, received) {
        (None, None) => Req::Done(MpiStatus::proc_null()),
        (None, Some(r)) => Req::Op(r),
        (Some(mut s), None) => {
            s.stage.status = Some(MpiStatus::proc_null());
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
        Req::Op(a) => a.wait(),
        Req::Done(s) => Ok(s),
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
    with_state("MPI_Sendrecv", comm, |st| {
        let send = SendPart::Buffer { buf: sendbuf, count: sendcount, dt: sendtype };
        // SAFETY: the standard's contract on the buffers; complete before returning.
        let r =
            unsafe { start_sendrecv(st, send, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm) }?;
        let s = wait_req(r)?;
        // SAFETY: the standard's contract on `status`.
        unsafe { put_status(status, s) };
        Ok(())
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
    with_state("MPI_Sendrecv_replace", comm, |st| {
        // SAFETY: the standard's contract on the buffer; complete before returning.
        let r =
            unsafe { start_sendrecv(st, SendPart::Copy, dest, sendtag, buf, count, datatype, source, recvtag, comm) }?;
        let s = wait_req(r)?;
        // SAFETY: the standard's contract on `status`.
        unsafe { put_status(status, s) };
        Ok(())
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

#[no_mangle]
pub unsafe extern "C" fn MPI_Probe(source: c_int, tag: c_int, comm: Handle, status: *mut MpiStatus) -> c_int {
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

/// Complete request `h` (waiting when `block`); `None`: not complete yet.
/// A completed request's handle is freed, except a persistent request's,
/// which becomes inactive (see [`after`]); an inactive one completes at
/// once with an empty status (§3.9).
fn complete(st: &mut State, h: Handle, block: bool) -> R<Option<MpiStatus>> {
    if h == MPI_REQUEST_NULL {
        return Ok(Some(MpiStatus::empty()));
    }
    let r = st.requests.remove(&h).ok_or_else(|| {
        Fail::new(MPI_ERR_REQUEST, format!("{h:#x} is not an active request (completed and freed, or never started)"))
    })?;
    match r {
        Req::Persistent(mut p) => {
            let s = match (p.done.take(), p.active.take()) {
                (Some(s), _) => Some(s),
                (None, None) => Some(MpiStatus::empty()),
                (None, Some(r)) if block => Some(r.wait()?),
                (None, Some(r)) => match r.test()? {
                    Ok(s) => Some(s),
                    Err(r) => {
                        p.active = Some(r);
                        None
                    }
                },
            };
            st.requests.insert(h, Req::Persistent(p));
            Ok(s)
        }
        Req::Done(s) => Ok(Some(s)),
        Req::Op(r) if block => Ok(Some(r.wait()?)),
        Req::Op(r) => match r.test()? {
            Ok(s) => Ok(Some(s)),
            Err(r) => {
                st.requests.insert(h, Req::Op(r));
                Ok(None)
            }
        },
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Wait(request: *mut Handle, status: *mut MpiStatus) -> c_int {
    with_state("MPI_Wait", MPI_COMM_WORLD, |st| {
        // SAFETY: the standard's contract on `request`.
        let h = unsafe { read_arg(request, "request")? };
        let s = complete(st, h, true)?.unwrap_or_else(MpiStatus::empty);
        // SAFETY: the standard's contract on `request` and `status`.
        unsafe {
            request.write(after(st, h));
            put_status(status, s);
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Test(request: *mut Handle, flag: *mut c_int, status: *mut MpiStatus) -> c_int {
    with_state("MPI_Test", MPI_COMM_WORLD, |st| {
        // SAFETY: the standard's contract on `request`.
        let h = unsafe { read_arg(request, "request")? };
        let s = complete(st, h, false)?;
        // SAFETY: the standard's contract on `request`, `flag` and `status`.
        unsafe {
            put(flag, s.is_some() as c_int, "flag")?;
            if let Some(s) = s {
                request.write(after(st, h));
                put_status(status, s);
            }
        }
        Ok(())
    })
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
    // SAFETY: the caller's contract.
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

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitall(
    count: c_int,
    array_of_requests: *mut Handle,
    array_of_statuses: *mut MpiStatus,
) -> c_int {
    with_state("MPI_Waitall", MPI_COMM_WORLD, |st| {
        // SAFETY: the standard's contract on the arrays.
        let reqs = unsafe { handles(count, array_of_requests)? };
        // Waiting in order completes them all: each wait drives the
        // progress of every other request.
        for (i, h) in reqs.iter_mut().enumerate() {
            let s = complete(st, *h, true)?.unwrap_or_else(MpiStatus::empty);
            *h = after(st, *h);
            if !array_of_statuses.is_null() {
                // SAFETY: the array has `count` statuses (the standard's contract).
                unsafe { array_of_statuses.add(i).write(s) };
            }
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testall(
    count: c_int,
    array_of_requests: *mut Handle,
    flag: *mut c_int,
    array_of_statuses: *mut MpiStatus,
) -> c_int {
    with_state("MPI_Testall", MPI_COMM_WORLD, |st| {
        // SAFETY: the standard's contract on the arrays.
        let reqs = unsafe { handles(count, array_of_requests)? };
        // All or nothing (§3.7.5): complete only when every one is done;
        // those found done are kept done until then.
        let mut all = true;
        for h in reqs.iter() {
            all &= peek(st, *h)?.is_some();
        }
        if all {
            for (i, h) in reqs.iter_mut().enumerate() {
                let s = complete(st, *h, true)?.unwrap_or_else(MpiStatus::empty);
                *h = after(st, *h);
                if !array_of_statuses.is_null() {
                    // SAFETY: the array has `count` statuses.
                    unsafe { array_of_statuses.add(i).write(s) };
                }
            }
        }
        // SAFETY: the standard's contract on `flag`.
        unsafe { put(flag, all as c_int, "flag") }
    })
}

/// Whether request `h` has completed, without freeing or deactivating it
/// (`MPI_Request_get_status`, §3.7.3, and `MPI_Testall`'s all or nothing):
/// an operation found complete is kept as done, so that the call that
/// completes it later reports the same status. Null and inactive requests
/// give the empty status.
fn peek(st: &mut State, h: Handle) -> R<Option<MpiStatus>> {
    if h == MPI_REQUEST_NULL {
        return Ok(Some(MpiStatus::empty()));
    }
    let r = st.requests.remove(&h).ok_or_else(|| {
        Fail::new(MPI_ERR_REQUEST, format!("{h:#x} is not an active request (completed and freed, or never started)"))
    })?;
    let (r, s) = match r {
        Req::Done(s) => (Req::Done(s), Some(s)),
        Req::Persistent(mut p) => {
            let s = match (p.done, p.active.take()) {
                (Some(s), _) => Some(s),
                (None, None) => Some(MpiStatus::empty()),
                (None, Some(a)) => match a.test()? {
                    Ok(s) => {
                        p.done = Some(s);
                        Some(s)
                    }
                    Err(a) => {
                        p.active = Some(a);
                        None
                    }
                },
            };
            (Req::Persistent(p), s)
        }
        Req::Op(a) => match a.test()? {
            Ok(s) => (Req::Done(s), Some(s)),
            Err(a) => (Req::Op(a), None),
        },
    };
    st.requests.insert(h, r);
    Ok(s)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status(request: Handle, flag: *mut c_int, status: *mut MpiStatus) -> c_int {
    with_state("MPI_Request_get_status", MPI_COMM_WORLD, |st| {
        let s = peek(st, request)?;
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
        let mut done = Vec::with_capacity(reqs.len());
        for h in reqs.iter() {
            done.push(peek(st, *h)?);
        }
        let all = done.iter().all(Option::is_some);
        if all && !array_of_statuses.is_null() {
            for (i, s) in done.into_iter().flatten().enumerate() {
                // SAFETY: the array has `count` statuses (the standard's contract).
                unsafe { array_of_statuses.add(i).write(s) };
            }
        }
        // SAFETY: the standard's contract on `flag`.
        unsafe { put(flag, all as c_int, "flag") }
    })
}

/// The requests of `reqs` that take part and have completed, without
/// freeing them (`None`: none takes part); with `first`, the first only.
fn peek_some(st: &mut State, reqs: &[Handle], first: bool) -> R<Option<Vec<(usize, MpiStatus)>>> {
    if reqs.iter().all(|h| inactive(st, *h)) {
        return Ok(None);
    }
    let mut done = Vec::new();
    for (i, h) in reqs.iter().enumerate() {
        if inactive(st, *h) {
            continue;
        }
        if let Some(s) = peek(st, *h)? {
            done.push((i, s));
            if first {
                break;
            }
        }
    }
    Ok(Some(done))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status_any(
    count: c_int,
    array_of_requests: *const Handle,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    with_state("MPI_Request_get_status_any", MPI_COMM_WORLD, |st| {
        // SAFETY: the standard's contract on the array (only read here).
        let reqs = unsafe { handles_ref(count, array_of_requests)? };
        let (i, f, s) = match peek_some(st, reqs, true)? {
            None => (MPI_UNDEFINED, 1, Some(MpiStatus::empty())),
            Some(d) if d.is_empty() => (MPI_UNDEFINED, 0, None),
            Some(d) => (d[0].0 as c_int, 1, Some(d[0].1)),
        };
        // SAFETY: the standard's contract on `index`, `flag` and `status`.
        unsafe {
            put(index, i, "index")?;
            put(flag, f, "flag")?;
            if let Some(s) = s {
                put_status(status, s);
            }
        }
        Ok(())
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
    with_state("MPI_Request_get_status_some", MPI_COMM_WORLD, |st| {
        // SAFETY: the standard's contract on the array (only read here).
        let reqs = unsafe { handles_ref(incount, array_of_requests)? };
        let done = peek_some(st, reqs, false)?;
        // SAFETY: the standard's contract on the output arrays.
        unsafe { put_some(done, outcount, array_of_indices, array_of_statuses) }
    })
}

/// Null and inactive persistent requests take no part in the `any` and
/// `some` calls (§3.7.5).
fn inactive(st: &State, h: Handle) -> bool {
    h == MPI_REQUEST_NULL
        || matches!(st.requests.get(&h), Some(Req::Persistent(p)) if p.active.is_none() && p.done.is_none())
}

/// Complete the requests of `reqs` that are done (at least one, waiting
/// for it, when `block`); `None` when none takes part. With `first`, stop
/// at the first one found.
fn some(st: &mut State, reqs: &mut [Handle], block: bool, first: bool) -> R<Option<Vec<(usize, MpiStatus)>>> {
    if reqs.iter().all(|h| inactive(st, *h)) {
        return Ok(None);
    }
    loop {
        let mut done = Vec::new();
        for (i, h) in reqs.iter_mut().enumerate() {
            if inactive(st, *h) {
                continue;
            }
            if let Some(s) = complete(st, *h, false)? {
                *h = after(st, *h);
                done.push((i, s));
                if first {
                    break;
                }
            }
        }
        if !done.is_empty() || !block {
            return Ok(Some(done));
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitany(
    count: c_int,
    array_of_requests: *mut Handle,
    index: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    with_state("MPI_Waitany", MPI_COMM_WORLD, |st| {
        // SAFETY: the standard's contract on the array.
        let reqs = unsafe { handles(count, array_of_requests)? };
        let (i, s) = match some(st, reqs, true, true)? {
            Some(d) => (d[0].0 as c_int, d[0].1),
            None => (MPI_UNDEFINED, MpiStatus::empty()),
        };
        // SAFETY: the standard's contract on `index` and `status`.
        unsafe {
            put(index, i, "index")?;
            put_status(status, s);
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testany(
    count: c_int,
    array_of_requests: *mut Handle,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    with_state("MPI_Testany", MPI_COMM_WORLD, |st| {
        // SAFETY: the standard's contract on the array.
        let reqs = unsafe { handles(count, array_of_requests)? };
        let (i, f, s) = match some(st, reqs, false, true)? {
            None => (MPI_UNDEFINED, 1, Some(MpiStatus::empty())),
            Some(d) if d.is_empty() => (MPI_UNDEFINED, 0, None),
            Some(d) => (d[0].0 as c_int, 1, Some(d[0].1)),
        };
        // SAFETY: the standard's contract on `index`, `flag` and `status`.
        unsafe {
            put(index, i, "index")?;
            put(flag, f, "flag")?;
            if let Some(s) = s {
                put_status(status, s);
            }
        }
        Ok(())
    })
}

/// `MPI_Waitsome` and `MPI_Testsome`.
///
/// # Safety
/// The arrays hold `incount` entries; the pointers are writable.
unsafe fn waitsome(
    call: &str,
    block: bool,
    incount: c_int,
    array_of_requests: *mut Handle,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MpiStatus,
) -> c_int {
    with_state(call, MPI_COMM_WORLD, |st| {
        // SAFETY: the caller's contract on the array.
        let reqs = unsafe { handles(incount, array_of_requests)? };
        let done = some(st, reqs, block, false)?;
        // SAFETY: the caller's contract on the output arrays.
        unsafe { put_some(done, outcount, array_of_indices, array_of_statuses) }
    })
}

/// The results of the `some` calls: `MPI_UNDEFINED` when no request took
/// part, else how many completed, which, and their statuses.
///
/// # Safety
/// `outcount` is writable; the arrays have room for every request.
unsafe fn put_some(
    done: Option<Vec<(usize, MpiStatus)>>,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MpiStatus,
) -> R<()> {
    let Some(done) = done else {
        // SAFETY: the caller's contract on `outcount`.
        return unsafe { put(outcount, MPI_UNDEFINED, "outcount") };
    };
    if !done.is_empty() && array_of_indices.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "array_of_indices is a null pointer"));
    }
    for (k, (i, s)) in done.iter().enumerate() {
        // SAFETY: the caller's contract: room for every request.
        unsafe {
            array_of_indices.add(k).write(*i as c_int);
            if !array_of_statuses.is_null() {
                array_of_statuses.add(k).write(*s);
            }
        }
    }
    // SAFETY: the caller's contract on `outcount`.
    unsafe { put(outcount, done.len() as c_int, "outcount") }
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
    unsafe { waitsome("MPI_Waitsome", true, incount, r, o, i, s) }
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
    unsafe { waitsome("MPI_Testsome", false, incount, r, o, i, s) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_free(request: *mut Handle) -> c_int {
    with_state("MPI_Request_free", MPI_COMM_WORLD, |st| {
        // SAFETY: the standard's contract on `request`.
        let h = unsafe { read_arg(request, "request")? };
        // The operation still completes (§3.7.3), with the buffer the
        // caller's to keep until then: the request is kept, progressed by
        // every later call, and waited for at MPI_Finalize at the latest.
        // MPI_REQUEST_NULL is no request to free (§3.7.3).
        let r = st.requests.remove(&h).ok_or_else(|| {
            let what = if h == MPI_REQUEST_NULL { "MPI_REQUEST_NULL".to_string() } else { format!("{h:#x}") };
            Fail::new(MPI_ERR_REQUEST, format!("{what} is not a request (completed and freed, or never started)"))
        })?;
        match r {
            Req::Persistent(p) => st.detached.extend(p.active.map(Req::Op)),
            r => st.detached.push(r),
        }
        // SAFETY: as above.
        unsafe { request.write(MPI_REQUEST_NULL) };
        Ok(())
    })
}

/// What a request handle becomes once its operation has completed:
/// `MPI_REQUEST_NULL`, or itself for a persistent request (now inactive).
fn after(st: &State, h: Handle) -> Handle {
    if st.requests.contains_key(&h) {
        h
    } else {
        MPI_REQUEST_NULL
    }
}

/// A persistent request over `op` (§3.9.1), inactive until started.
///
/// # Safety
/// `request` is writable.
unsafe fn persistent(st: &mut State, comm: Handle, op: PersistentOp, request: *mut Handle) -> R<()> {
    let handle = comm;
    let comm = st.comm(comm)?.comm.clone();
    let p = Persistent { comm, handle, op, active: None, done: None };
    // SAFETY: the caller's contract on `request`.
    unsafe { new_request(st, Req::Persistent(Box::new(p)), request) }
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
    let Some(Req::Persistent(p)) = st.requests.get_mut(&h) else {
        return Err(Fail::new(MPI_ERR_REQUEST, format!("{h:#x} is not a persistent request")));
    };
    if p.active.is_some() || p.done.is_some() {
        return Err(Fail::new(MPI_ERR_REQUEST, "MPI_Start of a persistent request that is still active"));
    }
    let c = &p.comm;
    match &p.op {
        PersistentOp::Send { dest: MPI_PROC_NULL, .. } | PersistentOp::Recv { source: MPI_PROC_NULL, .. } => {
            p.done = Some(MpiStatus::proc_null());
        }
        PersistentOp::Send { buf, span, dest, tag, mode: Mode::Buffered } => {
            // The message is copied now: the started request is complete.
            let b = crate::bsend::buffer_for(&mut st.comms, &mut st.buffered, p.handle);
            // SAFETY: the caller keeps the buffer given to MPI_Bsend_init
            // valid while the request lives (§3.9).
            unsafe { b.send(&c.process_at_rank(*dest), *buf, span, *tag) }?;
            p.done = Some(MpiStatus::empty());
        }
        PersistentOp::Send { buf, span, dest, tag, mode } => {
            let sync = *mode == Mode::Synchronous;
            // SAFETY: the caller keeps the buffer given to MPI_Send_init
            // until each started operation completes (§3.9).
            p.active = Some(unsafe { start_send(&c.process_at_rank(*dest), *buf, span, *tag, sync) }?);
        }
        PersistentOp::Recv { buf, span, source, tag } => {
            let (buf, tag) = (*buf, *tag);
            // SAFETY: as above, for MPI_Recv_init's buffer.
            p.active = Some(unsafe { from_source!(c, *source, from => start_recv(from, buf, span, tag)) }?);
        }
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
        let r = match st.requests.get(&h) {
            Some(Req::Op(r)) => Some(r),
            Some(Req::Persistent(p)) => p.active.as_ref(),
            Some(Req::Done(_)) => None,
            None => return Err(Fail::new(MPI_ERR_REQUEST, format!("{h:#x} is not an active request"))),
        };
        // The request must still be completed; its status says whether the
        // cancellation won (§3.8.4).
        if let Some(r) = r {
            r.r.cancel().map_err(|e| Fail::new(MPI_ERR_UNSUPPORTED_OPERATION, e.to_string()))?;
        }
        Ok(())
    })
}
