//! The errors of a call's arguments: ranks, dimensions, counts that
//! overflow, conversions, operations and buffers.

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
