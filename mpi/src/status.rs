//! The envelope of a received or probed message (`MPI_Status`, MPI 4.1
//! §3.2.5): part of the core every other module of the crate builds on,
//! which imports none of them (issue 49, item 2).

use crate::{Rank, Tag};

/// The envelope of a received or probed message (`MPI_Status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    source: Rank,
    tag: Tag,
    bytes: u64,
    cancelled: bool,
}

impl Status {
    pub(crate) fn new(source: Rank, tag: Tag, bytes: u64) -> Status {
        Status { source, tag, bytes, cancelled: false }
    }

    /// The status of a receive whose cancellation succeeded (MPI 4.1 §3.8.4:
    /// source and tag are undefined; here `-1` and 0, and no bytes).
    pub(crate) fn cancelled() -> Status {
        Status { source: -1, tag: 0, bytes: 0, cancelled: true }
    }

    /// The status of a receive from `MPI_PROC_NULL` (MPI 4.1 §3.10):
    /// source [`crate::PROC_NULL`], tag [`crate::ANY_TAG`], no bytes.
    pub fn proc_null() -> Status {
        Status::new(crate::PROC_NULL, crate::ANY_TAG, 0)
    }

    /// The status of a completion that concerns no message (an inactive
    /// request, MPI 4.1 §3.7.3): any source, any tag, no bytes.
    pub fn empty() -> Status {
        Status::new(crate::ANY_SOURCE, crate::ANY_TAG, 0)
    }

    /// The status a generalized request reports (MPI 4.1 §13.2: its
    /// `query_fn` sets the fields, as `MPI_Status_set_elements` and
    /// `MPI_Status_set_cancelled` do): `bytes` from `source` with `tag`,
    /// cancelled or not.
    pub fn reported(source: Rank, tag: Tag, bytes: u64, cancelled: bool) -> Status {
        Status { source, tag, bytes, cancelled }
    }

    /// Whether the request was cancelled (`MPI_Test_cancelled`).
    pub fn is_cancelled(&self) -> bool {
        self.cancelled
    }

    /// Rank of the sender in the communicator.
    pub fn source_rank(&self) -> Rank {
        self.source
    }

    /// Tag of the message.
    pub fn tag(&self) -> Tag {
        self.tag
    }

    /// Length in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}
