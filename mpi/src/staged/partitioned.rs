//! The channel of partitioned communication (MPI 4.1 chapter 4).
//!
//! - **Apart from the other messages.** The messages of
//!   `MPI_Psend_init`/`MPI_Precv_init` requests match only each other,
//!   never an ordinary send or receive with the same tag (§4.2.2). So they
//!   travel on the communicator's collective context with bit 29 of the
//!   tag set: collective messages have bit 30, the library's own small
//!   tags neither.
//! - **Matched in the order of the initializations.** Partitioned
//!   operations match in the order of their initializations per peer and
//!   tag, whatever the order of their starts (§4.2.2). So each takes, at
//!   its initialization, its number among those to (or from) the same
//!   peer with the same tag, and the wire tag carries it: 9 bits of that
//!   number (512 such requests alive at once are told apart) and 20 of
//!   the program's tag, which must be below 2^20 here.
//! - **One message.** A partitioned send goes as one message once every
//!   partition is ready; a partitioned receive is one receive of the
//!   whole, and a partition has arrived when it has (§4.2.1 lets
//!   partitions move in any grouping).

use super::{Span, Staged};
use crate::comm::{Communicator, SimpleCommunicator};
use crate::error::{MpiError, Result};
use crate::{Rank, Tag};

/// The largest tag a partitioned operation takes here.
pub const PARTITIONED_TAG_UB: Tag = (1 << 20) - 1;

/// A partitioned request's place on the channel: its peer, its tag, and
/// the wire tag that pairs it with its counterpart.
#[derive(Clone, Copy, Debug)]
pub struct Channel {
    peer: Rank,
    tag: Tag,
    wire: Tag,
}

impl Channel {
    /// The place of a partitioned send to `peer` (`send`) or receive from
    /// it, with `tag`, on `comm`: taken at its initialization.
    pub fn new(comm: &SimpleCommunicator, peer: Rank, tag: Tag, send: bool) -> Result<Channel> {
        comm.intra_only("partitioned communication")?;
        if !(0..=PARTITIONED_TAG_UB).contains(&tag) {
            return Err(MpiError::InvalidTag(tag));
        }
        let mut seqs = comm.group.partitioned_seq.borrow_mut();
        let k = seqs.entry((peer, tag, send)).or_insert(0);
        let wire = (1 << 29) | (tag << 9) | (*k & 511) as Tag;
        *k = k.wrapping_add(1);
        Ok(Channel { peer, tag, wire })
    }
}

/// `comm` with its collective context as the point-to-point one: the
/// channel's sends and receives.
fn channel(comm: &SimpleCommunicator) -> SimpleCommunicator {
    let mut c = comm.clone();
    c.ctx = comm.coll_ctx();
    c
}

/// Start sending the whole of a partitioned send, all of its partitions
/// being ready.
///
/// # Safety
/// Every block of the span's elements at `buf` stays readable and unmodified until the
/// returned operation completes or is dropped.
pub unsafe fn isend(comm: &SimpleCommunicator, ch: &Channel, buf: *const u8, span: &Span) -> Result<Staged> {
    let c = channel(comm);
    // SAFETY: the span's elements at `buf` stay readable and unmodified until the returned operation
    // completes or is dropped (`# Safety`): exactly what `super::isend` asks.
    unsafe { super::isend(&c.process_at_rank(ch.peer), buf, span, ch.wire, false) }
}

/// Start receiving the whole of a partitioned receive.
///
/// # Safety
/// Every block of the span's elements at `buf` stays writable and is not otherwise accessed
/// until the returned operation completes or is dropped.
pub unsafe fn irecv(comm: &SimpleCommunicator, ch: &Channel, buf: *mut u8, span: &Span) -> Result<Staged> {
    let c = channel(comm);
    // SAFETY: the span's elements at `buf` stay writable and untouched until the returned operation
    // completes or is dropped (`# Safety`): exactly what `super::irecv` asks.
    let mut op = unsafe { super::irecv(&c.process_at_rank(ch.peer), buf, span, Some(ch.wire)) }?;
    // The status names the program's tag, not the channel's.
    op.stage.status = Some(crate::comm::Status::new(ch.peer, ch.tag, span.len() as u64));
    Ok(op)
}
