//! The channel of partitioned communication (MPI 4.1 chapter 4) for
//! buffers described by a [`Span`] (the C calls): the send and receive of
//! the whole, on the [`Channel`] that [`crate::partitioned`] describes.

use super::{Span, Staged};
use crate::comm::{Communicator, SimpleCommunicator};
use crate::error::Result;
pub use crate::partitioned::{Channel, PARTITIONED_TAG_UB};

/// Start sending the whole of a partitioned send, all of its partitions
/// being ready.
///
/// # Safety
/// Every block of the span's elements at `buf` stays readable and unmodified until the
/// returned operation completes or is dropped.
pub unsafe fn isend(comm: &SimpleCommunicator, ch: &Channel, buf: *const u8, span: &Span) -> Result<Staged> {
    let c = Channel::comm(comm);
    // SAFETY: the span's elements at `buf` stay readable and unmodified until the returned operation
    // completes or is dropped (`# Safety`): exactly what `super::isend` asks.
    unsafe { super::isend(&c.process_at_rank(ch.peer()), buf, span, ch.wire(), false) }
}

/// Start receiving the whole of a partitioned receive.
///
/// # Safety
/// Every block of the span's elements at `buf` stays writable and is not otherwise accessed
/// until the returned operation completes or is dropped.
pub unsafe fn irecv(comm: &SimpleCommunicator, ch: &Channel, buf: *mut u8, span: &Span) -> Result<Staged> {
    let c = Channel::comm(comm);
    // SAFETY: the span's elements at `buf` stay writable and untouched until the returned operation
    // completes or is dropped (`# Safety`): exactly what `super::irecv` asks.
    let mut op = unsafe { super::irecv(&c.process_at_rank(ch.peer()), buf, span, Some(ch.wire())) }?;
    // The status names the program's tag, not the channel's.
    op.stage.status = Some(crate::comm::Status::new(ch.peer(), ch.tag(), span.len() as u64));
    Ok(op)
}
