//! Collectives on an intercommunicator (MPI 4.1 §6.2.2) on buffers given
//! as raw pointers and [`Span`]s or [`Blocks`]: the data goes between the
//! two groups, through [`crate::inter`]'s blocking collectives. Which
//! arguments are significant follows from the root argument
//! ([`InterRoot`]); the caller reads only those.

use super::{incoming, outgoing, Blocks, Span};
use crate::comm::SimpleCommunicator;
use crate::error::{ArgError, BufferError};
use crate::inter::InterRoot;
use crate::Result;

/// Split `bytes` into the blocks at byte `(displs[i], counts[i])`, which
/// must not overlap (they are written).
fn split_mut<'a>(bytes: &'a mut [u8], counts: &[crate::Count], displs: &[crate::Count]) -> Result<Vec<&'a mut [u8]>> {
    let mut order: Vec<usize> = (0..counts.len()).collect();
    order.sort_by_key(|&i| displs[i]);
    let mut out: Vec<Option<&'a mut [u8]>> = (0..counts.len()).map(|_| None).collect();
    let (mut rest, mut at) = (bytes, 0usize);
    for i in order {
        let (d, n) = (displs[i] as usize, counts[i] as usize);
        if d < at && n > 0 {
            return Err(BufferError::BlocksOverlap.into());
        }
        let skip = d.saturating_sub(at).min(rest.len());
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(skip);
        if n > tail.len() {
            return Err(BufferError::BlockOutside.into());
        }
        let (block, tail) = tail.split_at_mut(n);
        out[i] = Some(block);
        rest = tail;
        at = at.max(d) + n;
    }
    Ok(out.into_iter().map(|b| b.unwrap_or(&mut [])).collect())
}

/// Receive into `blocks` with `body`, then unpack them.
///
/// # Safety
/// `b` was made by [`super::blocks`] over blocks that are writable and not otherwise accessed
/// for the duration of this call (its `# Safety`, for an operation that ends within the call).
unsafe fn into_blocks(mut b: Blocks, body: impl FnOnce(&mut [&mut [u8]]) -> Result<()>) -> Result<()> {
    // SAFETY: `b.inc`'s bytes are the caller's blocks, writable and untouched for this call
    // (`# Safety`), or the staging buffer `b.inc.stage` owns, alive until the `finish` below; the
    // slice, split for `body`, is their only user until then.
    let bytes = unsafe { b.inc.bytes() };
    body(&mut split_mut(bytes, &b.counts, &b.displs)?)?;
    let n = b.inc.len as u64;
    // SAFETY: `body` has returned and the slice is no longer used; the blocks are still writable
    // and untouched within this call (`# Safety`).
    unsafe { b.inc.finish(n) };
    Ok(())
}

/// Receive the span's elements at `buf` with `body`, then unpack them.
///
/// # Safety
/// Every block of the span's elements at `buf` is writable, and not otherwise accessed, for the
/// duration of the call.
unsafe fn into_one(buf: *mut u8, span: &Span, body: impl FnOnce(&mut [u8]) -> Result<()>) -> Result<()> {
    // SAFETY: the span at `buf` is writable and untouched for this call (`# Safety`), and `inc` is
    // finished or dropped before it returns: what `incoming` asks.
    let mut inc = unsafe { incoming(buf, span, "recvbuf", false)? };
    // SAFETY: `inc`'s bytes are the caller's span, writable and untouched for this call
    // (`# Safety`), or the staging buffer `inc` owns; the slice ends when `body` returns.
    body(unsafe { inc.bytes() })?;
    let n = inc.len as u64;
    // SAFETY: `body` has returned, and the span's elements are still writable and untouched within
    // this call (`# Safety`).
    unsafe { inc.finish(n) };
    Ok(())
}

/// Packed bytes, and each block's `(offset, length)` in them.
type Packed = (Vec<u8>, Vec<(usize, usize)>);

/// The send blocks' bytes, and where each block is in them.
///
/// # Safety
/// `b` was made by [`super::blocks`] (with `fill`, for the staging buffer to hold the blocks'
/// values) over blocks that are readable, and neither written nor read elsewhere, for the
/// duration of this call.
unsafe fn sent_blocks(mut b: Blocks) -> Result<Packed> {
    // SAFETY: `b.inc`'s bytes are the caller's blocks, untouched by others for this call
    // (`# Safety`), or the staging buffer `b` owns; the slice is only read, copied at once.
    let bytes = unsafe { b.inc.bytes() }.to_vec();
    Ok((bytes, b.displs.iter().zip(&b.counts).map(|(&d, &c)| (d as usize, c as usize)).collect()))
}

/// `MPI_Bcast` on an intercommunicator.
///
/// # Safety
/// Every block of the span's elements at `buf` is, for the duration of the call, readable at the
/// root (`Here`), and writable and not otherwise accessed in the other group.
pub unsafe fn bcast(c: &SimpleCommunicator, root: InterRoot, buf: *mut u8, span: &Span) -> Result<()> {
    match root {
        InterRoot::Idle => Ok(()),
        InterRoot::Here => {
            // SAFETY: at the root the span's elements at `buf` are readable for this call
            // (`# Safety`), and `into_owned` copies a direct span's bytes at once.
            let mut data = unsafe { outgoing(buf, span, "buffer")? }.into_owned();
            c.inter_broadcast(InterRoot::Here, &mut data)
        }
        // SAFETY: in the receiving group, the span's elements at `buf` are writable and untouched for
        // this call (`# Safety`), as `into_one` asks.
        r => unsafe { into_one(buf, span, |b| c.inter_broadcast(r, b)) },
    }
}

/// `MPI_Gather(v)` on an intercommunicator: at the root, the blocks
/// (`recv`) are significant; in the other group, the send span.
///
/// # Safety
/// At the root (`Here`), `recv` was made by [`super::blocks`] over blocks writable and not
/// otherwise accessed for the duration of the call; in the other group, every block of the send
/// span's elements is readable for the call.
pub unsafe fn gather(
    c: &SimpleCommunicator,
    root: InterRoot,
    send: (*const u8, &Span),
    recv: Option<Blocks>,
) -> Result<()> {
    match (root, recv) {
        (InterRoot::Idle, _) => Ok(()),
        // SAFETY: at the root, `b`'s blocks are writable and untouched for this call (`# Safety`), as
        // `into_blocks` asks.
        (InterRoot::Here, Some(b)) => unsafe { into_blocks(b, |b| c.inter_gather(InterRoot::Here, &[], b)) },
        (InterRoot::Here, None) => Err(ArgError::Missing("the root of a gather needs its receive blocks").into()),
        (r, _) => {
            // SAFETY: in the sending group, the send span's elements are readable and unmodified for
            // this call (`# Safety`), and `data` does not outlive it.
            let data = unsafe { outgoing(send.0, send.1, "sendbuf")? };
            c.inter_gather(r, &data, &mut [])
        }
    }
}

/// `MPI_Scatter(v)` on an intercommunicator: at the root, the blocks
/// (`send`) are significant; in the other group, the receive span.
///
/// # Safety
/// At the root (`Here`), `send` was made by [`super::blocks`] with `fill` over blocks readable
/// and untouched by others for the duration of the call; in the other group, every block of the
/// receive span's elements is writable and not otherwise accessed for the call.
pub unsafe fn scatter(
    c: &SimpleCommunicator,
    root: InterRoot,
    send: Option<Blocks>,
    recv: (*mut u8, &Span),
) -> Result<()> {
    match (root, send) {
        (InterRoot::Idle, _) => Ok(()),
        (InterRoot::Here, Some(b)) => {
            // SAFETY: at the root, `b`'s blocks are readable and untouched by others for this call
            // (`# Safety`), as `sent_blocks` asks.
            let (bytes, parts) = unsafe { sent_blocks(b)? };
            let blocks: Vec<&[u8]> = parts.iter().map(|&(d, l)| &bytes[d..d + l]).collect();
            c.inter_scatter(InterRoot::Here, &blocks, &mut [])
        }
        (InterRoot::Here, None) => Err(ArgError::Missing("the root of a scatter needs its send blocks").into()),
        // SAFETY: in the receiving group, the receive span's elements are writable and untouched for
        // this call (`# Safety`), as `into_one` asks.
        (r, _) => unsafe { into_one(recv.0, recv.1, |b| c.inter_scatter(r, &[], b)) },
    }
}

/// `MPI_Allgather(v)` on an intercommunicator: a block from each remote
/// process.
///
/// # Safety
/// Every block of the span's elements at `send` is readable for the duration of the call, and
/// `recv` was made by [`super::blocks`] over blocks writable and not otherwise accessed for it.
pub unsafe fn allgather(c: &SimpleCommunicator, send: *const u8, span: &Span, recv: Blocks) -> Result<()> {
    // SAFETY: the span's elements at `send` are readable and unmodified for this call (`# Safety`),
    // and `data` does not outlive it.
    let data = unsafe { outgoing(send, span, "sendbuf")? };
    // SAFETY: `recv`'s blocks are writable and untouched for this call (`# Safety`), as
    // `into_blocks` asks.
    unsafe { into_blocks(recv, |b| c.inter_all_gather(&data, b)) }
}

/// `MPI_Alltoall(v)` on an intercommunicator: a block to and from each
/// remote process.
///
/// # Safety
/// `send` was made by [`super::blocks`] with `fill` over blocks readable and untouched by others
/// for the duration of the call, and `recv` by [`super::blocks`] over blocks writable and not
/// otherwise accessed for it.
pub unsafe fn alltoall(c: &SimpleCommunicator, send: Blocks, recv: Blocks) -> Result<()> {
    // SAFETY: `send`'s blocks are readable and untouched by others for this call (`# Safety`), as
    // `sent_blocks` asks; their bytes are copied before `recv` is touched.
    let (bytes, parts) = unsafe { sent_blocks(send)? };
    let blocks: Vec<&[u8]> = parts.iter().map(|&(d, l)| &bytes[d..d + l]).collect();
    // SAFETY: `recv`'s blocks are writable and untouched for this call (`# Safety`), as
    // `into_blocks` asks.
    unsafe { into_blocks(recv, |b| c.inter_all_to_all(&blocks, b)) }
}
