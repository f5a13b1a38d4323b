//! Buffered mode (MPI 4.1 §3.6): `MPI_Bsend`, `MPI_Ibsend` and each start
//! of `MPI_Bsend_init` complete at once, with the message copied out of
//! the caller's buffer, within the space the program attached: to the
//! communicator (`MPI_Comm_attach_buffer`, MPI 4.1), else to the process
//! (`MPI_Buffer_attach`); `MPI_BUFFER_AUTOMATIC` lets the library take
//! what it needs.
//!
//! The copy lives in the library (the engine sends from it), not in the
//! attached bytes; the attached size is enforced as the standard's
//! accounting does — each pending message takes its size plus
//! `MPI_BSEND_OVERHEAD` — so that a program that would overflow its
//! buffer under another MPI gets `MPI_ERR_BUFFER` here too.

use std::ffi::{c_int, c_void};

use mpi::{Communicator, Process};

use crate::abi::*;
use crate::datatype::{outgoing, Span};
use crate::*;

/// What a program attached.
#[derive(Clone, Copy)]
enum Space {
    /// Its bytes: their address and size.
    Buffer(*mut c_void, usize),
    /// `MPI_BUFFER_AUTOMATIC`: no limit.
    Automatic,
}

/// An attached buffer and the buffered sends not yet complete.
#[derive(Default)]
pub(crate) struct Buffered {
    attached: Option<Space>,
    pending: Vec<(Staged, usize)>,
}

/// Bytes each buffered message takes beyond its data (`MPI_BSEND_OVERHEAD`).
const OVERHEAD: usize = 512;

impl Buffered {
    /// Forget the buffered sends that have completed.
    fn reap(&mut self) -> R<()> {
        let mut left = Vec::new();
        for (a, n) in self.pending.drain(..) {
            if let Err(a) = a.test()? {
                left.push((a, n));
            }
        }
        self.pending = left;
        Ok(())
    }

    fn attach(&mut self, buffer: *mut c_void, size: i64) -> R<()> {
        if self.attached.is_some() {
            return Err(Fail::new(MPI_ERR_BUFFER, "a buffer is already attached: detach it first"));
        }
        self.attached = Some(if buffer as usize == BUFFER_AUTOMATIC {
            Space::Automatic
        } else {
            match usize::try_from(size) {
                Ok(n) if n == 0 || !buffer.is_null() => Space::Buffer(buffer, n),
                _ => {
                    return Err(Fail::new(MPI_ERR_BUFFER, format!("buffer {buffer:?} of size {size} is not a buffer")))
                }
            }
        });
        Ok(())
    }

    /// Wait for every buffered message to go (§3.6.1).
    fn flush(&mut self) -> R<()> {
        for (a, _) in self.pending.drain(..) {
            a.wait()?;
        }
        Ok(())
    }

    /// Detach after flushing: the buffer's address and size
    /// (`MPI_BUFFER_AUTOMATIC` and 0 for an automatic one).
    fn detach(&mut self) -> R<(*mut c_void, usize)> {
        let Some(space) = self.attached else {
            return Err(Fail::new(MPI_ERR_BUFFER, "no buffer is attached"));
        };
        self.flush()?;
        self.attached = None;
        Ok(match space {
            Space::Buffer(b, n) => (b, n),
            Space::Automatic => (BUFFER_AUTOMATIC as *mut c_void, 0),
        })
    }

    /// One request over the buffered messages in flight, complete when they
    /// all are (`MPI_Buffer_iflush`).
    fn iflush(&mut self) -> Req {
        let mut all: Vec<Staged> = self.pending.drain(..).map(|p| p.0).collect();
        match all.pop() {
            None => Req::Done(Ok(MpiStatus::empty())),
            Some(mut last) => {
                last.stage.with.extend(all);
                last.stage.status = Some(mpi::Status::empty());
                Req::Op(last)
            }
        }
    }
}

/// `MPI_BUFFER_AUTOMATIC`'s value in the ABI.
const BUFFER_AUTOMATIC: usize = 2;

/// The buffer a buffered send on `comm` uses: the communicator's if one is
/// attached to it, else the process's (MPI 4.1 §3.6). (Of the state's
/// fields, so that a caller may hold another field meanwhile.)
pub(crate) fn buffer_for<'a>(
    comms: &'a mut crate::comm_table::CommTable,
    process: &'a mut Buffered,
    comm: Handle,
) -> &'a mut Buffered {
    match comms.get_mut(&comm) {
        Some(e) if e.buffered.attached.is_some() => &mut e.buffered,
        _ => process,
    }
}

impl State {
    /// The buffer slot of a communicator, or of the process (`None`):
    /// what attach, detach and flush work on.
    fn slot(&mut self, comm: Option<Handle>) -> R<&mut Buffered> {
        match comm {
            None => Ok(&mut self.buffered),
            Some(c) => Ok(&mut self.comm_mut(c)?.buffered),
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
) -> R<()> {
    let c = st.comm(comm)?.comm.clone();
    let span = st.span(count, dt)?;
    if dest == MPI_PROC_NULL {
        return Ok(());
    }
    // SAFETY: `buf` holds `count` elements of `datatype` for this call (MPI 4.1 §3.6); the buffered
    // send copies them.
    unsafe { buffer_for(&mut st.comms, &mut st.buffered, comm).send(&c.process_at_rank(dest), buf, &span, tag) }
}

impl Buffered {
    /// Send `span` of `buf` from a copy, within the attached buffer's
    /// space: `MPI_Bsend`, `MPI_Ibsend` and each start of `MPI_Bsend_init`.
    ///
    /// # Safety
    /// `buf` holds the span's elements for the call.
    pub(crate) unsafe fn send(&mut self, to: &Process<'_>, buf: *const c_void, span: &Span, tag: c_int) -> R<()> {
        let size = match self.attached {
            None => {
                return Err(Fail::new(
                    MPI_ERR_BUFFER,
                    "a buffered send needs a buffer: call MPI_Buffer_attach or MPI_Comm_attach_buffer first",
                ))
            }
            Some(Space::Automatic) => usize::MAX,
            Some(Space::Buffer(_, n)) => n,
        };
        self.reap()?;
        let used: usize = self.pending.iter().map(|p| p.1 + OVERHEAD).sum();
        if used.saturating_add(span.len() + OVERHEAD) > size {
            return Err(Fail::new(
                MPI_ERR_BUFFER,
                format!(
                    "the attached buffer of {size} bytes has {} free, and this message needs {} ({} + MPI_BSEND_OVERHEAD)",
                    size.saturating_sub(used),
                    span.len() + OVERHEAD,
                    span.len()
                ),
            ));
        }
        // SAFETY: the caller's contract, for the copy made here.
        let data = unsafe { outgoing(buf.cast(), span, "send")? }.into_owned();
        let n = data.len();
        let a = mpi::staged::isend_owned(to, data, tag, false)?;
        self.pending.push((a, n));
        Ok(())
    }
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
    // SAFETY: the standard's contract on the arguments.
    with_state("MPI_Bsend", comm, |st| unsafe { bsend(st, buf, count, datatype, dest, tag, comm) })
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
        // The message is copied at once: the request is already complete.
        // SAFETY: the standard's contract on the arguments.
        unsafe { bsend(st, buf, count, datatype, dest, tag, comm)? };
        // SAFETY: checked non-null; the standard's contract.
        unsafe { crate::p2p::new_request(st, Req::Done(Ok(MpiStatus::empty())), request) }
    })
}

/// Attach to the process (`comm` null) or to a communicator.
///
/// # Safety
/// `buffer` is the program's for as long as it stays attached.
unsafe fn attach(call: &str, comm: Option<Handle>, buffer: *mut c_void, size: i64) -> c_int {
    with_state(call, comm.unwrap_or(MPI_COMM_WORLD), |st| st.slot(comm)?.attach(buffer, size))
}

/// Detach from the process or a communicator, writing the address and the
/// size (as `int` or `MPI_Count`).
///
/// # Safety
/// `buffer_addr` is the address of a `void *`; `size` is writable.
unsafe fn detach<T: TryFrom<usize>>(call: &str, comm: Option<Handle>, buffer_addr: *mut c_void, size: *mut T) -> c_int {
    with_state(call, comm.unwrap_or(MPI_COMM_WORLD), |st| {
        let (p, n) = st.slot(comm)?.detach()?;
        let n = T::try_from(n).map_err(|_| {
            Fail::new(MPI_ERR_COUNT, format!("the buffer's size {n} does not fit an int: use the _c call"))
        })?;
        // SAFETY: the caller's contract on the pointers.
        unsafe {
            put(buffer_addr.cast::<*mut c_void>(), p, "buffer_addr")?;
            put(size, n, "size")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_attach(buffer: *mut c_void, size: c_int) -> c_int {
    // SAFETY: the standard's contract on the buffer.
    unsafe { attach("MPI_Buffer_attach", None, buffer, i64::from(size)) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_attach_c(buffer: *mut c_void, size: i64) -> c_int {
    // SAFETY: the standard's contract on the buffer.
    unsafe { attach("MPI_Buffer_attach_c", None, buffer, size) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) -> c_int {
    // SAFETY: the standard's contract on the pointers.
    unsafe { detach("MPI_Buffer_detach", None, buffer_addr, size) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_detach_c(buffer_addr: *mut c_void, size: *mut i64) -> c_int {
    // SAFETY: the standard's contract on the pointers.
    unsafe { detach("MPI_Buffer_detach_c", None, buffer_addr, size) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_attach_buffer(comm: Handle, buffer: *mut c_void, size: c_int) -> c_int {
    // SAFETY: the standard's contract on the buffer.
    unsafe { attach("MPI_Comm_attach_buffer", Some(comm), buffer, i64::from(size)) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_attach_buffer_c(comm: Handle, buffer: *mut c_void, size: i64) -> c_int {
    // SAFETY: the standard's contract on the buffer.
    unsafe { attach("MPI_Comm_attach_buffer_c", Some(comm), buffer, size) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_detach_buffer(comm: Handle, buffer_addr: *mut c_void, size: *mut c_int) -> c_int {
    // SAFETY: the standard's contract on the pointers.
    unsafe { detach("MPI_Comm_detach_buffer", Some(comm), buffer_addr, size) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_detach_buffer_c(comm: Handle, buffer_addr: *mut c_void, size: *mut i64) -> c_int {
    // SAFETY: the standard's contract on the pointers.
    unsafe { detach("MPI_Comm_detach_buffer_c", Some(comm), buffer_addr, size) }
}

#[no_mangle]
pub extern "C" fn MPI_Buffer_flush() -> c_int {
    with_state("MPI_Buffer_flush", MPI_COMM_WORLD, |st| st.slot(None)?.flush())
}

#[no_mangle]
pub extern "C" fn MPI_Comm_flush_buffer(comm: Handle) -> c_int {
    with_state("MPI_Comm_flush_buffer", comm, |st| st.slot(Some(comm))?.flush())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_iflush(request: *mut Handle) -> c_int {
    with_state("MPI_Buffer_iflush", MPI_COMM_WORLD, |st| {
        let r = st.slot(None)?.iflush();
        // SAFETY: the standard's contract on `request`.
        unsafe { crate::p2p::new_request(st, r, request) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_iflush_buffer(comm: Handle, request: *mut Handle) -> c_int {
    with_state("MPI_Comm_iflush_buffer", comm, |st| {
        let r = st.slot(Some(comm))?.iflush();
        // SAFETY: the standard's contract on `request`.
        unsafe { crate::p2p::new_request(st, r, request) }
    })
}
