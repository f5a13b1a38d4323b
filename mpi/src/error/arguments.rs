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

/// A datatype that cannot serve the call (`MpiError::Type`,
/// `MPI_ERR_TYPE`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TypeError {
    /// A predefined reduction (MPI 4.1 §6.9.2) or an accumulate (§12.3.4)
    /// on a datatype that is not a predefined number, pair or complex
    /// type, nor built from one.
    #[error(
        "no predefined reduction is defined on this datatype: it is not a predefined number, pair or complex type, \
         nor built from one (MPI 4.1 §6.9.2)"
    )]
    NotReducible,
    /// A derived datatype built from more than one predefined type, which
    /// a predefined operation or an accumulate cannot combine.
    #[error(
        "the datatype mixes predefined types: a predefined operation or an accumulate combines a derived datatype \
         built from one predefined type only (MPI 4.1 §6.9.2, §12.3.4); reduce it with a user operation"
    )]
    Mixed,
    /// A derived datatype whose size is not whole elements of the
    /// predefined type it is built from (a resized or struct type cut
    /// through an element).
    #[error("the datatype's {size} bytes are not whole {elem}-byte elements of the predefined type it is built from")]
    PartElement {
        /// The datatype's size.
        size: usize,
        /// The predefined type's size.
        elem: usize,
    },
    /// `MPI_Type_get_envelope` or `_contents` (the `int` forms) of a
    /// datatype a large-count constructor made (§5.1.13).
    #[error(
        "this datatype was built by a large-count constructor: decode it with MPI_Type_get_envelope_c and \
         MPI_Type_get_contents_c"
    )]
    LargeCountConstructor,
    /// An accumulate whose origin and target datatypes are of different
    /// basic types (§12.3.4).
    #[error("the origin and target datatypes of an accumulate have different basic types (MPI 4.1 §12.3.4)")]
    AccumulateBases,
    /// A user operation on a datatype whose extent is not positive: its
    /// elements do not follow one another (§6.9.5).
    #[error("a user operation needs a datatype whose elements follow one another (a positive extent), not {extent}")]
    Extent {
        /// The datatype's extent.
        extent: isize,
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
    /// A reduction's send and receive buffers overlap (MPI 4.1 §2.9
    /// forbids aliased arguments).
    #[error(
        "the send and receive buffers overlap (MPI 4.1 §2.9); pass MPI_IN_PLACE as the send buffer to reduce in place"
    )]
    Aliased,
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

/// An argument the call cannot take, of no more particular class
/// (`MpiError::Arg`, `MPI_ERR_ARG`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArgError {
    /// A negative split color that is not `MPI_UNDEFINED` (§7.4.2).
    #[error("split color {color} must be non-negative (or MPI_UNDEFINED)")]
    SplitColor {
        /// The color given.
        color: i32,
    },
    /// A split type `MPI_Comm_split_type` does not define (§7.4.2).
    #[error("split_type {split_type} is not one this library knows")]
    SplitType {
        /// The value given.
        split_type: i32,
    },
    /// A displacement or bound no address can hold.
    #[error("displacement {value} overflows an address")]
    Displacement {
        /// The value given.
        value: i64,
    },
    /// A thread level that is not one of the four (§11.2.3).
    #[error("{level} is not a thread level (MPI_THREAD_SINGLE, _FUNNELED, _SERIALIZED or _MULTIPLE)")]
    ThreadLevel {
        /// The value given.
        level: i32,
    },
    /// A process set name no session offers (§11.3.2).
    #[error("\"{name}\" is not a process set here: there are mpi://WORLD and mpi://SELF")]
    ProcessSet {
        /// The name given.
        name: String,
    },
    /// A process set number outside those a session offers (§11.3.2).
    #[error("process set {n} does not exist: there are {sets} (0 to {last})", last = sets - 1)]
    ProcessSetNumber {
        /// The number given.
        n: i32,
        /// How many there are.
        sets: usize,
    },
    /// A group's ranges with a stride of 0 (§7.3.2).
    #[error("a range has stride 0")]
    ZeroStride,
    /// An info key's number outside the info's keys (§10.2).
    #[error("key number {n} of an info with {keys} keys")]
    InfoKeyNumber {
        /// The number given.
        n: usize,
        /// The info's keys.
        keys: usize,
    },
    /// Argument arrays of a datatype constructor that must be of one
    /// length and are not.
    #[error("the argument arrays differ in length ({a} and {b})")]
    ArrayLengths {
        /// One length.
        a: usize,
        /// The other.
        b: usize,
    },
    /// A subarray's sizes, subsizes and starts of different lengths (§5.1.3).
    #[error("sizes, subsizes and starts differ in length")]
    SubarrayLengths,
    /// A subarray dimension out of range (§5.1.3).
    #[error(
        "dimension {dim}: size {size}, subsize {subsize} and start {start} do not satisfy size >= 1, \
         0 <= subsize <= size, 0 <= start <= size - subsize"
    )]
    Subarray {
        /// The dimension.
        dim: usize,
        /// Its size.
        size: i64,
        /// Its subsize.
        subsize: i64,
        /// Its start.
        start: i64,
    },
    /// A distributed array's process grid with a size that is not
    /// positive (§5.1.4).
    #[error("process grid sizes {psizes:?} are not all positive")]
    GridNotPositive {
        /// The grid.
        psizes: Vec<i32>,
    },
    /// A process grid of another number of processes than the size given.
    #[error("process grid {psizes:?} has {grid} processes, but size is {size}")]
    GridSize {
        /// The grid.
        psizes: Vec<i32>,
        /// Its processes.
        grid: i64,
        /// The size given.
        size: i32,
    },
    /// A distributed array's dimension that cannot be distributed so.
    #[error("dimension {dim}: {problem}")]
    Darray {
        /// The dimension.
        dim: usize,
        /// What is wrong with it.
        problem: DarrayProblem,
    },
    /// A negative displacement where blocks are laid out from a base.
    #[error("displacement {displ} is negative")]
    NegativeDisplacement {
        /// The displacement.
        displ: i64,
    },
    /// Elements of a datatype that reach outside the buffer given.
    #[error("{count} elements of this datatype reach bytes {lo}..{hi} of a {len}-byte buffer")]
    Outside {
        /// Elements.
        count: usize,
        /// The lowest byte reached.
        lo: i64,
        /// One past the highest.
        hi: i64,
        /// The buffer's bytes.
        len: usize,
    },
    /// An element type aligned to more than window memory is.
    #[error(
        "a window of {ty} cannot be allocated: the type is aligned to {align} bytes, and window memory to {most}; \
         use a type aligned to at most {most}"
    )]
    WindowAlign {
        /// The element type.
        ty: &'static str,
        /// Its alignment.
        align: usize,
        /// Window memory's.
        most: usize,
    },
    /// A predefined reduction not defined on the element type (§6.9.2).
    #[error("{op} is not defined on {ty} (MPI 4.1 §6.9.2)")]
    OpOnType {
        /// The operation.
        op: String,
        /// The element type.
        ty: &'static str,
    },
    /// A part of a call that the call needs and was not given.
    #[error("{0}")]
    Missing(&'static str),
}

/// Why a dimension of a distributed array cannot be distributed so
/// (§5.1.4, [`ArgError::Darray`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DarrayProblem {
    /// A global size that is not positive.
    #[error("global size {0} is not positive")]
    GlobalSize(i64),
    /// A distribution argument that is neither positive nor the default.
    #[error("distribution argument {0} is neither positive nor the default")]
    Argument(i64),
    /// An undistributed dimension over more than one process.
    #[error("an undistributed dimension (MPI_DISTRIBUTE_NONE) needs a process grid size of 1, not {0}")]
    Undistributed(i32),
    /// Blocks that do not cover the dimension.
    #[error("blocks of {block} over {procs} processes do not cover {size} elements")]
    Uncovered {
        /// The block size.
        block: i64,
        /// The processes of the dimension.
        procs: i32,
        /// The global size.
        size: i64,
    },
}

/// Data of two sides of an operation whose type signatures must match
/// and do not (`MpiError::Signature`, `MPI_ERR_ARG`; MPI 4.1 §3.3.1,
/// §12.3).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// A one-sided operation's origin and target data.
    #[error("the origin has {origin} bytes of data and the target {target}: their type signatures must match (MPI 4.1 §12.3)")]
    OriginTarget {
        /// Bytes at the origin.
        origin: u64,
        /// Bytes at the target.
        target: u64,
    },
    /// A fetching operation's result buffer and target data.
    #[error(
        "the result buffer has room for {result} bytes and the target has {target}: their type signatures must match"
    )]
    ResultTarget {
        /// Bytes of the result buffer.
        result: u64,
        /// Bytes at the target.
        target: u64,
    },
    /// Two operands of a reduction that are not equal runs of elements.
    #[error("{a} and {b} bytes are not equal runs of {elem}-byte{} elements", if *packed { " (packed)" } else { "" })]
    Runs {
        /// One operand's bytes.
        a: usize,
        /// The other's.
        b: usize,
        /// The element's bytes.
        elem: usize,
        /// Whether the elements are packed (a derived datatype's).
        packed: bool,
    },
    /// `MPI_REPLACE` with data of another length than the target's.
    #[error("replace with data of another length ({origin} bytes for {target})")]
    Replace {
        /// Bytes given.
        origin: usize,
        /// Bytes at the target.
        target: usize,
    },
    /// Packed data that is not whole elements of the datatype.
    #[error("{have} bytes are not {count} elements of {each} bytes (the datatype's signature)")]
    Packed {
        /// Bytes given.
        have: usize,
        /// Elements.
        count: usize,
        /// Bytes of each.
        each: usize,
    },
}
