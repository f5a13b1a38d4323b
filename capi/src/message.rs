//! Matched probes and receives (MPI 4.1 §3.8.2-3.8.3): `MPI_Mprobe` and
//! `MPI_Improbe` take the message they find out of matching, so that only
//! the `MPI_Mrecv`/`MPI_Imrecv` handed its `MPI_Message` receives it —
//! what a threaded program needs where probe-then-receive would race.

use std::ffi::{c_int, c_void};

use mpi::staged::direct;
use mpi::{probe, Communicator};

use crate::abi::*;
use crate::datatype::incoming;
use crate::p2p::recv_tag;
use crate::*;

/// Probe for a message and take it (`None`: nothing yet, when not `block`).
fn mprobe(st: &mut State, source: c_int, tag: c_int, comm: Handle, block: bool) -> R<Option<(Handle, MpiStatus)>> {
    let c = &st.comm(comm)?.comm;
    let tag = recv_tag(tag)?;
    if source == MPI_PROC_NULL {
        return Ok(Some((MPI_MESSAGE_NO_PROC, MpiStatus::proc_null())));
    }
    // Under MPI_THREAD_MULTIPLE a blocking probe gives the lock up where
    // it would idle while another thread wants it (`crate::threads`).
    let multiple = block && crate::threads::multiple();
    let stop = crate::threads::stop;
    let m = match (source == MPI_ANY_SOURCE, multiple) {
        (true, false) => probe::mprobe(&c.any_process(), tag, block)?,
        (false, false) => probe::mprobe(&c.process_at_rank(source), tag, block)?,
        (true, true) => probe::mprobe_until(&c.any_process(), tag, &stop)?,
        (false, true) => probe::mprobe_until(&c.process_at_rank(source), tag, &stop)?,
    };
    if multiple && m.is_none() {
        return Err(crate::threads::yielded());
    }
    Ok(match m {
        None => None,
        Some(m) => {
            let s = c_status(&m.status());
            let h = st.new_handle();
            st.messages.insert(h, m);
            Some((h, s))
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Mprobe(
    source: c_int,
    tag: c_int,
    comm: Handle,
    message: *mut Handle,
    status: *mut MpiStatus,
) -> c_int {
    let body = |st: &mut State| {
        if message.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "message is a null pointer"));
        }
        let (h, s) = mprobe(st, source, tag, comm, true)?.unwrap_or((MPI_MESSAGE_NULL, MpiStatus::empty()));
        // SAFETY: `message` is not null (checked above) and is MPI_Mprobe's out-argument, valid for writing one handle,
        // and `status` is null (MPI_STATUS_IGNORE) or valid for writing one MPI_Status, both for this call (MPI 4.1
        // §3.8.2): what the write and `put_status` require.
        unsafe {
            message.write(h);
            put_status(status, s);
        }
        Ok(())
    };
    if crate::threads::multiple() {
        return crate::threads::blocking_call("MPI_Mprobe", comm, body);
    }
    with_state("MPI_Mprobe", comm, body)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Improbe(
    source: c_int,
    tag: c_int,
    comm: Handle,
    flag: *mut c_int,
    message: *mut Handle,
    status: *mut MpiStatus,
) -> c_int {
    with_state("MPI_Improbe", comm, |st| {
        if message.is_null() || flag.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "flag or message is a null pointer"));
        }
        let found = mprobe(st, source, tag, comm, false)?;
        // SAFETY: `flag` and `message` are not null (checked above) and are MPI_Improbe's out-arguments, valid for
        // writing one `int` and one handle, and `status` is null (MPI_STATUS_IGNORE) or valid for writing one
        // MPI_Status, all for this call (MPI 4.1 §3.8.2): what the writes and `put_status` require.
        unsafe {
            flag.write(found.is_some() as c_int);
            if let Some((h, s)) = found {
                message.write(h);
                put_status(status, s);
            }
        }
        Ok(())
    })
}

/// Start receiving the message `*message` names into `buf`; the handle
/// becomes `MPI_MESSAGE_NULL`. `None` for `MPI_MESSAGE_NO_PROC`.
///
/// # Safety
/// `message` is readable and writable; `buf` has room for `count`
/// elements and is left alone until the receive completes.
unsafe fn mrecv(st: &mut State, buf: *mut c_void, count: c_int, dt: Handle, message: *mut Handle) -> R<Option<Staged>> {
    // SAFETY: `message` is readable and writable for one handle for this call (`mrecv`'s `# Safety`, from the in/out
    // argument of MPI_Mrecv or MPI_Imrecv); `read_arg` refuses null.
    let h = unsafe { read_arg(message, "message")? };
    let span = st.span(count, dt)?;
    if h == MPI_MESSAGE_NO_PROC {
        // SAFETY: `message` was read above, so it is not null; the standard makes it writable
        // (§3.8.3).
        unsafe { message.write(MPI_MESSAGE_NULL) };
        return Ok(None);
    }
    let m = st.messages.remove(&h).ok_or_else(|| {
        Fail::new(MPI_ERR_REQUEST, format!("{h:#x} is not a matched message (never probed, or already received)"))
    })?;
    // SAFETY: `message` was read above, so it is not null; the standard makes it writable (§3.8.3).
    unsafe { message.write(MPI_MESSAGE_NULL) };
    // SAFETY: `buf` has room for `count` elements of `dt` (`span`) and is left alone until the receive completes
    // (`mrecv`'s `# Safety`), which is what `incoming` requires: the returned value goes into the request, which keeps
    // it until then.
    let inc = unsafe { incoming(buf.cast(), &span, "receive", false)? };
    // SAFETY: `inc` is the caller's buffer or a staging buffer the request keeps.
    let r = unsafe { direct::imrecv(m, inc.ptr, inc.len) }?;
    Ok(Some(Staged { request: r, stage: mpi::staged::Stage { unpack: inc.stage, ..Default::default() } }))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Mrecv(
    buf: *mut c_void,
    count: c_int,
    datatype: Handle,
    message: *mut Handle,
    status: *mut MpiStatus,
) -> c_int {
    if crate::threads::multiple() {
        // SAFETY: `buf` has room for `count` elements of `datatype` and `message` points to one readable and writable
        // handle, for the whole of MPI_Mrecv (MPI 4.1 §3.8.3), and `status` is null or writable for one MPI_Status;
        // `block_on` waits for the receive before returning, so the buffer outlives it as `mrecv` and `block_on`
        // require.
        return unsafe {
            crate::p2p::block_on("MPI_Mrecv", MPI_COMM_WORLD, status, |st| {
                Ok(match mrecv(st, buf, count, datatype, message)? {
                    Some(a) => Req::Op(a),
                    None => Req::Done(Ok(mpi::Status::proc_null())),
                })
            })
        };
    }
    with_state("MPI_Mrecv", MPI_COMM_WORLD, |st| {
        // SAFETY: `buf` has room for `count` elements of `datatype` and `message` points to one readable and writable
        // handle, for the whole of MPI_Mrecv (MPI 4.1 §3.8.3), and `a.wait()` completes the receive before this call
        // returns: `mrecv`'s `# Safety`.
        let s = match unsafe { mrecv(st, buf, count, datatype, message)? } {
            Some(a) => outcome(a.wait()),
            None => Ok(MpiStatus::proc_null()),
        };
        // SAFETY: `status` is MPI_Mrecv's out-argument, null (MPI_STATUS_IGNORE) or valid for writing one MPI_Status
        // for this call, which is `put_outcome`'s requirement.
        unsafe { put_outcome(status, s) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Imrecv(
    buf: *mut c_void,
    count: c_int,
    datatype: Handle,
    message: *mut Handle,
    request: *mut Handle,
) -> c_int {
    with_state("MPI_Imrecv", MPI_COMM_WORLD, |st| {
        if request.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "request is a null pointer"));
        }
        // SAFETY: `buf` has room for `count` elements of `datatype` and the program leaves it alone until the request
        // completes, and `message` points to one readable and writable handle for this call, as MPI 4.1 §3.8.3 requires
        // of MPI_Imrecv's caller: `mrecv`'s `# Safety`.
        let r = match unsafe { mrecv(st, buf, count, datatype, message)? } {
            Some(a) => Req::Op(a),
            None => Req::Done(Ok(mpi::Status::proc_null())),
        };
        // SAFETY: `request` is not null (checked above) and is MPI_Imrecv's out-argument, valid for writing one handle
        // for this call: what `new_request` requires.
        unsafe { new_request(st, r, request) }
    })
}
