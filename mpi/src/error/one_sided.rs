//! The errors of one-sided communication (MPI 4.1 §12): windows, their
//! synchronisation, ranges, attached memory and shared memory.

/// Why a shared-memory window could not be made (`MpiError::RmaShared`,
/// `MPI_ERR_RMA_SHARED`, MPI 4.1 §12.2.3).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RmaSharedError {
    /// A process of the communicator runs on another node.
    #[error(
        "rank {other} of the communicator runs on another node than rank {me}: only processes that share memory \
         can share a window (make the communicator with MPI_Comm_split_type(MPI_COMM_TYPE_SHARED))"
    )]
    OtherNode {
        /// The rank elsewhere.
        other: usize,
        /// This process's rank.
        me: crate::Rank,
    },
    /// `/dev/shm` has no room for the segment.
    #[error(
        "MPI_Win_allocate_shared: no room for {bytes} bytes of shared memory in /dev/shm ({why}): \
         look with `df -h /dev/shm` and remove stale entries, or ask for less"
    )]
    NoRoom {
        /// The segment's bytes.
        bytes: usize,
        /// What the system said.
        why: String,
    },
    /// A system call failed.
    #[error("MPI_Win_allocate_shared: {call}: {why}")]
    System {
        /// The call (`shm_open`, `mmap`, ...).
        call: &'static str,
        /// What the system said.
        why: String,
    },
    /// Every random segment name tried was taken.
    #[error("MPI_Win_allocate_shared: 16 random segment names were all taken")]
    NamesTaken,
    /// The segment's name, as rank 0 sent it, holds a NUL.
    #[error("a shared segment name with a NUL")]
    BadName,
    /// Rank 0 could not make the segment.
    #[error("rank 0 could not create the shared segment")]
    NotCreated,
    /// A process could not map the segment.
    #[error("rank {rank} could not map the shared segment")]
    NotMapped {
        /// Its rank.
        rank: usize,
    },
}

/// A one-sided call out of its synchronisation order (`MpiError::RmaSync`,
/// `MPI_ERR_RMA_SYNC`, MPI 4.1 §12.5). `open` names the epoch that is
/// open (`MPI_Win_lock on ranks [1, 2]`, ...).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RmaSyncError {
    /// `MPI_Win_fence` where no fence may be (`why`: inside which epoch).
    #[error("MPI_Win_fence {why}")]
    Fence {
        /// Where it was called.
        why: &'static str,
    },
    /// An access epoch opened inside another one.
    #[error("{call} inside another access epoch ({open})")]
    InsideAccess {
        /// The call that would open it.
        call: &'static str,
        /// The epoch open already.
        open: String,
    },
    /// `MPI_Win_post` inside an exposure epoch of `MPI_Win_post`.
    #[error("MPI_Win_post inside another exposure epoch begun by MPI_Win_post")]
    PostInsidePost,
    /// `MPI_Win_complete` with no `MPI_Win_start`.
    #[error("MPI_Win_complete without MPI_Win_start ({open})")]
    CompleteWithoutStart {
        /// The access epoch open instead.
        open: String,
    },
    /// A call that ends an epoch that was not opened.
    #[error("{call} without {opener}")]
    Without {
        /// The call.
        call: &'static str,
        /// The call that opens the epoch it ends.
        opener: &'static str,
    },
    /// `MPI_Win_lock` on a rank this process has locked.
    #[error("MPI_Win_lock on rank {rank}, which this process has locked already")]
    LockedAlready {
        /// The target.
        rank: crate::Rank,
    },
    /// `MPI_Win_unlock` or `MPI_Win_flush` on a rank not locked.
    #[error("{call} on rank {rank}, which this process has not locked")]
    NotLocked {
        /// The call.
        call: &'static str,
        /// The target.
        rank: crate::Rank,
    },
    /// An operation with no access epoch open.
    #[error("an RMA operation outside any access epoch (call MPI_Win_fence, MPI_Win_start or MPI_Win_lock first)")]
    NoEpoch,
    /// An operation to a rank the access epoch does not include.
    #[error("an RMA operation to rank {rank}, which the access epoch ({open}) does not include")]
    NotInEpoch {
        /// The target.
        rank: crate::Rank,
        /// The access epoch open.
        open: String,
    },
    /// `MPI_Win_flush_all` with no passive-target epoch.
    #[error("MPI_Win_flush_all outside a passive-target epoch (MPI_Win_lock or MPI_Win_lock_all)")]
    FlushAllOutside,
    /// `MPI_Win_free` with an epoch open.
    #[error("MPI_Win_free while an epoch is open ({open}); end it first")]
    FreeInEpoch {
        /// The epoch open.
        open: String,
    },
}

/// A window size no memory holds (`MpiError::WinSize`, `MPI_ERR_SIZE`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WinSizeError {
    /// A typed window of `len` elements, whose bytes overflow.
    #[error("a window of {len} elements is larger than an address space")]
    Elements {
        /// The elements asked for.
        len: usize,
    },
    /// A window of `bytes` bytes, more than this process can address.
    #[error("a window of {bytes} bytes is larger than memory")]
    Bytes {
        /// The bytes asked for.
        bytes: u64,
    },
    /// A process's part of a shared window, as another process announced
    /// it, that this one cannot address.
    #[error("a shared window part of {bytes} bytes is too large")]
    SharedPart {
        /// The part's bytes.
        bytes: u64,
    },
    /// The parts of a shared window add up past an address space.
    #[error("the shared window is too large")]
    SharedTotal,
}

/// An access outside the target's window (`MpiError::RmaRange`, MPI 4.1
/// §12.3): nothing was written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RmaRangeError {
    /// Bytes past the target's window, seen at the origin.
    #[error(
        "bytes {lo}..{hi} of rank {rank}'s window of {size} bytes: outside it (MPI_ERR_RMA_RANGE; nothing was written)"
    )]
    Outside {
        /// The target.
        rank: i32,
        /// The first byte asked for.
        lo: i64,
        /// One past the last.
        hi: i64,
        /// The window's size.
        size: u64,
    },
    /// Bytes past the target's window, seen at the target.
    #[error("bytes {lo}..{hi} lie outside the target's window of {size} bytes (MPI_ERR_RMA_RANGE)")]
    TargetWindow {
        /// The first byte asked for.
        lo: u64,
        /// One past the last.
        hi: u64,
        /// The window's size.
        size: u64,
    },
    /// Addresses in no region attached to the target's dynamic window
    /// (which only the target knows).
    #[error(
        "bytes {lo:#x}..{hi:#x} are not inside a region attached to the target's dynamic window (MPI_ERR_RMA_RANGE)"
    )]
    NotAttached {
        /// The first address asked for.
        lo: u64,
        /// One past the last.
        hi: u64,
    },
}

/// A window that cannot serve the call (`MpiError::Win`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WinError {
    /// The window was freed.
    #[error("the window has been freed")]
    Freed,
    /// The transport cannot do one-sided operations any more.
    #[error("the transport lost its one-sided access")]
    LostOneSided,
    /// A peer sent something malformed for this window: it is not usable
    /// after it.
    #[error("{why}")]
    Fault {
        /// What was wrong.
        why: String,
    },
    /// The target refused the operation: its reason.
    #[error("{why}")]
    AtTarget {
        /// The target's reason.
        why: String,
    },
}

/// Memory a dynamic window cannot attach or detach (`MpiError::RmaAttach`,
/// MPI 4.1 §12.2.4).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AttachError {
    /// A null address with a size.
    #[error("MPI_Win_attach of a null address")]
    Null,
    /// A region past the end of the address space.
    #[error("MPI_Win_attach: the region at {base:#x} of {size} bytes wraps around")]
    Wraps {
        /// Its address.
        base: u64,
        /// Its size.
        size: u64,
    },
    /// A region that overlaps one attached already.
    #[error("MPI_Win_attach: bytes {base:#x}..{end:#x} overlap a region already attached")]
    Overlap {
        /// Its address.
        base: u64,
        /// Its end.
        end: u64,
    },
    /// No region attached at the address.
    #[error("MPI_Win_detach: no region is attached at {base:#x}")]
    NotAttached {
        /// The address.
        base: u64,
    },
}
