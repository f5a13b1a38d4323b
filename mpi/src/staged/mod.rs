//! Communication on buffers given as a raw pointer, a count and a datatype
//! (the C ABI's `buf, count, datatype`; MPI 4.1 §3.2.2, §5.1): how `count`
//! elements of a [`Typemap`] at a buffer map onto the bytes the engine
//! moves ([`Span`]), and operations that keep, until they complete, what
//! that mapping needs ([`Staged`]): a packed copy of scattered elements
//! sent, a staging buffer unpacked into scattered elements received, and
//! the parts of a composite operation.
//!
//! Data the datatype lays out contiguously moves from and into the
//! caller's buffer as it is, with no copy. Scattered data of
//! [`STREAM_FROM`] bytes or more is packed and unpacked by the engine a
//! chunk at a time ([`crate::direct::isend_typed`]); shorter scattered data
//! is packed or staged whole, one small copy.
//!
//! Everything here that takes a pointer is `unsafe`, with the standard's
//! rule on non-blocking calls as its contract (§3.7.2: the buffer is the
//! operation's until it completes); what holds the pointers afterwards
//! ([`Unpack`], [`Staged`]) can only be made by those functions.

pub mod basis;
pub mod coll;
pub mod direct;
pub mod inter;
pub mod pack;
pub mod partitioned;
pub mod recipe;
pub mod reduce;
pub mod reduction;

use std::borrow::Cow;
use std::sync::Arc;

use crate::comm::{Process, Source, Status};
use crate::datatype::typemap::addr;
use crate::datatype::{zeroed_buffer, Typemap};
use crate::error::{BufferError, Overflow};
use crate::request::{Part, Request};
use crate::{MpiError, Result, Tag};

/// Messages of scattered elements at least this long are streamed through
/// the engine a chunk at a time (memory bounded by a packet, not by the
/// message); shorter ones are packed or staged whole, one small copy.
pub const STREAM_FROM: usize = 64 * 1024;

/// How `count` elements of a datatype at a buffer map onto bytes.
#[derive(Clone, Debug)]
pub enum Span {
    /// `len` contiguous bytes at `buf + offset`: sent and received in place.
    Direct {
        /// Where the bytes start, from the buffer's address.
        offset: isize,
        /// How many.
        len: usize,
    },
    /// Scattered blocks: packed for a send, staged and unpacked for a receive.
    Scattered {
        /// The datatype's layout.
        layout: Arc<Typemap>,
        /// Elements.
        count: usize,
        /// Bytes of data (`count` times the type's size).
        len: usize,
    },
}

impl Span {
    /// `len` contiguous bytes at the buffer's address.
    pub fn bytes(len: usize) -> Span {
        Span::Direct { offset: 0, len }
    }

    /// `count` elements of `layout`: direct when they are one block (a
    /// dense type, or one element of a type with one block).
    pub fn of(layout: Arc<Typemap>, count: usize) -> Result<Span> {
        let len = layout.size.checked_mul(count).ok_or_else(|| too_many(count))?;
        if len == 0 {
            return Ok(Span::bytes(0));
        }
        if let (Some((offset, _)), true) = (layout.one_block, count == 1 || layout.dense()) {
            return Ok(Span::Direct { offset, len });
        }
        Ok(Span::Scattered { layout, count, len })
    }

    /// Bytes of data.
    pub fn len(&self) -> usize {
        match self {
            Span::Direct { len, .. } | Span::Scattered { len, .. } => *len,
        }
    }

    /// No bytes of data.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The layout and count of scattered elements whose message the engine
    /// packs or unpacks a chunk at a time, never whole: those of
    /// [`STREAM_FROM`] bytes or more. `buf` is checked as [`outgoing`]
    /// checks it.
    pub fn streamed(&self, buf: *const u8, what: &str) -> Result<Option<(Arc<Typemap>, usize)>> {
        match self {
            Span::Scattered { layout, count, len } if *len >= STREAM_FROM => {
                if near_null(buf, layout.true_lb) {
                    return Err(null_buffer(what));
                }
                Ok(Some((layout.clone(), *count)))
            }
            _ => Ok(None),
        }
    }
}

fn too_many(count: usize) -> MpiError {
    MpiError::TooLarge(Overflow::Elements { count })
}

fn null_buffer(what: &str) -> MpiError {
    BufferError::Null { what: format!("{what} buffer") }.into()
}

/// Data at `buf + offset` would be in the never-mapped first page: a null
/// buffer (or `MPI_BOTTOM` plus a small offset), rather than `MPI_BOTTOM`
/// (null) with absolute displacements (§5.1.12).
pub fn near_null(buf: *const u8, offset: isize) -> bool {
    (buf as isize).wrapping_add(offset).unsigned_abs() < 4096
}

/// The bytes a send takes from `buf`: the caller's own when the span is
/// direct, else a packed copy.
///
/// # Safety
/// Every block of the span's elements at `buf` (offsets from `buf`, or absolute addresses when
/// `buf` is null, `MPI_BOTTOM`) is readable for this call; for a direct span, its `len` bytes at
/// `buf + offset` also stay readable and unmodified for the lifetime `'a` chosen, as long as the
/// returned bytes are used.
pub unsafe fn outgoing<'a>(buf: *const u8, span: &Span, what: &str) -> Result<Cow<'a, [u8]>> {
    match span {
        Span::Direct { len: 0, .. } => Ok(Cow::Borrowed(&[])),
        Span::Direct { offset, len } => {
            if near_null(buf, *offset) {
                return Err(null_buffer(what));
            }
            // SAFETY: `addr(buf, offset)` is the first of the span's `len` contiguous bytes (an absolute
            // address when `buf` is MPI_BOTTOM, §5.1.12), not null (checked above); the caller keeps them
            // readable and unmodified for `'a`, the slice's lifetime (`# Safety`).
            Ok(Cow::Borrowed(unsafe { std::slice::from_raw_parts(addr(buf, *offset), *len) }))
        }
        Span::Scattered { layout, count, len } => {
            if near_null(buf, layout.true_lb) {
                return Err(null_buffer(what));
            }
            let mut out = zeroed_buffer(*len, "a packing buffer")?;
            // SAFETY: `pack_raw` reads every block of the `count` elements at `buf`, which the caller
            // keeps readable for this call (`# Safety`); it writes only `out`, a buffer of our own.
            unsafe { layout.pack_raw(buf, *count, &mut out) };
            Ok(Cow::Owned(out))
        }
    }
}

/// Where a receive puts its bytes.
pub struct Incoming {
    /// Start of the bytes to receive into.
    pub ptr: *mut u8,
    /// How many.
    pub len: usize,
    /// For a scattered span: the staging buffer `ptr` points into, and
    /// where its bytes go.
    pub stage: Option<Unpack>,
}

/// Received bytes waiting to be unpacked into the caller's elements.
pub struct Unpack {
    tmp: Vec<u8>,
    dest: *mut u8,
    layout: Arc<Typemap>,
    /// The blocks of elements `tmp` holds, one after the other:
    /// `(displacement in extents, count)`.
    parts: Vec<(isize, usize)>,
    /// Unpack all of `tmp` whatever the status says (collectives).
    whole: bool,
}

impl Unpack {
    /// A staging buffer for the elements `parts` lists at `dest`, filled
    /// with their current values when `fill`.
    ///
    /// # Safety
    /// Every block of the elements `parts` lists at `dest` (part `(d, c)`: `c` elements from `d`
    /// extents past `dest`) is readable now when `fill`, and stays writable and not otherwise
    /// accessed until the returned value is finished ([`Unpack::finish`]) or dropped.
    unsafe fn new(layout: &Arc<Typemap>, dest: *mut u8, parts: Vec<(isize, usize)>, fill: bool) -> Result<Unpack> {
        let len = parts
            .iter()
            .try_fold(0usize, |n, p| p.1.checked_mul(layout.size).and_then(|b| b.checked_add(n)))
            .ok_or(MpiError::TooLarge(Overflow::Receive))?;
        let mut tmp = zeroed_buffer(len, "a staging buffer for the receive")?;
        if fill {
            let mut at = 0;
            for &(d, c) in &parts {
                let n = c * layout.size;
                // SAFETY: with `fill`, the caller keeps every block of part `(d, c)`'s `c` elements at
                // `d` extents from `dest` readable now (`# Safety`); `pack_raw` writes only `tmp`.
                unsafe { layout.pack_raw(addr(dest, d * layout.extent()), c, &mut tmp[at..at + n]) };
                at += n;
            }
        }
        Ok(Unpack { tmp, dest, layout: layout.clone(), parts, whole: false })
    }

    /// Unpack all of the staging buffer at completion, whatever the
    /// status says (a collective's buffer, filled in full).
    pub fn whole(mut self) -> Unpack {
        self.whole = true;
        self
    }

    /// Unpack the first `n` received bytes.
    ///
    /// # Safety
    /// Every block of the elements `parts` lists at `dest` is still writable and not otherwise
    /// accessed: the caller of [`incoming`] or [`blocks`] that made this `Unpack` has not yet taken
    /// its buffer back (the operation it left the buffer to is the one completing now).
    pub unsafe fn finish(self, n: u64) {
        let n = if self.whole { self.tmp.len() } else { (n as usize).min(self.tmp.len()) };
        let mut at = 0;
        for &(d, c) in &self.parts {
            if at >= n {
                break;
            }
            let end = (at + c * self.layout.size).min(n);
            // SAFETY: `unpack_raw` writes the blocks of at most part `(d, c)`'s `c` elements at `d`
            // extents from `dest` (`end - at` is at most their `c * size` bytes), which the caller keeps
            // writable and otherwise untouched until now (`# Safety`).
            unsafe { self.layout.unpack_raw(&self.tmp[at..end], addr(self.dest, d * self.layout.extent())) };
            at = end;
        }
    }

    /// The staging buffer, for a send side that only reads it.
    pub fn into_bytes(self) -> Vec<u8> {
        self.tmp
    }
}

impl Incoming {
    /// The bytes to receive into, for the lifetime chosen.
    ///
    /// # Safety
    /// The `len` bytes at `ptr` are the caller's buffer, left writable to this value by
    /// [`incoming`] or [`blocks`]'s caller, or the staging buffer in `stage`. For the lifetime `'a`
    /// chosen they are accessed through the returned slice only, and the staging buffer's heap
    /// bytes (in `stage`, or the vector [`Unpack::into_bytes`] gives) outlive every use of it.
    pub unsafe fn bytes<'a>(&mut self) -> &'a mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: `len > 0`, so `ptr` is the caller's buffer (checked away from null by `incoming` or
        // `blocks`) or a staging buffer of exactly `len` bytes; either is writable and reached only
        // through this slice for `'a` (`# Safety`).
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// Unpack a staged receive of `n` bytes.
    ///
    /// # Safety
    /// When staged, as [`Unpack::finish`]: every block of the elements the staging buffer stands
    /// for is still writable and not otherwise accessed (the buffer given to [`incoming`] or
    /// [`blocks`] has not been taken back).
    pub unsafe fn finish(self, n: u64) {
        if let Some(u) = self.stage {
            // SAFETY: `u`'s elements at its `dest` are still writable and otherwise untouched: the
            // very condition the caller guarantees (`# Safety`), and all that `Unpack::finish` asks.
            unsafe { u.finish(n) };
        }
    }
}

/// Where a receive into `buf` puts its bytes; with `fill`, a staging
/// buffer starts with the elements' current values (`MPI_IN_PLACE`).
///
/// # Safety
/// `buf` has room for the span's elements, readable when `fill`; it
/// stays writable and is not otherwise accessed until the returned value
/// (or the [`Unpack`] taken from it, or the operation that keeps it) is
/// finished or dropped: the unpacking writes it then.
pub unsafe fn incoming(buf: *mut u8, span: &Span, what: &str, fill: bool) -> Result<Incoming> {
    match span {
        Span::Direct { len: 0, .. } => Ok(Incoming { ptr: std::ptr::null_mut(), len: 0, stage: None }),
        Span::Direct { offset, len } => {
            if near_null(buf, *offset) {
                return Err(null_buffer(what));
            }
            // MPI_BOTTOM plus absolute displacements is the standard's addressing (§5.1.12).
            Ok(Incoming { ptr: addr(buf, *offset), len: *len, stage: None })
        }
        Span::Scattered { layout, len, count } => {
            if near_null(buf, layout.true_lb) {
                return Err(null_buffer(what));
            }
            // SAFETY: the caller keeps the span's `count` elements at `buf` readable now when `fill`,
            // and writable and untouched until the returned value or its `Unpack` is finished or
            // dropped (`# Safety`): what `Unpack::new` asks for its one part `(0, count)`.
            let mut stage = unsafe { Unpack::new(layout, buf, vec![(0, *count)], fill)? };
            Ok(Incoming { ptr: stage.tmp.as_mut_ptr(), len: *len, stage: Some(stage) })
        }
    }
}

/// A v-collective's buffer as bytes: where, and each block's byte count
/// and displacement (MPI 4.1 §6.5).
pub struct Blocks {
    /// The bytes: the caller's own, or a staging buffer.
    pub inc: Incoming,
    /// Bytes per block.
    pub counts: Vec<crate::Count>,
    /// Where each block starts in `inc`'s bytes.
    pub displs: Vec<crate::Count>,
}

/// A v-collective's buffer: block `i` of `counts[i]` elements of `layout`
/// at `displs[i]` extents from `buf`, as bytes the collectives move: the
/// caller's own where the datatype is dense, else a staging buffer
/// (filled with the current values when `fill`).
///
/// # Safety
/// Every block of the `counts[i]` elements at `displs[i]` extents from `buf` is readable now
/// when `fill`, and stays writable and not otherwise accessed until the returned value (or the
/// operation that keeps its `inc`) is finished or dropped, as [`incoming`]'s buffer does.
pub unsafe fn blocks(
    buf: *mut u8,
    counts: &[usize],
    displs: &[i32],
    layout: &Arc<Typemap>,
    fill: bool,
) -> Result<Blocks> {
    let l = layout;
    let as_count = |b: usize| {
        crate::Count::try_from(b).map_err(|_| MpiError::TooLarge(Overflow::Block { bytes: b, what: "v-collective" }))
    };
    let len_of = |c: usize| c.checked_mul(l.size).ok_or_else(|| too_many(c));
    if l.dense() || l.size == 0 {
        let mut end = 0usize;
        let (mut cb, mut db) = (Vec::new(), Vec::new());
        for (&c, &d) in counts.iter().zip(displs) {
            if d < 0 && c > 0 {
                return Err(crate::error::ArgError::NegativeDisplacement { displ: d.into() }.into());
            }
            let (off, len) = (d.max(0) as usize * l.size, len_of(c)?);
            if len > 0 {
                end = end.max(off + len);
            }
            cb.push(as_count(len)?);
            db.push(as_count(off)?);
        }
        let offset = l.one_block.map_or(0, |b| b.0);
        if end > 0 && near_null(buf, offset) {
            return Err(BufferError::Null { what: "buffer".into() }.into());
        }
        // The blocks are in the buffer (this function's contract).
        let ptr = addr(buf, offset);
        return Ok(Blocks { inc: Incoming { ptr, len: end, stage: None }, counts: cb, displs: db });
    }
    if near_null(buf, l.true_lb) {
        return Err(BufferError::Null { what: "buffer".into() }.into());
    }
    let parts: Vec<(isize, usize)> = displs.iter().map(|&d| d as isize).zip(counts.iter().copied()).collect();
    let (mut cb, mut db, mut at) = (Vec::new(), Vec::new(), 0usize);
    for &c in counts {
        cb.push(as_count(len_of(c)?)?);
        db.push(as_count(at)?);
        at += c * l.size;
    }
    // SAFETY: `parts` are the blocks `(displs[i], counts[i])`, which the caller keeps readable now
    // when `fill`, and writable and untouched until the returned value is finished or dropped
    // (`# Safety`): what `Unpack::new` asks.
    let mut u = unsafe { Unpack::new(l, buf, parts, fill)? }.whole();
    Ok(Blocks { inc: Incoming { ptr: u.tmp.as_mut_ptr(), len: at, stage: Some(u) }, counts: cb, displs: db })
}

/// An operation in the engine, with what it needs until it completes.
pub struct Staged {
    /// Declared first, so dropped first: dropping a request waits for it,
    /// and only then are the buffers in `stage` released.
    pub request: Request<'static>,
    /// What the operation keeps.
    pub stage: Stage,
}

/// Buffers an operation keeps until it completes (none when it works on
/// the caller's buffers in place).
#[derive(Default)]
pub struct Stage {
    /// Packed copies of the data it sends, or scratch space it writes:
    /// only kept alive, never read here.
    pub hold: Vec<Vec<u8>>,
    /// Received bytes to unpack into the caller's elements.
    pub unpack: Option<Unpack>,
    /// Operations that complete with this one, reporting nothing of their
    /// own: the send half of `MPI_Isendrecv` (§3.10).
    pub with: Vec<Staged>,
    /// The status to report instead of the operation's own: the receive
    /// half of `MPI_Isendrecv` from `MPI_PROC_NULL`, whose operation is
    /// the send half.
    pub status: Option<Status>,
    /// Run at completion, after the unpacking: `MPI_Ireduce_scatter`
    /// copies this process's block out of the reduced whole it owns.
    pub then: Option<Box<dyn FnOnce()>>,
}

impl Staged {
    /// An operation on the caller's buffers in place.
    pub fn plain(request: Request<'static>) -> Staged {
        Staged { request, stage: Stage::default() }
    }

    /// An operation with buffers it keeps, and a staged receive unpacked
    /// in full when it completes (a collective's).
    pub fn keeping(request: Request<'static>, hold: Vec<Vec<u8>>, unpack: Option<Unpack>) -> Staged {
        Staged { request, stage: Stage { hold, unpack: unpack.map(Unpack::whole), ..Stage::default() } }
    }

    /// The outcome of the ended request `r`, with what the operation kept
    /// done: received bytes unpacked (those that fit, for a truncated
    /// message), then the work to run at completion (on success only).
    fn unstage(stage: Stage, r: Result<Status>) -> Result<Status> {
        if let (Some(u), Some(n)) = (stage.unpack, received(&r)) {
            // SAFETY: `r` is the outcome of the ended request: the engine no longer writes `u`'s buffer;
            // `u`'s elements at its `dest` were left to this operation, writable and untouched until
            // it completes (the `# Safety` of `incoming` or `blocks`, which made `u`), and this is it.
            unsafe { u.finish(n) }
        }
        let s = r?;
        if let Some(f) = stage.then {
            f();
        }
        Ok(stage.status.unwrap_or(s))
    }

    /// Wait for completion.
    pub fn wait(mut self) -> Result<Status> {
        for a in std::mem::take(&mut self.stage.with) {
            a.wait()?;
        }
        Staged::unstage(self.stage, self.request.wait())
    }

    /// This operation's part in [`crate::request::settle`]: its request,
    /// and those of the operations that complete with it (none, usually:
    /// no allocation).
    pub fn part(&self) -> Part<'_, 'static> {
        let mut with = Vec::new();
        for a in &self.stage.with {
            a.requests(&mut with);
        }
        Part::Waiting(&self.request, with)
    }

    fn requests<'s>(&'s self, out: &mut Vec<&'s Request<'static>>) {
        out.push(&self.request);
        for a in &self.stage.with {
            a.requests(out);
        }
    }

    /// Complete an operation [`crate::request::settle`] found ended
    /// (waiting for it otherwise), charging no second MPI call.
    pub fn finish(mut self) -> Result<Status> {
        for a in std::mem::take(&mut self.stage.with) {
            a.finish()?;
        }
        Staged::unstage(self.stage, self.request.finish())
    }

    /// Complete if done; the operation back if not.
    pub fn test(mut self) -> Result<std::result::Result<Status, Staged>> {
        let mut left = Vec::new();
        for a in std::mem::take(&mut self.stage.with) {
            if let Err(a) = a.test()? {
                left.push(a);
            }
        }
        if !left.is_empty() {
            self.stage.with = left;
            return Ok(Err(self));
        }
        match self.request.test() {
            Ok(Err(request)) => Ok(Err(Staged { request, stage: self.stage })),
            Ok(Ok(s)) => Staged::unstage(self.stage, Ok(s)).map(Ok),
            Err(e) => Staged::unstage(self.stage, Err(e)).map(Ok),
        }
    }
}

/// Start sending `span` of `buf`: from the caller's bytes in place, a
/// chunk at a time when long and scattered, or from a packed copy the
/// operation keeps.
///
/// # Safety
/// Every block of the span's elements at `buf` stays readable and unmodified until the
/// returned operation completes or is dropped (a drop waits for it).
pub unsafe fn isend(to: &Process<'_>, buf: *const u8, span: &Span, tag: Tag, sync: bool) -> Result<Staged> {
    if let Some((layout, count)) = span.streamed(buf, "send")? {
        // SAFETY: `isend_typed` packs from every block of the `count` elements at `buf` while its
        // request lives; that request is the operation returned, until whose completion or drop the
        // caller keeps them readable and unmodified (`# Safety`).
        return Ok(Staged::plain(unsafe { direct::isend_typed(to, buf, layout, count, tag, sync) }?));
    }
    // SAFETY: the span's elements at `buf` are readable (`# Safety`); a direct span's bytes, borrowed
    // for `'a`, are used only by the send below and stay unmodified until it completes or is dropped.
    Ok(match unsafe { outgoing(buf, span, "send")? } {
        // SAFETY: `b` is the caller's `b.len()` contiguous bytes, readable and unmodified until this
        // request completes or is dropped (`# Safety`), as `direct::isend` requires.
        Cow::Borrowed(b) => Staged::plain(unsafe { direct::isend(to, b.as_ptr(), b.len(), tag, sync) }?),
        Cow::Owned(v) => isend_owned(to, v, tag, sync)?,
    })
}

/// Start sending bytes of our own (a packed or buffered copy), which the
/// operation keeps until it completes.
pub fn isend_owned(to: &Process<'_>, v: Vec<u8>, tag: Tag, sync: bool) -> Result<Staged> {
    // SAFETY: `v`'s heap bytes do not move when `v` does, and the
    // operation keeps `v` (in its stage, dropped after the request) until
    // it completes.
    let request = unsafe { direct::isend(to, v.as_ptr(), v.len(), tag, sync) }?;
    Ok(Staged { request, stage: Stage { hold: vec![v], ..Stage::default() } })
}

/// Start receiving `span` of `buf`: into the caller's bytes in place, a
/// chunk at a time when long and scattered, or into a staging buffer
/// unpacked at completion.
///
/// # Safety
/// Every block of the span's elements at `buf` stays writable and is not otherwise accessed
/// (read or written) until the returned operation completes or is dropped.
pub unsafe fn irecv<S: Source + ?Sized>(from: &S, buf: *mut u8, span: &Span, tag: Option<Tag>) -> Result<Staged> {
    if let Some((layout, count)) = span.streamed(buf, "receive")? {
        // SAFETY: `irecv_typed` writes every block of the `count` elements at `buf` while its request
        // lives; that request is the operation returned, until whose completion or drop the caller
        // keeps them writable and untouched (`# Safety`).
        return Ok(Staged::plain(unsafe { direct::irecv_typed(from, buf, layout, count, tag) }?));
    }
    // SAFETY: the caller leaves the span's elements at `buf` writable and untouched until the
    // operation completes or is dropped (`# Safety`), and `inc`'s stage goes into that operation:
    // what `incoming` asks (without `fill`, nothing is read now).
    let inc = unsafe { incoming(buf, span, "receive", false)? };
    // SAFETY: `inc.len` bytes at `inc.ptr` are the caller's span, writable and untouched until
    // completion (`# Safety`), or the staging buffer in `inc.stage`, whose heap bytes the returned
    // `Staged` keeps until after its request has ended (dropped after it); nothing else touches them.
    let request = unsafe { direct::irecv(from, inc.ptr, inc.len, tag) }?;
    Ok(Staged { request, stage: Stage { unpack: inc.stage, ..Stage::default() } })
}

/// Send `span` of `buf` and wait (`MPI_Send`, `MPI_Ssend` of a derived
/// datatype): a chunk at a time when long and scattered, else from the
/// caller's bytes or a packed copy.
///
/// # Safety
/// Every block of the span's elements at `buf` is readable, and not modified, for the duration
/// of the call.
pub unsafe fn send(to: &Process<'_>, buf: *const u8, span: &Span, tag: Tag, sync: bool) -> Result<()> {
    if let Some((layout, count)) = span.streamed(buf, "send")? {
        // SAFETY: every block of the `count` elements at `buf` is readable and unmodified for this
        // call (`# Safety`), and the request `isend_typed` returns is waited on here, within it.
        return unsafe { direct::isend_typed(to, buf, layout, count, tag, sync) }?.wait().map(drop);
    }
    // SAFETY: the span's elements at `buf` are readable and unmodified for this call (`# Safety`),
    // and `data`, borrowed from them when direct, does not outlive it.
    let data = unsafe { outgoing(buf, span, "send")? };
    // SAFETY: `data.len()` bytes at `data.as_ptr()` are `data`'s (the caller's, unmodified for this
    // call, or a packed copy), alive until this function returns, after `direct::send` has.
    unsafe { direct::send(to, data.as_ptr(), data.len(), tag, sync) }
}

/// Receive into `span` of `buf` and wait (`MPI_Recv` of a derived
/// datatype): a chunk at a time when long and scattered, else into the
/// caller's bytes or a staging buffer unpacked here.
///
/// # Safety
/// Every block of the span's elements at `buf` is writable, and not otherwise accessed, for the
/// duration of the call.
pub unsafe fn recv<S: Source + ?Sized>(from: &S, buf: *mut u8, span: &Span, tag: Option<Tag>) -> Result<Status> {
    if let Some((layout, count)) = span.streamed(buf, "receive")? {
        // SAFETY: every block of the `count` elements at `buf` is writable and untouched for this call
        // (`# Safety`), and the request `irecv_typed` returns is waited on here, within it.
        return unsafe { direct::irecv_typed(from, buf, layout, count, tag) }?.wait();
    }
    // SAFETY: the span's elements at `buf` are writable and untouched for this call (`# Safety`),
    // and `inc` is finished or dropped before it returns.
    let inc = unsafe { incoming(buf, span, "receive", false)? };
    // SAFETY: `inc.len` bytes at `inc.ptr` are the caller's span, writable and untouched for this
    // call (`# Safety`), or the staging buffer `inc` owns, alive until `inc.finish` below; nothing
    // else accesses them during `direct::recv`.
    let r = unsafe { direct::recv(from, inc.ptr, inc.len, tag) };
    if let Some(n) = received(&r) {
        // SAFETY: the staged bytes unpack into the span's elements at `buf`, still writable and
        // untouched within this call (`# Safety`). A truncated message's first bytes are unpacked
        // too (§3.2.5).
        unsafe { inc.finish(n) };
    }
    r
}

/// The bytes an ended receive put in its buffer: all of them, or those
/// that fit a truncated message (MPI 4.1 §3.2.5: the buffer holds them);
/// `None` after any other error, when nothing is unpacked.
fn received(r: &Result<Status>) -> Option<u64> {
    match r {
        Ok(s) | Err(MpiError::Truncated { status: s, .. }) => Some(s.bytes()),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vector() -> Arc<Typemap> {
        // Two blocks of one i32, 8 bytes apart.
        let int = Arc::new(Typemap::of::<i32>());
        Arc::new(Typemap::vector(2, 1, 2, &int).expect("a small vector"))
    }

    #[test]
    fn a_span_is_direct_when_its_elements_are_one_block() {
        let v = vector();
        assert!(matches!(Span::of(v.clone(), 1), Ok(Span::Scattered { len: 8, .. })));
        assert!(matches!(Span::of(v, 0), Ok(Span::Direct { len: 0, .. })));
        let int = Arc::new(Typemap::of::<i32>());
        assert!(matches!(Span::of(int, 5), Ok(Span::Direct { offset: 0, len: 20 })));
    }

    #[test]
    fn a_null_buffer_is_refused_not_read() {
        let span = Span::of(vector(), 1).expect("span");
        // SAFETY: a null buffer is refused before anything is read.
        let e = unsafe { outgoing(std::ptr::null(), &span, "send") }.err();
        assert!(matches!(e, Some(MpiError::Buffer(BufferError::Null { what })) if what == "send buffer"));
    }

    #[test]
    fn a_staged_receive_unpacks_only_the_bytes_received() {
        let mut dest = [0i32; 3];
        let span = Span::of(vector(), 1).expect("span");
        // SAFETY: `dest` holds one vector element (ints 0 and 2), and
        // lives past the `finish` below.
        let mut inc = unsafe { incoming(dest.as_mut_ptr().cast(), &span, "receive", false) }.expect("incoming");
        // SAFETY: the staging buffer, alive in `inc` until `finish`.
        unsafe { inc.bytes() }.copy_from_slice(bytemuck::cast_slice(&[7i32, 9]));
        // SAFETY: `dest`'s ints 0 and 2 (the element the staging buffer stands for) are still live and
        // writable, and nothing else refers to `dest` meanwhile.
        unsafe { inc.finish(4) };
        assert_eq!(dest, [7, 0, 0]);
    }
}
