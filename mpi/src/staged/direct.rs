//! Point-to-point calls on bytes at a raw pointer, the C ABI's fast path
//! (`MPI_Send(buf, ...)` of a predefined type, `MPI_Isend`, `MPI_Irecv`,
//! `MPI_Imrecv`; MPI 4.1 §3.2, §3.7), and the streamed forms of scattered
//! datatypes that [`super::isend`] and [`super::irecv`] choose. They go to
//! the engine exactly as the typed calls do, with no copy; the difference
//! is who keeps a non-blocking operation's buffer alive: not a
//! [`crate::request::scope`], but the caller, as the MPI standard makes
//! the C caller do (§3.7.2: the buffer is not to be accessed until the
//! request completes). A [`super::Span::Direct`] comes here.

use crate::comm::{
    check_tag, irecv_impl, isend_impl, recv_into_raw, send_impl, tag_sel, Message, Process, Source, Status,
};
use crate::context::{charge_call, charge_request};
use crate::datatype::Typemap;
use crate::error::Result;
use crate::request::sealed::Sealed as _;
use crate::request::{Request, StaticScope, Target};
use crate::Tag;

/// The bytes at `ptr..ptr + len` as a slice of any lifetime (none for `len == 0`).
///
/// # Safety
/// `ptr..ptr + len` is readable, and not written by anyone, for as long as the slice (of the
/// lifetime `'a` chosen) is used.
unsafe fn bytes<'a>(ptr: *const u8, len: usize) -> &'a [u8] {
    if len == 0 || ptr.is_null() {
        &[]
    } else {
        // SAFETY: `len > 0` and `ptr` is non-null (tested above), and `ptr..ptr + len` is readable
        // and unmodified for as long as the slice is used (`# Safety`).
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

/// Blocking send of `len` bytes at `ptr` (`MPI_Send`, `MPI_Ssend` when `sync`).
///
/// Never inlined, as [`recv`]: `scripts/capi-cost.sh` counts the C
/// layer's instructions as those of `MPI_Send` outside this function.
///
/// # Safety
/// `ptr..ptr + len` is readable, and not modified, for the duration of the call.
#[inline(never)]
pub unsafe fn send(to: &Process<'_>, ptr: *const u8, len: usize, tag: Tag, sync: bool) -> Result<()> {
    // SAFETY: `ptr..ptr + len` is readable and unmodified for the duration of this call
    // (`# Safety`), which is as long as `send_impl` uses the slice.
    send_impl(to.comm, to.rank, unsafe { bytes(ptr, len) }, tag, sync)
}

/// Blocking receive into the `len` bytes at `ptr` (`MPI_Recv`); `tag`
/// `None` is any tag.
///
/// Never inlined: `scripts/capi-cost.sh` counts the C layer's
/// instructions as those of `MPI_Recv` outside this function (an
/// inlined copy would count the whole receive).
///
/// # Safety
/// `ptr..ptr + len` is writable and not otherwise accessed for the
/// duration of the call.
#[inline(never)]
pub unsafe fn recv<S: Source + ?Sized>(from: &S, ptr: *mut u8, len: usize, tag: Option<Tag>) -> Result<Status> {
    let tag = tag_sel(tag)?;
    let out: &mut [u8] = if len == 0 || ptr.is_null() {
        &mut []
    } else {
        // SAFETY: `len > 0` and `ptr` is non-null (tested above), and `ptr..ptr + len` is writable
        // and reached by nothing else for this call (`# Safety`), all `recv_into_raw` uses it for.
        unsafe { std::slice::from_raw_parts_mut(ptr, len) }
    };
    recv_into_raw(from, tag, out)
}

/// Start a send of `len` bytes at `ptr` (`MPI_Isend`, `MPI_Issend`).
///
/// # Safety
/// `ptr..ptr + len` stays readable and unchanged until the request has
/// completed (waited or tested to completion) or been dropped (a drop
/// waits for it).
pub unsafe fn isend(to: &Process<'_>, ptr: *const u8, len: usize, tag: Tag, sync: bool) -> Result<Request<'static>> {
    // SAFETY: `ptr..ptr + len` stays readable and unchanged until the request completes or is
    // dropped (`# Safety`); the slice is used only by that request's send in the engine, which is
    // all that `'static` stands for here.
    isend_impl(to.comm, StaticScope, to.rank, unsafe { bytes(ptr, len) }, tag, sync)
}

/// Start a receive into the `len` bytes at `ptr` (`MPI_Irecv`); `tag`
/// `None` is any tag.
///
/// # Safety
/// `ptr..ptr + len` stays writable and is not otherwise accessed until
/// the request has completed or been dropped.
pub unsafe fn irecv<S: Source + ?Sized>(
    from: &S,
    ptr: *mut u8,
    len: usize,
    tag: Option<Tag>,
) -> Result<Request<'static>> {
    let tag = tag_sel(tag)?;
    let out: &'static mut [u8] = if len == 0 || ptr.is_null() {
        &mut []
    } else {
        // SAFETY: `len > 0` and `ptr` is non-null (tested above), and `ptr..ptr + len` stays
        // writable and untouched by others until the request completes or is dropped
        // (`# Safety`), the only time the `'static` slice is used (by the engine, for it).
        unsafe { std::slice::from_raw_parts_mut(ptr, len) }
    };
    irecv_impl(from, StaticScope, out, tag)
}

/// Start a send of `count` elements of `layout` at `ptr`, packed one
/// chunk at a time as the transport takes them, never whole (issue 30:
/// a message of a non-contiguous datatype costs a packet of memory, not
/// its size). A null `ptr` is `MPI_BOTTOM` (absolute displacements).
///
/// # Safety
/// Every block of the `count` elements at `ptr` stays readable and
/// unchanged until the request has completed or been dropped.
pub unsafe fn isend_typed(
    to: &Process<'_>,
    ptr: *const u8,
    layout: std::sync::Arc<Typemap>,
    count: usize,
    tag: Tag,
    sync: bool,
) -> Result<Request<'static>> {
    check_tag(tag)?;
    let comm = to.comm;
    if to.rank == crate::PROC_NULL {
        return Ok(Request::proc_null(comm.shared.clone(), comm.peers().clone()));
    }
    let dest = comm.job_rank(to.rank)?;
    let elems = Elements::new(ptr.cast_mut(), layout, count)?;
    let bytes = elems.len;
    let id = {
        let mut c = comm.shared.borrow_mut();
        let e = c.engine()?;
        charge_call(e);
        charge_request(e);
        e.isend_packed(dest, tag, comm.ctx, Box::new(elems), sync)?
    };
    let target = Target::Send { dest: to.rank, tag, bytes };
    Ok(Request::new(comm.shared.clone(), id, target, comm.peers().clone(), StaticScope.core()))
}

/// Start a receive into `count` elements of `layout` at `ptr`, unpacked
/// one chunk at a time as the message arrives; `tag` `None` is any tag.
///
/// # Safety
/// Every block of the `count` elements at `ptr` stays writable and is
/// not otherwise accessed until the request has completed or been
/// dropped.
pub unsafe fn irecv_typed<S: Source + ?Sized>(
    from: &S,
    ptr: *mut u8,
    layout: std::sync::Arc<Typemap>,
    count: usize,
    tag: Option<Tag>,
) -> Result<Request<'static>> {
    let tag = tag_sel(tag)?;
    let comm = from.comm();
    if from.is_proc_null() {
        return Ok(Request::proc_null(comm.shared.clone(), comm.peers().clone()));
    }
    let src = from.adi_source()?;
    let elems = Elements::new(ptr, layout, count)?;
    let id = {
        let mut c = comm.shared.borrow_mut();
        let e = c.engine()?;
        charge_call(e);
        charge_request(e);
        e.irecv_unpacked(src, tag, comm.ctx, Box::new(elems))?
    };
    Ok(Request::new(comm.shared.clone(), id, Target::Recv, comm.peers().clone(), StaticScope.core()))
}

/// `count` elements of a typemap in the caller's memory, as the engine
/// packs and unpacks them a chunk at a time.
struct Elements {
    base: *mut u8,
    layout: std::sync::Arc<Typemap>,
    count: usize,
    len: u64,
}

impl Elements {
    fn new(base: *mut u8, layout: std::sync::Arc<Typemap>, count: usize) -> Result<Elements> {
        let len = layout.packed_len(count)? as u64;
        Ok(Elements { base, layout, count, len })
    }
}

// SAFETY: `Elements` stands for the caller's elements, which the
// unsafe constructors' contracts keep valid (and, for a receive,
// otherwise untouched) while the request lives; the engine reaches it
// only through `&mut Engine`, behind the library's lock, so one thread
// at a time.
unsafe impl Send for Elements {}

impl adi::PackSource for Elements {
    fn len(&self) -> u64 {
        self.len
    }

    fn pack(&self, off: u64, out: &mut [u8]) {
        // SAFETY: `base` and `count` come from `isend_typed`, whose `# Safety` keeps every block of
        // those elements readable and unchanged while its request lives, and only that request's
        // send calls `pack`; the walk never goes past `count` elements nor past `out`, whatever
        // `off` is.
        unsafe { self.layout.pack_range_raw(self.base, self.count, off as usize, out) }
    }
}

impl adi::UnpackSink for Elements {
    fn capacity(&self) -> u64 {
        self.len
    }

    fn unpack(&mut self, off: u64, data: &[u8]) {
        // SAFETY: `base` and `count` come from `irecv_typed`, whose `# Safety` keeps every block of
        // those elements writable and otherwise untouched while its request lives, and only that
        // request's receive calls `unpack`; the walk never goes past `count` elements, and reads
        // `data` within its length.
        unsafe { self.layout.unpack_range_raw(self.base, self.count, off as usize, data) }
    }
}

/// Start receiving a matched message into the `len` bytes at `ptr`
/// (`MPI_Imrecv`; `MPI_Mrecv` waits for it).
///
/// # Safety
/// As [`irecv`]: the bytes stay writable and otherwise untouched until
/// the request has completed or been dropped.
pub unsafe fn imrecv(msg: Message, ptr: *mut u8, len: usize) -> Result<Request<'static>> {
    let Message { msg, comm } = msg;
    let out: &'static mut [u8] = if len == 0 || ptr.is_null() {
        &mut []
    } else {
        // SAFETY: `len > 0` and `ptr` is non-null (tested above), and `ptr..ptr + len` stays
        // writable and untouched by others until the request completes or is dropped
        // (`# Safety`), the only time the `'static` slice is used (by the engine, for it).
        unsafe { std::slice::from_raw_parts_mut(ptr, len) }
    };
    let id = {
        let mut c = comm.shared.borrow_mut();
        let e = c.engine()?;
        charge_request(e);
        // SAFETY: `out` is the caller's `len` bytes, writable and untouched until the request
        // completes or is dropped (`# Safety`); the `Request` made below waits for it when
        // dropped, so the engine's borrow ends by then, and `out` is not used here again.
        unsafe { e.imrecv_into(msg, out)? }
    };
    Ok(Request::new(comm.shared.clone(), id, Target::Recv, comm.peers().clone(), StaticScope.core()))
}
