//! Buffered mode (MPI 4.1 §3.6): `MPI_Bsend`, `MPI_Ibsend`, attaching,
//! detaching and flushing buffers, over the mpi crate's accounting
//! (`mpi::bsend`). A communicator's buffer (`MPI_Comm_attach_buffer`, MPI
//! 4.1) is used when one is attached, else the process's
//! (`MPI_Buffer_attach`).

use std::ffi::{c_int, c_void};

use mpi::bsend::{Buffered, Space};
use mpi::Communicator;

use crate::abi::*;
use crate::*;

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
        Some(e) if e.buffered.is_attached() => &mut e.buffered,
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
    Ok(unsafe {
        buffer_for(&mut st.comms, &mut st.buffered, comm).send(&c.process_at_rank(dest), buf.cast(), &span, tag)
    }?)
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
        unsafe { crate::p2p::new_request(st, Req::Done(Ok(mpi::Status::empty())), request) }
    })
}

/// Attach to the process (`comm` null) or to a communicator.
///
/// # Safety
/// `buffer` is the program's for as long as it stays attached.
unsafe fn attach(call: &str, comm: Option<Handle>, buffer: *mut c_void, size: i64) -> c_int {
    with_state(call, comm.unwrap_or(MPI_COMM_WORLD), |st| {
        let space = if buffer as usize == BUFFER_AUTOMATIC {
            Space::Automatic
        } else {
            let n = usize::try_from(size).map_err(|_| Fail::new(MPI_ERR_BUFFER, format!("size {size} is negative")))?;
            Space::Buffer(buffer.cast(), n)
        };
        Ok(st.slot(comm)?.attach(space)?)
    })
}

/// Detach from the process or a communicator, writing the address and the
/// size (as `int` or `MPI_Count`).
///
/// # Safety
/// `buffer_addr` is the address of a `void *`; `size` is writable.
unsafe fn detach<T: TryFrom<usize>>(call: &str, comm: Option<Handle>, buffer_addr: *mut c_void, size: *mut T) -> c_int {
    with_state(call, comm.unwrap_or(MPI_COMM_WORLD), |st| {
        let (p, n) = match st.slot(comm)?.detach()? {
            Space::Buffer(b, n) => (b.cast::<c_void>(), n),
            Space::Automatic => (BUFFER_AUTOMATIC as *mut c_void, 0),
        };
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
    with_state("MPI_Buffer_flush", MPI_COMM_WORLD, |st| Ok(st.slot(None)?.flush()?))
}

#[no_mangle]
pub extern "C" fn MPI_Comm_flush_buffer(comm: Handle) -> c_int {
    with_state("MPI_Comm_flush_buffer", comm, |st| Ok(st.slot(Some(comm))?.flush()?))
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
