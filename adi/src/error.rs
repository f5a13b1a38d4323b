//! Errors of the protocol engine and its transports.

/// A transport failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// The peer is unreachable or gone.
    #[error("rank {rank} is unreachable: {reason}")]
    PeerLost {
        /// The peer.
        rank: u32,
        /// Why.
        reason: String,
    },
    /// Nothing can ever arrive (the simulator found every process waiting).
    #[error("no progress is possible: {0}")]
    Deadlock(String),
    /// The job is shutting down.
    #[error("the job is shutting down")]
    Shutdown,
    /// Anything else the backend reports.
    #[error("{backend} backend: {msg}")]
    Backend {
        /// Backend name.
        backend: &'static str,
        /// Description.
        msg: String,
    },
    /// The job's configuration is unusable.
    #[error("configuration: {0}")]
    Config(String),
    /// A `DN_*` variable is set to what it does not take.
    #[error("configuration: {0}")]
    Knob(#[from] dn_knobs::KnobError),
}

/// A protocol-engine error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdiError {
    /// The transport failed.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// A rank number outside the job.
    #[error("rank {rank} does not exist (the job has {size} ranks)")]
    BadRank {
        /// Requested rank.
        rank: u32,
        /// Job size.
        size: u32,
    },
    /// A message was longer than the receive buffer (MPI_ERR_TRUNCATE).
    #[error("message of {len} bytes from rank {sender} (tag {tag}) does not fit the {capacity}-byte receive buffer")]
    Truncated {
        /// Sender.
        sender: u32,
        /// Tag.
        tag: i32,
        /// Message length.
        len: u64,
        /// Buffer capacity.
        capacity: u64,
    },
    /// A request id that is not (or no longer) valid.
    #[error("request {0:#x} is not active (already completed and freed, or never created)")]
    BadRequest(u32),
    /// A malformed control packet arrived.
    #[error("malformed packet from rank {sender}: {what}")]
    Protocol {
        /// Sender.
        sender: u32,
        /// What was wrong.
        what: String,
    },
    /// Invalid argument.
    #[error("invalid argument: {0}")]
    Invalid(String),
}
