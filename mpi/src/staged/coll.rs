//! Collectives on buffers given as raw pointers and [`Span`]s (MPI 4.1
//! §6, non-blocking §6.12): the rules of `MPI_IN_PLACE` (§6.1.2), of a
//! root's own block, and of the amount of data each side moves (§6.5),
//! over the typed collectives of [`crate::coll`].
//!
//! Which arguments are significant depends on the rank (a receive
//! buffer only at the root of a gather, ...); the caller reads only
//! those, and calls the root's or the other processes' function. Each
//! function returns the operation as a [`Staged`], which keeps packed
//! copies, staging buffers and scratch space until it completes.

use std::sync::Arc;

use super::{incoming, near_null, outgoing, Blocks, Span, Staged, Unpack};
use crate::coll::{CommunicatorCollectives, Root};
use crate::comm::{Communicator, SimpleCommunicator};
use crate::datatype::Typemap;
use crate::error::{BufferError, Overflow};
use crate::{MpiError, Rank, Result};

/// A collective's send argument.
pub enum Send {
    /// `MPI_IN_PLACE`: the data is in the receive buffer already.
    InPlace,
    /// The span's elements at the address.
    From(*const u8, Span),
}

/// A collective's receive argument where `MPI_IN_PLACE` may stand for it
/// (a scatter's root keeps its own block where it is).
pub enum Recv {
    /// `MPI_IN_PLACE`.
    InPlace,
    /// The span's elements at the address.
    Into(*mut u8, Span),
}

/// Bytes a collective sends, and what it keeps alive until completion.
struct Out {
    bytes: &'static [u8],
    hold: Vec<Vec<u8>>,
}

/// The bytes of `span` at `buf`: the caller's, or a packed copy.
///
/// # Safety
/// Every block of the span's elements at `buf` is readable for this call; for a direct span,
/// the bytes the returned `bytes` borrow (as `'static`) also stay readable and unmodified for as
/// long as `bytes` is used: until the operation made with it completes or is dropped.
unsafe fn out(buf: *const u8, span: &Span, what: &str) -> Result<Out> {
    // SAFETY: the span's elements at `buf` are readable now, and a direct span's bytes stay readable
    // and unmodified while the returned `bytes` are used (`# Safety`): what `outgoing` asks, with
    // `'a = 'static` standing for that use.
    Ok(match unsafe { outgoing(buf, span, what)? } {
        std::borrow::Cow::Borrowed(bytes) => Out { bytes, hold: Vec::new() },
        std::borrow::Cow::Owned(v) => owned(v),
    })
}

/// Bytes of our own, kept with the operation.
fn owned(v: Vec<u8>) -> Out {
    // SAFETY: the slice is `v`'s `v.len()` initialized heap bytes, which stay put when `v` moves into
    // `hold` and are never written; `bytes` is used only while `hold` lives (callers hand `hold` to
    // the operation's stage, which is dropped after its request).
    let bytes = unsafe { std::slice::from_raw_parts(v.as_ptr(), v.len()) };
    Out { bytes, hold: vec![v] }
}

/// `len` bytes of scratch space kept in `hold` (a root's block that stays
/// in place with `MPI_IN_PLACE`).
fn scratch(hold: &mut Vec<Vec<u8>>, len: usize) -> Result<&'static mut [u8]> {
    let mut v = crate::datatype::zeroed_buffer(len, "scratch space")?;
    // SAFETY: the slice is `v`'s `len` zeroed heap bytes, which stay put when `v` moves into `hold`;
    // the caller hands `hold` to the operation's stage, which outlives the request that writes the
    // slice, and nothing else reads or writes `v`, so the slice is its only access.
    let s = unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr(), len) };
    hold.push(v);
    Ok(s)
}

/// The two sides' blocks must be the same amount of data (§6.5).
fn same(call: &str, a: usize, b: usize) -> Result<()> {
    if a != b {
        return Err(MpiError::Mismatch { call: call.into(), sent: a as u64, received: b as u64 });
    }
    Ok(())
}

/// The root as a rank of `c`, checked (`MPI_ERR_ROOT`).
pub fn root_of(c: &SimpleCommunicator, root: Rank) -> Result<Rank> {
    if root < 0 || root >= c.size() {
        return Err(MpiError::Root { root, size: c.size() });
    }
    Ok(root)
}

/// What a process contributes to a gather: its send argument, checked
/// against its receive block `own`, or with `MPI_IN_PLACE` a copy of
/// `own` (its block, already in place).
///
/// # Safety
/// With [`Send::From`], every block of the span's elements at its address is readable now and,
/// for a direct span, stays readable and unmodified while the returned `bytes` are used (as
/// [`out`] asks).
unsafe fn own_block(call: &str, send: Send, own: &[u8]) -> Result<Out> {
    match send {
        Send::InPlace => Ok(owned(own.to_vec())),
        Send::From(buf, span) => {
            // SAFETY: `buf` is the send buffer, which the caller keeps readable, and a direct span's
            // bytes unmodified, while the returned `bytes` are used (`# Safety`): what `out` asks.
            let o = unsafe { out(buf, &span, "sendbuf")? };
            same(call, o.bytes.len(), own.len())?;
            Ok(o)
        }
    }
}

/// Block `i` of a v-collective's byte view.
fn block_of(bytes: &[u8], counts: &[crate::Count], displs: &[crate::Count], i: usize) -> Vec<u8> {
    let (d, c) = (displs[i] as usize, counts[i] as usize);
    bytes.get(d..d + c).map_or_else(Vec::new, <[u8]>::to_vec)
}

pub use crate::coll::persistent::Persistent;

/// `MPI_Ibcast` (§6.4): the root's elements to everyone.
///
/// # Safety
/// Every block of the span's elements at `buf` stays writable and is not otherwise accessed
/// until the returned operation completes or is dropped; at the root it is also readable now
/// (its elements are what goes out, and are only read).
pub unsafe fn ibcast(c: &SimpleCommunicator, root: Rank, buf: *mut u8, span: &Span) -> Result<Staged> {
    let root = root_of(c, root)?;
    let at_root = c.rank() == root;
    // SAFETY: the span at `buf` is readable now at the root (`fill`), and writable and untouched
    // until the operation completes or is dropped (`# Safety`); `inc.stage` is kept by it below.
    let mut inc = unsafe { incoming(buf, span, "buffer", at_root)? };
    // SAFETY: `inc`'s bytes are the caller's span, left to the operation until it completes
    // (`# Safety`), or the staging buffer, whose heap bytes go into its stage below (in `hold` at the
    // root, in the `Unpack` elsewhere); the broadcast is their only user.
    let r = c.process_at_rank(root).immediate_broadcast_into(unsafe { inc.bytes() })?;
    // The root's elements do not change: its staging buffer is only read.
    Ok(if at_root {
        Staged::keeping(r, inc.stage.map(Unpack::into_bytes).into_iter().collect(), None)
    } else {
        Staged::keeping(r, Vec::new(), inc.stage)
    })
}

/// A non-root's part in `MPI_Igather(v)`: its elements to the root.
///
/// # Safety
/// Every block of the span's elements at `buf` is readable now and, for a direct span, stays
/// readable and unmodified until the returned operation completes or is dropped.
pub unsafe fn igather(c: &SimpleCommunicator, root: Rank, buf: *const u8, span: &Span, v: bool) -> Result<Staged> {
    let p = c.process_at_rank(root_of(c, root)?);
    // SAFETY: the span at `buf` is readable, and a direct span's bytes unmodified until the operation
    // made below with `o.bytes` completes or is dropped (`# Safety`), as `out` asks.
    let o = unsafe { out(buf, span, "sendbuf")? };
    let r = if v { p.immediate_gather_varcount_into(o.bytes)? } else { p.immediate_gather_into(o.bytes)? };
    Ok(Staged::keeping(r, o.hold, None))
}

/// The root's part in `MPI_Igather` (§6.5): `recv` holds a block per
/// process.
///
/// # Safety
/// With [`Send::From`], the send span's elements are readable now and, when direct, unmodified
/// until the returned operation completes or is dropped; every block of `recv_span`'s elements at
/// `recv` (a block per process) is readable now with [`Send::InPlace`], and stays writable and
/// not otherwise accessed until then.
pub unsafe fn igather_root(c: &SimpleCommunicator, send: Send, recv: *mut u8, recv_span: &Span) -> Result<Staged> {
    // SAFETY: the send and receive buffers are left as `gathering` asks until the operation made
    // below from what it returns, which keeps `o.hold` and `stage`, completes (`# Safety`).
    let (bytes, o, stage) = unsafe { gathering("MPI_Gather", c, send, recv, recv_span)? };
    let r = c.process_at_rank(c.rank()).immediate_gather_into_root(o.bytes, bytes)?;
    Ok(Staged::keeping(r, o.hold, stage))
}

/// The receive side of a gather or all-gather of one block per process,
/// and this process's contribution to it (its own block, in place or
/// from the send buffer).
///
/// # Safety
/// With [`Send::From`], the send span's elements are readable now and, when direct, unmodified
/// while the returned `Out`'s bytes are used; every block of `recv_span`'s elements at `recv` is
/// readable now with [`Send::InPlace`], and stays writable and not otherwise accessed until the
/// operation the caller makes of the returned bytes completes or is dropped. That operation keeps
/// the returned `Out`'s `hold` and the `Unpack` in its stage.
unsafe fn gathering(
    call: &str,
    c: &SimpleCommunicator,
    send: Send,
    recv: *mut u8,
    recv_span: &Span,
) -> Result<(&'static mut [u8], Out, Option<Unpack>)> {
    let (n, me) = (c.size() as usize, c.rank() as usize);
    // SAFETY: the receive span is readable now when in place (this process's block is read from
    // it), and writable and untouched until the caller's operation, which keeps the `Unpack`
    // returned, completes (`# Safety`): what `incoming` asks.
    let mut inc = unsafe { incoming(recv, recv_span, "recvbuf", matches!(send, Send::InPlace))? };
    // SAFETY: `inc`'s bytes are the receive span, left to the caller's operation until it completes
    // (`# Safety`), or the staging buffer, returned in `inc.stage` for that operation to keep; the
    // returned slice is their only user.
    let bytes = unsafe { inc.bytes() };
    let each = bytes.len() / n;
    // SAFETY: with `Send::From`, the send span is readable, and unmodified when direct, while the
    // returned `Out` is used (`# Safety`), as `own_block` asks.
    let o = unsafe { own_block(call, send, &bytes[me * each..][..each])? };
    Ok((bytes, o, inc.stage))
}

/// [`gathering`] with a count and displacement per process.
///
/// # Safety
/// `recv` was made by [`super::blocks`] (with `fill` when `send` is [`Send::InPlace`]) over
/// blocks left writable and untouched until the operation the caller makes of the returned bytes
/// completes or is dropped; that operation keeps `recv.inc.stage` and the returned `Out`'s
/// `hold`. With [`Send::From`], the send span's elements are readable now and, when direct,
/// unmodified while the returned `Out`'s bytes are used.
unsafe fn gathering_v(
    call: &str,
    c: &SimpleCommunicator,
    send: Send,
    recv: &mut Blocks,
) -> Result<(&'static mut [u8], Out)> {
    // SAFETY: `recv.inc`'s bytes are the caller's blocks, left to the caller's operation until it
    // completes, or the staging buffer in `recv.inc.stage`, which that operation keeps
    // (`# Safety`); the returned slice is their only user.
    let bytes = unsafe { recv.inc.bytes() };
    let own = block_of(bytes, &recv.counts, &recv.displs, c.rank() as usize);
    // SAFETY: with `Send::From`, the send span is readable, and unmodified when direct, while the
    // returned `Out` is used (`# Safety`), as `own_block` asks.
    let o = unsafe { own_block(call, send, &own)? };
    Ok((bytes, o))
}

/// The root's part in `MPI_Igatherv` (§6.5): `recv` holds the blocks.
///
/// # Safety
/// `recv` was made by [`super::blocks`] (with `fill` when `send` is [`Send::InPlace`]) over
/// blocks left writable and untouched until the returned operation completes or is dropped; with
/// [`Send::From`], the send span's elements are readable now and, when direct, unmodified until
/// then.
pub unsafe fn igatherv_root(c: &SimpleCommunicator, send: Send, mut recv: Blocks) -> Result<Staged> {
    // SAFETY: the buffers are left as `gathering_v` asks until the operation made below, which keeps
    // `o.hold` and `recv.inc.stage`, completes or is dropped (`# Safety`).
    let (bytes, o) = unsafe { gathering_v("MPI_Gatherv", c, send, &mut recv)? };
    let p = c.process_at_rank(c.rank());
    let r = p.immediate_gather_varcount_into_root(o.bytes, bytes, &recv.counts, &recv.displs)?;
    Ok(Staged::keeping(r, o.hold, recv.inc.stage))
}

/// A non-root's part in `MPI_Iscatter(v)`: its block from the root.
///
/// # Safety
/// Every block of the span's elements at `buf` stays writable and is not otherwise accessed
/// until the returned operation completes or is dropped.
pub unsafe fn iscatter(c: &SimpleCommunicator, root: Rank, buf: *mut u8, span: &Span, v: bool) -> Result<Staged> {
    let p = c.process_at_rank(root_of(c, root)?);
    // SAFETY: the span at `buf` is left writable and untouched until the operation completes or is
    // dropped (`# Safety`), and `inc.stage` goes into that operation: what `incoming` asks.
    let mut inc = unsafe { incoming(buf, span, "recvbuf", false)? };
    // SAFETY: `inc`'s bytes are the caller's span, left to the operation until it completes
    // (`# Safety`), or the staging buffer in `inc.stage`, which the operation keeps; the scatter is
    // their only user.
    let into = unsafe { inc.bytes() };
    let r = if v { p.immediate_scatter_varcount_into(into)? } else { p.immediate_scatter_into(into)? };
    Ok(Staged::keeping(r, Vec::new(), inc.stage))
}

/// The root's own block of a scatter: where it lands (scratch space when
/// it stays in place), what to keep and what to unpack.
///
/// # Safety
/// With [`Recv::Into`], every block of the span's elements at its address stays writable and not
/// otherwise accessed until the operation the caller makes of the returned bytes completes or is
/// dropped; that operation keeps `hold` and the returned `Unpack`.
unsafe fn own_landing(
    call: &str,
    recv: Recv,
    each: usize,
    hold: &mut Vec<Vec<u8>>,
) -> Result<(&'static mut [u8], Option<Unpack>)> {
    match recv {
        // The root's own block stays where it is.
        Recv::InPlace => Ok((scratch(hold, each)?, None)),
        Recv::Into(buf, span) => {
            same(call, each, span.len())?;
            // SAFETY: the receive span is left writable and untouched until the caller's operation,
            // which keeps the `Unpack` returned, completes (`# Safety`): what `incoming` asks.
            let mut inc = unsafe { incoming(buf, &span, "recvbuf", false)? };
            // SAFETY: `inc`'s bytes are the receive span, left to the caller's operation until it
            // completes (`# Safety`), or the staging buffer, returned in `inc.stage` for that
            // operation to keep; the returned slice is their only user.
            let b = unsafe { inc.bytes() };
            Ok((b, inc.stage))
        }
    }
}

/// The root's part in `MPI_Iscatter` (§6.6): `send` holds a block per
/// process.
///
/// # Safety
/// Every block of `send_span`'s elements at `send` (a block per process) is readable now and,
/// when direct, unmodified until the returned operation completes or is dropped; with
/// [`Recv::Into`], the receive span's elements stay writable and not otherwise accessed until
/// then.
pub unsafe fn iscatter_root(c: &SimpleCommunicator, send: *const u8, send_span: &Span, recv: Recv) -> Result<Staged> {
    // SAFETY: the send span is readable, and unmodified when direct, until the operation made below
    // with `o.bytes` completes or is dropped (`# Safety`), as `out` asks.
    let o = unsafe { out(send, send_span, "sendbuf")? };
    let each = o.bytes.len() / c.size() as usize;
    let mut hold = o.hold;
    // SAFETY: with `Recv::Into`, the receive span is left writable and untouched until the operation
    // made below, which keeps `hold` and `unpack`, completes or is dropped (`# Safety`).
    let (into, unpack) = unsafe { own_landing("MPI_Scatter", recv, each, &mut hold)? };
    let r = c.process_at_rank(c.rank()).immediate_scatter_into_root(o.bytes, into)?;
    Ok(Staged::keeping(r, hold, unpack))
}

/// The root's part in `MPI_Iscatterv` (§6.6): `send` holds the blocks
/// (staged with their current values when scattered).
///
/// # Safety
/// `send` was made by [`super::blocks`] with `fill` over blocks left to it (and only read) until
/// the returned operation completes or is dropped; with [`Recv::Into`], the receive span's
/// elements stay writable and not otherwise accessed until then.
pub unsafe fn iscatterv_root(c: &SimpleCommunicator, mut send: Blocks, recv: Recv) -> Result<Staged> {
    // SAFETY: `send.inc`'s bytes are the caller's send blocks, left to this operation until it
    // completes (`# Safety`) and only read, or the staging buffer, whose heap bytes go into `hold`
    // below and so into the operation's stage.
    let bytes: &[u8] = unsafe { send.inc.bytes() };
    let mut hold: Vec<Vec<u8>> = send.inc.stage.take().map(Unpack::into_bytes).into_iter().collect();
    let mine = send.counts[c.rank() as usize] as usize;
    // SAFETY: with `Recv::Into`, the receive span is left writable and untouched until the operation
    // made below, which keeps `hold` and `unpack`, completes or is dropped (`# Safety`).
    let (into, unpack) = unsafe { own_landing("MPI_Scatterv", recv, mine, &mut hold)? };
    let p = c.process_at_rank(c.rank());
    let r = p.immediate_scatter_varcount_into_root(bytes, &send.counts, &send.displs, into)?;
    Ok(Staged::keeping(r, hold, unpack))
}

/// `MPI_Iallgather` (§6.7): `recv` holds a block per process.
///
/// # Safety
/// With [`Send::From`], the send span's elements are readable now and, when direct, unmodified
/// until the returned operation completes or is dropped; every block of `recv_span`'s elements at
/// `recv` (a block per process) is readable now with [`Send::InPlace`], and stays writable and
/// not otherwise accessed until then.
pub unsafe fn iallgather(c: &SimpleCommunicator, send: Send, recv: *mut u8, recv_span: &Span) -> Result<Staged> {
    // SAFETY: the send and receive buffers are left as `gathering` asks until the operation made
    // below from what it returns, which keeps `o.hold` and `stage`, completes (`# Safety`).
    let (bytes, o, stage) = unsafe { gathering("MPI_Allgather", c, send, recv, recv_span)? };
    let r = c.immediate_all_gather_into(o.bytes, bytes)?;
    Ok(Staged::keeping(r, o.hold, stage))
}

/// `MPI_Iallgatherv` (§6.7): `recv` holds the blocks.
///
/// # Safety
/// `recv` was made by [`super::blocks`] (with `fill` when `send` is [`Send::InPlace`]) over
/// blocks left writable and untouched until the returned operation completes or is dropped; with
/// [`Send::From`], the send span's elements are readable now and, when direct, unmodified until
/// then.
pub unsafe fn iallgatherv(c: &SimpleCommunicator, send: Send, mut recv: Blocks) -> Result<Staged> {
    // SAFETY: the buffers are left as `gathering_v` asks until the operation made below, which keeps
    // `o.hold` and `recv.inc.stage`, completes or is dropped (`# Safety`).
    let (bytes, o) = unsafe { gathering_v("MPI_Allgatherv", c, send, &mut recv)? };
    let r = c.immediate_all_gather_varcount_into(o.bytes, bytes, &recv.counts, &recv.displs)?;
    Ok(Staged::keeping(r, o.hold, recv.inc.stage))
}

/// `MPI_Ialltoall` (§6.8): each buffer holds a block per process; in
/// place, what goes out is what the receive buffer holds.
///
/// # Safety
/// With [`Send::From`], the send span's elements are readable now and, when direct, unmodified
/// until the returned operation completes or is dropped; every block of `recv_span`'s elements at
/// `recv` is readable now with [`Send::InPlace`] (it is what goes out), and stays writable and
/// not otherwise accessed until then.
pub unsafe fn ialltoall(c: &SimpleCommunicator, send: Send, recv: *mut u8, recv_span: &Span) -> Result<Staged> {
    let in_place = matches!(send, Send::InPlace);
    // SAFETY: the receive span is readable now when in place, and writable and untouched until the
    // operation completes or is dropped (`# Safety`); `inc.stage` goes into that operation.
    let mut inc = unsafe { incoming(recv, recv_span, "recvbuf", in_place)? };
    // SAFETY: `inc`'s bytes are the receive span, left to the operation until it completes
    // (`# Safety`), or the staging buffer in `inc.stage`, which the operation keeps; the exchange
    // (and, in place, the copy below) is their only user.
    let bytes = unsafe { inc.bytes() };
    let o = match send {
        Send::InPlace => owned(bytes.to_vec()),
        Send::From(buf, span) => {
            // SAFETY: with `Send::From`, the send span is readable now, and unmodified when direct
            // until the operation made below with `o.bytes` completes or is dropped (`# Safety`).
            let o = unsafe { out(buf, &span, "sendbuf")? };
            same("MPI_Alltoall", o.bytes.len(), bytes.len())?;
            o
        }
    };
    let r = c.immediate_all_to_all_into(o.bytes, bytes)?;
    Ok(Staged::keeping(r, o.hold, inc.stage))
}

/// `MPI_Ialltoallv` (§6.8): the send blocks (`None`: in place, the
/// receive blocks' contents go out) and the receive blocks.
///
/// # Safety
/// `recv` was made by [`super::blocks`] (with `fill` when `send` is `None`: in place, its
/// contents go out) over blocks left writable and untouched until the returned operation
/// completes or is dropped; `send`, if any, was made by [`super::blocks`] with `fill` over blocks
/// left to it (and only read) until then.
pub unsafe fn ialltoallv(c: &SimpleCommunicator, send: Option<Blocks>, mut recv: Blocks) -> Result<Staged> {
    // SAFETY: `recv.inc`'s bytes are the caller's receive blocks, left to this operation until it
    // completes (`# Safety`), or the staging buffer in `recv.inc.stage`, which the operation keeps;
    // the exchange (and, in place, the copy below) is their only user.
    let bytes = unsafe { recv.inc.bytes() };
    let (o, scounts, sdispls) = match send {
        // In place, what goes out is what the receive blocks hold (§6.8).
        None => (owned(bytes.to_vec()), recv.counts.clone(), recv.displs.clone()),
        Some(mut sb) => {
            // SAFETY: `sb.inc`'s bytes are the caller's send blocks, left to this operation until it
            // completes (`# Safety`) and only read, or the staging buffer, whose heap bytes go into
            // `hold` and so into the operation's stage.
            let sent: &'static [u8] = unsafe { sb.inc.bytes() };
            let hold = sb.inc.stage.take().map(Unpack::into_bytes).into_iter().collect();
            (Out { bytes: sent, hold }, sb.counts, sb.displs)
        }
    };
    let r = c.immediate_all_to_all_varcount_into(o.bytes, &scounts, &sdispls, bytes, &recv.counts, &recv.displs)?;
    Ok(Staged::keeping(r, o.hold, recv.inc.stage))
}

/// One block of a w-style exchange (`MPI_Alltoallw`, the neighborhood
/// collectives): `count` elements of `layout` at `at` (read for a send
/// block, written at completion for a receive block).
#[derive(Clone)]
pub struct WBlock {
    /// Where the elements are.
    pub at: *mut u8,
    /// Their datatype.
    pub layout: Arc<Typemap>,
    /// How many.
    pub count: usize,
}

/// A w-style exchange's blocks, packed to go and staged to arrive.
pub struct Wblocks {
    /// The send blocks, one after another; `scounts`/`sdispls` in bytes.
    packed: Vec<u8>,
    /// Bytes sent to each peer.
    pub scounts: Vec<crate::Count>,
    /// Where each peer's bytes start in the packed send blocks.
    pub sdispls: Vec<crate::Count>,
    /// Room for the receive blocks; `rcounts`/`rdispls` in bytes.
    staging: Vec<u8>,
    /// Bytes received from each peer.
    pub rcounts: Vec<crate::Count>,
    /// Where each peer's bytes land in the staging buffer.
    pub rdispls: Vec<crate::Count>,
    /// Where each received block is unpacked: (offset in `staging`,
    /// length, address, layout).
    places: Vec<(usize, usize, *mut u8, Arc<Typemap>)>,
}

impl Wblocks {
    /// Pack the `sends` blocks into one buffer and stage room for the
    /// `recvs` blocks, each unpacked into its place at completion.
    ///
    /// # Safety
    /// Every block of each send block's `count` elements at its `at` is readable for this call;
    /// every block of each receive block's `count` elements at its `at` stays writable and not
    /// otherwise accessed until the returned value (or the operation [`Wblocks::start`] makes of
    /// it) is completed or dropped: the unpacking writes them then.
    pub unsafe fn new(sends: &[WBlock], recvs: &[WBlock]) -> Result<Wblocks> {
        let fits = |b: usize| {
            crate::Count::try_from(b).map_err(|_| MpiError::TooLarge(Overflow::Block { bytes: b, what: "collective" }))
        };
        let (mut packed, mut scounts, mut sdispls) = (Vec::new(), Vec::new(), Vec::new());
        for b in sends {
            // SAFETY: every block of `b`'s `count` elements at `b.at` is readable for this call
            // (`# Safety`); `bytes`, borrowed from them when direct, is copied into `packed` and dropped.
            let bytes = unsafe { outgoing(b.at, &Span::of(b.layout.clone(), b.count)?, "send")? };
            sdispls.push(fits(packed.len())?);
            scounts.push(fits(bytes.len())?);
            packed.extend_from_slice(&bytes);
        }
        let (mut rcounts, mut rdispls, mut places, mut total) = (Vec::new(), Vec::new(), Vec::new(), 0usize);
        for b in recvs {
            let len = b.layout.size.checked_mul(b.count).ok_or(MpiError::TooLarge(Overflow::ReceiveBlock))?;
            if len > 0 && near_null(b.at, b.layout.true_lb) {
                return Err(BufferError::Null { what: "receive buffer".into() }.into());
            }
            rdispls.push(fits(total)?);
            rcounts.push(fits(len)?);
            places.push((total, len, b.at, b.layout.clone()));
            total += len;
        }
        let staging = crate::datatype::zeroed_buffer(total, "a staging buffer")?;
        Ok(Wblocks { packed, scounts, sdispls, staging, rcounts, rdispls, places })
    }

    /// Unpack the received blocks into their places.
    ///
    /// # Safety
    /// Every block of each receive block's elements (each `places` entry's address and layout)
    /// is still writable and not otherwise accessed: the exchange [`Wblocks::new`]'s caller left
    /// them to is completing now, and its writes into `staging` have ended.
    unsafe fn unpack(&self) {
        for (at, len, dst, layout) in &self.places {
            // SAFETY: `unpack_raw` writes the `len / size` elements of `layout` at `dst` that this
            // receive block holds, which the caller keeps writable and untouched until now
            // (`# Safety`); it reads `staging[at..at + len]`, in bounds (the places sum to its length).
            unsafe { layout.unpack_raw(&self.staging[*at..*at + *len], *dst) };
        }
    }

    /// Start the exchange of the packed blocks into the staging buffer
    /// with `start`, and unpack what arrived into place when it completes.
    pub fn start(
        mut self,
        start: impl FnOnce(&'static [u8], &'static mut [u8], &Wblocks) -> Result<crate::Request<'static>>,
    ) -> Result<Staged> {
        let packed = std::mem::take(&mut self.packed);
        // SAFETY: `out` is `packed`'s and `into` is `self.staging`'s initialized heap bytes, which stay
        // put when the vectors move: `packed` into the operation's `hold`, `self` into its `then`; the
        // stage is dropped after the request, so both outlive the exchange. `start` reads only the
        // counts and displacements of `&self`, so `into` is `staging`'s only access until `then`.
        let (out, into): (&'static [u8], &'static mut [u8]) = unsafe {
            (
                std::slice::from_raw_parts(packed.as_ptr(), packed.len()),
                std::slice::from_raw_parts_mut(self.staging.as_mut_ptr(), self.staging.len()),
            )
        };
        let r = start(out, into, &self)?;
        let mut a = Staged::keeping(r, vec![packed], None);
        // SAFETY: `then` runs once the exchange has completed (its request ended); `Wblocks::new`'s
        // caller left the receive blocks writable and untouched until this completion (its
        // `# Safety`), which is what `unpack` asks.
        a.stage.then = Some(Box::new(move || unsafe { self.unpack() }));
        Ok(a)
    }

    /// The exchange on an intercommunicator, blocking: a block for each
    /// process of the remote group (§6.8).
    pub fn inter_exchange(mut self, c: &SimpleCommunicator) -> Result<()> {
        let block = |d: crate::Count, l: crate::Count| d as usize..(d + l) as usize;
        let out: Vec<&[u8]> =
            self.sdispls.iter().zip(&self.scounts).map(|(&d, &l)| &self.packed[block(d, l)]).collect();
        let mut into: Vec<&mut [u8]> = Vec::new();
        let mut rest = &mut self.staging[..];
        for &l in &self.rcounts {
            let (b, tail) = std::mem::take(&mut rest).split_at_mut(l as usize);
            into.push(b);
            rest = tail;
        }
        c.inter_all_to_all(&out, &mut into)?;
        // SAFETY: the blocking exchange has completed, and `Wblocks::new`'s caller left the receive
        // blocks writable and untouched until this value is completed, as here (its `# Safety`).
        unsafe { self.unpack() };
        Ok(())
    }
}
