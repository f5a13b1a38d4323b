//! Persistent point-to-point operations over a caller's buffer (MPI 4.1
//! §3.9, and the partitioned ones of §4.2): what an `MPI_*_init` call
//! records, and what each `MPI_Start` of it begins. The handles, and the
//! persistent collectives (§6.13), are the C library's.

use crate::bsend::{Buffered, Sent};
use crate::comm::{Communicator, SimpleCommunicator, Status};
use crate::error::{MpiError, RequestMisuse, Result};
use crate::slot::Started;
use crate::staged::partitioned::Channel;
use crate::staged::Span;
use crate::{Rank, Tag, ANY_SOURCE, PROC_NULL};

/// The mode of a persistent send (§3.4; a ready send is a standard one
/// whose receive is known to be posted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendMode {
    /// `MPI_Send_init`, `MPI_Rsend_init`.
    Standard,
    /// `MPI_Ssend_init`: completes once the receive has started.
    Synchronous,
    /// `MPI_Bsend_init`: each start copies the message into the attached
    /// buffer, and is complete at once.
    Buffered,
}

/// A persistent point-to-point operation, inactive until started.
/// `dest` and `source` may be [`PROC_NULL`] (a start then completes at
/// once), `source` [`ANY_SOURCE`].
#[derive(Debug)]
pub enum P2p {
    /// `MPI_Send_init` and its modes.
    Send {
        /// The caller's buffer.
        buf: *const u8,
        /// What of it is sent.
        span: Span,
        /// The destination rank.
        dest: Rank,
        /// The tag.
        tag: Tag,
        /// The mode.
        mode: SendMode,
    },
    /// `MPI_Recv_init`.
    Recv {
        /// The caller's buffer.
        buf: *mut u8,
        /// What it has room for.
        span: Span,
        /// The source rank.
        source: Rank,
        /// The tag; `None` is any tag.
        tag: Option<Tag>,
    },
    /// A partitioned send (§4.2): the whole buffer, sent when every
    /// partition is ready ([`P2p::launch`]), never by a plain start.
    Psend {
        /// The caller's buffer.
        buf: *const u8,
        /// What of it is sent.
        span: Span,
        /// Its channel, which names the destination.
        channel: Channel,
    },
    /// A partitioned receive (§4.2) of the whole buffer.
    Precv {
        /// The caller's buffer.
        buf: *mut u8,
        /// What it has room for.
        span: Span,
        /// Its channel, which names the source.
        channel: Channel,
    },
}

impl P2p {
    /// Start it once on `comm` (§3.9.2). A buffered send copies its
    /// message into the buffer `bsend` gives and is then complete; what it
    /// returns lets that buffer cancel the message.
    ///
    /// # Safety
    /// The buffer recorded is valid as the `*_init` call's contract says
    /// for every start: holding the span's elements, unmodified, for a send,
    /// until the started operation completes (for a buffered send, during
    /// this call); for a receive, room for them, not otherwise accessed
    /// until it completes or is dropped.
    pub unsafe fn start<'b>(
        &self,
        comm: &SimpleCommunicator,
        bsend: impl FnOnce() -> &'b mut Buffered,
    ) -> Result<(Started, Option<Sent>)> {
        let started = match self {
            P2p::Send { dest: PROC_NULL, .. } | P2p::Recv { source: PROC_NULL, .. } => {
                Started::Done(Status::proc_null())
            }
            P2p::Precv { channel, .. } if channel.peer() == PROC_NULL => Started::Done(Status::proc_null()),
            P2p::Send { buf, span, dest, tag, mode: SendMode::Buffered } => {
                // SAFETY: the span's elements at `buf` are readable and unmodified for this call (`# Safety`); the
                // buffered send copies them before it returns.
                let sent = unsafe { bsend().send(&comm.process_at_rank(*dest), *buf, span, *tag) }?;
                return Ok((Started::Done(Status::empty()), Some(sent)));
            }
            P2p::Send { buf, span, dest, tag, mode } => {
                let sync = *mode == SendMode::Synchronous;
                // SAFETY: the span's elements at `buf` stay readable and unmodified until the started operation
                // completes (`# Safety`): what `isend` asks.
                Started::Op(unsafe { crate::staged::isend(&comm.process_at_rank(*dest), *buf, span, *tag, sync) }?)
            }
            P2p::Recv { buf, span, source, tag } => {
                // SAFETY: `buf` has room for the span's elements, untouched until the started operation completes or
                // is dropped (`# Safety`): what `irecv` asks.
                Started::Op(unsafe {
                    match *source {
                        ANY_SOURCE => crate::staged::irecv(&comm.any_process(), *buf, span, *tag),
                        s => crate::staged::irecv(&comm.process_at_rank(s), *buf, span, *tag),
                    }
                }?)
            }
            P2p::Precv { buf, span, channel } => {
                // SAFETY: as for a receive (`# Safety`): what `partitioned::irecv` asks.
                Started::Op(unsafe { crate::staged::partitioned::irecv(comm, channel, *buf, span) }?)
            }
            P2p::Psend { .. } => return Err(MpiError::Request(RequestMisuse::PartitionedStart)),
        };
        Ok((started, None))
    }

    /// Send a partitioned send's whole buffer, every partition being ready
    /// (§4.2).
    ///
    /// # Safety
    /// As [`P2p::start`]'s for a send.
    pub unsafe fn launch(&self, comm: &SimpleCommunicator) -> Result<Started> {
        let P2p::Psend { buf, span, channel } = self else {
            return Err(MpiError::Request(RequestMisuse::NotPartitionedSend));
        };
        if channel.peer() == PROC_NULL {
            return Ok(Started::Done(Status::proc_null()));
        }
        // SAFETY: the span's elements at `buf` stay readable and unmodified until the started operation completes
        // (`# Safety`): what `partitioned::isend` asks.
        Ok(Started::Op(unsafe { crate::staged::partitioned::isend(comm, channel, *buf, span) }?))
    }
}
