//! Error classes (MPI 4.1 §9.4, Table 9.1): what kind of error an
//! [`MpiError`] is, numbered as the MPI 5.0 standard ABI numbers them
//! (`abi-def`), and the text each class stands for. The C library reports
//! [`MpiError::class`] from `MPI_Error_class` and [`ErrorClass::text`] from
//! `MPI_Error_string`; a Rust program can branch on the same classes.

use adi::{AdiError, DeviceFault, TransportError};

use super::*;

/// Declares [`ErrorClass`] with each class's ABI value and text, and the
/// list of them all.
macro_rules! classes {
    ($( $variant:ident = $abi:ident : $text:literal, )*) => {
        /// An MPI error class (MPI 4.1 §9.4, Table 9.1). The discriminant is
        /// the class's value in the MPI 5.0 standard ABI.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(i32)]
        pub enum ErrorClass {
            $( #[doc = concat!("`", stringify!($abi), "`: ", $text, ".")] $variant = abi_def::$abi, )*
        }

        impl ErrorClass {
            /// Every class, `MPI_SUCCESS` first, in the ABI's order.
            pub const ALL: &'static [ErrorClass] = &[ $( ErrorClass::$variant, )* ];

            /// What the class means, as `MPI_Error_string` says it.
            pub const fn text(self) -> &'static str {
                match self {
                    $( ErrorClass::$variant => $text, )*
                }
            }
        }
    };
}

classes! {
    Success = MPI_SUCCESS: "no error",
    Buffer = MPI_ERR_BUFFER: "invalid buffer pointer",
    Count = MPI_ERR_COUNT: "invalid count argument",
    Type = MPI_ERR_TYPE: "invalid datatype",
    Tag = MPI_ERR_TAG: "invalid tag",
    Comm = MPI_ERR_COMM: "invalid communicator",
    Rank = MPI_ERR_RANK: "invalid rank",
    Request = MPI_ERR_REQUEST: "invalid request",
    Root = MPI_ERR_ROOT: "invalid root",
    Group = MPI_ERR_GROUP: "invalid group",
    Op = MPI_ERR_OP: "invalid operation",
    Topology = MPI_ERR_TOPOLOGY: "invalid topology",
    Dims = MPI_ERR_DIMS: "invalid dimension argument",
    Arg = MPI_ERR_ARG: "invalid argument",
    Unknown = MPI_ERR_UNKNOWN: "unknown error",
    Truncate = MPI_ERR_TRUNCATE: "message truncated",
    Other = MPI_ERR_OTHER: "other error",
    Intern = MPI_ERR_INTERN: "internal error",
    Pending = MPI_ERR_PENDING: "pending request",
    InStatus = MPI_ERR_IN_STATUS: "error code is in status",
    Access = MPI_ERR_ACCESS: "permission denied",
    Amode = MPI_ERR_AMODE: "invalid file access mode",
    Assert = MPI_ERR_ASSERT: "invalid assertion",
    BadFile = MPI_ERR_BAD_FILE: "invalid file name",
    Base = MPI_ERR_BASE: "invalid base address",
    Conversion = MPI_ERR_CONVERSION: "data conversion failed",
    Disp = MPI_ERR_DISP: "invalid displacement",
    DupDatarep = MPI_ERR_DUP_DATAREP: "data representation already defined",
    FileExists = MPI_ERR_FILE_EXISTS: "file exists",
    FileInUse = MPI_ERR_FILE_IN_USE: "file in use",
    File = MPI_ERR_FILE: "invalid file handle",
    InfoKey = MPI_ERR_INFO_KEY: "info key too long",
    InfoNokey = MPI_ERR_INFO_NOKEY: "info key not defined",
    InfoValue = MPI_ERR_INFO_VALUE: "info value too long",
    Info = MPI_ERR_INFO: "invalid info object",
    Io = MPI_ERR_IO: "I/O error",
    Keyval = MPI_ERR_KEYVAL: "invalid keyval",
    Locktype = MPI_ERR_LOCKTYPE: "invalid lock type",
    Name = MPI_ERR_NAME: "invalid service name",
    NoMem = MPI_ERR_NO_MEM: "out of memory",
    NotSame = MPI_ERR_NOT_SAME: "arguments differ between processes",
    NoSpace = MPI_ERR_NO_SPACE: "no space left",
    NoSuchFile = MPI_ERR_NO_SUCH_FILE: "no such file",
    Port = MPI_ERR_PORT: "invalid port name",
    Quota = MPI_ERR_QUOTA: "quota exceeded",
    ReadOnly = MPI_ERR_READ_ONLY: "read-only file or file system",
    RmaAttach = MPI_ERR_RMA_ATTACH: "memory cannot be attached to the window",
    RmaConflict = MPI_ERR_RMA_CONFLICT: "conflicting accesses to a window",
    RmaRange = MPI_ERR_RMA_RANGE: "access outside the target window",
    RmaShared = MPI_ERR_RMA_SHARED: "memory cannot be shared",
    RmaSync = MPI_ERR_RMA_SYNC: "RMA call outside its synchronisation",
    Service = MPI_ERR_SERVICE: "invalid service",
    Size = MPI_ERR_SIZE: "invalid size",
    Spawn = MPI_ERR_SPAWN: "cannot spawn processes",
    UnsupportedDatarep = MPI_ERR_UNSUPPORTED_DATAREP: "unsupported data representation",
    UnsupportedOperation = MPI_ERR_UNSUPPORTED_OPERATION: "unsupported operation",
    Win = MPI_ERR_WIN: "invalid window",
    RmaFlavor = MPI_ERR_RMA_FLAVOR: "wrong window flavor",
    ProcAborted = MPI_ERR_PROC_ABORTED: "a process aborted",
    ValueTooLarge = MPI_ERR_VALUE_TOO_LARGE: "value too large for its output argument",
    Session = MPI_ERR_SESSION: "invalid session",
    Errhandler = MPI_ERR_ERRHANDLER: "invalid error handler",
    Abi = MPI_ERR_ABI: "ABI mismatch",
}

impl ErrorClass {
    /// The class's value in the MPI 5.0 ABI (what C's `MPI_ERR_*` is).
    pub const fn code(self) -> i32 {
        self as i32
    }

    /// The class whose ABI value is `code`, if any.
    pub fn from_code(code: i32) -> Option<ErrorClass> {
        usize::try_from(code).ok().and_then(|i| ErrorClass::ALL.get(i)).copied()
    }

    /// The text of ABI class value `code`: every class of the MPI 5.0 ABI
    /// has its own, whether or not this library returns it, so that a
    /// program printing any class gets its meaning.
    pub fn text_of(code: i32) -> &'static str {
        ErrorClass::from_code(code).map_or("unknown error class", ErrorClass::text)
    }
}

impl From<FileErrorClass> for ErrorClass {
    /// The class of an I/O error (§14.7).
    fn from(c: FileErrorClass) -> ErrorClass {
        use FileErrorClass as F;
        match c {
            F::File => ErrorClass::File,
            F::NotSame => ErrorClass::NotSame,
            F::Amode => ErrorClass::Amode,
            F::UnsupportedDatarep => ErrorClass::UnsupportedDatarep,
            F::UnsupportedOperation => ErrorClass::UnsupportedOperation,
            F::NoSuchFile => ErrorClass::NoSuchFile,
            F::FileExists => ErrorClass::FileExists,
            F::BadFile => ErrorClass::BadFile,
            F::Access => ErrorClass::Access,
            F::NoSpace => ErrorClass::NoSpace,
            F::Quota => ErrorClass::Quota,
            F::ReadOnly => ErrorClass::ReadOnly,
            F::FileInUse => ErrorClass::FileInUse,
            F::Io => ErrorClass::Io,
            F::DupDatarep => ErrorClass::DupDatarep,
        }
    }
}

impl From<DeviceFault> for ErrorClass {
    /// The class of a device's refusal (issue 49, item 6): a protection
    /// fault is an access outside the target's window.
    fn from(fault: DeviceFault) -> ErrorClass {
        match fault {
            DeviceFault::Range => ErrorClass::RmaRange,
            DeviceFault::NoSuchPeer => ErrorClass::Rank,
            DeviceFault::Atomic => ErrorClass::Op,
            DeviceFault::Malformed => ErrorClass::Intern,
            DeviceFault::PeerNotReady => ErrorClass::Other,
        }
    }
}

impl MpiError {
    /// The error's class (§9.4), what `MPI_Error_class` reports for it.
    pub fn class(&self) -> ErrorClass {
        use ErrorClass as C;
        match self {
            MpiError::InvalidRank { .. } | MpiError::Engine(AdiError::BadRank { .. }) => C::Rank,
            MpiError::InvalidTag(_) => C::Tag,
            MpiError::Type(_) => C::Type,
            MpiError::PackSpace { .. } => C::Truncate,
            MpiError::Count { .. }
            | MpiError::Size { .. }
            | MpiError::Truncated { .. }
            | MpiError::Engine(AdiError::Truncated { .. }) => C::Truncate,
            MpiError::Engine(AdiError::BadRequest(_)) => C::Request,
            MpiError::Arg(_)
            | MpiError::Signature(_)
            | MpiError::TopologyArg(_)
            | MpiError::Join(_)
            | MpiError::View(_) => C::Arg,
            MpiError::Engine(AdiError::WrongKind { .. }) => C::Request,
            MpiError::Engine(AdiError::TooLarge { .. }) => C::Count,
            MpiError::Collective(c) => match c {
                CollectiveError::BlockSize { .. }
                | CollectiveError::InterBlock { .. }
                | CollectiveError::GroupsDiffer { .. } => C::Truncate,
                CollectiveError::DifferentCalls { .. } | CollectiveError::FailedAt { .. } => C::Other,
                _ => C::Arg,
            },
            MpiError::Inter(i) if i.is_wrong_kind() => C::Comm,
            MpiError::Inter(_) => C::Arg,
            MpiError::Context(_) | MpiError::Malformed { .. } => C::Other,
            MpiError::Topology { .. } => C::Topology,
            MpiError::Dims(_) => C::Dims,
            MpiError::TooLarge(_) | MpiError::NegativeCount { .. } => C::Count,
            MpiError::NoMemory { .. } => C::NoMem,
            MpiError::Buffer(_) => C::Buffer,
            MpiError::Ranks(_) => C::Rank,
            MpiError::Request(_) => C::Request,
            MpiError::Partition(p) if p.is_argument() => C::Arg,
            MpiError::Partition(_) => C::Request,
            MpiError::Keyval(_) => C::Keyval,
            MpiError::Internal { .. } => C::Intern,
            MpiError::Corrupt { .. } => C::Other,
            MpiError::Root { .. } => C::Root,
            MpiError::InfoKey { .. } => C::InfoKey,
            MpiError::InfoValue { .. } => C::InfoValue,
            MpiError::InfoNoKey { .. } => C::InfoNokey,
            MpiError::Mismatch { .. } => C::Truncate,
            MpiError::Group { .. } => C::Group,
            MpiError::RmaSync(_) => C::RmaSync,
            MpiError::RmaRange(_) => C::RmaRange,
            MpiError::Engine(AdiError::Transport(TransportError::Device { fault, .. })) => C::from(*fault),
            MpiError::Win(_) => C::Win,
            MpiError::RmaFlavor { .. } => C::RmaFlavor,
            MpiError::RmaAttach(_) => C::RmaAttach,
            MpiError::RmaShared(_) => C::RmaShared,
            MpiError::RmaConflict { .. } => C::RmaConflict,
            MpiError::Disp { .. } => C::Disp,
            MpiError::WinSize(_) => C::Size,
            MpiError::Op(_) => C::Op,
            MpiError::Conversion(_) => C::Conversion,
            MpiError::Port(_) => C::Port,
            MpiError::Name { .. } => C::Name,
            MpiError::Service(_) => C::Service,
            MpiError::Spawn(_) => C::Spawn,
            MpiError::File { class, .. } => C::from(*class),
            _ => C::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every error class of the ABI has its own text (issue 30: GROUP,
    /// TOPOLOGY, DIMS, INFO*, KEYVAL and IN_STATUS said "unknown error"),
    /// and the list runs over every value from `MPI_SUCCESS` to
    /// `MPI_ERR_ABI` in order, so `from_code` may index it.
    #[test]
    fn every_error_class_has_its_value_and_a_text() {
        let mut seen = std::collections::HashSet::new();
        for code in abi_def::MPI_SUCCESS..=abi_def::MPI_ERR_ABI {
            let class = ErrorClass::from_code(code).unwrap_or_else(|| panic!("class {code} missing"));
            assert_eq!(class.code(), code);
            assert!(seen.insert(class.text()), "class {code} shares its text {:?}", class.text());
        }
        assert_eq!(ErrorClass::ALL.len(), seen.len());
        assert_eq!(ErrorClass::text_of(abi_def::MPI_ERR_ABI + 1), "unknown error class");
        assert_eq!(ErrorClass::text_of(-1), "unknown error class");
        assert_eq!(ErrorClass::RmaRange.code(), 48);
    }

    /// A device's refusal keeps its class and the device's words (issue
    /// 49, item 6): a protection fault is `MPI_ERR_RMA_RANGE`.
    #[test]
    fn device_faults_have_their_classes() {
        let err = |fault| {
            MpiError::from(TransportError::Device {
                backend: "DIMMnet-2",
                fault,
                message: "RVS (command #3) refused by the device: NotExposed (8): ...".into(),
            })
        };
        let e = err(DeviceFault::Range);
        assert_eq!(e.class(), ErrorClass::RmaRange);
        assert!(e.to_string().contains("NotExposed"), "{e}");
        assert_eq!(err(DeviceFault::NoSuchPeer).class(), ErrorClass::Rank);
        assert_eq!(err(DeviceFault::Atomic).class(), ErrorClass::Op);
        assert_eq!(err(DeviceFault::Malformed).class(), ErrorClass::Intern);
        assert_eq!(err(DeviceFault::PeerNotReady).class(), ErrorClass::Other);
    }

    /// Typed errors have the standard's classes: a partition argument is
    /// the caller's (`MPI_ERR_ARG`), a partitioned request's state is
    /// `MPI_ERR_REQUEST`, a keyval `MPI_ERR_KEYVAL`, and a peer's malformed
    /// message is not an argument error.
    #[test]
    fn typed_errors_have_their_classes() {
        use ErrorClass as C;
        let class = |e: MpiError| e.class();
        assert_eq!(class(crate::PartitionError::MarkedTwice { partition: 1 }.into()), C::Arg);
        assert_eq!(class(crate::PartitionError::StillActive.into()), C::Request);
        assert_eq!(class(crate::KeyvalError::Freed { keyval: 1000 }.into()), C::Keyval);
        assert_eq!(class(MpiError::Corrupt { what: "corrupt split table" }), C::Other);
        assert_eq!(class(MpiError::Internal { what: "x".into() }), C::Intern);
        assert_eq!(class(RmaRangeError::TargetWindow { lo: 0, hi: 9, size: 8 }.into()), C::RmaRange);
        assert_eq!(class(WinError::Freed.into()), C::Win);
        assert_eq!(class(TypeError::Mixed.into()), C::Type);
        assert_eq!(class(BufferError::Aliased.into()), C::Buffer);
        assert_eq!(class(SpawnError::NoRoom.into()), C::Spawn);
        assert_eq!(class(PortError::Corrupt.into()), C::Port);
        // What was `MpiError::Invalid(String)`, all MPI_ERR_ARG: the
        // argument errors keep that class, the others have their own.
        assert_eq!(class(ArgError::SplitColor { color: -3 }.into()), C::Arg);
        assert_eq!(class(SignatureError::OriginTarget { origin: 8, target: 4 }.into()), C::Arg);
        assert_eq!(class(TopologyArgError::Nodes { nnodes: 0 }.into()), C::Arg);
        assert_eq!(class(crate::io::ViewError::EmptyEtype.into()), C::Arg);
        assert_eq!(class(JoinError::Closed { fd: 3 }.into()), C::Arg);
        assert_eq!(class(CollectiveError::BlockSize { rank: 2, got: 8, want: 4 }.into()), C::Truncate);
        let e = CollectiveError::DifferentCalls { rank: 1, theirs: "a".into(), mine: "b".into(), seq: 3 };
        assert_eq!(class(e.into()), C::Other);
        let e = CollectiveError::Arrays { call: "x".into(), counts: 1, displs: 2, size: 3 };
        assert_eq!(class(e.into()), C::Arg);
        assert_eq!(class(InterError::NotInter.into()), C::Comm);
        assert_eq!(class(InterError::LeaderIsSelf.into()), C::Arg);
        assert_eq!(class(ContextError::Exhausted { agreed: 1, total: 2 }.into()), C::Other);
        assert_eq!(class(MpiError::Malformed { from: 1, what: "x".into() }), C::Other);
        assert_eq!(class(MpiError::Request(RequestMisuse::Completed { call: "wait".into() })), C::Request);
        assert_eq!(class(MpiError::Ranks(RankError::Twice { rank: 1 })), C::Rank);
        assert_eq!(class(AdiError::WrongKind { id: 9, wants: "send" }.into()), C::Request);
        assert_eq!(class(AdiError::TooLarge { bytes: u64::MAX }.into()), C::Count);
        assert_eq!(class(AdiError::TooManyRequests { most: 3 }.into()), C::Other);
        let e = MpiError::File { class: FileErrorClass::NoSuchFile, msg: "x".into() };
        assert_eq!(class(e), C::NoSuchFile);
    }
}
