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
    /// The device refused a command: what kind of fault, for the MPI
    /// error class, and the device's own words (its error code, what it
    /// means and what to do).
    #[error("{backend} backend: {message}")]
    Device {
        /// Backend name.
        backend: &'static str,
        /// The kind of fault.
        fault: DeviceFault,
        /// The device's report.
        message: String,
    },
}

/// What kind of fault a device reported, as MPI sorts errors (its classes,
/// MPI 4.1 §9.4): the backend maps each of its device's codes to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceFault {
    /// An access outside the memory the target exposed for it (a
    /// protection fault): `MPI_ERR_RMA_RANGE`.
    Range,
    /// A destination the device does not have: `MPI_ERR_RANK`.
    NoSuchPeer,
    /// The destination is not ready to take the data (its receive ring is
    /// off or misconfigured, or too small for the message): `MPI_ERR_OTHER`.
    PeerNotReady,
    /// A command the library built wrong, which the device refused before
    /// doing anything: a bug of this library, `MPI_ERR_INTERN`.
    Malformed,
    /// An atomic the device's unit cannot do (operation, type or
    /// alignment): `MPI_ERR_OP`.
    Atomic,
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
    /// A call for one kind of request on another: a cancel of a receive
    /// given a send, or the reverse.
    #[error("request {id:#x} is not a {wants}")]
    WrongKind {
        /// The request.
        id: u32,
        /// The kind the call is for: "receive", "send".
        wants: &'static str,
    },
    /// Every request number is in use.
    #[error("more than {most} requests are outstanding: complete some first")]
    TooManyRequests {
        /// The most that can be outstanding.
        most: u32,
    },
    /// A context given a second progress hook ([`crate::Engine::serve_context`]).
    #[error("context {ctx} is served by a progress hook already: stop serving it first")]
    ServedTwice {
        /// The context.
        ctx: u32,
    },
    /// A message longer than this host's address space.
    #[error("a message of {bytes} bytes is more than this host can address")]
    TooLarge {
        /// Its length.
        bytes: u64,
    },
}
