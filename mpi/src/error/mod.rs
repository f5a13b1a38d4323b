//! MPI errors: every call returns `Result`, and each error says what went wrong.

use adi::AdiError;

mod arguments;
mod class;
mod collectives;
mod one_sided;
mod processes;
mod requests;

pub use arguments::*;
pub use class::ErrorClass;
pub use collectives::*;
pub use one_sided::*;
pub use processes::*;
pub use requests::*;

/// An MPI error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MpiError {
    /// The protocol engine or transport failed.
    #[error(transparent)]
    Engine(#[from] AdiError),
    /// A message from another process of the job that breaks the library's
    /// protocol (a corrupt agreement, table or exchange): the peer, or the
    /// network, is at fault, not the call's arguments (`MPI_ERR_OTHER`).
    #[error("{what}")]
    Corrupt {
        /// What was malformed.
        what: &'static str,
    },
    /// A state the library itself should never reach (`MPI_ERR_INTERN`).
    #[error("internal: {what}")]
    Internal {
        /// What went wrong.
        what: String,
    },
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
    /// Packed data that does not fit its buffer from the position given
    /// (`MPI_Pack`, `MPI_Unpack` and their `external32` forms, MPI 4.1
    /// §5.2: `MPI_ERR_TRUNCATE`).
    #[error("{need} bytes from position {at} do not fit a buffer of {size} bytes")]
    PackSpace {
        /// Bytes to pack or unpack.
        need: usize,
        /// The position.
        at: usize,
        /// The buffer's size.
        size: usize,
    },
    /// A datatype that cannot serve the call (`MPI_ERR_TYPE`).
    #[error(transparent)]
    Type(#[from] TypeError),
    /// An argument the call cannot take (`MPI_ERR_ARG`).
    #[error("invalid argument: {0}")]
    Arg(#[from] ArgError),
    /// Data of two sides whose type signatures must match and do not
    /// (`MPI_ERR_ARG`).
    #[error(transparent)]
    Signature(#[from] SignatureError),
    /// A collective's arguments, or the processes' disagreement on the
    /// collective (see [`CollectiveError::is_disagreement`]).
    #[error(transparent)]
    Collective(#[from] CollectiveError),
    /// Arguments that describe no valid process topology (`MPI_ERR_ARG`).
    #[error("invalid topology: {0}")]
    TopologyArg(#[from] TopologyArgError),
    /// An intercommunicator where an intracommunicator is needed, or the
    /// reverse (`MPI_ERR_COMM`).
    #[error(transparent)]
    Inter(#[from] InterError),
    /// No context id for a new communicator (`MPI_ERR_OTHER`).
    #[error(transparent)]
    Context(#[from] ContextError),
    /// `MPI_Comm_join`'s socket (`MPI_ERR_ARG`).
    #[error(transparent)]
    Join(#[from] JoinError),
    /// A file view that cannot be (`MPI_ERR_ARG`).
    #[error(transparent)]
    View(#[from] ViewError),
    /// A message from another process that breaks the library's protocol,
    /// with what was wrong in it (`MPI_ERR_OTHER`).
    #[error("a message from rank {from}: {what}")]
    Malformed {
        /// The sender, by its rank in the job.
        from: u32,
        /// What was malformed.
        what: String,
    },
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
    /// A count argument that is negative (`MPI_ERR_COUNT`).
    #[error("{what} {count} is negative")]
    NegativeCount {
        /// Which argument.
        what: &'static str,
        /// The value given.
        count: i64,
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

/// A file view, or an access through it, that cannot be
/// (`MpiError::View`, `MPI_ERR_ARG`; MPI 4.1 §14.3, §14.4).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ViewError {
    /// A data representation's name of no or too many characters.
    #[error("a data representation's name has 1 to {max} characters, not {len}")]
    DatarepName {
        /// Its characters.
        len: usize,
        /// The most.
        max: usize,
    },
    /// An etype of no data.
    #[error("the etype of a file view holds no data (MPI 4.1 §14.3)")]
    EmptyEtype,
    /// A view's displacement that is negative.
    #[error("displacement {disp} is negative")]
    NegativeDisp {
        /// The displacement given.
        disp: i64,
    },
    /// `MPI_DISPLACEMENT_CURRENT` on a file not opened `MPI_MODE_SEQUENTIAL`.
    #[error("MPI_DISPLACEMENT_CURRENT is only for files opened MPI_MODE_SEQUENTIAL (MPI 4.1 §14.3)")]
    CurrentNotSequential,
    /// A filetype that is not whole etypes.
    #[error(
        "the filetype holds {filetype} bytes of data, which is not a whole number of {etype}-byte etypes: build \
         the filetype from the etype (MPI 4.1 §14.3)"
    )]
    NotEtypes {
        /// The filetype's bytes of data.
        filetype: u64,
        /// The etype's.
        etype: u64,
    },
    /// A filetype whose tiles would not advance through the file.
    #[error(
        "the filetype's extent is {extent}: tiles of it would not advance through the file (resize it, MPI 4.1 §14.3)"
    )]
    Extent {
        /// Its extent.
        extent: i64,
    },
    /// A filetype of no data, through which nothing can be accessed.
    #[error("the file view's filetype holds no data: nothing can be accessed through it")]
    EmptyFiletype,
    /// A seek to before the view's start.
    #[error("seeking {offset} etypes from {base} goes before the start of the view (MPI 4.1 §14.4.3)")]
    BeforeStart {
        /// The offset, in etypes.
        offset: i64,
        /// Where from.
        base: i64,
    },
    /// Data that is not whole etypes of the view.
    #[error("{len} bytes of data are not a whole number of the view's {etype}-byte etypes (MPI 4.1 §14.4.1)")]
    PartialEtype {
        /// Bytes of data.
        len: u64,
        /// The etype's bytes.
        etype: u64,
    },
    /// Data that ends inside an item of the memory datatype.
    #[error("{len} bytes of data end inside a data item of the memory datatype")]
    PartialItem {
        /// Bytes of data.
        len: usize,
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
