//! Collectives on an intercommunicator (MPI 4.1 §6.2.2) on buffers given
//! as raw pointers and [`Span`]s or [`Blocks`]: the data goes between the
//! two groups, through [`crate::inter`]'s blocking collectives. Which
//! arguments are significant follows from the root argument
//! ([`InterRoot`]); the caller reads only those.

use super::{incoming, outgoing, Blocks, Span};
use crate::comm::SimpleCommunicator;
use crate::inter::InterRoot;
use crate::{MpiError, Result};

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
            return Err(MpiError::Buffer("two receive blocks overlap".into()));
        }
        let skip = d.saturating_sub(at).min(rest.len());
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(skip);
        if n > tail.len() {
            return Err(MpiError::Buffer("a receive block lies outside the buffer".into()));
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
/// The blocks' buffer is writable for the call ([`super::blocks`]'s contract).
unsafe fn into_blocks(mut b: Blocks, body: impl FnOnce(&mut [&mut [u8]]) -> Result<()>) -> Result<()> {
    // SAFETY: the caller's bytes or a staging buffer, for this call.
    let bytes = unsafe { b.inc.bytes() };
    body(&mut split_mut(bytes, &b.counts, &b.displs)?)?;
    let n = b.inc.len as u64;
    // SAFETY: this function's contract: the buffer is writable.
    unsafe { b.inc.finish(n) };
    Ok(())
}

/// Receive the span's elements at `buf` with `body`, then unpack them.
///
/// # Safety
/// `buf` has room for them, writable for the call.
unsafe fn into_one(buf: *mut u8, span: &Span, body: impl FnOnce(&mut [u8]) -> Result<()>) -> Result<()> {
    // SAFETY: this function's contract.
    let mut inc = unsafe { incoming(buf, span, "recvbuf", false)? };
    // SAFETY: the caller's bytes or a staging buffer, for this call.
    body(unsafe { inc.bytes() })?;
    let n = inc.len as u64;
    // SAFETY: this function's contract: the buffer is writable.
    unsafe { inc.finish(n) };
    Ok(())
}

/// Packed bytes, and each block's `(offset, length)` in them.
type Packed = (Vec<u8>, Vec<(usize, usize)>);

/// The send blocks' bytes, and where each block is in them.
///
/// # Safety
/// The blocks' buffer holds them for the call.
unsafe fn sent_blocks(mut b: Blocks) -> Result<Packed> {
    // SAFETY: this function's contract; read only.
    let bytes = unsafe { b.inc.bytes() }.to_vec();
    Ok((bytes, b.displs.iter().zip(&b.counts).map(|(&d, &c)| (d as usize, c as usize)).collect()))
}

/// `MPI_Bcast` on an intercommunicator.
///
/// # Safety
/// `buf` holds the span's elements for the call (read at the root,
/// written in the other group).
pub unsafe fn bcast(c: &SimpleCommunicator, root: InterRoot, buf: *mut u8, span: &Span) -> Result<()> {
    match root {
        InterRoot::Idle => Ok(()),
        InterRoot::Here => {
            // SAFETY: this function's contract.
            let mut data = unsafe { outgoing(buf, span, "buffer")? }.into_owned();
            c.inter_broadcast(InterRoot::Here, &mut data)
        }
        // SAFETY: this function's contract.
        r => unsafe { into_one(buf, span, |b| c.inter_broadcast(r, b)) },
    }
}

/// `MPI_Gather(v)` on an intercommunicator: at the root, the blocks
/// (`recv`) are significant; in the other group, the send span.
///
/// # Safety
/// The significant buffer holds its elements for the call.
pub unsafe fn gather(
    c: &SimpleCommunicator,
    root: InterRoot,
    send: (*const u8, &Span),
    recv: Option<Blocks>,
) -> Result<()> {
    match (root, recv) {
        (InterRoot::Idle, _) => Ok(()),
        // SAFETY: this function's contract.
        (InterRoot::Here, Some(b)) => unsafe { into_blocks(b, |b| c.inter_gather(InterRoot::Here, &[], b)) },
        (InterRoot::Here, None) => Err(MpiError::Invalid("the root of a gather needs its receive blocks".into())),
        (r, _) => {
            // SAFETY: this function's contract.
            let data = unsafe { outgoing(send.0, send.1, "sendbuf")? };
            c.inter_gather(r, &data, &mut [])
        }
    }
}

/// `MPI_Scatter(v)` on an intercommunicator: at the root, the blocks
/// (`send`) are significant; in the other group, the receive span.
///
/// # Safety
/// The significant buffer holds its elements for the call.
pub unsafe fn scatter(
    c: &SimpleCommunicator,
    root: InterRoot,
    send: Option<Blocks>,
    recv: (*mut u8, &Span),
) -> Result<()> {
    match (root, send) {
        (InterRoot::Idle, _) => Ok(()),
        (InterRoot::Here, Some(b)) => {
            // SAFETY: this function's contract.
            let (bytes, parts) = unsafe { sent_blocks(b)? };
            let blocks: Vec<&[u8]> = parts.iter().map(|&(d, l)| &bytes[d..d + l]).collect();
            c.inter_scatter(InterRoot::Here, &blocks, &mut [])
        }
        (InterRoot::Here, None) => Err(MpiError::Invalid("the root of a scatter needs its send blocks".into())),
        // SAFETY: this function's contract.
        (r, _) => unsafe { into_one(recv.0, recv.1, |b| c.inter_scatter(r, &[], b)) },
    }
}

/// `MPI_Allgather(v)` on an intercommunicator: a block from each remote
/// process.
///
/// # Safety
/// The buffers hold their elements for the call.
pub unsafe fn allgather(c: &SimpleCommunicator, send: *const u8, span: &Span, recv: Blocks) -> Result<()> {
    // SAFETY: this function's contract.
    let data = unsafe { outgoing(send, span, "sendbuf")? };
    // SAFETY: this function's contract.
    unsafe { into_blocks(recv, |b| c.inter_all_gather(&data, b)) }
}

/// `MPI_Alltoall(v)` on an intercommunicator: a block to and from each
/// remote process.
///
/// # Safety
/// The buffers hold their blocks for the call.
pub unsafe fn alltoall(c: &SimpleCommunicator, send: Blocks, recv: Blocks) -> Result<()> {
    // SAFETY: this function's contract.
    let (bytes, parts) = unsafe { sent_blocks(send)? };
    let blocks: Vec<&[u8]> = parts.iter().map(|&(d, l)| &bytes[d..d + l]).collect();
    // SAFETY: this function's contract.
    unsafe { into_blocks(recv, |b| c.inter_all_to_all(&blocks, b)) }
}
