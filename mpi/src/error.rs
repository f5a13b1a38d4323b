//! MPI errors: every call returns `Result`, and each error says what went wrong.

use adi::AdiError;

/// An MPI error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MpiError {
    /// The protocol engine or transport failed.
    #[error(transparent)]
    Engine(#[from] AdiError),
    /// The process could not join the job.
    #[error("MPI initialisation failed: {0}")]
    Init(#[from] InitError),
    /// A rank outside the communicator.
    #[error("rank {rank} is not in this communicator of {size} processes")]
    InvalidRank {
        /// Rank given.
        rank: i32,
        /// Communicator size.
        size: i32,
    },
    /// A negative tag (tags are 0..=TAG_UB; wildcards use `any_process`/`ANY_TAG` methods).
    #[error("tag {0} is invalid: tags must be between 0 and {max}", max = crate::TAG_UB)]
    InvalidTag(i32),
    /// The message length is not a whole number of elements.
    #[error("received {bytes} bytes, which is not a whole number of {elem}-byte elements")]
    Count {
        /// Bytes received.
        bytes: u64,
        /// Element size.
        elem: usize,
    },
    /// `receive` of a single value got a message of another size.
    #[error("expected a {want}-byte message, received {got} bytes")]
    Size {
        /// Expected size.
        want: usize,
        /// Received size.
        got: u64,
    },
    /// MPI was already finalised.
    #[error("MPI has been finalised")]
    Finalized,
    /// Invalid argument.
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// A call that needs a process topology on a communicator without one,
    /// or with another kind (MPI 4.1 §8: `MPI_ERR_TOPOLOGY`).
    #[error("{call} needs a communicator with {wants}")]
    Topology {
        /// The call.
        call: String,
        /// What it needs: "a process topology", "a Cartesian topology".
        wants: &'static str,
    },
    /// Invalid grid dimensions (§8.5: `MPI_ERR_DIMS`).
    #[error("invalid dimensions: {0}")]
    Dims(DimsError),
    /// A message longer than its receive buffer (`MPI_ERR_TRUNCATE`, MPI
    /// 4.1 §3.2.5): the buffer holds its first bytes, and `status` says
    /// whose message it was (the sender's rank in the receive's
    /// communicator) and how many bytes were received.
    #[error(
        "message of {len} bytes from rank {} (tag {}) does not fit the {}-byte receive buffer",
        status.source_rank(), status.tag(), status.bytes()
    )]
    Truncated {
        /// The receive's status: source, tag, bytes received.
        status: crate::status::Status,
        /// The message's length.
        len: u64,
    },
    /// A size, extent or displacement no address or count can hold (a
    /// datatype whose bounds overflow; `MPI_ERR_COUNT`).
    #[error(transparent)]
    TooLarge(#[from] Overflow),
    /// An info key that is empty or too long (`MPI_ERR_INFO_KEY`, MPI 4.1
    /// §10).
    #[error("the info key {key:?} is empty or longer than {max} characters")]
    InfoKey {
        /// The key given (spaces at its ends removed).
        key: String,
        /// `MPI_MAX_INFO_KEY`.
        max: usize,
    },
    /// An info value the key does not take: empty, too long, or not one
    /// of the key's words (`MPI_ERR_INFO_VALUE`).
    #[error("info {key}={value:?}: give {takes}")]
    InfoValue {
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// What the key takes.
        takes: String,
    },
    /// An info key that is not there (`MPI_ERR_INFO_NOKEY`).
    #[error("the info has no key {key:?}")]
    InfoNoKey {
        /// The key.
        key: String,
    },
    /// A root that is no rank of the communicator (`MPI_ERR_ROOT`).
    #[error("root {root} is not a rank of this communicator of {size} processes")]
    Root {
        /// The root given.
        root: i32,
        /// The communicator's size.
        size: i32,
    },
    /// The two sides of a collective disagree on the amount of data a
    /// process moves (`MPI_ERR_TRUNCATE`, §6.5).
    #[error("{call}: {sent} bytes sent per process, but {received} received")]
    Mismatch {
        /// The collective.
        call: String,
        /// Bytes the sender's block holds.
        sent: u64,
        /// Bytes the receiver's block holds.
        received: u64,
    },
    /// A request that cannot do what was asked (`MPI_ERR_REQUEST`): a
    /// persistent request started while active.
    #[error("{0}")]
    Request(RequestMisuse),
    /// A partition that does not exist or is marked twice
    /// (`MPI_ERR_ARG`), or a partitioned request in the wrong state for
    /// the call (`MPI_ERR_REQUEST`; MPI 4.1 §4.2, §4.3).
    #[error(transparent)]
    Partition(#[from] PartitionError),
    /// A keyval that does not exist, is predefined where a user's is
    /// needed, or is freed (`MPI_ERR_KEYVAL`, §7.7.2).
    #[error(transparent)]
    Keyval(#[from] KeyvalError),
    /// Ranks of a group that are out of range or listed twice
    /// (`MPI_ERR_RANK`, §7.3.2).
    #[error("{0}")]
    Ranks(RankError),
    /// A group that does not fit the call (`MPI_ERR_GROUP`): members not
    /// in the communicator.
    #[error("job rank {job_rank} of the group is not in the communicator")]
    Group {
        /// The member's rank in the job (`MPI_COMM_WORLD`).
        job_rank: u32,
    },
    /// A buffer argument that cannot hold the data (a null pointer where
    /// elements must be; `MPI_ERR_BUFFER`).
    #[error(transparent)]
    Buffer(#[from] BufferError),
    /// A one-sided call out of its synchronisation order: an operation
    /// outside an access epoch that includes its target, an epoch opened
    /// inside a conflicting one (`MPI_ERR_RMA_SYNC`, MPI 4.1 §12.5).
    #[error(transparent)]
    RmaSync(#[from] RmaSyncError),
    /// An access outside the target's window (`MPI_ERR_RMA_RANGE`): nothing
    /// was written.
    #[error(transparent)]
    RmaRange(#[from] RmaRangeError),
    /// A window that is freed, or a call the window cannot serve
    /// (`MPI_ERR_WIN`).
    #[error(transparent)]
    Win(#[from] WinError),
    /// A call that needs another kind of window (`MPI_ERR_RMA_FLAVOR`):
    /// attaching memory to a window not made by `MPI_Win_create_dynamic`.
    #[error("{call} needs {wants}")]
    RmaFlavor {
        /// The call.
        call: &'static str,
        /// The kind of window it needs.
        wants: &'static str,
    },
    /// Memory that cannot be attached or detached (`MPI_ERR_RMA_ATTACH`).
    #[error("{0}")]
    RmaAttach(AttachError),
    /// Conflicting accesses to one window location that the library saw
    /// (`MPI_ERR_RMA_CONFLICT`, MPI 4.1 §12.7): in the separate model, a
    /// local store and a remote update of the same bytes with no
    /// synchronisation between them. The call that reports it did its
    /// work (the local store won); the program is erroneous.
    #[error(
        "window byte {byte} of rank {rank}: a local store and another process's put or accumulate changed it \
         with no synchronisation between them (separate memory model, MPI 4.1 §12.7); the local store was kept"
    )]
    RmaConflict {
        /// The window's owner.
        rank: i32,
        /// The byte's displacement in the window.
        byte: usize,
    },
    /// A shared-memory window over processes that share no memory, or
    /// whose memory could not be made (`MPI_ERR_RMA_SHARED`).
    #[error(transparent)]
    RmaShared(#[from] RmaSharedError),
    /// A displacement unit that is not valid (`MPI_ERR_DISP`, §12.2.1:
    /// it must be positive).
    #[error("a displacement unit of {unit} bytes: give a positive one (1, or the size of the window's elements)")]
    Disp {
        /// The unit given.
        unit: i64,
    },
    /// A window size that is not valid (`MPI_ERR_SIZE`).
    #[error(transparent)]
    WinSize(#[from] WinSizeError),
    /// Operations and datatypes an accumulate cannot combine (`MPI_ERR_OP`).
    #[error(transparent)]
    Op(#[from] OpError),
    /// Memory the call needs could not be had (`MPI_ERR_NO_MEM`): the
    /// call fails, the process goes on.
    #[error("out of memory: {what} of {bytes} bytes cannot be allocated")]
    NoMemory {
        /// What was to be allocated.
        what: String,
        /// Its size.
        bytes: u64,
    },
    /// A value that the data representation cannot hold
    /// (`MPI_ERR_CONVERSION`, MPI 4.1 §13.5.2).
    #[error(transparent)]
    Conversion(#[from] ConversionError),
    /// A port name that is not one, or not open (`MPI_ERR_PORT`, §11.10).
    #[error(transparent)]
    Port(#[from] PortError),
    /// A service name that is not published (`MPI_ERR_NAME`, §11.10.5).
    #[error("MPI_Lookup_name: no service {service:?} is published")]
    Name {
        /// The service name.
        service: String,
    },
    /// A service that cannot be published or unpublished
    /// (`MPI_ERR_SERVICE`, §11.10.5).
    #[error("{0}")]
    Service(ServiceError),
    /// Processes that could not be spawned (`MPI_ERR_SPAWN`, §11.8.2):
    /// none was started, and the job goes on.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// A file operation that failed (MPI 4.1 §14.7): which of the
    /// standard's I/O error classes, and what went wrong.
    #[error("{msg}")]
    File {
        /// The error class (§14.7, Table 14.5).
        class: FileErrorClass,
        /// What went wrong and what to do.
        msg: String,
    },
}

impl From<adi::TransportError> for MpiError {
    fn from(e: adi::TransportError) -> MpiError {
        MpiError::Engine(e.into())
    }
}

impl From<adi::knobs::KnobError> for MpiError {
    fn from(e: adi::knobs::KnobError) -> MpiError {
        adi::TransportError::from(e).into()
    }
}

/// Ranks that do not fit a group or grid (`MpiError::Ranks`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RankError {
    /// A rank outside `0..size`.
    #[error("rank {rank} is not in {what} of {size} processes")]
    NotIn {
        /// The rank.
        rank: i32,
        /// What it should be a rank of ("a group", "group1", "the process grid").
        what: &'static str,
        /// Its size.
        size: i32,
    },
    /// A rank listed twice.
    #[error("rank {rank} is listed twice")]
    Twice {
        /// The rank.
        rank: i32,
    },
    /// Ranges that name more ranks than the group has.
    #[error("the ranges name more ranks than the group of {size} processes has")]
    TooMany {
        /// The group's size.
        size: usize,
    },
}

/// Grid dimensions that cannot be (`MpiError::Dims`, MPI 4.1 §8.5).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DimsError {
    /// A negative entry given to `MPI_Dims_create`.
    #[error("dims holds {value}: entries are 0 (to fill) or positive")]
    Negative {
        /// The entry.
        value: i32,
    },
    /// Processes that do not fill the given dimensions.
    #[error("{nnodes} processes do not fill a grid whose given dimensions {dims:?} multiply to {fixed}")]
    NoFit {
        /// Processes.
        nnodes: i32,
        /// The dimensions given.
        dims: Vec<i32>,
        /// The product of the fixed ones.
        fixed: i64,
    },
    /// An extent that is not positive.
    #[error("dimension {dim} has extent {extent}: extents are positive")]
    Extent {
        /// The dimension.
        dim: usize,
        /// Its extent.
        extent: i32,
    },
    /// More processes than an `int` counts.
    #[error("a grid of {dims:?} has more than {} processes", i32::MAX)]
    TooLarge {
        /// The dimensions.
        dims: Vec<i32>,
    },
    /// A direction the grid does not have.
    #[error("direction {dim} is not a dimension of a {ndims}-dimensional grid")]
    NoSuchDimension {
        /// The direction.
        dim: usize,
        /// The grid's dimensions.
        ndims: usize,
    },
}

/// What is larger than an address, a count or memory can hold
/// (`MpiError::TooLarge`, `MPI_ERR_COUNT`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Overflow {
    /// `count` elements of a datatype overflow the address space.
    #[error("{count} elements overflow the address space")]
    Elements {
        /// The count.
        count: usize,
    },
    /// `count` elements of `each` bytes do not fit in memory.
    #[error("{count} elements of {each} bytes do not fit in memory")]
    ElementsOf {
        /// The count.
        count: usize,
        /// Each element's bytes.
        each: u64,
    },
    /// A one-sided operation's target count times its datatype's size.
    #[error("target count")]
    TargetCount,
    /// A block of a collective over this library's 2 GiB (a C `int`
    /// counts its bytes).
    #[error("a block of {bytes} bytes is over this library's 2 GiB per {what}")]
    Block {
        /// The block's bytes.
        bytes: usize,
        /// `collective` or `v-collective`.
        what: &'static str,
    },
    /// A receive block whose end overflows the address space.
    #[error("a receive block is too large")]
    ReceiveBlock,
    /// A receive larger than an address space.
    #[error("the receive is larger than an address space")]
    Receive,
    /// A persistent collective's buffers (`call`, its initialization).
    #[error("{call}: the buffers would be larger than memory")]
    Buffers {
        /// The initialization (`all_reduce_init`, ...).
        call: &'static str,
    },
    /// A datatype's extent, bounds or size.
    #[error("the datatype's extent, bounds or size overflow the address space")]
    Datatype,
    /// A datatype's type signature (external32).
    #[error("the datatype's signature is larger than 2^64 bytes")]
    Signature,
    /// A subarray or darray's size.
    #[error("the array's size overflows the address space")]
    Array,
    /// A file offset that an `MPI_Offset` cannot hold.
    #[error("{value} does not fit an MPI_Offset")]
    Offset {
        /// The offset.
        value: u64,
    },
}

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

/// Data a representation cannot convert (`MpiError::Conversion`,
/// `MPI_ERR_CONVERSION`, MPI 4.1 §13.5.2, §14.5.3).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConversionError {
    /// An integer external32 gives fewer bytes than its value needs.
    #[error("the {bytes}-byte integer {value} does not fit the {external} bytes external32 gives it")]
    IntegerTooWide {
        /// The native integer's bytes.
        bytes: usize,
        /// Its value.
        value: i128,
        /// The bytes external32 gives it.
        external: usize,
    },
    /// A read that moved part of an item a conversion needs whole.
    #[error("the conversion says {used} bytes hold {items} whole items, but the read moved {read}")]
    PartialRead {
        /// The bytes of the whole items.
        used: u64,
        /// The whole items.
        items: u64,
        /// The bytes the read moved.
        read: u64,
    },
    /// A conversion of the program's own (a Rust data representation)
    /// failed, saying why.
    #[error("{why}")]
    Failed {
        /// The program's reason.
        why: String,
    },
    /// A user data representation's conversion function failed.
    #[error("the data representation's {direction} conversion function returned {code}")]
    UserFunction {
        /// `read` or `write`.
        direction: String,
        /// The error code it returned.
        code: i32,
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

/// An operation and datatypes that an accumulate or an atomic cannot
/// combine (`MpiError::Op`, `MPI_ERR_OP`, MPI 4.1 §12.3.4).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OpError {
    /// A Rust element type that is no primitive number.
    #[error("accumulates and atomics need a primitive number type, not {type_name}")]
    NotANumber {
        /// The type's name.
        type_name: &'static str,
    },
    /// `MPI_Compare_and_swap` on an element type it is not defined on.
    #[error("no compare-and-swap on {elem}")]
    NoCompareSwap {
        /// The element type.
        elem: String,
    },
    /// A predefined operation given no element type.
    #[error("{op} needs an element type")]
    NeedsElement {
        /// The operation.
        op: String,
    },
    /// A predefined operation not defined on the element type (§6.9.2).
    #[error("{why}")]
    NotDefined {
        /// The operation.
        op: String,
        /// The element type.
        elem: String,
        /// What the reduction said.
        why: String,
    },
    /// A target datatype that holds part of a padded pair's element.
    #[error("the target datatype holds part of a {bytes}-byte pair: an accumulate's datatypes must be built from its element type")]
    PartOfPair {
        /// The pair's packed bytes.
        bytes: u64,
    },
    /// A target datatype whose blocks split elements.
    #[error("the target datatype splits {bytes}-byte elements: an accumulate's datatypes must be built from its element type")]
    SplitsElements {
        /// The element's bytes.
        bytes: u64,
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

/// What is wrong with a buffer argument (`MpiError::Buffer`,
/// `MPI_ERR_BUFFER`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BufferError {
    /// A null pointer where elements must be.
    #[error("the {what} is a null pointer")]
    Null {
        /// Which buffer (`send buffer`, `receive buffer`, ...).
        what: String,
    },
    /// A reduction's buffer that is null, or not aligned for its elements.
    #[error("{what} is null or not aligned for its datatype")]
    Misaligned {
        /// Which buffer (`sendbuf`, `recvbuf`, ...).
        what: String,
    },
    /// `MPI_IN_PLACE` where the call does not take it.
    #[error("MPI_IN_PLACE is not valid {place}")]
    InPlace {
        /// Where (`here`, `on an intercommunicator (§6.9.1)`, ...).
        place: &'static str,
    },
    /// `MPI_Reduce_local`'s two buffers overlap (§6.9.7).
    #[error("inbuf and inoutbuf overlap (§6.9.7 forbids it)")]
    ReduceLocalOverlap,
    /// Two blocks of a receive buffer overlap.
    #[error("two receive blocks overlap")]
    BlocksOverlap,
    /// A block of a receive buffer reaches past its end.
    #[error("a receive block lies outside the buffer")]
    BlockOutside,
    /// `MPI_Buffer_attach` while a buffer is attached (§3.6.1).
    #[error("a buffer is already attached: detach it first")]
    AlreadyAttached,
    /// `MPI_Buffer_attach` of a null pointer with a size.
    #[error("a null pointer is not a buffer of {bytes} bytes")]
    NullAttached {
        /// The size given.
        bytes: usize,
    },
    /// `MPI_Buffer_detach` with nothing attached.
    #[error("no buffer is attached")]
    NoneAttached,
    /// A buffered send with no buffer attached.
    #[error("a buffered send needs a buffer: call MPI_Buffer_attach or MPI_Comm_attach_buffer first")]
    NeedsAttached,
    /// A buffered send that does not fit the attached buffer's free space.
    #[error("the attached buffer of {size} bytes has {free} free, and this message needs {need} ({len} + MPI_BSEND_OVERHEAD)")]
    Full {
        /// The attached buffer's bytes.
        size: usize,
        /// Its bytes not held by messages in flight.
        free: usize,
        /// What the message needs: its bytes and the overhead.
        need: usize,
        /// The message's bytes.
        len: usize,
    },
    /// `MPI_Win_create` with a null base and a size.
    #[error("MPI_Win_create: a null base for a window of {bytes} bytes")]
    NullWindowBase {
        /// The window's size.
        bytes: u64,
    },
}

/// A request used against its rules (`MpiError::Request`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
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
    /// A persistent collective started as a point-to-point one.
    #[error("a persistent collective is started by its own path")]
    CollectiveStart,
}

/// Why a process could not join its job (`MpiError::Init`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InitError {
    /// A thread the library needs could not be made.
    #[error("cannot start {what}: {why}")]
    Thread {
        /// The thread.
        what: String,
        /// The system's reason.
        why: String,
    },
    /// A `DN_*` setting that is wrong (its variable and allowed values).
    #[error(transparent)]
    Setting(#[from] adi::knobs::KnobError),
    /// The transport could not be opened.
    #[error(transparent)]
    Engine(#[from] AdiError),
    /// The PMI service of a standard launcher failed.
    #[error("PMI: {0}")]
    Pmi(adi::TransportError),
    /// A spawned process could not connect to its parents (§11.8.2).
    #[error("a spawned process could not reach the processes that spawned it: {0}")]
    Parent(Box<MpiError>),
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

/// A port that is not one, not open, or could not be used
/// (`MpiError::Port`, MPI 4.1 §11.10).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PortError {
    /// Not a name `MPI_Open_port` gives.
    #[error("{name:?} is not a port name of this library (they look like \"{prefix}:JOB:RANK:N\", as MPI_Open_port gives them)")]
    NotAName {
        /// The name given.
        name: String,
        /// The names' prefix.
        prefix: &'static str,
    },
    /// Every port number is taken.
    #[error("this process has opened {max} ports, all it may: close ports with MPI_Close_port and reuse them")]
    TooMany {
        /// How many a process may have open.
        max: u64,
    },
    /// A port the process does not have open.
    #[error("{call}: {name:?} is not a port this process (rank {rank} of the job) has open: open it with MPI_Open_port on the process that accepts on it")]
    NotOpenHere {
        /// The call.
        call: &'static str,
        /// The port.
        name: String,
        /// This process's job rank.
        rank: u32,
    },
    /// A port of another job.
    #[error("MPI_Comm_connect: port {name:?} is not of this job (job {job}, {size} processes): this library connects groups of one job")]
    OtherJob {
        /// The port.
        name: String,
        /// This job's number.
        job: u32,
        /// Its processes.
        size: u32,
    },
    /// A port opened by a process of the connecting group.
    #[error(
        "MPI_Comm_connect: port {name:?} was opened by a process of the connecting group; the groups must be disjoint"
    )]
    SameGroup {
        /// The port.
        name: String,
    },
    /// A connection message that does not parse.
    #[error("corrupt connection message")]
    Corrupt,
    /// The root's own arguments were refused before the call could start;
    /// its error names them.
    #[error("the call: the root's arguments were refused")]
    RootRefused,
    /// The connection failed at the group's leader, whose error names the
    /// cause.
    #[error("{call} failed at the local leader (its error names the cause)")]
    AtLeader {
        /// The call.
        call: String,
    },
}

/// Processes that could not be spawned (`MpiError::Spawn`, §11.8.2).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpawnError {
    /// No command to start.
    #[error("MPI_Comm_spawn: no command to start")]
    NoCommand,
    /// A command asked for no process.
    #[error("MPI_Comm_spawn: maxprocs of {program:?} is 0; ask for at least one process")]
    NoProcesses {
        /// The command.
        program: String,
    },
    /// The job has no room for more processes.
    #[error("MPI_Comm_spawn: this job has no room for more processes: start it with `dnrun --universe-size N` (N above -n), on the simulator (docs/guide/spawn.md)")]
    NoRoom,
    /// The launcher refused, or could not be reached: its reason.
    #[error("MPI_Comm_spawn: {why}")]
    Launcher {
        /// Why.
        why: String,
    },
    /// The spawn failed at the parents' root, whose error names the cause.
    #[error("{call} failed at the local leader (its error names the cause)")]
    AtLeader {
        /// The call.
        call: String,
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
        )
    }
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

/// A service name that cannot be published or unpublished
/// (`MpiError::Service`, MPI 4.1 §11.10.5).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ServiceError {
    /// An empty service name.
    #[error("a service name must not be empty")]
    Empty,
    /// The name service's files could not be written or removed.
    #[error("{call}: {service:?}: {why}")]
    Io {
        /// `MPI_Publish_name` or `MPI_Unpublish_name`.
        call: &'static str,
        /// The service.
        service: String,
        /// The system's error.
        why: String,
    },
    /// A service published already.
    #[error("MPI_Publish_name: {service:?} is published already; unpublish it first")]
    Published {
        /// The service.
        service: String,
    },
    /// Unpublishing a service that names another port.
    #[error("MPI_Unpublish_name: {service:?} names port {names:?}, not {port:?}")]
    OtherPort {
        /// The service.
        service: String,
        /// The port it names.
        names: String,
        /// The port given.
        port: String,
    },
    /// Unpublishing a service that is not published.
    #[error("MPI_Unpublish_name: no service {service:?} is published")]
    NotPublished {
        /// The service.
        service: String,
    },
}

/// One of the I/O error classes of MPI 4.1 §14.7.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileErrorClass {
    /// `MPI_ERR_FILE`: a file handle that is not valid.
    File,
    /// `MPI_ERR_NOT_SAME`: processes gave different arguments to a
    /// collective file call that needs the same ones.
    NotSame,
    /// `MPI_ERR_AMODE`: an access mode that is not valid (§14.2.1).
    Amode,
    /// `MPI_ERR_UNSUPPORTED_DATAREP`: a data representation not provided.
    UnsupportedDatarep,
    /// `MPI_ERR_UNSUPPORTED_OPERATION`: an operation the file's mode does
    /// not allow (an individual pointer on a sequential file).
    UnsupportedOperation,
    /// `MPI_ERR_NO_SUCH_FILE`: the file does not exist.
    NoSuchFile,
    /// `MPI_ERR_FILE_EXISTS`: `MPI_MODE_EXCL` and the file exists.
    FileExists,
    /// `MPI_ERR_BAD_FILE`: a file name that is not valid (a directory, too long).
    BadFile,
    /// `MPI_ERR_ACCESS`: permission denied.
    Access,
    /// `MPI_ERR_NO_SPACE`: the device is full.
    NoSpace,
    /// `MPI_ERR_QUOTA`: the quota is exceeded.
    Quota,
    /// `MPI_ERR_READ_ONLY`: the file or file system is read-only.
    ReadOnly,
    /// `MPI_ERR_FILE_IN_USE`: the file is busy.
    FileInUse,
    /// `MPI_ERR_IO`: any other I/O error.
    Io,
    /// `MPI_ERR_DUP_DATAREP`: a data representation registered twice.
    DupDatarep,
}

/// Result of MPI calls.
pub type Result<T> = std::result::Result<T, MpiError>;
