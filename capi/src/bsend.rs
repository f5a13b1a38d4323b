//! Buffered mode (MPI 4.1 §3.6): `MPI_Bsend`, `MPI_Ibsend` and each start
//! of `MPI_Bsend_init` complete at once, with the message copied out of the caller's buffer, within the
//! space the program attached with `MPI_Buffer_attach`.
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

/// The attached buffer and the buffered sends not yet complete.
#[derive(Default)]
pub(crate) struct Buffered {
    attached: Option<(*mut c_void, c_int)>,
    pending: Vec<(Active, usize)>,
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
    // SAFETY: the caller's contract.
    unsafe { st.buffered.send(&c.process_at_rank(dest), buf, &span, tag) }
}

impl Buffered {
    /// Send `span` of `buf` from a copy, within the attached buffer's
    /// space: `MPI_Bsend`, `MPI_Ibsend` and each start of `MPI_Bsend_init`.
    ///
    /// # Safety
    /// `buf` holds the span's elements for the call.
    pub(crate) unsafe fn send(&mut self, to: &Process<'_>, buf: *const c_void, span: &Span, tag: c_int) -> R<()> {
        let Some((_, size)) = self.attached else {
            return Err(Fail::new(MPI_ERR_BUFFER, "a buffered send needs a buffer: call MPI_Buffer_attach first"));
        };
        self.reap()?;
        let used: usize = self.pending.iter().map(|p| p.1 + OVERHEAD).sum();
        if used + span.len() + OVERHEAD > size as usize {
            return Err(Fail::new(
                MPI_ERR_BUFFER,
                format!(
                    "the attached buffer of {size} bytes has {} free, and this message needs {} ({} + MPI_BSEND_OVERHEAD)",
                    (size as usize).saturating_sub(used),
                    span.len() + OVERHEAD,
                    span.len()
                ),
            ));
        }
        // SAFETY: the caller's contract, for the copy made here.
        let data = unsafe { outgoing(buf, span, "send")? }.into_owned();
        let n = data.len();
        let a = crate::p2p::send_owned(to, data, tag, false)?;
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
        unsafe { crate::p2p::new_request(st, Req::Done(MpiStatus::empty()), request) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_attach(buffer: *mut c_void, size: c_int) -> c_int {
    with_state("MPI_Buffer_attach", MPI_COMM_WORLD, |st| {
        if st.buffered.attached.is_some() {
            return Err(Fail::new(MPI_ERR_BUFFER, "a buffer is already attached: detach it first"));
        }
        if size < 0 || (size > 0 && buffer.is_null()) {
            return Err(Fail::new(MPI_ERR_BUFFER, format!("buffer {buffer:?} of size {size} is not a buffer")));
        }
        st.buffered.attached = Some((buffer, size));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) -> c_int {
    with_state("MPI_Buffer_detach", MPI_COMM_WORLD, |st| {
        let Some((b, n)) = st.buffered.attached.take() else {
            return Err(Fail::new(MPI_ERR_BUFFER, "no buffer is attached"));
        };
        // Detaching waits for the buffered messages to go (§3.6.1).
        for (a, _) in st.buffered.pending.drain(..) {
            a.wait()?;
        }
        // SAFETY: the standard's contract: `buffer_addr` is the address of a `void *`.
        unsafe {
            put(buffer_addr.cast::<*mut c_void>(), b, "buffer_addr")?;
            put(size, n, "size")
        }
    })
}
