//! The errors of requests (§3.7, §3.9), partitioned requests (§4) and
//! keyvals (§7.7).

/// What keeps an active request from ending while its process waits:
/// only the program can end it ([`crate::request::Part::Held`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeldBy {
    /// A generalized request the program has not completed (§13.2).
    #[error("a generalized request is not complete")]
    Generalized,
    /// A started partitioned send with partitions not marked ready (§4.2).
    #[error("a partitioned send has partitions not marked ready")]
    Partitions,
}

impl HeldBy {
    /// What the program must do first.
    pub fn remedy(self) -> &'static str {
        match self {
            HeldBy::Generalized => "complete it first (MPI_Grequest_complete, or the Completer)",
            HeldBy::Partitions => "mark every partition ready first (MPI_Pready)",
        }
    }
}

/// A request used against its rules (`MpiError::Request`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RequestMisuse {
    /// `MPI_Start` of a persistent request still active.
    #[error("MPI_Start of a persistent request that is still active (complete it first, §3.9.2)")]
    StillActive,
    /// A split collective file access begun and not ended.
    #[error("a split collective access on this file has begun and not ended: call its _end first (MPI 4.1 §14.4.5)")]
    SplitBegun,
    /// The end of a split collective file access not begun.
    #[error("no split collective access of this kind has begun on this file: call its _begin first (MPI 4.1 §14.4.5)")]
    SplitNotBegun,
    /// A partitioned call on a request of another kind.
    #[error("not a partitioned send")]
    NotPartitionedSend,
    /// A partitioned send started as a plain persistent one.
    #[error("a partitioned send starts when its partitions are ready")]
    PartitionedStart,
    /// A wait that only a request the program ends could end (MPI 4.1
    /// §13.2, §4.2), and nothing can end it while this thread waits: the
    /// thread level is below `MPI_THREAD_MULTIPLE`, or the process has no
    /// other thread.
    #[error("{call} would wait for ever: {by} (request {index} of the call), and no other thread can do it while this one waits (the thread level is below MPI_THREAD_MULTIPLE, or the process has no other thread); {}, or test instead of waiting", by.remedy())]
    NeverCompleted {
        /// The completion call.
        call: String,
        /// What holds the request.
        by: HeldBy,
        /// The request's place among the call's (0 for a call on one).
        index: usize,
    },
    /// `MPI_Grequest_complete` of a handle that is no generalized request.
    #[error("{handle:#x} is not a generalized request (never started, or reported and freed)")]
    NotGeneralized {
        /// The handle.
        handle: usize,
    },
    /// `MPI_Grequest_complete` a second time (§13.2: once only).
    #[error("MPI_Grequest_complete of {handle:#x} a second time (MPI 4.1 §13.2: once only)")]
    CompletedTwice {
        /// The handle.
        handle: usize,
    },
    /// A persistent collective started as a point-to-point one.
    #[error("a persistent collective is started by its own path")]
    CollectiveStart,
    /// A call on a request that has completed already.
    #[error("{call} on a completed request")]
    Completed {
        /// The call.
        call: String,
    },
    /// A cancel of a request that cannot be cancelled (MPI 4.1 §3.8.4).
    #[error("cancel of {what} is not allowed")]
    NotCancellable {
        /// What the request is.
        what: &'static str,
    },
    /// A wait for any of no requests.
    #[error("{call} on an empty list of requests")]
    Empty {
        /// The call.
        call: &'static str,
    },
}

/// What is wrong with a keyval (MPI 4.1 §7.7.2, `MpiError::Keyval`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyvalError {
    /// Never made, or freed with no value left under it.
    #[error("{keyval} is not a keyval (never created, or freed)")]
    Unknown {
        /// The keyval given.
        keyval: i32,
    },
    /// A predefined keyval where only a program's may be used (freeing it).
    #[error("keyval {keyval} is predefined or invalid: it cannot be freed")]
    Predefined {
        /// The keyval given.
        keyval: i32,
    },
    /// A freed keyval takes no new value.
    #[error("keyval {keyval} was freed")]
    Freed {
        /// The keyval given.
        keyval: i32,
    },
    /// No value is set under the keyval on this object.
    #[error("no attribute of keyval {keyval} is set")]
    NotSet {
        /// The keyval given.
        keyval: i32,
    },
    /// Every keyval number is taken.
    #[error("no keyval is left to hand out")]
    Exhausted,
}

/// What a partitioned request refuses (MPI 4.1 chapter 4,
/// `MpiError::Partition`). [`PartitionError::is_argument`] tells the
/// partition arguments' errors (`MPI_ERR_ARG`) from the request's state
/// (`MPI_ERR_REQUEST`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PartitionError {
    /// A partition number outside the request's (§4.3). Nothing of the
    /// call was marked ready.
    #[error("partition {partition} does not exist: the request has {partitions} (0 to {}); no partition of this call was marked ready", *partitions as i64 - 1)]
    NoSuchPartition {
        /// The partition given.
        partition: i64,
        /// The request's partitions.
        partitions: usize,
    },
    /// A partition marked ready twice in one start (§4.3: erroneous).
    /// Nothing of the call was marked ready.
    #[error(
        "partition {partition} is marked ready a second time in this start; no partition of this call was marked ready"
    )]
    MarkedTwice {
        /// The partition.
        partition: i64,
    },
    /// `MPI_Pready_range` with its bounds the wrong way round.
    #[error("partition_low {low} > partition_high {high}")]
    Range {
        /// The low bound.
        low: i64,
        /// The high bound.
        high: i64,
    },
    /// A negative number of partitions.
    #[error("partitions {partitions} is negative")]
    Negative {
        /// The number given.
        partitions: i64,
    },
    /// A partition marked ready (or a message under way): its elements
    /// may be read by the send at any time, so they are not lent to write.
    #[error("partition {partition} is marked ready (or the message is under way): it can no longer be written in this start")]
    Ready {
        /// The partition.
        partition: usize,
    },
    /// Partitions marked ready on a send that is not started, or all of
    /// whose partitions are ready already.
    #[error("MPI_Pready on a partitioned send that is not started, or whose partitions are all ready")]
    NotStarted,
    /// A start of a partitioned request still active.
    #[error("MPI_Start of a partitioned request still active (complete it first)")]
    StillActive,
    /// A wait that only marking partitions ready could end, with nobody
    /// able to mark them while it waits (no other thread, or a Rust
    /// request borrowed by the wait).
    #[error("{call} would wait for ever: the partitioned send has partitions not marked ready, and nothing can mark them while this thread waits; mark every partition ready first")]
    NeverReady {
        /// The wait.
        call: &'static str,
    },
    /// A started send freed before its partitions are ready: its message
    /// would never go.
    #[error("a started partitioned send cannot be freed before its partitions are all ready: mark them ready first")]
    FreeWhileWaiting,
    /// A buffer that does not cut into partitions of one size (§4.2).
    #[error("a buffer of {len} elements does not cut into {partitions} partitions of the same number of elements")]
    Uneven {
        /// Elements of the buffer.
        len: usize,
        /// Partitions asked for.
        partitions: usize,
    },
    /// The data of a partitioned receive asked for while it is under way.
    #[error("the partitioned receive is under way: wait for it first")]
    UnderWay,
    /// A partitioned call on a request of the other direction (or of
    /// another kind).
    #[error("not a partitioned {wants} ({init})")]
    Direction {
        /// The kind the call needs: `send` or `receive`.
        wants: &'static str,
        /// The call that makes one.
        init: &'static str,
    },
}

impl PartitionError {
    /// Whether an argument of the call is wrong (`MPI_ERR_ARG`), rather
    /// than the request's state (`MPI_ERR_REQUEST`).
    pub fn is_argument(&self) -> bool {
        matches!(
            self,
            PartitionError::NoSuchPartition { .. }
                | PartitionError::MarkedTwice { .. }
                | PartitionError::Range { .. }
                | PartitionError::Negative { .. }
                | PartitionError::Uneven { .. }
        )
    }
}
